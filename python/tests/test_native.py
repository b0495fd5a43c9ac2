"""A C scheduler is code: the Python API runs one only with ``allow_native_scheduler=True``,
and on Dask only when the driver allowed it *and* the worker's environment does
(``SCHEDLAB_ALLOW_NATIVE_SCHEDULER=1``); the consent never travels in the scenario."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import schedlab
from schedlab import dask_sweep

FIFO = """#include <scx/common.bpf.h>
void BPF_STRUCT_OPS(f_enqueue, struct task_struct *p, u64 f)
{ scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, f); }
SCX_OPS_DEFINE(f_ops, .enqueue = (void *)f_enqueue, .name = "f");
"""

GRID = ["run.seed=1,2"]


def fifo_scenario(tmp: Path) -> Path:
    (tmp / "fifo.bpf.c").write_text(FIFO)
    p = tmp / "fifo.toml"
    p.write_text('[machine]\npreset = "juno-r0"\n[kernel]\nclass = "ext"\n'
                 'scheduler = "fifo.bpf.c"\n[workload]\nkind = "hackbench"\n'
                 'groups = 1\nloops = 10\n')
    return p


def test_run_compare_and_sweep_need_the_keyword(tmp_path) -> None:
    sc = fifo_scenario(tmp_path)
    for call in (lambda **kw: schedlab.run(sc, **kw),
                 lambda **kw: schedlab.compare(sc, runs=2, **kw),
                 lambda **kw: schedlab.sweep(sc, GRID, out=tmp_path / "s", **kw)):
        with pytest.raises(schedlab.InputError, match="fifo.bpf.c is a C scheduler"):
            call()
        call(allow_native_scheduler=True)
    r = schedlab.run(sc, allow_native_scheduler=True)
    assert r.scalars["context_switches"] > 0


def test_dask_needs_the_driver_and_every_worker(dask_client, tmp_path) -> None:
    sc = str(fifo_scenario(tmp_path))
    with pytest.raises(schedlab.InputError, match="--allow-native-scheduler"):
        dask_sweep.sweep_on_dask(sc, "path", GRID, 1, str(tmp_path / "a"), dask_client)
    # The driver's word alone: each worker refuses.
    # (Lambdas: cloudpickle sends them by value, and their `os` is the worker's.)
    env = "SCHEDLAB_ALLOW_NATIVE_SCHEDULER"
    assert not any(dask_client.run(lambda: os.environ.get(env)).values())
    with pytest.raises(dask_sweep.WorkerInputError, match="SCHEDLAB_ALLOW_NATIVE_SCHEDULER=1"):
        dask_sweep.sweep_on_dask(sc, "path", GRID, 1, str(tmp_path / "b"), dask_client,
                                 allow_native_scheduler=True)
    # Both: the same records as a local sweep. (Other seeds: the refused tasks'
    # keys may still name their errors on the scheduler.)
    dask_client.run(lambda: os.environ.__setitem__(env, "1"))
    assert all(v == "1" for v in dask_client.run(lambda: os.environ.get(env)).values())
    try:
        res = dask_sweep.sweep_on_dask(sc, "path", ["run.seed=3,4"], 1, str(tmp_path / "c"),
                                       dask_client, allow_native_scheduler=True)
    finally:
        dask_client.run(lambda: os.environ.pop(env, None))
    assert res["ran"] == 2
    schedlab.sweep(sc, ["run.seed=3,4"], out=tmp_path / "l", allow_native_scheduler=True)
    assert (tmp_path / "c" / "results.jsonl").read_bytes() == \
        (tmp_path / "l" / "results.jsonl").read_bytes()
