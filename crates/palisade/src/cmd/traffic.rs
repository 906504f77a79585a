//! `palisade traffic`: request corpora modelled on real web traffic.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use bench::traffic::attacks::{AttackPool, PoolOptions};
use bench::traffic::generate::{generate, GenerateOptions};
use bench::traffic::mix::Distribution;
use bench::traffic::profiles::{BenignModel, Profile};
use bench::traffic::values::{Shares, ValueModel};
use bench::traffic::verify::Verifier;
use bench::traffic::zipf::Rng;
use clap::Subcommand;

/// `palisade traffic` subcommands.
#[derive(Subcommand)]
pub enum TrafficCommand {
    /// Generate a corpus (JSON Lines, one request per line).
    ///
    /// Benign requests follow an application profile, with the top 10 values of
    /// ARGS, cookies and User-Agent covering the chosen shares of traffic (Zipf
    /// among themselves); each is checked against the CRS in-process and false
    /// positives are replaced (and listed with --fp-log). Exactly
    /// round(count x ratio) requests are attacks from the CRS regression tests,
    /// each blocked by the CRS at --paranoia, spread over rule groups by
    /// --distribution. The same options give the same file.
    Generate(GenerateArgs),
    /// Measure a corpus: the share of traffic the top values of ARGS, ARGS_NAMES,
    /// COOKIES, COOKIES_NAMES, User-Agent and whole requests cover (the RuleCache
    /// paper's Table IV), and the count per class.
    Stats(StatsArgs),
    /// Print corpus requests as raw HTTP/1.1, e.g. for `palisade eval -`:
    /// `palisade traffic raw corpus.jsonl --line 7 | palisade eval -`.
    Raw(RawArgs),
}

/// Arguments of `palisade traffic raw`.
#[derive(clap::Args)]
pub struct RawArgs {
    /// The corpus (JSON Lines or JSON array).
    pub corpus: PathBuf,
    /// Only this request (1-based position in the corpus).
    #[arg(long)]
    pub line: Option<usize>,
}

/// Arguments of `palisade traffic generate`.
#[derive(clap::Args)]
pub struct GenerateArgs {
    /// Number of requests.
    #[arg(long)]
    pub count: u64,
    /// Share of attacks, 0 to 1 (exactly round(count x ratio) attacks).
    #[arg(long, default_value_t = 0.0)]
    pub attack_ratio: f64,
    /// Seed of the random stream.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Application profile of benign requests: mixed, site, api, form, static.
    #[arg(long, default_value = "mixed")]
    pub profile: Profile,
    /// Attack distribution over rule groups: even, real, best, worst.
    #[arg(long, default_value = "real")]
    pub distribution: Distribution,
    /// The CRS directory (rules and regression tests).
    #[arg(long, default_value = "../shared/crs")]
    pub crs: PathBuf,
    /// Output file (`-` for standard output).
    #[arg(long)]
    pub out: PathBuf,
    /// Share of ARGS values covered by the top 10 values (0 to 1).
    #[arg(long, default_value_t = Shares::default().args)]
    pub args_share: f64,
    /// Share of cookie values covered by the top 10 values (0 to 1).
    #[arg(long, default_value_t = Shares::default().cookies)]
    pub cookies_share: f64,
    /// Share of User-Agents covered by the top 10 values (0 to 1).
    #[arg(long, default_value_t = Shares::default().user_agent)]
    pub ua_share: f64,
    /// Zipf exponent among the top values (0 = equally frequent).
    #[arg(long, default_value_t = 1.0)]
    pub skew: f64,
    /// Paranoia level benign requests must pass and attacks must be blocked at.
    #[arg(long, default_value_t = 1)]
    pub paranoia: u8,
    /// Do not check benign requests against the CRS (faster; attacks are still
    /// checked).
    #[arg(long)]
    pub no_verify: bool,
    /// Write every removed false positive here (JSON Lines: rules, request).
    #[arg(long)]
    pub fp_log: Option<PathBuf>,
    /// Threads for the CRS checks (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `palisade traffic stats`.
#[derive(clap::Args)]
pub struct StatsArgs {
    /// The corpus (JSON Lines or JSON array).
    pub corpus: PathBuf,
    /// How many top values to count.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `palisade traffic ...`.
pub fn run(cmd: &TrafficCommand) -> Result<ExitCode> {
    match cmd {
        TrafficCommand::Generate(args) => run_generate(args),
        TrafficCommand::Stats(args) => run_stats(args),
        TrafficCommand::Raw(args) => run_raw(args),
    }
}

fn share(name: &str, v: f64) -> Result<f64> {
    if !(0.0..=1.0).contains(&v) {
        anyhow::bail!("--{name} must be between 0 and 1, got {v}");
    }
    Ok(v)
}

fn run_generate(args: &GenerateArgs) -> Result<ExitCode> {
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let opts = GenerateOptions {
        count: args.count,
        attack_ratio: share("attack-ratio", args.attack_ratio)?,
        seed: args.seed,
        profile: args.profile,
        distribution: args.distribution,
        shares: Shares {
            args: share("args-share", args.args_share)?,
            cookies: share("cookies-share", args.cookies_share)?,
            user_agent: share("ua-share", args.ua_share)?,
        },
        skew: args.skew,
        threads,
    };
    let started = std::time::Instant::now();
    let needs_crs = !args.no_verify || opts.attack_ratio > 0.0;
    let verifier = if needs_crs {
        Some(
            Verifier::crs(&args.crs, args.paranoia)
                .with_context(|| format!("loading the CRS at {}", args.crs.display()))?,
        )
    } else {
        None
    };
    let pool = match (&verifier, opts.attack_ratio > 0.0) {
        (Some(v), true) => {
            let mut rng = Rng::new(args.seed);
            let model = BenignModel::new(ValueModel::new(opts.shares, opts.skew, &mut rng));
            let pool = AttackPool::build(
                &args.crs,
                &model,
                v,
                &PoolOptions {
                    paranoia: args.paranoia,
                    threads,
                    seed: args.seed,
                    ..PoolOptions::default()
                },
            )?;
            eprintln!(
                "attack pool: {} of {} CRS test cases usable ({} not representable, {} not blocked at PL{}), {} rule groups",
                pool.stats.kept,
                pool.stats.candidates,
                pool.stats.unrepresentable,
                pool.stats.not_blocked,
                args.paranoia,
                pool.groups.len()
            );
            Some(pool)
        }
        _ => None,
    };
    let mut out: Box<dyn Write> = if args.out.as_os_str() == "-" {
        Box::new(BufWriter::new(std::io::stdout().lock()))
    } else {
        Box::new(BufWriter::new(
            std::fs::File::create(&args.out)
                .with_context(|| format!("creating {}", args.out.display()))?,
        ))
    };
    let mut fp_log: Option<BufWriter<std::fs::File>> = match &args.fp_log {
        Some(p) => Some(BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => None,
    };
    let summary = generate(
        &opts,
        pool.as_ref(),
        if args.no_verify {
            None
        } else {
            verifier.as_ref()
        },
        &mut out,
        fp_log.as_mut().map(|w| w as &mut dyn Write),
    )?;
    out.flush()?;
    if let Some(mut w) = fp_log {
        w.flush()?;
    }
    let secs = started.elapsed().as_secs_f64();
    if args.json {
        let mut v = serde_json::to_value(&summary)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("options".into(), serde_json::to_value(&opts)?);
            o.insert("seconds".into(), secs.into());
        }
        eprintln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        eprintln!(
            "{} requests ({} attacks) in {:.1} s; benign checked against CRS PL{}: {}; false positives removed: {}",
            summary.requests,
            summary.attacks,
            secs,
            args.paranoia,
            if summary.verified { "yes" } else { "no" },
            summary.false_positives_removed
        );
        for (rule, n) in &summary.false_positive_rules {
            eprintln!("  false positive rule {rule}: {n}");
        }
        for (class, n) in &summary.classes {
            eprintln!("  {class}: {n}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run_stats(args: &StatsArgs) -> Result<ExitCode> {
    let file = std::fs::File::open(&args.corpus)
        .with_context(|| format!("opening {}", args.corpus.display()))?;
    let mut counter = bench::traffic::stats::Counter::new();
    let mut classes: std::collections::BTreeMap<String, u64> = Default::default();
    let mut add = |r: &bench::corpus::Request| {
        counter.add_request(r);
        *classes.entry(r.name.clone()).or_default() += 1;
    };
    // Streamed for JSON Lines; a JSON array is read whole.
    let mut reader = std::io::BufReader::new(file);
    let first = std::io::BufRead::fill_buf(&mut reader)?
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace());
    if first == Some(b'[') {
        for r in bench::corpus::load(&args.corpus)? {
            add(&r);
        }
    } else {
        for (i, line) in std::io::BufRead::lines(reader).enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let r: bench::corpus::Request = serde_json::from_str(&line)
                .with_context(|| format!("{}:{}", args.corpus.display(), i + 1))?;
            add(&r);
        }
    }
    let shares = counter.shares(args.top);
    if args.json {
        let v = serde_json::json!({ "top": args.top, "targets": shares, "classes": classes });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "{:<16} {:>12} {:>10} {:>10}",
            "target",
            "occurrences",
            "distinct",
            format!("top {}", args.top)
        );
        for s in &shares {
            println!(
                "{:<16} {:>12} {:>10} {:>9.1}%",
                s.target,
                s.occurrences,
                s.distinct,
                s.top_share * 100.0
            );
        }
        for (class, n) in &classes {
            println!("{class}: {n}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run_raw(args: &RawArgs) -> Result<ExitCode> {
    let corpus = bench::corpus::load(&args.corpus)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    match args.line {
        Some(n) => {
            let r = n
                .checked_sub(1)
                .and_then(|i| corpus.get(i))
                .with_context(|| {
                    format!("{} has {} requests", args.corpus.display(), corpus.len())
                })?;
            out.write_all(&bench::http::client::raw(r))?;
        }
        None => {
            for r in &corpus {
                out.write_all(&bench::http::client::raw(r))?;
                out.write_all(b"\r\n")?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
