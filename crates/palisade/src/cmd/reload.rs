//! `palisade reload`: asks a running `palisade serve` to reload its configuration
//! through the admin listener (the same as `POST /reload` or SIGHUP).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

/// Arguments of `palisade reload`.
#[derive(clap::Args)]
pub struct Args {
    /// The configuration file of the running proxy (its `[admin] address` is used).
    #[arg(long, short, required_unless_present = "admin")]
    pub config: Option<PathBuf>,
    /// The admin address (`ip:port`), instead of reading it from --config.
    #[arg(long)]
    pub admin: Option<SocketAddr>,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<ExitCode> {
    let addr = match (args.admin, &args.config) {
        (Some(a), _) => a,
        (None, Some(path)) => {
            let (config, source) = proxy::config::load(path)?;
            let Some(admin) = config.admin else {
                bail!(
                    "{} has no [admin] address to send the reload to",
                    path.display()
                );
            };
            proxy::config::socket_addr(&source, &admin.address)?
        }
        (None, None) => bail!("give --config or --admin"),
    };
    let rt = super::serve::runtime(Some(1))?;
    let (status, text) = rt
        .block_on(proxy::admin::request_reload(addr))
        .with_context(|| format!("cannot reach the admin listener at {addr}"))?;
    print!("{text}");
    Ok(if status == 200 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
