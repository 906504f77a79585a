//! End-to-end tests over 127.0.0.1 sockets: client -> proxy (CRS PL1 and small rule
//! sets) -> the built-in echo backend.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{admin, chunked_body, get, pattern, raw, start, Conn};

const CONFIG: &str = r#"
[[listener]]
address = "127.0.0.1:0"

[audit]
path = "{dir}/audit.log"

[admin]
address = "127.0.0.1:0"

[limits]
max_header_bytes = 8192

[[upstream]]
name = "echo"
addresses = ["{echo}"]
read_timeout_ms = 20000

[[upstream]]
name = "dead"
addresses = ["127.0.0.1:1"]

[[upstream]]
name = "flaky"
addresses = ["127.0.0.1:1", "{echo}"]

[[upstream]]
name = "slowpoke"
addresses = ["{echo}"]
read_timeout_ms = 300

[[route]]
upstream = "echo"
crs = { dir = "{crs}", paranoia = 1 }
bypass_extensions = ["png"]

[[route]]
path_prefix = "/detect"
upstream = "echo"
crs = { dir = "{crs}", paranoia = 1 }
engine = "DetectionOnly"

[[route]]
path_prefix = "/raw"
upstream = "echo"
rules_inline = """
SecRuleEngine On
SecRequestBodyAccess On
SecRequestBodyLimit 1048576
SecRequestBodyNoFilesLimit 1048576
SecRequestBodyLimitAction ProcessPartial
SecResponseBodyAccess On
SecResponseBodyMimeType text/html
SecResponseBodyLimit 65536
SecResponseBodyLimitAction ProcessPartial
SecAuditEngine RelevantOnly
SecRule REQUEST_BODY "@contains EVIL" "id:1,phase:2,deny,status:403,log,auditlog"
SecRule RESPONSE_BODY "@contains LEAK" "id:2,phase:4,deny,status:403,log,auditlog"
SecRule ARGS:go "@streq away" "id:3,phase:1,redirect:http://example.com/,log"
SecRule ARGS:drop "@streq me" "id:4,phase:1,drop,log"
"""

[[route]]
path_prefix = "/static"
upstream = "echo"
bypass_content_types = ["text/"]
rules_inline = """
SecRuleEngine On
SecResponseBodyAccess On
SecResponseBodyMimeType text/html application/octet-stream
SecRule ARGS:block "@streq yes" "id:11,phase:1,deny,status:403"
SecRule RESPONSE_STATUS "@streq 200" "id:12,phase:3,deny,status:403"
SecRule RESPONSE_BODY "@contains LEAK" "id:13,phase:4,deny,status:403"
"""

[[route]]
path_prefix = "/reject"
upstream = "echo"
rules_inline = """
SecRuleEngine On
SecRequestBodyAccess On
SecRequestBodyLimit 1000
SecRequestBodyNoFilesLimit 1000
SecRequestBodyLimitAction Reject
SecAuditEngine RelevantOnly
SecAuditLogRelevantStatus "^(?:5|4(?!04))"
"""

[[route]]
path_prefix = "/off"
upstream = "echo"
engine = "Off"

[[route]]
path_prefix = "/dead"
upstream = "dead"
engine = "Off"

[[route]]
path_prefix = "/flaky"
upstream = "flaky"
engine = "Off"

[[route]]
path_prefix = "/slow"
upstream = "slowpoke"
engine = "Off"
"#;

fn post(target: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST {target} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\nAccept: */*\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// `data=abc...` of `n` bytes (n = 0: empty).
fn form_body(n: usize) -> Vec<u8> {
    if n == 0 {
        return Vec::new();
    }
    let mut b = b"data=".to_vec();
    b.extend((0..n.saturating_sub(5)).map(|i| b'a' + (i % 26) as u8));
    b.truncate(n);
    b
}

fn form(target: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST {target} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\nAccept: */*\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

fn chunked_form(target: &str, body: &[u8], chunk: usize) -> Vec<u8> {
    chunked_with(target, body, chunk, "application/x-www-form-urlencoded")
}

fn chunked(target: &str, body: &[u8], chunk: usize) -> Vec<u8> {
    chunked_with(target, body, chunk, "application/octet-stream")
}

fn chunked_with(target: &str, body: &[u8], chunk: usize, ctype: &str) -> Vec<u8> {
    let mut r = format!(
        "POST {target} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\nAccept: */*\r\nContent-Type: {ctype}\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    r.extend(chunked_body(body, chunk));
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn benign_passes_and_injection_is_denied_with_audit_record() {
    let h = start(CONFIG).await;
    let ok = get(h.addr, "/hello?name=world").await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    let text = ok.text();
    assert!(text.contains("GET /hello?name=world"), "{text}");
    assert!(text.contains("x-forwarded-for: 127.0.0.1"), "{text}");
    assert!(text.contains("via: 1.1 palisade"), "{text}");

    let bad = get(h.addr, "/?id=1%27%20OR%20%271%27=%271").await;
    assert_eq!(bad.status, 403);
    let id = bad.header("x-unique-id").unwrap().to_string();
    assert!(bad.text().contains(&id), "{}", bad.text());

    let records = h.audit_records().await;
    let rec = records
        .iter()
        .find(|r| r.to_string().contains(&id))
        .unwrap_or_else(|| panic!("no audit record for {id}: {records:?}"));
    let s = rec.to_string();
    assert!(s.contains("942"), "SQLi rule ids in the record: {s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detection_only_logs_and_passes() {
    let h = start(CONFIG).await;
    let r = get(h.addr, "/detect/?id=1%27%20OR%20%271%27=%271").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let records = h.audit_records().await;
    assert!(
        records
            .iter()
            .any(|r| r.to_string().contains("/detect/?id=1")),
        "{records:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bodies_pass_byte_exact_fixed_and_chunked() {
    let h = start(CONFIG).await;
    // Through CRS (form bodies within SecRequestBodyNoFilesLimit; CRS refuses
    // application/octet-stream, rule 920420).
    for n in [0usize, 6, 1000, 100_000] {
        let body = form_body(n);
        let r = raw(h.addr, &form("/upload", &body)).await.unwrap();
        assert_eq!(r.status, 200, "CRS fixed {n}: {}", r.text());
        if n == 0 {
            // The echo backend describes a request without a body.
            assert!(r.text().contains("content-length: 0"), "{}", r.text());
        } else {
            assert!(r.body == body, "CRS fixed {n}: body differs");
        }
        if n == 0 {
            continue;
        }
        eprintln!("CRS chunked {n}");
        let r = raw(h.addr, &chunked_form("/upload", &body, 7777))
            .await
            .unwrap();
        assert_eq!(r.status, 200, "CRS chunked {n}");
        assert!(r.body == body, "CRS chunked {n}: body differs");
    }
    // Large bodies: the engine reads 1 MiB (ProcessPartial), the rest is streamed.
    for n in [5_000_000u64, 50_000_000] {
        let body = pattern(n);
        eprintln!("raw fixed {n}");
        let r = raw(h.addr, &post("/raw/up", &body)).await.unwrap();
        assert_eq!(r.status, 200, "raw fixed {n}");
        assert!(r.body == body, "raw fixed {n}: body differs");
    }
    let body = pattern(20_000_000);
    let r = raw(h.addr, &chunked("/raw/up", &body, 1 << 20))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body == body, "raw chunked 20 MB: body differs");
    let r = raw(h.addr, &chunked("/off/up", &body, 333_333))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body == body, "engine off chunked 20 MB: body differs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_bodies_pass_byte_exact() {
    let h = start(CONFIG).await;
    for n in [0u64, 1, 70_000, 3_000_000] {
        let r = get(h.addr, &format!("/bytes/{n}")).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-length"), Some(n.to_string().as_str()));
        assert!(r.body == pattern(n), "fixed {n}");
        let r = get(h.addr, &format!("/chunked/{n}")).await;
        assert_eq!(r.status, 200);
        assert!(r.body == pattern(n), "chunked {n}");
    }
    let r = get(h.addr, "/off/bytes/50000000").await;
    assert!(r.body.len() == 50_000_000 && r.body == pattern(50_000_000));
    let r = get(h.addr, "/raw/chunked/50000000").await;
    assert!(r.body == pattern(50_000_000));
    // HEAD keeps the upstream's length and sends no body.
    let mut c = Conn::open(h.addr).await;
    c.send(b"HEAD /off/bytes/1234 HTTP/1.1\r\nHost: x\r\n\r\n")
        .await;
    let r = c.read("HEAD").await.unwrap();
    assert_eq!((r.status, r.header("content-length")), (200, Some("1234")));
    c.send(b"GET /off/bytes/3 HTTP/1.1\r\nHost: x\r\n\r\n")
        .await;
    assert_eq!(c.read("GET").await.unwrap().body, pattern(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_limits_reject_and_process_partial() {
    let h = start(CONFIG).await;
    // Reject: over SecRequestBodyLimit gets 413.
    let r = raw(h.addr, &post("/reject/x", &[b'a'; 2000]))
        .await
        .unwrap();
    assert_eq!(r.status, 413);
    // Audited through SecAuditLogRelevantStatus (no rule matched).
    let id = r.header("x-unique-id").unwrap().to_string();
    let records = h.audit_records().await;
    assert!(
        records.iter().any(|r| r.to_string().contains(&id)),
        "413 audited: {records:?}"
    );
    let r = raw(h.addr, &post("/reject/x", &[b'a'; 900])).await.unwrap();
    assert_eq!(r.status, 200);
    // ProcessPartial: a match inside the inspected first MiB blocks ...
    let mut body = pattern(3_000_000);
    body[500_000..500_004].copy_from_slice(b"EVIL");
    let r = raw(h.addr, &post("/raw/x", &body)).await.unwrap();
    assert_eq!(r.status, 403);
    // ... one beyond it is not seen, and the whole body is forwarded.
    let mut body = pattern(3_000_000);
    body[2_000_000..2_000_004].copy_from_slice(b"EVIL");
    let r = raw(h.addr, &post("/raw/x", &body)).await.unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body == body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_body_rules_redirect_and_drop() {
    let h = start(CONFIG).await;
    let r = get(h.addr, "/raw/say/hello-LEAK-there").await;
    assert_eq!(r.status, 403);
    let r = get(h.addr, "/raw/say/fine").await;
    assert_eq!((r.status, r.text().as_str()), (200, "fine"));
    let r = get(h.addr, "/raw/x?go=away").await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("http://example.com/"));
    let mut c = Conn::open(h.addr).await;
    c.send(b"GET /raw/x?drop=me HTTP/1.1\r\nHost: x\r\n\r\n")
        .await;
    assert!(
        c.read("GET").await.is_none(),
        "drop closes without an answer"
    );
    // Static bypass: no inspection for .png, counted as such.
    let r = get(h.addr, "/img/a.png?id=1%27%20OR%20%271%27=%271").await;
    assert_eq!(r.status, 200);
    let r = get(h.addr, "/img/b.PNG").await;
    assert_eq!(r.status, 200);
    let admin_addr = h.server().admin_addr().unwrap();
    assert_metric(
        admin_addr,
        r#"palisade_requests_total{route="*/",method_class="read",decision="bypassed"} 2"#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_of_bypassed_media_types_skip_response_inspection_and_are_counted() {
    let h = start(CONFIG).await;
    // text/html is under the route's `text/`: phases 3 and 4 do not run.
    let r = get(h.addr, "/static/say/hello-LEAK-there").await;
    assert_eq!((r.status, r.text().as_str()), (200, "hello-LEAK-there"));
    // Another media type is inspected: the phase-3 rule denies it.
    let r = get(h.addr, "/static/bytes/10").await;
    assert_eq!(r.status, 403);
    // The request itself is still inspected.
    let r = get(h.addr, "/static/say/fine?block=yes").await;
    assert_eq!(r.status, 403);
    let admin_addr = h.server().admin_addr().unwrap();
    assert_metric(admin_addr, "palisade_responses_bypassed_total 1\n").await;
}

/// Asserts the admin listener's `/metrics` come to contain `want`. A request is
/// counted when its response body has been sent, which may be just after the
/// client read it: poll briefly.
async fn assert_metric(admin_addr: std::net::SocketAddr, want: &str) {
    let mut metrics = String::new();
    for _ in 0..100 {
        metrics = admin(admin_addr, "GET", "/metrics").await.text();
        if metrics.contains(want) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("{want} not in:\n{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smuggling_probes_get_400() {
    let h = start(CONFIG).await;
    let probes: &[(&str, &[u8])] = &[
        ("CL+TE", b"POST /off/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        ("TE+CL", b"POST /off/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n"),
        ("duplicate CL", b"POST /off/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde"),
        ("CL list", b"POST /off/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4, 5\r\n\r\nabcde"),
        ("CL sign", b"POST /off/ HTTP/1.1\r\nHost: x\r\nContent-Length: +4\r\n\r\nabcd"),
        ("TE not chunked", b"POST /off/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"),
        ("TE chunked not last", b"POST /off/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n"),
        ("bad chunk size", b"POST /off/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"),
        ("0x chunk size", b"POST /off/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n"),
        ("chunk without CRLF", b"POST /off/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"),
        ("bad chunk size, CRS route", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nhello\r\n0\r\n\r\n"),
        ("obs-fold", b"GET /off/ HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n"),
        ("bare LF", b"GET /off/ HTTP/1.1\nHost: x\n\n\r\n\r\n"),
        ("space before colon", b"GET /off/ HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\nhello"),
        ("no Host", b"GET /off/ HTTP/1.1\r\n\r\n"),
        ("two Hosts", b"GET /off/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        ("HTTP/2 preface on plain", b"GET /off/ HTTP/2.0\r\nHost: a\r\n\r\n"),
        ("NUL in value", b"GET /off/ HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n"),
    ];
    for (name, bytes) in probes {
        let mut c = Conn::open(h.addr).await;
        c.send(bytes).await;
        let r = c.read("POST").await;
        let status = r.as_ref().map(|r| r.status);
        assert_eq!(status, Some(400), "{name}: {:?}", r.map(|r| r.text()));
        assert!(c.closed().await, "{name}: connection closed after 400");
    }
    // Oversize head: 431.
    let big = format!(
        "GET /off/ HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(10_000)
    );
    assert_eq!(raw(h.addr, big.as_bytes()).await.unwrap().status, 431);
    // After all that, the proxy still serves.
    assert_eq!(get(h.addr, "/off/fine").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_and_pipelining_answer_in_order() {
    // Batched writes (the default) and unbatched ones give the same answers.
    assert!(
        proxy::config::parse(&proxy::config::Source {
            path: "p.toml".into(),
            text: String::new(),
        })
        .unwrap()
        .batch_writes
    );
    pipelining_in_order(CONFIG).await;
    pipelining_in_order(&format!("batch_writes = false\n{CONFIG}")).await;
}

async fn pipelining_in_order(config: &str) {
    let h = start(config).await;
    let mut c = Conn::open(h.addr).await;
    let mut burst = Vec::new();
    burst.extend_from_slice(b"GET /off/bytes/5 HTTP/1.1\r\nHost: x\r\n\r\n");
    burst.extend_from_slice(&post("/off/echo", b"second"));
    burst.extend_from_slice(
        b"GET /say/third HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\nAccept: */*\r\n\r\n",
    );
    c.send(&burst).await;
    assert_eq!(c.read("GET").await.unwrap().body, pattern(5));
    assert_eq!(c.read("POST").await.unwrap().body, b"second");
    let third = c.read("GET").await.unwrap();
    assert_eq!((third.status, third.text().as_str()), (200, "third"));
    // Expect: 100-continue.
    c.send(b"POST /off/e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        .await;
    let mut c2 = c;
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    c2.send(b"abc").await;
    let r = c2.read("POST").await.unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"abc"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_failures_give_502_and_504() {
    let h = start(CONFIG).await;
    let r = get(h.addr, "/dead/x").await;
    assert_eq!(r.status, 502);
    let r = get(h.addr, "/slow/2000").await;
    assert_eq!(r.status, 504);
    // A group with a dead and a live address: every request succeeds (connect
    // failure retried on the next address, the dead one then skipped).
    for _ in 0..6 {
        assert_eq!(get(h.addr, "/flaky/x").await.status, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_upgrade_is_inspected_then_passed_through() {
    let h = start(CONFIG).await;
    let handshake = |target: &str| {
        format!(
            "GET {target} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\nAccept: */*\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        )
    };
    // The handshake goes through the rules like any request.
    let r = raw(
        h.addr,
        handshake("/ws?id=1%27%20OR%20%271%27=%271").as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 403);
    let mut c = Conn::open(h.addr).await;
    c.send(handshake("/ws?room=lobby").as_bytes()).await;
    let r = c.read("GET").await.unwrap();
    assert_eq!(r.status, 101, "{}", r.text());
    assert_eq!(r.header("upgrade"), Some("websocket"));
    // After the switch, bytes pass untouched both ways (the backend echoes them),
    // including ones that would look like an attack in HTTP.
    for msg in [
        &b"\x81\x05hello"[..],
        b"1' OR '1'='1",
        &[0u8, 255, 13, 10, 13, 10],
    ] {
        c.send(msg).await;
        let mut got = Vec::new();
        while got.len() < msg.len() {
            got.extend(c.read_raw().await.expect("echoed bytes"));
        }
        assert_eq!(got, msg);
    }
}

#[test]
fn example_configuration_loads_and_compiles() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/palisade.toml");
    let (config, source) = proxy::config::load(&path).unwrap();
    let rt = proxy::runtime::compile(&config, &source).unwrap();
    assert_eq!(rt.routes.len(), 3);
    assert!(rt.rules_loaded > 500, "{}", rt.rules_loaded);
    assert_eq!(
        rt.route("api.example.com", "/x").unwrap().mode,
        proxy::runtime::Mode::DetectionOnly
    );
    assert_eq!(
        rt.route("other", "/healthcheck/a").unwrap().mode,
        proxy::runtime::Mode::Off
    );
    assert_eq!(
        rt.route("other", "/a").unwrap().mode,
        proxy::runtime::Mode::On
    );
}

/// What the upstream receives: the client's lines in order, hop-by-hop lines and the
/// ones `Connection` names removed, `X-Forwarded-For` / `Via` appended to the
/// client's, the proxy's own `X-Forwarded-Proto`/`-Host`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_head_drops_hop_by_hop_lines_and_appends_forwarding_ones() {
    let h = start(CONFIG).await;
    let r = raw(
        h.addr,
        b"GET /off/show HTTP/1.1\r\nHost: app.test:8080\r\nX-First: 1\r\nConnection: keep-alive, X-Secret\r\nX-Secret: s\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nX-Forwarded-For: 10.0.0.1\r\nX-Forwarded-Proto: gopher\r\nVia: 1.0 edge\r\nX-Last: 2\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    let text = r.text();
    let lines: Vec<&str> = text.lines().skip(2).collect();
    assert!(
        lines.contains(&"x-first: 1") && lines.contains(&"x-last: 2"),
        "{text}"
    );
    assert!(lines.contains(&"host: app.test:8080"), "{text}");
    for gone in ["x-secret", "keep-alive", "te:", "connection"] {
        assert!(!text.contains(gone), "{gone} forwarded: {text}");
    }
    assert!(
        lines.contains(&"x-forwarded-for: 10.0.0.1, 127.0.0.1"),
        "{text}"
    );
    assert!(lines.contains(&"x-forwarded-proto: http"), "{text}");
    assert!(lines.contains(&"x-forwarded-host: app.test"), "{text}");
    assert!(lines.contains(&"via: 1.0 edge, 1.1 palisade"), "{text}");
}
