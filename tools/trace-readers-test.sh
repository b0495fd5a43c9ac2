#!/usr/bin/env bash
# schedlab's ftrace text read by trappy and LISA (python/trace_readers): a virtualenv
# of their own with the pinned versions (LISA 3.1 needs pandas < 3 and NumPy < 2),
# then pytest against the release CLI. SCHEDLAB_TRACE_VENV picks the virtualenv
# (default target/trace-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${SCHEDLAB_TRACE_VENV:-target/trace-venv}
python3 -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
python -m pip install -q --disable-pip-version-check -r python/trace_readers/requirements.txt
# `--workspace`, as tools/python-test.sh builds it: the same feature resolution, so
# this reuses that release build instead of compiling the library again (`-p
# schedlab-cli` did: 3 min in CI, measured 2026-11-28).
cargo build --release --locked -q --workspace
SCHEDLAB_BIN="$PWD/target/release/schedlab" python -m pytest -q -p no:cacheprovider python/trace_readers
# The notebook (examples/lisa.ipynb): the Python API and LISA on one run. It needs the
# schedlab wheel, which tools/python-test.sh builds (run before this in tools/test.sh);
# run alone, this builds it.
if ! ls target/wheels/schedlab-*.whl >/dev/null 2>&1; then
    python -m pip install -q --disable-pip-version-check maturin==1.16.0
    maturin build --release --locked -q -o target/wheels
fi
python -m pip install -q --disable-pip-version-check --no-deps --force-reinstall target/wheels/schedlab-*.whl
python tools/run-notebook.py examples/lisa.ipynb
