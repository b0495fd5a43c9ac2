//! Parquet outputs (`sweep --parquet`, `compare --parquet`) hold exactly the rows of
//! the CSV / JSON beside them, and `sweep --dask` without the Python package says
//! what is missing.

mod common;
use common::*;

use arrow_array::{Array, Float64Array, Int64Array, RecordBatch, StringArray};
use std::path::Path;

fn read_parquet(p: &Path) -> RecordBatch {
    let bytes = bytes::Bytes::from(std::fs::read(p).unwrap());
    let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = r.map(Result::unwrap).collect();
    arrow_select_concat(&batches)
}

/// The batches of one small file: one batch (the writer's default row group holds
/// a million rows).
fn arrow_select_concat(b: &[RecordBatch]) -> RecordBatch {
    assert_eq!(b.len(), 1, "one row group expected");
    b[0].clone()
}

fn col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> &'a T {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap()
}

const SCENARIO: &str = r#"
[machine]
preset = "juno-r0"
[run]
duration_ms = 4
noise = 0.05
[workload]
kind = "tasks"
[[workload.task]]
name = "w"
count = 3
program = [ { op = "loop", body = [ { op = "compute", work = "200us" }, { op = "sleep", time = "300us" } ] } ]
"#;

#[test]
fn sweep_parquet_holds_the_csv_rows() {
    let d = tmpdir("tables", "sweep");
    let sc = d.join("s.toml");
    std::fs::write(&sc, SCENARIO).unwrap();
    let out = d.join("out");
    let o = bin()
        .args(["sweep", sc.to_str().unwrap(), "--grid"])
        .args([
            "machine.preset=juno-r0,hikey960",
            "--runs",
            "2",
            "--parquet",
            "-q",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    ok_stdout(&o);
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let t = read_parquet(&out.join("results.parquet"));
    let names: Vec<String> = t
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names,
        ["point", "machine.preset", "seed", "metric", "value"]
    );
    assert_eq!(t.num_rows(), rows.len());
    assert!(rows.len() > 4 * 5, "{} rows", rows.len());
    let point = col::<Int64Array>(&t, "point");
    let preset = col::<StringArray>(&t, "machine.preset");
    let seed = col::<Int64Array>(&t, "seed");
    let metric = col::<StringArray>(&t, "metric");
    let value = col::<Float64Array>(&t, "value");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(point.value(i).to_string(), r[0]);
        assert_eq!(preset.value(i), r[1]);
        assert_eq!(seed.value(i).to_string(), r[2]);
        assert_eq!(metric.value(i), r[3]);
        assert_eq!(value.value(i), r[4].parse::<f64>().unwrap(), "row {i}");
    }
}

#[test]
fn compare_parquet_holds_the_json_per_seed_table() {
    let d = tmpdir("tables", "compare");
    let sc = d.join("s.toml");
    std::fs::write(&sc, SCENARIO).unwrap();
    let (pq, js) = (d.join("c.parquet"), d.join("c.json"));
    let o = bin()
        .args([
            "compare",
            sc.to_str().unwrap(),
            "--a",
            "",
            "--b",
            "NO_SIS_PROP",
        ])
        .args(["--runs", "3", "-q", "--parquet", pq.to_str().unwrap()])
        .args(["--json", js.to_str().unwrap()])
        .output()
        .unwrap();
    ok_stdout(&o);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&js).unwrap()).unwrap();
    let per_seed = j["per_seed"].as_array().unwrap();
    let metrics = j["rows"].as_array().unwrap().len();
    assert_eq!(per_seed.len(), 2 * 3 * metrics);
    let t = read_parquet(&pq);
    assert_eq!(t.num_rows(), per_seed.len());
    let (arm, spec) = (
        col::<StringArray>(&t, "arm"),
        col::<StringArray>(&t, "spec"),
    );
    let (seed, value) = (
        col::<Int64Array>(&t, "seed"),
        col::<Float64Array>(&t, "value"),
    );
    let metric = col::<StringArray>(&t, "metric");
    for (i, v) in per_seed.iter().enumerate() {
        assert_eq!(arm.value(i), v["arm"].as_str().unwrap());
        assert_eq!(seed.value(i) as u64, v["seed"].as_u64().unwrap());
        assert_eq!(metric.value(i), v["metric"].as_str().unwrap());
        assert_eq!(value.value(i), v["value"].as_f64().unwrap());
        assert_eq!(
            spec.value(i),
            if arm.value(i) == "a" {
                ""
            } else {
                "NO_SIS_PROP"
            }
        );
    }
    // Each row's centre is the mean of its per-seed values (amean metrics).
    let row = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "context_switches")
        .unwrap();
    let b_mean: f64 = per_seed
        .iter()
        .filter(|v| v["arm"] == "b" && v["metric"] == "context_switches")
        .map(|v| v["value"].as_f64().unwrap())
        .sum::<f64>()
        / 3.0;
    assert!((row["b_centre"].as_f64().unwrap() - b_mean).abs() < 1e-9);
    assert!(!value.is_null(0));
}

#[test]
fn sweep_on_dask_without_the_package_says_so() {
    let d = tmpdir("tables", "dask");
    let o = bin()
        .env("SCHEDLAB_PYTHON", d.join("no-such-python"))
        .args([
            "sweep",
            "scenarios/demo.toml",
            "--grid",
            "run.seed=1,2",
            "--dask",
        ])
        .args(["tcp://127.0.0.1:1", "-q", "--out"])
        .arg(d.join("out"))
        .current_dir(root())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--dask") && err.contains("pip install"),
        "{err}"
    );
    // `--jobs` is the local pool's: it does not combine with `--dask`.
    let (code, err) = run_err(&[
        "sweep",
        "scenarios/demo.toml",
        "--grid",
        "run.seed=1",
        "--dask",
        "tcp://x:1",
        "--jobs",
        "2",
        "--out",
        "/tmp/x",
    ]);
    assert_eq!(code, 2, "{err}");
}
