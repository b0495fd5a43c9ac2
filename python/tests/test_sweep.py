"""schedlab.sweep on local threads: the tidy table, resuming, parquet, the CLI's files."""

from __future__ import annotations

import pytest

import schedlab
from schedlab import _native
from conftest import DEMO, read_jsonl, run_cli

GRID = {"run.duration_ms": [10, 20], "kernel.features": ["WAKEUP_PREEMPTION",
                                                         "NO_WAKEUP_PREEMPTION"]}
GRID_ARGS = ["run.duration_ms=10,20", "kernel.features=WAKEUP_PREEMPTION,NO_WAKEUP_PREEMPTION"]


def test_tidy_table(tmp_path) -> None:
    df = schedlab.sweep(DEMO, GRID, runs=2, out=tmp_path)
    assert list(df.columns) == ["point", "run.duration_ms", "kernel.features", "seed",
                                "metric", "value"]
    n_metrics = df["metric"].nunique()
    assert n_metrics > 5
    assert len(df) == 4 * 2 * n_metrics
    assert sorted(df["point"].unique()) == [0, 1, 2, 3]
    assert sorted(df["seed"].unique()) == [1, 2]
    assert set(df["run.duration_ms"]) == {"10", "20"}
    assert df.attrs["schedlab"] == {"points": 4, "runs_total": 8, "already_done": 0, "ran": 8}
    # one row per (point, seed, metric)
    assert not df.duplicated(["point", "seed", "metric"]).any()
    assert (tmp_path / "results.jsonl").is_file() and (tmp_path / "results.csv").is_file()


def test_dict_and_list_grid_agree(tmp_path) -> None:
    a = schedlab.sweep(DEMO, GRID, out=tmp_path / "a")
    b = schedlab.sweep(DEMO, GRID_ARGS, out=tmp_path / "b")
    assert a.equals(b)
    assert (tmp_path / "a" / "results.jsonl").read_bytes() == \
        (tmp_path / "b" / "results.jsonl").read_bytes()


def test_same_files_as_cli(tmp_path, schedlab_bin) -> None:
    schedlab.sweep(DEMO, GRID, runs=2, out=tmp_path / "py")
    args = ["sweep", DEMO, "--runs", "2", "--out", tmp_path / "cli", "-q"]
    for g in GRID_ARGS:
        args += ["--grid", g]
    p = run_cli(schedlab_bin, args)
    assert p.returncode == 0, p.stderr
    for name in ("results.jsonl", "results.csv"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()


def test_resume(tmp_path) -> None:
    first = schedlab.sweep(DEMO, GRID, runs=1, out=tmp_path)
    assert first.attrs["schedlab"]["ran"] == 4
    again = schedlab.sweep(DEMO, GRID, runs=1, out=tmp_path)
    assert again.attrs["schedlab"]["already_done"] == 4 and again.attrs["schedlab"]["ran"] == 0
    assert again.equals(first)
    more = schedlab.sweep(DEMO, GRID, runs=3, out=tmp_path)
    assert more.attrs["schedlab"] == {"points": 4, "runs_total": 12, "already_done": 4,
                                      "ran": 8}
    fresh = schedlab.sweep(DEMO, GRID, runs=3, out=tmp_path / "fresh")
    assert (tmp_path / "results.jsonl").read_bytes() == \
        (tmp_path / "fresh" / "results.jsonl").read_bytes()
    assert more.equals(fresh)


def test_torn_tail_is_dropped(tmp_path) -> None:
    schedlab.sweep(DEMO, GRID, runs=1, out=tmp_path)
    jl = tmp_path / "results.jsonl"
    full = jl.read_bytes()
    lines = full.splitlines(keepends=True)
    jl.write_bytes(b"".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    res = schedlab.sweep(DEMO, GRID, runs=1, out=tmp_path)
    assert res.attrs["schedlab"]["already_done"] == 2
    assert jl.read_bytes() == full


def test_foreign_directory_refused(tmp_path) -> None:
    schedlab.sweep(DEMO, GRID, runs=1, out=tmp_path)
    with pytest.raises(schedlab.InputError, match="different scenario, grid or schedlab"):
        schedlab.sweep(DEMO, {"run.duration_ms": [10, 30]}, runs=1, out=tmp_path)


def test_parquet_equals_csv(tmp_path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import pandas as pd

    df = schedlab.sweep(DEMO, GRID, runs=2, out=tmp_path, parquet=True)
    parquet = pq.read_table(tmp_path / "results.parquet").to_pandas()
    keys = ["run.duration_ms", "kernel.features"]
    csv = pd.read_csv(tmp_path / "results.csv", dtype={k: str for k in keys})
    assert list(parquet.columns) == list(csv.columns) == list(df.columns)
    assert len(parquet) == len(csv) == len(df)
    for col in ["point", "seed"] + keys + ["metric"]:
        assert parquet[col].astype(str).tolist() == csv[col].astype(str).tolist(), col
    assert parquet["value"].tolist() == csv["value"].astype(float).tolist()
    assert parquet["value"].tolist() == df["value"].tolist()


def test_temporary_out_is_removed(monkeypatch) -> None:
    import os
    import tempfile
    made = []
    real = tempfile.TemporaryDirectory

    def spy(*a, **kw):
        t = real(*a, **kw)
        if os.path.basename(t.name).startswith("schedlab-sweep-"):
            made.append(t.name)
        return t

    monkeypatch.setattr(tempfile, "TemporaryDirectory", spy)
    df = schedlab.sweep(DEMO, {"run.duration_ms": [10]}, runs=2)
    assert len(df) > 0 and len(made) == 1
    assert not os.path.exists(made[0])


def test_feature_word_lists_join_with_plus(tmp_path) -> None:
    df = schedlab.sweep(
        DEMO,
        {"run.duration_ms": [10],
         "kernel.features": [["NO_WAKEUP_PREEMPTION", "NO_WA_BIAS"], "WA_BIAS"]},
        out=tmp_path,
    )
    assert set(df["kernel.features"]) == {"NO_WAKEUP_PREEMPTION+NO_WA_BIAS", "WA_BIAS"}
    recs = read_jsonl(tmp_path / "results.jsonl")
    assert recs[0]["params"]["kernel.features"] == "NO_WAKEUP_PREEMPTION+NO_WA_BIAS"


def test_native_sweep_direct(tmp_path) -> None:
    res = _native.sweep(str(DEMO), "path", GRID_ARGS, 1, None, str(tmp_path), False)
    assert (res["points"], res["runs_total"], res["already_done"], res["ran"]) == (4, 4, 0, 4)
    assert isinstance(res["table"], bytes)


def test_polars_and_arrow_tables(tmp_path) -> None:
    pa = pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars")
    d = schedlab.sweep(DEMO, GRID, out=tmp_path)
    a = schedlab.sweep(DEMO, GRID, out=tmp_path, frame="arrow")
    p = schedlab.sweep(DEMO, GRID, out=tmp_path, frame="polars")
    assert isinstance(a, pa.Table) and isinstance(p, pl.DataFrame)
    assert a.column_names == p.columns == list(d.columns)
    assert a.column("value").to_pylist() == p["value"].to_list() == d["value"].tolist()
    assert a.schema.field("run.duration_ms").type == pa.string()
