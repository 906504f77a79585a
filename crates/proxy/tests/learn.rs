//! The online rule-order learner (`[learning] order = true`): a plan learned from
//! sampled traffic is published by swapping the route's program, decisions stay
//! the same, and a reload starts the learning over.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{admin, start, Conn, EchoConfig};
use engine::Program;

/// Self-contained mode: several independent deny rules, the frequent ones last;
/// a rule with another status and a setvar/reader pair that nothing may pass.
const RULES: &str = r#"SecRuleEngine On
SecDefaultAction "phase:1,log,auditlog,deny,status:403"
SecRule ARGS "@contains other" "id:14,phase:1,deny,status:406"
SecRule ARGS "@contains flag" "id:16,phase:1,pass,nolog,setvar:tx.flag=1"
SecRule TX:flag "@eq 1" "id:17,phase:1,deny,status:409"
SecRule ARGS "@rx (?:a|b)+c{2,}d*e" "id:10,phase:1,deny,t:lowercase"
SecRule ARGS "@rx zz[0-9]+" "id:11,phase:1,deny,t:lowercase"
SecRule ARGS "@contains rare1" "id:12,phase:1,deny"
SecRule ARGS "@contains rare2" "id:13,phase:1,deny"
SecRule ARGS "@contains attack" "id:18,phase:1,deny"
SecRule ARGS "@contains evil" "id:19,phase:1,deny"
"#;

fn config(min_samples: u32) -> String {
    let learning = format!(
        "[learning]\norder = true\nwindow_secs = 1\nsample_every = 1\n\
         min_samples = {min_samples}\nmin_gain_percent = 0\n"
    );
    EchoConfig {
        admin: true,
        tables: &learning,
        rules: RULES,
        ..Default::default()
    }
    .toml()
}

/// Traffic where the last rules (18, 19) catch most requests.
const TRAINING: [&str; 6] = [
    "/?q=hello",
    "/?q=attack",
    "/?q=evil",
    "/?q=attack",
    "/?q=evil",
    "/?q=hi",
];

/// Requests whose decisions must not change with the order.
const PROBES: [&str; 12] = [
    "/?q=hello",
    "/?q=attack",
    "/?q=evil",
    "/?q=other",
    "/?q=flag",
    "/?q=abcce",
    "/?q=zz12",
    "/?q=rare2",
    "/?q=nothing&r=else",
    "/?q=flag&r=attack",
    "/?q=attack&r=zz1",
    "/?q=other&r=evil",
];

async fn statuses(c: &mut Conn, targets: &[&str]) -> Vec<u16> {
    let mut out = Vec::new();
    for t in targets {
        c.send(format!("GET {t} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await;
        out.push(c.read("GET").await.unwrap().status);
    }
    out
}

fn program(h: &common::Harness) -> Arc<Program> {
    let rt = h.server().shared().runtime.load();
    rt.routes[0].program.clone().unwrap()
}

/// Phase-1 rule ids in evaluation order.
fn order(p: &Program) -> Vec<u32> {
    p.rule_ids(1)
}

/// A metric's value in the admin listener's exposition.
async fn metric(h: &common::Harness, line_start: &str) -> f64 {
    let text = admin(h.server().admin_addr().unwrap(), "GET", "/metrics")
        .await
        .text();
    text.lines()
        .find_map(|l| l.strip_prefix(line_start)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {line_start} in\n{text}"))
        .parse()
        .unwrap()
}

/// Analyses run so far, whatever their result.
async fn analyses(h: &common::Harness) -> f64 {
    let mut n = 0.0;
    for r in ["waiting", "unchanged", "published", "superseded", "failed"] {
        n += metric(
            h,
            &format!("palisade_order_analyses_total{{result=\"{r}\"}}"),
        )
        .await;
    }
    n
}

/// After a short pause, waits (30 s at most, else fails with `why`) for one more
/// analysis to run.
async fn wait_for_an_analysis(h: &common::Harness, why: &str) {
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = analyses(h).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while analyses(h).await < before + 1.0 {
        assert!(Instant::now() < deadline, "{why}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sends training traffic until `published` orders have been published.
async fn train_until_published(h: &common::Harness, c: &mut Conn, published: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while h.server().shared().metrics.order_plans_published() < published {
        assert!(Instant::now() < deadline, "no order was published");
        statuses(c, &TRAINING).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learned_order_is_published_and_decisions_stay() {
    let h = start(&config(100)).await;
    let mut c = Conn::open(h.addr).await;
    let first = program(&h);
    let before_order = order(&first);
    assert_eq!(before_order, [14, 16, 17, 10, 11, 12, 13, 18, 19]);
    let before = statuses(&mut c, &PROBES).await;
    assert_eq!(
        before,
        [200, 403, 403, 406, 409, 403, 403, 403, 200, 409, 403, 406]
    );

    train_until_published(&h, &mut c, 1).await;

    // The route runs a new program in a new order.
    let now = program(&h);
    assert!(!Arc::ptr_eq(&first, &now), "the program was not swapped");
    let after_order = order(&now);
    assert_ne!(after_order, before_order);
    let pos = |id: u32| after_order.iter().position(|&x| x == id).unwrap();
    assert!(
        pos(18) < pos(10) && pos(19) < pos(10),
        "the frequent exits did not move up: {after_order:?}"
    );
    // Nothing passes the rule with another status, the setvar or its reader.
    assert!(pos(14) < pos(16) && pos(16) < pos(17));
    assert!([10, 11, 12, 13, 18, 19].iter().all(|&i| pos(17) < pos(i)));

    // The same decisions, on the same keep-alive connection and on a new one.
    assert_eq!(statuses(&mut c, &PROBES).await, before);
    let mut fresh = Conn::open(h.addr).await;
    assert_eq!(statuses(&mut fresh, &PROBES).await, before);

    assert!(metric(&h, "palisade_order_plans_published_total").await >= 1.0);
    assert!(metric(&h, "palisade_order_rules_moved").await >= 1.0);
    assert!(metric(&h, "palisade_order_samples_total").await >= 100.0);
    assert!(metric(&h, "palisade_order_analyses_total{result=\"published\"}").await >= 1.0);
    assert!(metric(&h, "palisade_order_expected_gain_seconds").await > 0.0);

    // Traffic changes: rule 11 now catches most requests. The next program is a
    // fresh compile given the running order, then the new plan.
    assert!(pos(18) < pos(11), "{after_order:?}");
    let shift = ["/?q=zz12", "/?q=zz7", "/?q=hello", "/?q=zz99"];
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = order(&program(&h));
        let p = |id: u32| o.iter().position(|&x| x == id).unwrap();
        if p(11) < p(18) {
            assert!(p(14) < p(16) && p(16) < p(17), "{o:?}");
            break;
        }
        assert!(Instant::now() < deadline, "rule 11 never moved up: {o:?}");
        statuses(&mut c, &shift).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(h.server().shared().metrics.order_plans_published() >= 2);
    assert_eq!(statuses(&mut c, &PROBES).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_starts_learning_over() {
    let h = start(&config(60)).await;
    let mut c = Conn::open(h.addr).await;

    // 42 samples of the first program: fewer than 60, so it waits.
    for _ in 0..7 {
        statuses(&mut c, &TRAINING).await;
    }
    wait_for_an_analysis(&h, "no analysis ran").await;
    assert_eq!(h.server().shared().metrics.order_plans_published(), 0);

    // Reload (the same rules, compiled again): the 42 samples are not the new
    // program's, so 42 more are still too few.
    let first = program(&h);
    let r = admin(h.server().admin_addr().unwrap(), "POST", "/reload").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let second = program(&h);
    assert!(!Arc::ptr_eq(&first, &second));
    for _ in 0..7 {
        statuses(&mut c, &TRAINING).await;
    }
    wait_for_an_analysis(&h, "no analysis ran after the reload").await;
    assert_eq!(
        h.server().shared().metrics.order_plans_published(),
        0,
        "statistics of the old program were applied to the new one"
    );
    assert!(Arc::ptr_eq(&second, &program(&h)));

    // With enough samples of its own, the new program is reordered.
    train_until_published(&h, &mut c, 1).await;
    let third = program(&h);
    assert!(!Arc::ptr_eq(&second, &third));
    assert_ne!(order(&third), order(&second));
}
