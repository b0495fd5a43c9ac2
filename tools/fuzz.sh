#!/usr/bin/env bash
# Coverage-guided fuzzing on the pinned stable toolchain (no nightly, no cargo-fuzz):
# libfuzzer-sys builds libFuzzer, and the SanitizerCoverage passes are requested with
# stable -C flags. See docs/fuzzing.md.
#
#   tools/fuzz.sh build                      build the five fuzz binaries
#   tools/fuzz.sh run TARGET SECONDS [JOBS]  fuzz one target (crashes: fuzz/artifacts/TARGET/)
#   tools/fuzz.sh smoke                      every target for a few seconds (CI);
#                                            fails on the first crash, timeout or OOM
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
fuzz="$root/fuzz"
targets=(scenario machine rtapp replay sysfs)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$fuzz/target}"
# The triple is explicit so that RUSTFLAGS reach only the fuzz code, not build scripts
# and proc macros.
triple=$(rustc -vV | sed -n 's/^host: //p')
bin_dir="$CARGO_TARGET_DIR/$triple/release"

max_len() {
    case "$1" in
    sysfs) echo 4096 ;;
    *) echo 16384 ;;
    esac
}

build() {
    RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
-Cdebug-assertions -Coverflow-checks" \
        cargo build --manifest-path "$fuzz/Cargo.toml" --release --locked \
        --target "$triple" --bins
}

# run TARGET SECONDS [JOBS]; JOBS=0: one process that stops at the first finding.
run() {
    local t=$1 secs=$2 jobs=${3:-1}
    [[ " ${targets[*]} " == *" $t "* ]] || {
        echo "unknown target $t (one of: ${targets[*]})" >&2
        exit 2
    }
    local work="$fuzz/work/$t"
    mkdir -p "$work" "$fuzz/artifacts/$t" "$fuzz/corpus/$t"
    local opts=(-timeout=20 -rss_limit_mb=1024 "-max_len=$(max_len "$t")"
        "-max_total_time=$secs" "-artifact_prefix=$fuzz/artifacts/$t/"
        -print_final_stats=1)
    [[ -f "$fuzz/dict/$t.dict" ]] && opts+=("-dict=$fuzz/dict/$t.dict")
    if ((jobs > 0)); then
        # Fork mode: a crash, timeout or OOM is saved and the run goes on, so one
        # long run collects every distinct finding.
        opts+=("-fork=$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    fi
    # New inputs go to the scratch directory `work/`; the checked-in corpus is read only.
    "$bin_dir/$t" "${opts[@]}" "$work" "$fuzz/corpus/$t"
}

case "${1:-}" in
build) build ;;
run)
    [[ $# -ge 3 ]] || {
        echo "usage: $0 run TARGET SECONDS [JOBS]" >&2
        exit 2
    }
    build
    run "$2" "$3" "${4:-1}"
    ;;
smoke)
    build
    for t in "${targets[@]}"; do
        # Stop at the first finding and fail: a smoke run is a CI gate.
        run "$t" "${SMOKE_SECONDS:-5}" 0
    done
    ;;
*)
    sed -n '2,10p' "$0" >&2
    exit 2
    ;;
esac
