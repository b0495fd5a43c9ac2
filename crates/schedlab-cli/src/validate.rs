//! `schedlab validate host`: real benchmarks on this machine vs the simulated
//! `host` machine (`schedlab::experiment::validate`), and `schedlab calibrate host`:
//! the host's primitive costs, measured (`schedlab::experiment::calibrate`).
//!
//! Calibration is its own command rather than only a mode of `validate`: what it
//! produces is a machine file that any scenario can use (`[machine] file = ...`,
//! `--set machine.file=...`), and keeping it apart keeps the discipline visible: the
//! costs come from micro-benchmarks of primitives, and `validate host --machine`
//! then checks them on benchmarks that measured nothing. `validate host --calibrate`
//! chains the two for convenience (and for CI's quick run).

use crate::Failure;
use schedlab::error::InputError;
use schedlab::experiment::{self, calibrate as cal, validate as v};
use schedlab::machine::Machine;
use std::path::{Path, PathBuf};

pub(crate) struct Args {
    pub runs: u32,
    pub quick: bool,
    pub trace: bool,
    pub machine: Option<PathBuf>,
    pub calibrate: bool,
    pub kernel: String,
    pub json: Option<PathBuf>,
}

/// Write `json` (pretty JSON, or why it could not be made) to `p`, atomically.
fn write_json(p: &Path, json: serde_json::Result<String>) -> Result<(), Failure> {
    let mut s = json.map_err(|e| Failure::Internal(e.to_string()))?;
    s.push('\n');
    experiment::write_atomic(p, s.as_bytes())
        .map_err(|e| InputError::in_file(p, None, format!("cannot write: {e}")).into())
}

/// Calibrate on `host`, printing the report unless `quiet`.
fn measure(
    host: &Machine,
    opts: cal::CalibrateOpts,
    quiet: bool,
) -> Result<cal::Calibration, Failure> {
    let progress = |line: &str| {
        if !quiet {
            eprintln!("  calibrate: {line}");
        }
    };
    cal::calibrate(&opts, host, &progress)
        .map_err(|e| Failure::Internal(format!("calibration failed: {e}")))
}

pub(crate) fn calibrate_cmd(
    runs: u32,
    quick: bool,
    vcpus: bool,
    out: Option<PathBuf>,
    json: Option<PathBuf>,
    quiet: bool,
) -> Result<(), Failure> {
    if runs == 0 {
        return Err(InputError::new("--runs must be at least 1").into());
    }
    let host = schedlab::machine::sysfs::import_host()?;
    let c = measure(&host, cal::CalibrateOpts { runs, quick, vcpus }, quiet)?;
    if !quiet {
        crate::outln!("{}", c.text().trim_end());
    }
    match &out {
        Some(p) => {
            experiment::write_atomic(p, c.machine_file(&host).as_bytes())
                .map_err(|e| InputError::in_file(p, None, format!("cannot write: {e}")))?;
            if !quiet {
                crate::outln!(
                    "\nwrote {} (use: schedlab validate host --machine {0})",
                    p.display()
                );
            }
        }
        None if !quiet => crate::outln!("\n(--out FILE writes the calibrated machine file)"),
        None => {}
    }
    if let Some(p) = json {
        write_json(&p, serde_json::to_string_pretty(&c))?;
    }
    Ok(())
}

pub(crate) fn run(a: Args, quiet: bool) -> Result<(), Failure> {
    if a.runs == 0 {
        return Err(InputError::new("--runs must be at least 1").into());
    }
    let kernel = schedlab::sched::features::KernelPreset::by_name(&a.kernel)
        .ok_or_else(|| {
            InputError::new(format!(
                "--kernel {}: unknown kernel preset (see `schedlab list kernels`)",
                a.kernel
            ))
        })?
        .name;
    // The real benchmarks: none at all is this host's setup (exit 2, with the
    // command that installs them); a few missing skip their rows.
    let missing = v::missing_tools();
    let need = |ps: &[(&str, &str)]| {
        let mut pkgs: Vec<&str> = ps.iter().map(|p| p.1).collect();
        pkgs.dedup();
        let tools: Vec<String> = ps.iter().map(|p| format!("`{}` ({})", p.0, p.1)).collect();
        format!(
            "{}: install with `apt-get install {}` (Debian packages)",
            tools.join(", "),
            pkgs.join(" ")
        )
    };
    if ["hackbench", "perf", "sysbench"]
        .iter()
        .all(|t| missing.iter().any(|m| m.0 == *t))
    {
        return Err(InputError::new(format!(
            "validate host runs real benchmarks this host lacks: {}",
            need(&missing)
        ))
        .into());
    }
    if !missing.is_empty() && !quiet {
        eprintln!(
            "validate host: their rows are skipped, missing {}",
            need(&missing)
        );
    }
    let machine = schedlab::machine::sysfs::import_host()?;
    // The measured-costs machine: this host's topology with the file's (or a fresh
    // calibration's) cost table.
    let measured = match (&a.machine, a.calibrate) {
        (Some(p), _) => {
            let f = schedlab::machine::file::load_machine_file(p)?.into_parts();
            let mut m = machine.clone();
            m.cost = f.cost;
            m.description = format!("{} ({})", p.display(), f.description);
            Some(m)
        }
        (None, true) => {
            let opts = cal::CalibrateOpts {
                runs: a.runs,
                quick: a.quick,
                vcpus: false,
            };
            let c = measure(&machine, opts, quiet)?;
            if !quiet {
                eprintln!("{}", c.text().trim_end());
            }
            let mut m = c.machine(&machine);
            m.description = format!("calibrated just now ({})", m.description);
            Some(m)
        }
        (None, false) => None,
    };
    let opts = v::ValidateOpts {
        runs: a.runs,
        quick: a.quick,
        kernel,
        ..Default::default()
    };
    let runner = v::HostRunner::default();
    let progress = |r: &v::Row| {
        if !quiet {
            eprintln!(
                "  {} {}: {}",
                r.benchmark,
                r.size,
                r.skipped.as_deref().unwrap_or("done")
            );
        }
    };
    let mut res = v::validate(&opts, &machine, measured.as_ref(), &runner, &progress);
    if a.trace {
        res.trace = Some(v::compare_traces(
            &opts,
            &machine,
            measured.as_ref(),
            &runner,
            Path::new(v::TRACEFS),
        ));
    }
    crate::outln!("{}", res.text().trim_end());
    if let Some(p) = a.json {
        write_json(&p, serde_json::to_string_pretty(&res))?;
    }
    Ok(())
}
