//! The seeds' reported tables, read from data: what `reproduce` runs and prints.
//!
//! Each seed's results section (its experiments, its tables, the numbers it
//! reports) is a TOML file beside the seed scenarios, `scenarios/seeds/tables/NNN.toml`
//! (format: `docs/reproduction.md`, "Seed table files"), compiled into the binary
//! like the scenarios so that `reproduce` works from any directory. A paper's table
//! is data, not code: adding one is adding rows to a file. The files are read with
//! the scenario reader ([`crate::config`]): unknown keys are refused, a scenario or
//! experiment that does not exist and an unknown layout are errors naming the file,
//! line and key. What differs between the full and the quick reproduction (shorter
//! runs, fewer tables) is data too: `quick_sets`, `quick_setup`, `full_only`.

use super::reproduce::SEED_SCENARIOS;
use crate::config::{Doc, Node, TableReader, Val};
use crate::error::InputError;
use std::path::Path;

/// The seed table files (`scenarios/seeds/tables/NNN.toml`), compiled in, by seed.
pub const SEED_TABLE_FILES: [(u8, &str); 5] = [
    (
        0,
        include_str!("../../../../scenarios/seeds/tables/000.toml"),
    ),
    (
        1,
        include_str!("../../../../scenarios/seeds/tables/001.toml"),
    ),
    (
        2,
        include_str!("../../../../scenarios/seeds/tables/002.toml"),
    ),
    (
        3,
        include_str!("../../../../scenarios/seeds/tables/003.toml"),
    ),
    (
        4,
        include_str!("../../../../scenarios/seeds/tables/004.toml"),
    ),
];

/// One paired comparison to run.
#[derive(Clone, Debug)]
pub struct Exp {
    pub key: String,
    /// A name of [`SEED_SCENARIOS`].
    pub scenario: &'static str,
    pub sets: Vec<String>,
    pub a: String,
    pub b: String,
}

/// One experiment as the file states it.
#[derive(Clone, Debug)]
struct ExpSpec {
    exp: Exp,
    /// Overrides in quick mode (`None`: the full mode's).
    quick_sets: Option<Vec<String>>,
    full_only: bool,
}

/// How a table is laid out (the seed's own layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `mean-std`: `| label | Baseline | stddev | Patch | stddev |` (seeds 000, 003).
    MeanStd,
    /// `patch-first`: `| label | With <feature> | Without <feature> |` (seed 001).
    PatchFirst,
    /// `distribution`: `| | -PATCH | +PATCH | DELTA |` over mean, std, min, 50 %,
    /// 75 %, 99 %, max (seed 002); one metric per table.
    Distribution,
}

const LAYOUTS: [(&str, Layout); 3] = [
    ("mean-std", Layout::MeanStd),
    ("patch-first", Layout::PatchFirst),
    ("distribution", Layout::Distribution),
];

/// One row of a seed table.
#[derive(Clone, Debug)]
pub struct RowSpec {
    pub label: String,
    pub exp: String,
    /// The key in `super::compare::scalars`; `None` = the model has no such number.
    pub metric: Option<String>,
    /// Simulated values are multiplied by this before printing (unit changes and
    /// shortened runs); NaN = divided by the baseline arm's mean (`normalise`).
    pub scale: f64,
    /// Reported (baseline, patch).
    pub reported: (Option<f64>, Option<f64>),
    /// The reported runs' spread, as the seed prints it.
    pub spread: Spread,
    /// How many runs each reported mean is over (`reported_runs`, on the row or its
    /// table); `None` when the seed does not say.
    pub runs: Option<u32>,
    /// The simulated and reported absolute values are in the same units and for
    /// the same run length, so the baseline distance is judged; `absolute = false`
    /// (on the row, or on its table for every row) where they are not: other
    /// units, a shortened benchmark.
    pub absolute: bool,
    pub(crate) full_only: bool,
}

/// How a seed states the spread of its reported means (baseline, patch).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spread {
    /// `reported_std`: the runs' standard deviations (seeds 000, 002).
    Std(f64, f64),
    /// `reported_cv_pct`: the standard deviations in % of the means (seed 003's
    /// `%stdev`).
    CvPct(f64, f64),
    /// `reported_max`: the largest run beside the mean (seed 004's "avg, max"); the
    /// standard deviation is estimated as `(max − mean) / E[max − mean]` of that many
    /// normal runs (1.539 for 10).
    Max(f64, f64),
    /// Not reported (seed 001): [`DEFAULT_CV_PCT`] stands for it.
    None,
}

/// The standard deviation, in % of the mean, assumed for a reported mean whose
/// spread the seed does not give (pre-registered in docs/reproduction.md).
pub const DEFAULT_CV_PCT: f64 = 5.0;

/// The run count assumed for a reported mean whose count the seed does not give
/// (pre-registered in docs/reproduction.md): few, so an unknown count never makes
/// a reported effect look surer than the seed's data can be.
pub const DEFAULT_RUNS: u32 = 5;

impl RowSpec {
    /// The reported baseline and patch as means with spreads and run counts, and
    /// which stated defaults stood in for what the seed does not give.
    pub fn reported_sides(
        &self,
    ) -> Option<(
        crate::stats::verdict::Reported,
        crate::stats::verdict::Reported,
        Vec<&'static str>,
    )> {
        use crate::stats::verdict::{expected_max_over_mean, Reported};
        let (Some(a), Some(b)) = self.reported else {
            return None;
        };
        let mut defaults = vec![];
        let runs = self.runs.unwrap_or_else(|| {
            defaults.push("runs");
            DEFAULT_RUNS
        });
        let (sa, sb) = match self.spread {
            Spread::Std(x, y) => (x, y),
            Spread::CvPct(x, y) => (x / 100.0 * a.abs(), y / 100.0 * b.abs()),
            Spread::Max(x, y) => {
                let k = expected_max_over_mean(runs);
                ((x - a).abs() / k, (y - b).abs() / k)
            }
            Spread::None => {
                defaults.push("spread");
                (
                    DEFAULT_CV_PCT / 100.0 * a.abs(),
                    DEFAULT_CV_PCT / 100.0 * b.abs(),
                )
            }
        };
        let side = |mean, std| Reported { mean, std, runs };
        Some((side(a, sa), side(b, sb), defaults))
    }
}

/// One seed table.
#[derive(Clone, Debug)]
pub struct TableSpec {
    pub seed: u8,
    pub title: String,
    pub setup: String,
    quick_setup: Option<String>,
    pub layout: Layout,
    pub rows: Vec<RowSpec>,
    full_only: bool,
    /// `counted = false`: a table shown beside another (the same rows on another
    /// kernel base, say), whose rows are graded but left out of the verdict line's
    /// counts, so that no seed row is counted twice.
    pub counted: bool,
}

/// The seed's single runs as it reports them (seed 004): machine, kernel label,
/// completion times.
#[derive(Clone, Debug, PartialEq)]
pub struct SingleRun {
    pub machine: String,
    pub kernel: String,
    pub reported: Vec<f64>,
}

/// One seed's file, validated.
#[derive(Clone, Debug)]
pub struct SeedTables {
    pub seed: u8,
    /// The heading of the seed's section.
    pub title: String,
    experiments: Vec<ExpSpec>,
    tables: Vec<TableSpec>,
    pub single_runs: Vec<SingleRun>,
}

fn strings(t: &TableReader<'_>, key: &'static str) -> Result<Option<Vec<String>>, InputError> {
    let Some(items) = t.array(key)? else {
        return Ok(None);
    };
    items
        .iter()
        .map(|n| match &n.val {
            Val::Str(s) => Ok(s.clone()),
            v => Err(t.doc.err(
                n,
                format!("`{key}` must hold strings, found {}", v.type_name()),
            )),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

fn numbers(t: &TableReader<'_>, key: &'static str) -> Result<Option<Vec<f64>>, InputError> {
    let Some(items) = t.array(key)? else {
        return Ok(None);
    };
    items
        .iter()
        .map(|n| match &n.val {
            Val::Float(x) => Ok(*x),
            Val::Int(i) => Ok(*i as f64),
            v => Err(t.doc.err(
                n,
                format!("`{key}` must hold numbers, found {}", v.type_name()),
            )),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

fn required<'a, T>(t: &TableReader<'a>, key: &str, v: Option<T>) -> Result<T, InputError> {
    v.ok_or_else(|| t.err(key, format!("`{}` needs `{key}`", t.name)))
}

fn float(t: &TableReader<'_>, key: &'static str) -> Result<Option<f64>, InputError> {
    match t.get(key) {
        None => Ok(None),
        Some(n) => match &n.val {
            Val::Float(x) => Ok(Some(*x)),
            Val::Int(i) => Ok(Some(*i as f64)),
            v => Err(t.doc.err(
                n,
                format!("`{key}` must be a number, found {}", v.type_name()),
            )),
        },
    }
}

/// The array-of-tables `key` of `root`, each entry read by `f`.
fn each<'a, T>(
    root: &TableReader<'a>,
    key: &'static str,
    mut f: impl FnMut(&TableReader<'a>) -> Result<T, InputError>,
) -> Result<Vec<T>, InputError> {
    let items: &'a [Node] = root.array(key)?.unwrap_or(&[]);
    let mut out = vec![];
    for (i, n) in items.iter().enumerate() {
        let t = TableReader::new(root.doc, n, &format!("{key}[{i}]"))?;
        out.push(f(&t)?);
        t.finish()?;
    }
    Ok(out)
}

fn experiment(t: &TableReader<'_>, arms: &[String]) -> Result<ExpSpec, InputError> {
    let key = required(t, "key", t.str("key")?)?.to_string();
    let sc = required(t, "scenario", t.str("scenario")?)?;
    let scenario = SEED_SCENARIOS
        .iter()
        .find(|(n, _)| *n == sc)
        .map(|(n, _)| *n)
        .ok_or_else(|| {
            t.err(
                "scenario",
                format!("unknown seed scenario `{sc}` (not in scenarios/seeds/)"),
            )
        })?;
    Ok(ExpSpec {
        exp: Exp {
            key,
            scenario,
            sets: strings(t, "sets")?.unwrap_or_default(),
            a: arms[0].clone(),
            b: arms[1].clone(),
        },
        quick_sets: strings(t, "quick_sets")?,
        full_only: t.bool("full_only")?.unwrap_or(false),
    })
}

/// A `[baseline, patch]` pair of numbers at `key`, if given.
fn pair(t: &TableReader<'_>, key: &'static str) -> Result<Option<(f64, f64)>, InputError> {
    match numbers(t, key)? {
        None => Ok(None),
        Some(v) => match v[..] {
            [a, b] if a.is_finite() && b.is_finite() && a >= 0.0 && b >= 0.0 => Ok(Some((a, b))),
            _ => Err(t.err(
                key,
                format!("`{key}` must be [baseline, patch], two numbers ≥ 0"),
            )),
        },
    }
}

/// The row's spread: at most one of `reported_std`, `reported_cv_pct`,
/// `reported_max`.
fn spread(t: &TableReader<'_>) -> Result<Spread, InputError> {
    let std = pair(t, "reported_std")?.map(|(a, b)| Spread::Std(a, b));
    let cv = pair(t, "reported_cv_pct")?.map(|(a, b)| Spread::CvPct(a, b));
    let max = pair(t, "reported_max")?.map(|(a, b)| Spread::Max(a, b));
    let given: Vec<Spread> = [std, cv, max].into_iter().flatten().collect();
    match given[..] {
        [] => Ok(Spread::None),
        [s] => Ok(s),
        _ => Err(t.err(
            "reported_std",
            "give one of `reported_std`, `reported_cv_pct`, `reported_max`",
        )),
    }
}

fn row(
    t: &TableReader<'_>,
    exps: &[ExpSpec],
    quick_table: bool,
    absolute: bool,
    table_runs: Option<u32>,
) -> Result<RowSpec, InputError> {
    let label = required(t, "label", t.str("label")?)?.to_string();
    let exp = required(t, "experiment", t.str("experiment")?)?.to_string();
    let full_only = t.bool("full_only")?.unwrap_or(false);
    let Some(e) = exps.iter().find(|e| e.exp.key == exp) else {
        return Err(t.err("experiment", format!("no experiment with key `{exp}`")));
    };
    if quick_table && !full_only && e.full_only {
        return Err(t.err(
            "experiment",
            format!("`{exp}` is full_only, but this row is also in the quick tables"),
        ));
    }
    let reported = required(t, "reported", numbers(t, "reported")?)?;
    let [a, b] = reported[..] else {
        return Err(t.err("reported", "`reported` must be [baseline, patch]"));
    };
    let normalise = t.bool("normalise")?.unwrap_or(false);
    let scale = float(t, "scale")?;
    if normalise && scale.is_some() {
        return Err(t.err("scale", "`scale` and `normalise` exclude each other"));
    }
    Ok(RowSpec {
        label,
        exp,
        metric: t.str("metric")?.map(str::to_string),
        scale: if normalise {
            f64::NAN
        } else {
            scale.unwrap_or(1.0)
        },
        reported: (Some(a), Some(b)),
        spread: spread(t)?,
        runs: t
            .uint("reported_runs", 2, u64::from(u32::MAX))?
            .map(|n| n as u32)
            .or(table_runs),
        absolute: t.bool("absolute")?.unwrap_or(absolute) && !normalise,
        full_only,
    })
}

fn table(t: &TableReader<'_>, seed: u8, exps: &[ExpSpec]) -> Result<TableSpec, InputError> {
    let title = required(t, "title", t.str("title")?)?.to_string();
    let setup = required(t, "setup", t.str("setup")?)?.to_string();
    let name = required(t, "layout", t.str("layout")?)?;
    let layout = LAYOUTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, l)| *l)
        .ok_or_else(|| {
            t.err(
                "layout",
                format!("unknown layout `{name}` (mean-std, patch-first, distribution)"),
            )
        })?;
    let full_only = t.bool("full_only")?.unwrap_or(false);
    let absolute = t.bool("absolute")?.unwrap_or(true);
    let runs = t
        .uint("reported_runs", 2, u64::from(u32::MAX))?
        .map(|n| n as u32);
    let rows = each(t, "rows", |r| row(r, exps, !full_only, absolute, runs))?;
    if rows.is_empty() {
        return Err(t.err("rows", format!("`{}` has no rows", t.name)));
    }
    Ok(TableSpec {
        seed,
        title,
        setup,
        quick_setup: t.str("quick_setup")?.map(str::to_string),
        layout,
        rows,
        full_only,
        counted: t.bool("counted")?.unwrap_or(true),
    })
}

fn single_run(t: &TableReader<'_>) -> Result<SingleRun, InputError> {
    Ok(SingleRun {
        machine: required(t, "machine", t.str("machine")?)?.to_string(),
        kernel: required(t, "kernel", t.str("kernel")?)?.to_string(),
        reported: required(t, "reported", numbers(t, "reported")?)?,
    })
}

impl SeedTables {
    /// Parse and validate seed `seed`'s table file `text` (named `file` in errors).
    pub fn parse(seed: u8, text: &str, file: &Path) -> Result<SeedTables, InputError> {
        let doc = Doc::parse(text, file)?;
        let root = TableReader::new(&doc, &doc.root, "")?;
        let title = required(&root, "title", root.str("title")?)?.to_string();
        let arms = required(&root, "arms", strings(&root, "arms")?)?;
        if arms.len() != 2 {
            return Err(root.err("arms", "`arms` must be [baseline, patch]"));
        }
        let experiments = each(&root, "experiment", |t| experiment(t, &arms))?;
        for (i, e) in experiments.iter().enumerate() {
            if experiments[..i].iter().any(|x| x.exp.key == e.exp.key) {
                return Err(doc.err_file(format!("experiment key `{}` twice", e.exp.key)));
            }
        }
        let tables = each(&root, "table", |t| table(t, seed, &experiments))?;
        let single_runs = each(&root, "single_run", single_run)?;
        root.finish()?;
        Ok(SeedTables {
            seed,
            title,
            experiments,
            tables,
            single_runs,
        })
    }

    /// The compiled-in file of `seed`.
    pub fn load(seed: u8) -> Result<SeedTables, InputError> {
        let (_, text) = SEED_TABLE_FILES
            .iter()
            .find(|(s, _)| *s == seed)
            .ok_or_else(|| InputError::new(format!("no tables for seed {seed:03}")))?;
        let path = format!("scenarios/seeds/tables/{seed:03}.toml");
        SeedTables::parse(seed, text, Path::new(&path))
    }

    /// The experiments to run and the tables to print, full or `quick`.
    pub(crate) fn plan(&self, quick: bool) -> (Vec<Exp>, Vec<TableSpec>) {
        let exps = self
            .experiments
            .iter()
            .filter(|e| !(quick && e.full_only))
            .map(|e| {
                let mut x = e.exp.clone();
                if let (true, Some(q)) = (quick, &e.quick_sets) {
                    x.sets = q.clone();
                }
                x
            })
            .collect();
        let tables = self
            .tables
            .iter()
            .filter(|t| !(quick && t.full_only))
            .map(|t| {
                let mut t = t.clone();
                if let (true, Some(q)) = (quick, &t.quick_setup) {
                    t.setup = q.clone();
                }
                t.rows.retain(|r| !(quick && r.full_only));
                t
            })
            .collect();
        (exps, tables)
    }
}

/// The experiments and tables of `seeds` (full or quick), from the compiled-in files.
pub(crate) fn plan(seeds: &[u8], quick: bool) -> Result<(Vec<Exp>, Vec<TableSpec>), InputError> {
    let (mut exps, mut tables) = (vec![], vec![]);
    for &seed in seeds {
        let (e, t) = SeedTables::load(seed)?.plan(quick);
        exps.extend(e);
        tables.extend(t);
    }
    Ok((exps, tables))
}

/// The heading of seed `seed`'s section (its file's `title`).
pub(crate) fn seed_title(seed: u8) -> String {
    SeedTables::load(seed)
        .map(|t| t.title)
        .unwrap_or_else(|e| format!("Seed {seed:03} ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    /// One line per experiment, table and row: the plan in comparable form.
    fn digest(exps: &[Exp], tables: &[TableSpec]) -> String {
        let mut s = String::new();
        for e in exps {
            let sets = e.sets.join(" ");
            let _ = writeln!(s, "exp {} {} [{sets}] {} {}", e.key, e.scenario, e.a, e.b);
        }
        for t in tables {
            let _ = writeln!(s, "table {} {:?} {}", t.seed, t.layout, t.title);
            let _ = writeln!(s, "  setup {}", t.setup);
            for r in &t.rows {
                let _ = writeln!(
                    s,
                    "  row {} | {} | {:?} | {:?} | {:?}",
                    r.label, r.exp, r.metric, r.scale, r.reported
                );
            }
        }
        s
    }

    #[test]
    fn every_seed_file_parses() {
        for (seed, _) in SEED_TABLE_FILES {
            let t = SeedTables::load(seed).unwrap_or_else(|e| panic!("{e}"));
            assert!(t.title.starts_with(&format!("Seed {seed:03}: ")));
        }
    }

    /// The plan read from the files is the one the code wrote before the tables
    /// became data (`tests/golden/reproduce-plan.txt`, written by that code; since
    /// then changed only by added experiments and tables, reviewed in its diff and
    /// blessed with `SCHEDLAB_BLESS=1`).
    #[test]
    fn the_plan_from_data_is_the_former_plan() {
        let seeds: Vec<u8> = SEED_TABLE_FILES.iter().map(|(s, _)| *s).collect();
        let mut s = String::new();
        for quick in [false, true] {
            let (e, t) = plan(&seeds, quick).unwrap();
            let _ = writeln!(s, "# quick={quick}");
            s.push_str(&digest(&e, &t));
        }
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/golden/reproduce-plan.txt"
        );
        if std::env::var_os("SCHEDLAB_BLESS").is_some() {
            std::fs::write(path, &s).unwrap();
        }
        let golden = std::fs::read_to_string(path).unwrap();
        assert_eq!(s, golden);
    }

    fn err(text: &str) -> String {
        let base = "title = \"Seed 009: x\"\narms = [\"NO_MISFIT\", \"MISFIT\"]\n[[experiment]]\nkey = \"e\"\nscenario = \"004-sysbench-cpu-misfit-juno\"\n";
        SeedTables::parse(9, &format!("{base}{text}"), Path::new("t/009.toml"))
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn bad_table_files_name_the_file_line_and_key() {
        let table = "[[table]]\ntitle = \"t\"\nsetup = \"s\"\n";
        let row = "rows = [{ label = \"r\", experiment = \"e\", reported = [1.0, 2.0] }]\n";
        assert_eq!(err(&format!("{table}layout = \"mean-std\"\n{row}")), "");
        assert_eq!(
            err(&format!("{table}layout = \"pie\"\n{row}")),
            "t/009.toml:9: unknown layout `pie` (mean-std, patch-first, distribution)"
        );
        assert_eq!(
            err(&format!("{table}layout = \"mean-std\"\nbogus = 1\n{row}")),
            "t/009.toml:10: unknown key `table[0].bogus`"
        );
        let bad_row = "rows = [{ label = \"r\", experiment = \"nope\", reported = [1.0, 2.0] }]\n";
        assert_eq!(
            err(&format!("{table}layout = \"mean-std\"\n{bad_row}")),
            "t/009.toml:10: no experiment with key `nope`"
        );
        assert_eq!(
            err("[[experiment]]\nkey = \"f\"\nscenario = \"999-none\"\n"),
            "t/009.toml:8: unknown seed scenario `999-none` (not in scenarios/seeds/)"
        );
        assert_eq!(
            err("colour = \"red\"\n"),
            "t/009.toml:6: unknown key `experiment[0].colour`"
        );
        assert_eq!(
            err("[[table]]\ntitle = \"t\"\nlayout = \"mean-std\"\n"),
            "t/009.toml:6: `table[0]` needs `setup`"
        );
        // The reported spread: one form, two numbers ≥ 0; runs at least 2.
        let spread_row = |extra: &str| {
            format!(
                "{table}layout = \"mean-std\"\nrows = [{{ label = \"r\", experiment = \"e\", reported = [1.0, 2.0], {extra} }}]\n"
            )
        };
        assert_eq!(
            err(&spread_row("reported_std = [0.1, 0.2], reported_runs = 8")),
            ""
        );
        assert!(err(&spread_row(
            "reported_std = [0.1, 0.2], reported_cv_pct = [1.0, 2.0]"
        ))
        .contains("give one of `reported_std`, `reported_cv_pct`, `reported_max`"));
        assert!(err(&spread_row("reported_std = [-0.1, 0.2]"))
            .contains("`reported_std` must be [baseline, patch], two numbers ≥ 0"));
        assert!(err(&spread_row("reported_runs = 1")).contains("outside 2..="));
    }
}
