//! Proxy-level limits: slow request heads, body size caps, unrouted requests.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use common::{chunked_body, raw, start, Conn, EchoConfig};

/// Body access on: the engine buffers the body, so a chunked body over the cap is
/// refused before anything goes upstream. (With a streamed body the upstream may
/// already have answered; the stream is then cut.)
fn config() -> String {
    EchoConfig {
        tables: "[limits]\nheader_timeout_ms = 300\nmax_body_bytes = 1000\n",
        route: "host = \"app.test\"",
        rules: "SecRuleEngine On\nSecRequestBodyAccess On\n\
                SecRequestBodyLimit 100000\nSecRequestBodyNoFilesLimit 100000\n",
        ..Default::default()
    }
    .toml()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_head_gets_408() {
    let h = start(&config()).await;
    let mut c = Conn::open(h.addr).await;
    let t = Instant::now();
    c.send(b"GET / HTTP/1.1\r\nHost: app.test\r\n").await;
    let r = c.read("GET").await.unwrap();
    assert_eq!(r.status, 408);
    assert!(t.elapsed() >= Duration::from_millis(250));
    assert!(c.closed().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_max_body_bytes_get_413() {
    let h = start(&config()).await;
    let mut req = b"POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 1001\r\n\r\n".to_vec();
    req.extend_from_slice(&[b'a'; 1001]);
    assert_eq!(raw(h.addr, &req).await.unwrap().status, 413);
    let mut req =
        b"POST / HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    req.extend(chunked_body(&[b'a'; 3 * 0x190], 0x190));
    assert_eq!(raw(h.addr, &req).await.unwrap().status, 413);
    let mut req = b"POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 1000\r\n\r\n".to_vec();
    req.extend_from_slice(&[b'a'; 1000]);
    let r = raw(h.addr, &req).await.unwrap();
    assert_eq!((r.status, r.body.len()), (200, 1000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unrouted_host_gets_404() {
    let h = start(&config()).await;
    let r = raw(
        h.addr,
        b"GET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    assert_eq!(r.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_heads_never_reach_the_upstream() {
    // A backend that only counts connections.
    let counter = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let counter_addr = counter.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let n = accepted.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = counter.accept().await {
            n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(s);
        }
    });
    let config = format!(
        "[[listener]]\naddress = \"127.0.0.1:0\"\n[[upstream]]\nname = \"c\"\naddresses = [\"{counter_addr}\"]\n[[route]]\nupstream = \"c\"\nengine = \"Off\"\n"
    );
    let h = start(&config).await;
    let probes: &[&[u8]] = &[
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde",
        b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n",
        b"GET / HTTP/1.1\nHost: x\n\n",
        b"GET /#x HTTP/1.1\r\nHost: x\r\n\r\n",
    ];
    for p in probes {
        assert_eq!(raw(h.addr, p).await.unwrap().status, 400);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
    // The counter does work as an upstream check: a valid request reaches it.
    let r = raw(h.addr, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(r.status, 502);
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// With `body_memory_bytes` small, a body the engine holds back goes to an unlinked
/// temporary file and still reaches the upstream byte-exact; small bodies stay in
/// memory, and a body the engine denies is never forwarded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_back_bodies_spill_to_a_temporary_file_and_forward_byte_exact() {
    let spill_dir = tempfile::tempdir().unwrap();
    let limits = format!(
        "[limits]\nbody_memory_bytes = 4096\nbody_temp_dir = \"{}\"\n",
        spill_dir.path().display()
    );
    let config = EchoConfig {
        tables: &limits,
        rules: "SecRuleEngine On\nSecRequestBodyAccess On\n\
                SecRequestBodyLimit 10000000\nSecRequestBodyNoFilesLimit 10000000\n\
                SecRule REQUEST_BODY \"@contains forbidden-marker\" \"id:1,phase:2,deny,status:403\"\n",
        ..Default::default()
    }
    .toml();
    let h = start(&config).await;
    let spilled = || {
        let text = h.server().shared().metrics.render();
        text.lines()
            .find_map(|l| l.strip_prefix("palisade_request_bodies_spilled_total "))
            .map(|v| v.trim().parse::<u64>().unwrap())
            .expect("spill counter exported")
    };
    // 3 MB with Content-Length, and 1 MB chunked.
    let body = common::pattern(3_000_000);
    let mut req = format!(
        "POST /upload HTTP/1.1\r\nHost: app.test\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    let r = raw(h.addr, &req).await.unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body == body, "3 MB body forwarded byte-exact");
    assert_eq!(spilled(), 1);
    let body = common::pattern(1_000_000);
    let mut req = b"POST /upload HTTP/1.1\r\nHost: app.test\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    req.extend(chunked_body(&body, 70_000));
    let r = raw(h.addr, &req).await.unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body == body, "chunked body forwarded byte-exact");
    assert_eq!(spilled(), 2);
    // Small: in memory.
    let mut req =
        b"POST / HTTP/1.1\r\nHost: app.test\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n"
            .to_vec();
    req.extend_from_slice(&[b'x'; 100]);
    let r = raw(h.addr, &req).await.unwrap();
    assert_eq!((r.status, r.body.len()), (200, 100));
    assert_eq!(spilled(), 2);
    // Denied in phase 2 after spilling: 403, nothing forwarded.
    let mut body = common::pattern(200_000);
    body.extend_from_slice(b"forbidden-marker");
    let mut req = format!(
        "POST / HTTP/1.1\r\nHost: app.test\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    assert_eq!(raw(h.addr, &req).await.unwrap().status, 403);
    assert_eq!(spilled(), 3);
    // The spill files were unlinked when created: the directory stays empty.
    assert_eq!(std::fs::read_dir(spill_dir.path()).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_temp_dir_that_does_not_exist_is_a_configuration_error() {
    let text = "[[listener]]\naddress = \"127.0.0.1:0\"\n[limits]\nbody_temp_dir = \"/nonexistent/palisade-spill\"\n[[upstream]]\nname = \"u\"\naddresses = [\"127.0.0.1:9\"]\n[[route]]\nupstream = \"u\"\nengine = \"Off\"\n";
    let source = proxy::config::Source {
        path: "p.toml".into(),
        text: text.to_string(),
    };
    let config = proxy::config::parse(&source).unwrap();
    let e = proxy::runtime::compile(&config, &source).unwrap_err();
    assert_eq!(e.line, 4, "{e}");
    assert!(e.to_string().contains("limits.body_temp_dir"), "{e}");
}
