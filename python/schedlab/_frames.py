"""Turning the native module's Arrow IPC stream bytes into DataFrames.

Every table crosses from Rust to Python as one Arrow IPC *stream* (``bytes``); this
module decodes it with pyarrow and converts it to the frame kind the caller asked for:

- ``"pandas"`` (default): ``pyarrow.Table.to_pandas()``; integer columns holding
  nulls become ``float64`` with ``NaN``, exactly as pyarrow converts them;
- ``"polars"``: ``polars.from_arrow(table)`` (zero-copy where possible);
- ``"arrow"``: the ``pyarrow.Table`` itself.

pyarrow is needed for all of them; pandas and polars are imported only when asked for.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, List, Sequence

FRAMES = ("pandas", "polars", "arrow")

_INSTALL = {
    "pyarrow": "pip install pyarrow",
    "pandas": "pip install pandas",
    "polars": "pip install polars",
}


def _require(module: str, why: str) -> Any:
    """Import ``module`` or raise an ImportError that names it and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"schedlab: {why} needs the `{module}` package, which is not installed "
            f"({_INSTALL.get(module, 'pip install ' + module)})"
        ) from e


def check_frame(frame: str) -> str:
    """Validate a ``frame=`` argument (before any simulation runs) and return it."""
    if frame not in FRAMES:
        raise ValueError(
            f"frame must be one of {', '.join(repr(f) for f in FRAMES)}, not {frame!r}"
        )
    _require("pyarrow", f"frame={frame!r}")
    if frame != "arrow":
        _require(frame, f"frame={frame!r}")
    return frame


def read_table(data: bytes) -> Any:
    """Decode one Arrow IPC stream into a ``pyarrow.Table``."""
    pa = _require("pyarrow", "reading schedlab tables")
    return pa.ipc.open_stream(data).read_all()


def convert(table: Any, frame: str) -> Any:
    """Convert a ``pyarrow.Table`` to the requested frame kind."""
    if frame == "arrow":
        return table
    if frame == "pandas":
        _require("pandas", "frame='pandas'")
        return table.to_pandas()
    if frame == "polars":
        pl = _require("polars", "frame='polars'")
        return pl.from_arrow(table)
    raise ValueError(f"unknown frame kind {frame!r}")


def to_frame(data: bytes, frame: str) -> Any:
    """Arrow IPC stream bytes -> DataFrame of kind ``frame``."""
    return convert(read_table(data), frame)


def from_rows(rows: Sequence[Sequence[Any]], columns: List[str], frame: str) -> Any:
    """A small table given as Python rows (the list functions) -> DataFrame."""
    check_frame(frame)
    pa = _require("pyarrow", "schedlab tables")
    cols: Dict[str, List[Any]] = {c: [] for c in columns}
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"expected {len(columns)} fields per row, got {row!r}")
        for c, v in zip(columns, row):
            cols[c].append(v)
    return convert(pa.table(cols), frame)
