//! The equivalence check: all optimisations against none on generated corpora with
//! CRS PL1 and on the requests of the CRS regression suite (no difference), and the
//! check's power to see a difference (a rule removed, a score changed).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use bench::corpus::Request;
use bench::traffic::attacks::{AttackPool, PoolOptions};
use bench::traffic::generate::{generate, GenerateOptions};
use bench::traffic::mix::Distribution;
use bench::traffic::profiles::BenignModel;
use bench::traffic::values::{Shares, ValueModel};
use bench::traffic::verify::Verifier;
use bench::traffic::zipf::Rng;
use bench::verify::{diff, verify, Kind, Mode, Outcome, VerifyConfig};
use engine::{Connection, Options, Program, Transaction};

fn crs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/crs")
}

fn crs_text() -> &'static str {
    static T: OnceLock<String> = OnceLock::new();
    T.get_or_init(|| ftw::crs_config::crs_config(&crs(), 1, false).unwrap())
}

fn compile(text: &str, options: &Options) -> Arc<Program> {
    Program::from_str_with("crs.conf", text, options).unwrap_or_else(|e| panic!("{e}"))
}

/// Every optimisation off: the reference.
fn plain() -> &'static Arc<Program> {
    static P: OnceLock<Arc<Program>> = OnceLock::new();
    P.get_or_init(|| compile(crs_text(), &Options::none()))
}

/// Generated traffic: 300 requests with 10% attacks, then 200 with 50%, attacks
/// from four rule groups (SQLi among them), benign requests checked against the CRS.
fn corpus() -> &'static [Request] {
    static C: OnceLock<Vec<Request>> = OnceLock::new();
    C.get_or_init(|| {
        let verifier = Verifier::new(Arc::clone(plain()));
        let mut rng = Rng::new(1);
        let model = BenignModel::new(ValueModel::new(Shares::default(), 1.0, &mut rng));
        let pool_opts = PoolOptions {
            groups: vec![920, 932, 941, 942],
            limit_per_group: Some(30),
            ..PoolOptions::default()
        };
        let pool = AttackPool::build(&crs(), &model, &verifier, &pool_opts).unwrap();
        let mut all = Vec::new();
        for (count, ratio, seed) in [(300, 0.1, 11), (200, 0.5, 12)] {
            let opts = GenerateOptions {
                count,
                attack_ratio: ratio,
                seed,
                distribution: Distribution::Even,
                ..GenerateOptions::default()
            };
            let mut out = Vec::new();
            generate(&opts, Some(&pool), Some(&verifier), &mut out, None).unwrap();
            for line in std::str::from_utf8(&out).unwrap().lines() {
                all.push(serde_json::from_str::<Request>(line).unwrap());
            }
        }
        all
    })
}

#[test]
fn all_optimisations_give_the_plain_results_on_generated_traffic() {
    let corpus = corpus();
    assert_eq!(corpus.len(), 500);
    let optimised = compile(crs_text(), &Options::default());
    let report = verify(&optimised, plain(), corpus, &VerifyConfig::default());
    assert!(report.ok(), "{}", report.render());
    assert_eq!(report.requests_checked, 1000);
    // The corpus exercises blocking: 10% of 300 and 50% of 200 are attacks the
    // generator kept because the CRS blocks them.
    assert_eq!(report.reference_blocked, 130);
}

#[test]
fn the_prefilter_without_the_memo_gives_the_plain_results() {
    // Without the memo it is cleared before every rule: the scans a class's
    // screened values point to are made again, not read from a cleared memo
    // (which panicked, or read other values' scans, before they were).
    let options = Options::parse("prune,prefilter").unwrap();
    let optimised = compile(crs_text(), &options);
    let report = verify(&optimised, plain(), corpus(), &VerifyConfig::default());
    assert!(report.ok(), "{}", report.render());
    assert_eq!(report.requests_checked, 1000);
    assert_eq!(report.reference_blocked, 130);
}

#[test]
fn the_optimisations_without_the_result_cache_give_the_plain_results() {
    // Without the result cache, the group unions over long target lists start from
    // the lists' raw scans (`transaction/groups.rs`), and rules take their values'
    // scans from the unions: the paths the standard requests are measured on.
    let options = Options {
        value_cache: false,
        ..Options::default()
    };
    let optimised = compile(crs_text(), &options);
    let report = verify(&optimised, plain(), corpus(), &VerifyConfig::default());
    assert!(report.ok(), "{}", report.render());
    assert_eq!(report.requests_checked, 1000);
    assert_eq!(report.reference_blocked, 130);
}

#[test]
fn a_removed_rule_is_reported_with_its_id() {
    let corpus = corpus();
    // The "optimised" program lacks rule 942100 (libinjection SQLi): every request
    // that matched it now differs.
    let text = format!("{}\nSecRuleRemoveById 942100\n", crs_text());
    let broken = compile(&text, &Options::default());
    let config = VerifyConfig {
        keep: 3,
        ..VerifyConfig::default()
    };
    let report = verify(&broken, plain(), corpus, &config);
    assert!(!report.ok());
    assert!(report.by_rule.get(&942100).is_some_and(|&n| n > 0));
    assert!(report.by_kind.contains_key(&Kind::MatchedRules));
    assert!(report.by_kind.contains_key(&Kind::AuditRecord));
    assert_eq!(report.first.len(), 3);
    let first = &report.first[0];
    let matched = first
        .findings
        .iter()
        .find(|f| f.kind == Kind::MatchedRules)
        .unwrap();
    assert!(matched.rule_ids.contains(&942100), "{}", report.render());
    // Both passes see it (the second compares digests on a warm cache).
    assert_eq!(report.differences_by_pass.len(), 2);
    assert_eq!(report.differences_by_pass[0], report.differences_by_pass[1]);
    let text = report.render();
    assert!(text.contains("942100"), "{text}");
    assert!(text.contains("evaluations differ"), "{text}");
}

#[test]
fn a_changed_score_is_reported_as_an_anomaly_score_difference() {
    let corpus = corpus();
    // Critical matches count 4 instead of 5 in the "optimised" program.
    let text = format!(
        "{}\nSecAction \"id:9999001,phase:1,pass,nolog,setvar:tx.critical_anomaly_score=4\"\n",
        crs_text()
    );
    let broken = compile(&text, &Options::default());
    let report = verify(&broken, plain(), corpus, &VerifyConfig::default());
    assert!(report
        .by_kind
        .get(&Kind::AnomalyScore)
        .is_some_and(|&n| n > 0));
    let d = report
        .first
        .iter()
        .flat_map(|d| &d.findings)
        .find(|f| f.kind == Kind::AnomalyScore)
        .unwrap();
    assert!(d.detail.contains("anomaly_score"), "{}", d.detail);
}

/// Every stage of the CRS regression suite that is representable as a corpus line
/// (built from parts, UTF-8), headers and body as the suite sends them.
fn crs_suite_requests() -> Vec<Request> {
    let suite = ftw::load_suite(&crs().join("tests/regression/tests")).unwrap();
    let text = |b: &[u8]| std::str::from_utf8(b).ok().map(str::to_string);
    let mut out = Vec::new();
    for (_, case) in suite.cases() {
        for stage in &case.stages {
            let Ok(raw) = ftw::build_request(&stage.input) else {
                continue;
            };
            let Ok(p) = raw.parsed.as_ref() else {
                continue;
            };
            if raw.kind != ftw::RequestKind::Built {
                continue;
            }
            let headers: Option<Vec<(String, String)>> = p
                .headers
                .iter()
                .map(|h| Some((text(&h.name)?, text(&h.value)?)))
                .collect();
            let (Some(method), Some(target), Some(version), Some(body), Some(headers)) = (
                text(&p.method),
                text(&p.uri),
                text(&p.version),
                text(&p.body),
                headers,
            ) else {
                continue;
            };
            out.push(Request {
                name: case.id.to_string(),
                method,
                target,
                version,
                headers,
                body,
                resp_len: 64,
            });
        }
    }
    out
}

#[test]
fn crs_suite_requests_give_the_plain_results_with_all_optimisations() {
    let corpus = crs_suite_requests();
    assert!(corpus.len() > 4500, "only {} requests", corpus.len());
    // The suite's configuration: every paranoia level, rules the tests expect.
    let text = ftw::crs_config::test_config(&crs()).unwrap();
    let plain = compile(&text, &Options::none());
    let optimised = compile(&text, &Options::default());
    let report = verify(&optimised, &plain, &corpus, &VerifyConfig::default());
    assert!(report.ok(), "{}", report.render());
    // The suite's configuration only logs (the tests check rule ids), so nothing is
    // blocked, but most requests match rules.
    assert!(report.reference_matched > 4000, "{}", report.render());
}

/// Transactions run as a proxy runs them, 16 at a time with their request and
/// response phases apart, so the work sets go from one transaction to another
/// between phases (a response phase then starts from another request's set, or
/// a cleared one), give the plain results request by request: decisions,
/// matched rules, scores, TX and audit records. Two passes over the corpus, the
/// second on a warm result cache; one response in seven leaks an SQL error, so
/// the response phases match too.
#[test]
fn requests_in_flight_give_the_plain_results() {
    const IN_FLIGHT: usize = 16;
    const LEAK: &[u8] = b"<b>Warning</b>: You have an error in your SQL syntax; check the \
        manual that corresponds to your MySQL server version";
    let optimised = compile(crs_text(), &Options::default());
    // Windows rebuilt on this thread: what is cached depends on the requests alone.
    optimised.caches.set_synchronous(true);
    let corpus = corpus();
    let (mut blocked, mut leaks) = (0, 0);
    for pass in 0..2 {
        for (b, batch) in corpus.chunks(IN_FLIGHT).enumerate() {
            let open: Vec<_> = batch
                .iter()
                .map(|req| {
                    let mut tx = Transaction::new(Arc::clone(&optimised), &Connection::default());
                    let decided = bench::engine_bench::drive_request(&mut tx, req);
                    (tx, decided)
                })
                .collect();
            // The response phases in the reverse order: each takes a set another
            // transaction left.
            for (k, (mut tx, decided)) in open.into_iter().enumerate().rev() {
                let (req, n) = (&batch[k], b * IN_FLIGHT + k);
                let mut body = bench::engine_bench::response_body(req.resp_len);
                if n % 7 == 3 {
                    body.extend_from_slice(LEAK);
                }
                let phase = bench::engine_bench::drive_response(&mut tx, decided, &body);
                let got = Outcome::of(&tx, phase);
                let want = Outcome::observe(plain(), req, &body);
                let findings = diff::compare(&want, &got, Mode::Exact);
                assert!(
                    findings.is_empty(),
                    "pass {pass}, request {n}: {findings:?}"
                );
                blocked += usize::from(want.decision.as_ref().is_some_and(|d| d.phase < 3));
                leaks += usize::from(want.decision.as_ref().is_some_and(|d| d.phase == 4));
            }
        }
    }
    assert_eq!(blocked, 2 * 130);
    assert!(leaks > 2 * 30, "{leaks} leaks blocked");
}
