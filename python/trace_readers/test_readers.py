"""schedlab's ftrace text, read by the tools kernel engineers already use.

Each test writes a trace with the CLI ($SCHEDLAB_BIN) and the run's JSON, parses the
trace with trappy (6.0.1) or LISA (3.1: ``HRTxtTraceParser``, its parser of the
kernel's human-readable text) and checks that every event count equals the run's own
counter: sched_switch = context switches, sched_waking = wakeups,
sched_migrate_task = migrations, sched_process_fork and sched_wakeup_new = tasks.

trappy reads tracefs text with four latency flags or none (not the five of recent
kernels: its regex stops at four). LISA's ``HRTxtTraceParser`` reads the v5.6
layout's flags (``d...``: no preempt-count digit, as a ``PREEMPT_VOLUNTARY`` 5.x build
prints them) but stops at the v6 layout's preempt-depth digit (``d..2.``), so it is
also given the layout tracefs prints with ``options/irq-info`` off
(``--ftrace-layout ...-no-irq-info``).
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
EVENTS = ["sched_switch", "sched_waking", "sched_wakeup", "sched_wakeup_new",
          "sched_migrate_task", "sched_process_fork", "cpu_idle"]
# (scenario, overrides): a pipe workload on big.LITTLE and hackbench on an SMT Xeon
# under the v6.6 preset (EEVDF, the newer layout by default).
CASES = [
    ("scenarios/demo.toml", ["run.duration_ms=30"]),
    ("scenarios/hackbench.toml", ["machine.preset=xeon-e5-40", "kernel.preset=v6.6",
                                  "workload.groups=2", "workload.loops=20"]),
]


def run(tmp: Path, scenario: str, sets: list, layout: str | None) -> tuple:
    trace, js = tmp / "t.txt", tmp / "r.json"
    args = [str(BIN), "run", str(REPO / scenario), "--trace", str(trace), "--json", str(js), "-q"]
    for s in sets:
        args += ["--set", s]
    if layout:
        args += ["--ftrace-layout", layout]
    subprocess.run(args, check=True)
    return trace, json.loads(js.read_text())


def expected(r: dict) -> dict:
    m = r["metrics"]
    return {
        "sched_switch": m["context_switches"],
        "sched_waking": m["wakeups"],
        "sched_migrate_task": sum(m["migrations"].values()),
        "sched_process_fork": len(r["tasks"]),
        "sched_wakeup_new": len(r["tasks"]),
    }


@pytest.fixture(autouse=True)
def quiet() -> None:
    warnings.simplefilter("ignore")


# trappy's line regex takes at most four flag characters, so it reads the v5.6
# layout (the default for the v5.x kernel presets) and both flag-less ones, but not
# the five-flag layout of recent kernels, real or simulated.
@pytest.mark.parametrize("scenario,sets", CASES)
@pytest.mark.parametrize("layout", [None, "v5.6", "v5.6-no-irq-info", "v6-no-irq-info"])
def test_trappy_reads_the_four_flag_and_flagless_layouts(
    tmp_path: Path, scenario: str, sets: list, layout
) -> None:
    if layout is None and any(s.startswith("kernel.preset=v6") for s in sets):
        layout = "v5.6"  # the v6 presets default to the five-flag layout
    import trappy

    trace, r = run(tmp_path, scenario, sets, layout)
    t = trappy.FTrace(str(trace), events=EVENTS, normalize_time=False)
    counts = {e: len(getattr(t, e).data_frame) for e in EVENTS}
    for e, n in expected(r).items():
        assert counts[e] == n, (e, counts, layout)
    assert counts["sched_wakeup"] > 0 and counts["cpu_idle"] > 0
    sw = t.sched_switch.data_frame
    assert set(sw["prev_state"].astype(str)) <= {"R", "R+", "S", "X", "D"}
    assert (sw["__pid"] == sw["prev_pid"]).all(), "a switch is printed by the outgoing task"


@pytest.mark.parametrize("scenario,sets", CASES)
@pytest.mark.parametrize("layout", ["v5.6", "v5.6-no-irq-info", "v6-no-irq-info"])
def test_lisa_reads_the_kernel_text(tmp_path: Path, scenario: str, sets: list, layout) -> None:
    from lisa.trace import HRTxtTraceParser, Trace

    trace, r = run(tmp_path, scenario, sets, layout)
    tr = Trace(str(trace), parser=HRTxtTraceParser.from_txt_file, events=EVENTS,
               normalize_time=False)
    counts = {e: len(tr.df_event(e)) for e in EVENTS}
    for e, n in expected(r).items():
        assert counts[e] == n, (e, counts, layout)
    sw = tr.df_event("sched_switch")
    assert {"prev_comm", "prev_pid", "next_comm", "next_pid", "__cpu"} <= set(sw.columns)
    assert sw["__cpu"].max() < r["machine"]["nr_cpus"]
