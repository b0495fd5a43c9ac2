#!/usr/bin/env bash
# The peer comparison of docs/PERFORMANCE.md: schedlab and scx_simulator (sched-ext/scx,
# branch `simulator.v3`) on the same rt-app file, same machine, alternating runs.
#
# usage: SCXSIM=/path/to/scxsim bench/peer.sh [THREADS] [RUNS]
#   SCXSIM  the path of an already-built scx_simulator binary. The peer is a program
#           from outside this project: this script neither fetches nor builds it, it
#           only runs and times it (docs/PERFORMANCE.md names the commit measured).
# needs: cargo, python3, /usr/bin/time; builds schedlab (release) unless SCHEDLAB_BIN is set.
# SCX_SIMPLE_C=<kernel tree>/tools/sched_ext/scx_simple.bpf.c adds a row: schedlab running
#        the kernel's own scx_simple from its BPF C source on xeon-88 (docs/sched-ext.md),
#        whose decisions must equal the built-in `simple`'s (the script compares the traces).
set -euo pipefail
PEER=${SCXSIM:-}
[ -n "$PEER" ] || { echo "usage: SCXSIM=/path/to/scxsim bench/peer.sh [THREADS] [RUNS]" >&2; exit 2; }
[ -x "$PEER" ] || { echo "bench/peer.sh: SCXSIM=$PEER is not an executable file" >&2; exit 2; }
PEER=$(realpath "$PEER")
N=${1:-400}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
# SCHEDLAB_BIN=target/fast/schedlab (tools/build-fast.sh) measures the LTO + PGO build.
if [ -n "${SCHEDLAB_BIN:-}" ]; then
  SL=$(realpath "$SCHEDLAB_BIN")
else
  (cd "$ROOT" && cargo build --release --quiet)
  SL="$ROOT/target/release/schedlab"
fi
cd "$OUT"
python3 "$ROOT/bench/rtapp_gen.py" --out "$OUT" --machine xeon-88 "$N" > /dev/null
# flat-88: xeon-88 as one node and one LLC, both SMT threads at full speed, no idle
# states (the peer's flat CPU list).
"$SL" topology xeon-88 --export x88.toml > /dev/null
python3 - <<'PY'
s = open('x88.toml').read()
s = s.replace('name = "xeon-88"', 'name = "flat-88"')
s = s.replace('numa_distance = [[10, 21], [21, 10]]', 'numa_distance = [[10]]')
s = s.replace('nodes = [\n    "0-21,44-65", "22-43,66-87",\n]', 'nodes = ["0-87"]')
s = s.replace('smt_throughput = [1024, 640]', 'smt_throughput = [1024, 1024]')
i, j = s.index('[[idle_table]]'), s.index('[[freq_domain]]')
s = s[:i] + '[[idle_table]]\nname = "idle0"\n\n' + s[j:]
i, j = s.index('[[freq_domain]]'), s.index('[[cpu_group]]')
s = s[:i] + ('[[freq_domain]]\ncpus = "0-87"\ntransition_latency_us = 0\n'
             '[[freq_domain.opp]]\nfreq_khz = 2200000\npower_mw = 0\n\n') + s[j:]
open('flat88.toml', 'w').write(s)
PY
EXT='preset = "v5.6"\nclass = "ext"\nscheduler = "simple"'
sed "s|preset = \"xeon-88\"|file = \"$OUT/flat88.toml\"|; s|preset = \"v5.6\"|$EXT|" "rtapp-$N.toml" > flat-ext.toml
sed "s|preset = \"v5.6\"|$EXT|" "rtapp-$N.toml" > x88-ext.toml
SCS=(flat-ext x88-ext "rtapp-$N")
if [ -n "${SCX_SIMPLE_C:-}" ]; then
  sed "s|scheduler = \"simple\"|scheduler = \"$SCX_SIMPLE_C\"|" x88-ext.toml > x88-ext-c.toml
  SCS+=(x88-ext-c)
  "$SL" run x88-ext.toml -q --trace builtin.txt
  "$SL" run x88-ext-c.toml -q --allow-native-scheduler --trace c.txt
  cmp -s builtin.txt c.txt && echo "scx_simple.bpf.c: the same ftrace text as the built-in simple" \
    || echo "scx_simple.bpf.c: DECISIONS DIFFER from the built-in simple (builtin.txt, c.txt)"
fi
for i in $(seq "$RUNS"); do
  /usr/bin/time -f "scx_simulator simple, flat 88:  %e s wall, %U s user, %M KB" \
    "$PEER" "rtapp-$N.json" -s simple --cpus 88 --smt 2 > /dev/null
  for sc in "${SCS[@]}"; do
    # The kernel's scx_simple.bpf.c is native code (docs/sched-ext.md, "Trust").
    native=(); [ "$sc" = x88-ext-c ] && native=(--allow-native-scheduler)
    /usr/bin/time -f "schedlab $sc: %e s wall, %U s user, %M KB" "$SL" run "$sc.toml" -q \
      "${native[@]}" --json "$sc.result.json"
  done
done
for sc in "${SCS[@]}"; do
  python3 -c "
import json, sys
d = json.load(open('$sc.result.json')); m = d['metrics']
print('$sc: %d switches, %d wakeups, busy %.3f' % (m['context_switches'],
      sum(t['wakeups'] for t in d['tasks']), sum(m['cpu_busy']) / len(m['cpu_busy'])))"
done
echo "peer decisions: $("$PEER" "rtapp-$N.json" -s simple --cpus 88 --smt 2 --dump-trace 2>&1 | grep -c ' SCHED ') switches"
echo "files in $OUT"
