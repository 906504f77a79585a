//! The load generator against a test server started here, which counts what it
//! answers and can stall.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bench::corpus::Request;
use bench::http::report::{render_csv, Report};
use bench::http::{closed_loop, open_loop, prepare_corpus, LoadConfig, Target};

/// A blocking HTTP/1.1 server, one thread per connection.
struct Server {
    url: String,
    answered: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
}

/// Starts a server; request number `stall.0` (0-based, across connections) is
/// answered after `stall.1`.
fn server(stall: Option<(u64, Duration)>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let answered = Arc::new(AtomicU64::new(0));
    let connections = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(AtomicU64::new(0));
    let (a, c) = (Arc::clone(&answered), Arc::clone(&connections));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            c.fetch_add(1, Ordering::SeqCst);
            let (a, seen) = (Arc::clone(&a), Arc::clone(&seen));
            std::thread::spawn(move || serve(stream, &a, &seen, stall));
        }
    });
    Server {
        url,
        answered,
        connections,
    }
}

fn serve(
    stream: TcpStream,
    answered: &AtomicU64,
    seen: &AtomicU64,
    stall: Option<(u64, Duration)>,
) {
    stream.set_nodelay(true).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut length = 0usize;
        let mut close = false;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let lower = h.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if lower == "connection: close" {
                close = true;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let n = seen.fetch_add(1, Ordering::SeqCst);
        if let Some((at, pause)) = stall {
            if n == at {
                std::thread::sleep(pause);
            }
        }
        let status = if line.contains("attack") {
            "403 Forbidden"
        } else {
            "200 OK"
        };
        let resp = format!(
            "HTTP/1.1 {status}\r\nContent-Length: 5\r\n{}\r\nhello",
            if close { "Connection: close\r\n" } else { "" }
        );
        // Counted before the write: once the client has read the response, the
        // count includes it (counted after, a loaded machine could let the client
        // finish and compare first).
        answered.fetch_add(1, Ordering::SeqCst);
        if out.write_all(resp.as_bytes()).is_err() {
            return;
        }
        if close {
            return;
        }
    }
}

fn corpus() -> Vec<Request> {
    let req = |target: &str, body: &str| Request {
        name: "t".into(),
        method: if body.is_empty() { "GET" } else { "POST" }.into(),
        target: target.into(),
        version: "HTTP/1.1".into(),
        headers: vec![("Accept".into(), "*/*".into())],
        body: body.into(),
        resp_len: 64,
    };
    vec![req("/a", ""), req("/b?attack=1", ""), req("/c", "x=1&y=2")]
}

fn config(url: &str, connections: usize, duration_ms: u64, keep_alive: bool) -> LoadConfig {
    LoadConfig {
        target: Target::parse(url).unwrap(),
        connections,
        threads: 2,
        duration: Duration::from_millis(duration_ms),
        keep_alive,
        timeout: Duration::from_secs(5),
        progress: false,
        requests: None,
    }
}

#[test]
fn closed_loop_counts_match_the_servers_count() {
    for keep_alive in [true, false] {
        let s = server(None);
        let cfg = config(&s.url, 4, 400, keep_alive);
        let reqs = prepare_corpus(&corpus(), &cfg.target, keep_alive).unwrap();
        let r = closed_loop::run(&cfg, reqs).unwrap();
        assert!(r.requests > 20, "{r:?}");
        assert_eq!(r.errors.total(), 0, "{r:?}");
        assert_eq!(r.requests, s.answered.load(Ordering::SeqCst));
        // Every third request is the "attack" the server answers 403.
        let forbidden = r.statuses.get(&403).copied().unwrap_or(0);
        assert!(forbidden > 0 && forbidden < r.requests, "{r:?}");
        assert_eq!(r.status_range(200, 299) + forbidden, r.requests);
        let conns = s.connections.load(Ordering::SeqCst);
        assert_eq!(r.connections_opened, conns);
        if keep_alive {
            assert_eq!(conns, 4);
        } else {
            assert_eq!(conns, r.requests);
        }
        assert!(r.latency_us.p50 > 0.0 && r.latency_us.max >= r.latency_us.p99);
    }
}

#[test]
fn closed_loop_stops_after_the_requested_count() {
    let s = server(None);
    let mut cfg = config(&s.url, 7, 60_000, true);
    cfg.requests = Some(1234);
    let reqs = prepare_corpus(&corpus(), &cfg.target, true).unwrap();
    let r = closed_loop::run(&cfg, reqs).unwrap();
    assert_eq!(r.requests, 1234, "{r:?}");
    assert_eq!(s.answered.load(Ordering::SeqCst), 1234);
}

#[test]
fn open_loop_sends_the_scheduled_requests() {
    let s = server(None);
    let cfg = config(&s.url, 4, 500, true);
    let reqs = prepare_corpus(&corpus(), &cfg.target, true).unwrap();
    let r = open_loop::run(&cfg, reqs, 200.0).unwrap();
    assert_eq!(r.scheduled, Some(100));
    assert_eq!(r.requests, 100, "{r:?}");
    assert_eq!(r.unsent, Some(0));
    assert_eq!(s.answered.load(Ordering::SeqCst), 100);
    // 100 requests due over 0.5 s: the achieved rate is close to the intended one.
    assert!((r.requests_per_second - 200.0).abs() < 30.0, "{r:?}");
    // Sent on time (the server keeps up): the send lag is far below the interval's
    // worth of queueing a stall would cause.
    let lag = r.send_lag_us.unwrap();
    assert!(lag.p50 < 5_000.0, "send lag {lag:?}");
}

#[test]
fn open_loop_latency_includes_queueing_behind_a_stalled_server() {
    // One connection, a request every 5 ms, and the server stalls 400 ms on the
    // 10th: the ~80 requests due during the stall wait, and that wait is latency.
    let s = server(Some((10, Duration::from_millis(400))));
    let cfg = config(&s.url, 1, 1000, true);
    let reqs = prepare_corpus(&corpus(), &cfg.target, true).unwrap();
    let r = open_loop::run(&cfg, reqs, 200.0).unwrap();
    assert_eq!(r.requests, 200, "{r:?}");
    let l = r.latency_us;
    assert!(l.max >= 380_000.0, "max {l:?}");
    // Measured from the actual send, only one request would be slow; from the
    // intended time, the queue behind the stall is: at least a fifth over 100 ms.
    assert!(l.p90 >= 100_000.0, "p90 {l:?}");
    assert!(l.p50 < l.p90);
    // The wait happened before the send: the send lag shows it.
    let lag = r.send_lag_us.unwrap();
    assert!(lag.max >= 300_000.0, "send lag {lag:?}");
    // A closed loop over the same stall sees one slow request only.
    let s2 = server(Some((10, Duration::from_millis(400))));
    let cfg2 = config(&s2.url, 1, 600, true);
    let reqs2 = prepare_corpus(&corpus(), &cfg2.target, true).unwrap();
    let c = closed_loop::run(&cfg2, reqs2).unwrap();
    assert!(c.latency_us.max >= 380_000.0);
    assert!(c.latency_us.p90 < 100_000.0, "{:?}", c.latency_us);
}

#[test]
fn timeouts_are_counted_and_the_connection_replaced() {
    // The 4th request hangs for 1 s; the client gives up after 200 ms, opens a new
    // connection and goes on.
    let s = server(Some((3, Duration::from_millis(1000))));
    let mut cfg = config(&s.url, 1, 800, true);
    cfg.timeout = Duration::from_millis(200);
    let reqs = prepare_corpus(&corpus(), &cfg.target, true).unwrap();
    let r = closed_loop::run(&cfg, reqs).unwrap();
    assert_eq!(r.errors.timeout, 1, "{r:?}");
    assert_eq!(r.errors.total(), 1, "{r:?}");
    assert_eq!(r.connections_opened, 2, "{r:?}");
    assert!(r.requests > 3, "{r:?}");
    assert!(r.latency_us.max < 200_000.0, "{:?}", r.latency_us);
}

#[test]
fn connection_errors_are_counted_not_fatal() {
    // A port with nothing listening.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    drop(l);
    let cfg = config(&url, 2, 100, true);
    let reqs = prepare_corpus(&corpus(), &cfg.target, true).unwrap();
    let r = closed_loop::run(&cfg, reqs).unwrap();
    assert_eq!(r.requests, 0);
    assert!(r.errors.connect > 0, "{r:?}");
}

#[test]
fn reports_render_as_text_json_and_csv() {
    let s = server(None);
    let cfg = config(&s.url, 2, 200, true);
    let reqs = prepare_corpus(&corpus(), &cfg.target, true).unwrap();
    let closed = closed_loop::run(&cfg, Arc::clone(&reqs)).unwrap();
    let open = open_loop::run(&cfg, reqs, 100.0).unwrap();

    assert!(closed.send_lag_us.is_none());
    assert!(open.render_text().contains("send lag µs"));
    let text = closed.render_text();
    assert!(text.contains("closed loop, 2 connections"), "{text}");
    assert!(
        text.contains(&format!("{} requests in", closed.requests)),
        "{text}"
    );
    assert!(text.contains("Requests/sec:"), "{text}");
    assert!(open.render_text().contains("open loop at 100 requests/s"));

    let v: serde_json::Value = serde_json::to_value(&open).unwrap();
    assert_eq!(v["mode"], "open");
    assert_eq!(v["rate"], 100.0);
    assert_eq!(v["requests"], open.requests);
    assert!(v["latency_us"]["p99"].as_f64().unwrap() > 0.0);
    assert_eq!(
        v["statuses"]["200"].as_u64().unwrap() + v["statuses"]["403"].as_u64().unwrap(),
        open.requests
    );

    let csv = render_csv(&[closed.clone(), open.clone()]);
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0], Report::csv_header());
    let cols = rows[0].split(',').count();
    assert!(rows.iter().all(|r| r.split(',').count() == cols), "{csv}");
    let open_row: Vec<&str> = rows[2].split(',').collect();
    assert_eq!(open_row[0], "open");
    assert_eq!(open_row[5], "100");
    assert_eq!(open_row[7], open.requests.to_string());
}
