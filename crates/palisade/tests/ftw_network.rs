//! The whole CRS regression suite over real sockets, as go-ftw runs it: `palisade
//! serve` (this build's binary) with CRS in DetectionOnly at blocking paranoia
//! level 4 (`ftw::http_target::network_test_config`: the regression README's setup
//! plus the marker rule), the CRS test backend (`/reflect`) behind it, and
//! `palisade ftw --target URL --log AUDIT_LOG` reading each stage's rule ids from
//! the proxy's JSON audit log between marker requests.
//!
//! Every failing case must be listed with its reason in
//! `tests/crs-overrides-network.yaml` (repository root); an unlisted failure or a
//! listed pass fails the test, and at least 99.5% of the cases must pass.

#![allow(clippy::unwrap_used)] // tests fail by panicking

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ftw::reflect_backend::ReflectBackend;

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn crs() -> PathBuf {
    let dir = root().join("../shared/crs");
    assert!(
        dir.join("rules").is_dir(),
        "missing CRS test data at {}",
        dir.display()
    );
    dir
}

/// Kills the proxy when the test ends, however it ends.
struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `palisade serve --config CONFIG` and returns it with its listening address
/// (read from its standard error; the rest of that output is drained on a thread).
fn serve(config: &Path) -> (Proxy, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_palisade"))
        .args(["serve", "--config"])
        .arg(config)
        .args(["--log-level", "warn"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let proxy = Proxy(child);
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(addr) = line.strip_prefix("palisade: listening on ") {
                    let addr = addr.trim().to_string();
                    // Keep draining so the proxy never blocks on a full pipe.
                    std::thread::spawn(move || while rx.recv().is_ok() {});
                    return (proxy, addr);
                }
                seen.push(line);
            }
            Err(_) => panic!("palisade serve did not start:\n{}", seen.join("\n")),
        }
    }
}

#[test]
fn crs_regression_suite_over_the_network() {
    let crs = crs();
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("crs-network.conf");
    std::fs::write(
        &rules,
        ftw::http_target::network_test_config(&crs, ftw::http_target::DEFAULT_MARKER_HEADER)
            .unwrap(),
    )
    .unwrap();
    let audit = dir.path().join("audit.log");
    let backend = ReflectBackend::start("127.0.0.1:0").unwrap();
    let config = dir.path().join("palisade.toml");
    std::fs::write(
        &config,
        format!(
            r#"shutdown_timeout_ms = 2000

[[listener]]
address = "127.0.0.1:0"

[forwarding]
x_forwarded = false
via = false

[audit]
path = "{audit}"
when_full = "block"

[[upstream]]
name = "crs-backend"
addresses = ["{backend}"]

[[route]]
upstream = "crs-backend"
rules = ["{rules}"]
"#,
            audit = audit.display(),
            backend = backend.addr(),
            rules = rules.display(),
        ),
    )
    .unwrap();

    let (_proxy, addr) = serve(&config);
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_palisade"))
        .current_dir(root())
        .arg("ftw")
        .arg("--crs")
        .arg(&crs)
        .arg("--target")
        .arg(format!("http://{addr}"))
        .arg("--log")
        .arg(&audit)
        .arg("--overrides")
        .arg(root().join("tests/crs-overrides-network.yaml"))
        .arg("--json")
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}):\n{stdout}\n{stderr}"));
    let summary = &report["summary"];
    let passed = summary["passed"].as_u64().unwrap();
    let failed = summary["failed"].as_u64().unwrap();
    let total = passed + failed;
    println!(
        "{passed} passed, {failed} failed of {total} in {:.1} s over http://{addr}",
        elapsed.as_secs_f64()
    );
    let failures: Vec<String> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "failed")
        .map(|c| format!("{}: {}", c["id"], c["reason"]))
        .collect();
    assert!(total > 4900, "only {total} cases ran\n{stderr}");
    assert!(
        out.status.success(),
        "verdict: {}\nfailures:\n{}",
        report["verdict"],
        failures.join("\n")
    );
    assert!(
        passed * 1000 >= total * 995,
        "{passed} of {total} passed (< 99.5%)\n{}",
        failures.join("\n")
    );
}
