#!/usr/bin/env bash
# Behaviour-identity check for refactors: runs every scenario (summary, JSON, ftrace text,
# Perfetto, decision trace), `reproduce --quick` (text, JSON, HTML), a compare with its HTML
# report, a sweep, explain, topology of every preset and the lists, with one binary, and
# writes one SHA-256 per output to a manifest. Two manifests from two commits must be equal.
#
#   bash tools/identity.sh BIN OUTDIR        # e.g. target/release/schedlab /tmp/id-before
#   diff /tmp/id-before/MANIFEST /tmp/id-after/MANIFEST
set -euo pipefail
bin=$(realpath "$1"); out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"; mkdir -p "$out"
cd "$root"
ms=${IDENTITY_MS:-200}
run() { # NAME ARGS...: stdout+stderr and exit code into NAME.out
    local name=$1; shift
    local rc=0
    "$bin" "$@" >"$out/$name.out" 2>&1 || rc=$?
    echo "exit $rc" >>"$out/$name.out"
}
for f in scenarios/*.toml scenarios/seeds/*.toml scenarios/oracle/*.toml; do
    [ "$(basename "$f")" = suite.toml ] && continue
    n=$(echo "$f" | tr / _)
    run "$n" run "$f" --set run.duration_ms=$ms --json "$out/$n.json" --trace "$out/$n.txt"
    run "$n.pf" run "$f" --set run.duration_ms=$ms --trace "$out/$n.perfetto-trace" -q
    run "$n.dec" run "$f" --set run.duration_ms=$ms --trace "$out/$n.decisions" -q
done
run reproduce reproduce --quick --runs 6 --jobs 2 --json "$out/reproduce.json" --report "$out/reproduce.html"
run reproduce-md reproduce 003 --quick --runs 6 --jobs 2 --report "$out/reproduce.md" -q
run compare compare scenarios/demo.toml --set run.noise=0.05 --set run.duration_ms=100 \
    --a "" --b kernel.preset=v6.6 --runs 6 --report "$out/compare.html" --json "$out/compare.json"
run sweep sweep scenarios/hackbench.toml --grid run.duration_ms=50 --grid run.noise=0.05 \
    --grid machine.preset=xeon-88,juno-r0 --grid kernel.features=NO_SMT_BALANCE,SMT_BALANCE \
    --runs 2 --out "$out/sweep" --report "$out/sweep.html"
run explain explain scenarios/perf-pipe.toml --task worker1 --at 3 --set machine.preset=xeon-88
for m in $("$bin" list machines | awk '{print $1}'); do
    [ "$m" = host ] && continue
    run "topology-$m" topology "$m"
    run "topology-$m-export" topology "$m" --export "$out/topology-$m.toml"
done
for l in machines features kernels workloads; do run "list-$l" list "$l"; done
# Wall-clock figures and the output directory are the only things allowed to differ
# between two runs: blank them (also where they show through: the progress lines'
# elapsed seconds, and the byte counts of written files that hold wall_seconds).
find "$out" -type f \( -name '*.out' -o -name '*.json' -o -name '*.jsonl' -o -name '*.csv' -o -name '*.html' -o -name '*.md' \) -print0 |
    xargs -0 sed -i -E -e 's/[0-9.]+ s wall, [0-9.]+ M events\/s/WALL/g' \
        -e 's/"wall_seconds": ?[0-9.e+-]+/"wall_seconds":WALL/g' -e "s#$out#OUT#g" \
        -e 's/ runs \([0-9]+ s\)/ runs (N s)/' \
        -e 's/^(wrote \S+\.(json|jsonl|csv|html|md)) \([0-9]+ bytes\)/\1 (N bytes)/'
(cd "$out" && find . -type f ! -name MANIFEST | LC_ALL=C sort | xargs sha256sum) >"$out/MANIFEST"
wc -l <"$out/MANIFEST"
