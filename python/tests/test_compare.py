"""schedlab.compare: the tidy runs frame, the per-metric table, the CLI's JSON."""

from __future__ import annotations

import json

import pytest

import schedlab
from conftest import DEMO, SHORT, run_cli

RUNS = 4


@pytest.fixture(scope="module")
def cmp() -> schedlab.Comparison:
    return schedlab.compare(DEMO, set=SHORT, a="", b=["NO_WAKEUP_PREEMPTION"], runs=RUNS)


def test_runs_frame_shape(cmp) -> None:
    runs, table = cmp.runs, cmp.table
    assert list(runs.columns) == ["arm", "spec", "seed", "metric", "value"]
    n_metrics = len(table)
    assert n_metrics == len(cmp.data["rows"]) > 5
    assert len(runs) == 2 * RUNS * n_metrics
    assert sorted(runs["arm"].unique()) == ["a", "b"]
    assert sorted(runs["seed"].unique()) == [1, 2, 3, 4]
    assert set(runs.loc[runs["arm"] == "b", "spec"]) == {"NO_WAKEUP_PREEMPTION"}
    assert set(runs["metric"]) == set(table["metric"])


def test_table_centres_are_means_of_runs(cmp) -> None:
    table = cmp.table
    assert list(table.columns) == ["metric", "better", "mean_kind", "a", "b", "delta_pct",
                                   "a_std", "b_std", "wilcoxon_p", "mann_whitney_p",
                                   "change_pct", "change_lo", "change_hi", "effect"]
    assert set(table["effect"]) <= {"up", "down", "null", "unclear"}
    bounded = table[table["change_lo"] > float("-inf")]
    assert (bounded["change_lo"] <= bounded["change_pct"]).all()
    assert (bounded["change_pct"] <= bounded["change_hi"]).all()
    runs = cmp.runs
    amean = table[table["mean_kind"] == "amean"]
    assert len(amean) > 0
    for row in amean.itertuples():
        for arm in ("a", "b"):
            vals = runs[(runs["arm"] == arm) & (runs["metric"] == row.metric)]["value"]
            assert len(vals) == RUNS
            assert getattr(row, arm) == pytest.approx(vals.mean(), rel=1e-12, abs=1e-12)


def test_json_and_text(cmp, schedlab_bin, tmp_path) -> None:
    out = tmp_path / "c.json"
    p = run_cli(schedlab_bin, ["compare", DEMO, "--set", SHORT[0], "--a", "", "--b",
                               "NO_WAKEUP_PREEMPTION", "--runs", str(RUNS), "--json", out])
    assert p.returncode == 0, p.stderr
    assert cmp.to_json() == out.read_text()
    assert cmp.text.strip() == p.stdout.strip()
    d = json.loads(cmp.to_json())
    assert d["seeds"] == [1, 2, 3, 4] and d["b"]["spec"] == "NO_WAKEUP_PREEMPTION"
    assert "Comparison" in repr(cmp)


def test_jobs_do_not_change_results(cmp) -> None:
    c1 = schedlab.compare(DEMO, set=SHORT, b="NO_WAKEUP_PREEMPTION", runs=RUNS, jobs=1)
    assert c1.to_json() == cmp.to_json()


def test_arrow_frame() -> None:
    pa = pytest.importorskip("pyarrow")
    c = schedlab.compare(DEMO, set=SHORT, b="NO_WAKEUP_PREEMPTION", runs=2, frame="arrow")
    assert isinstance(c.runs, pa.Table) and isinstance(c.table, pa.Table)
    assert c.runs.num_rows == 2 * 2 * c.table.num_rows
