//! `palisade eval`: one raw HTTP request through the engine, explained.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use engine::{Connection, Program, Transaction};

/// Arguments of `palisade eval`.
#[derive(clap::Args)]
pub struct Args {
    /// A file holding one raw HTTP/1.1 request (request line, headers, blank line,
    /// body); `-` reads standard input.
    pub request: PathBuf,
    /// Rule files, directories or globs (default: the CRS from --crs).
    #[arg(long = "rules", num_args = 1..)]
    pub rules: Vec<PathBuf>,
    /// The CRS directory used when --rules is not given.
    #[arg(long, default_value = "../shared/crs")]
    pub crs: PathBuf,
    /// CRS blocking paranoia level (1-4) when the CRS is used.
    #[arg(long, default_value_t = 1)]
    pub paranoia: u8,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Explained<'a> {
    decision: String,
    status: u16,
    matched: &'a [engine::audit::MatchedRule],
    scores: Vec<(String, String)>,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<ExitCode> {
    let raw = if args.request.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().take_limited(), &mut buf)?;
        buf
    } else {
        std::fs::read(&args.request)
            .with_context(|| format!("reading {}", args.request.display()))?
    };
    let raw = normalise_line_ends(&raw);
    let req = ftw::parse_request(&raw).map_err(|e| {
        anyhow::anyhow!("{}: not a valid HTTP request: {e}", args.request.display())
    })?;
    let program = if args.rules.is_empty() {
        let text = ftw::crs_config::crs_config(&args.crs, args.paranoia, false)
            .with_context(|| format!("reading the CRS at {}", args.crs.display()))?;
        Program::from_str("crs.conf", &text)
    } else {
        Program::from_paths(&args.rules)
    }
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut tx = Transaction::new(program, &Connection::default());
    let uri = String::from_utf8_lossy(&req.uri).into_owned();
    tx.process_uri(
        &uri,
        &String::from_utf8_lossy(&req.method),
        &String::from_utf8_lossy(&req.version),
    );
    for h in &req.headers {
        tx.add_request_header(&h.name, &h.value);
    }
    tx.process_request_headers();
    if tx.intervention().is_none() {
        tx.append_request_body(&req.body);
        tx.process_request_body();
    }
    if tx.intervention().is_none() {
        tx.add_response_header(b"Content-Type", b"text/html");
        tx.process_response_headers(200, "HTTP/1.1");
        tx.process_response_body();
    }
    tx.process_logging();
    let (decision, status) = match tx.intervention() {
        Some(i) => (format!("{i:?}"), i.status()),
        None => ("pass".to_string(), 200),
    };
    let scores: Vec<(String, String)> = tx
        .tx_collection()
        .iter()
        .filter(|(k, _)| k.contains("anomaly_score") || k.ends_with("paranoia_level"))
        .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v).into_owned()))
        .collect();
    if args.json {
        let e = Explained {
            decision,
            status,
            matched: tx.matched_rules(),
            scores,
        };
        println!("{}", serde_json::to_string_pretty(&e)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("decision: {decision}");
    println!("matched rules: {}", tx.matched_rules().len());
    for m in tx.matched_rules() {
        println!(
            "  [{}] phase {} severity {} {}",
            m.id,
            m.phase,
            m.severity
                .map_or("-".to_string(), |s| engine::audit::SEVERITY_NAMES
                    [s as usize]
                    .to_string()),
            m.msg
        );
        println!("      variable:    {}", m.matched_var_name);
        println!("      transformed: {}", clip(&m.matched_var));
        if !m.data.is_empty() {
            println!("      data:        {}", clip(&m.data));
        }
        println!("      operator:    {}", clip(&m.operator));
    }
    println!("scores:");
    for (k, v) in scores {
        println!("  {k} = {v}");
    }
    Ok(ExitCode::SUCCESS)
}

fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(160).collect();
    if s.chars().count() > 160 {
        out.push_str("...");
    }
    out
}

/// Request files are often written with LF line ends: turn a bare LF in the head
/// into CRLF so the strict parser accepts them (the body is kept as is).
fn normalise_line_ends(raw: &[u8]) -> Vec<u8> {
    let head_end = find(raw, b"\r\n\r\n")
        .map(|p| p + 4)
        .or_else(|| find(raw, b"\n\n").map(|p| p + 2));
    let (head, body) = match head_end {
        Some(e) => raw.split_at(e),
        None => (raw, &b""[..]),
    };
    let mut out = Vec::with_capacity(raw.len() + 32);
    let mut prev = 0u8;
    for &b in head {
        if b == b'\n' && prev != b'\r' {
            out.push(b'\r');
        }
        out.push(b);
        prev = b;
    }
    if head_end.is_none() && !out.ends_with(b"\r\n\r\n") {
        while !out.ends_with(b"\r\n\r\n") {
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(body);
    out
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

trait TakeLimited: Sized {
    fn take_limited(self) -> std::io::Take<Self>;
}

impl<R: std::io::Read> TakeLimited for R {
    /// Requests read from standard input are capped at 64 MiB.
    fn take_limited(self) -> std::io::Take<Self> {
        self.take(64 << 20)
    }
}
