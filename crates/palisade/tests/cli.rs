//! The binary's subcommands, run as a user runs them.

#![allow(clippy::unwrap_used)] // tests fail by panicking

use std::path::PathBuf;
use std::process::Command;

// The engine's test MaxMind DB writer (databases are generated, never shipped).
#[path = "../../engine/tests/support/mmdb_writer.rs"]
mod mmdb_writer;

fn palisade() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_palisade"));
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    c
}

fn shared() -> PathBuf {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared"));
    assert!(p.join("crs/rules").is_dir(), "../shared/crs is missing");
    p
}

#[test]
fn check_accepts_the_crs_and_reports_counts() {
    let crs = shared().join("crs");
    let mut args = vec![crs.join("crs-setup.conf.example")];
    let mut rules: Vec<PathBuf> = std::fs::read_dir(crs.join("rules"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    rules.sort();
    args.extend(rules);
    let out = palisade().arg("check").args(&args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("configuration is valid"), "{text}");
    assert!(text.contains("markers        30"), "{text}");
    assert!(
        text.contains("regular expressions: all run on the linear-time engine"),
        "{text}"
    );
}

#[test]
fn check_lists_every_error_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.conf");
    std::fs::write(
        &f,
        "SecRuleEngin On\nSecRule ARGZ \"@rx a\" \"id:1,phase:2\"\n",
    )
    .unwrap();
    let out = palisade().arg("check").arg(&f).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("bad.conf:1:1: error[unknown-directive]"),
        "{err}"
    );
    assert!(
        err.contains("bad.conf:2:9: error[unknown-variable]"),
        "{err}"
    );
    assert!(err.contains("2 errors"), "{err}");
}

#[test]
fn check_compiles_operators_and_reports_fallbacks() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad-regex.conf");
    std::fs::write(
        &bad,
        "SecRule ARGS \"@rx (unclosed\" \"id:1,phase:2,pass\"\n",
    )
    .unwrap();
    let out = palisade().arg("check").arg(&bad).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let lookaround = dir.path().join("lookaround.conf");
    std::fs::write(
        &lookaround,
        "SecRule ARGS \"@rx a(?!b)\" \"id:1,phase:2,pass\"\n",
    )
    .unwrap();
    let out = palisade().arg("check").arg(&lookaround).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("1 run on the bounded backtracking engine"),
        "{text}"
    );
    assert!(text.contains("rule 1 at"), "{text}");
}

#[test]
fn eval_explains_a_crs_sqli_block() {
    let dir = tempfile::tempdir().unwrap();
    let req = dir.path().join("sqli.http");
    std::fs::write(&req, "GET /?id=1%27%20OR%20%271%27=%271 HTTP/1.1\nHost: localhost\nUser-Agent: curl/8\nAccept: */*\n\n").unwrap();
    let out = palisade()
        .arg("eval")
        .arg(&req)
        .arg("--crs")
        .arg(shared().join("crs"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("decision: Deny { status: 403, rule_id: Some(949110) }"),
        "{text}"
    );
    assert!(text.contains("[942100]"), "{text}");
    assert!(text.contains("variable:    ARGS:id"), "{text}");
    assert!(text.contains("transformed: 1' OR '1'='1"), "{text}");
    assert!(
        text.contains("blocking_inbound_anomaly_score = 5"),
        "{text}"
    );
}

#[test]
fn check_and_eval_run_a_geo_lookup_rule_set() {
    use mmdb_writer::{city_record, Writer};
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::new("GeoLite2-City", 6, 24);
    w.insert(
        "198.51.100.0/24",
        city_record(
            "DE", "Germany", "Europe", "Berlin", "10115", 52.5244, 13.4105,
        ),
    );
    std::fs::write(dir.path().join("city.mmdb"), w.build()).unwrap();
    let rules = dir.path().join("geo.conf");
    std::fs::write(
        &rules,
        "SecRuleEngine On\nSecGeoLookupDb city.mmdb\n\
         SecRule REQUEST_HEADERS:X-Forwarded-For \"@geoLookup\" \
         \"chain,id:100,phase:1,deny,status:403,log,msg:'from %{geo.country_name}'\"\n\
         SecRule GEO:COUNTRY_CODE \"@streq DE\" \"t:none\"\n",
    )
    .unwrap();
    let out = palisade()
        .args(["check", "--plan"])
        .arg(&rules)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("configuration is valid"), "{text}");
    assert!(text.contains("@geoLookup writes GEO"), "{text}");

    let eval = |xff: &str| {
        let req = dir.path().join("req.http");
        std::fs::write(
            &req,
            format!("GET / HTTP/1.1\nHost: localhost\nX-Forwarded-For: {xff}\n\n"),
        )
        .unwrap();
        let out = palisade()
            .arg("eval")
            .arg(&req)
            .arg("--rules")
            .arg(&rules)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let text = eval("198.51.100.7");
    assert!(
        text.contains("decision: Deny { status: 403, rule_id: Some(100) }"),
        "{text}"
    );
    assert!(text.contains("from Germany"), "{text}");
    let text = eval("192.0.2.1");
    assert!(!text.contains("Deny"), "{text}");

    // A missing database is a load error naming the file.
    std::fs::remove_file(dir.path().join("city.mmdb")).unwrap();
    let out = palisade().arg("check").arg(&rules).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("SecGeoLookupDb"), "{err}");
    assert!(err.contains("city.mmdb"), "{err}");
}

#[test]
fn ftw_runs_selected_cases_in_process() {
    let crs = shared().join("crs");
    let out = palisade()
        .args(["ftw", "--rule", "942100", "--crs"])
        .arg(&crs)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = text.lines().last().unwrap();
    let counts: Vec<usize> = last
        .split(", ")
        .map(|part| part.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 3, "{last}");
    assert!(counts[0] > 10, "942100 has many cases: {last}");
    assert_eq!(counts[1], 0, "{last}");
    assert_eq!(counts[0] + counts[2], 5003, "{last}");
}

/// A three-request JSON Lines corpus (one blocked by the rules of [`RULES`]).
fn small_corpus(dir: &std::path::Path) -> PathBuf {
    let corpus = dir.join("c.jsonl");
    std::fs::write(
        &corpus,
        "{\"name\":\"a\",\"method\":\"GET\",\"target\":\"/?q=hello\",\"headers\":[[\"Host\",\"x\"]]}\n\
         {\"name\":\"b\",\"method\":\"GET\",\"target\":\"/?q=evil\",\"headers\":[[\"Host\",\"x\"]]}\n\
         {\"name\":\"c\",\"method\":\"POST\",\"target\":\"/f\",\"headers\":[[\"Host\",\"x\"],[\"Content-Type\",\"application/x-www-form-urlencoded\"]],\"body\":\"a=1&b=evil\"}\n",
    )
    .unwrap();
    corpus
}

const RULES: &str = "SecRuleEngine On\nSecRequestBodyAccess On\n\
    SecRule ARGS \"@rx evil\" \"id:10,phase:2,deny,status:403,log,msg:'evil'\"\n";

#[test]
fn bench_engine_verify_compares_optimised_and_plain_runs() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = small_corpus(dir.path());
    let rules = dir.path().join("r.conf");
    std::fs::write(&rules, RULES).unwrap();
    let out = palisade()
        .args(["bench", "engine", "--verify", "--optimizations", "all"])
        .arg("--rules")
        .arg(&rules)
        .arg("--corpus")
        .arg(&corpus)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(
            "checked 6 evaluations (3 requests x 2 passes), reference blocked 2 and matched rules on 2 per pass"
        ),
        "{text}"
    );
    assert!(text.contains("no differences"), "{text}");
    // The inline mode is still there, as a timed run.
    let out = palisade()
        .args(["bench", "engine", "--verify-inline", "--iterations", "1"])
        .arg("--rules")
        .arg(&rules)
        .arg("--corpus")
        .arg(&corpus)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("(verified inline)"), "{text}");
    // Unknown optimisations are refused.
    let out = palisade()
        .args(["bench", "engine", "--verify", "--optimizations", "nonsense"])
        .arg("--rules")
        .arg(&rules)
        .arg("--corpus")
        .arg(&corpus)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown optimisation `nonsense`"));
}

#[test]
fn bench_ablation_runs_each_accepted_step_and_lists_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = small_corpus(dir.path());
    let out_dir = dir.path().join("out");
    let out = palisade()
        .args(["bench", "ablation", "--paranoia", "1", "--iterations", "1"])
        .arg("--crs")
        .arg(shared().join("crs"))
        .arg("--corpus")
        .arg(format!("small={}", corpus.display()))
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains("| baseline | `none` |"), "{report}");
    assert!(report.contains("| all | `all` |"), "{report}");
    assert!(report.contains("| +prefilter | `"), "{report}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap())
            .unwrap();
    let runs = results["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 7);
    // Every step either measured the 3 requests or says why it was skipped.
    for r in runs {
        assert!(r["requests"] == 3 || r["skipped"].is_string(), "{r}\n{err}");
    }
}
