#!/usr/bin/env python3
"""Measurement inputs for the rt-app front end (issue 19, docs/PERFORMANCE.md).

Writes, for N threads that each loop { run 50 us, sleep 100 us } for 1 s:

  OUT/rtapp-N.json   the rt-app file (global.duration = 1 s, calibrated on CPU0)
  OUT/rtapp-N.toml   a scenario running it (`[workload] kind = "rtapp"`)
  OUT/tasks-N.toml   the same schedule as a schedlab `tasks` workload: N threads of
                     one process, each marking the time, computing 50 us, sleeping
                     100 us, recording the iteration's period and counting it (what
                     rt-app's phase loop does), for 1 s

Usage:
  python3 bench/rtapp_gen.py N [N ...] [--out DIR] [--machine PRESET]
                             [--instances K] [--run-us R] [--sleep-us S]

--instances K puts K threads in each rt-app task object (`"instance": K`, at most
4096); by default every thread is its own task object (`t0`, `t1`, ...), which is
the layout that stresses the JSON reader. Standard library only.
"""
import argparse
import json
import os


def rtapp_doc(n, instances, run_us, sleep_us):
    tasks = {}
    left, i = n, 0
    while left > 0:
        k = min(instances, left)
        t = {"loop": -1, "run0": run_us, "sleep0": sleep_us}
        if k != 1:
            t = {"instance": k, **t}
        tasks[f"t{i}"] = t
        left -= k
        i += 1
    return {
        "global": {"duration": 1, "calibration": "CPU0", "default_policy": "SCHED_OTHER"},
        "tasks": tasks,
    }


SCENARIO_HEAD = """[machine]
preset = "{machine}"

[kernel]
preset = "v5.6"

[run]
seed = 1
duration_ms = 1000
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("threads", type=int, nargs="+")
    ap.add_argument("--out", default="bench/out")
    ap.add_argument("--machine", default="xeon-88")
    ap.add_argument("--instances", type=int, default=1)
    ap.add_argument("--run-us", type=int, default=50)
    ap.add_argument("--sleep-us", type=int, default=100)
    a = ap.parse_args()
    if not 1 <= a.instances <= 4096:
        ap.error("--instances must be 1..=4096 (rt-app's limit in schedlab)")
    os.makedirs(a.out, exist_ok=True)
    head = SCENARIO_HEAD.format(machine=a.machine)
    for n in a.threads:
        stem = f"rtapp-{n}"
        with open(os.path.join(a.out, stem + ".json"), "w") as f:
            # One task per line: small, and diffable.
            doc = rtapp_doc(n, a.instances, a.run_us, a.sleep_us)
            f.write('{\n"global": ' + json.dumps(doc["global"]) + ',\n"tasks": {\n')
            f.write(",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in doc["tasks"].items()))
            f.write("\n}\n}\n")
        with open(os.path.join(a.out, stem + ".toml"), "w") as f:
            f.write(f"# {n} rt-app threads: loop {{ run {a.run_us} us, sleep {a.sleep_us} us }}, 1 s\n")
            f.write(head)
            f.write(f'\n[workload]\nkind = "rtapp"\nfile = "{stem}.json"\n')
        with open(os.path.join(a.out, f"tasks-{n}.toml"), "w") as f:
            f.write(f"# The `tasks` peer of {stem}.toml: {n} threads of one process\n")
            f.write(head)
            f.write(
                f"""
[workload]
kind = "tasks"

[[workload.task]]
name = "t"
count = {n}
threads = true
program = [
  {{ op = "loop", body = [
      {{ op = "mark" }},
      {{ op = "compute", work = "{a.run_us}us" }},
      {{ op = "sleep", time = "{a.sleep_us}us" }},
      {{ op = "record", metric = "period" }},
      {{ op = "count", metric = "loops" }},
  ] }},
]
"""
            )
        print(os.path.join(a.out, stem + ".toml"), os.path.join(a.out, f"tasks-{n}.toml"))


if __name__ == "__main__":
    main()
