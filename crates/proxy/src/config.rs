//! The TOML configuration file (`palisade serve --config palisade.toml`).
//!
//! The file is parsed with `serde` and `deny_unknown_fields`; every error names the
//! file, line and column, and the key. [`crate::runtime`] compiles it into the routing
//! table. A reference with every key is in `crates/proxy/NOTES.md` and
//! `examples/palisade.toml`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where clients connect.
    #[serde(rename = "listener", default)]
    pub listeners: Vec<Listener>,
    /// The admin listener (metrics, health, reload).
    #[serde(default)]
    pub admin: Option<Admin>,
    /// Request and response limits.
    #[serde(default)]
    pub limits: Limits,
    /// Headers added when forwarding, and trusted proxies.
    #[serde(default)]
    pub forwarding: Forwarding,
    /// The audit log.
    #[serde(default)]
    pub audit: Option<Audit>,
    /// Upstream groups, by name.
    #[serde(rename = "upstream", default)]
    pub upstreams: Vec<Upstream>,
    /// Routes, matched by host and longest path prefix.
    #[serde(rename = "route", default)]
    pub routes: Vec<Route>,
    /// Graceful shutdown: how long in-flight requests may take, in milliseconds.
    #[serde(default = "default_drain_ms")]
    pub shutdown_timeout_ms: u64,
    /// Hold each write to an upstream or an HTTP/1.1 client until the worker has
    /// run the other connections ready with it (see [`crate::runtime::Runtime`]).
    #[serde(default = "yes")]
    pub batch_writes: bool,
    /// Online learning of the rule order (off by default).
    #[serde(default)]
    pub learning: Learning,
}

fn default_drain_ms() -> u64 {
    10_000
}

/// A listening socket.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listener {
    /// `ip:port`.
    pub address: Spanned<String>,
    /// TLS certificates (PEM); several are chosen by SNI. Absent: plain HTTP/1.1.
    #[serde(default)]
    pub tls: Vec<Certificate>,
}

/// One certificate chain and key, in PEM files.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Certificate {
    /// Certificate chain (PEM).
    pub cert: Spanned<PathBuf>,
    /// Private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: Spanned<PathBuf>,
    /// Server names this certificate answers (SNI). The first certificate is also the
    /// default for clients that send no or an unknown name.
    #[serde(default)]
    pub server_names: Vec<String>,
}

/// The admin listener.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Admin {
    /// `ip:port` (keep it on loopback or a private network).
    pub address: Spanned<String>,
}

/// Limits on what clients send and what is inspected.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Largest request head (request line and headers), in bytes; larger gets 431.
    #[serde(default = "default_header_bytes")]
    pub max_header_bytes: usize,
    /// Most header lines in a request head; more gets 431.
    #[serde(default = "default_headers")]
    pub max_headers: usize,
    /// Largest request body accepted at all (0: unlimited); larger gets 413 before the
    /// engine's own limit (`SecRequestBodyLimit`) applies.
    #[serde(default)]
    pub max_body_bytes: u64,
    /// Request body bytes held in memory per request while the engine inspects the
    /// body; the rest of what is held back goes to a temporary file.
    #[serde(default = "default_body_memory")]
    pub body_memory_bytes: usize,
    /// Directory of those temporary files (default: the system's, `$TMPDIR` or /tmp).
    #[serde(default)]
    pub body_temp_dir: Option<Spanned<PathBuf>>,
    /// How long a client may take to send a request head, in milliseconds.
    #[serde(default = "default_head_timeout")]
    pub header_timeout_ms: u64,
    /// How long an idle keep-alive connection is kept, in milliseconds.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_ms: u64,
}

fn default_header_bytes() -> usize {
    32 * 1024
}
fn default_body_memory() -> usize {
    1024 * 1024
}
fn default_headers() -> usize {
    100
}
fn default_head_timeout() -> u64 {
    10_000
}
fn default_idle_timeout() -> u64 {
    60_000
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_header_bytes: default_header_bytes(),
            max_headers: default_headers(),
            max_body_bytes: 0,
            body_memory_bytes: default_body_memory(),
            body_temp_dir: None,
            header_timeout_ms: default_head_timeout(),
            idle_timeout_ms: default_idle_timeout(),
        }
    }
}

/// Forwarding headers and trusted proxies.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Forwarding {
    /// Add `X-Forwarded-For`, `X-Forwarded-Proto` and `X-Forwarded-Host`.
    #[serde(default = "yes")]
    pub x_forwarded: bool,
    /// Add `Via: 1.1 palisade`.
    #[serde(default = "yes")]
    pub via: bool,
    /// Peers (addresses or CIDR blocks) whose `X-Forwarded-For` is believed: the
    /// client address (REMOTE_ADDR) is then the last address not in this list.
    #[serde(default)]
    pub trusted_proxies: Vec<Spanned<String>>,
}

fn yes() -> bool {
    true
}

impl Default for Forwarding {
    fn default() -> Self {
        Forwarding {
            x_forwarded: true,
            via: true,
            trusted_proxies: Vec::new(),
        }
    }
}

/// The audit log.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Audit {
    /// A file (appended to), or `-` for standard output.
    pub path: PathBuf,
    /// Records waiting to be written before the policy applies.
    #[serde(default = "default_queue")]
    pub queue: usize,
    /// What to do when the queue is full: `drop` the record (counted) or `block` the
    /// request until there is room.
    #[serde(default)]
    pub when_full: WhenFull,
}

fn default_queue() -> usize {
    8192
}

/// Audit queue policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WhenFull {
    /// Drop the record and count it.
    #[default]
    Drop,
    /// Wait for room.
    Block,
}

/// Online rule ordering (`[learning]`, see [`crate::learn`]): sampled per-rule
/// statistics, and every window a new order published when it is expected to be
/// cheaper. Results never change (the engine only moves rules where they cannot);
/// off by default.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Learning {
    /// Learn and publish rule orders.
    #[serde(default)]
    pub order: bool,
    /// Seconds between two analyses (1 to 86400).
    #[serde(default = "default_window_secs")]
    pub window_secs: Spanned<u64>,
    /// Profile one transaction in this many, per worker thread (1 to 1000000).
    #[serde(default = "default_sample_every")]
    pub sample_every: Spanned<u64>,
    /// Sampled transactions of a program needed before a plan is computed; fewer
    /// are kept for the next window (1 to 100000000).
    #[serde(default = "default_min_samples")]
    pub min_samples: Spanned<u64>,
    /// Smallest expected saving worth a new program, in percent of the measured
    /// rule time per request (0 to 100; 0: any saving).
    #[serde(default = "default_min_gain_percent")]
    pub min_gain_percent: Spanned<f64>,
}

fn default_window_secs() -> Spanned<u64> {
    Spanned::new(0..0, 60)
}
fn default_sample_every() -> Spanned<u64> {
    Spanned::new(0..0, 64)
}
fn default_min_samples() -> Spanned<u64> {
    Spanned::new(0..0, 200)
}
fn default_min_gain_percent() -> Spanned<f64> {
    Spanned::new(0..0, 1.0)
}

impl Default for Learning {
    fn default() -> Self {
        Learning {
            order: false,
            window_secs: default_window_secs(),
            sample_every: default_sample_every(),
            min_samples: default_min_samples(),
            min_gain_percent: default_min_gain_percent(),
        }
    }
}

/// An upstream group.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upstream {
    /// The name routes refer to.
    pub name: Spanned<String>,
    /// `host:port` addresses, used in turn (round robin).
    pub addresses: Spanned<Vec<String>>,
    /// Connect timeout, milliseconds.
    #[serde(default = "default_connect")]
    pub connect_timeout_ms: u64,
    /// Time to the response head, milliseconds (504 after).
    #[serde(default = "default_read")]
    pub read_timeout_ms: u64,
    /// How long an address that failed to connect is skipped, milliseconds.
    #[serde(default = "default_fail")]
    pub fail_timeout_ms: u64,
}

fn default_connect() -> u64 {
    2_000
}
fn default_read() -> u64 {
    30_000
}
fn default_fail() -> u64 {
    10_000
}

/// A route: which requests, to which upstream, under which rules.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Host (without port, case-insensitive); absent or `*`: any host.
    #[serde(default)]
    pub host: Option<String>,
    /// Path prefix; the longest matching prefix wins.
    #[serde(default = "default_prefix")]
    pub path_prefix: String,
    /// The upstream group's name.
    pub upstream: Spanned<String>,
    /// SecLang files, directories or globs, loaded in order (after `crs`).
    #[serde(default)]
    pub rules: Vec<Spanned<PathBuf>>,
    /// The OWASP CRS: its directory and blocking paranoia level, with Palisade's base
    /// settings (body access, body processors, limits, audit settings).
    #[serde(default)]
    pub crs: Option<Crs>,
    /// SecLang text appended after the files (small exclusions, settings).
    #[serde(default)]
    pub rules_inline: Option<String>,
    /// `On`, `DetectionOnly` or `Off` (overrides `SecRuleEngine`). `Off` skips the
    /// engine altogether.
    #[serde(default)]
    pub engine: Option<Spanned<String>>,
    /// Rule ids removed for this route (`SecRuleRemoveById`).
    #[serde(default)]
    pub remove_rules: Vec<u32>,
    /// The engine's optimisations, as `palisade bench engine --optimizations`:
    /// `all` (the default), `none`, or a comma-separated list of `prune`, `memo`,
    /// `prefilter`, `value_cache`, `order` and `early_exit`. `all,early_exit` adds
    /// early exit in anomaly-scoring mode (a phase stops once the inbound threshold
    /// is crossed: same decisions, fewer rules reported).
    #[serde(default)]
    pub optimizations: Option<Spanned<String>>,
    /// File extensions (without dot) served without inspection, e.g. `["css", "png"]`.
    #[serde(default)]
    pub bypass_extensions: Vec<String>,
    /// Response media types (or type prefixes such as `image/`) whose responses are
    /// passed without response inspection (phases 3 and 4; the request was
    /// inspected), e.g. `["image/", "font/", "video/"]`.
    #[serde(default)]
    pub bypass_content_types: Vec<String>,
}

fn default_prefix() -> String {
    "/".into()
}

/// The CRS for a route.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Crs {
    /// The CRS directory (with `crs-setup.conf.example` and `rules/`).
    pub dir: Spanned<PathBuf>,
    /// Blocking paranoia level, 1 to 4.
    #[serde(default = "one")]
    pub paranoia: u8,
}

fn one() -> u8 {
    1
}

/// A configuration error, located in the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
#[non_exhaustive]
pub struct ConfigError {
    /// The configuration file.
    pub file: String,
    /// 1-based line (0 when not located).
    pub line: usize,
    /// 1-based column (0 when not located).
    pub column: usize,
    /// What is wrong, naming the key.
    pub message: String,
}

/// Line and column (1-based) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = offset
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (line, col)
}

/// A configuration file's text and name, for located errors.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file name as given.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

impl Source {
    /// An error at a byte span.
    pub fn error(&self, span: std::ops::Range<usize>, message: impl Into<String>) -> ConfigError {
        let (line, column) = line_col(&self.text, span.start);
        ConfigError {
            file: self.path.display().to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    /// The directory relative paths in the file are resolved against.
    pub fn base_dir(&self) -> PathBuf {
        self.path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }
}

/// Reads and parses a configuration file.
pub fn load(path: &Path) -> Result<(Config, Source), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        message: format!("cannot read: {e}"),
    })?;
    let source = Source {
        path: path.to_path_buf(),
        text,
    };
    let config = parse(&source)?;
    Ok((config, source))
}

/// Parses configuration text.
pub fn parse(source: &Source) -> Result<Config, ConfigError> {
    toml::from_str::<Config>(&source.text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        source.error(span, e.message().trim().to_string())
    })
}

/// Parses a socket address from a config value.
pub fn socket_addr(source: &Source, value: &Spanned<String>) -> Result<SocketAddr, ConfigError> {
    value.get_ref().parse().map_err(|_| {
        source.error(
            value.span(),
            format!(
                "address: `{}` is not ip:port (e.g. 127.0.0.1:8080)",
                value.get_ref()
            ),
        )
    })
}

/// `s` as a TOML string literal (for generated configuration files).
pub fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(text: &str) -> Source {
        Source {
            path: "p.toml".into(),
            text: text.into(),
        }
    }

    #[test]
    fn unknown_key_is_located() {
        let e = parse(&src(
            "[[listener]]\naddress = \"127.0.0.1:1\"\nadress = 1\n",
        ))
        .expect_err("unknown key");
        assert_eq!((e.line, e.file.as_str()), (3, "p.toml"));
        assert!(e.message.contains("adress"), "{}", e.message);
    }

    #[test]
    fn wrong_type_is_located() {
        let e = parse(&src("[limits]\nmax_headers = \"many\"\n")).expect_err("type");
        assert_eq!(e.line, 2);
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("ab", 0), (1, 1));
    }
}
