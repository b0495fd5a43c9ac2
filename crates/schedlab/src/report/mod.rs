//! Presentation: every text table, HTML page and plot schedlab shows a person.
//!
//! The experiments ([`crate::experiment`]) compute: they run scenarios and return
//! results (a [`crate::experiment::RunResult`], a [`Comparison`], sweep records, a
//! [`crate::experiment::reproduce::Reproduction`], a validation, an oracle
//! comparison) that serialize to versioned JSON and can be compared byte for byte.
//! This module presents: it reads those results and writes what a person reads —
//! the summary `schedlab run` prints, the comparison and seed tables, the
//! validation and calibration tables, the HTML reports with their SVG plots.
//! Keeping the two apart means a change of layout cannot change a number, a new
//! page needs no new computation, and the experiments do not import this module:
//! the dependency goes one way, from here to the result types. The one exception is
//! [`text`], which depends on no result type: the seed tables fill the cells their
//! JSON carries with its numbers, and calibration writes its measured costs into a
//! machine file's comments with them.
//!
//! * [`text`]: the number formatter (one function, one style per kind of table),
//!   Δ% and p-value cells, the pipe table renderer;
//! * [`summary`]: the text of `schedlab run`, a comparison, a reproduction;
//! * [`explain`]: the text of `schedlab explain` (one placement's call tree);
//! * [`host`]: the tables of `schedlab validate host` (real vs simulated) and
//!   `schedlab calibrate host` (measured costs);
//! * [`html`]: the pages (head, footer, escaping written once) for a comparison, a
//!   sweep and a reproduction;
//! * [`oracle`]: the oracle's domain and decision comparisons, text and page;
//! * [`plot`]: the SVG plots of the pages;
//! * [`lisa`]: a machine as LISA's `PlatformInfo` YAML (`topology --export-lisa`),
//!   what LISA's analyses and tests read beside a schedlab trace.
//!
//! The presentation methods of the result types (`Comparison::text`,
//! `Reproduction::html`, `RunResult::summary_text`, …) are defined here, in the
//! module of their output, not beside the types.

pub mod explain;
pub mod host;
pub mod html;
pub mod lisa;
pub mod oracle;
pub mod plot;
pub mod summary;
pub mod text;
pub mod topology;

use crate::experiment::compare::{ArmSpec, Comparison, RunDetail};
use crate::experiment::Scenario;

pub use html::sweep_html;
pub use oracle::{ab_html, oracle_html, OracleSection};
pub use plot::BoxStats;
pub use topology::topology_text;

/// The schedlab version printed in every report.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One arm as it ran.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ArmInfo {
    pub spec: ArmSpec,
    pub machine: String,
    pub nr_cpus: usize,
    pub kernel_preset: String,
    /// The resolved feature set (`NAME` / `NO_NAME` for every feature).
    pub features: Vec<String>,
    /// Per run, in seed order.
    pub runs: Vec<RunDetail>,
}

impl ArmInfo {
    pub fn new(spec: &ArmSpec, sc: &Scenario, runs: Vec<RunDetail>) -> ArmInfo {
        ArmInfo {
            spec: spec.clone(),
            machine: sc.machine.name.clone(),
            nr_cpus: sc.machine.nr_cpus(),
            kernel_preset: sc.kernel_preset.to_string(),
            features: sc.features.resolved(),
            runs,
        }
    }
}

/// A comparison with its per-run details.
#[derive(Clone, Debug)]
pub struct CompareReport {
    pub cmp: Comparison,
    pub arms: [ArmInfo; 2],
}
