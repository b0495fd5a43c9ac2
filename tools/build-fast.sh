#!/usr/bin/env bash
# The fastest schedlab binary: the `fast` profile (release + fat LTO, no unwinding;
# Cargo.toml says why) with profile-guided optimisation (PGO). Same outputs as the
# release build, byte for byte; 20 % fewer instructions per event on `bench` medium
# (docs/PERFORMANCE.md, "Issue 19, session 21").
#
# usage: tools/build-fast.sh            -> target/fast/schedlab, for this machine's CPU
#        tools/build-fast.sh --portable -> the same for any CPU of the target (and for valgrind)
#        tools/build-fast.sh --no-pgo   -> the profile alone (one build, no llvm-tools needed)
#        tools/build-fast.sh --train BIN
#                                       -> run the training set with BIN only (CI runs
#                                          it with the release binary so the set cannot rot)
#
# Like its profile data, the binary is built for the machine that builds it:
# `-C target-cpu=native` unless RUSTFLAGS names a target CPU or `--portable` is given
# (PERFORMANCE.md: 3-4 % less wall time, the same outputs). Such a binary may die with
# SIGILL on another CPU, and valgrind cannot run one that uses AVX-512: measure
# instructions with a `--portable` build or RUSTFLAGS="-C target-cpu=x86-64-v3".
#
# PGO is three steps: an instrumented build (target/pgo-gen) that writes counters of
# every branch and call as it runs; the training set below, which runs the workloads
# schedlab exists for; a second build that lays out and inlines by those counts. The
# training set is the checked-in scenarios and seed reproductions, the v6.6 (EEVDF) and
# sched_ext classes, the 1 024-CPU machine and `schedlab bench` at a fifth of its size
# (without the bench, the PGO build ran `bench` medium no faster than LTO alone: its
# pipe ping-pong paths were too cold in the rest to be inlined). bench/out's files,
# the peer workload among them, are not in it (the bench's 10 000- and 100 000-task
# sizes are workloads of their kind): PERFORMANCE.md reports their gains apart.
#
# needs: cargo, and for PGO rustup's `llvm-tools` component (for `llvm-profdata`,
# matching the toolchain's LLVM): the script adds it when rustup is there.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# The training set: every run must succeed (`set -e`), or the build stops.
train() {
    local bin=$1 f
    for f in scenarios/*.toml scenarios/seeds/*.toml; do
        "$bin" run "$f" -q >/dev/null
    done
    "$bin" run scenarios/hackbench.toml -q --set kernel.preset=v6.6 >/dev/null
    "$bin" run scenarios/schbench.toml -q --set kernel.preset=v6.6 >/dev/null
    "$bin" run scenarios/hackbench.toml -q --set kernel.class=ext \
        --set kernel.scheduler=simple >/dev/null
    "$bin" run scenarios/hackbench.toml -q --set machine.preset=synthetic-1024 \
        --set run.duration_ms=100 >/dev/null
    "$bin" run scenarios/rtapp-example.toml -q --set machine.preset=power9-176 >/dev/null
    "$bin" bench --scale 0.2 >/dev/null
}

usage() {
    echo "usage: tools/build-fast.sh [--portable] [--no-pgo] | --train BIN" >&2
    exit 2
}
portable=0
pgo=1
while [ $# -gt 0 ]; do
    case "$1" in
    --train)
        bin=${2:-}
        [ -n "$bin" ] || usage
        train "$bin"
        echo "training set: every run succeeded with $bin"
        exit 0
        ;;
    --portable) portable=1 ;;
    --no-pgo) pgo=0 ;;
    *) usage ;;
    esac
    shift
done

# RUSTFLAGS from the environment go into every build below; a target CPU is added
# unless they name one.
FLAGS=${RUSTFLAGS:-}
case "$FLAGS" in
*target-cpu*) cpu="as RUSTFLAGS say" ;;
*)
    if [ "$portable" = 1 ]; then
        cpu="the target's baseline (portable)"
    else
        FLAGS="$FLAGS -C target-cpu=native"
        cpu="this machine's CPU (target-cpu=native)"
    fi
    ;;
esac

if [ "$pgo" = 0 ]; then
    RUSTFLAGS="$FLAGS" cargo build --profile fast --locked -p schedlab-cli
    echo "built target/fast/schedlab (fast profile, no PGO; CPU: $cpu)"
    exit 0
fi

if command -v rustup >/dev/null 2>&1; then
    rustup component add llvm-tools >/dev/null 2>&1 || true
fi
PROFDATA="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-profdata"
if [ ! -x "$PROFDATA" ]; then
    echo "error: $PROFDATA not found: install the toolchain's llvm-tools component" \
        "(rustup component add llvm-tools), or build with --no-pgo" >&2
    exit 2
fi

DATA="$ROOT/target/pgo-data"
rm -rf "$DATA"
mkdir -p "$DATA"
# Both builds get the same flags but the profile one. The instrumented build has its
# own target directory so that the final one does not rebuild from scratch next time.
RUSTFLAGS="$FLAGS -Cprofile-generate=$DATA" \
    cargo build --profile fast --locked -p schedlab-cli --target-dir target/pgo-gen
echo "== training (instrumented binary)"
train target/pgo-gen/fast/schedlab
"$PROFDATA" merge -o "$DATA/merged.profdata" "$DATA"
RUSTFLAGS="$FLAGS -Cprofile-use=$DATA/merged.profdata" \
    cargo build --profile fast --locked -p schedlab-cli
echo "built target/fast/schedlab (LTO + PGO; CPU: $cpu)"
