"""LISA's own scheduler test bundles on schedlab (``lisa_bundles.py``), one of each
kind in CI, each beside a negative control the bundle must fail: the misfit bundle
``StaggeredFinishes`` on juno-r0 (v5.10) passes, and fails its throughput check on
the same kernel without misfit migration (``NO_MISFIT``); the EAS bundle
``OneSmallTask`` passes, and fails its placement check under ``RANDOM_PLACEMENT``
(placement at random, the deliberately wrong model). docs/traces.md has the table of
every bundle on juno-r0 and hikey960.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lisa_bundles  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("SCHEDLAB_BIN", REPO / "target" / "release" / "schedlab"))


@pytest.fixture(autouse=True)
def quiet() -> None:
    warnings.simplefilter("ignore")


def verdicts(tmp: Path, name: str, extra: tuple = ()) -> dict:
    rows = lisa_bundles.run_bundle(BIN, "juno-r0", "v5.10", name, tmp, extra)
    return {t: (r, err) for t, r, _, err in rows}


def test_misfit_bundle_passes_and_rejects_a_kernel_without_misfit(tmp_path: Path):
    ok = verdicts(tmp_path / "ok", "StaggeredFinishes")
    assert set(ok) == {"test_noisy_tasks", "test_preempt_time", "test_throughput"}
    assert all(r == "PASSED" for r, _ in ok.values()), ok
    bad = verdicts(tmp_path / "bad", "StaggeredFinishes", ("--features", "NO_MISFIT"))
    assert bad["test_throughput"][0] == "FAILED", bad


def test_eas_bundle_passes_and_rejects_random_placement(tmp_path: Path):
    ok = verdicts(tmp_path / "ok", "OneSmallTask")
    assert all(r == "PASSED" for r, _ in ok.values()), ok
    bad = verdicts(tmp_path / "bad", "OneSmallTask", ("--features", "RANDOM_PLACEMENT"))
    assert bad["test_task_placement"][0] == "FAILED", bad
