"""Sweeps on Dask: same bytes as the local sweep, surviving a killed worker, resuming,
the ``python -m schedlab.dask_sweep`` entry point and ``schedlab sweep --dask``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import schedlab
from schedlab import _native, dask_sweep
from conftest import DEMO, run_cli

pytest.importorskip("dask.distributed")

GRID = ["run.duration_ms=10,20", "kernel.features=WAKEUP_PREEMPTION,NO_WAKEUP_PREEMPTION"]
# Longer runs (~0.1 s each) so that a worker is busy when it is killed.
SLOW_GRID = ["run.duration_ms=900,1000", "kernel.features=WAKEUP_PREEMPTION,NO_WAKEUP_PREEMPTION"]


def local(tmp: Path, grid, runs: int) -> bytes:
    _native.sweep(str(DEMO), "path", list(grid), runs, None, str(tmp), False)
    return (tmp / "results.jsonl").read_bytes()


def test_same_bytes_as_local(dask_client, tmp_path) -> None:
    res = dask_sweep.sweep_on_dask(str(DEMO), "path", GRID, 2, str(tmp_path / "d"), dask_client)
    assert (res["points"], res["runs_total"], res["already_done"], res["ran"]) == (4, 8, 0, 8)
    want = local(tmp_path / "l", GRID, 2)
    assert (tmp_path / "d" / "results.jsonl").read_bytes() == want
    assert (tmp_path / "d" / "results.csv").read_bytes() == \
        (tmp_path / "l" / "results.csv").read_bytes()


def test_public_sweep_with_client(dask_client, tmp_path) -> None:
    d = schedlab.sweep(DEMO, GRID, runs=2, client=dask_client, out=tmp_path / "d")
    l = schedlab.sweep(DEMO, GRID, runs=2, out=tmp_path / "l")
    assert d.equals(l)
    assert d.attrs["schedlab"]["ran"] == 8


def test_killed_worker_loses_nothing(dask_client, tmp_path) -> None:
    before = dask_client.run(os.getpid)
    killed = []

    def kill_one(point: int, seed: int, line: str) -> None:
        if killed:
            return
        # kill a worker that is running one of our tasks right now
        busy = {a: ks for a, ks in dask_client.processing().items() if ks}
        assert busy, "no task in flight after the first result"
        addr = sorted(busy)[0]
        pid = dask_client.run(os.getpid, workers=[addr])[addr]
        os.kill(pid, signal.SIGKILL)
        killed.append((addr, pid, list(busy[addr])))

    out = tmp_path / "d"
    res = dask_sweep.sweep_on_dask(str(DEMO), "path", SLOW_GRID, 3, str(out), dask_client,
                                   on_result=kill_one)
    assert killed, "no result arrived"
    assert any(str(k).startswith("schedlab-run-") for k in killed[0][2])
    assert res["ran"] == res["runs_total"] == 12
    assert (out / "results.jsonl").read_bytes() == local(tmp_path / "l", SLOW_GRID, 3)
    # the nanny restarted the killed worker: leave the cluster as we found it
    dask_client.wait_for_workers(2, timeout=60)
    assert killed[0][1] in before.values()
    assert killed[0][1] not in dask_client.run(os.getpid).values()


def test_resume_runs_only_the_rest(dask_client, tmp_path) -> None:
    out = tmp_path / "d"
    local(out, GRID, 1)  # seed 1 of every point done locally
    seen = []
    res = dask_sweep.sweep_on_dask(str(DEMO), "path", GRID, 3, str(out), dask_client,
                                   on_result=lambda p, s, line: seen.append((p, s)))
    assert (res["already_done"], res["ran"], res["runs_total"]) == (4, 8, 12)
    assert sorted(seen) == [(p, s) for p in range(4) for s in (2, 3)]
    assert (out / "results.jsonl").read_bytes() == local(tmp_path / "l", GRID, 3)
    again = dask_sweep.sweep_on_dask(str(DEMO), "path", GRID, 3, str(out), dask_client)
    assert (again["already_done"], again["ran"]) == (12, 0)


def test_foreign_out_refused(dask_client, tmp_path) -> None:
    local(tmp_path, GRID, 1)
    with pytest.raises(schedlab.InputError):
        dask_sweep.sweep_on_dask(str(DEMO), "path", ["run.duration_ms=10,30"], 1,
                                 str(tmp_path), dask_client)


def _entry(args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "schedlab.dask_sweep"] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=120, **kw)


def test_entry_point(dask_client, tmp_path) -> None:
    addr = dask_client.scheduler.address
    out = tmp_path / "d"
    args = ["--scheduler", addr, DEMO, "--runs", "2", "--out", out, "--parquet"]
    for g in GRID:
        args += ["--grid", g]
    p = _entry(args)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"4 points x 2 seeds: 8 runs, 0 already done, 8 run now -> {out}\n"
    assert (out / "results.jsonl").read_bytes() == local(tmp_path / "l", GRID, 2)
    assert (out / "results.parquet").is_file()
    p = _entry(args + ["--runs", "3"])
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("4 points x 3 seeds: 12 runs, 8 already done, 4 run now")
    p = _entry(args + ["-q"])
    assert p.returncode == 0 and p.stdout == ""


def test_entry_point_errors(dask_client, tmp_path) -> None:
    addr = dask_client.scheduler.address
    p = _entry(["--scheduler", addr, DEMO, "--grid", "machine.bogus=1,2", "--out", tmp_path / "a"])
    assert p.returncode == 2
    assert p.stderr.startswith("error: ") and "machine.bogus" in p.stderr
    p = _entry(["--scheduler", addr, tmp_path / "missing.toml", "--grid", "run.seed=1",
                "--out", tmp_path / "b"])
    assert p.returncode == 2 and "cannot read" in p.stderr
    p = _entry(["--scheduler", "tcp://127.0.0.1:9", "--timeout", "2", DEMO,
                "--grid", "run.duration_ms=10", "--out", tmp_path / "c"])
    assert p.returncode == 1
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in p.stderr
    p = _entry(["--scheduler", addr, DEMO, "--grid", "run.duration_ms=10", "--runs", "0",
                "--out", tmp_path / "d"])
    assert p.returncode == 2 and p.stderr.startswith("error: --runs")


def test_killed_driver_resumes(dask_client, tmp_path) -> None:
    """SIGKILL the driver once some records are appended; the same command finishes
    the sweep, running only the rest, with the local sweep's bytes."""
    import time

    addr = dask_client.scheduler.address
    out = tmp_path / "d"
    args = [sys.executable, "-m", "schedlab.dask_sweep", "--scheduler", addr, str(DEMO),
            "--runs", "4", "--out", str(out)]
    for g in SLOW_GRID:
        args += ["--grid", g]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    jl = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if jl.is_file() and jl.read_bytes().count(b"\n") >= 2:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the sweep finished before it could be killed"
    proc.kill()
    proc.wait()
    done = jl.read_bytes().count(b"\n")
    assert 2 <= done < 16
    p = _entry(args[3:])
    assert p.returncode == 0, p.stderr
    assert f"16 runs, {done} already done, {16 - done} run now" in p.stdout
    assert jl.read_bytes() == local(tmp_path / "l", SLOW_GRID, 4)


def test_entry_point_error_text_matches_cli(dask_client, tmp_path, schedlab_bin) -> None:
    addr = dask_client.scheduler.address
    p = _entry(["--scheduler", addr, DEMO, "--grid", "machine.preset=nope",
                "--out", tmp_path / "a"])
    c = run_cli(schedlab_bin, ["sweep", DEMO, "--grid", "machine.preset=nope",
                               "--out", tmp_path / "b"])
    assert p.returncode == c.returncode == 2
    assert p.stderr.strip().splitlines()[-1] == c.stderr.strip().splitlines()[-1]


def test_cli_sweep_dask(dask_client, tmp_path, schedlab_bin) -> None:
    help_text = run_cli(schedlab_bin, ["sweep", "--help"]).stdout
    if "--dask" not in help_text:
        pytest.skip("this schedlab CLI has no `sweep --dask`")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["SCHEDLAB_PYTHON"] = sys.executable
    out = tmp_path / "d"
    args = ["sweep", DEMO, "--runs", "2", "--out", out, "--dask", dask_client.scheduler.address]
    for g in GRID:
        args += ["--grid", g]
    p = run_cli(schedlab_bin, args, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "4 points x 2 seeds: 8 runs, 0 already done, 8 run now" in p.stdout
    assert (out / "results.jsonl").read_bytes() == local(tmp_path / "l", GRID, 2)


def test_scenario_naming_a_file(dask_client, tmp_path) -> None:
    """Workers read the files a scenario names (here an rt-app JSON) at the same path."""
    rtapp = Path(DEMO).parent / "rtapp-example.toml"
    grid = ["run.duration_ms=20,30"]
    dask_sweep.sweep_on_dask(str(rtapp), "path", grid, 2, str(tmp_path / "d"), dask_client)
    _native.sweep(str(rtapp), "path", grid, 2, None, str(tmp_path / "l"), False)
    assert (tmp_path / "d" / "results.jsonl").read_bytes() == \
        (tmp_path / "l" / "results.jsonl").read_bytes()


def test_toml_text_scenario_on_dask(dask_client, tmp_path) -> None:
    text = DEMO.read_text()
    d = schedlab.sweep(text, GRID, client=dask_client, out=tmp_path / "d")
    l = schedlab.sweep(text, GRID, out=tmp_path / "l")
    assert d.equals(l)
    assert (tmp_path / "d" / "results.jsonl").read_bytes() == \
        (tmp_path / "l" / "results.jsonl").read_bytes()


def test_worker_version_checked(tmp_path) -> None:
    plan = _native.SweepPlan(str(DEMO), "path", GRID, 1, str(tmp_path))
    point, seed = plan.todo()[0]
    task = plan.task(point, seed)
    line = dask_sweep.run_point(_native.__version__, *task)
    plan.append(line)
    with pytest.raises(dask_sweep.WorkerVersionError, match="install the same schedlab"):
        dask_sweep.run_point("0.0.0-other", *task)
