"""schedlab.InputError: the CLI's exit-2 errors, with the same text and their parts."""

from __future__ import annotations

import pytest

import schedlab
from conftest import DEMO, SHORT, run_cli

BAD_KEY = '[machine]\npreset = "juno-r0"\nbogus = 1\n'


def _cli_error(bin_, args) -> str:
    p = run_cli(bin_, args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ")
    return line[len("error: "):]


def test_is_value_error() -> None:
    assert issubclass(schedlab.InputError, ValueError)


def test_bad_key_in_file(tmp_path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(BAD_KEY)
    with pytest.raises(schedlab.InputError) as ei:
        schedlab.run(f)
    e = ei.value
    assert e.file == str(f)
    assert e.line == 3
    assert e.key == "machine.bogus"
    assert "unknown key" in e.msg
    assert str(e) == f"{f}:3: {e.msg}"


def test_bad_key_same_text_as_cli(tmp_path, schedlab_bin) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(BAD_KEY)
    with pytest.raises(schedlab.InputError) as ei:
        schedlab.run(f)
    assert str(ei.value) == _cli_error(schedlab_bin, ["run", f])


def test_bad_key_in_toml_text_and_dict() -> None:
    with pytest.raises(schedlab.InputError) as ei:
        schedlab.run(BAD_KEY)
    assert ei.value.line == 3 and ei.value.key == "machine.bogus"
    assert ei.value.file == "<string>"
    assert str(ei.value) == "<string>:3: unknown key `machine.bogus`"
    with pytest.raises(schedlab.InputError) as ei:
        schedlab.run({"machine": {"preset": "juno-r0", "bogus": 1}})
    assert ei.value.key == "machine.bogus" and ei.value.file == "<dict>"
    with pytest.raises(schedlab.InputError, match="must be a table"):
        schedlab.run({"machine": 3})
    with pytest.raises(TypeError, match="JSON"):
        schedlab.run({"machine": {"preset": object()}})


@pytest.mark.parametrize("kw,cli", [
    (dict(set="machine.preset=nope"), ["--set", "machine.preset=nope"]),
    (dict(set=["run.duration_ms=20", "foo"]), ["--set", "run.duration_ms=20", "--set", "foo"]),
    (dict(set="machine.bogus=3"), ["--set", "machine.bogus=3"]),
    (dict(features="BOGUS"), ["--features", "BOGUS"]),
    (dict(features=["NO_WAKEUP_PREEMPTION", "NOPE"]), ["--features", "NO_WAKEUP_PREEMPTION,NOPE"]),
])
def test_overrides_same_text_as_cli(kw, cli, schedlab_bin) -> None:
    with pytest.raises(schedlab.InputError) as ei:
        schedlab.run(DEMO, **kw)
    assert str(ei.value) == _cli_error(schedlab_bin, ["run", DEMO] + cli)


def test_unknown_preset_message() -> None:
    with pytest.raises(schedlab.InputError, match="unknown machine preset `nope`"):
        schedlab.run(DEMO, set="machine.preset=nope")


def test_bad_set_syntax() -> None:
    with pytest.raises(schedlab.InputError, match="expected KEY=VALUE"):
        schedlab.run(DEMO, set="foo")


def test_missing_file(tmp_path, schedlab_bin) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(schedlab.InputError) as ei:
        schedlab.run(missing)
    assert ei.value.file == str(missing)
    assert "cannot read" in str(ei.value)
    assert str(ei.value) == _cli_error(schedlab_bin, ["run", missing])


def test_compare_and_sweep_errors(tmp_path) -> None:
    with pytest.raises(schedlab.InputError):
        schedlab.compare(DEMO, set=SHORT, b="NOPE", runs=2)
    with pytest.raises(schedlab.InputError):
        schedlab.sweep(DEMO, {"machine.bogus": [1, 2]}, out=tmp_path / "s")
    with pytest.raises(schedlab.InputError):
        schedlab.topology("no-such-machine")


def test_runs_bounds(tmp_path) -> None:
    for bad in (0, 10001):
        with pytest.raises(schedlab.InputError, match="runs must be in 1..=10000") as ei:
            schedlab.sweep(DEMO, {"run.duration_ms": [10]}, runs=bad, out=tmp_path)
        assert ei.value.file is None and ei.value.line is None
        with pytest.raises(schedlab.InputError, match="runs must be in 1..=10000"):
            schedlab.compare(DEMO, set=SHORT, runs=bad)
    with pytest.raises(TypeError):
        schedlab.sweep(DEMO, {"run.duration_ms": [10]}, runs=1.5)  # type: ignore[arg-type]
