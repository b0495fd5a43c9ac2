//! The HTML report in a real browser: `schedlab compare --report` on a small
//! scenario, opened in headless Chromium (Debian's `chromium`, installed by
//! `.ci/run`). The page must load without console messages (it has no script and
//! fetches nothing), every plot's `<svg>` must be in the DOM Chromium built, and a
//! screenshot must not be blank (many distinct colours, no colour covering almost
//! everything).
//!
//! Without Chromium the test fails under CI (env `CI` set) and is skipped otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    let fixed = Path::new("/usr/bin/chromium");
    if fixed.exists() {
        return Some(fixed.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-report-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Chromium with the flags that work as root in a container, fresh profile.
fn chrome(bin: &Path, dir: &Path, extra: &[&str], url: &str) -> std::process::Output {
    let profile = dir.join(format!("profile-{}", extra.len()));
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg("--window-size=1200,900")
    .args(extra)
    .arg(url);
    c.output().expect("chromium runs")
}

#[test]
fn compare_report_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!(
                "chromium is not installed: the report test needs it under CI \
                 (.ci/run installs it with apt-get install -y chromium)"
            );
        }
        println!("skipped: chromium not installed");
        return;
    };
    let dir = scratch();
    let scenario = dir.join("tiny.toml");
    std::fs::write(
        &scenario,
        "[machine]\npreset = \"juno-r0\"\n[run]\nseed = 3\nnoise = 0.05\n\
         [workload]\nkind = \"hackbench\"\ngroups = 1\nfds = 4\nloops = 20\n",
    )
    .unwrap();
    let report = dir.join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .arg("compare")
        .arg(&scenario)
        .args([
            "--a",
            "",
            "--b",
            "NO_WAKEUP_PREEMPTION",
            "--runs",
            "3",
            "-q",
        ])
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "compare failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&report).unwrap();
    // The plots the file declares, by name.
    let plots: Vec<&str> = html
        .split("data-plot=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    assert!(plots.len() >= 10, "only {} plots", plots.len());
    assert!(plots.contains(&"latency-cdf") && plots.contains(&"cpu-heatmap"));
    let url = format!("file://{}", report.canonicalize().unwrap().display());

    // 1. The DOM Chromium built, and its console.
    let dom = chrome(
        &bin,
        &dir,
        &["--enable-logging=stderr", "--v=0", "--dump-dom"],
        &url,
    );
    assert!(dom.status.success(), "chromium --dump-dom failed");
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    let log = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(
        !log.contains("ERR_FILE_NOT_FOUND") && !log.contains("net::ERR"),
        "a resource failed to load:\n{log}"
    );
    assert!(dom_text.contains("<h1>schedlab compare"));
    for p in &plots {
        let at = dom_text
            .find(&format!("data-plot=\"{p}\""))
            .unwrap_or_else(|| panic!("plot {p} missing from the DOM"));
        let fig = &dom_text[at..];
        let end = fig.find("</figure>").expect("figure closes");
        assert!(
            fig[..end].contains("<svg") && fig[..end].contains("</svg>"),
            "plot {p} has no <svg> in the DOM"
        );
    }
    assert!(dom_text.matches("<svg").count() >= plots.len());

    // 2. A screenshot that is not blank.
    let png_path = dir.join("out.png");
    let shot = chrome(
        &bin,
        &dir,
        &[&format!("--screenshot={}", png_path.display())],
        &url,
    );
    assert!(shot.status.success(), "chromium --screenshot failed");
    let file = std::io::BufReader::new(std::fs::File::open(&png_path).unwrap());
    let mut reader = png::Decoder::new(file).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let ch = info.color_type.samples();
    assert!(ch >= 3, "unexpected colour type {:?}", info.color_type);
    assert_eq!((info.width, info.height), (1200, 900));
    let mut colours: BTreeMap<[u8; 3], u64> = BTreeMap::new();
    for px in buf[..info.buffer_size()].chunks_exact(ch) {
        *colours.entry([px[0], px[1], px[2]]).or_default() += 1;
    }
    let total = (info.width * info.height) as u64;
    let top = colours.values().max().copied().unwrap_or(0);
    assert!(
        colours.len() >= 50,
        "only {} distinct colours: blank page?",
        colours.len()
    );
    assert!(
        top * 100 < total * 97,
        "one colour covers {:.1}% of the screenshot",
        top as f64 * 100.0 / total as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sweep --report` reads the sweep's own results file: a rerun that finds every
/// run done still reports every point, and the report is the same file.
#[test]
fn sweep_report_covers_resumed_runs() {
    let dir = std::env::temp_dir().join(format!("schedlab-sweep-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("tiny.toml");
    std::fs::write(
        &scenario,
        "[machine]\npreset = \"juno-r0\"\n[run]\nseed = 3\n\
         [workload]\nkind = \"hackbench\"\ngroups = 1\nfds = 2\nloops = 10\n",
    )
    .unwrap();
    let out = dir.join("out");
    let report = dir.join("sweep.html");
    let sweep = |grid: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .arg("sweep")
            .arg(&scenario)
            .args(["--grid", grid, "--runs", "2", "-q", "--out"])
            .arg(&out)
            .arg("--report")
            .arg(&report)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(&report).unwrap()
    };
    // First only fds=2, then the full grid: the second run reuses the first's runs.
    let first = sweep("workload.fds=2");
    assert_eq!(first.matches("<div class=\"card\">").count(), 1);
    let full = sweep("workload.fds=2,3");
    assert_eq!(full.matches("<div class=\"card\">").count(), 2);
    assert!(
        full.contains("<code>workload.fds=2</code>")
            && full.contains("<code>workload.fds=3</code>")
    );
    assert!(full.contains("<div class=\"note\">seeds 3 4</div>"));
    // Nothing left to run: the same report, byte for byte.
    assert_eq!(sweep("workload.fds=2,3"), full);
    let _ = std::fs::remove_dir_all(&dir);
}
