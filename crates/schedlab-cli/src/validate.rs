//! `schedlab validate host`: real benchmarks on this machine vs the simulated
//! `host` machine (`schedlab::experiment::validate`).

use crate::Failure;
use schedlab::error::InputError;
use schedlab::experiment::{self, validate as v};
use std::path::{Path, PathBuf};

pub(crate) fn run(
    runs: u32,
    quick: bool,
    trace: bool,
    json: Option<PathBuf>,
    quiet: bool,
) -> Result<(), Failure> {
    if runs == 0 {
        return Err(InputError::new("--runs must be at least 1").into());
    }
    let machine = schedlab::machine::sysfs::import_host()?;
    let opts = v::ValidateOpts {
        runs,
        quick,
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
    let mut res = v::validate(&opts, &machine, &runner, &progress);
    if trace {
        res.trace = Some(v::compare_traces(
            &opts,
            &machine,
            &runner,
            Path::new(v::TRACEFS),
        ));
    }
    crate::outln!("{}", res.text().trim_end());
    if let Some(p) = json {
        let mut s =
            serde_json::to_string_pretty(&res).map_err(|e| Failure::Internal(e.to_string()))?;
        s.push('\n');
        experiment::write_atomic(&p, s.as_bytes())
            .map_err(|e| InputError::in_file(&p, None, format!("cannot write: {e}")))?;
    }
    Ok(())
}
