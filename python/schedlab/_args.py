"""Normalising the Python API's arguments into the native module's plain strings."""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, List, Mapping, Optional, Tuple, Union

Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def scenario_source(scenario: Scenario) -> Tuple[str, str]:
    """Return ``(source, kind)`` for ``_native``: kind is "path", "toml" or "json".

    - a mapping is a scenario as data: ``json.dumps`` -> kind "json";
    - an ``os.PathLike`` is a path;
    - a ``str`` containing a newline, or starting with ``[`` (after blanks), is TOML
      text; any other ``str`` is a path.
    """
    if isinstance(scenario, Mapping):
        try:
            return json.dumps(scenario), "json"
        except (TypeError, ValueError) as e:
            raise TypeError(f"scenario dict is not JSON-serialisable: {e}") from None
    if isinstance(scenario, os.PathLike):
        path = os.fspath(scenario)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        return path, "path"
    if isinstance(scenario, str):
        if "\n" in scenario or scenario.lstrip().startswith("["):
            return scenario, "toml"
        return scenario, "path"
    raise TypeError(
        "scenario must be a path (str or os.PathLike), TOML text (str) or a dict, "
        f"not {type(scenario).__name__}"
    )


def input_error(msg: str) -> Exception:
    """A ``_native.InputError`` raised from Python (no file, line or key)."""
    from . import _native

    e = _native.InputError(msg)
    e.file, e.line, e.key, e.msg = None, None, None, msg
    return e


def runs(value: int) -> int:
    """``runs=``: seeds per point, 1..=10000 as the CLI's ``--runs``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"runs must be an int, not {type(value).__name__}")
    if not 1 <= value <= 10000:
        raise input_error("runs must be in 1..=10000")
    return value


def _words(value: Union[None, str, Iterable[str]], what: str) -> List[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    out = []
    for v in value:
        if not isinstance(v, str):
            raise TypeError(f"{what} items must be str, not {type(v).__name__}")
        out.append(v)
    return out


def sets(value: Union[None, str, Iterable[str]]) -> List[str]:
    """``set=``: None, one "KEY=VALUE" string, or a list of them."""
    return _words(value, "set")


def features(value: Union[None, str, Iterable[str]]) -> Optional[str]:
    """``features=``: None, "A,NO_B", or a list of words -> the CLI's comma list."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return ",".join(_words(value, "features"))


def spec(value: Union[str, Iterable[str]]) -> str:
    """A compare arm: a SPEC string, or a list of its words/overrides."""
    if isinstance(value, str):
        return value
    return ",".join(_words(value, "arm spec"))


def trace(value: Any) -> Tuple[bool, Optional[str]]:
    """``trace=``: None/False -> (False, None); True -> (True, None); a path -> (True, path)."""
    if value is None or value is False:
        return False, None
    if value is True:
        return True, None
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        return True, path
    raise TypeError(f"trace must be None, a bool or a path, not {type(value).__name__}")


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        # several feature words in one kernel.features value: the CLI joins them with +
        return "+".join(_value(x) for x in v)
    return str(v)


def grid(value: Union[Mapping[str, Any], Iterable[str]]) -> List[str]:
    """``grid=``: {key: [values]} or ["KEY=V1,V2", ...] -> the CLI's --grid strings.

    In a dict, a value that is a str is taken as written (``"10,20"`` is two values);
    a list value gives one grid value per item, and an item that is itself a list or
    tuple of feature words is joined with ``+`` (``[["SMT_BALANCE", "IDLE_CPU_MASK"]]``
    is the one value ``SMT_BALANCE+IDLE_CPU_MASK``). Booleans become ``true``/``false``.
    """
    if isinstance(value, Mapping):
        out = []
        for key, vals in value.items():
            if isinstance(vals, str):
                out.append(f"{key}={vals}")
                continue
            if not isinstance(vals, Iterable):
                vals = [vals]
            vals = [_value(v) for v in vals]
            if not vals:
                raise ValueError(f"grid axis {key!r} has no values")
            out.append(f"{key}={','.join(vals)}")
        return out
    if isinstance(value, str):
        return [value]
    return _words(value, "grid")
