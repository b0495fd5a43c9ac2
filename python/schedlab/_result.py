"""Result objects: one run (:class:`Result`) and one A/B comparison (:class:`Comparison`).

Both keep the native module's raw output (the JSON text, the printed text and the Arrow
IPC bytes of each table) and build DataFrames only when a property is first read.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from . import _frames

#: Columns every event row has; the remaining columns are event fields (null where an
#: event has no such field).
EVENT_COMMON = ("ts", "__cpu", "__pid", "__comm", "event")


class Result:
    """One simulated run, as returned by :func:`schedlab.run`.

    Attributes and properties:

    - ``summary``: dict of the run's identity and size, from the result JSON —
      ``scenario``, ``seed``, ``machine`` (name), ``nr_cpus``, ``kernel`` (preset),
      ``features`` (the resolved list, ``NAME``/``NO_NAME``), ``workload`` (kind),
      ``sim_time_ns``, ``events``, ``stop_reason``, ``wall_seconds`` (the only
      non-deterministic value);
    - ``metrics``: dict, the JSON's ``metrics`` object plus its ``workload`` object under
      the key ``"workload"``;
    - ``scalars``: dict of the per-run scalars ``compare`` and ``sweep`` use;
    - ``data``: the whole result JSON, parsed;
    - ``tasks``, ``functions``, ``latency``, ``events``: DataFrames (``events`` only when
      the run was made with ``trace=``);
    - ``text``: the summary the CLI prints; ``to_json()``: the result JSON's exact text.
    """

    def __init__(self, raw: Dict[str, Any], frame: str) -> None:
        self._raw = raw
        self._frame = frame
        self._cache: Dict[str, Any] = {}
        self._data: Optional[Dict[str, Any]] = None

    # -- plain data ---------------------------------------------------------------
    def to_json(self) -> str:
        """The result JSON, byte-identical to ``schedlab run --json`` of the same run."""
        return self._raw["json"]

    @property
    def data(self) -> Dict[str, Any]:
        """The result JSON, parsed (docs/scenarios.md §7 is its schema)."""
        if self._data is None:
            self._data = json.loads(self._raw["json"])
        return self._data

    @property
    def text(self) -> str:
        """The summary ``schedlab run`` prints."""
        return self._raw["text"]

    @property
    def scalars(self) -> Dict[str, float]:
        """Per-run scalars (``wakeup_latency_us.mean``, ``migrations``, ``tool.*``, ...)."""
        return dict(self._raw["scalars"])

    @property
    def summary(self) -> Dict[str, Any]:
        d = self.data
        workload = d.get("workload", {})
        return {
            "scenario": d.get("scenario"),
            "seed": d.get("seed"),
            "machine": d.get("machine", {}).get("name"),
            "nr_cpus": d.get("machine", {}).get("nr_cpus"),
            "kernel": d.get("kernel", {}).get("preset"),
            "features": list(d.get("kernel", {}).get("features", [])),
            "workload": workload.get("kind"),
            "sim_time_ns": d.get("sim_time_ns"),
            "events": d.get("events"),
            "stop_reason": workload.get("stop_reason"),
            "wall_seconds": d.get("wall_seconds"),
        }

    @property
    def metrics(self) -> Dict[str, Any]:
        d = self.data
        out = dict(d.get("metrics", {}))
        out["workload"] = d.get("workload", {})
        return out

    # -- tables -------------------------------------------------------------------
    def _table(self, name: str) -> Any:
        key = "table:" + name
        if key not in self._cache:
            self._cache[key] = _frames.read_table(self._raw[name])
        return self._cache[key]

    def _frame_of(self, name: str) -> Any:
        if name not in self._cache:
            self._cache[name] = _frames.convert(self._table(name), self._frame)
        return self._cache[name]

    @property
    def tasks(self) -> Any:
        """Per task: name, pid, start_ns, exit_ns (null while alive), runtime_ns,
        runqueue_wait_ns, wakeups, migrations."""
        return self._frame_of("tasks")

    @property
    def functions(self) -> Any:
        """Per instrumented function: function, calls, cpus_probed, cpus_skipped, cost_ns."""
        return self._frame_of("functions")

    @property
    def latency(self) -> Any:
        """HDR histogram buckets of every recorded value: metric (``wakeup_latency``,
        ``runqueue_wait``, ``workload.<name>``), unit (``ns`` for latencies; a workload
        metric's own unit), value, count."""
        return self._frame_of("latency")

    def _require_events(self) -> None:
        if self._raw.get("events") is None:
            raise RuntimeError(
                "this run kept no events: pass trace=True (or trace='file.txt' / "
                "'file.perfetto-trace') to schedlab.run() to get Result.events"
            )

    @property
    def events(self) -> Any:
        """The scheduler event log (LISA's column names), one row per event."""
        self._require_events()
        return self._frame_of("events")

    def df_event(self, name: str) -> Any:
        """Only the rows of event ``name`` (e.g. ``"sched_switch"``), LISA-style.

        Columns: ``__cpu``, ``__pid``, ``__comm`` and the fields that event has (the
        columns that are null for all its rows are dropped, so integer fields keep an
        integer type). With ``frame="pandas"`` the index is ``Time`` (float seconds,
        as LISA's ``trace.df_event``) and ``ts`` (int ns) stays a column; polars and
        arrow frames have no index and keep ``ts`` first.
        """
        self._require_events()
        key = "event:" + name
        if key in self._cache:
            return self._cache[key]
        import pyarrow.compute as pc

        table = self._table("events")
        known = sorted(set(table.column("event").unique().to_pylist()))
        if name not in known:
            raise ValueError(
                f"no {name!r} events in this run (present: {', '.join(known) or 'none'})"
            )
        rows = table.filter(pc.equal(table.column("event"), name))
        keep: List[str] = []
        for col in rows.column_names:
            if col == "event":
                continue
            if col in EVENT_COMMON or rows.column(col).null_count < rows.num_rows:
                keep.append(col)
        rows = rows.select(keep)
        out = _frames.convert(rows, self._frame)
        if self._frame == "pandas":
            out.index = (out["ts"] / 1e9).rename("Time")
        self._cache[key] = out
        return out

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<schedlab.Result {s['scenario']} seed={s['seed']} {s['machine']} "
            f"({s['nr_cpus']} CPUs) kernel={s['kernel']} "
            f"sim={s['sim_time_ns'] / 1e6:.3f}ms events={s['events']} "
            f"stop={s['stop_reason']}{' +events' if self._raw.get('events') is not None else ''}>"
        )


class Comparison:
    """An A/B comparison over paired seeds, as returned by :func:`schedlab.compare`.

    - ``runs``: tidy DataFrame, one row per (arm, seed, metric): arm (``"a"``/``"b"``),
      spec, seed, metric, value;
    - ``table``: one row per metric: metric, better, mean_kind, a, b (the centres:
      amean, or hmean for rates), delta_pct, a_std, b_std, wilcoxon_p, mann_whitney_p,
      and the paired change with its 95 % interval: change_pct, change_lo, change_hi,
      effect (``up``/``down``/``null``/``unclear``);
    - ``data``: the ``compare --json`` object, parsed; ``text``: the CLI's tables;
      ``to_json()``: the exact ``schedlab compare --json`` text.
    """

    def __init__(self, raw: Dict[str, Any], frame: str) -> None:
        self._raw = raw
        self._frame = frame
        self._cache: Dict[str, Any] = {}

    def to_json(self) -> str:
        return self._raw["json"]

    @property
    def data(self) -> Dict[str, Any]:
        if "data" not in self._cache:
            self._cache["data"] = json.loads(self._raw["json"])
        return self._cache["data"]

    @property
    def text(self) -> str:
        return self._raw["text"]

    def _frame_of(self, name: str) -> Any:
        if name not in self._cache:
            self._cache[name] = _frames.to_frame(self._raw[name], self._frame)
        return self._cache[name]

    @property
    def runs(self) -> Any:
        return self._frame_of("runs")

    @property
    def table(self) -> Any:
        return self._frame_of("table")

    def __repr__(self) -> str:
        d = self.data
        return (
            f"<schedlab.Comparison {d.get('scenario')} a={d.get('a', {}).get('spec')!r} "
            f"b={d.get('b', {}).get('spec')!r} runs={len(d.get('seeds', []))} "
            f"metrics={len(d.get('rows', []))}>"
        )
