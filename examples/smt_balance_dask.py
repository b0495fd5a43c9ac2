#!/usr/bin/env python3
"""SMT_BALANCE (seed 003) on two SMT machines, swept on Dask, with latency CDFs.

What it does, in well under a minute on two cores:

1. sweeps hackbench over ``machine.preset`` (two SMT presets) x ``kernel.features``
   (``SMT_BALANCE`` vs ``NO_SMT_BALANCE``) x ``--runs`` seeds, every run a Dask task
   (a 2-worker LocalCluster by default, ``--scheduler tcp://HOST:8786`` for a real
   cluster), into ``OUT/sweep`` (resumable: rerun the command to finish a killed sweep);
2. prints the mean hackbench time and wakeup latency per (machine, arm);
3. runs one seed per (machine, arm) locally and plots the wakeup latency CDFs from
   each run's ``.latency`` histogram into ``OUT/smt_balance_cdf.png``;
4. writes one run's Perfetto trace (``OUT/smt_balance.perfetto-trace``, open it at
   https://ui.perfetto.dev) and reads that run's events frame;
5. reads the Perfetto trace file back with Perfetto's own protobuf classes (the
   ``perfetto`` package from PyPI) and checks its ftrace events against the frame.

    python examples/smt_balance_dask.py --out /tmp/smt
    python examples/smt_balance_dask.py --out /tmp/smt --scheduler tcp://HOST:8786
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import schedlab

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "hackbench.toml"
MACHINES = ["xeon-e5-40", "alderlake-24"]  # both SMT2; 40 and 24 CPUs
ARMS = ["NO_SMT_BALANCE", "SMT_BALANCE"]


def small_hackbench() -> str:
    """scenarios/hackbench.toml as TOML text, smaller (4 groups x 20 fds x 40 loops) and
    with run-to-run noise so that seeds differ (hackbench draws nothing at random)."""
    text = SCENARIO.read_text()
    for pattern, repl in [(r"(?m)^groups = \d+$", "groups = 4"),
                          (r"(?m)^loops = \d+$", "loops = 40"),
                          (r"(?m)^seed = (\d+)$", r"seed = \1\nnoise = 0.05")]:
        text, n = re.subn(pattern, repl, text)
        if n != 1:
            raise SystemExit(f"{SCENARIO}: expected one line matching {pattern!r}")
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="smt-balance-out", help="output directory")
    ap.add_argument("--scheduler", default=None,
                    help="Dask scheduler address (default: a local 2-worker cluster)")
    ap.add_argument("--runs", type=int, default=5, help="seeds per point (default 5)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()

    # The feature and the machines must exist in this build.
    features = set(schedlab.features()["name"])
    machines = set(schedlab.machines()["name"])
    missing = [f for f in ("SMT_BALANCE",) if f not in features] + \
              [m for m in MACHINES if m not in machines]
    if missing:
        print(f"this schedlab lacks {', '.join(missing)}", file=sys.stderr)
        return 1

    # The scenario as TOML text: Dask workers get the text, so they need no copy of it.
    scenario = small_hackbench()

    # -- 1. the sweep, on Dask ---------------------------------------------------------
    from dask.distributed import Client, LocalCluster

    cluster = None
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        df = schedlab.sweep(
            scenario,
            {"machine.preset": MACHINES, "kernel.features": ARMS},
            runs=args.runs,
            out=out / "sweep",
            client=client,
        )
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    info = df.attrs.get("schedlab", {})
    print(f"sweep: {info.get('points')} points x {args.runs} seeds, "
          f"{info.get('ran')} run now, {info.get('already_done')} already done "
          f"-> {out / 'sweep'}")

    # -- 2. a table of means ---------------------------------------------------------
    wanted = ["tool.time_s", "wakeup_latency_us.mean", "wakeup_latency_us.p99", "migrations"]
    table = (df[df["metric"].isin(wanted)]
             .pivot_table(index=["machine.preset", "kernel.features"], columns="metric",
                          values="value", aggfunc="mean"))
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))

    # -- 3. wakeup latency CDFs from one run per arm ----------------------------------
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(MACHINES), figsize=(6 * len(MACHINES), 4), sharey=True)
    for ax, machine in zip(axes, MACHINES):
        for arm in ARMS:
            r = schedlab.run(scenario, set=[f"machine.preset={machine}"], features=arm)
            lat = r.latency
            w = lat[lat["metric"] == "wakeup_latency"].sort_values("value")  # unit: ns
            cdf = w["count"].cumsum() / w["count"].sum()
            ax.step(w["value"] / 1000.0, cdf, where="post",
                    label=f"{arm} (mean {r.scalars['wakeup_latency_us.mean']:.1f} us)")
        ax.set_xscale("log")
        ax.set_xlim(left=0.1)  # the histograms record 0 as 1 ns
        ax.set_title(f"hackbench on {machine}, seed {r.summary['seed']}")
        ax.set_xlabel("wakeup latency (us)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    axes[0].set_ylabel("fraction of wakeups")
    fig.tight_layout()
    png = out / "smt_balance_cdf.png"
    fig.savefig(png, dpi=100)
    print(f"wakeup latency CDFs -> {png}")

    # -- 4. one run's Perfetto trace, and its events ----------------------------------
    trace = out / "smt_balance.perfetto-trace"
    r = schedlab.run(scenario, set=[f"machine.preset={MACHINES[0]}", "workload.loops=10"],
                     features="SMT_BALANCE", trace=trace)
    ev = r.events
    per_event = ev["event"].value_counts().to_dict()
    switches = r.df_event("sched_switch")
    busiest = switches["__cpu"].value_counts().idxmax()
    print(f"trace -> {trace} ({trace.stat().st_size} bytes); {len(ev)} events: "
          + ", ".join(f"{k}={v}" for k, v in sorted(per_event.items())))
    print(f"most context switches on CPU {busiest}")

    # -- 5. the Perfetto file, decoded with Perfetto's own protos ----------------------
    try:
        from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
    except ImportError:
        print("(pip install perfetto to decode the trace file with Perfetto's protos)")
    else:
        decoded = Trace.FromString(trace.read_bytes())
        counts: dict = {}
        for packet in decoded.packet:
            if packet.HasField("ftrace_events"):
                for e in packet.ftrace_events.event:
                    kind = e.WhichOneof("event")
                    counts[kind] = counts.get(kind, 0) + 1
        for name in ("sched_switch", "sched_waking", "sched_wakeup", "cpu_idle"):
            if counts.get(name, 0) != per_event.get(name, 0):
                print(f"{trace}: {counts.get(name, 0)} {name} events in the file, "
                      f"{per_event.get(name, 0)} in the events frame", file=sys.stderr)
                return 1
        print(f"perfetto protos: {len(decoded.packet)} packets; "
              + ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
              + "; sched_switch/waking/wakeup/cpu_idle counts equal the events frame")
    print(f"done in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
