//! The routing table: the configuration compiled once per load (rule programs,
//! upstream groups, trusted-proxy blocks), swapped atomically on reload. Nothing here
//! is read or parsed per request.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use engine::Program;

use crate::config::{self, Config, ConfigError, Limits, Source};
use crate::spill::SpillPolicy;
use crate::upstream::Upstream;

/// The engine mode of a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Rules run and interventions are applied (as the rule set says).
    On,
    /// Rules run and are logged; nothing is blocked.
    DetectionOnly,
    /// The engine is skipped.
    Off,
}

/// A compiled route.
#[derive(Debug, Clone)]
pub struct Route {
    /// A short name for metrics and logs (`host/prefix`).
    pub name: Arc<str>,
    /// Lower-case host, or None for any.
    pub host: Option<String>,
    /// Path prefix.
    pub prefix: String,
    /// Where requests go.
    pub upstream: Arc<Upstream>,
    /// The rules, unless the mode is Off.
    pub program: Option<Arc<Program>>,
    /// The parsed rules the program was compiled from, kept while order learning
    /// is on: the learner compiles them again to publish a reordered program.
    pub loaded: Option<Arc<seclang::Loaded>>,
    /// The mode.
    pub mode: Mode,
    /// Lower-case extensions served without inspection.
    pub bypass_extensions: Vec<String>,
    /// Lower-case response media types (or prefixes ending in `/`) passed without
    /// response inspection.
    pub bypass_content_types: Vec<String>,
}

/// An address block (`10.0.0.0/8`, `::1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Cidr {
    /// Parses `ip` or `ip/bits`.
    pub fn parse(s: &str) -> Option<Cidr> {
        let (a, bits) = match s.split_once('/') {
            Some((a, b)) => (a, Some(b.parse::<u8>().ok()?)),
            None => (s, None),
        };
        let addr: IpAddr = a.trim().parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits = bits.unwrap_or(max);
        (bits <= max).then_some(Cidr { addr, bits })
    }

    /// Whether `ip` is inside the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                let mask = if self.bits == 0 {
                    0
                } else {
                    u32::MAX << (32 - u32::from(self.bits))
                };
                u32::from(a) & mask == u32::from(b) & mask
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => {
                let mask = if self.bits == 0 {
                    0
                } else {
                    u128::MAX << (128 - u32::from(self.bits))
                };
                u128::from(a) & mask == u128::from(b) & mask
            }
            _ => false,
        }
    }
}

/// Everything a request needs, compiled from one configuration.
#[derive(Debug, Clone)]
pub struct Runtime {
    /// Routes, most specific first.
    pub routes: Vec<Route>,
    /// Limits.
    pub limits: Arc<Limits>,
    /// Where held-back request bodies spill.
    pub spill: SpillPolicy,
    /// Add `X-Forwarded-*`.
    pub x_forwarded: bool,
    /// Add `Via`.
    pub via: bool,
    /// Trusted proxies.
    pub trusted: Vec<Cidr>,
    /// Rules loaded, over all distinct programs.
    pub rules_loaded: usize,
    /// Online rule ordering.
    pub learning: crate::learn::Policy,
    /// Each request written to an upstream, and each response written to an
    /// HTTP/1.1 client (HTTP/2's are hyper's), waits first until the worker has
    /// run the other connections that were ready with it
    /// ([`tokio::task::yield_now`]: to the end of the scheduler's round, after
    /// its next poll of the sockets). The writes of one round then go out
    /// together, and a peer that went to sleep between them (the upstream, the
    /// client) is woken once per round, not once per request. On a virtual
    /// machine each such wake-up is an interrupt between CPUs: 16% of the
    /// proxy's CPU samples with the CRS before (docs/PROXY.md, "Batched writes").
    pub batch_writes: bool,
}

/// Where a write waits with [`Runtime::batch_writes`] on: the end of the
/// scheduler's round (nothing when `batch` is off).
pub(crate) async fn batch_point(batch: bool) {
    if batch {
        tokio::task::yield_now().await;
    }
}

impl Runtime {
    /// The route for a host (without port, any case) and path.
    pub fn route(&self, host: &str, path: &str) -> Option<&Route> {
        self.routes.iter().find(|r| {
            r.host
                .as_deref()
                .is_none_or(|h| h.eq_ignore_ascii_case(host))
                && path.starts_with(r.prefix.as_str())
        })
    }
}

fn resolve(base: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    std::fs::canonicalize(&joined).unwrap_or(joined)
}

fn include(path: &Path) -> Result<String, String> {
    let s = path.display().to_string();
    if s.contains('"') || s.contains('\n') {
        return Err(format!("path `{s}` holds a quote or newline"));
    }
    Ok(format!("Include \"{s}\"\n"))
}

/// Compiled rule programs by their optimisations and SecLang text.
pub type ProgramCache = HashMap<String, Arc<Program>>;

/// Compiles a parsed configuration. Rule programs are compiled once per distinct
/// rule text, so routes sharing rules share one program.
pub fn compile(config: &Config, source: &Source) -> Result<Runtime, ConfigError> {
    compile_with(config, source, &mut ProgramCache::new())
}

/// [`compile`] reusing the programs in `programs` (keyed by rule text; the text names
/// files, so a cache must not outlive changes to them) and adding new ones to it.
pub fn compile_with(
    config: &Config,
    source: &Source,
    programs: &mut ProgramCache,
) -> Result<Runtime, ConfigError> {
    let base = source.base_dir();
    let learning = crate::learn::Policy::compile(&config.learning, source)?;
    let mut loaded_by_text: HashMap<String, Arc<seclang::Loaded>> = HashMap::new();
    let at0 = |msg: String| source.error(0..0, msg);
    let mut upstreams: HashMap<String, Arc<Upstream>> = HashMap::new();
    for u in &config.upstreams {
        if u.addresses.get_ref().is_empty() {
            return Err(source.error(u.addresses.span(), "upstream.addresses: empty"));
        }
        for a in u.addresses.get_ref() {
            if a.is_empty() || a.contains('/') || !a.contains(':') {
                return Err(source.error(
                    u.addresses.span(),
                    format!("upstream.addresses: `{a}` is not host:port"),
                ));
            }
        }
        let up = Upstream::new(
            u.name.get_ref().clone(),
            u.addresses.get_ref().clone(),
            Duration::from_millis(u.connect_timeout_ms.max(1)),
            Duration::from_millis(u.read_timeout_ms.max(1)),
            Duration::from_millis(u.fail_timeout_ms),
        );
        if upstreams
            .insert(u.name.get_ref().clone(), Arc::new(up))
            .is_some()
        {
            return Err(source.error(
                u.name.span(),
                format!("upstream.name: `{}` defined twice", u.name.get_ref()),
            ));
        }
    }
    let mut routes = Vec::new();
    let mut rules_loaded = 0;
    let mut counted: Vec<*const Program> = Vec::new();
    for r in &config.routes {
        let Some(upstream) = upstreams.get(r.upstream.get_ref()) else {
            return Err(source.error(
                r.upstream.span(),
                format!(
                    "route.upstream: no upstream named `{}`",
                    r.upstream.get_ref()
                ),
            ));
        };
        let mode = match r.engine.as_ref().map(|e| e.get_ref().as_str()) {
            None => None,
            Some(m) if m.eq_ignore_ascii_case("on") => Some(Mode::On),
            Some(m) if m.eq_ignore_ascii_case("detectiononly") => Some(Mode::DetectionOnly),
            Some(m) if m.eq_ignore_ascii_case("off") => Some(Mode::Off),
            Some(m) => {
                let span = r.engine.as_ref().map_or(0..0, |e| e.span());
                return Err(source.error(
                    span,
                    format!("route.engine: `{m}` is not On, DetectionOnly or Off"),
                ));
            }
        };
        if !r.path_prefix.starts_with('/') {
            return Err(at0(format!(
                "route.path_prefix: `{}` must start with /",
                r.path_prefix
            )));
        }
        let mut text = String::new();
        if let Some(crs) = &r.crs {
            let dir = resolve(&base, crs.dir.get_ref());
            let t = ftw::crs_config::crs_config(&dir, crs.paranoia, false).map_err(|e| {
                source.error(
                    crs.dir.span(),
                    format!("route.crs.dir: `{}`: {e}", dir.display()),
                )
            })?;
            text.push_str(&t);
        }
        for p in &r.rules {
            let path = resolve(&base, p.get_ref());
            text.push_str(&include(&path).map_err(|m| source.error(p.span(), m))?);
        }
        if let Some(inline) = &r.rules_inline {
            text.push_str(inline);
            text.push('\n');
        }
        match mode {
            Some(Mode::On) => text.push_str("SecRuleEngine On\n"),
            Some(Mode::DetectionOnly) => text.push_str("SecRuleEngine DetectionOnly\n"),
            _ => {}
        }
        for id in &r.remove_rules {
            text.push_str(&format!("SecRuleRemoveById {id}\n"));
        }
        let options = match &r.optimizations {
            Some(o) => engine::Options::parse(o.get_ref())
                .map_err(|e| source.error(o.span(), format!("optimizations: {e}")))?,
            None => engine::Options::default(),
        };
        let name = format!("{} (route {})", source.path.display(), r.path_prefix);
        // Programs are shared by routes with the same rules and optimisations.
        let key = format!("{options:?}\n{text}");
        let mut loaded = None;
        let program = if mode == Some(Mode::Off) || text.trim().is_empty() {
            None
        } else if let Some(p) = programs.get(&key) {
            if learning.order {
                let l = loaded_by_text
                    .entry(text.clone())
                    .or_insert_with(|| Arc::new(seclang::parse_str(&name, &text)));
                loaded = Some(l.clone());
            }
            if !counted.contains(&Arc::as_ptr(p)) {
                counted.push(Arc::as_ptr(p));
                rules_loaded += p.rule_count();
            }
            Some(p.clone())
        } else {
            let parsed = Arc::new(seclang::parse_str(&name, &text));
            let p = Program::from_loaded_with(&parsed, &options).map_err(|e| {
                let span = r
                    .rules
                    .first()
                    .map(|p| p.span())
                    .or_else(|| r.crs.as_ref().map(|c| c.dir.span()))
                    .unwrap_or(0..0);
                source.error(span, format!("route rules do not compile: {e}"))
            })?;
            rules_loaded += p.rule_count();
            counted.push(Arc::as_ptr(&p));
            if learning.order {
                loaded_by_text.insert(text.clone(), parsed.clone());
                loaded = Some(parsed);
            }
            programs.insert(key, p.clone());
            Some(p)
        };
        let mode = match &program {
            None => Mode::Off,
            Some(p) => match p.config.rule_engine {
                engine::EngineMode::On => Mode::On,
                engine::EngineMode::DetectionOnly => Mode::DetectionOnly,
                engine::EngineMode::Off => Mode::Off,
            },
        };
        let host = r
            .host
            .as_deref()
            .filter(|h| *h != "*")
            .map(str::to_ascii_lowercase);
        routes.push(Route {
            name: Arc::from(format!(
                "{}{}",
                host.as_deref().unwrap_or("*"),
                r.path_prefix
            )),
            host,
            prefix: r.path_prefix.clone(),
            upstream: upstream.clone(),
            loaded: if mode == Mode::Off { None } else { loaded },
            program: if mode == Mode::Off { None } else { program },
            mode,
            bypass_extensions: r
                .bypass_extensions
                .iter()
                .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
                .collect(),
            bypass_content_types: r
                .bypass_content_types
                .iter()
                .map(|t| t.trim().to_ascii_lowercase())
                .filter(|t| !t.is_empty())
                .collect(),
        });
    }
    // Host-specific routes first, then longer prefixes first (stable otherwise).
    routes.sort_by(|a, b| {
        b.host
            .is_some()
            .cmp(&a.host.is_some())
            .then(b.prefix.len().cmp(&a.prefix.len()))
    });
    let mut trusted = Vec::new();
    for t in &config.forwarding.trusted_proxies {
        trusted.push(Cidr::parse(t.get_ref()).ok_or_else(|| {
            source.error(
                t.span(),
                format!(
                    "forwarding.trusted_proxies: `{}` is not an address or CIDR block",
                    t.get_ref()
                ),
            )
        })?);
    }
    for l in &config.listeners {
        config::socket_addr(source, &l.address)?;
    }
    let spill = SpillPolicy {
        memory_bytes: config.limits.body_memory_bytes,
        dir: match &config.limits.body_temp_dir {
            None => std::env::temp_dir(),
            Some(d) => {
                let dir = resolve(&base, d.get_ref());
                if !dir.is_dir() {
                    return Err(source.error(
                        d.span(),
                        format!(
                            "limits.body_temp_dir: `{}` is not a directory",
                            dir.display()
                        ),
                    ));
                }
                dir
            }
        },
    };
    Ok(Runtime {
        routes,
        limits: Arc::new(config.limits.clone()),
        spill,
        x_forwarded: config.forwarding.x_forwarded,
        via: config.forwarding.via,
        trusted,
        rules_loaded,
        learning,
        batch_writes: config.batch_writes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr() {
        let c = Cidr::parse("10.0.0.0/8").expect("cidr");
        assert!(c.contains("10.1.2.3".parse().expect("ip")));
        assert!(!c.contains("11.1.2.3".parse().expect("ip")));
        let one = Cidr::parse("::1").expect("cidr");
        assert!(one.contains("::1".parse().expect("ip")));
        assert!(Cidr::parse("10.0.0.0/33").is_none());
        assert!(Cidr::parse("0.0.0.0/0")
            .expect("any")
            .contains("1.2.3.4".parse().expect("ip")));
    }

    #[test]
    fn unknown_upstream_is_located() {
        let source = Source {
            path: "x.toml".into(),
            text: "[[upstream]]\nname = \"a\"\naddresses = [\"127.0.0.1:1\"]\n\n[[route]]\nupstream = \"b\"\n".into(),
        };
        let cfg = config::parse(&source).expect("parses");
        let e = compile(&cfg, &source).expect_err("unknown upstream");
        assert_eq!(e.line, 6);
        assert!(e.message.contains("route.upstream"));
    }

    #[test]
    fn routes_choose_their_optimisations() {
        let route = |prefix: &str, opts: &str| {
            format!(
                "[[route]]\nupstream = \"a\"\npath_prefix = \"{prefix}\"\n{opts}\n\
                 rules_inline = \"SecRule ARGS \\\"@rx a\\\" \\\"id:1,phase:2,deny\\\"\"\n"
            )
        };
        let text = format!(
            "[[upstream]]\nname = \"a\"\naddresses = [\"127.0.0.1:1\"]\n{}{}{}",
            route("/x", ""),
            route("/y", "optimizations = \"all,early_exit\""),
            route("/z", "optimizations = \"none\""),
        );
        let source = Source {
            path: "x.toml".into(),
            text,
        };
        let cfg = config::parse(&source).expect("parses");
        let rt = compile(&cfg, &source).expect("compiles");
        let options = |path: &str| {
            rt.route("h", path)
                .and_then(|r| r.program.as_ref())
                .map(|p| p.options.clone())
                .expect("program")
        };
        assert_eq!(options("/x"), engine::Options::default());
        assert!(options("/y").early_exit && options("/y").prefilter);
        assert_eq!(options("/z"), engine::Options::none());
        // Same rules, other optimisations: separate programs.
        assert_eq!(rt.rules_loaded, 3);

        let bad = Source {
            path: "x.toml".into(),
            text: format!(
                "[[upstream]]\nname = \"a\"\naddresses = [\"127.0.0.1:1\"]\n{}",
                route("/", "optimizations = \"turbo\"")
            ),
        };
        let cfg = config::parse(&bad).expect("parses");
        let e = compile(&cfg, &bad).expect_err("unknown optimisation");
        assert_eq!(e.line, 7);
        assert!(
            e.message.contains("unknown optimisation `turbo`"),
            "{}",
            e.message
        );
    }

    #[test]
    fn routes_most_specific_first() {
        let source = Source {
            path: "x.toml".into(),
            text: "[[upstream]]\nname = \"a\"\naddresses = [\"127.0.0.1:1\"]\n\
                   [[route]]\nupstream = \"a\"\n\
                   [[route]]\nupstream = \"a\"\npath_prefix = \"/api\"\n\
                   [[route]]\nupstream = \"a\"\nhost = \"Example.com\"\n"
                .into(),
        };
        let cfg = config::parse(&source).expect("parses");
        let rt = compile(&cfg, &source).expect("compiles");
        assert_eq!(rt.route("other", "/api/x").map(|r| &*r.name), Some("*/api"));
        assert_eq!(
            rt.route("EXAMPLE.com", "/api").map(|r| &*r.name),
            Some("example.com/")
        );
        assert_eq!(rt.route("other", "/").map(|r| &*r.name), Some("*/"));
    }
}
