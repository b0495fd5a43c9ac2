"""schedlab: a deterministic simulator of Linux's fair-class scheduler, from Python.

A thin layer over the compiled ``schedlab._native`` module (the same Rust code as the
``schedlab`` CLI). Results are the CLI's own bytes: ``run(...).to_json()`` is what
``schedlab run --json`` writes for the same scenario, seed and overrides. Tables arrive
as Arrow IPC streams and become pandas (default), polars or pyarrow frames on first use.

>>> import schedlab
>>> r = schedlab.run("scenarios/demo.toml", set="run.duration_ms=20")
>>> r.scalars["wakeup_latency_us.mean"]            # doctest: +SKIP
>>> r.tasks.head()                                   # doctest: +SKIP

See docs/python.md.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Union

from . import _args, _frames, _native
from ._args import Scenario
from ._result import Comparison, Result

__all__ = [
    "InputError",
    "Result",
    "Comparison",
    "Topology",
    "run",
    "compare",
    "sweep",
    "machines",
    "features",
    "kernels",
    "workloads",
    "topology",
    "lisa_platform",
    "__version__",
]

__version__: str = _native.__version__

#: Bad input (a scenario, an override, a feature, a grid, a sweep directory): the
#: CLI's exit-2 errors. ``str(e)`` is the CLI's message without ``error: ``
#: (``FILE:LINE: msg``); ``e.file``, ``e.line``, ``e.key``, ``e.msg`` its parts.
#: A subclass of ValueError.
InputError = _native.InputError

Words = Union[None, str, Iterable[str]]


def run(
    scenario: Scenario,
    *,
    seed: Optional[int] = None,
    set: Words = None,  # noqa: A002 - the CLI's option name
    features: Words = None,
    trace: Union[None, bool, str, "os.PathLike[str]"] = None,
    frame: str = "pandas",
    allow_native_scheduler: bool = False,
    sched_tp: bool = False,
) -> Result:
    """Run one scenario, like ``schedlab run SCENARIO [--seed] [--set]... [--features]``.

    ``scenario``: a path (str or os.PathLike), TOML text (a str with a newline or
    starting with ``[``), or a dict (the TOML's structure). ``set``: "KEY=VALUE" or a
    list of them. ``features``: "A,NO_B" or ["A", "NO_B"]. ``trace``: None/False (no
    event log), True (keep the event log: ``Result.events``), or a path: keep the event
    log and also write the trace file, in the format its extension names (``.txt``
    ftrace text, ``.perfetto-trace``/``.pftrace`` Perfetto, ``.dat`` trace-cmd, else the
    decision trace). ``allow_native_scheduler``: compile and run the C scheduler the
    scenario names (``[kernel] scheduler = "x.bpf.c"``), which is native code run
    contained (docs/sched-ext.md, "Trust"); the shipped ``scenarios/scx/`` sources
    need no consent. It is the CLI's ``--allow-native-scheduler``. ``sched_tp``: also
    log LISA's ``sched_tp`` module events the modelled kernel has (``sched_pelt_se``,
    ...; the CLI's ``--sched-tp``); needs ``trace``.
    Raises :class:`InputError` on bad input.
    """
    _frames.check_frame(frame)
    source, kind = _args.scenario_source(scenario)
    events, trace_path = _args.trace(trace)
    if sched_tp and not events:
        raise InputError("sched_tp=True needs trace= (the events are trace events)")
    if seed is not None and not isinstance(seed, int):
        raise TypeError(f"seed must be an int, not {type(seed).__name__}")
    raw = _native.run(
        source, kind, seed, _args.sets(set), _args.features(features), events, trace_path,
        allow_native_scheduler=bool(allow_native_scheduler), sched_tp=bool(sched_tp),
    )
    return Result(raw, frame)


def compare(
    scenario: Scenario,
    *,
    a: Union[str, Iterable[str]] = "",
    b: Union[str, Iterable[str]] = "",
    runs: int = 20,
    jobs: Optional[int] = None,
    set: Words = None,  # noqa: A002
    frame: str = "pandas",
    allow_native_scheduler: bool = False,
) -> Comparison:
    """Compare two arms over ``runs`` paired seeds, like ``schedlab compare``.

    An arm is a SPEC: comma-separated feature words (``NAME``/``NO_NAME``) and
    ``key=value`` overrides, or a list of them; ``""`` is the scenario as written.
    ``set`` applies to both arms. ``jobs``: threads (results do not depend on it).
    ``allow_native_scheduler``: as :func:`run`'s.
    """
    _frames.check_frame(frame)
    source, kind = _args.scenario_source(scenario)
    raw = _native.compare(
        source, kind, _args.spec(a), _args.spec(b), _args.runs(runs), jobs, _args.sets(set),
        allow_native_scheduler=bool(allow_native_scheduler),
    )
    return Comparison(raw, frame)


def sweep(
    scenario: Scenario,
    grid: Union[Mapping[str, Any], Iterable[str]],
    *,
    runs: int = 1,
    jobs: Optional[int] = None,
    out: Union[None, str, "os.PathLike[str]"] = None,
    parquet: bool = False,
    client: Any = None,
    frame: str = "pandas",
    allow_native_scheduler: bool = False,
) -> Any:
    """Run the grid's points x ``runs`` seeds, like ``schedlab sweep``; return the tidy table.

    ``grid``: ``{"machine.preset": ["xeon-88", "spr-224"], "kernel.features":
    ["SMT_BALANCE", "NO_SMT_BALANCE"]}`` or ``["KEY=V1,V2", ...]``. The table has one
    row per (point, seed, metric): point, one utf8 column per grid key, seed, metric,
    value. ``out``: the resumable output directory (results.jsonl, results.csv, and
    results.parquet with ``parquet=True``); None uses a temporary directory removed
    afterwards. ``client``: None runs on local threads (``jobs`` of them); a
    ``dask.distributed.Client`` runs every (point, seed) as a Dask task
    (:func:`schedlab.dask_sweep.sweep_on_dask`). With pandas, ``df.attrs["schedlab"]``
    holds the counts (points, runs_total, already_done, ran).
    ``allow_native_scheduler``: as :func:`run`'s; on Dask each worker must also
    have ``SCHEDLAB_ALLOW_NATIVE_SCHEDULER=1`` in its environment.
    """
    _frames.check_frame(frame)
    source, kind = _args.scenario_source(scenario)
    grid_args = _args.grid(grid)
    runs = _args.runs(runs)
    tmp: Optional[tempfile.TemporaryDirectory] = None
    if out is None:
        tmp = tempfile.TemporaryDirectory(prefix="schedlab-sweep-")
        out_dir = tmp.name
    else:
        out_dir = os.fspath(out)
        if isinstance(out_dir, bytes):
            out_dir = os.fsdecode(out_dir)
    try:
        if client is None:
            res = _native.sweep(source, kind, grid_args, runs, jobs, out_dir, bool(parquet),
                                allow_native_scheduler=bool(allow_native_scheduler))
        else:
            from .dask_sweep import sweep_on_dask

            res = sweep_on_dask(
                source, kind, grid_args, runs, out_dir, client, parquet=bool(parquet),
                allow_native_scheduler=bool(allow_native_scheduler),
            )
        df = _frames.to_frame(res["table"], frame)
    finally:
        if tmp is not None:
            tmp.cleanup()
    if frame == "pandas":
        df.attrs["schedlab"] = {
            k: res[k] for k in ("points", "runs_total", "already_done", "ran") if k in res
        }
    return df


def machines(*, frame: str = "pandas") -> Any:
    """Machine presets: name, description (``schedlab list machines``)."""
    return _frames.from_rows(_native.machines(), ["name", "description"], frame)


def features(*, frame: str = "pandas") -> Any:
    """Scheduler features: name, default (on in the v5.6 baseline), origin, description."""
    return _frames.from_rows(
        _native.features(), ["name", "default", "origin", "description"], frame
    )


def kernels(*, frame: str = "pandas") -> Any:
    """Kernel presets: name, description (``schedlab list kernels``)."""
    return _frames.from_rows(_native.kernels(), ["name", "description"], frame)


def workloads(*, frame: str = "pandas") -> Any:
    """Workload kinds: name, description (``schedlab list workloads``)."""
    return _frames.from_rows(_native.workloads(), ["name", "description"], frame)


class Topology(NamedTuple):
    """A machine and its sched domains (``schedlab topology``).

    ``text``: what the CLI prints; ``toml``: the machine file; ``cpus``: cpu, core,
    cluster, llc, package, node, capacity, freq_domain, kind; ``domains``: one row per
    (cpu, level): cpu, level, name, span (a cpulist), span_weight, flags
    (``|``-joined), imbalance_pct, min_interval, max_interval (ms), busy_factor.
    """

    text: str
    toml: str
    cpus: Any
    domains: Any


def lisa_platform(
    name_or_path: Union[str, "os.PathLike[str]"],
    *,
    kernel: str = "v5.6",
    hz: int = 250,
    rtapp_calib: Optional[int] = None,
) -> str:
    """The machine as LISA's ``PlatformInfo`` YAML (``schedlab topology MACHINE
    --export-lisa``): capacities, frequency domains, energy model, kernel version and
    config, rt-app calibration (``rtapp_calib``: ns per loop on a capacity-1024 CPU,
    default 100). Write it to a file and load it with
    ``lisa.platforms.platinfo.PlatformInfo.from_yaml_map``."""
    arg = os.fspath(name_or_path)
    if isinstance(arg, bytes):
        arg = os.fsdecode(arg)
    return _native.lisa_platform(arg, kernel, hz, rtapp_calib)


def topology(name_or_path: Union[str, "os.PathLike[str]"], *, frame: str = "pandas") -> Topology:
    """A machine preset name (``"juno-r0"``) or machine file path -> :class:`Topology`."""
    _frames.check_frame(frame)
    arg = os.fspath(name_or_path)
    if isinstance(arg, bytes):
        arg = os.fsdecode(arg)
    raw = _native.topology(arg)
    return Topology(
        text=raw["text"],
        toml=raw["toml"],
        cpus=_frames.to_frame(raw["cpus"], frame),
        domains=_frames.to_frame(raw["domains"], frame),
    )
