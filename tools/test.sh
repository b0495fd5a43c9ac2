#!/usr/bin/env bash
# Every test: the Rust workspace (unit, integration, golden, property tests), then the
# Python package (wheel into a virtualenv, pytest, the example; tools/python-test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
bash tools/python-test.sh
bash tools/trace-readers-test.sh
