//! The network target: each stage's request bytes ([`RawRequest::bytes`], exactly
//! what go-ftw sends) go over a real TCP connection to a running server (e.g.
//! `palisade serve` in front of [`crate::reflect_backend`]), and the rules that
//! matched are read from the server's log, as go-ftw does.
//!
//! # Markers
//!
//! Around every stage the target sends a *marker request*: `GET /` with
//! `Host: localhost` (as go-ftw, and as almost every CRS test) and the header
//! `X-CRS-Test: <unique token>` (the name is configurable). The server's rule set
//! has a rule that logs that header ([`marker_rule`]) and removes every other rule
//! for the marker request, so the log gets one line (or one JSON audit record)
//! holding the token. The target waits until the start marker's line is in the
//! log, sends the stage's request, reads the response, sends the end marker and
//! waits for its line: every line between the two belongs to the stage. Log lines
//! are read with [`LogTail`] and turned into rule ids and error-log lines by
//! [`LogEntries`] (Palisade's JSON audit log or a ModSecurity error log).
//!
//! A marker that does not show up in the log within the marker timeout is a
//! failure of the setup, reported as the stage's error (as go-ftw fails then).
//!
//! # Responses
//!
//! The status comes from the response head; the body is read by its framing
//! (`Content-Length`, chunked, or to the end of the connection), interim `1xx`
//! responses are skipped, and the whole response is kept for `response_contains`.
//! A connection that ends without any response, or an unparsable one, is the
//! stage's [`StageOutcome::error`] — what `expect_error` tests expect.
//!
//! Only `http://` targets are supported (no TLS).

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::chunked::{decode_chunked, ChunkError};
use crate::log_tail::{LogEntries, LogTail};
use crate::model::Stage;
use crate::request::RawRequest;
use crate::target::{StageOutcome, Target, TestRef};

/// The marker header go-ftw and CRS use by default.
pub const DEFAULT_MARKER_HEADER: &str = "X-CRS-Test";

/// The id of the marker rule of [`marker_rule`].
pub const MARKER_RULE_ID: u32 = 999_999;

/// Largest response kept (the rest is read and dropped).
const MAX_RESPONSE: usize = 16 * 1024 * 1024;

/// Settings of an [`HttpTarget`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTargetConfig {
    /// `http://host:port` (a path, if any, is ignored: each test gives its own).
    pub url: String,
    /// The server's log to read: Palisade's JSON audit log or a ModSecurity error log.
    pub log: PathBuf,
    /// The marker header's name.
    pub marker_header: String,
    /// How long to wait for a marker's line to appear in the log.
    pub marker_timeout: Duration,
    /// How long a stage's request may take (connect, send, response).
    pub request_timeout: Duration,
}

impl HttpTargetConfig {
    /// Default settings for `url` and `log`: `X-CRS-Test`, 10 s marker timeout,
    /// 30 s request timeout.
    pub fn new(url: impl Into<String>, log: impl Into<PathBuf>) -> Self {
        HttpTargetConfig {
            url: url.into(),
            log: log.into(),
            marker_header: DEFAULT_MARKER_HEADER.to_string(),
            marker_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// Why an [`HttpTarget`] cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpTargetError {
    /// The URL is not `http://host:port`.
    #[error("invalid target URL `{url}`: {why}")]
    Url {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The host does not resolve.
    #[error("cannot resolve `{authority}`: {source}")]
    Resolve {
        /// `host:port`.
        authority: String,
        /// The resolver's error.
        source: io::Error,
    },
    /// The marker header name is not a plain header token.
    #[error("invalid marker header name `{0}` (letters, digits, `-` and `_` only)")]
    MarkerHeader(String),
    /// The first marker request did not show up in the log.
    #[error("marker check failed: {0}")]
    Marker(String),
}

/// The authority of an `http://host[:port][/path]` URL and the `host:port` to
/// connect to (port 80 when none is given).
///
/// Errors: why the URL is not of that form.
pub fn http_authority(url: &str) -> Result<(&str, String), &'static str> {
    let rest = url
        .strip_prefix("http://")
        .ok_or("only http://host:port is supported")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') {
        return Err("no host:port");
    }
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let with_port = if has_port {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    Ok((authority, with_port))
}

/// Sends stages to a server and reads their log lines between marker requests.
#[derive(Debug)]
pub struct HttpTarget {
    addr: SocketAddr,
    log: LogTail,
    log_path: PathBuf,
    pending: VecDeque<String>,
    marker_header: String,
    marker_timeout: Duration,
    request_timeout: Duration,
    token_base: String,
    counter: u64,
}

impl HttpTarget {
    /// Resolves the target and starts following the log from its current end.
    pub fn new(config: &HttpTargetConfig) -> Result<HttpTarget, HttpTargetError> {
        let bad = |why: &str| HttpTargetError::Url {
            url: config.url.clone(),
            why: why.to_string(),
        };
        let (_, with_port) = http_authority(&config.url).map_err(bad)?;
        let addr = with_port
            .to_socket_addrs()
            .map_err(|source| HttpTargetError::Resolve {
                authority: with_port.clone(),
                source,
            })?
            .next()
            .ok_or_else(|| bad("the host has no address"))?;
        if !valid_header_name(&config.marker_header) {
            return Err(HttpTargetError::MarkerHeader(config.marker_header.clone()));
        }
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Ok(HttpTarget {
            addr,
            log: LogTail::at_end(&config.log),
            log_path: config.log.clone(),
            pending: VecDeque::new(),
            marker_header: config.marker_header.clone(),
            marker_timeout: config.marker_timeout,
            request_timeout: config.request_timeout,
            token_base: format!("palisade-ftw-{:x}-{nanos:x}", std::process::id()),
            counter: 0,
        })
    }

    /// The resolved address requests go to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sends one marker and waits for it in the log: a quick check that the server
    /// answers and logs markers, before a long run.
    pub fn check_markers(&mut self) -> Result<(), HttpTargetError> {
        self.marker().map(|_| ()).map_err(HttpTargetError::Marker)
    }

    /// Sends a marker request and waits for its line; returns the log lines that
    /// came before it (since the previous marker).
    fn marker(&mut self) -> Result<Vec<String>, String> {
        self.counter += 1;
        let token = format!("{}-{}", self.token_base, self.counter);
        let request = format!(
            "GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: palisade-ftw\r\nAccept: */*\r\n{}: {token}\r\nConnection: close\r\n\r\n",
            self.marker_header
        );
        let sent = self.exchange(request.as_bytes(), false);
        if let Some(e) = sent.error {
            return Err(format!("marker request to {} failed: {e}", self.addr));
        }
        let deadline = Instant::now() + self.marker_timeout;
        let mut before = Vec::new();
        loop {
            while let Some(line) = self.pending.pop_front() {
                if line.contains(&token) {
                    return Ok(before);
                }
                before.push(line);
            }
            let fresh = self
                .log
                .read_lines()
                .map_err(|e| format!("cannot read the log {}: {e}", self.log_path.display()))?;
            if fresh.is_empty() {
                if Instant::now() >= deadline {
                    return Err(format!(
                        "marker {token} did not appear in {} within {} ms (is the log the server's audit/error log, and does the server run the marker rule for {}?)",
                        self.log_path.display(),
                        self.marker_timeout.as_millis(),
                        self.marker_header
                    ));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            self.pending.extend(fresh);
        }
    }

    /// Sends `bytes` on a new connection and reads one response.
    fn exchange(&self, bytes: &[u8], head_request: bool) -> Exchange {
        let deadline = Instant::now() + self.request_timeout;
        let mut stream = match TcpStream::connect_timeout(&self.addr, self.request_timeout) {
            Ok(s) => s,
            Err(e) => return Exchange::failed(format!("connect: {e}")),
        };
        let _ = stream.set_nodelay(true);
        if let Err(e) = stream
            .set_write_timeout(Some(self.request_timeout))
            .and_then(|()| stream.set_read_timeout(Some(Duration::from_millis(200))))
        {
            return Exchange::failed(format!("socket: {e}"));
        }
        // The server may answer (e.g. 400) and close before reading everything.
        let write_error = stream.write_all(bytes).err();
        let _ = stream.flush();
        match read_response(&mut stream, head_request, deadline) {
            Ok((status, raw)) => Exchange {
                status: Some(status),
                response: Some(String::from_utf8_lossy(&raw).into_owned()),
                error: None,
            },
            Err(e) => Exchange::failed(match write_error {
                Some(w) => format!("send: {w}; {e}"),
                None => e,
            }),
        }
    }
}

/// What one request/response exchange gave.
struct Exchange {
    status: Option<u16>,
    response: Option<String>,
    error: Option<String>,
}

impl Exchange {
    fn failed(error: String) -> Exchange {
        Exchange {
            status: None,
            response: None,
            error: Some(error),
        }
    }
}

impl Target for HttpTarget {
    fn run(&mut self, _test: &TestRef<'_>, _stage: &Stage, req: &RawRequest) -> StageOutcome {
        if let Err(e) = self.marker() {
            return StageOutcome {
                error: Some(format!("start marker: {e}")),
                ..StageOutcome::default()
            };
        }
        let head_request = req.bytes.starts_with(b"HEAD ");
        let exchange = self.exchange(&req.bytes, head_request);
        let lines = match self.marker() {
            Ok(lines) => lines,
            Err(e) => {
                return StageOutcome {
                    error: Some(format!("end marker: {e}")),
                    ..StageOutcome::default()
                };
            }
        };
        let mut entries = LogEntries::default();
        for l in &lines {
            entries.push_raw(l);
        }
        let mut log = entries.lines.join("\n");
        if !log.is_empty() {
            log.push('\n');
        }
        StageOutcome {
            status: exchange.status,
            matched_ids: entries.ids,
            log,
            error: exchange.error,
            response: exchange.response,
        }
    }
}

/// Reads one final response: `(status, raw bytes)`.
fn read_response(
    stream: &mut TcpStream,
    head_request: bool,
    deadline: Instant,
) -> Result<(u16, Vec<u8>), String> {
    let mut buf: Vec<u8> = Vec::new();
    let mut start = 0; // where the current (final or interim) head starts
    let mut eof = false;
    loop {
        let head_end = loop {
            if let Some(i) = find(&buf[start..], b"\r\n\r\n") {
                break start + i + 4;
            }
            if eof {
                return Err(if buf.is_empty() {
                    "connection closed without a response".to_string()
                } else {
                    "connection closed inside the response head".to_string()
                });
            }
            if buf.len() > MAX_RESPONSE {
                return Err("response head too large".to_string());
            }
            eof = !read_more(stream, &mut buf, deadline)?;
        };
        let head = String::from_utf8_lossy(&buf[start..head_end]).into_owned();
        let status = parse_status(&head)?;
        if (100..200).contains(&status) && status != 101 {
            start = head_end;
            continue;
        }
        let mut length: Option<usize> = None;
        let mut chunked = false;
        for line in head.split("\r\n").skip(1) {
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().ok();
                } else if name.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = value.to_ascii_lowercase().contains("chunked");
                }
            }
        }
        let bodyless = head_request || status < 200 || status == 204 || status == 304;
        if !bodyless {
            loop {
                let body = &buf[head_end..];
                let done = if chunked {
                    !matches!(decode_chunked(body), Err(ChunkError::Truncated))
                } else if let Some(n) = length {
                    body.len() >= n
                } else {
                    false
                };
                if done || eof || buf.len() > MAX_RESPONSE {
                    break;
                }
                match read_more(stream, &mut buf, deadline) {
                    Ok(more) => eof = !more,
                    // The head arrived: a body cut short by a timeout still counts.
                    Err(_) => break,
                }
            }
        }
        let _ = stream.shutdown(Shutdown::Both);
        buf.drain(..start);
        return Ok((status, buf));
    }
}

/// Reads more bytes until the deadline; false at end of stream.
fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>, deadline: Instant) -> Result<bool, String> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk) {
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                return Ok(n > 0);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                if Instant::now() >= deadline {
                    return Err("timed out waiting for the response".to_string());
                }
            }
            // A reset after a complete answer is an end of stream for what was read.
            Err(e) if !buf.is_empty() && e.kind() == io::ErrorKind::ConnectionReset => {
                return Ok(false)
            }
            Err(e) => return Err(format!("receive: {e}")),
        }
    }
}

/// The status code of a response head's first line.
fn parse_status(head: &str) -> Result<u16, String> {
    let line = head.split("\r\n").next().unwrap_or_default();
    let mut parts = line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    let code = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/") || code.len() != 3 {
        return Err(format!("invalid status line {line:?}"));
    }
    code.parse()
        .map_err(|_| format!("invalid status line {line:?}"))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn valid_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The rule that makes marker requests visible in the server's log: it logs the
/// marker header's value (audit log and error log) and removes every other rule
/// (ids below [`MARKER_RULE_ID`]) for that request, so a marker logs only itself.
/// It must come before the CRS rules (phase 1 rules run in file order).
pub fn marker_rule(header: &str) -> String {
    format!(
        "SecRule REQUEST_HEADERS:{header} \"@rx ^.+$\" \"id:{MARKER_RULE_ID},phase:1,pass,t:none,log,auditlog,msg:'ftw marker %{{MATCHED_VAR}}',ctl:ruleRemoveById=1-{}\"\n",
        MARKER_RULE_ID - 1
    )
}

/// The rule set `palisade serve` runs for the suite over the network:
/// [`crate::crs_config::test_config`] (base settings, `crs-setup.conf.example`, rule
/// 900005: DetectionOnly, blocking paranoia level 4, the test limits; the CRS rules)
/// with the marker rule and audit log parts that carry the messages
/// (`SecAuditLogParts ABFHZ`) right after the base settings.
pub fn network_test_config(crs_dir: &Path, marker_header: &str) -> io::Result<String> {
    let full = crate::crs_config::test_config(crs_dir)?;
    let rest = full
        .strip_prefix(crate::crs_config::BASE_CONF)
        .unwrap_or(&full);
    let mut text = String::from(crate::crs_config::BASE_CONF);
    text.push_str("SecAuditLogParts ABFHZ\n");
    text.push_str(&marker_rule(marker_header));
    text.push_str(rest);
    Ok(text)
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn urls_and_marker_names_are_checked() {
        let cfg = |url: &str| HttpTargetConfig::new(url, "/nonexistent/log");
        assert!(matches!(
            HttpTarget::new(&cfg("https://127.0.0.1:1")),
            Err(HttpTargetError::Url { .. })
        ));
        assert!(matches!(
            HttpTarget::new(&cfg("http://")),
            Err(HttpTargetError::Url { .. })
        ));
        let t = HttpTarget::new(&cfg("http://127.0.0.1:8080/x")).unwrap();
        assert_eq!(t.addr(), "127.0.0.1:8080".parse().unwrap());
        let t = HttpTarget::new(&cfg("http://127.0.0.1")).unwrap();
        assert_eq!(t.addr().port(), 80);
        let mut c = cfg("http://127.0.0.1:1");
        c.marker_header = "X-Bad Header".into();
        assert!(matches!(
            HttpTarget::new(&c),
            Err(HttpTargetError::MarkerHeader(_))
        ));
    }

    /// Serves one canned answer per connection and appends a log line per request:
    /// the marker token for markers, `[id "942100"]` for others.
    fn fake_server(log: PathBuf, answer: &'static [u8]) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let mut s = s.unwrap();
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while find(&buf, b"\r\n\r\n").is_none() {
                    let n = s.read(&mut chunk).unwrap();
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let head = String::from_utf8_lossy(&buf).into_owned();
                let line = match head.lines().find(|l| l.starts_with("X-CRS-Test: ")) {
                    Some(m) => format!("marker {}\n", &m[12..]),
                    None => "[id \"942100\"] [msg \"x\"]\n".to_string(),
                };
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .unwrap();
                f.write_all(line.as_bytes()).unwrap();
                if head.contains("X-CRS-Test") {
                    s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                        .unwrap();
                } else {
                    s.write_all(answer).unwrap();
                }
            }
        });
        addr
    }

    fn run_one(answer: &'static [u8], request: &[u8]) -> StageOutcome {
        let dir = std::env::temp_dir().join(format!(
            "ftw-http-{}-{}",
            std::process::id(),
            answer.len() + request.len()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log");
        let addr = fake_server(log.clone(), answer);
        let mut t =
            HttpTarget::new(&HttpTargetConfig::new(format!("http://{addr}"), &log)).unwrap();
        t.check_markers().unwrap();
        let stage: Stage = serde_saphyr::from_str("input: {}\noutput: {}").unwrap();
        let req = crate::request::build_request(&stage.input).unwrap();
        let req = RawRequest {
            bytes: request.to_vec(),
            ..req
        };
        let test = TestRef {
            id: "1-1".parse().unwrap(),
            stage_index: 0,
            stage_count: 1,
            file: Path::new("x.yaml"),
        };
        let out = t.run(&test, &stage, &req);
        std::fs::remove_dir_all(&dir).unwrap();
        out
    }

    #[test]
    fn stage_lines_between_markers() {
        let out = run_one(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
            b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n",
        );
        assert_eq!(out.error, None);
        assert_eq!(out.status, Some(404));
        assert_eq!(out.matched_ids, [942100]);
        assert_eq!(out.log, "[id \"942100\"] [msg \"x\"]\n");
        assert!(out.response.unwrap().ends_with("2\r\nhi\r\n0\r\n\r\n"));
    }

    #[test]
    fn no_response_is_an_error() {
        let out = run_one(b"", b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(out.status, None);
        assert!(out.error.unwrap().contains("without a response"));
        let out = run_one(b"garbage\r\n\r\n", b"GET /c HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(out.error.unwrap().contains("invalid status line"));
    }

    #[test]
    fn marker_rule_and_config() {
        let r = marker_rule("X-CRS-Test");
        assert!(r.starts_with("SecRule REQUEST_HEADERS:X-CRS-Test "));
        assert!(r.contains("ctl:ruleRemoveById=1-999998"));
        assert!(r.contains("%{MATCHED_VAR}"));
    }
}
