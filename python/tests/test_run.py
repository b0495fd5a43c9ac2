"""schedlab.run: the scenario forms, byte-identity with the CLI, determinism, the tables."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest

import schedlab
from conftest import DEMO, SCENARIOS, SHORT, demo_dict, run_cli, strip_wall


def _no_name(json_text: str) -> str:
    """Without wall_seconds and the scenario's name (a file's stem; text has none)."""
    return "".join(
        line for line in strip_wall(json_text).splitlines(keepends=True)
        if not line.startswith('  "scenario"')
    )


@pytest.fixture(scope="module")
def demo_run() -> schedlab.Result:
    return schedlab.run(DEMO, set=SHORT)


def test_path_str_pathlike_toml_dict_agree() -> None:
    by_path = schedlab.run(str(DEMO), set=SHORT)
    by_pathlike = schedlab.run(Path(DEMO), set=SHORT)
    by_toml = schedlab.run(DEMO.read_text(), set=SHORT)
    by_dict = schedlab.run(demo_dict(), set=SHORT)
    assert by_path.summary["scenario"] == "demo"
    assert strip_wall(by_path.to_json()) == strip_wall(by_pathlike.to_json())
    # The same run whatever the form, apart from the name (a file's stem).
    assert _no_name(by_path.to_json()) == _no_name(by_toml.to_json()) \
        == _no_name(by_dict.to_json())
    assert by_path.scalars == by_toml.scalars == by_dict.scalars


def test_toml_detection_leading_bracket() -> None:
    one_line = '[machine]'  # starts with "[": TOML, not a path (and an incomplete one)
    with pytest.raises(schedlab.InputError):
        schedlab.run(one_line)


def test_to_json_equals_cli_bytes(schedlab_bin, tmp_path) -> None:
    out = tmp_path / "r.json"
    p = run_cli(schedlab_bin, ["run", DEMO, "--set", SHORT[0], "--seed", "3",
                               "--features", "NO_WAKEUP_PREEMPTION", "--json", out])
    assert p.returncode == 0, p.stderr
    r = schedlab.run(DEMO, set=SHORT, seed=3, features=["NO_WAKEUP_PREEMPTION"])
    assert strip_wall(r.to_json()) == strip_wall(out.read_text())
    # the printed summary too, apart from its wall-time line
    def no_wall(t: str) -> str:
        return re.sub(r"in \d+ events \(.*\)", "", t)
    assert no_wall(r.text).strip() == no_wall(p.stdout).strip()


def test_deterministic() -> None:
    a = schedlab.run(DEMO, set=SHORT, seed=5)
    b = schedlab.run(DEMO, set=SHORT, seed=5)
    c = schedlab.run(DEMO, set=SHORT, seed=6)
    assert strip_wall(a.to_json()) == strip_wall(b.to_json())
    assert a.scalars == b.scalars
    assert strip_wall(a.to_json()) != strip_wall(c.to_json())
    assert a.summary["seed"] == 5 and c.summary["seed"] == 6


def test_summary_metrics_scalars(demo_run) -> None:
    d = json.loads(demo_run.to_json())
    s = demo_run.summary
    assert s["machine"] == "juno-r0" and s["nr_cpus"] == 6
    assert s["kernel"] == "v5.6" and "WAKEUP_PREEMPTION" in s["features"]
    assert s["sim_time_ns"] == 20_000_000 and s["events"] == d["events"]
    assert s["stop_reason"] == "duration" and s["workload"] == "tasks"
    assert demo_run.metrics["wakeups"] == d["metrics"]["wakeups"]
    assert demo_run.metrics["workload"]["metrics"]["round_trip"]["count"] > 0
    sc = demo_run.scalars
    assert sc["migrations"] == sum(d["metrics"]["migrations"].values())
    assert sc["wakeup_latency_us.mean"] == pytest.approx(
        d["metrics"]["wakeup_latency_ns"]["mean"] / 1000, rel=1e-6)
    assert "demo" in repr(demo_run) and "juno-r0" in repr(demo_run)
    assert "wakeup" in demo_run.text


def test_tasks_frame(demo_run) -> None:
    tasks = demo_run.tasks
    assert list(tasks.columns) == ["name", "pid", "start_ns", "exit_ns", "runtime_ns",
                                   "runqueue_wait_ns", "wakeups", "migrations"]
    want = demo_run.data["tasks"]
    assert len(tasks) == len(want) == 10
    assert tasks["name"].tolist() == [t["name"] for t in want]
    assert tasks["pid"].tolist() == [t["pid"] for t in want]
    assert tasks["runtime_ns"].tolist() == [t["runtime_ns"] for t in want]
    assert tasks["wakeups"].tolist() == [t["wakeups"] for t in want]
    assert tasks["exit_ns"].isna().all()  # nobody exits in the demo


def test_functions_frame(demo_run) -> None:
    f = demo_run.functions
    assert list(f.columns) == ["function", "calls", "cpus_probed", "cpus_skipped", "cost_ns"]
    want = demo_run.data["metrics"]["functions"]
    assert sorted(f["function"]) == sorted(want)
    for row in f.itertuples():
        assert row.calls == want[row.function]["calls"]
        assert row.cpus_probed == want[row.function]["cpus_probed"]
        assert row.cost_ns == want[row.function]["cost_ns"]


def test_latency_frame(demo_run) -> None:
    lat = demo_run.latency
    assert list(lat.columns) == ["metric", "unit", "value", "count"]
    m = demo_run.data["metrics"]
    counts = lat.groupby("metric")["count"].sum()
    assert counts["wakeup_latency"] == m["wakeup_latency_ns"]["count"]
    # A latency is recorded when the woken task runs: a wakeup whose task is still
    # waiting (e.g. for its CPU's idle exit) when the run stops has none yet, at most
    # one per task.
    pending = m["wakeups"] - counts["wakeup_latency"]
    assert 0 <= pending <= len(demo_run.tasks)
    assert counts["runqueue_wait"] == m["runqueue_wait_ns"]["count"]
    assert counts["workload.round_trip"] == \
        demo_run.metrics["workload"]["metrics"]["round_trip"]["count"]
    assert set(lat.loc[lat["metric"].isin(["wakeup_latency", "runqueue_wait"]), "unit"]) \
        == {"ns"}
    w = lat[lat["metric"] == "wakeup_latency"]
    assert w["value"].max() == m["wakeup_latency_ns"]["max"]
    assert w["value"].is_monotonic_increasing and (w["count"] > 0).all()
    # the histogram's mean is the JSON's exact mean within the histogram's 3 digits
    mean = (w["value"] * w["count"]).sum() / w["count"].sum()
    assert mean == pytest.approx(m["wakeup_latency_ns"]["mean"], rel=2e-3)


def _ftrace_counts(path: Path) -> collections.Counter:
    c: collections.Counter = collections.Counter()
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = re.search(r"\d+\.\d{6}: (\w+): ", line)
        assert m, line
        c[m.group(1)] += 1
    return c


def test_events_match_ftrace_text(tmp_path) -> None:
    txt = tmp_path / "run.txt"
    r = schedlab.run(DEMO, set=SHORT, trace=txt)
    assert txt.is_file()
    ev = r.events
    for col in ["ts", "__cpu", "__pid", "__comm", "event", "comm", "pid", "prev_comm",
                "prev_state", "next_pid", "target_cpu", "cpu_id", "state"]:
        assert col in ev.columns, col
    want = _ftrace_counts(txt)
    got = collections.Counter(ev["event"].tolist())
    assert got == want
    assert ev["ts"].is_monotonic_increasing
    # the events frame does not change the run
    plain = schedlab.run(DEMO, set=SHORT)
    assert strip_wall(plain.to_json()) == strip_wall(r.to_json())


def test_df_event(tmp_path) -> None:
    r = schedlab.run(DEMO, set=SHORT, trace=True)
    sw = r.df_event("sched_switch")
    assert sw.index.name == "Time"
    assert list(sw.columns[:4]) == ["ts", "__cpu", "__pid", "__comm"]
    assert {"prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid",
            "next_prio"} <= set(sw.columns)
    assert "event" not in sw.columns and "child_pid" not in sw.columns
    assert not sw.drop(columns=["__comm"]).isna().any().any()
    assert len(sw) == (r.events["event"] == "sched_switch").sum()
    assert sw["next_pid"].dtype.kind == "i"
    assert (sw.index.to_numpy() == sw["ts"].to_numpy() / 1e9).all()
    wk = r.df_event("sched_wakeup")
    assert {"comm", "pid", "prio", "target_cpu"} <= set(wk.columns)
    assert "prev_comm" not in wk.columns
    with pytest.raises(ValueError, match="sched_nope"):
        r.df_event("sched_nope")


def test_sched_tp_events(tmp_path) -> None:
    """LISA's sched_tp events, opt-in: the demo (juno-r0, v5.6) gives PELT and
    overutilized events and nothing else changes; v5.10 adds util_est and capacity."""
    plain = schedlab.run(DEMO, set=SHORT, trace=True)
    r = schedlab.run(DEMO, set=SHORT, trace=True, sched_tp=True)
    assert strip_wall(plain.to_json()) == strip_wall(r.to_json())
    se = r.df_event("sched_pelt_se")
    assert {"cpu", "path", "comm", "pid", "load", "rbl_load", "util", "update_time"} <= set(se.columns)
    assert set(se["path"]) == {"(null)"} and se["util"].between(0, 1024).all()
    assert set(r.df_event("sched_pelt_cfs")["path"]) == {"/"}
    tp = {"sched_pelt_se", "sched_pelt_cfs", "sched_overutilized", "sched_util_est_se",
          "sched_util_est_cfs", "sched_cpu_capacity"}
    assert "sched_util_est_se" not in set(r.events["event"])
    rest = r.events[~r.events["event"].isin(tp)].reset_index(drop=True)
    assert rest[["ts", "event"]].equals(plain.events[["ts", "event"]])
    r10 = schedlab.run(DEMO, set=[*SHORT, "kernel.preset=v5.10"], trace=True, sched_tp=True)
    got = tp & set(r10.events["event"])
    assert {"sched_util_est_se", "sched_util_est_cfs", "sched_cpu_capacity"} <= got
    with pytest.raises(schedlab.InputError, match="sched_tp"):
        schedlab.run(DEMO, set=SHORT, sched_tp=True)


def test_events_need_trace(demo_run) -> None:
    with pytest.raises(RuntimeError, match="trace=True"):
        demo_run.events
    with pytest.raises(RuntimeError, match="trace=True"):
        demo_run.df_event("sched_switch")


def test_perfetto_trace_written(tmp_path) -> None:
    p = tmp_path / "x.perfetto-trace"
    r = schedlab.run(DEMO, set=SHORT, trace=p)
    assert p.stat().st_size > 1000
    assert len(r.events) > 0


def test_polars_and_arrow_frames() -> None:
    pa = pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars")
    ra = schedlab.run(DEMO, set=SHORT, trace=True, frame="arrow")
    rp = schedlab.run(DEMO, set=SHORT, trace=True, frame="polars")
    rd = schedlab.run(DEMO, set=SHORT, trace=True)
    assert isinstance(ra.tasks, pa.Table) and isinstance(rp.tasks, pl.DataFrame)
    assert ra.tasks.column("name").to_pylist() == rp.tasks["name"].to_list() \
        == rd.tasks["name"].tolist()
    assert ra.latency.num_rows == rp.latency.height == len(rd.latency)
    assert ra.events.num_rows == rp.events.height == len(rd.events)
    sw = rp.df_event("sched_switch")
    assert isinstance(sw, pl.DataFrame) and sw.columns[0] == "ts"
    assert sw.height == len(rd.df_event("sched_switch"))
    assert isinstance(ra.df_event("sched_wakeup"), pa.Table)


def test_frame_errors(monkeypatch) -> None:
    with pytest.raises(ValueError, match="frame must be one of"):
        schedlab.run(DEMO, set=SHORT, frame="excel")
    import sys
    monkeypatch.setitem(sys.modules, "polars", None)  # makes `import polars` fail
    with pytest.raises(ImportError, match="polars"):
        schedlab.run(DEMO, set=SHORT, frame="polars")
    with pytest.raises(ImportError, match="pip install polars"):
        schedlab.machines(frame="polars")


def test_argument_types() -> None:
    with pytest.raises(TypeError):
        schedlab.run(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        schedlab.run(DEMO, trace=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        schedlab.run(DEMO, set=[1])  # type: ignore[list-item]


def test_relative_files(monkeypatch, tmp_path) -> None:
    """A file the scenario names is relative to the scenario file; for TOML text (no
    file), relative to the current directory."""
    rtapp = SCENARIOS / "rtapp-example.toml"
    by_path = schedlab.run(rtapp, set="run.duration_ms=30")
    assert by_path.summary["workload"] == "rtapp"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(schedlab.InputError, match="rtapp-example.json"):
        schedlab.run(rtapp.read_text(), set="run.duration_ms=30")
    monkeypatch.chdir(SCENARIOS)
    by_text = schedlab.run(rtapp.read_text(), set="run.duration_ms=30")
    assert _no_name(by_text.to_json()) == _no_name(by_path.to_json())


def test_version_matches_cli(schedlab_bin) -> None:
    p = run_cli(schedlab_bin, ["--version"])
    assert p.stdout.split() == ["schedlab", schedlab.__version__]


def test_the_gil_is_released_while_simulating() -> None:
    """A Python thread runs while another thread's simulation is in progress.

    With the GIL held through the simulation, the main thread could not resume from
    its sleep before the simulation returned, so it would wake after ``t_end``; with
    it released it wakes ~20 ms into a run that lasts far longer. (An ordering of
    events, not a speed: the run only has to outlast the sleep by a wide margin.)
    """
    import threading
    import time

    times: dict = {}
    started = threading.Event()

    def simulate() -> None:
        times["start"] = time.monotonic()
        started.set()
        schedlab.run(DEMO, set="run.duration_ms=20000")
        times["end"] = time.monotonic()

    t = threading.Thread(target=simulate)
    t.start()
    started.wait()
    time.sleep(0.02)
    woke = time.monotonic()
    t.join()
    assert times["end"] - times["start"] > 0.2, "the run is too short to tell"
    assert woke < times["end"] - 0.1, (woke - times["start"], times["end"] - times["start"])


def test_trace_dat_is_the_clis(tmp_path, schedlab_bin) -> None:
    """``trace="x.dat"`` writes trace-cmd's trace.dat, the same bytes as the CLI's."""
    ours, cli = tmp_path / "py.dat", tmp_path / "cli.dat"
    schedlab.run(DEMO, set=SHORT, trace=ours)
    p = run_cli(schedlab_bin, ["run", DEMO, "--set", SHORT[0], "--trace", cli, "-q"])
    assert p.returncode == 0, p.stderr
    assert ours.read_bytes()[:10] == b"\x17\x08\x44tracing"
    assert ours.read_bytes() == cli.read_bytes()


def test_a_bpf_c_scheduler_runs_as_on_the_cli(schedlab_bin, tmp_path) -> None:
    # A sched_ext scheduler from its C source (compiled with clang, docs/sched-ext.md):
    # the same bytes as the CLI, and the same decisions as its built-in Rust twin.
    scx = SCENARIOS / "scx-llc-vtime.toml"
    sets = ["run.duration_ms=20"]
    out = tmp_path / "r.json"
    p = run_cli(schedlab_bin, ["run", scx, "--set", sets[0], "--json", out])
    assert p.returncode == 0, p.stderr
    r = schedlab.run(scx, set=sets)
    assert strip_wall(r.to_json()) == strip_wall(out.read_text())
    assert json.loads(r.to_json())["kernel"]["scheduler"] == "scx/llc_vtime.bpf.c"
    twin = schedlab.run(scx.read_text().replace(
        'scheduler = "scx/llc_vtime.bpf.c"', 'scheduler = "llc-vtime"').replace(
        "[kernel.scheduler_globals]\nnr_llcs = \"nr_llcs\"\ncpu_llc = \"cpu_llc\"\n", ""),
        set=sets)
    assert r.scalars == twin.scalars
    with pytest.raises(schedlab.InputError, match="not a fact of the machine"):
        schedlab.run(scx, set=sets + ['kernel.scheduler_globals.nr_llcs="nr_sockets"'])
