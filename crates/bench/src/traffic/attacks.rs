//! Attack requests drawn from the CRS regression tests
//! (`tests/regression/tests/REQUEST-9xx-*/*.yaml`), placed in realistic requests.
//!
//! Every test case that expects a rule to match (`expect_ids`) is built exactly as
//! go-ftw would send it ([`ftw::build_request`]); its method, target, body and
//! specific headers are kept, and the suite's boilerplate replaced by what a browser
//! sends: the test agent's User-Agent by a real one, `Host: localhost` by the site's
//! host, `Accept-Language`, `Accept-Encoding` and the site's cookies added when
//! missing, `Connection: close` dropped and `Content-Length` recomputed. Cases that
//! cannot be represented in a JSON Lines corpus (bytes that are not UTF-8, raw or
//! base64 requests, chunked bodies, malformed request lines) are skipped. Each placed
//! request is then run through the CRS in-process at the chosen paranoia level, and
//! only those the CRS blocks are kept: an attack in the corpus is an attack the WAF
//! must stop.

use std::collections::BTreeMap;
use std::path::Path;

use super::mix::{Distribution, REAL_GROUP_WEIGHTS};
use super::profiles::{BenignModel, HOST};
use super::values::CookieSlot;
use super::verify::Verifier;
use super::zipf::{Rng, Zipf};
use crate::corpus::Request;

/// A rule group: the test directory of one CRS rule file.
#[derive(Debug, Clone)]
pub struct AttackGroup {
    /// The file's number (942 for `REQUEST-942-APPLICATION-ATTACK-SQLI`).
    pub id: u32,
    /// A short label (`sqli`).
    pub label: String,
    /// The usable cases, by rule id then file order.
    pub cases: Vec<AttackCase>,
    /// Distinct rule ids of the cases, ascending.
    rules: Vec<u32>,
}

/// One attack: a CRS test case placed in a realistic request.
#[derive(Debug, Clone)]
pub struct AttackCase {
    /// `<rule>-<test>` of the CRS test case.
    pub case: String,
    /// The rule the test targets.
    pub rule_id: u32,
    /// The request (its `name` is `attack/<label>`).
    pub request: Request,
}

/// Options of [`AttackPool::build`].
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// Paranoia level at which kept attacks must be blocked.
    pub paranoia: u8,
    /// Only these groups (all when empty).
    pub groups: Vec<u32>,
    /// At most this many cases per group (in file order), for quick runs.
    pub limit_per_group: Option<usize>,
    /// Threads for the in-process check.
    pub threads: usize,
    /// Seed of the placement (User-Agent and cookie values).
    pub seed: u64,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            paranoia: 1,
            groups: Vec::new(),
            limit_per_group: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            seed: 0,
        }
    }
}

/// Counts of what happened to the test cases while building a pool.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PoolStats {
    /// Cases with `expect_ids` in request rule groups.
    pub candidates: usize,
    /// Skipped: not representable (encoding, raw requests, chunked bodies, ...).
    pub unrepresentable: usize,
    /// Skipped: not blocked at the paranoia level.
    pub not_blocked: usize,
    /// Kept.
    pub kept: usize,
}

/// Why the pool could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttackError {
    /// The test suite could not be loaded.
    #[error("loading the CRS regression tests: {0}")]
    Load(#[from] ftw::LoadError),
    /// No usable attack was found.
    #[error("no attack in {0} is blocked by the CRS at this paranoia level")]
    Empty(String),
}

/// Usable attacks by rule group, in CRS load order.
#[derive(Debug, Clone)]
pub struct AttackPool {
    /// Non-empty groups, ascending id.
    pub groups: Vec<AttackGroup>,
    /// What happened while building.
    pub stats: PoolStats,
}

/// A short label for a CRS request rule group.
pub fn group_label(id: u32) -> &'static str {
    match id {
        911 => "method",
        913 => "scanner",
        920 => "protocol",
        921 => "protocol-attack",
        922 => "multipart",
        930 => "lfi",
        931 => "rfi",
        932 => "rce",
        933 => "php",
        934 => "generic",
        941 => "xss",
        942 => "sqli",
        943 => "session-fixation",
        944 => "java",
        _ => "other",
    }
}

/// The group number of a test file from its directory (`REQUEST-942-...`).
fn group_of(path: &Path) -> Option<u32> {
    let dir = path.parent()?.file_name()?.to_str()?;
    let rest = dir.strip_prefix("REQUEST-")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let id: u32 = digits.parse().ok()?;
    // 949 (blocking evaluation) and 999 (exceptions) hold no attack class.
    (id < 949).then_some(id)
}

/// Test agents' User-Agents, replaced by a browser's.
const TEST_AGENTS: &[&str] = &["OWASP CRS test agent", "OWASP CRS Tests"];

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Places a test request in a realistic one; `None` when it cannot be represented.
fn place(
    parsed: &ftw::ParsedRequest,
    label: &str,
    model: &BenignModel,
    rng: &mut Rng,
) -> Option<Request> {
    let method = std::str::from_utf8(&parsed.method).ok()?;
    let target = std::str::from_utf8(&parsed.uri).ok()?;
    let version = std::str::from_utf8(&parsed.version).ok()?;
    let body = std::str::from_utf8(&parsed.body).ok()?;
    if !is_token(method)
        || target.is_empty()
        || target.bytes().any(|b| b <= b' ' || b == 0x7f)
        || !matches!(version, "HTTP/1.1" | "HTTP/1.0")
    {
        return None;
    }
    let mut headers: Vec<(String, String)> = Vec::with_capacity(parsed.headers.len() + 4);
    for h in &parsed.headers {
        let name = std::str::from_utf8(&h.name).ok()?;
        let value = std::str::from_utf8(&h.value).ok()?;
        if !is_token(name) || value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return None;
        }
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "transfer-encoding" => return None,
            "connection" | "content-length" => continue,
            "user-agent" if TEST_AGENTS.contains(&value) => {
                headers.push((name.to_string(), model.values().user_agent(rng)));
            }
            "host" if value == "localhost" => headers.push((name.to_string(), HOST.into())),
            _ => headers.push((name.to_string(), value.to_string())),
        }
    }
    let has = |headers: &[(String, String)], n: &str| {
        headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n))
    };
    if !has(&headers, "Accept-Language") {
        headers.push(("Accept-Language".into(), "en-US,en;q=0.9".into()));
    }
    if !has(&headers, "Accept-Encoding") {
        headers.push(("Accept-Encoding".into(), "gzip, deflate, br".into()));
    }
    if !has(&headers, "Cookie") {
        let slots = [CookieSlot::Session, CookieSlot::Ga, CookieSlot::Gid];
        headers.push(("Cookie".into(), model.values().cookie_header(&slots, rng)));
    }
    if !body.is_empty() || ftw::request::method_permits_body(method) {
        headers.push(("Content-Length".into(), body.len().to_string()));
    }
    Some(Request {
        name: format!("attack/{label}"),
        method: method.to_string(),
        target: target.to_string(),
        version: version.to_string(),
        headers,
        body: body.to_string(),
        resp_len: 64,
    })
}

impl AttackPool {
    /// Loads the regression tests under `crs_dir/tests/regression/tests`, places
    /// them and keeps those `verifier` blocks.
    pub fn build(
        crs_dir: &Path,
        model: &BenignModel,
        verifier: &Verifier,
        opts: &PoolOptions,
    ) -> Result<AttackPool, AttackError> {
        let root = crs_dir.join("tests/regression/tests");
        let suite = ftw::load_suite(&root)?;
        let mut rng = Rng::new(opts.seed ^ 0x6174_7461_636b_7321);
        let mut stats = PoolStats::default();
        // (group, case) candidates in file order.
        let mut candidates: Vec<(u32, AttackCase)> = Vec::new();
        let mut per_group: BTreeMap<u32, usize> = BTreeMap::new();
        for (file, case) in suite.cases() {
            let Some(group) = group_of(&file.path) else {
                continue;
            };
            if !opts.groups.is_empty() && !opts.groups.contains(&group) {
                continue;
            }
            let Some(stage) = case.stages.iter().find(|s| {
                !s.output.log.expect_ids.is_empty() && s.output.expect_error != Some(true)
            }) else {
                continue;
            };
            let n = per_group.entry(group).or_default();
            if opts.limit_per_group.is_some_and(|l| *n >= l) {
                continue;
            }
            *n += 1;
            stats.candidates += 1;
            let placed = ftw::build_request(&stage.input)
                .ok()
                .filter(|r| r.kind == ftw::RequestKind::Built)
                .and_then(|r| r.parsed.ok())
                .and_then(|p| place(&p, group_label(group), model, &mut rng));
            match placed {
                Some(request) => candidates.push((
                    group,
                    AttackCase {
                        case: case.id.to_string(),
                        rule_id: case.id.rule_id,
                        request,
                    },
                )),
                None => stats.unrepresentable += 1,
            }
        }
        let blocked = check_all(verifier, &candidates, opts.threads);
        let mut groups: BTreeMap<u32, Vec<AttackCase>> = BTreeMap::new();
        for ((group, case), ok) in candidates.into_iter().zip(blocked) {
            if ok {
                stats.kept += 1;
                groups.entry(group).or_default().push(case);
            } else {
                stats.not_blocked += 1;
            }
        }
        if groups.is_empty() {
            return Err(AttackError::Empty(root.display().to_string()));
        }
        let groups = groups
            .into_iter()
            .map(|(id, mut cases)| {
                cases.sort_by_key(|c| c.rule_id);
                let mut rules: Vec<u32> = cases.iter().map(|c| c.rule_id).collect();
                rules.dedup();
                AttackGroup {
                    id,
                    label: group_label(id).to_string(),
                    cases,
                    rules,
                }
            })
            .collect();
        Ok(AttackPool { groups, stats })
    }

    /// Number of attacks in the pool.
    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.cases.len()).sum()
    }

    /// True when the pool holds no attack.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn check_all(verifier: &Verifier, candidates: &[(u32, AttackCase)], threads: usize) -> Vec<bool> {
    let threads = threads.max(1);
    let chunk = candidates.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = candidates
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|(_, c)| verifier.check(&c.request).blocked)
                        .collect::<Vec<bool>>()
                })
            })
            .collect();
        handles
            .into_iter()
            // A panic in the engine is a bug there: pass it on rather than
            // misalign the verdicts.
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Draws attacks from a pool with a [`Distribution`].
#[derive(Debug, Clone)]
pub struct AttackSampler {
    group_weights: Vec<f64>,
    /// Per group: Zipf over its rules ("real") or `None` (uniform over cases).
    rule_laws: Vec<Option<Zipf>>,
}

impl AttackSampler {
    /// A sampler over `pool`'s groups.
    pub fn new(pool: &AttackPool, distribution: Distribution) -> Self {
        let n = pool.groups.len();
        let mut group_weights = vec![0.0; n];
        match distribution {
            Distribution::Even => group_weights.iter_mut().for_each(|w| *w = 1.0),
            Distribution::Worst => {
                if let Some(w) = group_weights.first_mut() {
                    *w = 1.0;
                }
            }
            Distribution::Best => {
                if let Some(w) = group_weights.last_mut() {
                    *w = 1.0;
                }
            }
            Distribution::Real => {
                for (g, w) in pool.groups.iter().zip(group_weights.iter_mut()) {
                    *w = REAL_GROUP_WEIGHTS
                        .iter()
                        .find(|(id, _)| *id == g.id)
                        .map_or(0.001, |(_, w)| *w);
                }
            }
        }
        let rule_laws = pool
            .groups
            .iter()
            .map(|g| (distribution == Distribution::Real).then(|| Zipf::new(g.rules.len(), 1.2)))
            .collect();
        AttackSampler {
            group_weights,
            rule_laws,
        }
    }

    /// The probability of each group (in pool order).
    pub fn group_probabilities(&self) -> Vec<f64> {
        let total: f64 = self.group_weights.iter().sum();
        self.group_weights
            .iter()
            .map(|w| if total > 0.0 { w / total } else { 0.0 })
            .collect()
    }

    /// Draws one attack.
    pub fn sample<'p>(&self, pool: &'p AttackPool, rng: &mut Rng) -> Option<&'p AttackCase> {
        let gi = rng.weighted(&self.group_weights)?;
        let group = pool.groups.get(gi)?;
        match self.rule_laws.get(gi).and_then(Option::as_ref) {
            Some(law) => {
                let rule = *group.rules.get(law.sample(rng))?;
                let start = group.cases.partition_point(|c| c.rule_id < rule);
                let end = group.cases.partition_point(|c| c.rule_id <= rule);
                group
                    .cases
                    .get(start + rng.below((end - start) as u64) as usize)
            }
            None => rng.pick(&group.cases),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_from_directory() {
        assert_eq!(
            group_of(Path::new(
                "t/REQUEST-942-APPLICATION-ATTACK-SQLI/942100.yaml"
            )),
            Some(942)
        );
        assert_eq!(
            group_of(Path::new("t/REQUEST-949-BLOCKING-EVALUATION/949110.yaml")),
            None
        );
        assert_eq!(
            group_of(Path::new("t/RESPONSE-951-DATA-LEAKAGES/x.yaml")),
            None
        );
    }
}
