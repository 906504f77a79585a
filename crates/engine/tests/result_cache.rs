//! The Rule Result Cache across transactions: a repeated value's cached results
//! (matches of `capture` rules with their groups included) give the same effects as
//! evaluating the rules.

use std::sync::Arc;

use engine::operator::Captures;
use engine::value_cache::ResultCache;
use engine::{Connection, Options, Program, Transaction};

fn program(rules: &str) -> Arc<Program> {
    let mut p = Program::from_str_with("cache.conf", rules, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    // Windows rebuilt on the reporting thread: admission is deterministic in time.
    let prog = Arc::get_mut(&mut p).unwrap_or_else(|| panic!("shared"));
    prog.caches = Arc::new(ResultCache::with_capacity(
        prog.rules.len(),
        (&prog.classes.multi_rules, &prog.classes.negated_rules),
        64,
        true,
    ));
    p
}

fn run(program: &Arc<Program>, uri: &str) -> Transaction {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    tx.process_uri(uri, "GET", "HTTP/1.1");
    tx.process_request_headers();
    tx
}

#[test]
fn cached_matches_of_capture_rules_replay_their_groups() {
    let p = program(
        r#"
SecRuleEngine On
SecRule ARGS:a "@rx ^(x+)(y?)$" "id:1,phase:1,capture,pass,nolog,setvar:'tx.got=%{tx.1}-%{tx.2}'"
SecRule ARGS:b "@rx ^(\d+)$" "id:2,phase:1,capture,pass,nolog,setvar:'tx.num=%{tx.0}'"
"#,
    );
    for i in 0..400 {
        let (a, want) = if i % 2 == 0 {
            ("xxxy", "xxx-y")
        } else {
            ("xx", "xx-")
        };
        // `b` alternates between a match and a value the rule does not match.
        let (b, num) = if i % 3 == 0 {
            ("42", Some("42"))
        } else {
            ("n", None)
        };
        let tx = run(&p, &format!("/?a={a}&b={b}"));
        assert_eq!(tx.tx("got"), Some(want.as_bytes()), "request {i}");
        assert_eq!(tx.tx("num"), num.map(str::as_bytes), "request {i}");
        let ids: Vec<u32> = tx.matched_rules().iter().map(|m| m.id).collect();
        assert!(ids.is_empty(), "nolog rules are not listed: {ids:?}");
    }
    // The values were admitted and their matches replayed from the cache.
    let idx = |id: u32| {
        p.rules
            .iter()
            .position(|r| r.id == id)
            .unwrap_or_else(|| panic!("rule {id}")) as u32
    };
    for (value, id, group0) in [
        (&b"xxxy"[..], 1, &b"xxxy"[..]),
        (b"xx", 1, b"xx"),
        (b"42", 2, b"42"),
    ] {
        let e = p
            .caches
            .lookup(value)
            .unwrap_or_else(|| panic!("{value:?} not admitted"));
        assert_eq!(e.result(idx(id)), Some(true));
        let mut c = Captures::default();
        assert!(e.captures_into(idx(id), &mut c));
        assert_eq!(c.get(0), Some(group0));
    }
    let e = p
        .caches
        .lookup(b"n")
        .unwrap_or_else(|| panic!("n not admitted"));
    assert_eq!(e.result(idx(2)), Some(false));
}

#[test]
fn results_on_values_exclusions_remove_are_learned_without_effects() {
    let p = program(
        r#"
SecRuleEngine On
SecRule REQUEST_URI "@beginsWith /x" "id:1,phase:1,pass,nolog,ctl:ruleRemoveTargetById=12;ARGS:c"
SecRule ARGS|!ARGS:skip "@rx evil" "id:10,phase:1,pass,nolog,setvar:'tx.hits10=+1'"
SecRule ARGS|!ARGS:skip "@rx ev(il)" "id:11,phase:1,pass,nolog,capture,setvar:'tx.hits11=+1'"
SecRule ARGS "@rx calm" "id:12,phase:1,pass,nolog,setvar:'tx.hits12=+1'"
"#,
    );
    for i in 0..400 {
        let tx = run(&p, "/x?a=fine&skip=evil&c=calm&d=also-calm");
        // Only `d` reaches a rule that matches it: `skip` is excluded from 10 and
        // 11, `c` removed from 12 by the ctl.
        assert_eq!(tx.tx("hits10"), None, "request {i}");
        assert_eq!(tx.tx("hits11"), None, "request {i}");
        assert_eq!(tx.tx("hits12"), Some(&b"1"[..]), "request {i}");
    }
    let idx = |id: u32| {
        p.rules
            .iter()
            .position(|r| r.id == id)
            .unwrap_or_else(|| panic!("rule {id}")) as u32
    };
    let entry = |value: &[u8]| {
        p.caches
            .lookup(value)
            .unwrap_or_else(|| panic!("{value:?} not admitted"))
    };
    // Evaluated values, as before.
    assert_eq!(entry(b"fine").result(idx(10)), Some(false));
    assert_eq!(entry(b"also-calm").result(idx(12)), Some(true));
    // Removed by the rule's own exclusion: learned, match or not.
    assert_eq!(entry(b"evil").result(idx(10)), Some(true));
    // A capture rule's match needs its groups: left unknown.
    assert_eq!(entry(b"evil").result(idx(11)), None);
    // Removed by the ctl: learned.
    assert_eq!(entry(b"calm").result(idx(12)), Some(true));
    assert_eq!(entry(b"calm").result(idx(10)), Some(false));
}

#[test]
fn a_multi_match_rules_results_on_excluded_values_are_learned_without_effects() {
    // As CRS 930110 (`!REQUEST_HEADERS:Referer`): the excluded value is walked
    // through the chain's intermediate values, and only "none matched" is kept.
    let p = program(
        r#"
SecRuleEngine On
SecRule ARGS|!ARGS:skip "@rx \.\./" "id:10,phase:1,pass,nolog,t:none,t:urlDecodeUni,multiMatch,setvar:'tx.hits=+1'"
"#,
    );
    for i in 0..400 {
        // `skip` is excluded: neither its raw value nor its decoded one counts.
        let tx = run(&p, "/x?a=fine&skip=calm&q=..%2fetc");
        assert_eq!(tx.tx("hits"), Some(&b"1"[..]), "request {i}");
        let tx = run(&p, "/x?a=fine&skip=..%252fdecoded");
        assert_eq!(tx.tx("hits"), None, "request {i}");
    }
    let idx = p.rules.iter().position(|r| r.id == 10).expect("rule 10") as u32;
    let multi = idx | engine::value_cache::MULTI;
    let entry = |value: &[u8]| {
        p.caches
            .lookup(value)
            .unwrap_or_else(|| panic!("{value:?} not admitted"))
    };
    // Evaluated values, as before.
    assert_eq!(entry(b"fine").result(multi), Some(false));
    // Excluded and matched by none of its intermediate values: learned.
    assert_eq!(entry(b"calm").result(multi), Some(false));
    // Excluded, and its decoded value matches: nothing is kept.
    assert_eq!(entry(b"..%2fdecoded").result(multi), None);
}

#[test]
fn a_rule_over_cached_values_is_ruled_out_only_when_none_may_match() {
    let p = program(
        r#"
SecRuleEngine On
SecRule ARGS "@rx attack" "id:10,phase:1,pass,nolog,setvar:'tx.hits=+1'"
SecRule ARGS_NAMES "@rx attack" "id:11,phase:1,pass,nolog,setvar:'tx.names=+1'"
"#,
    );
    for i in 0..600 {
        // Repeated values, cached as not matching.
        let tx = run(&p, "/?a=fine&b=calm");
        assert_eq!(tx.tx("hits"), None, "request {i}");
        // A new value beside them (not cached): it is evaluated.
        if i % 10 == 0 {
            let tx = run(&p, &format!("/?a=fine&b=calm&c=attack{i}"));
            assert_eq!(tx.tx("hits"), Some(&b"1"[..]), "request {i}");
        }
        // A repeated value that matches: its entry keeps the rule.
        if i % 7 == 0 {
            let tx = run(&p, "/?a=fine&attack=attack");
            assert_eq!(tx.tx("hits"), Some(&b"1"[..]), "request {i}");
            assert_eq!(tx.tx("names"), Some(&b"1"[..]), "request {i}");
        }
    }
    // The repeated values were cached (so the checks above ran on cached values).
    assert!(p.caches.lookup(b"fine").is_some());
    assert!(p.caches.lookup(b"attack").is_some());
}

#[test]
fn values_added_after_an_earlier_settle_bring_their_cached_results() {
    // Phase 1 settles the cache's sets over the headers and the query string;
    // phase 2 adds the body's arguments, whose cached results the rules over
    // ARGS must then see (a repeated matching value keeps its rules).
    let p = program(
        r#"
SecRuleEngine On
SecRequestBodyAccess On
SecRule REQUEST_HEADERS "@rx attack" "id:10,phase:1,pass,nolog,setvar:'tx.head=+1'"
SecRule ARGS "@rx attack" "id:20,phase:2,pass,nolog,setvar:'tx.hits=+1'"
SecRule ARGS "@rx attack" "id:21,phase:2,pass,nolog,t:lowercase,setvar:'tx.lower=+1'"
"#,
    );
    let post = |body: &str| {
        let mut tx = Transaction::new(Arc::clone(&p), &Connection::default());
        tx.process_uri("/?q=calm", "POST", "HTTP/1.1");
        tx.add_request_header(b"Content-Type", b"application/x-www-form-urlencoded");
        tx.process_request_headers();
        tx.append_request_body(body.as_bytes());
        tx.process_request_body();
        tx
    };
    for i in 0..600 {
        let tx = post("a=fine&b=calm");
        assert_eq!(tx.tx("head"), None, "request {i}");
        assert_eq!(tx.tx("hits"), None, "request {i}");
        let tx = post("a=fine&b=attack");
        assert_eq!(tx.tx("hits"), Some(&b"1"[..]), "request {i}");
        assert_eq!(tx.tx("lower"), Some(&b"1"[..]), "request {i}");
    }
    // The body's values were cached (so the checks above ran on cached values).
    assert!(p.caches.lookup(b"attack").is_some());
    assert!(p.caches.lookup(b"fine").is_some());
}

#[test]
fn the_cache_takes_the_multimatch_and_negated_rules_by_their_index() {
    // The maybe sets of a program's own cache follow each rule's kind: a
    // multiMatch rule leaves a value's set by its own "no match" only.
    let p = Program::from_str_with(
        "multi.conf",
        "SecRuleEngine On\n\
         SecRule ARGS \"@rx a\" \"id:1,phase:2,pass,t:none\"\n\
         SecRule ARGS \"@rx b\" \"id:2,phase:2,pass,t:none,t:lowercase,multiMatch\"\n\
         SecRule ARGS \"@rx c\" \"id:3,phase:2,pass,t:none\"\n\
         SecRule ARGS \"@rx d\" \"id:4,phase:2,pass,t:urlDecodeUni,multiMatch\"\n\
         SecRule ARGS \"!@rx e\" \"id:5,phase:2,pass,t:none\"\n",
        &Options::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(p.rules.iter().filter(|r| r.multi_match).count() == 2);
    for r in &p.rules {
        assert_eq!(
            p.caches.is_multi_rule(r.index),
            r.multi_match,
            "rule {}",
            r.id
        );
        // And the negated ones (a negated rule leaves a value's set when its
        // operator matched the value).
        assert_eq!(
            p.caches.is_negated_rule(r.index),
            r.operator.negated,
            "rule {}",
            r.id
        );
    }
}

#[test]
fn pure_rules_without_literals_are_gated_by_the_cache_alone() {
    // No literal to prefilter `@detectSQLi`, `@detectXSS` or `@rx ^\d+$` by: they
    // are in groups for the result cache's test alone, which passes over them
    // when every value they read is cached and known not to match them; so is
    // a negated rule, whose values' maybe sets keep it while its operator may
    // miss them.
    let p = program(
        r#"
SecRuleEngine On
SecRule ARGS "@rx attack" "id:10,phase:1,pass,nolog,setvar:'tx.hits=+1'"
SecRule ARGS "@detectSQLi" "id:20,phase:1,pass,nolog,setvar:'tx.sqli=+1'"
SecRule ARGS "!@rx ^[a-z]+$" "id:21,phase:1,pass,nolog,setvar:'tx.odd=+1'"
SecRule REQUEST_METHOD "@streq GET" "id:22,phase:1,pass,nolog,chain"
    SecRule ARGS "@detectSQLi" "setvar:'tx.chained=+1'"
SecRule ARGS "@rx ^\d+$" "id:23,phase:1,pass,nolog,setvar:'tx.digits=+1'"
SecRule ARGS "@detectXSS" "id:24,phase:1,pass,nolog,setvar:'tx.xss=+1'"
"#,
    );
    let by_id = |id: u32| {
        p.rules
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("rule {id}"))
    };
    let gate_of = |r: &engine::rule::Rule| {
        let steps = &p.phases[0];
        let at = steps
            .iter()
            .position(|s| *s == engine::rule::Step::Rule(r.index))
            .unwrap_or_else(|| panic!("rule {} not a step", r.id));
        p.step_gates.at(1, at)
    };
    for id in [20, 23] {
        let r = by_id(id);
        assert!(
            r.prefilter.is_none() && r.prefilter_group.is_some(),
            "rule {id}"
        );
        let gate = gate_of(r).unwrap_or_else(|| panic!("rule {id} has no gate"));
        assert_eq!(gate.bit, engine::step_gates::NO_BIT, "rule {id}");
    }
    let negated = by_id(21);
    assert!(negated.prefilter_group.is_some());
    let gate = gate_of(negated).unwrap_or_else(|| panic!("rule 21 has no gate"));
    assert_eq!(gate.bit, engine::step_gates::NO_BIT);
    // The chain's link: in a group, tested when the link is reached.
    let link = p
        .rules
        .iter()
        .find(|r| r.chain_id == 22 && r.id != 22)
        .unwrap_or_else(|| panic!("rule 22's link"));
    assert!(link.prefilter.is_none() && link.prefilter_group.is_some());
    for i in 0..600 {
        // Repeated values, cached as not matching any of them.
        let tx = run(&p, "/?a=fine&b=calm");
        for var in ["hits", "sqli", "odd", "xss", "digits", "chained"] {
            assert_eq!(tx.tx(var), None, "{var}, request {i}");
        }
        // New values beside them (not cached): evaluated.
        if i % 10 == 0 {
            let tx = run(
                &p,
                &format!("/?a=fine&b=calm&c=1%27%20or%20%271%27%3D%27{i}"),
            );
            assert_eq!(tx.tx("sqli"), Some(&b"1"[..]), "request {i}");
            assert_eq!(tx.tx("chained"), Some(&b"1"[..]), "request {i}");
            assert_eq!(tx.tx("odd"), Some(&b"1"[..]), "request {i}");
            let tx = run(&p, &format!("/?a=fine&b=calm&n={i}"));
            assert_eq!(tx.tx("digits"), Some(&b"1"[..]), "request {i}");
            assert_eq!(tx.tx("sqli"), None, "request {i}");
        }
        // Repeated values that match: their entries keep the rules.
        if i % 7 == 0 {
            // (No value the negated rule's operator matches: each one's
            // cached result is the operator's miss, which is a match.)
            let tx = run(&p, "/?x=%3Cscript%3Ealert(1)%3C/script%3E&n=42");
            assert_eq!(tx.tx("xss"), Some(&b"1"[..]), "request {i}");
            assert_eq!(tx.tx("odd"), Some(&b"2"[..]), "request {i}");
            assert_eq!(tx.tx("digits"), Some(&b"1"[..]), "request {i}");
            assert_eq!(tx.tx("sqli"), None, "request {i}");
        }
    }
    // The repeated values were cached (so the checks above ran on cached values).
    for v in [&b"fine"[..], b"calm", b"42", b"<script>alert(1)</script>"] {
        assert!(
            p.caches.lookup(v).is_some(),
            "{}",
            String::from_utf8_lossy(v)
        );
    }
}

#[test]
fn cached_matches_replay_the_transformed_value() {
    // MATCHED_VAR after a cached match is the transformed value the rule
    // matched, which the value's record keeps (no transformation is run).
    let p = program(
        r#"
SecRuleEngine On
SecRule ARGS:a "@rx abc" "id:1,phase:1,pass,nolog,t:none,t:lowercase,t:removeWhitespace,setvar:'tx.seen=%{matched_var}'"
SecRule ARGS:b "@rx ^k" "id:2,phase:1,pass,nolog,setvar:'tx.same=%{matched_var}'"
"#,
    );
    for i in 0..400 {
        let tx = run(&p, "/?a=A%20bC&b=kept");
        assert_eq!(tx.tx("seen"), Some(&b"abc"[..]), "request {i}");
        assert_eq!(tx.tx("same"), Some(&b"kept"[..]), "request {i}");
    }
    let idx = |id: u32| {
        p.rules
            .iter()
            .position(|r| r.id == id)
            .unwrap_or_else(|| panic!("rule {id}")) as u32
    };
    let e = p
        .caches
        .lookup(b"A bC")
        .unwrap_or_else(|| panic!("A bC not admitted"));
    assert_eq!(e.result(idx(1)), Some(true));
    assert_eq!(e.matched_value(idx(1)), Some(&b"abc"[..]));
    let e = p
        .caches
        .lookup(b"kept")
        .unwrap_or_else(|| panic!("kept not admitted"));
    assert_eq!(e.matched_value(idx(2)), Some(&b"kept"[..]));
}

#[test]
fn matches_on_unchanged_values_read_them_from_the_request() {
    // MATCHED_VAR(_NAME) of a match on a value the rule's transformations left
    // as it was is read from the request's value (not copied): a negated
    // literal rule the prefilter rules out, a rule whose `t:lowercase` changed
    // nothing and one whose did; evaluated first, then from the cache's records.
    let rules = r#"
SecRuleEngine On
SecRule ARGS:a "!@pm zzz" "id:1,phase:1,pass,nolog,t:none,setvar:'tx.neg=%{matched_var_name}=%{matched_var}'"
SecRule ARGS:b "@rx ^v" "id:2,phase:1,pass,nolog,t:lowercase,setvar:'tx.low=%{matched_var_name}=%{matched_var}'"
SecRule ARGS:c "@rx ^w" "id:3,phase:1,pass,nolog,t:lowercase,setvar:'tx.changed=%{matched_var_name}=%{matched_var}'"
SecRule ARGS "@rx ^(?:value|vee)$" "id:4,phase:1,pass,nolog,chain"
    SecRule MATCHED_VARS "@rx e$" "setvar:'tx.chained=%{matched_var_name}=%{matched_var}'"
"#;
    let cached = program(rules);
    let plain = Program::from_str_with("plain.conf", rules, &Options::none())
        .unwrap_or_else(|e| panic!("{e}"));
    let want: [(&str, &[u8]); 4] = [
        ("neg", b"ARGS:a=value"),
        ("low", b"ARGS:b=vee"),
        ("changed", b"ARGS:c=www"),
        ("chained", b"MATCHED_VARS:b=vee"),
    ];
    for i in 0..400 {
        for p in [&cached, &plain] {
            let tx = run(p, "/?a=value&b=vee&c=WwW");
            for (k, v) in want {
                assert_eq!(tx.tx(k), Some(v), "request {i}, tx.{k}");
            }
        }
    }
    // The matches were recorded: on the value as it is, or transformed.
    let idx = |id: u32| {
        cached
            .rules
            .iter()
            .position(|r| r.id == id)
            .unwrap_or_else(|| panic!("rule {id}")) as u32
    };
    let entry = |v: &[u8]| {
        cached
            .caches
            .lookup(v)
            .unwrap_or_else(|| panic!("{v:?} not admitted"))
    };
    assert_eq!(entry(b"vee").matched_form(idx(2)), Some(None));
    assert_eq!(entry(b"WwW").matched_form(idx(3)), Some(Some(&b"www"[..])));
    assert_eq!(entry(b"value").result(idx(1)), Some(false));
}
