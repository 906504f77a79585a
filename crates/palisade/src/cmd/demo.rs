//! `palisade demo`: the built-in echo backend with the WAF (CRS PL1) in front of it,
//! on 127.0.0.1, to try Palisade in one command.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

/// Arguments of `palisade demo`.
#[derive(clap::Args)]
pub struct Args {
    /// The CRS directory.
    #[arg(long, default_value = "../shared/crs")]
    pub crs: PathBuf,
    /// The port the WAF listens on (0: any free port).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Worker threads (default: one per CPU).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<ExitCode> {
    super::serve::init_log("warn");
    if !args.crs.join("rules").is_dir() {
        bail!(
            "no CRS at {} (expected crs-setup.conf.example and rules/); give --crs DIR",
            args.crs.display()
        );
    }
    let crs = std::fs::canonicalize(&args.crs)
        .with_context(|| format!("cannot resolve {}", args.crs.display()))?;
    let dir = std::env::temp_dir().join(format!("palisade-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let audit = dir.join("audit.log");
    let rt = super::serve::runtime(args.threads)?;
    rt.block_on(async {
        let (echo, _task) = proxy::echo::start(([127, 0, 0, 1], 0).into())
            .await
            .context("cannot start the echo backend")?;
        let config = format!(
            r#"# Written by `palisade demo`.
[[listener]]
address = "127.0.0.1:{port}"

[admin]
address = "127.0.0.1:0"

[audit]
path = {audit}

[[upstream]]
name = "echo"
addresses = ["{echo}"]

[[route]]
upstream = "echo"
crs = {{ dir = {crs}, paranoia = 1 }}
"#,
            port = args.port,
            audit = proxy::config::toml_string(&audit.display().to_string()),
            crs = proxy::config::toml_string(&crs.display().to_string()),
        );
        let path = dir.join("palisade.toml");
        std::fs::write(&path, config).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("palisade demo: compiling the CRS (paranoia level 1) ...");
        let server = proxy::Server::start(&path).await.with_context(|| {
            format!(
                "cannot start the demo (port {} busy? --port 0 picks a free one)",
                args.port
            )
        })?;
        let addr = server.addrs().first().copied().context("no listener")?;
        let url = format!("http://{addr}");
        println!("Palisade demo: the WAF (OWASP CRS, paranoia level 1) in front of a built-in echo backend.");
        println!();
        println!("  {url}");
        println!();
        println!("Try:");
        println!("  curl -i '{url}/?q=hello'                     # benign: 200 from the echo backend");
        println!("  curl -i \"{url}/?id=1'%20OR%20'1'='1\"          # SQL injection: 403 with a reference id");
        println!("  curl -i -d 'comment=<script>alert(1)</script>' {url}/post   # XSS: 403");
        println!();
        println!("Audit log:   {}", audit.display());
        println!("Config:      {}", path.display());
        if let Some(a) = server.admin_addr() {
            println!("Metrics:     http://{a}/metrics");
        }
        println!("Stop with Ctrl-C.");
        server.run_until_signal().await;
        Ok(ExitCode::SUCCESS)
    })
}
