"""LISA's own analyses on schedlab's traces give schedlab's own numbers.

Each case runs a scenario with the CLI ($SCHEDLAB_BIN), writing the run's JSON, its
``trace.dat`` and its ftrace text (``v5.6-no-irq-info``, the layout LISA's
``HRTxtTraceParser`` reads), opens both with LISA 3.1's ``Trace`` and compares what
LISA computes with what schedlab reports:

* per task, the time in each state of ``ana.tasks.df_task_states``: running
  (``TASK_ACTIVE``) against ``runtime_ns``, waking plus preempted (``TASK_WAKING``,
  ``TASK_RUNNING``) against ``runqueue_wait_ns``;
* over all tasks, ``ana.latency.df_latency_wakeup`` and ``df_latency_preemption``
  together against the run's runqueue-wait histogram (count and mean);
* per CPU, ``ana.idle.df_cpu_idle_state_residency`` against ``idle_residency``;
* per task, ``df_task_activation``'s active time against the same runtime;
* every task that names itself has its ``task_rename`` and is found by name
  (``get_task_ids``).

LISA 3.1's text parser turns a ``prev_state`` string into bits by OR-ing every
``TaskState`` whose letter occurs in it, and the states without a letter (the empty
string occurs in every string) add ``0x1d00`` to each: ``R`` reads as 7424, so
``df_latency_preemption`` finds no preemption in any text trace, real or simulated.
In trace.dat a task preempted in the kernel (``R+``, ``0x100``) is ``TASK_WAKEKILL``
to LISA, which ``df_latency_preemption`` skips: those waits are added from the
states.
The text checks clear those bits and take the latencies from the states; trace.dat
(integer states) needs no help.

LISA leaves the last state of each task (and CPU) open: the trace ends at its last
event, and the state's ``delta`` is NaN. schedlab counts a task running at the end
until ``sim_time_ns`` (an idle state likewise), and a wait only once it has ended in
a switch-in, so an open running (or idle) state is closed at the run's end and an
open wait is left out. What remains must be equal: to the ns in ``trace.dat``, to
the text's µs rounding (1 µs per state change) in the text.
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("SCHEDLAB_BIN", REPO / "target" / "release" / "schedlab"))
TEXT_EVENTS = ["sched_switch", "sched_waking", "sched_wakeup", "sched_wakeup_new",
               "sched_migrate_task", "sched_process_fork", "sched_process_exit",
               "cpu_idle", "cpu_frequency", "task_rename"]
# The demo (a pipe workload on juno-r0), hackbench on a 2-socket SMT Xeon (v5.6,
# TTWU_QUEUE: its cross-LLC wakeups are queued on the target) and rt-app's example
# on juno-r0 under schedutil (threads that name themselves, idle states, OPPs).
CASES = {
    "demo": ("scenarios/demo.toml", ["run.duration_ms=100"]),
    "hackbench": ("scenarios/hackbench.toml", ["machine.preset=xeon-e5-40",
                                               "workload.groups=2", "workload.loops=30"]),
    "rtapp": ("scenarios/rtapp-example.toml", ["kernel.cpufreq=schedutil",
                                               "run.duration_ms=300"]),
}


@pytest.fixture(autouse=True)
def quiet() -> None:
    warnings.simplefilter("ignore")


def traces(tmp: Path, case: str) -> tuple:
    scenario, sets = CASES[case]
    out = {}
    for name, extra in [("t.dat", []), ("t.txt", ["--ftrace-layout", "v5.6-no-irq-info"])]:
        js = tmp / f"{name}.json"
        args = [str(BIN), "run", str(REPO / scenario), "--trace", str(tmp / name),
                "--json", str(js), "-q", *extra]
        for s in sets:
            args += ["--set", s]
        subprocess.run(args, check=True)
        out[name] = json.loads(js.read_text())
    # Both formats come from the same run.
    a, b = out["t.dat"], out["t.txt"]
    assert a["tasks"] == b["tasks"] and a["metrics"] == b["metrics"]
    return tmp / "t.dat", tmp / "t.txt", a


def lisa_trace(path: Path):
    from lisa.trace import HRTxtTraceParser, Trace

    if path.suffix == ".dat":
        return Trace(str(path), normalize_time=False)
    return Trace(str(path), parser=HRTxtTraceParser.from_txt_file, events=TEXT_EVENTS,
                 normalize_time=False)


# The letterless TaskStates (WAKEKILL, NOLOAD, NEW, STATE_MAX) LISA 3.1's text parser
# adds to every prev_state.
LISA_TEXT_NOISE = 0x1D00


def idle_state_names(scenario: str, sets: list, tmp: Path) -> list:
    """Per CPU, its idle states' names in index order (the machine file)."""
    import tomllib

    preset = next((s.split("=", 1)[1] for s in sets if s.startswith("machine.preset=")), None)
    if preset is None:
        sc = tomllib.loads((REPO / scenario).read_text())
        preset = sc["machine"]["preset"]
    out = tmp / "machine.toml"
    subprocess.run([str(BIN), "topology", preset, "--export", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    m = tomllib.loads(out.read_text())
    tables = {t["name"]: [s["name"] for s in t.get("state", [])] for t in m.get("idle_table", [])}
    names = {}
    for g in m["cpu_group"]:
        for part in g["cpus"].split(","):
            lo, _, hi = part.partition("-")
            for c in range(int(lo), int(hi or lo) + 1):
                names[c] = tables.get(g.get("idle_table"), [])
    return [names[c] for c in sorted(names)]


def case_trace(tmp: Path, case: str, fmt: str) -> tuple:
    """LISA's Trace of `case`'s run in `fmt` ("dat" or "txt"), the run's JSON, and
    its end (s)."""
    dat, txt, r = traces(tmp, case)
    return lisa_trace(dat if fmt == "dat" else txt), r, r["sim_time_ns"] / 1e9


def closed(df, end: float, state):
    """The task states `df` with an open last row in `state` closed at `end`."""
    df = df.copy()
    last = df.index[-1]
    if df["delta"].isna().iloc[-1] and df["curr_state"].iloc[-1] == state:
        df.loc[last, "delta"] = end - last
    return df


@pytest.mark.parametrize("fmt", ["dat", "txt"])
@pytest.mark.parametrize("case", list(CASES))
def test_lisa_task_states_and_latencies_equal_schedlab(tmp_path: Path, case: str, fmt: str):
    from lisa.analysis.tasks import TaskState

    tr, r, end = case_trace(tmp_path, case, fmt)
    waits = []
    nwaits = 0
    import pandas as pd

    for t in r["tasks"]:
        # A thread that renamed itself is two TaskIDs to LISA (its comm before and
        # after): its states are both together.
        # (Only a trace with a task_rename has TaskIDs to LISA: pids do otherwise.)
        if case == "rtapp":
            ids = [i for i in tr.task_ids if i.pid == t["pid"]]
        else:
            ids = [t["pid"]]
        df = pd.concat([tr.ana.tasks.df_task_states(i) for i in ids]).sort_index()
        # Each TaskID's last state is open: the timeline is the rows together.
        df["delta"] = df.index.to_series().diff().shift(-1).to_numpy()
        if fmt == "txt":
            st = df["curr_state"]
            df["curr_state"] = st.where(st >= TaskState.TASK_ACTIVE, st & ~LISA_TEXT_NOISE)
        df = closed(df, end, TaskState.TASK_ACTIVE)
        by = df.groupby("curr_state")["delta"].sum()
        # LISA marks the rename itself (TASK_RENAMED): the task runs on through it.
        run = by.get(TaskState.TASK_ACTIVE, 0.0) + by.get(TaskState.TASK_RENAMED, 0.0)
        # `R+` (0x100, TASK_REPORT_MAX in trace.dat) is a task preempted in the
        # kernel, which LISA files as TASK_WAKEKILL (and df_latency_preemption
        # skips): in the model, a thread moving itself off its CPU.
        wait = (by.get(TaskState.TASK_WAKING, 0.0) + by.get(TaskState.TASK_RUNNING, 0.0)
                + by.get(TaskState.TASK_WAKEKILL, 0.0))
        kernel_preempted = (df["curr_state"] == TaskState.TASK_WAKEKILL) & (
            df["next_state"] == TaskState.TASK_ACTIVE)
        # The text rounds every timestamp to the µs.
        tol = 1e-9 if fmt == "dat" else 1e-6 * (len(df) + 1)
        assert run == pytest.approx(t["runtime_ns"] / 1e9, abs=tol), (t["name"], fmt)
        # df_task_activation (pandas 2.1.4: 2.2 makes it raise): the same running
        # time but for the open last slice and the rename's.
        act = pd.concat([tr.ana.tasks.df_task_activation(i) for i in ids])
        on = act[act["active"] == 1]["duration"].sum()
        off = run - on - by.get(TaskState.TASK_RENAMED, 0.0)
        assert -tol <= off <= end - df.index[-1] + tol, (t["name"], run, on)
        assert wait == pytest.approx(t["runqueue_wait_ns"] / 1e9, abs=tol), (t["name"], fmt)
        if fmt == "dat":
            for i in ids:
                waits += list(tr.ana.latency.df_latency_wakeup(i)["wakeup_latency"])
                waits += list(tr.ana.latency.df_latency_preemption(i)["preempt_latency"])
            waits += list(df["delta"][kernel_preempted])
        else:
            # The waits that ended in a switch-in (the last one may be open).
            ended = df["curr_state"].isin([TaskState.TASK_WAKING, TaskState.TASK_RUNNING,
                                           TaskState.TASK_WAKEKILL])
            ended &= df["next_state"] == TaskState.TASK_ACTIVE
            nwaits += int(ended.sum())
    # Every wait that ended in a switch-in, as the run's histogram counts them.
    h = r["metrics"]["runqueue_wait_ns"]
    if fmt == "dat":
        assert len(waits) == h["count"]
        assert sum(waits) / len(waits) * 1e9 == pytest.approx(h["mean"], abs=0.001)
    else:
        assert nwaits == h["count"]


@pytest.mark.parametrize("fmt", ["dat", "txt"])
@pytest.mark.parametrize("case", list(CASES))
def test_lisa_idle_residency_equals_schedlab(tmp_path: Path, case: str, fmt: str):
    tr, r, end = case_trace(tmp_path, case, fmt)
    df = tr.df_event("cpu_idle")
    order = idle_state_names(*CASES[case], tmp_path)
    # schedlab reports fractions of the run rounded to 1e-6; the text's µs add one
    # µs per state change.
    for cpu, want in enumerate(r["metrics"]["idle_residency"]):
        ev = df[df["cpu_id"] == cpu]
        got = [0.0] * len(want)
        for (t0, row), t1 in zip(ev.iterrows(), list(ev.index[1:]) + [end]):
            if row["state"] != 4294967295 and row["state"] != -1:
                got[int(row["state"])] += t1 - t0
        lisa = tr.ana.idle.df_cpu_idle_state_residency(cpu)["time"]
        assert sorted(order[cpu]) == sorted(want), (cpu, order[cpu], want)
        for s, name in enumerate(order[cpu]):
            frac = want[name]
            tol = 1e-6 * end + (0 if fmt == "dat" else 1e-6 * (len(ev) + 1))
            assert got[s] == pytest.approx(frac * end, abs=tol), (cpu, name, fmt)
            # LISA's own analysis: the same, but for the last state, which it
            # closes at the trace's last event.
            cut = end - tr.end if len(ev) and ev["state"].iloc[-1] == s else 0.0
            assert lisa.get(s, 0.0) + cut == pytest.approx(frac * end, abs=tol), (cpu, name)


def test_rt_app_threads_are_found_by_name(tmp_path: Path):
    dat, txt, r = traces(tmp_path, "rtapp")
    for path in (dat, txt):
        tr = lisa_trace(path)
        ren = tr.df_event("task_rename")
        threads = [t for t in r["tasks"] if t["name"] != "rt-app"]
        assert sorted(ren["newcomm"]) == sorted(t["name"][:15] for t in threads)
        assert set(ren["oldcomm"]) == {"rt-app"}
        for t in threads:
            assert [p.pid for p in tr.get_task_ids(t["name"])] == [t["pid"]], t["name"]


def test_the_idle_check_rejects_exits_at_the_interrupt(tmp_path: Path):
    """Negative control: the trace as schedlab wrote it until 2026-12-07, each
    `cpu_idle` exit at the interrupt instead of after the exit latency, must fail
    the residency comparison (demo, text; juno-r0's cluster and CPU sleeps exit in
    1.5 ms)."""
    import re
    import tomllib

    dat, txt, r = traces(tmp_path, "demo")
    subprocess.run([str(BIN), "topology", "juno-r0", "--export", str(tmp_path / "m.toml")],
                   check=True, stdout=subprocess.DEVNULL)
    m = tomllib.loads((tmp_path / "m.toml").read_text())
    lat = {t["name"]: [s["exit_latency_us"] for s in t["state"]] for t in m["idle_table"]}
    table = {}
    for g in m["cpu_group"]:
        for part in g["cpus"].split(","):
            lo, _, hi = part.partition("-")
            for c in range(int(lo), int(hi or lo) + 1):
                table[c] = lat[g["idle_table"]]
    last = {}
    out = []
    pat = re.compile(r" (\d+\.\d{6}): cpu_idle: state=(\d+) cpu_id=(\d+)")
    for line in txt.read_text().splitlines(keepends=True):
        mt = pat.search(line)
        if mt:
            ts, st, cpu = float(mt[1]), int(mt[2]), int(mt[3])
            if st == 4294967295:
                early = ts - table[cpu][last.get(cpu, 0)] * 1e-6
                line = line.replace(mt[1], f"{max(early, 0.0):.6f}")
            else:
                last[cpu] = st
        out.append(line)
    bad = tmp_path / "bad.txt"
    bad.write_text("".join(out))
    tr = lisa_trace(bad)
    end = r["sim_time_ns"] / 1e9
    order = idle_state_names(*CASES["demo"], tmp_path)
    off = 0.0
    for cpu, want in enumerate(r["metrics"]["idle_residency"]):
        lisa = tr.ana.idle.df_cpu_idle_state_residency(cpu)["time"]
        for s, name in enumerate(order[cpu]):
            off = max(off, abs(lisa.get(s, 0.0) - want[name] * end))
    # The real trace meets the comparison to the µs; this one misses it by
    # milliseconds.
    assert off > 1e-3, off


def machine_of(case: str) -> str:
    scenario, sets = CASES[case]
    import tomllib

    preset = next((s.split("=", 1)[1] for s in sets if s.startswith("machine.preset=")), None)
    return preset or tomllib.loads((REPO / scenario).read_text())["machine"]["preset"]


def platform_info(tmp: Path, machine: str, extra: tuple = ()):
    """LISA's PlatformInfo of `machine` as `schedlab topology --export-lisa` writes it."""
    from lisa.platforms.platinfo import PlatformInfo

    out = tmp / f"{machine}.platform.yml"
    subprocess.run([str(BIN), "topology", machine, "--export-lisa", str(out), *extra],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return PlatformInfo.from_yaml_map(str(out))


def lisa_trace_with(path: Path, plat_info):
    from lisa.trace import HRTxtTraceParser, Trace

    if path.suffix == ".dat":
        return Trace(str(path), plat_info=plat_info, normalize_time=False)
    return Trace(str(path), parser=HRTxtTraceParser.from_txt_file, events=TEXT_EVENTS,
                 plat_info=plat_info, normalize_time=False)


@pytest.mark.parametrize("fmt", ["dat", "txt"])
@pytest.mark.parametrize("case", list(CASES))
def test_lisa_frequency_residency_equals_schedlab(tmp_path: Path, case: str, fmt: str):
    dat, txt, r = traces(tmp_path, case)
    pi = platform_info(tmp_path, machine_of(case))
    tr = lisa_trace_with(dat if fmt == "dat" else txt, pi)
    end = r["sim_time_ns"] / 1e9
    freq = tr.df_event("cpu_frequency")
    for d, dom in enumerate(pi["freq-domains"]):
        want = {int(k): v for k, v in r["metrics"]["freq_residency"][d].items()}
        assert sorted(want) == sorted(pi["freqs"][dom[0]])
        got = tr.ana.frequency.df_domain_frequency_residency(dom[0])["total_time"]
        # LISA ends the last frequency at the trace's last event.
        last = freq[freq["cpu_id"].isin(dom)]["state"].iloc[-1]
        n = int((freq["cpu_id"] == dom[0]).sum())
        tol = 1e-6 * end + (0 if fmt == "dat" else 1e-6 * (n + 1))
        for f, frac in want.items():
            cut = end - tr.end if f == last else 0.0
            assert got.get(f, 0.0) + cut == pytest.approx(frac * end, abs=tol), (d, f, fmt)


def lisa_energy(tr, end: float):
    """Joules of LISA's EnergyModel.estimate_from_trace (mW per interval), per node
    column, up to `end`."""
    import numpy as np

    p = tr.plat_info["nrg-model"].estimate_from_trace(tr)
    dt = np.diff(list(p.index) + [end])
    return {c: float((p[c].to_numpy() * dt).sum()) * 1e-3 for c in p.columns}


ENERGY_CASES = [c for c in CASES if machine_of(c) == "juno-r0"]


@pytest.mark.parametrize("fmt", ["dat", "txt"])
@pytest.mark.parametrize("case", ENERGY_CASES)
def test_lisa_energy_estimate_equals_schedlab(tmp_path: Path, case: str, fmt: str):
    """LISA's estimate from the trace's idle states and frequencies, with the platform
    file's energy model, is schedlab's energy meter: per CPU, per cluster, total."""
    dat, txt, r = traces(tmp_path, case)
    pi = platform_info(tmp_path, machine_of(case))
    tr = lisa_trace_with(dat if fmt == "dat" else txt, pi)
    end = r["sim_time_ns"] / 1e9
    e = r["metrics"]["energy_joules"]
    got = lisa_energy(tr, end)
    # The text's µs: each state change moves up to 1 µs between two powers (< 1 W).
    n = len(tr.df_event("cpu_idle")) + len(tr.df_event("cpu_frequency"))
    tol = 2e-9 if fmt == "dat" else 1e-6 * 1.0 * (n + 1)
    for cpu, j in enumerate(e["per_cpu"]):
        assert got[str(cpu)] == pytest.approx(j, abs=tol), (cpu, fmt)
    for d, dom in enumerate(pi["freq-domains"]):
        cl = got["-".join(str(c) for c in dom)]
        own = sum(e["per_cpu"][c] for c in dom)
        assert cl + sum(got[str(c)] for c in dom) == pytest.approx(e["per_cluster"][d], abs=tol)
        assert own + cl == pytest.approx(e["per_cluster"][d], abs=tol)
    assert sum(got.values()) == pytest.approx(e["total"], abs=tol)


def test_the_energy_check_rejects_a_model_without_the_cluster_term(tmp_path: Path):
    """Negative control: juno-r0's platform file with the clusters' own power
    removed (a flat per-CPU model, as LISA reads the kernel's debugfs EM) must miss
    schedlab's total by the cluster energy."""
    import tomllib

    dat, txt, r = traces(tmp_path, "rtapp")
    subprocess.run([str(BIN), "topology", "juno-r0", "--export", str(tmp_path / "m.toml")],
                   check=True, stdout=subprocess.DEVNULL)
    text = (tmp_path / "m.toml").read_text()
    flat = "\n".join(l for l in text.splitlines()
                     if not l.startswith(("cluster_power_mw", "cluster_idle_mw")))
    assert tomllib.loads(flat)["freq_domain"][0].get("cluster_idle_mw") is None
    (tmp_path / "flat.toml").write_text(flat + "\n")
    pi = platform_info(tmp_path, str(tmp_path / "flat.toml"))
    tr = lisa_trace_with(dat, pi)
    got = sum(lisa_energy(tr, r["sim_time_ns"] / 1e9).values())
    e = r["metrics"]["energy_joules"]
    assert abs(got - e["total"]) > 0.5 * e["clusters"], (got, e)


def test_the_frequency_check_rejects_a_trace_without_its_start_state(tmp_path: Path):
    """Negative control: the rt-app run's text without the `cpu_frequency` records
    at its start (as schedlab wrote traces until 2026-12-07: under schedutil no
    frequency for a domain until its first change) must fail the residency
    comparison: LISA then counts nothing before that change."""
    import re

    dat, txt, r = traces(tmp_path, "rtapp")
    lines = txt.read_text().splitlines(keepends=True)
    pat = re.compile(r" (\d+\.\d{6}): cpu_frequency: ")
    kept = [l for l in lines if not ((m := pat.search(l)) and float(m[1]) == 0.0)]
    assert len(kept) < len(lines)
    bad = tmp_path / "bad.txt"
    bad.write_text("".join(kept))
    pi = platform_info(tmp_path, machine_of("rtapp"))
    tr = lisa_trace_with(bad, pi)
    end = r["sim_time_ns"] / 1e9
    off = 0.0
    for d, dom in enumerate(pi["freq-domains"]):
        got = tr.ana.frequency.df_domain_frequency_residency(dom[0])["total_time"]
        for f, frac in r["metrics"]["freq_residency"][d].items():
            off = max(off, abs(got.get(int(f), 0.0) - frac * end))
    # The real check holds to the µs; this trace misses by the first interval.
    assert off > 1e-3, off


# rt-app's ftrace markers: a file with every category on juno-r0 (LITTLE CPU4's
# calibration), two phases with a timer and a one-phase task.
MARKERS_JSON = {
    "global": {"calibration": "CPU4", "ftrace": "main,task,loop,event,stats"},
    "tasks": {
        "small": {"loop": 3, "phases": {
            "p0": {"loop": 2, "run": 1000, "timer": {"ref": "unique", "period": 16000}},
            "p1": {"run": 5000, "sleep": 2000}}},
        "big": {"instance": 2, "loop": 4, "run": 3000, "sleep": 5000},
    },
}


def marker_traces(tmp: Path) -> tuple:
    (tmp / "m.json").write_text(json.dumps(MARKERS_JSON))
    (tmp / "m.toml").write_text('[machine]\npreset = "juno-r0"\n[run]\nseed = 1\n'
                               '[workload]\nkind = "rtapp"\nfile = "m.json"\n')
    out = {}
    for name, extra in [("m.dat", []), ("m.txt", ["--ftrace-layout", "v5.6-no-irq-info"])]:
        js = tmp / f"{name}.json"
        subprocess.run([str(BIN), "run", str(tmp / "m.toml"), "--trace", str(tmp / name),
                        "--json", str(js), "-q", *extra], check=True)
        out[name] = json.loads(js.read_text())
    assert out["m.dat"]["workload"] == out["m.txt"]["workload"]
    return tmp / "m.dat", tmp / "m.txt", out["m.dat"]


def check_rta(tr, r) -> None:
    """LISA's `ana.rta` on `tr` against schedlab's rt-app figures of run `r`."""
    m = r["workload"]["metrics"]
    threads = {"small": ["p0", "p1"], "big-0": ["phase0"], "big-1": ["phase0"]}
    assert sorted(t.comm for t in tr.ana.rta.rtapp_tasks) == sorted(["rt-app", *threads])
    start, end = tr.ana.rta.rtapp_window
    assert 0 < start < end <= r["sim_time_ns"] / 1e9
    ref = tr.ana.rta.rtapp_reftime
    assert 0 <= ref.kernel * 1e6 - ref.user < 10, ref
    loops = tr.ana.rta.df_rtapp_loop()
    stats = tr.ana.rta.df_rtapp_stats()
    for name, phases in threads.items():
        mine = loops[(loops["__comm"] == name) & (loops["event"] == "end")]
        st = stats[stats["__comm"] == name]
        n_all = 0
        for p, ph in enumerate(phases):
            n = m[f"{name}/{ph}/loops"]["count"]
            assert int((mine["phase"] == p).sum()) == n, (name, ph)
            n_all += n
        assert len(st) == len(mine) == n_all

        # Summed over the thread: schedlab's ns against rt-app's truncated µs.
        def total(metric: str) -> float:
            return sum(m[k]["count"] * m[k]["mean"] for k in m
                       if k.startswith(f"{name}/") and k.endswith(f"/{metric}")) / 1e3
        for col in ["period", "wu_lat", "slack"]:
            got, want = float(st[col].sum()), total(col)
            assert want - n_all - 1 <= got <= want + 1, (name, col, got, want)
        assert set(st["c_period"]) <= {0, 16000}
    # LISA's phases of small: p0 then p1 (its rows group the loops by phase).
    assert list(tr.ana.rta.df_phases("small")["phase"]) == [0, 1]


def test_lisa_rta_analysis_reads_rt_apps_markers(tmp_path: Path):
    """LISA's `ana.rta` on the trace.dat: the loops, phases and `rtapp_stats` rt-app's
    markers carry are schedlab's own rt-app figures (per thread and phase: loops,
    period, wakeup latency, slack), to the µs rt-app truncates each figure to."""
    dat, txt, r = marker_traces(tmp_path)
    check_rta(lisa_trace(dat), r)


def test_rt_app_markers_in_the_text_are_the_dat_s(tmp_path: Path):
    """The tracefs text prints each marker as `tracing_mark_write: <line>` (LISA's
    `HRTxtTraceParser` reads them as that event; its `ana.rta` takes rt-app's events
    from `print`, which only trace.dat's records are): the same lines, on the same
    CPUs, by the same tasks."""
    from lisa.trace import HRTxtTraceParser, Trace

    dat, txt, r = marker_traces(tmp_path)
    d = lisa_trace(dat).df_event("print")
    t = Trace(str(txt), parser=HRTxtTraceParser.from_txt_file,
              events=["tracing_mark_write"], normalize_time=False).df_event("tracing_mark_write")
    assert len(d) == len(t) > 50
    bufs = [b.decode() if isinstance(b, bytes) else b for b in t["buf"]]
    assert [b.decode() for b in d["buf"]] == bufs
    assert list(d["__cpu"]) == list(t["__cpu"]) and list(d["__pid"]) == list(t["__pid"])
    assert set(d["ip"]) == {"tracing_mark_write"}


def test_the_rta_check_rejects_markers_that_miscount_the_phases(tmp_path: Path):
    """Negative control: the same trace.dat with every `rtapp_loop` of phase 1
    relabelled phase 0 (markers that do not follow the phases; the bytes are
    patched in place, same length) must fail the check."""
    dat, txt, r = marker_traces(tmp_path)
    raw = dat.read_bytes()
    bad_raw = raw.replace(b" phase=1 phase_loop=", b" phase=0 phase_loop=")
    assert bad_raw != raw
    bad = tmp_path / "bad.dat"
    bad.write_bytes(bad_raw)
    with pytest.raises(AssertionError):
        check_rta(lisa_trace(bad), r)


SCHED_TP_EVENTS = ["sched_pelt_cfs", "sched_pelt_se", "sched_overutilized",
                   "sched_util_est_cfs", "sched_util_est_se", "sched_cpu_capacity"]


def sched_tp_traces(tmp: Path) -> tuple:
    """The rt-app example on juno-r0 under v5.10 and schedutil (every sched_tp event
    it has), 300 ms, as trace.dat and text, with the events table of the same run."""
    out = {}
    for name, extra in [("tp.dat", []), ("tp.txt", ["--ftrace-layout", "v5.6-no-irq-info"])]:
        js = tmp / f"{name}.json"
        subprocess.run([str(BIN), "run", str(REPO / "scenarios/rtapp-example.toml"),
                        "--set", "kernel.preset=v5.10", "--set", "kernel.cpufreq=schedutil",
                        "--set", "run.duration_ms=300", "--sched-tp",
                        "--trace", str(tmp / name), "--json", str(js), "-q", *extra], check=True)
        out[name] = json.loads(js.read_text())
    assert out["tp.dat"]["metrics"] == out["tp.txt"]["metrics"]
    return tmp / "tp.dat", tmp / "tp.txt", out["tp.dat"]


def sched_tp_lines(txt: Path) -> dict:
    """Per sched_tp event, its (µs, field dict) rows read straight off the text."""
    import re

    pat = re.compile(r" (\d+\.\d{6}): (sched_\w+): (.*)$")
    rows = {e: [] for e in SCHED_TP_EVENTS}
    for line in txt.read_text().splitlines():
        m = pat.search(line)
        if m and m[2] in rows:
            rows[m[2]].append((float(m[1]), dict(kv.split("=", 1) for kv in m[3].split())))
    return rows


@pytest.mark.parametrize("fmt", ["dat", "txt"])
def test_lisa_load_tracking_and_overutilized_read_sched_tp(tmp_path: Path, fmt: str):
    """LISA's `ana.load_tracking` (tasks' and CPUs' util, util_est, capacity) and
    `ana.status.df_overutilized` on the sched_tp events: the same values, event for
    event, as the trace's lines, and the overutilized time the flag's changes give."""
    from lisa.trace import HRTxtTraceParser, Trace

    dat, txt, r = sched_tp_traces(tmp_path)
    if fmt == "dat":
        tr = Trace(str(dat), normalize_time=False)
    else:
        tr = Trace(str(txt), parser=HRTxtTraceParser.from_txt_file,
                   events=TEXT_EVENTS + SCHED_TP_EVENTS, normalize_time=False)
    rows = sched_tp_lines(txt)
    for e in SCHED_TP_EVENTS:
        assert rows[e], e
    lt = tr.ana.load_tracking
    for df, event, col in [(lt.df_tasks_signal("util"), "sched_pelt_se", "util"),
                           (lt.df_cpus_signal("util"), "sched_pelt_cfs", "util"),
                           (lt.df_tasks_signal("enqueued"), "sched_util_est_se", "enqueued"),
                           (lt.df_cpus_signal("enqueued"), "sched_util_est_cfs", "enqueued"),
                           (lt.df_cpus_signal("capacity"), "sched_cpu_capacity", "capacity_curr")]:
        # trace.dat's readers merge the CPUs by timestamp: equal ones in any order.
        want = sorted((round(t, 6), int(f["cpu"]), int(f[col])) for t, f in rows[event])
        got = sorted((round(t, 6), int(c), int(v))
                     for t, c, v in zip(df.index, df["cpu"], df[col]))
        assert got == want, event
    ou = tr.ana.status.df_overutilized()
    flags = [(t, int(f["overutilized"])) for t, f in rows["sched_overutilized"]]
    # Time with the flag set, from its first event to the trace's last event.
    end = tr.end
    got_on = float(ou[ou["overutilized"] == 1]["len"].sum())
    want_on = 0.0
    for (t, v), nxt in zip(flags, [t for t, _ in flags[1:]] + [end]):
        want_on += (nxt - t) if v == 1 else 0.0
    assert got_on == pytest.approx(want_on, abs=2e-6 * (len(flags) + 1))
    assert set(tr.df_event("sched_overutilized")["span"]) == {0x3F}


def test_the_sched_tp_check_rejects_a_misread_format(tmp_path: Path):
    """Negative control: the trace.dat with `sched_pelt_se`'s `util` offset pointing
    at `rbl_load` (the format patched in place, same length) must fail the
    load-tracking comparison."""
    from lisa.trace import Trace

    dat, txt, r = sched_tp_traces(tmp_path)
    raw = dat.read_bytes()
    bad_raw = raw.replace(b"unsigned long util;\toffset:112;", b"unsigned long util;\toffset:104;")
    assert bad_raw != raw
    bad = tmp_path / "bad.dat"
    bad.write_bytes(bad_raw)
    df = Trace(str(bad), normalize_time=False).ana.load_tracking.df_tasks_signal("util")
    want = sorted((round(t, 6), int(f["cpu"]), int(f["util"]))
                  for t, f in sched_tp_lines(txt)["sched_pelt_se"])
    got = sorted((round(t, 6), int(c), int(v)) for t, c, v in zip(df.index, df["cpu"], df["util"]))
    assert got != want
