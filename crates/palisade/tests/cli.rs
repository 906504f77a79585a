//! The binary's subcommands, run as a user runs them.

#![allow(clippy::unwrap_used)] // tests fail by panicking

use std::path::{Path, PathBuf};
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

/// How a run of the binary exited and what it printed.
struct Run {
    success: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` to completion.
fn run(cmd: &mut Command) -> Run {
    let out = cmd.output().unwrap();
    Run {
        success: out.status.success(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Run {
    /// Asserts that the run succeeded (showing both streams if not).
    fn succeeded(self) -> Run {
        assert!(self.success, "{}{}", self.stdout, self.stderr);
        self
    }

    /// Asserts that the run exited with status 1 (showing both streams if not).
    fn exited_1(self) -> Run {
        assert_eq!(self.code, Some(1), "{}{}", self.stdout, self.stderr);
        self
    }
}

/// Asserts that `text` contains every one of `parts`.
fn assert_contains(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} is missing from:\n{text}");
    }
}

/// Writes `contents` to the file `name` in `dir`; returns its path.
fn write(dir: &Path, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
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
    let out = run(palisade().arg("check").args(&args)).succeeded();
    assert_contains(
        &out.stdout,
        &[
            "configuration is valid",
            "markers        30",
            "regular expressions: all run on the linear-time engine",
        ],
    );
}

#[test]
fn check_lists_every_error_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "bad.conf",
        "SecRuleEngin On\nSecRule ARGZ \"@rx a\" \"id:1,phase:2\"\n",
    );
    let out = run(palisade().arg("check").arg(&f)).exited_1();
    assert_contains(
        &out.stderr,
        &[
            "bad.conf:1:1: error[unknown-directive]",
            "bad.conf:2:9: error[unknown-variable]",
            "2 errors",
        ],
    );
}

#[test]
fn check_compiles_operators_and_reports_fallbacks() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad-regex.conf",
        "SecRule ARGS \"@rx (unclosed\" \"id:1,phase:2,pass\"\n",
    );
    run(palisade().arg("check").arg(&bad)).exited_1();
    let lookaround = write(
        dir.path(),
        "lookaround.conf",
        "SecRule ARGS \"@rx a(?!b)\" \"id:1,phase:2,pass\"\n",
    );
    let out = run(palisade().arg("check").arg(&lookaround)).succeeded();
    assert_contains(
        &out.stdout,
        &["1 run on the bounded backtracking engine", "rule 1 at"],
    );
}

#[test]
fn eval_explains_a_crs_sqli_block() {
    let dir = tempfile::tempdir().unwrap();
    let req = write(dir.path(), "sqli.http", "GET /?id=1%27%20OR%20%271%27=%271 HTTP/1.1\nHost: localhost\nUser-Agent: curl/8\nAccept: */*\n\n");
    let out = run(palisade()
        .arg("eval")
        .arg(&req)
        .arg("--crs")
        .arg(shared().join("crs")))
    .succeeded();
    assert_contains(
        &out.stdout,
        &[
            "decision: Deny { status: 403, rule_id: Some(949110) }",
            "[942100]",
            "variable:    ARGS:id",
            "transformed: 1' OR '1'='1",
            "blocking_inbound_anomaly_score = 5",
        ],
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
    let db = write(dir.path(), "city.mmdb", w.build());
    let rules = write(
        dir.path(),
        "geo.conf",
        "SecRuleEngine On\nSecGeoLookupDb city.mmdb\n\
         SecRule REQUEST_HEADERS:X-Forwarded-For \"@geoLookup\" \
         \"chain,id:100,phase:1,deny,status:403,log,msg:'from %{geo.country_name}'\"\n\
         SecRule GEO:COUNTRY_CODE \"@streq DE\" \"t:none\"\n",
    );
    let out = run(palisade().args(["check", "--plan"]).arg(&rules)).succeeded();
    assert_contains(
        &out.stdout,
        &["configuration is valid", "@geoLookup writes GEO"],
    );

    let eval = |xff: &str| {
        let req = write(
            dir.path(),
            "req.http",
            format!("GET / HTTP/1.1\nHost: localhost\nX-Forwarded-For: {xff}\n\n"),
        );
        run(palisade().arg("eval").arg(&req).arg("--rules").arg(&rules))
            .succeeded()
            .stdout
    };
    let text = eval("198.51.100.7");
    assert_contains(
        &text,
        &[
            "decision: Deny { status: 403, rule_id: Some(100) }",
            "from Germany",
        ],
    );
    let text = eval("192.0.2.1");
    assert!(!text.contains("Deny"), "{text}");

    // A missing database is a load error naming the file.
    std::fs::remove_file(db).unwrap();
    let out = run(palisade().arg("check").arg(&rules)).exited_1();
    assert_contains(&out.stderr, &["SecGeoLookupDb", "city.mmdb"]);
}

#[test]
fn ftw_runs_selected_cases_in_process() {
    let crs = shared().join("crs");
    let out = run(palisade()
        .args(["ftw", "--rule", "942100", "--crs"])
        .arg(&crs))
    .succeeded();
    let last = out.stdout.lines().last().unwrap();
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
fn small_corpus(dir: &Path) -> PathBuf {
    write(
        dir,
        "c.jsonl",
        "{\"name\":\"a\",\"method\":\"GET\",\"target\":\"/?q=hello\",\"headers\":[[\"Host\",\"x\"]]}\n\
         {\"name\":\"b\",\"method\":\"GET\",\"target\":\"/?q=evil\",\"headers\":[[\"Host\",\"x\"]]}\n\
         {\"name\":\"c\",\"method\":\"POST\",\"target\":\"/f\",\"headers\":[[\"Host\",\"x\"],[\"Content-Type\",\"application/x-www-form-urlencoded\"]],\"body\":\"a=1&b=evil\"}\n",
    )
}

const RULES: &str = "SecRuleEngine On\nSecRequestBodyAccess On\n\
    SecRule ARGS \"@rx evil\" \"id:10,phase:2,deny,status:403,log,msg:'evil'\"\n";

#[test]
fn bench_engine_verify_compares_optimised_and_plain_runs() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = small_corpus(dir.path());
    let rules = write(dir.path(), "r.conf", RULES);
    // `palisade bench engine ARGS --rules RULES --corpus CORPUS`.
    let bench_engine = |args: &[&str]| {
        let mut c = palisade();
        c.args(["bench", "engine"])
            .args(args)
            .arg("--rules")
            .arg(&rules)
            .arg("--corpus")
            .arg(&corpus);
        run(&mut c)
    };
    let out = bench_engine(&["--verify", "--optimizations", "all"]).succeeded();
    assert_contains(
        &out.stdout,
        &[
            "checked 6 evaluations (3 requests x 2 passes), reference blocked 2 and matched rules on 2 per pass",
            "no differences",
        ],
    );
    // The inline mode is still there, as a timed run.
    let out = bench_engine(&["--verify-inline", "--iterations", "1"]).succeeded();
    assert_contains(&out.stdout, &["(verified inline)"]);
    // Unknown optimisations are refused.
    let out = bench_engine(&["--verify", "--optimizations", "nonsense"]);
    assert!(!out.success);
    assert!(out.stderr.contains("unknown optimisation `nonsense`"));
}

#[test]
fn bench_ablation_runs_each_accepted_step_and_lists_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = small_corpus(dir.path());
    let out_dir = dir.path().join("out");
    let out = run(palisade()
        .args(["bench", "ablation", "--paranoia", "1", "--iterations", "1"])
        .arg("--crs")
        .arg(shared().join("crs"))
        .arg("--corpus")
        .arg(format!("small={}", corpus.display()))
        .arg("--out")
        .arg(&out_dir))
    .succeeded();
    let err = out.stderr;
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert_contains(
        &report,
        &[
            "| baseline | `none` |",
            "| all | `all` |",
            "| +prefilter | `",
        ],
    );
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
