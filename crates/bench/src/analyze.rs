//! The offline analyzer (`palisade analyze`): replays traffic (a corpus, or a
//! ModSecurity JSON audit log) through the engine with profiling on and reports
//! what the RuleCache paper's analyzer learns (its Fig. 1): per-rule cost and hit
//! tables, the proposed rule order per phase and its expected gain, and which
//! request values repeat (the Rule Result Cache's candidates).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use engine::ordering::{self, OrderPlan};
use engine::profile::Profile;
use engine::variable::Var;
use engine::Program;
use serde::Serialize;

use crate::corpus::{self, Request};
use crate::engine_bench::{self, RuleLine};

/// Why traffic could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalyzeError {
    /// Neither a corpus nor an audit log.
    #[error("{path}: neither a corpus ({corpus}) nor a JSON audit log ({audit})")]
    Unreadable {
        /// The file.
        path: String,
        /// The corpus reader's error.
        corpus: String,
        /// The audit log reader's error.
        audit: String,
    },
}

/// Reads requests from a corpus file or, failing that, a JSON audit log (one
/// record per line, as `palisade serve` writes): each request is rebuilt from the
/// record's method, URI, version, headers and body (when the log has them).
pub fn load_traffic(path: &Path) -> Result<Vec<Request>, AnalyzeError> {
    let corpus_err = match corpus::load(path) {
        Ok(c) if !c.is_empty() => return Ok(c),
        Ok(_) => "empty".to_string(),
        Err(e) => e.to_string(),
    };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let reqs = audit_requests(&text);
            if reqs.is_empty() {
                Err(AnalyzeError::Unreadable {
                    path: path.display().to_string(),
                    corpus: corpus_err,
                    audit: "no audit record with a request".into(),
                })
            } else {
                Ok(reqs)
            }
        }
        Err(e) => Err(AnalyzeError::Unreadable {
            path: path.display().to_string(),
            corpus: corpus_err,
            audit: e.to_string(),
        }),
    }
}

/// The requests of JSON audit records, one per line (other lines are skipped).
pub fn audit_requests(text: &str) -> Vec<Request> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(req) = v.get("transaction").and_then(|t| t.get("request")) else {
            continue;
        };
        let Some(uri) = req.get("uri").and_then(|u| u.as_str()) else {
            continue;
        };
        let method = req.get("method").and_then(|m| m.as_str()).unwrap_or("GET");
        let version = match req.get("http_version") {
            Some(serde_json::Value::Number(n)) => format!("HTTP/{n}"),
            Some(serde_json::Value::String(s)) => format!("HTTP/{s}"),
            _ => "HTTP/1.1".into(),
        };
        let headers = req
            .get("headers")
            .and_then(|h| h.as_object())
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let body = req
            .get("body")
            .and_then(|b| b.as_str())
            .unwrap_or_default()
            .to_string();
        out.push(Request {
            name: "audit".into(),
            method: method.to_string(),
            target: uri.to_string(),
            version,
            headers,
            body,
            resp_len: 64,
        });
    }
    out
}

/// One (variable, key) of the value-repetition table.
#[derive(Debug, Clone, Serialize)]
pub struct Repetition {
    /// The variable (`ARGS`, `REQUEST_HEADERS`, ...).
    pub variable: String,
    /// The key.
    pub key: String,
    /// Requests that had it.
    pub requests: u64,
    /// Share of those whose value repeats an earlier request's.
    pub repeat_share: f64,
    /// Rules inspecting it.
    pub rules: usize,
    /// Their summed ns per evaluation.
    pub rule_ns: f64,
    /// Weight: repeated occurrences × the rules' summed ns (ns a result cache
    /// could save over the traffic).
    pub weight: f64,
}

/// A unit that moved in the proposed order.
#[derive(Debug, Clone, Serialize)]
pub struct Move {
    /// Phase.
    pub phase: u8,
    /// Rule id.
    pub id: u32,
    /// Position in its segment before and after.
    pub from: usize,
    /// New position.
    pub to: usize,
    /// ns per evaluation.
    pub ns: f64,
    /// Probability it ends the phase.
    pub exit: f64,
}

/// Per phase: segments considered and why the other steps are fixed.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseOrder {
    /// Phase.
    pub phase: u8,
    /// Segments (runs of movable rules) considered.
    pub segments: usize,
    /// Segments whose order changes.
    pub reordered: usize,
    /// Fixed steps by reason.
    pub fixed: Vec<(String, usize)>,
}

/// The analyzer's report.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    /// Requests replayed.
    pub requests: u64,
    /// Requests that got an intervention.
    pub blocked: u64,
    /// Rules by total time.
    pub rules_by_time: Vec<RuleLine>,
    /// Rules by matches.
    pub rules_by_hits: Vec<RuleLine>,
    /// Per phase ordering summary.
    pub phases: Vec<PhaseOrder>,
    /// Units that move.
    pub moves: Vec<Move>,
    /// Expected ns per request of the reordered segments, before and after.
    pub expected_ns_before: f64,
    /// After.
    pub expected_ns_after: f64,
    /// Expected ns saved per request.
    pub expected_gain_ns: f64,
    /// Measured ns per request in rules (all phases).
    pub rule_ns_per_request: f64,
    /// Value repetition, by weight.
    pub repetition: Vec<Repetition>,
    /// The plan itself (not serialised).
    #[serde(skip)]
    pub plan: OrderPlan,
}

/// The variables whose values the repetition table follows.
const FOLLOWED: [Var; 6] = [
    Var::ArgsGet,
    Var::ArgsPost,
    Var::RequestHeaders,
    Var::RequestCookies,
    Var::RequestFilename,
    Var::RequestBody,
];

/// Replays `requests` through `program` (every request profiled) and analyses
/// them; `top` bounds the tables.
pub fn analyze(program: &Arc<Program>, requests: &[Request], top: usize) -> Analysis {
    let mut profile = Profile::new(program.rules.len());
    let body = engine_bench::response_body(64);
    let mut blocked = 0;
    // (var, key) -> (requests, repeats, values seen)
    let mut seen: Seen = HashMap::new();
    for req in requests {
        let mut tx = engine::Transaction::new(Arc::clone(program), &engine::Connection::default());
        tx.enable_profile();
        tx.process_uri(&req.target, &req.method, &req.version);
        for (k, v) in &req.headers {
            tx.add_request_header(k.as_bytes(), v.as_bytes());
        }
        let mut hit = tx.process_request_headers().is_some();
        if !hit {
            tx.append_request_body(req.body.as_bytes());
            hit = tx.process_request_body().is_some();
        }
        if !hit {
            tx.add_response_header(b"Content-Type", b"text/html; charset=utf-8");
            tx.add_response_header(b"Content-Length", body.len().to_string().as_bytes());
            hit = tx.process_response_headers(200, "HTTP/1.1").is_some();
            if !hit {
                tx.append_response_body(&body);
                hit = tx.process_response_body().is_some();
            }
        }
        tx.process_logging();
        blocked += u64::from(hit);
        if let Some(p) = tx.profile() {
            profile.merge(p);
        }
        let mut this: HashSet<(Var, String)> = HashSet::new();
        for var in FOLLOWED {
            for (k, v) in tx.values(var) {
                let key = String::from_utf8_lossy(k).to_ascii_lowercase();
                if !this.insert((var, key.clone())) {
                    continue; // first value of a repeated key per request
                }
                let e = seen.entry((var, key)).or_default();
                e.0 += 1;
                if !e.2.insert(v.to_vec()) {
                    e.1 += 1;
                }
            }
        }
    }
    let (rules_by_time, rules_by_hits) = engine_bench::top_rules(program, &profile, top);
    let plan = ordering::plan(program, &profile);
    let mut moves = Vec::new();
    for seg in &plan.segments {
        for (to, u) in seg.after.iter().enumerate() {
            let from = seg.before.iter().position(|b| b == u).unwrap_or(to);
            if from != to {
                moves.push(Move {
                    phase: seg.phase,
                    id: program.rules[*u as usize].id,
                    from,
                    to,
                    ns: seg.stats[from].cost,
                    exit: seg.stats[from].exit,
                });
            }
        }
    }
    let phases = (0..5u8)
        .map(|p| PhaseOrder {
            phase: p + 1,
            segments: plan.considered[usize::from(p)],
            reordered: plan.segments.iter().filter(|s| s.phase == p + 1).count(),
            fixed: plan.fixed[usize::from(p)]
                .iter()
                .map(|(r, n)| ((*r).to_string(), *n))
                .collect(),
        })
        .collect();
    let before: f64 = plan.segments.iter().map(|s| s.reach * s.cost_before).sum();
    let after: f64 = plan.segments.iter().map(|s| s.reach * s.cost_after).sum();
    let reqs = profile.transactions.max(1) as f64;
    let rule_ns: f64 = profile.rules.iter().map(|c| c.nanos as f64).sum::<f64>() / reqs;
    let repetition = repetition_table(program, &profile, &seen, top);
    Analysis {
        requests: profile.transactions,
        blocked,
        rules_by_time,
        rules_by_hits,
        phases,
        moves,
        expected_ns_before: before,
        expected_ns_after: after,
        expected_gain_ns: plan.expected_gain(),
        rule_ns_per_request: rule_ns,
        repetition,
        plan,
    }
}

/// (variable, key) -> (requests with it, requests repeating an earlier value, values seen).
type Seen = HashMap<(Var, String), (u64, u64, HashSet<Vec<u8>>)>;

fn repetition_table(
    program: &Program,
    profile: &Profile,
    seen: &Seen,
    top: usize,
) -> Vec<Repetition> {
    let mut rows: Vec<Repetition> = seen
        .iter()
        .map(|((var, key), (n, repeats, _))| {
            let mut rules = 0;
            let mut ns = 0.0;
            for (i, rule) in program.rules.iter().enumerate() {
                let inspects = rule
                    .targets
                    .iter()
                    .any(|t| covers(t.var, *var) && !t.count && t.sel.selects(key.as_bytes()));
                if inspects {
                    let c = profile.rules[i];
                    if c.evaluations > 0 {
                        rules += 1;
                        ns += c.nanos as f64 / c.evaluations as f64;
                    }
                }
            }
            Repetition {
                variable: var.name().to_string(),
                key: key.clone(),
                requests: *n,
                repeat_share: *repeats as f64 / (*n).max(1) as f64,
                rules,
                rule_ns: ns,
                weight: *repeats as f64 * ns,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.weight
            .total_cmp(&a.weight)
            .then_with(|| a.variable.cmp(&b.variable))
            .then_with(|| a.key.cmp(&b.key))
    });
    rows.truncate(top);
    rows
}

/// Whether a rule target of `target` reads the values stored under `stored`.
fn covers(target: Var, stored: Var) -> bool {
    target == stored || (target == Var::Args && matches!(stored, Var::ArgsGet | Var::ArgsPost))
}

/// The analysis as text tables.
pub fn render(a: &Analysis) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} requests replayed, {} blocked; {:.1} µs per request in rules",
        a.requests,
        a.blocked,
        a.rule_ns_per_request / 1000.0
    );
    for (title, rows) in [
        ("rules by time", &a.rules_by_time),
        ("rules by hits", &a.rules_by_hits),
    ] {
        let _ = writeln!(out, "\n{title}:");
        let _ = writeln!(
            out,
            "{:>8} {:>5} {:>10} {:>7} {:>10} {:>7}",
            "rule", "phase", "evals/req", "hit %", "ns/eval", "time %"
        );
        for r in rows.iter() {
            let _ = writeln!(
                out,
                "{:>8} {:>5} {:>10.2} {:>7.2} {:>10.0} {:>7.2}",
                r.id,
                r.phase,
                r.evaluations_per_request,
                r.hit_ratio * 100.0,
                r.ns_per_evaluation,
                r.time_share * 100.0
            );
        }
    }
    let _ = writeln!(out, "\nproposed order:");
    for p in &a.phases {
        let fixed: Vec<String> = p.fixed.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let _ = writeln!(
            out,
            "  phase {}: {} segment(s) considered, {} reordered; fixed steps: {}",
            p.phase,
            p.segments,
            p.reordered,
            if fixed.is_empty() {
                "none".into()
            } else {
                fixed.join(", ")
            }
        );
    }
    if a.moves.is_empty() {
        let _ = writeln!(
            out,
            "  no rule moves (no unit can end its phase earlier at a lower expected cost)"
        );
    } else {
        let _ = writeln!(
            out,
            "{:>8} {:>5} {:>6} {:>6} {:>10} {:>8}",
            "rule", "phase", "from", "to", "ns/eval", "exit %"
        );
        for m in &a.moves {
            let _ = writeln!(
                out,
                "{:>8} {:>5} {:>6} {:>6} {:>10.0} {:>8.2}",
                m.id,
                m.phase,
                m.from,
                m.to,
                m.ns,
                m.exit * 100.0
            );
        }
    }
    let _ = writeln!(
        out,
        "expected cost of the reordered segments: {:.0} ns -> {:.0} ns per request (gain {:.0} ns, {:.2}% of rule time)",
        a.expected_ns_before,
        a.expected_ns_after,
        a.expected_gain_ns,
        100.0 * a.expected_gain_ns / a.rule_ns_per_request.max(1.0)
    );
    let _ = writeln!(out, "\nvalue repetition (result cache candidates):");
    let _ = writeln!(
        out,
        "{:<16} {:<28} {:>8} {:>9} {:>6} {:>10} {:>12}",
        "variable", "key", "requests", "repeat %", "rules", "rule ns", "weight"
    );
    for r in &a.repetition {
        let key: String = r.key.chars().take(28).collect();
        let _ = writeln!(
            out,
            "{:<16} {:<28} {:>8} {:>9.1} {:>6} {:>10.0} {:>12.0}",
            r.variable,
            key,
            r.requests,
            r.repeat_share * 100.0,
            r.rules,
            r.rule_ns,
            r.weight
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = "SecRuleEngine On\n\
        SecRule ARGS:q \"@contains evil\" \"id:1,phase:2,deny\"\n\
        SecRule ARGS \"@contains attack\" \"id:2,phase:2,deny\"\n\
        SecRule REQUEST_HEADERS:User-Agent \"@contains bot\" \"id:3,phase:1,pass,log\"\n";

    fn req(target: &str, ua: &str) -> Request {
        Request {
            name: "t".into(),
            method: "GET".into(),
            target: target.into(),
            version: "HTTP/1.1".into(),
            headers: vec![
                ("Host".into(), "a".into()),
                ("User-Agent".into(), ua.into()),
            ],
            body: String::new(),
            resp_len: 64,
        }
    }

    #[test]
    fn tables_count_evaluations_hits_and_repeats() {
        let options = engine::Options::parse("all").unwrap_or_else(|e| panic!("{e}"));
        let program =
            Program::from_str_with("t.conf", RULES, &options).unwrap_or_else(|e| panic!("{e}"));
        let mut reqs = Vec::new();
        for i in 0..10 {
            reqs.push(req(&format!("/?q=attack{i}"), "bot"));
            reqs.push(req("/?q=hello", "browser"));
        }
        let a = analyze(&program, &reqs, 10);
        assert_eq!(a.requests, 20);
        assert_eq!(a.blocked, 10);
        let hits: Vec<(u32, f64)> = a
            .rules_by_hits
            .iter()
            .map(|r| (r.id, r.evaluations_per_request))
            .collect();
        // Rule 2 matched the ten attacks; rule 3 the ten bots.
        assert!(
            hits.iter()
                .any(|&(id, e)| id == 2 && (e - 1.0).abs() < 1e-9),
            "{hits:?}"
        );
        assert!(hits.iter().any(|&(id, _)| id == 3));
        assert!(a.rules_by_hits.iter().all(|r| r.id != 1));
        let r2 = a
            .rules_by_hits
            .iter()
            .find(|r| r.id == 2)
            .map(|r| r.hit_ratio);
        assert_eq!(r2, Some(0.5));
        // Rule 2 catches every attack and is only reached after rule 1: it moves up.
        assert_eq!(a.moves.len(), 2);
        assert!(a
            .moves
            .iter()
            .any(|m| m.id == 2 && m.from == 1 && m.to == 0));
        assert!(a.expected_gain_ns >= 0.0);
        // ARGS:q repeats in the benign half (9 of 20), the user agents in 18 of 20.
        let q = a
            .repetition
            .iter()
            .find(|r| r.variable == "ARGS_GET" && r.key == "q")
            .unwrap_or_else(|| panic!("no ARGS_GET:q row"));
        assert_eq!(q.requests, 20);
        assert!((q.repeat_share - 9.0 / 20.0).abs() < 1e-9);
        assert_eq!(q.rules, 2);
        let ua = a
            .repetition
            .iter()
            .find(|r| r.variable == "REQUEST_HEADERS" && r.key == "user-agent")
            .unwrap_or_else(|| panic!("no user-agent row"));
        assert!((ua.repeat_share - 18.0 / 20.0).abs() < 1e-9);
        assert_eq!(ua.rules, 1);
        let text = render(&a);
        assert!(text.contains("rules by time") && text.contains("proposed order"));
    }

    #[test]
    fn audit_records_rebuild_requests() {
        let line = r#"{"transaction":{"request":{"method":"POST","http_version":1.1,"uri":"/login?x=1","headers":{"Host":"a","Content-Type":"application/x-www-form-urlencoded"},"body":"u=1"}}}"#;
        let reqs = audit_requests(&format!("{line}\nnot json\n{{}}\n"));
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].method, "POST");
        assert_eq!(reqs[0].target, "/login?x=1");
        assert_eq!(reqs[0].version, "HTTP/1.1");
        assert_eq!(reqs[0].body, "u=1");
        assert_eq!(reqs[0].headers.len(), 2);
    }
}
