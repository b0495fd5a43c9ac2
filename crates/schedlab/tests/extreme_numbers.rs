//! Extreme numbers in every numeric field of every input schedlab ships.
//!
//! The fuzzers (docs/fuzzing.md) explore byte strings; this property test aims at
//! the class of bug hostile users found first: a *valid* file with one number
//! pushed to an edge. It takes the repository's own inputs (every scenario,
//! machine file and rt-app file under `scenarios/` and the test data), picks one
//! numeric token of one file (an integer, a float, a cpulist, the number in
//! `"500us"`) and replaces it with one of [`EXTREMES`]: 0, 1, -1, the i64 and u64
//! edges, 2^32, 1e18, 2e13, 1e-9, NaN, ±inf, 1e308, a time of 2^64 ns. The contract
//! (the same as the fuzz targets'): the input is refused with an `InputError` that
//! names the file, or it is accepted and a short run of it completes — any panic
//! (these tests run with overflow checks on), an internal error or a broken
//! invariant is a failure.

use proptest::prelude::*;
use schedlab::config::Doc;
use schedlab::experiment::{self, Overrides, RunOpts, Scenario};
use schedlab::machine::{file::parse_machine_toml, presets};
use schedlab::sched::topology::{SchedTopology, TopologyOpts};
use schedlab::sim::SimError;
use schedlab::workload::rtapp;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What replaces a number.
const EXTREMES: &[&str] = &[
    "0",
    "1",
    "-1",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "4294967296",
    "1e18",
    "2e13",
    "1e-9",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "1000000001",
    "\"18446744073709ms\"",
];

/// The longest simulated run of an accepted mutant (the contract is about not
/// breaking, not about long runs).
const RUN_NS: u64 = 2_000_000;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Scenario,
    Machine,
    RtApp,
}

struct Input {
    path: PathBuf,
    kind: Kind,
    text: String,
    tokens: Vec<Range<usize>>,
}

/// Byte ranges of the numeric tokens of `text`: a digit (or `-` and a digit) not
/// glued to a preceding letter, digit, `_` or `.` (so `cpu0`, `v5.6` and
/// `juno-r0` are names, not numbers), extended over digits and `._eE+-`.
fn numeric_tokens(text: &str) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        let starts =
            b[i].is_ascii_digit() || (b[i] == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit));
        let glued = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b"_.-".contains(&b[i - 1]));
        if starts && !glued {
            let s = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_digit() || b"._eE+-".contains(&b[i])) {
                i += 1;
            }
            out.push(s..i);
        } else {
            i += 1;
        }
    }
    out
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    v.sort();
    for p in v {
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Every input file of the repository, classified, with its tokens.
fn inputs() -> &'static [Input] {
    static INPUTS: OnceLock<Vec<Input>> = OnceLock::new();
    INPUTS.get_or_init(|| {
        let mut files = vec![];
        collect(&repo().join("scenarios"), &mut files);
        collect(&repo().join("crates/schedlab/tests/data/rtapp"), &mut files);
        let mut v = vec![];
        for path in files {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let kind = match ext {
                "json" => Kind::RtApp,
                "toml" if text.contains("[workload]") => Kind::Scenario,
                "toml" if text.contains("[[cpu_group]]") || text.contains("[topology]") => {
                    Kind::Machine
                }
                _ => continue,
            };
            let tokens = numeric_tokens(&text);
            if !tokens.is_empty() {
                v.push(Input {
                    path,
                    kind,
                    text,
                    tokens,
                });
            }
        }
        v
    })
}

// Mutants accepted and run (a property that only ever sees refusals tests little),
// per thread: each test runs on its own thread.
thread_local!(static RAN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });

/// Check the contract on `text` (a mutant of `input`).
fn check(input: &Input, text: &str) -> Result<(), String> {
    let path = &input.path;
    match input.kind {
        Kind::Scenario => {
            let sc =
                Doc::parse(text, path).and_then(|d| Scenario::from_doc(d, &Overrides::default()));
            let mut sc = match sc {
                Ok(sc) => sc,
                Err(e) => return refused_well(&e),
            };
            sc.duration_ns = Some(sc.duration_ns.map_or(RUN_NS, |d| d.min(RUN_NS)));
            let opts = RunOpts {
                check: sc.machine.nr_cpus() <= 16,
                ..RunOpts::default()
            };
            RAN.with(|r| r.set(r.get() + 1));
            match experiment::run(&sc, sc.seed, 0, &opts) {
                Ok(_) => Ok(()),
                Err(e @ (SimError::Internal { .. } | SimError::Invariant { .. })) => {
                    Err(format!("accepted, then broke: {e}"))
                }
                Err(_) => Ok(()), // a workload error (deadlock, bad program) is the input's
            }
        }
        Kind::Machine => match parse_machine_toml(text, path) {
            Ok(m) => {
                let topo = SchedTopology::build(&m, &TopologyOpts::v5_6());
                let _ = topo.render(&m);
                Ok(())
            }
            Err(e) => refused_well(&e),
        },
        Kind::RtApp => {
            let m = presets::preset("juno-r0").expect("juno-r0");
            match rtapp::parse_file(text, path, &m) {
                Ok(f) => {
                    let _ = rtapp::build(&f, &m);
                    Ok(())
                }
                Err(e) => refused_well(&e),
            }
        }
    }
}

/// A refusal must say what is wrong and where.
fn refused_well(e: &schedlab::error::InputError) -> Result<(), String> {
    if e.msg.trim().is_empty() {
        return Err(format!("an error without a message: {e:?}"));
    }
    if e.file.is_none() {
        return Err(format!("an error about a file that does not name it: {e}"));
    }
    Ok(())
}

fn mutate(input: &Input, tok: usize, ext: &str) -> String {
    let r = &input.tokens[tok % input.tokens.len()];
    let mut s = input.text.clone();
    // Inside a string (`"500us"`) a quoted extreme would break the quoting: use its
    // bare number there.
    let inside_string = input.text[..r.start].matches('"').count() % 2 == 1;
    let ext = if inside_string {
        ext.trim_matches('"').trim_end_matches("ms")
    } else {
        ext
    };
    s.replace_range(r.clone(), ext);
    s
}

#[test]
fn the_inputs_are_found_and_tokenised() {
    let v = inputs();
    for kind in [Kind::Scenario, Kind::Machine, Kind::RtApp] {
        assert!(v.iter().any(|i| i.kind == kind), "no {kind:?} input found");
    }
    assert_eq!(
        numeric_tokens("a = 10\ncpus = \"0-3\"\nt = \"1.5ms\"\nv5.6 cpu0 juno-r0 x = -2e3"),
        vec![4..6, 15..18, 25..28, 54..58]
    );
}

#[test]
fn every_input_unmutated_is_accepted() {
    // The mutants' baseline: each input as shipped satisfies the contract.
    for i in inputs() {
        check(i, &i.text).unwrap_or_else(|e| panic!("{}: {e}", i.path.display()));
    }
}

#[test]
fn mild_mutants_are_accepted_and_run() {
    // Not every mutant is refused: with the last number of each scenario set to 1
    // (a count, a size, a time in ns — all valid somewhere), most still run. A
    // property that only ever saw refusals would test the parsers alone.
    let before = RAN.with(|r| r.get());
    let scenarios: Vec<&Input> = inputs()
        .iter()
        .filter(|i| i.kind == Kind::Scenario)
        .collect();
    for i in &scenarios {
        let text = mutate(i, i.tokens.len() - 1, "1");
        check(i, &text).unwrap_or_else(|e| panic!("{}: {e}", i.path.display()));
    }
    let ran = RAN.with(|r| r.get()) - before;
    assert!(
        ran * 2 >= scenarios.len(),
        "only {ran} of {} mild mutants ran",
        scenarios.len()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn one_extreme_number_anywhere_is_refused_or_runs(
        file in any::<prop::sample::Index>(),
        tok in any::<usize>(),
        ext in prop::sample::select(EXTREMES),
    ) {
        let v = inputs();
        let input = &v[file.index(v.len())];
        let text = mutate(input, tok, ext);
        if let Err(e) = check(input, &text) {
            let r = &input.tokens[tok % input.tokens.len()];
            let line = input.text[..r.start].matches('\n').count() + 1;
            prop_assert!(
                false,
                "{}:{line}: `{}` -> `{ext}`: {e}",
                input.path.display(),
                &input.text[r.clone()]
            );
        }
    }
}
