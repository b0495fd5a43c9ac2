"""Shared fixtures for the schedlab Python tests.

The tests run against the real compiled ``schedlab._native`` (``maturin develop``).
The CLI binary, for byte-for-byte comparisons, is ``$SCHEDLAB_BIN`` or
``target/release/schedlab`` of the repository; tests that need it are skipped when it
is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
DEMO = SCENARIOS / "demo.toml"
#: Keeps every test run short: 20 ms of simulated time is ~5 000 events.
SHORT = ["run.duration_ms=20"]


def strip_wall(json_text: str) -> str:
    """The result JSON without its ``wall_seconds`` line (the one non-deterministic field)."""
    return "".join(
        line for line in json_text.splitlines(keepends=True)
        if not line.lstrip().startswith('"wall_seconds"')
    )


def cli_bin() -> Path:
    """$SCHEDLAB_BIN, else this checkout's target/release/schedlab, else /work/main's."""
    env = os.environ.get("SCHEDLAB_BIN")
    if env:
        return Path(env)
    for cand in (REPO / "target" / "release" / "schedlab",
                 Path("/work/main/target/release/schedlab")):
        if cand.is_file():
            return cand
    return REPO / "target" / "release" / "schedlab"


@pytest.fixture(scope="session")
def schedlab_bin() -> Path:
    b = cli_bin()
    if not (b.is_file() and os.access(b, os.X_OK)):
        pytest.skip(f"schedlab CLI not found at {b} (set SCHEDLAB_BIN)")
    return b


def run_cli(bin_: Path, args: List[str], **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_)] + [str(a) for a in args], capture_output=True,
                          text=True, **kw)


@pytest.fixture(scope="session")
def demo_path() -> Path:
    return DEMO


def demo_dict() -> Dict[str, Any]:
    """scenarios/demo.toml as a dict (the same content, for run(dict))."""
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # pragma: no cover
        tomli = pytest.importorskip("tomli")
        return tomli.loads(DEMO.read_text())
    return tomllib.loads(DEMO.read_text())


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    """A 2-worker, 1-thread-each, process-based LocalCluster for the whole session."""
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
        silence_logs=50,
    )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def read_jsonl(path: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
