//! Proxy-level limits: slow request heads, body size caps, unrouted requests.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use common::{raw, start, Conn};

const CONFIG: &str = r#"
[[listener]]
address = "127.0.0.1:0"

[limits]
header_timeout_ms = 300
max_body_bytes = 1000

[[upstream]]
name = "echo"
addresses = ["{echo}"]

# Body access on: the engine buffers the body, so a chunked body over the cap is
# refused before anything goes upstream. (With a streamed body the upstream may
# already have answered; the stream is then cut.)
[[route]]
host = "app.test"
upstream = "echo"
rules_inline = """
SecRuleEngine On
SecRequestBodyAccess On
SecRequestBodyLimit 100000
SecRequestBodyNoFilesLimit 100000
"""
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_head_gets_408() {
    let h = start(CONFIG).await;
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
    let h = start(CONFIG).await;
    let mut req = b"POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 1001\r\n\r\n".to_vec();
    req.extend_from_slice(&[b'a'; 1001]);
    assert_eq!(raw(h.addr, &req).await.unwrap().status, 413);
    let mut req =
        b"POST / HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..3 {
        req.extend_from_slice(b"190\r\n");
        req.extend_from_slice(&[b'a'; 0x190]);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    assert_eq!(raw(h.addr, &req).await.unwrap().status, 413);
    let mut req = b"POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 1000\r\n\r\n".to_vec();
    req.extend_from_slice(&[b'a'; 1000]);
    let r = raw(h.addr, &req).await.unwrap();
    assert_eq!((r.status, r.body.len()), (200, 1000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unrouted_host_gets_404() {
    let h = start(CONFIG).await;
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
