//! Palisade's reverse proxy: the rule engine inline in front of web applications, as
//! nginx + ModSecurity or Apache + mod_security are used, on tokio.
//!
//! How it fits: [`config`] parses one TOML file, [`runtime`] compiles it into a
//! routing table (rule programs, upstream groups) held in an `ArcSwap` so that a
//! reload swaps it atomically while in-flight requests finish on the old one. Client
//! connections are served by [`h1`] (a strict HTTP/1.1 server that applies
//! [`front::check_request`] to the head as sent) or, over TLS with ALPN `h2`, by
//! hyper's HTTP/2 server; both hand each request to [`flow::handle`], which drives the
//! engine through phases 1-5 and the upstream exchange. [`audit`] writes audit
//! records in the background, [`metrics`] and [`admin`] expose Prometheus metrics,
//! health and reload, and [`echo`] is the built-in backend of `palisade demo`.
//!
//! ```no_run
//! # async fn run() -> Result<(), proxy::ProxyError> {
//! let server = proxy::Server::start(std::path::Path::new("palisade.toml")).await?;
//! println!("listening on {:?}", server.addrs());
//! server.run_until_signal().await;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod admin;
pub mod audit;
pub mod body;
pub mod config;
pub mod echo;
pub mod flow;
pub mod h1;
pub mod h2;
pub mod learn;
pub mod metrics;
pub mod runtime;
pub mod spill;
pub mod tls;
pub mod upstream;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::audit::AuditSink;
use crate::config::{Config, ConfigError, Source};
use crate::metrics::Metrics;
use crate::runtime::Runtime;

/// Why the proxy could not start or reload.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The configuration is invalid (located).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// The audit log could not be opened.
    #[error("cannot open the audit log {path}: {source}")]
    Audit {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// No configuration file to reload from.
    #[error("no configuration file to reload")]
    NoConfigFile,
    /// A reload is already running.
    #[error("a reload is already in progress")]
    ReloadBusy,
}

/// State shared by every connection.
pub struct Shared {
    /// The routing table in force.
    pub runtime: ArcSwap<Runtime>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Sampled rule statistics for the order learner ([`learn`]).
    pub learner: learn::Learner,
    /// The audit log, when configured.
    pub audit: Option<AuditSink>,
    config_path: Option<PathBuf>,
    reload_lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config_path", &self.config_path)
            .finish()
    }
}

/// What a reload did.
#[derive(Debug, Clone)]
pub struct ReloadReport {
    /// Routes in the new table.
    pub routes: usize,
    /// Rules loaded.
    pub rules: usize,
    /// Time to parse and compile.
    pub took: Duration,
}

impl Shared {
    /// Re-reads the configuration file, compiles it off the request path and swaps it
    /// in. On error the running configuration stays. Listener, admin and audit
    /// settings take effect only on restart.
    pub async fn reload(self: &Arc<Self>) -> Result<ReloadReport, ProxyError> {
        let Ok(_guard) = self.reload_lock.try_lock() else {
            return Err(ProxyError::ReloadBusy);
        };
        let Some(path) = self.config_path.clone() else {
            return Err(ProxyError::NoConfigFile);
        };
        let start = Instant::now();
        let result = tokio::task::spawn_blocking(move || {
            let (config, source) = config::load(&path)?;
            runtime::compile(&config, &source)
        })
        .await
        .unwrap_or_else(|e| {
            Err(ConfigError {
                file: String::new(),
                line: 0,
                column: 0,
                message: format!("reload task failed: {e}"),
            })
        });
        match result {
            Ok(rt) => {
                let report = ReloadReport {
                    routes: rt.routes.len(),
                    rules: rt.rules_loaded,
                    took: start.elapsed(),
                };
                self.metrics
                    .rules_loaded
                    .store(rt.rules_loaded as u64, Ordering::Relaxed);
                self.runtime.store(Arc::new(rt));
                // Statistics of the old programs must not shape the new ones.
                self.learner.reset();
                self.metrics.reload(true);
                tracing::info!(
                    routes = report.routes,
                    rules = report.rules,
                    "configuration reloaded"
                );
                Ok(report)
            }
            Err(e) => {
                self.metrics.reload(false);
                tracing::warn!(error = %e, "reload failed; the running configuration stays");
                Err(e.into())
            }
        }
    }
}

/// A running proxy.
#[derive(Debug)]
pub struct Server {
    shared: Arc<Shared>,
    addrs: Vec<SocketAddr>,
    admin_addr: Option<SocketAddr>,
    shutdown_tx: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    drain_timeout: Duration,
}

impl Server {
    /// Loads, compiles and starts the configuration in `path`.
    pub async fn start(path: &Path) -> Result<Server, ProxyError> {
        let p = path.to_path_buf();
        let loaded = tokio::task::spawn_blocking(move || {
            let (config, source) = config::load(&p)?;
            let rt = runtime::compile(&config, &source)?;
            Ok::<_, ConfigError>((config, source, rt))
        })
        .await
        .map_err(|e| ConfigError {
            file: path.display().to_string(),
            line: 0,
            column: 0,
            message: format!("load task failed: {e}"),
        })??;
        let (config, source, rt) = loaded;
        Self::start_compiled(config, source, rt, Some(path.to_path_buf())).await
    }

    /// Starts an already compiled configuration (`config_path`: where reloads read).
    pub async fn start_compiled(
        config: Config,
        source: Source,
        rt: Runtime,
        config_path: Option<PathBuf>,
    ) -> Result<Server, ProxyError> {
        let metrics = Arc::new(Metrics::default());
        metrics
            .rules_loaded
            .store(rt.rules_loaded as u64, Ordering::Relaxed);
        let audit = match &config.audit {
            Some(a) => {
                let path = if a.path == Path::new("-") || a.path.is_absolute() {
                    a.path.clone()
                } else {
                    source.base_dir().join(&a.path)
                };
                Some(
                    AuditSink::open(
                        &path,
                        a.queue,
                        a.when_full,
                        metrics.audit_written.clone(),
                        metrics.audit_dropped.clone(),
                    )
                    .map_err(|e| ProxyError::Audit { path, source: e })?,
                )
            }
            None => None,
        };
        let shared = Arc::new(Shared {
            runtime: ArcSwap::from_pointee(rt),
            metrics,
            learner: learn::Learner::default(),
            audit,
            config_path,
            reload_lock: tokio::sync::Mutex::new(()),
        });
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let mut addrs = Vec::new();
        let mut tasks = Vec::new();
        for l in &config.listeners {
            let addr = config::socket_addr(&source, &l.address)?;
            let tls = if l.tls.is_empty() {
                None
            } else {
                Some(tls::acceptor(&source, &l.tls)?)
            };
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|e| ProxyError::Bind { addr, source: e })?;
            let bound = listener.local_addr().unwrap_or(addr);
            addrs.push(bound);
            tasks.push(tokio::spawn(accept_loop(
                listener,
                tls,
                shared.clone(),
                shutdown_rx.clone(),
            )));
        }
        tasks.push(tokio::spawn(learn::analyzer::run(
            shared.clone(),
            shutdown_rx.clone(),
        )));
        let mut admin_addr = None;
        if let Some(a) = &config.admin {
            let addr = config::socket_addr(&source, &a.address)?;
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|e| ProxyError::Bind { addr, source: e })?;
            admin_addr = Some(listener.local_addr().unwrap_or(addr));
            tasks.push(tokio::spawn(admin::serve(
                listener,
                shared.clone(),
                shutdown_rx.clone(),
            )));
        }
        Ok(Server {
            shared,
            addrs,
            admin_addr,
            shutdown_tx,
            tasks,
            drain_timeout: Duration::from_millis(config.shutdown_timeout_ms),
        })
    }

    /// The bound addresses of the listeners, in configuration order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The admin listener's address.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// The shared state (routing table, metrics, audit).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Reloads the configuration file.
    pub async fn reload(&self) -> Result<ReloadReport, ProxyError> {
        self.shared.reload().await
    }

    /// Graceful shutdown: stops accepting, lets in-flight requests finish (up to the
    /// configured timeout), closes idle connections, drains the audit queue. Returns
    /// whether every connection finished in time.
    pub async fn shutdown(mut self) -> bool {
        let _ = self.shutdown_tx.send(true);
        let deadline = Instant::now() + self.drain_timeout;
        // Accept loops, the admin server and the learner end on the signal: wait
        // for them (up to the drain deadline), so that the listening sockets are
        // closed when this returns. Connection tasks are tracked by the gauge.
        for t in &mut self.tasks {
            let _ = tokio::time::timeout_at(deadline.into(), t).await;
        }
        let mut clean = true;
        while self
            .shared
            .metrics
            .active_connections
            .load(Ordering::Relaxed)
            > 0
        {
            if Instant::now() >= deadline {
                clean = false;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for t in self.tasks {
            t.abort();
        }
        if let Some(a) = &self.shared.audit {
            let a = a.clone();
            let _ = tokio::task::spawn_blocking(move || a.drain(Duration::from_secs(10))).await;
        }
        clean
    }

    /// Serves until SIGTERM or SIGINT (graceful shutdown); SIGHUP reloads.
    pub async fn run_until_signal(self) -> bool {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut hup), Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::hangup()),
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                tracing::error!("cannot install signal handlers");
                return self.shutdown().await;
            };
            loop {
                tokio::select! {
                    _ = hup.recv() => {
                        match self.reload().await {
                            Ok(r) => eprintln!("palisade: reloaded: {} routes, {} rules in {:?}", r.routes, r.rules, r.took),
                            Err(e) => eprintln!("palisade: reload failed, keeping the running configuration: {e}"),
                        }
                    }
                    _ = term.recv() => break,
                    _ = int.recv() => break,
                }
            }
            eprintln!("palisade: shutting down (draining in-flight requests)");
            self.shutdown().await
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            self.shutdown().await
        }
    }
}

/// Decrements the active-connection gauge when dropped.
struct ConnGuard(Arc<Shared>);

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.0
            .metrics
            .active_connections
            .fetch_sub(1, Ordering::Relaxed);
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: back off briefly rather than spin.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let local = stream.local_addr().unwrap_or(peer);
        shared
            .metrics
            .active_connections
            .fetch_add(1, Ordering::Relaxed);
        let guard = ConnGuard(shared.clone());
        let shared = shared.clone();
        let shutdown = shutdown.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _guard = guard;
            match tls {
                None => {
                    let conn = h1::conn_info(peer, local, false);
                    h1::serve(stream, conn, shared, shutdown).await;
                }
                Some(acceptor) => {
                    let conn = h1::conn_info(peer, local, true);
                    let handshake =
                        tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream))
                            .await;
                    let Ok(Ok(tls_stream)) = handshake else {
                        return;
                    };
                    let is_h2 = tls_stream.get_ref().1.alpn_protocol() == Some(b"h2");
                    if is_h2 {
                        h2::serve(tls_stream, conn, shared, shutdown).await;
                    } else {
                        h1::serve(tls_stream, conn, shared, shutdown).await;
                    }
                }
            }
        });
    }
}
