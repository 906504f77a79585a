//! Hot reload under load (admin `POST /reload`), the admin endpoints, and graceful
//! shutdown draining in-flight requests.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{admin, get, start, Conn, EchoConfig};

fn config(blocked_word: &str) -> String {
    let rules = format!(
        "SecRuleEngine On\nSecRequestBodyAccess On\n\
         SecRule ARGS \"@contains {blocked_word}\" \"id:10,phase:1,deny,status:403,log\"\n"
    );
    EchoConfig {
        admin: true,
        rules: &rules,
        ..Default::default()
    }
    .toml()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_under_load_loses_no_request_and_applies_new_rules() {
    let h = start(&config("alpha")).await;
    let admin_addr = h.server().admin_addr().unwrap();
    assert_eq!(admin(admin_addr, "GET", "/healthz").await.status, 200);
    assert_eq!(admin(admin_addr, "GET", "/readyz").await.status, 200);
    assert_eq!(get(h.addr, "/?q=alpha").await.status, 403);
    assert_eq!(get(h.addr, "/?q=beta").await.status, 200);

    // Closed-loop clients on keep-alive connections, until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (stop, ok, failed, addr) = (stop.clone(), ok.clone(), failed.clone(), h.addr);
        clients.push(tokio::spawn(async move {
            let mut c = Conn::open(addr).await;
            while !stop.load(Ordering::Relaxed) {
                c.send(b"GET /?q=benign HTTP/1.1\r\nHost: x\r\n\r\n").await;
                match c.read("GET").await {
                    Some(r) if r.status == 200 => ok.fetch_add(1, Ordering::Relaxed),
                    _ => failed.fetch_add(1, Ordering::Relaxed),
                };
            }
        }));
    }
    let words = ["beta", "gamma"];
    for i in 0..20 {
        if i % 2 == 0 {
            let word = words[(i / 2) % 2];
            h.write_config(&config(word));
            let r = admin(admin_addr, "POST", "/reload").await;
            assert_eq!(r.status, 200, "reload {i}: {}", r.text());
            // The new rules take effect at once; the old ones are gone.
            assert_eq!(
                get(h.addr, &format!("/?q={word}")).await.status,
                403,
                "reload {i}"
            );
            assert_eq!(get(h.addr, "/?q=alpha").await.status, 200, "reload {i}");
        } else {
            // Invalid: alternately a TOML error and a rule that does not compile.
            let bad = if i % 4 == 1 {
                "[[listener]\naddress = 1\n".to_string()
            } else {
                config("x").replace("@contains", "@noSuchOperator")
            };
            h.write_config(&bad);
            let r = admin(admin_addr, "POST", "/reload").await;
            assert_eq!(r.status, 500, "reload {i}: {}", r.text());
            assert!(
                r.text().contains("palisade.toml:"),
                "located error: {}",
                r.text()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }
    assert_eq!(failed.load(Ordering::Relaxed), 0);
    assert!(
        ok.load(Ordering::Relaxed) > 20,
        "load ran: {}",
        ok.load(Ordering::Relaxed)
    );
    // The last valid configuration (gamma) is still in force after the invalid one.
    assert_eq!(get(h.addr, "/?q=gamma").await.status, 403);
    let metrics = admin(admin_addr, "GET", "/metrics").await.text();
    assert!(
        metrics.contains("palisade_reloads_total{result=\"ok\"} 10"),
        "{metrics}"
    );
    assert!(
        metrics.contains("palisade_reloads_total{result=\"failed\"} 10"),
        "{metrics}"
    );
    assert!(
        metrics.contains("palisade_blocked_total{rule=\"10\"}"),
        "{metrics}"
    );
    assert!(metrics.contains("palisade_waf_seconds_bucket{phase=\"request_headers\""));
    assert!(metrics.contains("palisade_rules_loaded 1"), "{metrics}");
    // The client `palisade reload` uses.
    h.write_config(&config("delta"));
    let (status, text) = proxy::admin::request_reload(admin_addr).await.unwrap();
    assert_eq!(status, 200, "{text}");
    assert!(text.starts_with("reloaded: 1 routes, 1 rules"), "{text}");
    assert_eq!(get(h.addr, "/?q=delta").await.status, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_drains_in_flight_requests() {
    let mut h = start(&config("alpha")).await;
    let addr = h.addr;
    // Three requests in flight (the backend answers after 700 ms) and one idle
    // keep-alive connection.
    let mut inflight = Vec::new();
    for _ in 0..3 {
        inflight.push(tokio::spawn(async move {
            let mut c = Conn::open(addr).await;
            c.send(b"GET /slow/700 HTTP/1.1\r\nHost: x\r\n\r\n").await;
            let r = c.read("GET").await;
            (r, c.closed().await)
        }));
    }
    let mut idle = Conn::open(addr).await;
    idle.send(b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(idle.read("GET").await.unwrap().status, 200);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let server = h.server.take().unwrap();
    let clean = server.shutdown().await;
    assert!(clean, "all connections finished before the timeout");
    for t in inflight {
        let (r, closed) = t.await.unwrap();
        let r = r.expect("in-flight request answered");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("connection"), Some("close"));
        assert!(closed);
    }
    assert!(idle.closed().await, "idle keep-alive connection closed");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no longer accepting"
    );
}
