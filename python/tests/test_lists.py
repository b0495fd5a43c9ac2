"""The list functions and topology."""

from __future__ import annotations

import pytest

import schedlab
from conftest import run_cli


def test_machines() -> None:
    m = schedlab.machines()
    assert list(m.columns) == ["name", "description"]
    assert {"juno-r0", "xeon-88", "hikey960"} <= set(m["name"])


def test_features() -> None:
    f = schedlab.features()
    assert list(f.columns) == ["name", "default", "origin", "description"]
    row = f.set_index("name")
    assert bool(row.loc["SMT_BALANCE", "default"]) is False
    assert bool(row.loc["WAKEUP_PREEMPTION", "default"]) is True
    assert f["default"].dtype == bool


def test_kernels_workloads() -> None:
    assert {"v5.6", "v6.6", "v6.12"} <= set(schedlab.kernels()["name"])
    w = schedlab.workloads()
    assert {"tasks", "hackbench", "rtapp"} <= set(w["name"])


def test_lists_match_cli(schedlab_bin) -> None:
    for what, fn in [("machines", schedlab.machines), ("kernels", schedlab.kernels),
                     ("workloads", schedlab.workloads)]:
        p = run_cli(schedlab_bin, ["list", what])
        names = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
        if what == "machines":
            # the CLI also lists `host` (this machine's sysfs), which is not a preset;
            # schedlab.topology("host") reads it
            names = [n for n in names if n != "host"]
        assert fn()["name"].tolist() == names, what


def test_topology_juno() -> None:
    t = schedlab.topology("juno-r0")
    assert len(t.cpus) == 6
    assert list(t.cpus.columns) == ["cpu", "core", "cluster", "llc", "package", "node",
                                    "capacity", "freq_domain", "kind"]
    assert sorted(t.cpus["capacity"].unique().tolist()) == [446, 1024]
    assert list(t.domains.columns) == ["cpu", "level", "name", "span", "span_weight", "flags",
                                       "imbalance_pct", "min_interval", "max_interval",
                                       "busy_factor"]
    assert set(t.domains["name"]) == {"MC", "DIE"}
    assert len(t.domains) == 12  # 6 CPUs x 2 levels
    mc1 = t.domains[(t.domains["cpu"] == 1) & (t.domains["name"] == "MC")].iloc[0]
    assert mc1["span"] == "1-2" and mc1["span_weight"] == 2
    assert (mc1["min_interval"], mc1["max_interval"], mc1["imbalance_pct"]) == (2, 4, 117)
    assert "SD_SHARE_PKG_RESOURCES" in mc1["flags"].split("|")
    assert t.toml.strip()
    assert "sched domains" in t.text


def test_topology_text_matches_cli(schedlab_bin) -> None:
    p = run_cli(schedlab_bin, ["topology", "juno-r0"])
    assert schedlab.topology("juno-r0").text.strip() == p.stdout.strip()


def test_topology_from_machine_file(tmp_path) -> None:
    t = schedlab.topology("xeon-e5-40")
    f = tmp_path / "m.toml"
    f.write_text(t.toml)
    t2 = schedlab.topology(f)
    assert len(t2.cpus) == len(t.cpus) == 40
    assert t2.cpus["core"].tolist() == t.cpus["core"].tolist()
    assert "SMT" in set(t.domains["name"])


def test_polars_lists() -> None:
    pl = pytest.importorskip("polars")
    assert isinstance(schedlab.machines(frame="polars"), pl.DataFrame)
    assert isinstance(schedlab.topology("juno-r0", frame="polars").domains, pl.DataFrame)


def test_lisa_platform_matches_cli(schedlab_bin, tmp_path) -> None:
    out = tmp_path / "p.yml"
    run_cli(schedlab_bin, ["topology", "juno-r0", "--export-lisa", str(out), "--hz", "1000"])
    assert schedlab.lisa_platform("juno-r0", hz=1000) == out.read_text()
    assert "CONFIG_HZ: 1000" in out.read_text()
    with pytest.raises(schedlab.InputError, match="no such kernel preset"):
        schedlab.lisa_platform("juno-r0", kernel="v9.9")
    with pytest.raises(schedlab.InputError, match="must be 1 to"):
        schedlab.lisa_platform("juno-r0", rtapp_calib=0)
