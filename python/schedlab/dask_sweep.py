"""Sweeps on a Dask cluster: every (point, seed) run is one Dask task.

The driver (this process) does what ``schedlab sweep`` does locally, with the runs
farmed out: :class:`schedlab._native.SweepPlan` validates every point, reads what
``OUT/results.jsonl`` already holds (refusing another experiment's records) and lists
the (point, seed) pairs still to run; each becomes ``client.submit(_native.run_point,
*plan.task(p, s))``; each record line is appended to ``results.jsonl`` as soon as its
task finishes (so a killed driver loses nothing already appended, and rerunning the
same command resumes); at the end ``plan.finish()`` rewrites ``results.jsonl`` and
``results.csv`` (and ``results.parquet``) in (point, seed) order, byte-identical to a
local sweep of the same grid. Dask reschedules the tasks of a worker that dies, so a
killed worker loses nothing either.

Workers need the schedlab package, the same version as the driver (each task checks
it and fails otherwise), and any file the scenario names (machine files, rt-app JSON)
at the same path; the scenario itself is shipped to them as text.

Command line (what ``schedlab sweep ... --dask ADDR`` runs)::

    python -m schedlab.dask_sweep --scheduler tcp://HOST:8786 SCENARIO \\
        --grid KEY=V1,V2 [--grid ...] [--runs N] --out DIR [--parquet] [-q]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _native
from ._args import runs as check_runs

__all__ = ["sweep_on_dask", "main", "run_point", "WorkerInputError", "WorkerVersionError"]


class WorkerInputError(ValueError):
    """A run refused its input on a worker; ``str(e)`` is the native error's text.

    (The native exception is turned into this plain-Python one on the worker so that
    it pickles back to the driver whatever the extension's class layout.)
    """


class WorkerVersionError(RuntimeError):
    """A worker's schedlab is not the driver's version."""


def run_point(driver_version: str, *task: Any) -> str:
    """Run one (point, seed) on a worker: ``_native.run_point`` behind a picklable name,
    after checking that the worker's schedlab is the driver's version (a record's
    identity is the driver's, so a worker of another version would go unnoticed)."""
    if _native.__version__ != driver_version:
        raise WorkerVersionError(
            f"this Dask worker has schedlab {_native.__version__}, the driver "
            f"{driver_version}: install the same schedlab on every worker"
        )
    try:
        return _native.run_point(*task)
    except _native.InputError as e:
        raise WorkerInputError(str(e)) from None


def _task_key(task: Sequence[Any], point: int, seed: int) -> str:
    """A deterministic Dask key: the same run (same arguments) always gets the same key."""
    digest = hashlib.sha256(repr(tuple(task)).encode("utf-8", "surrogatepass")).hexdigest()
    return f"schedlab-run-{digest[:20]}-p{point}-s{seed}"


def sweep_on_dask(
    source: str,
    kind: str,
    grid: List[str],
    runs: int,
    out: str,
    client: Any,
    *,
    parquet: bool = False,
    retries: int = 2,
    on_result: Optional[Callable[[int, int, str], None]] = None,
    allow_native_scheduler: bool = False,
) -> Dict[str, Any]:
    """Run a sweep's missing (point, seed) pairs on ``client``'s cluster.

    ``source``/``kind`` as :func:`schedlab._native.run` takes them; ``grid`` the CLI's
    ``KEY=V1,V2`` strings. ``on_result(point, seed, line)`` is called after each record
    is appended (progress reporting, tests). Returns the dict of
    :func:`schedlab._native.sweep`: points, runs_total, already_done, ran, table.
    On a failed task the remaining ones are cancelled and its exception re-raised;
    everything appended so far stays in ``out`` for a resume.
    ``allow_native_scheduler``: the driver's word that the C scheduler the scenario
    names may run; it travels in each task (never in the scenario), and a worker runs
    it only if its own environment also has ``SCHEDLAB_ALLOW_NATIVE_SCHEDULER=1``.
    """
    from dask.distributed import as_completed


    plan = _native.SweepPlan(source, kind, list(grid), check_runs(runs), out,
                             allow_native_scheduler=bool(allow_native_scheduler))
    futures = []
    where: Dict[str, tuple] = {}
    for point, seed in plan.todo():
        task = plan.task(point, seed)
        key = _task_key(task, point, seed)
        fut = client.submit(run_point, _native.__version__, *task, key=key, pure=False,
                            retries=retries)
        futures.append(fut)
        where[fut.key] = (point, seed)
    try:
        for fut in as_completed(futures):
            line = fut.result()
            plan.append(line)
            if on_result is not None:
                point, seed = where[fut.key]
                on_result(point, seed, line)
            fut.release()
    except BaseException:
        for fut in futures:
            if not fut.done():
                fut.cancel()
        raise
    return plan.finish(bool(parquet))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m schedlab.dask_sweep",
        description="Run `schedlab sweep` with every (point, seed) run as a Dask task; "
        "resumable into --out exactly as the local sweep.",
    )
    p.add_argument("scenario", metavar="SCENARIO", help="scenario TOML file")
    p.add_argument("--scheduler", required=True, metavar="ADDR",
                   help="Dask scheduler address, e.g. tcp://HOST:8786")
    p.add_argument("--grid", action="append", required=True, metavar="KEY=V1,V2,...",
                   help="an axis (repeat for more axes; in kernel.features values, + joins words)")
    p.add_argument("--runs", type=int, default=1, help="seeds per point (default 1)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output directory (results.jsonl, results.csv); rerun to resume")
    p.add_argument("--parquet", action="store_true", help="also write results.parquet")
    p.add_argument("--allow-native-scheduler", action="store_true",
                   help="run the C scheduler the scenario names (each worker also needs "
                   "SCHEDLAB_ALLOW_NATIVE_SCHEDULER=1)")
    p.add_argument("--jobs", type=int, default=None, help=argparse.SUPPRESS)  # local-only
    p.add_argument("--timeout", type=float, default=20.0, metavar="S",
                   help="seconds to wait for the scheduler (default 20)")
    p.add_argument("-q", "--quiet", action="store_true", help="print no summary line")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command-line entry point; returns the exit status (0, 1 or 2)."""
    args = _parser().parse_args(argv)
    try:
        check_runs(args.runs)
    except _native.InputError as e:
        print(f"error: --runs: {e}", file=sys.stderr)
        return 2
    try:
        from dask.distributed import Client
    except ImportError:
        print("error: the Dask driver needs dask.distributed "
              "(pip install \"dask[distributed]\")", file=sys.stderr)
        return 1
    # Validate the scenario, the grid and the out directory before connecting, so bad
    # input is reported (exit 2) whether or not a scheduler is up.
    try:
        _native.SweepPlan(args.scenario, "path", list(args.grid), args.runs, args.out,
                          allow_native_scheduler=args.allow_native_scheduler)
    except _native.InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        client = Client(args.scheduler, timeout=args.timeout)
    except Exception as e:  # OSError, TimeoutError, ValueError for a malformed address
        print(f"error: cannot reach the Dask scheduler at {args.scheduler}: {e}",
              file=sys.stderr)
        return 1
    try:
        res = sweep_on_dask(args.scenario, "path", list(args.grid), args.runs, args.out,
                            client, parquet=args.parquet,
                            allow_native_scheduler=args.allow_native_scheduler)
    except (_native.InputError, WorkerInputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:
        print(f"error: the Dask sweep failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    finally:
        client.close()
    if not args.quiet:
        print(f"{res['points']} points x {args.runs} seeds: {res['runs_total']} runs, "
              f"{res['already_done']} already done, {res['ran']} run now -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
