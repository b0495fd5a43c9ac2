"""LISA's scheduler test bundles on schedlab: the rt-app profiles LISA's own bundles
generate, run in schedlab, and LISA's own checks on the traces.

For each bundle class (EAS behaviour: ``OneSmallTask``, ``ThreeSmallTasks``,
``TwoBigTasks``, ``TwoBigThreeSmall``, ``EnergyModelWakeMigration``, ``RampUp``,
``RampDown``; misfit: ``StaggeredFinishes``; util tracking: ``UtilConvergence``,
which reads ``sched_util_est_se``, so v5.9+ kernels) this takes the machine's LISA platform
file (``schedlab topology MACHINE --export-lisa``), asks the class for its rt-app
profile on that platform (``get_rtapp_profile``), writes it as the rt-app JSON LISA's
``RTAConf`` would hand to rt-app (with every ftrace marker category on), runs it in
schedlab (``schedlab run --trace trace.dat --sched-tp``), builds the bundle over that
``trace.dat`` and the platform file (``cls(res_dir, plat_info)``, as LISA's
``from_dir`` does) and calls each of its ``test_*`` methods with their defaults
(``test_noisy_tasks`` with a 1 % threshold, which it needs; ``test_dmesg`` is left
out: no kernel log). LISA's verdicts are LISA's: nothing here interprets them.

    python lisa_bundles.py --schedlab target/release/schedlab --machine juno-r0 \\
        --kernel v5.10 [--features NO_MISFIT] [--only StaggeredFinishes] [--markdown F]

Library use: :func:`run_bundle`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

BUNDLES = {
    "OneSmallTask": "lisa.tests.scheduler.eas_behaviour",
    "ThreeSmallTasks": "lisa.tests.scheduler.eas_behaviour",
    "TwoBigTasks": "lisa.tests.scheduler.eas_behaviour",
    "TwoBigThreeSmall": "lisa.tests.scheduler.eas_behaviour",
    "EnergyModelWakeMigration": "lisa.tests.scheduler.eas_behaviour",
    "RampUp": "lisa.tests.scheduler.eas_behaviour",
    "RampDown": "lisa.tests.scheduler.eas_behaviour",
    "StaggeredFinishes": "lisa.tests.scheduler.misfit",
    "UtilConvergence": "lisa.tests.scheduler.util_tracking",
}
# Markers LISA's RTATestBundle asks rt-app for (its ftrace collector's
# `userspace@rtapp_*` events).
MARKERS = ["main", "task", "loop", "event", "stats"]
# Arguments a test has no default for.
TEST_ARGS = {"test_noisy_tasks": {"noise_threshold_pct": 1}}


def bundle_class(name: str):
    import importlib

    return getattr(importlib.import_module(BUNDLES[name]), name)


def platform(schedlab: Path, machine: str, kernel: str, out: Path):
    from lisa.platforms.platinfo import PlatformInfo

    subprocess.run([str(schedlab), "topology", machine, "--export-lisa", str(out),
                    "--kernel", kernel], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return PlatformInfo.from_yaml_map(str(out))


def rtapp_json(cls, plat_info) -> dict:
    """The rt-app file LISA's RTA would write for `cls` on `plat_info`."""
    from lisa.wlgen.rta import RTAConf

    profile = cls.get_rtapp_profile(plat_info)
    conf = RTAConf.from_profile(profile, plat_info=plat_info, force_defaults=True,
                                no_force_default_keys=["taskgroup"], trace_events=MARKERS)
    return conf.conf


def run_bundle(schedlab: Path, machine: str, kernel: str, name: str, work: Path,
               extra: tuple = ()) -> list:
    """Run bundle `name` on schedlab's `machine` under `kernel` (plus `extra`
    arguments to `schedlab run`) in directory `work`: its tests' (name, result,
    metrics as strings, error)."""
    cls = bundle_class(name)
    res = work / name
    res.mkdir(parents=True, exist_ok=True)
    pi = platform(schedlab, machine, kernel, res / "platform.yml")
    (res / "rtapp.json").write_text(json.dumps(rtapp_json(cls, pi), indent=1))
    (res / "scenario.toml").write_text(
        f'[machine]\npreset = "{machine}"\n[kernel]\npreset = "{kernel}"\n'
        'cpufreq = "schedutil"\n[run]\nseed = 1\n[workload]\nkind = "rtapp"\n'
        'file = "rtapp.json"\n')
    subprocess.run([str(schedlab), "run", str(res / "scenario.toml"), "--trace",
                    str(res / "trace.dat"), "--sched-tp", "-q", *extra], check=True)
    bundle = cls(str(res), pi)
    out = []
    for t in sorted(m for m in dir(cls) if m.startswith("test_") and m != "test_dmesg"):
        try:
            r = getattr(bundle, t)(**TEST_ARGS.get(t, {}))
            metrics = {k: str(v) for k, v in r.metrics.items()}
            out.append((t, r.result.name, metrics, None))
        except Exception as e:  # a check that cannot run is reported as such
            out.append((t, "ERROR", {}, f"{type(e).__name__}: {e}"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schedlab", type=Path, required=True)
    ap.add_argument("--machine", default="juno-r0")
    ap.add_argument("--kernel", default="v5.10")
    ap.add_argument("--features", default=None)
    ap.add_argument("--only", action="append", default=None)
    ap.add_argument("--markdown", type=Path, default=None)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    extra = ("--features", a.features) if a.features else ()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name in a.only or list(BUNDLES):
            for t, res, metrics, err in run_bundle(a.schedlab, a.machine, a.kernel, name,
                                                   Path(d), extra):
                first = "; ".join(f"{k}: {v}" for k, v in list(metrics.items())[:2])
                rows.append((name, t, res, err or first))
                print(f"{name:26} {t:22} {res:8} {err or first}", flush=True)
    if a.markdown:
        lines = ["| bundle | test | verdict | first metrics / error |", "|---|---|---|---|"]
        lines += [f"| {n} | {t} | {r} | {m.replace('|', '/')} |" for n, t, r, m in rows]
        a.markdown.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
