//! Shared helpers for the proxy's end-to-end tests: start a proxy from TOML text in
//! front of the built-in echo backend, raw HTTP/1.1 over 127.0.0.1 sockets, and one
//! compiled CRS shared by every test of a binary.
#![allow(dead_code, clippy::unwrap_used, missing_docs)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use proxy::runtime::ProgramCache;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// The CRS directory (`../shared/crs` beside the repository).
pub fn crs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/crs")
}

fn cache() -> &'static Mutex<ProgramCache> {
    static C: OnceLock<Mutex<ProgramCache>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(ProgramCache::new()))
}

/// Starts a proxy from TOML text (`{echo}` is replaced by the echo backend's address,
/// `{crs}` by the CRS directory, `{dir}` by a temp directory). Programs are cached
/// across the binary's tests.
pub async fn start(toml_text: &str) -> Harness {
    let (echo, _task) = proxy::echo::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = fill(toml_text, echo, dir.path());
    let path = dir.path().join("palisade.toml");
    std::fs::write(&path, &text).unwrap();
    let source = proxy::config::Source {
        path: path.clone(),
        text,
    };
    let config = proxy::config::parse(&source).unwrap();
    let rt = tokio::task::spawn_blocking({
        let config = config.clone();
        let source = source.clone();
        move || {
            let mut c = cache().lock().unwrap();
            proxy::runtime::compile_with(&config, &source, &mut c)
        }
    })
    .await
    .unwrap()
    .unwrap();
    let server = proxy::Server::start_compiled(config, source, rt, Some(path.clone()))
        .await
        .unwrap();
    Harness {
        addr: server.addrs()[0],
        server: Some(server),
        echo,
        dir,
        config_path: path,
    }
}

/// `toml_text` with `{echo}`, `{crs}` and `{dir}` replaced (see [`start`]).
fn fill(toml_text: &str, echo: SocketAddr, dir: &Path) -> String {
    toml_text
        .replace("{echo}", &echo.to_string())
        .replace("{crs}", &crs_dir().display().to_string())
        .replace("{dir}", &dir.display().to_string())
}

/// A configuration of the shape most tests use: one listener on 127.0.0.1:0, the
/// echo backend as upstream `echo`, and one route to it running `rules` inline.
/// Build it with `..Default::default()` for the parts a test does not need.
#[derive(Debug, Default)]
pub struct EchoConfig<'a> {
    /// Extra lines of the `[[listener]]` table (e.g. `tls = [...]`).
    pub listener: &'a str,
    /// An admin listener on 127.0.0.1:0.
    pub admin: bool,
    /// Whole tables placed before the upstream (`[limits]`, `[learning]`, ...).
    pub tables: &'a str,
    /// Extra lines of the `[[route]]` table (e.g. `host = "app.test"`).
    pub route: &'a str,
    /// The route's `rules_inline` (SecLang, ending with a newline).
    pub rules: &'a str,
}

impl EchoConfig<'_> {
    /// The TOML text (with the `{echo}` placeholder for [`start`]).
    pub fn toml(&self) -> String {
        let EchoConfig {
            listener,
            admin,
            tables,
            route,
            rules,
        } = self;
        let admin = if *admin {
            "[admin]\naddress = \"127.0.0.1:0\"\n"
        } else {
            ""
        };
        format!(
            r#"
[[listener]]
address = "127.0.0.1:0"
{listener}

{admin}
{tables}

[[upstream]]
name = "echo"
addresses = ["{{echo}}"]

[[route]]
upstream = "echo"
{route}
rules_inline = """
{rules}"""
"#
        )
    }
}

/// The `Transfer-Encoding: chunked` encoding of `body` in chunks of `chunk` bytes
/// (at least one), with the last chunk.
pub fn chunked_body(body: &[u8], chunk: usize) -> Vec<u8> {
    let mut r = Vec::new();
    for c in body.chunks(chunk.max(1)) {
        r.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        r.extend_from_slice(c);
        r.extend_from_slice(b"\r\n");
    }
    r.extend_from_slice(b"0\r\n\r\n");
    r
}

pub struct Harness {
    pub addr: SocketAddr,
    pub server: Option<proxy::Server>,
    pub echo: SocketAddr,
    pub dir: tempfile::TempDir,
    pub config_path: PathBuf,
}

impl Harness {
    pub fn server(&self) -> &proxy::Server {
        self.server.as_ref().unwrap()
    }

    /// Replaces the configuration file with `toml_text` (placeholders filled as by
    /// [`start`]), for a reload to read.
    pub fn write_config(&self, toml_text: &str) {
        std::fs::write(
            &self.config_path,
            fill(toml_text, self.echo, self.dir.path()),
        )
        .unwrap();
    }

    pub fn audit_path(&self) -> PathBuf {
        self.dir.path().join("audit.log")
    }

    /// Drains the audit queue and returns the records.
    pub async fn audit_records(&self) -> Vec<serde_json::Value> {
        if let Some(a) = &self.server().shared().audit {
            let a = a.clone();
            tokio::task::spawn_blocking(move || a.drain(Duration::from_secs(5)))
                .await
                .unwrap();
        }
        let text = std::fs::read_to_string(self.audit_path()).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).to_string()
    }
}

/// A keep-alive HTTP/1.1 connection that reads responses exactly.
pub struct Conn {
    rd: OwnedReadHalf,
    wr: Option<OwnedWriteHalf>,
    buf: Vec<u8>,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (rd, wr) = stream.into_split();
        Conn {
            rd,
            wr: Some(wr),
            buf: Vec::new(),
        }
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        self.wr.as_mut().unwrap().write_all(bytes).await.unwrap();
    }

    /// Writes in the background while the caller reads (a streaming peer may answer
    /// before it has read everything). Write errors are ignored (the proxy may answer
    /// and close early).
    pub fn send_background(&mut self, bytes: Vec<u8>) -> tokio::task::JoinHandle<()> {
        let mut wr = self.wr.take().unwrap();
        tokio::spawn(async move {
            let _ = wr.write_all(&bytes).await;
            // Keep the write half open until the response is read.
            tokio::time::sleep(Duration::from_secs(60)).await;
            drop(wr);
        })
    }

    async fn fill(&mut self) -> bool {
        let mut tmp = vec![0u8; 256 * 1024];
        match tokio::time::timeout(Duration::from_secs(60), self.rd.read(&mut tmp)).await {
            Ok(Ok(0)) | Ok(Err(_)) => false,
            Ok(Ok(n)) => {
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
            Err(_) => panic!("read timed out"),
        }
    }

    /// Raw bytes as they arrive (None at end of stream).
    pub async fn read_raw(&mut self) -> Option<Vec<u8>> {
        if self.buf.is_empty() && !self.fill().await {
            return None;
        }
        Some(std::mem::take(&mut self.buf))
    }

    /// Whether the peer closed the connection (after reading what is left).
    pub async fn closed(&mut self) -> bool {
        !self.buf.is_empty() || !self.fill().await
    }

    /// Reads one response (for a request of `method`). None if the connection closed
    /// before a response head.
    pub async fn read(&mut self, method: &str) -> Option<Resp> {
        let head_end = loop {
            if let Some(p) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            if !self.fill().await {
                return None;
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).to_string();
        self.buf.drain(..head_end);
        let mut lines = head.split("\r\n");
        let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
            .collect();
        let mut r = Resp {
            status,
            headers,
            body: Vec::new(),
        };
        if status == 101 {
            return Some(r);
        }
        if (100..200).contains(&status) {
            return Box::pin(self.read(method)).await;
        }
        if method == "HEAD" || status == 204 || status == 304 {
            return Some(r);
        }
        if let Some(cl) = r.header("content-length") {
            let n: usize = cl.parse().unwrap();
            while self.buf.len() < n {
                if !self.fill().await {
                    panic!("body truncated: {} of {n}", self.buf.len());
                }
            }
            r.body = self.buf.drain(..n).collect();
        } else if r
            .header("transfer-encoding")
            .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
        {
            loop {
                let line_end = loop {
                    if let Some(p) = self.buf.windows(2).position(|w| w == b"\r\n") {
                        break p;
                    }
                    assert!(self.fill().await, "chunked body truncated");
                };
                let line = String::from_utf8_lossy(&self.buf[..line_end]).to_string();
                self.buf.drain(..line_end + 2);
                let size = usize::from_str_radix(line.trim(), 16).unwrap();
                while self.buf.len() < size + 2 {
                    assert!(self.fill().await, "chunk truncated");
                }
                r.body.extend(self.buf.drain(..size));
                assert_eq!(&self.buf[..2], b"\r\n");
                self.buf.drain(..2);
                if size == 0 {
                    break;
                }
            }
        } else {
            while self.fill().await {}
            r.body = std::mem::take(&mut self.buf);
        }
        Some(r)
    }
}

/// Sends raw bytes on a new connection and reads one response.
pub async fn raw(addr: SocketAddr, bytes: &[u8]) -> Option<Resp> {
    let mut c = Conn::open(addr).await;
    let writer = c.send_background(bytes.to_vec());
    let method = std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.split(' ').next())
        .unwrap_or("GET")
        .to_string();
    let r = c.read(&method).await;
    writer.abort();
    r
}

/// A GET on a new connection.
pub async fn get(addr: SocketAddr, target: &str) -> Resp {
    raw(
        addr,
        format!("GET {target} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: palisade-test\r\nAccept: */*\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap()
}

/// The echo backend's pattern, `n` bytes.
pub fn pattern(n: u64) -> Vec<u8> {
    (0..n).map(proxy::echo::pattern_byte).collect()
}

/// A request to the admin listener (`Connection: close`).
#[allow(dead_code)]
pub async fn admin(addr: std::net::SocketAddr, method: &str, path: &str) -> Resp {
    raw(
        addr,
        format!(
            "{method} {path} HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap()
}
