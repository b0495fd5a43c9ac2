#!/usr/bin/env bash
# Cost per simulated event at two task counts (issue 19's "100 k vs 1 k tasks" target):
# for each scenario, the minimum user time of three runs at a short and a long
# duration, differenced, over the difference in events, so set-up cancels out.
#
#   python3 bench/rtapp_gen.py --machine synthetic-1024 1000 100000
#   bash bench/event_cost.sh target/release/schedlab bench/out/tasks-1000.toml bench/out/tasks-100000.toml
set -euo pipefail
bin=$1; shift
short=${SHORT_MS:-20}; long=${LONG_MS:-300}
user_min() { # SCENARIO MS: the least user seconds of three runs
    local best=""
    for _ in 1 2 3; do
        local u
        u=$( { /usr/bin/time -f "%U" "$bin" run "$1" -q --set run.duration_ms="$2" >/dev/null; } 2>&1 | tail -1)
        best=$(python3 -c "print(min(float('$u'), float('${best:-inf}')))")
    done
    echo "$best"
}
events() { "$bin" run "$1" --set run.duration_ms="$2" | grep -oE 'in [0-9]+ events' | grep -oE '[0-9]+'; }
for sc in "$@"; do
    us=$(user_min "$sc" "$short"); ul=$(user_min "$sc" "$long")
    es=$(events "$sc" "$short"); el=$(events "$sc" "$long")
    python3 -c "print('$sc: %.1f ns/event (%s s at $long ms, %s s at $short ms, %d events between)' % (($ul - $us) * 1e9 / ($el - $es), '$ul', '$us', $el - $es))"
done
