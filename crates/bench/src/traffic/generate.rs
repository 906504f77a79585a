//! The streaming generator behind `palisade traffic generate`.
//!
//! Requests are produced in chunks of [`CHUNK`] from one seeded random stream and
//! written as JSON Lines as they are ready, so memory does not grow with `--count`.
//! With a [`Verifier`], every benign request of a chunk is run through the CRS
//! in-process (on several threads); a false positive is listed in the false-positive
//! log with the rules that fired and replaced by a fresh request drawn from the same
//! stream. The output depends only on the options (and the CRS), never on timing.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use super::attacks::{AttackCase, AttackPool, AttackSampler};
use super::mix::{Distribution, Selection};
use super::profiles::{BenignModel, Profile};
use super::values::{Shares, ValueModel};
use super::verify::Verifier;
use super::zipf::Rng;
use crate::corpus::Request;

/// Requests generated (and verified) at a time.
pub const CHUNK: usize = 1024;

/// Replacement attempts for one false positive before giving up.
const MAX_ATTEMPTS: usize = 1000;

/// What to generate.
#[derive(Debug, Clone, Serialize)]
pub struct GenerateOptions {
    /// Number of requests.
    pub count: u64,
    /// Share of attacks (0..=1); exactly `round(count × ratio)` are attacks.
    pub attack_ratio: f64,
    /// Seed of the random stream.
    pub seed: u64,
    /// Application profile of benign requests.
    pub profile: Profile,
    /// Distribution of attacks over rule groups.
    pub distribution: Distribution,
    /// Shares of traffic covered by the top values of ARGS, cookies, User-Agent.
    pub shares: Shares,
    /// Zipf exponent among the top values.
    pub skew: f64,
    /// Threads for the in-process check of benign requests.
    pub threads: usize,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            count: 1000,
            attack_ratio: 0.0,
            seed: 1,
            profile: Profile::Mixed,
            distribution: Distribution::Real,
            shares: Shares::default(),
            skew: 1.0,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// What was generated.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Requests written.
    pub requests: u64,
    /// Attacks among them.
    pub attacks: u64,
    /// Requests per class.
    pub classes: BTreeMap<String, u64>,
    /// Benign requests the CRS blocked, removed and replaced.
    pub false_positives_removed: u64,
    /// Rules that fired on the removed false positives, with counts.
    pub false_positive_rules: BTreeMap<u32, u64>,
    /// Whether benign requests were checked against the CRS.
    pub verified: bool,
}

/// Why generation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GenerateError {
    /// Attacks were asked for but there is no attack pool.
    #[error("--attack-ratio > 0 needs attacks, and the pool is empty")]
    NoAttacks,
    /// Writing failed.
    #[error("writing the corpus: {0}")]
    Io(#[from] std::io::Error),
    /// Serialising a line failed.
    #[error("serialising a request: {0}")]
    Json(#[from] serde_json::Error),
    /// The benign model keeps producing false positives.
    #[error("{0} benign requests in a row were blocked by the CRS; the benign model needs fixing")]
    FalsePositives(usize),
}

/// One line of the corpus: the fields `corpus::load` reads, plus the CRS test case
/// an attack came from.
#[derive(Serialize)]
struct Line<'a> {
    class: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    case: Option<&'a str>,
    method: &'a str,
    target: &'a str,
    version: &'a str,
    headers: &'a [(String, String)],
    body: &'a str,
    resp_len: usize,
}

fn line<'a>(req: &'a Request, case: Option<&'a str>) -> Line<'a> {
    Line {
        class: &req.name,
        case,
        method: &req.method,
        target: &req.target,
        version: &req.version,
        headers: &req.headers,
        body: &req.body,
        resp_len: req.resp_len,
    }
}

#[derive(Serialize)]
struct FalsePositive<'a> {
    rules: &'a [u32],
    request: Line<'a>,
}

enum Slot<'p> {
    Benign(Request),
    Attack(&'p AttackCase),
}

/// Generates `opts.count` requests into `out` (JSON Lines). Attacks come from `pool`
/// (required when the attack ratio is above 0); benign requests are checked with
/// `verifier` when given, and false positives listed in `fp_log` (JSON Lines: the
/// rules and the request) when given.
pub fn generate(
    opts: &GenerateOptions,
    pool: Option<&AttackPool>,
    verifier: Option<&Verifier>,
    out: &mut dyn Write,
    mut fp_log: Option<&mut dyn Write>,
) -> Result<Summary, GenerateError> {
    let mut rng = Rng::new(opts.seed);
    let model = BenignModel::new(ValueModel::new(opts.shares, opts.skew, &mut rng));
    let attacks = Selection::attacks_for(opts.count, opts.attack_ratio);
    let pool = match pool {
        Some(p) if !p.is_empty() => Some(p),
        _ if attacks > 0 => return Err(GenerateError::NoAttacks),
        _ => None,
    };
    let sampler = pool.map(|p| AttackSampler::new(p, opts.distribution));
    let mut selection = Selection::new(opts.count, attacks);
    let mut summary = Summary {
        verified: verifier.is_some(),
        ..Summary::default()
    };
    let mut buf = Vec::with_capacity(CHUNK * 512);
    loop {
        let mut chunk: Vec<Slot<'_>> = Vec::with_capacity(CHUNK);
        while chunk.len() < CHUNK {
            let Some(is_attack) = selection.next(&mut rng) else {
                break;
            };
            let attack = match (is_attack, pool, &sampler) {
                (true, Some(p), Some(s)) => s.sample(p, &mut rng),
                _ => None,
            };
            chunk.push(match attack {
                Some(a) => Slot::Attack(a),
                None if is_attack => return Err(GenerateError::NoAttacks),
                None => Slot::Benign(model.request(opts.profile, &mut rng)),
            });
        }
        if chunk.is_empty() {
            break;
        }
        if let Some(v) = verifier {
            let verdicts = check_benign(v, &chunk, opts.threads);
            for (i, rules) in verdicts {
                let mut rules = rules;
                let mut attempts = 0;
                loop {
                    if let Slot::Benign(req) = &chunk[i] {
                        summary.false_positives_removed += 1;
                        for r in &rules {
                            *summary.false_positive_rules.entry(*r).or_default() += 1;
                        }
                        if let Some(log) = fp_log.as_mut() {
                            serde_json::to_writer(
                                &mut **log,
                                &FalsePositive {
                                    rules: &rules,
                                    request: line(req, None),
                                },
                            )?;
                            log.write_all(b"\n")?;
                        }
                    }
                    attempts += 1;
                    if attempts > MAX_ATTEMPTS {
                        return Err(GenerateError::FalsePositives(attempts));
                    }
                    let fresh = model.request(opts.profile, &mut rng);
                    let verdict = v.check(&fresh);
                    chunk[i] = Slot::Benign(fresh);
                    if !verdict.blocked {
                        break;
                    }
                    rules = verdict.rules;
                }
            }
        }
        buf.clear();
        for slot in &chunk {
            let (req, case) = match slot {
                Slot::Benign(r) => (r, None),
                Slot::Attack(a) => {
                    summary.attacks += 1;
                    (&a.request, Some(a.case.as_str()))
                }
            };
            *summary.classes.entry(req.name.clone()).or_default() += 1;
            serde_json::to_writer(&mut buf, &line(req, case))?;
            buf.push(b'\n');
        }
        summary.requests += chunk.len() as u64;
        out.write_all(&buf)?;
    }
    out.flush()?;
    Ok(summary)
}

/// Positions of blocked benign requests in `chunk`, with the rules that fired.
fn check_benign(v: &Verifier, chunk: &[Slot<'_>], threads: usize) -> Vec<(usize, Vec<u32>)> {
    let part = chunk.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = chunk
            .chunks(part)
            .enumerate()
            .map(|(k, slots)| {
                s.spawn(move || {
                    let mut out = Vec::new();
                    for (j, slot) in slots.iter().enumerate() {
                        if let Slot::Benign(req) = slot {
                            let verdict = v.check(req);
                            if verdict.blocked {
                                out.push((k * part + j, verdict.rules));
                            }
                        }
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            // A panic in the engine is a bug there: pass it on rather than let a
            // request through unchecked.
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}
