#!/usr/bin/env bash
# Cost per simulated event at two task counts (issue 19's "100 k vs 1 k tasks" target):
# for each scenario, the minimum user time of RUNS runs at a short and a long
# duration, differenced, over the difference in events, so set-up cancels out.
#
#   python3 bench/rtapp_gen.py --machine synthetic-1024 1000 100000
#   bash bench/event_cost.sh target/release/schedlab bench/out/tasks-1000.toml bench/out/tasks-100000.toml
#
# BIN may name several binaries joined by ':' (before:after). Their runs then
# alternate, so that a busy host's drift falls on both alike, and each prints its own
# figures and, with two scenarios, the ratio of the second to the first.
# RUNS (default 3), SHORT_MS (20) and LONG_MS (300) set the method.
set -euo pipefail
IFS=: read -r -a bins <<< "$1"; shift
runs=${RUNS:-3}; short=${SHORT_MS:-20}; long=${LONG_MS:-300}
declare -A best
user_s() { # BIN SCENARIO MS: user seconds of one run, to the millisecond (bash's
    # `time`; /usr/bin/time prints hundredths, ±2 % on a 0.5 s difference)
    local TIMEFORMAT=%3U
    { time "$1" run "$2" -q --set run.duration_ms="$3" >/dev/null 2>&1; } 2>&1 | tail -1
}
for sc in "$@"; do
    for ms in "$short" "$long"; do
        for _ in $(seq "$runs"); do
            for b in "${bins[@]}"; do
                u=$(user_s "$b" "$sc" "$ms")
                k="$b|$sc|$ms"
                best[$k]=$(python3 -c "print(min(float('$u'), float('${best[$k]:-inf}')))")
            done
        done
    done
done
# Events are the same for every binary that keeps the outputs byte-identical; each
# binary's own are counted all the same.
events() { "$1" run "$2" --set run.duration_ms="$3" | grep -oE 'in [0-9]+ events' | grep -oE '[0-9]+'; }
for b in "${bins[@]}"; do
    [ "${#bins[@]}" -gt 1 ] && echo "$b:"
    costs=()
    for sc in "$@"; do
        us=${best["$b|$sc|$short"]}; ul=${best["$b|$sc|$long"]}
        es=$(events "$b" "$sc" "$short"); el=$(events "$b" "$sc" "$long")
        c=$(python3 -c "print('%.1f' % (($ul - $us) * 1e9 / ($el - $es)))")
        costs+=("$c")
        echo "$sc: $c ns/event ($ul s at $long ms, $us s at $short ms, $((el - es)) events between)"
    done
    if [ "$#" -eq 2 ]; then
        python3 -c "print('ratio %.2f' % (${costs[1]} / ${costs[0]}))"
    fi
done
