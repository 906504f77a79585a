//! The targets the harness starts, each in front of the same backend: nginx as a
//! plain reverse proxy, Palisade with the engine Off, Palisade with the CRS, nginx +
//! ModSecurity v3 + the CRS, and Coraza. Each is detected first; a missing one is
//! reported as skipped with the reason.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{pin, CompareError};

/// The nginx dynamic module of Debian's `libnginx-mod-http-modsecurity`.
pub const MODSECURITY_MODULE: &str = "/usr/lib/nginx/modules/ngx_http_modsecurity_module.so";

/// What a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "paranoia")]
pub enum Kind {
    /// nginx as a plain reverse proxy (the baseline of the ratios).
    Nginx,
    /// `palisade serve` with `engine = "Off"`.
    PalisadeOff,
    /// `palisade serve` with the CRS at a paranoia level.
    PalisadeCrs(u8),
    /// nginx + ModSecurity v3 (`libnginx-mod-http-modsecurity`) with the CRS.
    ModSecurity(u8),
    /// Coraza (no launcher: always skipped with the reason).
    Coraza,
}

impl Kind {
    /// A short identifier (file names, CLI): `nginx`, `palisade-off`,
    /// `palisade-pl1`, `modsecurity-pl1`, `coraza`.
    pub fn id(&self) -> String {
        match self {
            Kind::Nginx => "nginx".into(),
            Kind::PalisadeOff => "palisade-off".into(),
            Kind::PalisadeCrs(p) => format!("palisade-pl{p}"),
            Kind::ModSecurity(p) => format!("modsecurity-pl{p}"),
            Kind::Coraza => "coraza".into(),
        }
    }

    /// The label in tables and plots.
    pub fn label(&self) -> String {
        match self {
            Kind::Nginx => "nginx (plain proxy)".into(),
            Kind::PalisadeOff => "Palisade, engine Off".into(),
            Kind::PalisadeCrs(p) => format!("Palisade, CRS PL{p}"),
            Kind::ModSecurity(p) => format!("nginx + ModSecurity v3, CRS PL{p}"),
            Kind::Coraza => "Coraza".into(),
        }
    }
}

/// Parses `--targets` (`nginx,palisade-off,palisade-crs,modsecurity,coraza`, or
/// `all`), expanding the CRS targets over the paranoia levels.
pub fn parse_targets(list: &[String], paranoia: &[u8]) -> Result<Vec<Kind>, CompareError> {
    let mut out = Vec::new();
    let mut push = |k: Kind| {
        if !out.contains(&k) {
            out.push(k);
        }
    };
    for name in list.iter().flat_map(|s| s.split(',')).map(str::trim) {
        match name {
            "all" => {
                push(Kind::Nginx);
                push(Kind::PalisadeOff);
                paranoia.iter().for_each(|p| push(Kind::PalisadeCrs(*p)));
                paranoia.iter().for_each(|p| push(Kind::ModSecurity(*p)));
                push(Kind::Coraza);
            }
            "nginx" => push(Kind::Nginx),
            "palisade-off" => push(Kind::PalisadeOff),
            "palisade-crs" => paranoia.iter().for_each(|p| push(Kind::PalisadeCrs(*p))),
            "modsecurity" => paranoia.iter().for_each(|p| push(Kind::ModSecurity(*p))),
            "coraza" => push(Kind::Coraza),
            "" => {}
            other => return Err(CompareError::Usage(format!(
                "unknown target '{other}' (nginx, palisade-off, palisade-crs, modsecurity, coraza, all)"
            ))),
        }
    }
    if let Some(p) = paranoia.iter().find(|p| !(1..=4).contains(*p)) {
        return Err(CompareError::Usage(format!(
            "paranoia level {p}: expected 1 to 4"
        )));
    }
    Ok(out)
}

/// What is installed, and where the harness works.
#[derive(Debug, Clone)]
pub struct Env {
    /// The `palisade` binary to run `serve` with.
    pub palisade: PathBuf,
    /// The CRS directory.
    pub crs: PathBuf,
    /// `nginx`, when installed.
    pub nginx: Option<PathBuf>,
    /// The ModSecurity nginx module, when installed.
    pub modsecurity_module: Option<PathBuf>,
    /// `taskset`, when installed.
    pub taskset: Option<PathBuf>,
    /// Scratch directory for configurations and logs.
    pub work_dir: PathBuf,
    /// CPUs for the targets.
    pub server_cpus: Option<Vec<usize>>,
    /// Processes (nginx workers) or threads (Palisade) per target.
    pub server_threads: usize,
}

/// Finds `name` in `PATH` or the usual system directories.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

impl Env {
    /// Detects nginx, the ModSecurity module and taskset.
    pub fn detect(palisade: PathBuf, crs: PathBuf, work_dir: PathBuf) -> Env {
        let module = PathBuf::from(MODSECURITY_MODULE);
        Env {
            palisade,
            crs,
            nginx: which("nginx"),
            modsecurity_module: module.is_file().then_some(module),
            taskset: which("taskset"),
            work_dir,
            server_cpus: None,
            server_threads: 1,
        }
    }

    /// Why `kind` cannot run here, or `None` when it can.
    pub fn missing(&self, kind: Kind) -> Option<String> {
        match kind {
            Kind::Nginx if self.nginx.is_none() => {
                Some("nginx is not installed (apt-get install nginx)".into())
            }
            Kind::ModSecurity(_) if self.nginx.is_none() => Some(
                "nginx is not installed (apt-get install nginx libnginx-mod-http-modsecurity)"
                    .into(),
            ),
            Kind::ModSecurity(_) if self.modsecurity_module.is_none() => Some(format!(
                "{MODSECURITY_MODULE} not found (apt-get install libnginx-mod-http-modsecurity)"
            )),
            Kind::Coraza => Some(
                "no Coraza server: Debian packages none, and this harness has no Coraza \
                 launcher (coraza-caddy or coraza-proxy would need building from source)"
                    .into(),
            ),
            _ => None,
        }
    }
}

/// A free port on 127.0.0.1 (bound, read, released: another process could take it
/// in between, which the start-up check would then report).
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?
        .local_addr()?
        .port())
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// An nginx configuration: `upstream` is `Some(backend)` for a proxy, `None` for
/// the static backend (every request answered with [`super::backend::BODY`]);
/// `modsecurity` the rules file for a ModSecurity target.
pub fn nginx_config(
    dir: &Path,
    port: u16,
    workers: usize,
    upstream: Option<SocketAddr>,
    modsecurity: Option<(&Path, &Path)>,
) -> String {
    let d = dir.display();
    let mut c = String::new();
    if let Some((module, _)) = modsecurity {
        c.push_str(&format!("load_module {};\n", module.display()));
    }
    if is_root() {
        c.push_str("user root;\n");
    }
    c.push_str(&format!(
        "daemon off;\nmaster_process on;\nworker_processes {workers};\npid {d}/nginx.pid;\n\
         error_log {d}/error.log warn;\nevents {{ worker_connections 4096; }}\nhttp {{\n\
         access_log off;\nkeepalive_requests 100000000;\nkeepalive_timeout 120s;\n\
         client_body_temp_path {d}/body;\nproxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fastcgi;\nuwsgi_temp_path {d}/uwsgi;\nscgi_temp_path {d}/scgi;\n\
         client_max_body_size 16m;\n"
    ));
    if let Some(up) = upstream {
        c.push_str(&format!(
            "upstream backend {{ server {up}; keepalive 64; keepalive_requests 100000000; }}\n"
        ));
    }
    c.push_str(&format!(
        "server {{\nlisten 127.0.0.1:{port} default_server;\n"
    ));
    if let Some((_, rules)) = modsecurity {
        c.push_str(&format!(
            "modsecurity on;\nmodsecurity_rules_file {};\n",
            rules.display()
        ));
    }
    if upstream.is_some() {
        c.push_str(
            "location / {\nproxy_pass http://backend;\nproxy_http_version 1.1;\n\
             proxy_set_header Connection \"\";\nproxy_set_header Host $host;\n}\n",
        );
    } else {
        c.push_str(&format!(
            "location / {{\ndefault_type text/plain;\nreturn 200 \"{}\";\n}}\n",
            super::backend::BODY.replace('\n', "\\n")
        ));
    }
    c.push_str("}\n}\n");
    c
}

/// The ModSecurity rules file: the base settings Palisade uses for the CRS
/// (`ftw::crs_config`), audit logging off, the blocking paranoia level, the CRS.
pub fn modsecurity_rules(crs: &Path, paranoia: u8, dir: &Path) -> std::io::Result<String> {
    let text = ftw::crs_config::crs_config(crs, paranoia, false)?;
    // libmodsecurity 3.0.9 does not know some of the base settings; they only set
    // limits that the measured corpus never reaches.
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| {
            !l.starts_with("SecRequestBodyJsonDepthLimit") && !l.starts_with("SecArgumentsLimit")
        })
        .collect();
    let mut out = kept.join("\n");
    out.push_str(&format!(
        "\nSecAuditEngine Off\nSecDebugLogLevel 0\nSecTmpDir {0}\nSecDataDir {0}\n",
        dir.display()
    ));
    // The base settings come first; turn audit logging off after them too.
    Ok(out.replacen("SecAuditEngine RelevantOnly", "SecAuditEngine Off", 1))
}

/// A Palisade configuration with one route to `backend`.
pub fn palisade_config(port: u16, backend: SocketAddr, crs: Option<(&Path, u8)>) -> String {
    let mut c = format!(
        "[[listener]]\naddress = \"127.0.0.1:{port}\"\n\n[[upstream]]\nname = \"backend\"\n\
         addresses = [\"{backend}\"]\n\n[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\n"
    );
    match crs {
        Some((dir, p)) => c.push_str(&format!(
            "engine = \"On\"\ncrs = {{ dir = \"{}\", paranoia = {p} }}\n",
            dir.display()
                .to_string()
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
        )),
        None => c.push_str("engine = \"Off\"\n"),
    }
    c
}

/// A started server process tree.
#[derive(Debug)]
pub struct Running {
    /// The root process.
    pub child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// The log file (standard error, nginx's error log).
    pub log: PathBuf,
    /// The command line, for the report.
    pub command: String,
}

impl Running {
    /// The root process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the process tree: SIGTERM, then SIGKILL after 10 s.
    pub fn stop(mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            if let Ok(pid) = i32::try_from(self.child.id()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            std::thread::sleep(Duration::from_millis(200));
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Spawns `program args` pinned to `cpus` (taskset when installed, else
/// `sched_setaffinity` on the new process right after it starts), output to `log`.
pub fn spawn(
    env: &Env,
    cpus: Option<&[usize]>,
    program: &Path,
    args: &[String],
    log: &Path,
) -> Result<(Child, String), CompareError> {
    let out = std::fs::File::create(log).map_err(|e| CompareError::io(log, e))?;
    let err = out.try_clone().map_err(|e| CompareError::io(log, e))?;
    let mut words: Vec<String> = Vec::new();
    let mut cmd = match (cpus, &env.taskset) {
        (Some(c), Some(taskset)) => {
            words.extend(["taskset".into(), "-c".into(), pin::format_cpus(c)]);
            let mut cmd = Command::new(taskset);
            cmd.arg("-c").arg(pin::format_cpus(c)).arg(program);
            cmd
        }
        _ => Command::new(program),
    };
    words.push(program.display().to_string());
    words.extend(args.iter().cloned());
    cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
    let child = cmd.spawn().map_err(|e| CompareError::io(program, e))?;
    if let (Some(c), None) = (cpus, &env.taskset) {
        pin::pin_pid(child.id(), c).map_err(|e| CompareError::Start {
            target: program.display().to_string(),
            reason: format!("pinning to CPUs {}: {e}", pin::format_cpus(c)),
        })?;
    }
    Ok((child, words.join(" ")))
}

/// Waits until `addr` answers an HTTP request (any status), the process exits, or
/// `timeout` passes.
pub fn wait_ready(child: &mut Child, addr: SocketAddr, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let probe = crate::http::client::prepare(
        &crate::corpus::Request {
            name: "probe".into(),
            method: "GET".into(),
            target: "/".into(),
            version: "HTTP/1.1".into(),
            headers: vec![("User-Agent".into(), "palisade-bench-compare".into())],
            body: String::new(),
            resp_len: 0,
        },
        &addr.to_string(),
        false,
    );
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited during start-up ({status})"));
        }
        let ok = rt.block_on(async {
            let Ok(mut c) = crate::http::client::Conn::connect(addr).await else {
                return false;
            };
            tokio::time::timeout(Duration::from_secs(5), c.round_trip(&probe))
                .await
                .is_ok_and(|r| r.is_ok())
        });
        if ok {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("no answer on {addr} after {timeout:?}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

fn write(path: &Path, text: &str) -> Result<(), CompareError> {
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| CompareError::io(path, e))
}

/// Starts an nginx serving the static backend body on `cpus`.
pub fn start_nginx_backend(env: &Env, cpus: Option<&[usize]>) -> Result<Running, CompareError> {
    let Some(nginx) = &env.nginx else {
        return Err(CompareError::Start {
            target: "backend".into(),
            reason: "nginx is not installed".into(),
        });
    };
    let dir = env.work_dir.join("backend");
    std::fs::create_dir_all(&dir).map_err(|e| CompareError::io(&dir, e))?;
    let port = free_port().map_err(|e| CompareError::io(&dir, e))?;
    let conf = dir.join("nginx.conf");
    write(&conf, &nginx_config(&dir, port, 1, None, None))?;
    start_nginx(env, nginx, &dir, &conf, port, cpus, "backend")
}

fn start_nginx(
    env: &Env,
    nginx: &Path,
    dir: &Path,
    conf: &Path,
    port: u16,
    cpus: Option<&[usize]>,
    name: &str,
) -> Result<Running, CompareError> {
    let log = dir.join("error.log");
    let args = vec![
        "-p".into(),
        dir.display().to_string(),
        "-e".into(),
        log.display().to_string(),
        "-c".into(),
        conf.display().to_string(),
    ];
    let (mut child, command) = spawn(env, cpus, nginx, &args, &dir.join("stderr.log"))?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    if let Err(reason) = wait_ready(&mut child, addr, Duration::from_secs(60)) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(CompareError::Start {
            target: name.into(),
            reason: format!(
                "{reason}; log: {} {}",
                tail(&dir.join("stderr.log")),
                tail(&log)
            ),
        });
    }
    Ok(Running {
        child,
        addr,
        log,
        command,
    })
}

/// Starts target `kind` in front of `backend`.
pub fn start(env: &Env, kind: Kind, backend: SocketAddr) -> Result<Running, CompareError> {
    let dir = env.work_dir.join(kind.id());
    std::fs::create_dir_all(&dir).map_err(|e| CompareError::io(&dir, e))?;
    let port = free_port().map_err(|e| CompareError::io(&dir, e))?;
    let cpus = env.server_cpus.as_deref();
    let threads = env.server_threads.max(1);
    let unavailable = |reason: String| CompareError::Start {
        target: kind.id(),
        reason,
    };
    match kind {
        Kind::Nginx | Kind::ModSecurity(_) => {
            let nginx = env
                .nginx
                .as_ref()
                .ok_or_else(|| unavailable("nginx is not installed".into()))?;
            let conf = dir.join("nginx.conf");
            let modsec = match kind {
                Kind::ModSecurity(p) => {
                    let module = env
                        .modsecurity_module
                        .as_ref()
                        .ok_or_else(|| unavailable("ModSecurity module not installed".into()))?;
                    let rules = dir.join("modsecurity.conf");
                    let text = modsecurity_rules(&env.crs, p, &dir)
                        .map_err(|e| CompareError::io(&env.crs, e))?;
                    write(&rules, &text)?;
                    Some((module.clone(), rules))
                }
                _ => None,
            };
            let text = nginx_config(
                &dir,
                port,
                threads,
                Some(backend),
                modsec.as_ref().map(|(m, r)| (m.as_path(), r.as_path())),
            );
            write(&conf, &text)?;
            start_nginx(env, nginx, &dir, &conf, port, cpus, &kind.id())
        }
        Kind::PalisadeOff | Kind::PalisadeCrs(_) => {
            let conf = dir.join("palisade.toml");
            let crs = match kind {
                Kind::PalisadeCrs(p) => Some((env.crs.as_path(), p)),
                _ => None,
            };
            write(&conf, &palisade_config(port, backend, crs))?;
            let log = dir.join("palisade.log");
            let args = vec![
                "serve".into(),
                "--config".into(),
                conf.display().to_string(),
                "--threads".into(),
                threads.to_string(),
                "--log-level".into(),
                "warn".into(),
            ];
            let (mut child, command) = spawn(env, cpus, &env.palisade, &args, &log)?;
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            if let Err(reason) = wait_ready(&mut child, addr, Duration::from_secs(120)) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(unavailable(format!("{reason}; log: {}", tail(&log))));
            }
            Ok(Running {
                child,
                addr,
                log,
                command,
            })
        }
        Kind::Coraza => Err(unavailable(env.missing(kind).unwrap_or_default())),
    }
}
