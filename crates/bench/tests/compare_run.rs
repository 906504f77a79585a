//! The pieces of `palisade bench compare` that run processes and load: the built-in
//! backend under the load generator, CPU lists and pinning, the configurations
//! written for each target, and a whole run whose only target is skipped.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::sync::Arc;
use std::time::Duration;

use bench::compare::sweep::{BackendChoice, CompareConfig};
use bench::compare::targets::{nginx_config, palisade_config, Env, Kind};
use bench::compare::{backend, pin, sampler};
use bench::http::{self, LoadConfig, Target};

#[test]
fn builtin_backend_answers_the_load_generator() {
    let b = backend::start(None).unwrap();
    let corpus = bench::corpus::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/bench/standard-requests.json"
    )))
    .unwrap();
    let target = Target::parse(&format!("http://{}/", b.addr)).unwrap();
    let requests = http::prepare_corpus(&corpus, &target, true).unwrap();
    let cfg = LoadConfig {
        target,
        connections: 4,
        threads: 1,
        duration: Duration::from_millis(300),
        keep_alive: true,
        timeout: Duration::from_secs(5),
        progress: false,
        requests: None,
    };
    let sampler = sampler::Sampler::start(std::process::id(), Duration::from_millis(50));
    let r = http::closed_loop::run(&cfg, Arc::clone(&requests)).unwrap();
    let usage = sampler.finish();
    assert!(r.requests > 10, "{r:?}");
    assert_eq!(r.status_range(200, 200), r.requests);
    assert_eq!(r.errors.total(), 0);
    // Every response carries the fixed body.
    let head = r.bytes_received / r.requests - backend::BODY.len() as u64;
    assert!(head > 30 && head < 200);
    assert!(usage.samples >= 2 && usage.rss_kb_max > 0);
    let o = http::open_loop::run(&cfg, requests, 200.0).unwrap();
    assert_eq!(o.errors.total(), 0);
    assert!(o.requests >= 50, "{o:?}");
}

#[test]
fn cpu_lists() {
    assert_eq!(pin::parse_cpus("0").unwrap(), vec![0]);
    assert_eq!(pin::parse_cpus("0-2,1,5").unwrap(), vec![0, 1, 2, 5]);
    assert!(pin::parse_cpus("2-1").is_err());
    assert!(pin::parse_cpus("x").is_err());
    assert!(pin::parse_cpus("").is_err());
    assert_eq!(pin::format_cpus(&[0, 2]), "0,2");
    // Pinning a thread to CPU 0 works on any Linux machine.
    std::thread::spawn(|| pin::pin_current(&[0]).unwrap())
        .join()
        .unwrap();
}

#[test]
fn configurations() {
    let dir = std::path::Path::new("/tmp/x");
    let backend = "127.0.0.1:9000".parse().unwrap();
    let plain = nginx_config(dir, 8080, 2, Some(backend), None);
    assert!(plain.contains("worker_processes 2;"));
    assert!(plain.contains("listen 127.0.0.1:8080"));
    assert!(plain.contains("server 127.0.0.1:9000; keepalive 64;"));
    assert!(!plain.contains("modsecurity"));
    let module = std::path::Path::new("/m.so");
    let rules = std::path::Path::new("/r.conf");
    let ms = nginx_config(dir, 8080, 1, Some(backend), Some((module, rules)));
    assert!(ms.starts_with("load_module /m.so;"));
    assert!(ms.contains("modsecurity on;\nmodsecurity_rules_file /r.conf;"));
    let stat = nginx_config(dir, 8081, 1, None, None);
    assert!(stat.contains("return 200"));
    let off = palisade_config(8082, backend, None);
    assert!(off.contains("engine = \"Off\"") && !off.contains("crs"));
    let crs = palisade_config(8082, backend, Some((std::path::Path::new("/crs"), 2)));
    assert!(crs.contains("crs = { dir = \"/crs\", paranoia = 2 }"));
}

#[test]
fn a_run_reports_a_missing_peer_as_skipped() {
    let work = tempfile::tempdir().unwrap();
    let cfg = CompareConfig {
        palisade: "/nonexistent/palisade".into(),
        crs: "/nonexistent/crs".into(),
        corpus_name: "inline".into(),
        targets: vec![Kind::Coraza],
        rates: vec![100.0],
        sweep_duration: Duration::from_millis(100),
        closed_duration: Duration::from_millis(100),
        rounds: 2,
        closed_connections: 1,
        open_connections: 1,
        client_threads: 1,
        timeout: Duration::from_secs(1),
        server_cpus: None,
        client_cpus: Some(vec![0]),
        backend_cpus: None,
        server_threads: 1,
        backend: BackendChoice::Builtin,
        work_dir: work.path().to_path_buf(),
        sample_interval: Duration::from_millis(50),
    };
    let corpus = bench::corpus::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/bench/standard-requests.json"
    )))
    .unwrap();
    let c = bench::compare::run(&cfg, &corpus, &|_| {}).unwrap();
    assert_eq!(c.targets.len(), 1);
    assert!(c.targets[0].skipped.is_some());
    assert!(c.targets[0].closed.is_none() && c.targets[0].sweep.is_empty());
    // A skipped target is not tried again in the later rounds.
    assert!(c.targets[0].rounds.is_empty());
    assert_eq!(c.settings.rounds, 2);
    assert!(c.settings.backend.contains("built-in"));
    // A Palisade target whose binary is missing is skipped with the reason too.
    let env = Env::detect(
        "/nonexistent/palisade".into(),
        "/c".into(),
        work.path().into(),
    );
    assert_eq!(env.missing(Kind::PalisadeOff), None);
    let r = bench::compare::sweep::measure(
        &cfg,
        &env,
        Kind::PalisadeOff,
        "127.0.0.1:9".parse().unwrap(),
        &corpus,
        &|_| {},
    )
    .unwrap();
    assert!(
        r.skipped.as_deref().unwrap_or("").contains("did not start"),
        "{r:?}"
    );
}
