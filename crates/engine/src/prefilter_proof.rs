//! The prefilter never hides a match, shown on the CRS: for every `@rx` rule the
//! prefilter admits by literals, strings are generated from the rule's own regular
//! expression (random walks over its syntax tree), and every generated string that
//! the rule's operator matches must be admitted by the prefilter's scan.

use regex_syntax::hir::{Class, Hir, HirKind};

use crate::operator::pcre::{translate, Dialect, Translation};
use crate::rule::CompiledOp;
use crate::variable::Var;
use crate::Program;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// Appends a random string `h` would match (assertions are ignored, so the result
/// is checked against the real operator afterwards).
fn generate(h: &Hir, rng: &mut Rng, out: &mut Vec<u8>, depth: u32) {
    if depth > 64 || out.len() > 4096 {
        return;
    }
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(l) => out.extend_from_slice(&l.0),
        HirKind::Class(Class::Bytes(c)) => {
            let ranges = c.ranges();
            if !ranges.is_empty() {
                let r = ranges[rng.below(ranges.len() as u64) as usize];
                let span = u64::from(r.end() - r.start()) + 1;
                out.push(r.start() + rng.below(span) as u8);
            }
        }
        HirKind::Class(Class::Unicode(c)) => {
            let ranges = c.ranges();
            if !ranges.is_empty() {
                let r = ranges[rng.below(ranges.len() as u64) as usize];
                let span = u64::from(u32::from(r.end()) - u32::from(r.start())) + 1;
                let code = u32::from(r.start()) + rng.below(span) as u32;
                if let Some(ch) = char::from_u32(code) {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        HirKind::Repetition(r) => {
            let max = r.max.unwrap_or(r.min + 3).min(r.min + 3);
            let n = r.min + rng.below(u64::from(max - r.min) + 1) as u32;
            for _ in 0..n {
                generate(&r.sub, rng, out, depth + 1);
            }
        }
        HirKind::Capture(c) => generate(&c.sub, rng, out, depth + 1),
        HirKind::Concat(parts) => {
            for p in parts {
                generate(p, rng, out, depth + 1);
            }
        }
        HirKind::Alternation(branches) => {
            let b = &branches[rng.below(branches.len() as u64) as usize];
            generate(b, rng, out, depth + 1);
        }
    }
}

#[test]
fn prefilter_admits_every_generated_match_of_every_crs_regex() {
    let crs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/crs");
    let mut paths = vec![crs.join("crs-setup.conf.example")];
    let mut rules: Vec<_> = std::fs::read_dir(crs.join("rules"))
        .unwrap_or_else(|e| panic!("CRS rules: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "conf"))
        .collect();
    rules.sort();
    paths.extend(rules);
    // At paranoia level 4 every rule is reachable, so every rule has its bit
    // (at a lower level the rules above it have none: see `build_prefilter`).
    let mut text = String::new();
    for (i, p) in paths.iter().enumerate() {
        text.push_str(&format!("Include \"{}\"\n", p.display()));
        if i == 0 {
            text.push_str(
                "SecAction \"id:900000,phase:1,pass,nolog,setvar:tx.blocking_paranoia_level=4\"\n",
            );
        }
    }
    let program = Program::from_str("crs", &text).unwrap_or_else(|e| panic!("{e}"));
    let pf = program
        .prefilter
        .as_ref()
        .unwrap_or_else(|| panic!("no prefilter"));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut rules_checked, mut matches_checked, mut long_checked) = (0, 0, 0);
    let (mut escape_rules, mut escape_checked) = (0, 0);
    // Rules admitted by a match at the start (see `prefilter::anchored`), and
    // their generated matches that hold none of their escape bytes and begin at
    // the value's start: those only the anchored test can admit.
    let (mut anchored_rules, mut anchored_checked) = (0, 0);
    let (mut end_rules, mut end_checked) = (0, 0);
    assert!(pf.has_long(), "no long-value automaton");
    assert!(pf.tables(), "a CRS automaton is not a flat DFA table");
    // 955300 reads the response body through `t:removeWhitespace,t:lowercase`:
    // its one literal is searched directly in the body less whitespace.
    assert_eq!(pf.deleting_searches(), 1);
    let mut bits = Vec::new();
    for rule in &program.rules {
        let (Some(bit), CompiledOp::Static(op)) = (rule.prefilter, &rule.operator.op) else {
            continue;
        };
        if rule.operator.name != "rx" {
            continue;
        }
        let Translation::Pattern(p) = translate(&rule.operator.argument, Dialect::Bytes) else {
            continue;
        };
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(&p)
            .unwrap_or_else(|e| panic!("rule {}: {e}", rule.chain_id));
        rules_checked += 1;
        // A rule admitted by literals or escape bytes: its matches without the
        // escape bytes (generated from the pattern less those bytes, which random
        // walks over the whole pattern seldom give) must hold one of its literals.
        let escape = op.escape_bytes();
        let restricted = escape.and_then(|e| crate::prefilter::restricted(&hir, &e));
        if escape.is_some() {
            escape_rules += 1;
        }
        let anchored = op.anchored_start().is_some();
        anchored_rules += usize::from(anchored);
        // A rule with an anchored end test: its generated matches must pass it
        // too (`pf.scan` takes out the bits of the values it rules out).
        let ends = pf.has_end(bit);
        end_rules += usize::from(ends);
        for i in 0..120 {
            let from = match (&restricted, i >= 60) {
                (_, false) => &hir,
                (Some(r), true) => r,
                (None, true) => break,
            };
            let mut s = Vec::new();
            // Some context around the match, as in real values.
            if i % 2 == 1 {
                s.extend_from_slice(b"x=1&q ");
            }
            generate(from, &mut rng, &mut s, 0);
            if i % 3 == 2 {
                s.extend_from_slice(b" end");
            }
            if !op.evaluate(&s, None) {
                continue;
            }
            matches_checked += 1;
            end_checked += usize::from(ends);
            if i >= 60 {
                escape_checked += 1;
                anchored_checked += usize::from(anchored && i % 2 == 0);
            }
            // Rules that read the response body alone are left out of the main
            // automaton: their values are only ever scanned by the long-value one.
            let body_only = rule.targets.iter().all(|t| t.var == Var::ResponseBody);
            if !body_only {
                pf.scan(&s, &mut bits);
                assert!(
                    pf.admits(&bits, bit),
                    "rule {} matches {:?} but the prefilter does not admit it",
                    rule.chain_id,
                    String::from_utf8_lossy(&s)
                );
            }
            // Response-body rules: the long-value automaton admits it.
            if rule.targets.iter().any(|t| t.var == Var::ResponseBody) {
                long_checked += 1;
                bits.clear();
                bits.resize(pf.scan_words(), 0);
                pf.scan_long_into(&s, &mut bits);
                assert!(
                    pf.admits(&bits, bit),
                    "rule {} matches {:?} but the long-value scan does not admit it",
                    rule.chain_id,
                    String::from_utf8_lossy(&s)
                );
            }
        }
    }
    assert!(rules_checked > 200, "only {rules_checked} rules checked");
    assert!(
        end_rules >= 2 && end_checked > 50,
        "end tests: {end_rules} rule(s), {end_checked} match(es) checked"
    );
    assert!(
        long_checked > 500,
        "only {long_checked} response-body matches checked"
    );
    assert!(
        escape_rules >= 10,
        "only {escape_rules} rules with escape bytes"
    );
    assert!(
        escape_checked > escape_rules * 10,
        "only {escape_checked} matches without escape bytes generated"
    );
    assert!(
        matches_checked > rules_checked * 20,
        "only {matches_checked} matching strings generated"
    );
    // 932250 and 932260 (command names at the start of a value).
    assert!(
        anchored_rules >= 2,
        "only {anchored_rules} rules with an anchored start"
    );
    assert!(
        anchored_checked > anchored_rules * 10,
        "only {anchored_checked} matches at the start without escape bytes generated"
    );
}
