#!/usr/bin/env bash
# The Python package's tests: build the abi3 wheel with maturin (the pinned Rust
# toolchain), install it into a fresh virtualenv with the pinned Python stack
# (python/requirements-test.txt), then run pytest (python/tests, which also drive the
# CLI binary and a 2-worker Dask LocalCluster) and the example script.
# SCHEDLAB_VENV picks the virtualenv directory (default target/py-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${SCHEDLAB_VENV:-target/py-venv}
python3 -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
python -m pip install -q --disable-pip-version-check -r python/requirements-test.txt
# The whole workspace first, in one resolution of dependency features: maturin's
# build of the bindings then reuses its release `schedlab` library and compiles only
# the bindings, and the CLI is target/release/schedlab. (`-p schedlab-cli` resolves
# features for the CLI alone, and maturin for the bindings alone: each compiled the
# library again, two release builds of 2.5-3.5 min more in CI; measured 2026-11-28.)
cargo build --release --locked -q --workspace
rm -rf target/wheels
maturin build --release --locked -o target/wheels
python -m pip install -q --disable-pip-version-check --force-reinstall --no-deps target/wheels/schedlab-*.whl
export SCHEDLAB_BIN="$PWD/target/release/schedlab"
export SCHEDLAB_PYTHON="$venv/bin/python"
python -m pytest -q python/tests
python examples/smt_balance_dask.py --out target/example-smt-balance
