//! The house as drawn in ARCHITECTURE.md, enforced: which floor of the library may
//! import which, that the kernel model keeps its state to itself, and that no
//! function outside tests grows past 200 lines.
//!
//! The checks read the source text (`use crate::…` and `crate::…` paths in code, not
//! in comments); they are deliberately simple, so that a failure names the file and
//! line to look at.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each floor of `src/` and the floors it may import (itself always allowed).
/// Ground floor first; a floor may only look down.
const FLOORS: &[(&str, &[&str])] = &[
    ("abi", &[]),
    ("engine", &[]),
    ("error", &[]),
    ("stats", &[]),
    ("frame", &[]),
    ("input", &["error"]),
    ("files", &["error"]),
    ("config", &["error", "input"]),
    ("machine", &["engine", "error", "input"]),
    ("sched", &["abi", "engine", "machine"]),
    (
        "workload",
        &[
            "abi", "config", "engine", "error", "input", "machine", "stats",
        ],
    ),
    ("metrics", &["abi", "engine", "machine", "sched", "stats"]),
    (
        "sim",
        &[
            "abi", "engine", "machine", "metrics", "sched", "stats", "workload",
        ],
    ),
    // `report::text` (numbers and pipe tables; it imports only `stats`) is the one
    // piece of the presentation floor the computing floor may use: reproduce's JSON
    // cells and calibrate's machine-file comments are written with its digits.
    (
        "experiment",
        &[
            "abi",
            "config",
            "engine",
            "error",
            "files",
            "frame",
            "input",
            "machine",
            "metrics",
            "report::text",
            "sched",
            "sim",
            "stats",
            "workload",
        ],
    ),
    (
        "report",
        &[
            "abi",
            "config",
            "engine",
            "error",
            "experiment",
            "files",
            "frame",
            "input",
            "machine",
            "metrics",
            "sched",
            "sim",
            "stats",
            "workload",
        ],
    ),
    // The fuzz entry points (doc-hidden) drive every front end.
    (
        "fuzz",
        &[
            "abi",
            "config",
            "error",
            "experiment",
            "input",
            "machine",
            "sched",
            "sim",
            "workload",
        ],
    ),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("readable src dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The floor a source file belongs to: its first path component under `src/`.
fn floor_of(path: &Path) -> String {
    let rel = path.strip_prefix(src()).expect("under src");
    let first = rel.components().next().expect("non-empty path");
    first
        .as_os_str()
        .to_string_lossy()
        .trim_end_matches(".rs")
        .to_string()
}

/// The code of a line: without a `//` comment (outside string literals).
fn code_of(line: &str) -> &str {
    let mut in_str = false;
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            b'/' if !in_str && b.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

/// `crate::NAME` paths named on a line of code, each as `NAME` and, when the path
/// goes on, `NAME::SUB`.
fn crate_refs(code: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before_ok = i == 0 || {
            let c = rest.as_bytes()[i - 1];
            !(c.is_ascii_alphanumeric() || c == b'_')
        };
        let tail = &rest[i + "crate::".len()..];
        let name: String = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if before_ok && !name.is_empty() {
            let sub: String = tail[name.len()..]
                .strip_prefix("::")
                .unwrap_or("")
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.push((name.clone(), format!("{name}::{sub}")));
        }
        rest = tail;
    }
    out
}

#[test]
fn every_floor_imports_only_what_lies_below_it() {
    let floors: BTreeMap<&str, &[&str]> = FLOORS.iter().copied().collect();
    let mut files = vec![];
    rust_files(&src(), &mut files);
    let mut bad = vec![];
    for f in &files {
        let floor = floor_of(f);
        if floor == "lib" {
            continue;
        }
        let Some(allowed) = floors.get(floor.as_str()) else {
            bad.push(format!(
                "{}: floor `{floor}` is not drawn in FLOORS (tests/layering.rs) nor in ARCHITECTURE.md",
                f.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(f).expect("readable source");
        for (n, line) in text.lines().enumerate() {
            for (r, sub) in crate_refs(code_of(line)) {
                if r != floor && !allowed.contains(&r.as_str()) && !allowed.contains(&sub.as_str())
                {
                    bad.push(format!(
                        "{}:{}: floor `{floor}` reaches up to `crate::{r}`",
                        f.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "layering broken:\n{}", bad.join("\n"));
}

#[test]
fn the_layer_table_names_every_module_of_the_crate() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let floors: Vec<&str> = FLOORS.iter().map(|(f, _)| *f).collect();
    for line in lib.lines() {
        let l = line.trim();
        if let Some(m) = l
            .strip_prefix("pub mod ")
            .or_else(|| l.strip_prefix("mod "))
        {
            let m = m.trim_end_matches(';');
            assert!(floors.contains(&m), "module `{m}` has no floor in FLOORS");
        }
    }
}

#[test]
fn the_kernel_and_the_run_loop_keep_their_fields_to_the_crate() {
    for (file, decl) in [
        ("sched/core.rs", "pub struct Kernel<O> {"),
        ("sim/mod.rs", "pub struct Sim<O> {"),
    ] {
        let text = std::fs::read_to_string(src().join(file)).expect("source");
        let start = text
            .find(decl)
            .unwrap_or_else(|| panic!("{decl} in {file}"));
        let end = start + text[start..].find("\n}\n").expect("end of struct");
        let public: Vec<&str> = text[start..end]
            .lines()
            .skip(1)
            .filter(|l| l.trim_start().starts_with("pub ") && !l.contains("pub(crate)"))
            .collect();
        assert!(public.is_empty(), "pub fields on {decl}: {public:?}");
    }
}

/// Lines of each `fn` (from its signature to its closing brace), outside
/// `#[cfg(test)]` modules; braces in string and char literals are skipped.
fn long_functions(text: &str, limit: usize) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = vec![];
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().starts_with("#[cfg(test)]") {
            break; // test modules sit at the end of a file
        }
        let code = code_of(lines[i]).trim_start();
        let sig = code
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ")
            .trim_start_matches("const ");
        if let Some(rest) = sig.strip_prefix("fn ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let (mut depth, mut started, mut j) = (0i64, false, i);
            // A string literal may run over several lines (`\` continuations).
            let mut in_str = false;
            'scan: while j < lines.len() {
                let b = if in_str {
                    lines[j].as_bytes()
                } else {
                    code_of(lines[j]).as_bytes()
                };
                let mut k = 0;
                while k < b.len() {
                    match b[k] {
                        b'\\' if in_str => k += 1,
                        b'"' => in_str = !in_str,
                        b'\'' if !in_str && b.get(k + 2) == Some(&b'\'') => k += 2,
                        b'{' if !in_str => {
                            depth += 1;
                            started = true;
                        }
                        b'}' if !in_str => depth -= 1,
                        b';' if !in_str && !started => break 'scan,
                        _ => {}
                    }
                    k += 1;
                }
                if started && depth == 0 {
                    break;
                }
                j += 1;
            }
            if started && j - i + 1 > limit {
                out.push((i + 1, j - i + 1, name));
            }
        }
        i += 1;
    }
    out
}

#[test]
fn no_function_outside_tests_runs_past_200_lines() {
    let mut files = vec![];
    rust_files(&src(), &mut files);
    rust_files(&src().join("../../schedlab-cli/src"), &mut files);
    let mut bad = vec![];
    for f in &files {
        if f.ends_with("tests.rs") || f.to_string_lossy().contains("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("readable source");
        for (line, n, name) in long_functions(&text, 200) {
            bad.push(format!("{}:{line}: fn {name} is {n} lines", f.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "split these at their seams:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_length_check_sees_a_long_function_and_skips_test_modules() {
    let body = "    x += 1;\n".repeat(250);
    let text = format!("fn long() {{\n{body}}}\nfn short() {{ let s = \"}}\"; }}\n#[cfg(test)]\nmod tests {{\nfn t() {{\n{body}}}\n}}\n");
    assert_eq!(
        long_functions(&text, 200),
        vec![(1, 252, "long".to_string())]
    );
    assert!(long_functions("fn f();\nfn g() {}\n", 0).len() == 1);
    // A string over several lines, with a brace on a continuation line: the
    // function still ends at its own closing brace.
    let multi = "fn m() -> &'static str {\n    \"a \\\n     } b\"\n}\nfn n() {}\n";
    assert_eq!(long_functions(multi, 2), vec![(1, 4, "m".to_string())]);
}

#[test]
fn the_import_reader_sees_paths_in_code_only() {
    assert_eq!(
        crate_refs(code_of(
            "use crate::sched::core::Kernel; // crate::metrics in a comment"
        )),
        vec![("sched".to_string(), "sched::core".to_string())]
    );
    assert_eq!(
        crate_refs(code_of(
            "let s = \"// not a comment\"; my_crate::no; crate::report::text::num(1.0)"
        )),
        vec![("report".to_string(), "report::text".to_string())]
    );
}
