//! Fuzz regressions: every input kept under `tests/data/fuzz/<target>/` goes through
//! the same `schedlab::fuzz` target function the fuzzer runs (see
//! `docs/fuzzing.md`), so that a case the fuzzer once found — or a hostile input
//! written by hand — keeps meeting the contract: rejected with an `InputError` that
//! says something, or run to completion; never a panic. Inputs that still fail wait
//! in `fuzz/findings/<target>/` until they are fixed, then move here.

use std::path::Path;

#[test]
fn every_kept_input_meets_the_contract() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz");
    let mut seen = 0;
    for target in schedlab::fuzz::TARGETS {
        let run = schedlab::fuzz::by_name(target).expect("a target of TARGETS");
        let dir = root.join(target);
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<_> = rd.map(|e| e.expect("directory entry").path()).collect();
        files.sort();
        for f in files {
            let data = std::fs::read(&f).expect("reading a kept input");
            eprintln!("{target}: {}", f.display());
            run(&data);
            seen += 1;
        }
    }
    assert!(seen > 0, "no kept inputs under {}", root.display());
}

#[test]
fn the_scenario_target_applies_set_overrides() {
    // An override after `#--set` takes effect: an unknown machine preset set there is
    // rejected, which the target turns into a (passing) InputError; a panic would fail.
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/demo.toml"),
    )
    .unwrap();
    let mut doc = schedlab::config::Doc::parse(&base, Path::new("demo.toml")).unwrap();
    doc.set("machine.preset=no-such-machine").unwrap();
    let err = schedlab::experiment::Scenario::from_doc(doc, &Default::default()).unwrap_err();
    assert!(err.msg.contains("no-such-machine"), "{err}");
    schedlab::fuzz::scenario(
        format!("{base}\n#--set\nmachine.preset=no-such-machine\n").as_bytes(),
    );
}

#[test]
fn target_names_resolve() {
    for t in schedlab::fuzz::TARGETS {
        assert!(schedlab::fuzz::by_name(t).is_some(), "{t}");
    }
    assert!(schedlab::fuzz::by_name("nope").is_none());
}
