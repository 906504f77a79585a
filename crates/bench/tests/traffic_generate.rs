//! The traffic generator: measured distributions, exact attack ratio, attack
//! distributions, reproducibility, CRS checks.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bench::corpus::Request;
use bench::traffic::attacks::{AttackPool, PoolOptions};
use bench::traffic::generate::{generate, GenerateOptions};
use bench::traffic::mix::Distribution;
use bench::traffic::profiles::{BenignModel, Profile};
use bench::traffic::stats::Counter;
use bench::traffic::values::{Shares, ValueModel, ARG_HEADS, HEAD_USER_AGENTS};
use bench::traffic::verify::Verifier;
use bench::traffic::zipf::Rng;

fn crs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/crs")
}

fn verifier() -> &'static Verifier {
    static V: OnceLock<Verifier> = OnceLock::new();
    V.get_or_init(|| Verifier::crs(&crs(), 1).unwrap())
}

/// A small pool (a few groups, capped per group) so that debug builds stay quick.
fn pool() -> &'static AttackPool {
    static P: OnceLock<AttackPool> = OnceLock::new();
    P.get_or_init(|| {
        let mut rng = Rng::new(1);
        let model = BenignModel::new(ValueModel::new(Shares::default(), 1.0, &mut rng));
        let opts = PoolOptions {
            groups: vec![913, 930, 941, 942],
            limit_per_group: Some(25),
            ..PoolOptions::default()
        };
        AttackPool::build(&crs(), &model, verifier(), &opts).unwrap()
    })
}

fn lines(out: &[u8]) -> Vec<Request> {
    std::str::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn measure_counter(shares: Shares, skew: f64, profile: Profile, count: u64) -> Counter {
    let opts = GenerateOptions {
        count,
        seed: 7,
        shares,
        skew,
        profile,
        ..GenerateOptions::default()
    };
    let mut out = Vec::new();
    let summary = generate(&opts, None, None, &mut out, None).unwrap();
    assert_eq!(summary.requests, count);
    let mut c = Counter::new();
    for r in lines(&out) {
        c.add_request(&r);
    }
    c
}

fn check(measured: &[(String, f64)], target: &str, want: f64) {
    let got = measured.iter().find(|(t, _)| t == target).unwrap().1;
    assert!(
        (got - want).abs() <= 0.02,
        "{target}: top-10 share {got:.4}, requested {want:.4}"
    );
}

/// Generates 100k requests and checks the measured top-10 shares, and that the top
/// 10 values are exactly the designated head values.
fn check_shares(shares: Shares, skew: f64) {
    let c = measure_counter(shares, skew, Profile::Mixed, 100_000);
    let m: Vec<(String, f64)> = c
        .shares(10)
        .into_iter()
        .map(|s| (s.target, s.top_share))
        .collect();
    // The top 10 are exactly the designated head values, not tail values that
    // happen to repeat.
    let mut top: Vec<String> = c.top_values("ARGS", 10).into_iter().map(|v| v.0).collect();
    let mut heads: Vec<String> = ARG_HEADS.iter().map(|(_, v)| v.to_string()).collect();
    top.sort();
    heads.sort();
    assert_eq!(top, heads);
    let mut top: Vec<String> = c
        .top_values("User-Agent", 10)
        .into_iter()
        .map(|v| v.0)
        .collect();
    let mut heads: Vec<String> = HEAD_USER_AGENTS.iter().map(|v| v.to_string()).collect();
    top.sort();
    heads.sort();
    assert_eq!(top, heads);
    check(&m, "ARGS", shares.args);
    check(&m, "COOKIES", shares.cookies);
    check(&m, "User-Agent", shares.user_agent);
}

#[test]
fn top_value_shares_within_two_points_on_100k_requests_app1() {
    // App ① of the RuleCache paper's Table IV.
    check_shares(
        Shares {
            args: 0.074,
            cookies: 0.022,
            user_agent: 0.374,
        },
        1.0,
    );
}

#[test]
fn top_value_shares_within_two_points_on_100k_requests_app2() {
    // App ② of Table IV (everything repeated), with a steeper head.
    check_shares(
        Shares {
            args: 0.513,
            cookies: 1.0,
            user_agent: 1.0,
        },
        1.5,
    );
}

#[test]
fn skew_orders_the_head() {
    // With skew 2 the top User-Agent alone has about 1/1.55 of the head.
    let shares = Shares {
        args: 0.5,
        cookies: 0.5,
        user_agent: 1.0,
    };
    let opts = GenerateOptions {
        count: 5000,
        seed: 3,
        shares,
        skew: 2.0,
        ..GenerateOptions::default()
    };
    let mut out = Vec::new();
    generate(&opts, None, None, &mut out, None).unwrap();
    let mut c = Counter::new();
    for r in lines(&out) {
        c.add_request(&r);
    }
    let top1 = c.shares(1)[4].top_share;
    assert!((top1 - 0.645).abs() < 0.03, "top-1 User-Agent share {top1}");
}

#[test]
fn same_seed_same_output_and_other_seed_other_output() {
    let run = |seed| {
        let opts = GenerateOptions {
            count: 3000,
            seed,
            attack_ratio: 0.2,
            ..GenerateOptions::default()
        };
        let mut out = Vec::new();
        generate(&opts, Some(pool()), None, &mut out, None).unwrap();
        out
    };
    let a = run(11);
    assert_eq!(a, run(11));
    assert_ne!(a, run(12));
}

#[test]
fn attack_ratio_is_exact_and_attacks_are_labelled() {
    for (count, ratio) in [(1000, 0.37), (2500, 0.1), (10, 1.0), (777, 0.0)] {
        let opts = GenerateOptions {
            count,
            attack_ratio: ratio,
            seed: 5,
            ..GenerateOptions::default()
        };
        let mut out = Vec::new();
        let s = generate(&opts, Some(pool()), None, &mut out, None).unwrap();
        let reqs = lines(&out);
        let attacks = reqs
            .iter()
            .filter(|r| r.name.starts_with("attack/"))
            .count() as u64;
        let want = ((count as f64) * ratio).round() as u64;
        assert_eq!(reqs.len() as u64, count);
        assert_eq!(attacks, want, "count {count} ratio {ratio}");
        assert_eq!(s.attacks, want);
    }
    // Attack lines carry the CRS test case they came from.
    let text = {
        let opts = GenerateOptions {
            count: 20,
            attack_ratio: 1.0,
            ..GenerateOptions::default()
        };
        let mut out = Vec::new();
        generate(&opts, Some(pool()), None, &mut out, None).unwrap();
        String::from_utf8(out).unwrap()
    };
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v["case"].as_str().unwrap().contains('-'), "{l}");
        assert!(v["class"].as_str().unwrap().starts_with("attack/"), "{l}");
    }
}

fn class_counts(distribution: Distribution) -> std::collections::BTreeMap<String, u64> {
    let opts = GenerateOptions {
        count: 2000,
        attack_ratio: 1.0,
        distribution,
        seed: 9,
        ..GenerateOptions::default()
    };
    let mut out = Vec::new();
    generate(&opts, Some(pool()), None, &mut out, None)
        .unwrap()
        .classes
}

#[test]
fn attack_distributions() {
    let groups: Vec<String> = pool()
        .groups
        .iter()
        .map(|g| format!("attack/{}", g.label))
        .collect();
    assert_eq!(
        groups,
        ["attack/scanner", "attack/lfi", "attack/xss", "attack/sqli"]
    );
    // Worst: everything in the first group; best: everything in the last.
    let worst = class_counts(Distribution::Worst);
    assert_eq!(worst.get("attack/scanner"), Some(&2000), "{worst:?}");
    let best = class_counts(Distribution::Best);
    assert_eq!(best.get("attack/sqli"), Some(&2000), "{best:?}");
    // Even: every group about a quarter.
    let even = class_counts(Distribution::Even);
    for g in &groups {
        let n = even.get(g).copied().unwrap_or(0);
        assert!((400..=600).contains(&n), "{g}: {n} of 2000 ({even:?})");
    }
    // Real: SQL injection first, by far.
    let real = class_counts(Distribution::Real);
    let sqli = real.get("attack/sqli").copied().unwrap_or(0);
    assert!(sqli > 1000, "{real:?}");
    assert!(real.values().all(|&n| n <= sqli));
}

#[test]
fn attacks_in_the_pool_are_blocked_and_realistic() {
    let p = pool();
    assert!(p.stats.kept > 30, "{:?}", p.stats);
    for g in &p.groups {
        for c in g.cases.iter().take(5) {
            assert!(verifier().check(&c.request).blocked, "{}", c.case);
            let ua = c
                .request
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("user-agent"));
            if let Some((_, ua)) = ua {
                assert!(!ua.contains("OWASP CRS test agent"), "{}", c.case);
            }
            assert!(!c
                .request
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("connection")));
        }
    }
}

#[test]
fn benign_requests_pass_crs_pl1() {
    // A sample of every profile (debug builds are slow; the generator checks every
    // request by default).
    let mut blocked = Vec::new();
    for profile in [Profile::Site, Profile::Api, Profile::Form, Profile::Static] {
        let opts = GenerateOptions {
            count: 60,
            seed: 21,
            profile,
            shares: Shares {
                args: 0.2,
                cookies: 0.2,
                user_agent: 0.5,
            },
            ..GenerateOptions::default()
        };
        let mut out = Vec::new();
        generate(&opts, None, None, &mut out, None).unwrap();
        for r in lines(&out) {
            let v = verifier().check(&r);
            if v.blocked {
                blocked.push((r.target.clone(), v.rules));
            }
        }
    }
    assert!(blocked.is_empty(), "false positives: {blocked:?}");
}

#[test]
fn false_positives_are_replaced_and_listed_with_their_rules() {
    // A rule set that "blocks" one of the head search terms.
    let rules = "SecRuleEngine On\nSecRequestBodyAccess On\nSecRule ARGS \"@streq shoes\" \"id:4242,phase:2,deny,status:403,log\"\n";
    let program = engine::Program::from_str("fp.conf", rules).unwrap();
    let v = Verifier::new(program);
    let opts = GenerateOptions {
        count: 400,
        seed: 2,
        profile: Profile::Site,
        shares: Shares {
            args: 1.0,
            cookies: 0.1,
            user_agent: 0.5,
        },
        threads: 2,
        ..GenerateOptions::default()
    };
    let mut out = Vec::new();
    let mut log = Vec::new();
    let s = generate(&opts, None, Some(&v), &mut out, Some(&mut log)).unwrap();
    assert!(s.false_positives_removed > 0);
    assert_eq!(
        s.false_positive_rules.get(&4242),
        Some(&s.false_positives_removed)
    );
    let reqs = lines(&out);
    assert_eq!(reqs.len(), 400);
    assert!(reqs.iter().all(|r| !v.check(r).blocked));
    let logged: Vec<serde_json::Value> = std::str::from_utf8(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(logged.len() as u64, s.false_positives_removed);
    assert_eq!(logged[0]["rules"][0], 4242);
    assert!(logged[0]["request"]["target"]
        .as_str()
        .unwrap()
        .contains("shoes"));
}

#[test]
fn output_is_a_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let opts = GenerateOptions {
        count: 300,
        attack_ratio: 0.1,
        ..GenerateOptions::default()
    };
    let mut f = std::fs::File::create(&path).unwrap();
    generate(&opts, Some(pool()), None, &mut f, None).unwrap();
    drop(f);
    let corpus = bench::corpus::load(&path).unwrap();
    assert_eq!(corpus.len(), 300);
    assert_eq!(
        corpus
            .iter()
            .filter(|r| r.name.starts_with("attack/"))
            .count(),
        30
    );
    assert!(corpus
        .iter()
        .any(|r| r.name == "benign/static" && r.resp_len == 10240));
}
