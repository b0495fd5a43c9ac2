#!/usr/bin/env python3
"""The Dask sweep's cost against the local one (docs/PERFORMANCE.md, "Sweeps on Dask").

Runs the same 200-run grid (scenarios/demo.toml: 2 machines x 2 feature sets x 50
seeds, with run-to-run noise) four ways and prints one table row each: the local
thread pool with 1 and 2 jobs (`schedlab.sweep(..., jobs=N)`, the CLI's code), and
Dask on a LocalCluster of 2 single-threaded worker processes, once per task size
(`--duration-ms`, default 200 and 2000 ms simulated). It checks that every way wrote
byte-identical results.jsonl, and derives the Dask overhead per task:
(Dask wall - local 2-job wall) / runs x 2 workers. Cluster start-up is timed apart.

    python tools/dask-bench.py [--duration-ms 200,2000] [--runs 50]
"""

from __future__ import annotations

import argparse
import filecmp
import tempfile
import time
from pathlib import Path

import schedlab

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration-ms", default="200,2000")
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    from dask.distributed import Client, LocalCluster

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    client.run(lambda: __import__("schedlab"))  # import on the workers before timing
    startup = time.perf_counter() - t0
    print(f"LocalCluster(2 workers) start-up and import: {startup:.2f} s")
    print("| simulated per run | runs | local 1 job | local 2 jobs | Dask 2 workers "
          "| Dask overhead per task | identical |")
    print("|---|---|---|---|---|---|---|")
    scenario = str(REPO / "scenarios" / "demo.toml")
    try:
        for ms in [int(x) for x in args.duration_ms.split(",")]:
            grid = {"machine.preset": ["juno-r0", "hikey960"],
                    "kernel.features": ["SIS_PROP", "NO_SIS_PROP"],
                    "run.noise": ["0.05"], "run.duration_ms": [str(ms)]}
            n = 4 * args.runs
            with tempfile.TemporaryDirectory() as d:
                walls = {}
                for name, kw in [("j1", {"jobs": 1}), ("j2", {"jobs": 2}),
                                 ("dask", {"client": client})]:
                    t = time.perf_counter()
                    schedlab.sweep(scenario, grid, runs=args.runs, out=f"{d}/{name}", **kw)
                    walls[name] = time.perf_counter() - t
                same = all(filecmp.cmp(f"{d}/j1/results.jsonl", f"{d}/{k}/results.jsonl",
                                       shallow=False) for k in ("j2", "dask"))
            over_ms = (walls["dask"] - walls["j2"]) / n * 2 * 1000
            print(f"| {ms} ms | {n} | {walls['j1']:.2f} s | {walls['j2']:.2f} s "
                  f"| {walls['dask']:.2f} s | {over_ms:.2f} ms | {'yes' if same else 'NO'} |")
    finally:
        client.close()
        cluster.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
