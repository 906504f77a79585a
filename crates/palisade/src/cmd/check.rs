//! `palisade check`: load, validate and summarise a configuration.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use seclang::{load_paths, Summary};
use serde::Serialize;

/// Arguments of `palisade check`.
#[derive(clap::Args)]
pub struct Args {
    /// Configuration files, directories (their *.conf files) or globs, loaded in order.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Print one JSON object (summary and errors) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also print the evaluation plan: every rule by phase and how the compiler
    /// admits it (prefiltered by literals, or always evaluated and why).
    #[arg(long)]
    pub plan: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<String>,
    valid: bool,
    parse_ms: f64,
    compile_ms: f64,
    summary: &'a Summary,
    regex_fallbacks: Vec<Fallback>,
    errors: Vec<JsonError>,
}

/// A `@rx` pattern the linear-time engine refused, run by the bounded backtracking
/// engine instead.
#[derive(Serialize)]
struct Fallback {
    rule: u32,
    location: String,
    reason: String,
}

#[derive(Serialize)]
struct JsonError {
    kind: &'static str,
    message: String,
    location: String,
    help: Option<String>,
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let start = Instant::now();
    let loaded = load_paths(&args.paths);
    let parse_ms = start.elapsed().as_secs_f64() * 1e3;
    let summary = Summary::of(&loaded);
    // A configuration that parses is also compiled: operators are built (regexes,
    // phrase files, IP lists), so their errors are found here too.
    let compile_start = Instant::now();
    let mut compile_error = None;
    let mut fallbacks = Vec::new();
    let mut plan = None;
    if loaded.is_ok() {
        match engine::Program::from_loaded(&loaded) {
            Ok(program) => {
                fallbacks = regex_fallbacks(&program);
                if args.plan {
                    plan = Some(engine::plan::render(&program));
                }
            }
            Err(e) => compile_error = Some(e.to_string()),
        }
    }
    let compile_ms = compile_start.elapsed().as_secs_f64() * 1e3;
    let valid = loaded.is_ok() && compile_error.is_none();
    if args.json {
        let mut errors: Vec<JsonError> = loaded
            .errors
            .iter()
            .map(|e| JsonError {
                kind: e.kind.name(),
                message: e.message.clone(),
                location: e.location(&loaded.sources),
                help: e.help.clone(),
            })
            .collect();
        if let Some(e) = &compile_error {
            errors.push(JsonError {
                kind: "compile",
                message: e.clone(),
                location: String::new(),
                help: None,
            });
        }
        let report = Report {
            plan,
            valid,
            parse_ms,
            compile_ms,
            summary: &summary,
            regex_fallbacks: fallbacks,
            errors,
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if let Some(e) = &compile_error {
        eprintln!("{e}");
        eprintln!("the configuration parses but does not compile");
    } else if loaded.is_ok() {
        print!("{}", render_summary(&summary, parse_ms));
        if let Some(plan) = &plan {
            print!("{plan}");
        }
        println!("compiled in {compile_ms:.1} ms");
        if fallbacks.is_empty() {
            println!("regular expressions: all run on the linear-time engine");
        } else {
            println!(
                "regular expressions: {} run on the bounded backtracking engine:",
                fallbacks.len()
            );
            for f in &fallbacks {
                println!("  rule {} at {}: {}", f.rule, f.location, f.reason);
            }
        }
    } else {
        eprint!("{}", loaded.render_errors());
        eprintln!(
            "{} error{} in {} file{}",
            loaded.errors.len(),
            if loaded.errors.len() == 1 { "" } else { "s" },
            summary.files,
            if summary.files == 1 { "" } else { "s" },
        );
    }
    Ok(if valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn render_summary(s: &Summary, parse_ms: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "configuration is valid ({parse_ms:.1} ms)");
    let _ = writeln!(out, "  files          {}", s.files);
    let _ = writeln!(out, "  directives     {}", s.directives);
    let _ = writeln!(
        out,
        "  rules          {} ({} SecAction)",
        s.rules, s.sec_actions
    );
    let _ = writeln!(out, "  chain links    {}", s.chain_links);
    let _ = writeln!(out, "  markers        {}", s.markers);
    let phases: Vec<String> = s
        .rules_by_phase
        .iter()
        .map(|(p, n)| format!("{p}:{n}"))
        .collect();
    let _ = writeln!(out, "  rules by phase {}", phases.join(" "));
    histogram(&mut out, "operators", &s.operators, usize::MAX);
    histogram(&mut out, "variables (top 15)", &s.variables, 15);
    histogram(
        &mut out,
        "transformation chains (top 15)",
        &s.transformation_chains,
        15,
    );
    out
}

fn histogram(out: &mut String, title: &str, map: &BTreeMap<String, usize>, limit: usize) {
    let mut rows: Vec<(&String, &usize)> = map.iter().collect();
    rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let _ = writeln!(out, "{title}:");
    let max = rows.first().map_or(1, |r| *r.1).max(1);
    for (name, n) in rows.into_iter().take(limit) {
        let bar = "#".repeat((n * 30).div_ceil(max));
        let _ = writeln!(out, "  {n:>5}  {name:<40} {bar}");
    }
}

fn regex_fallbacks(program: &engine::Program) -> Vec<Fallback> {
    program
        .rules
        .iter()
        .filter_map(|r| match &r.operator.op {
            engine::rule::CompiledOp::Static(op) => match op.regex_engine() {
                Some(engine::operator::RegexEngine::Backtracking { reason }) => Some(Fallback {
                    rule: r.chain_id,
                    location: format!("{}:{}", r.record.file, r.line),
                    reason: reason.to_string(),
                }),
                _ => None,
            },
            engine::rule::CompiledOp::Dynamic(_) | engine::rule::CompiledOp::GeoLookup(_) => None,
        })
        .collect()
}
