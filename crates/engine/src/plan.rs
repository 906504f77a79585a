//! The evaluation plan of a compiled program, as `palisade check --plan` shows it:
//! for every phase, the rules in order and what the compiler decided for each
//! (prefiltered by which literals and in which group, or always evaluated and why).

use std::fmt::Write as _;

use crate::rule::{CompiledOp, Rule, Step};
use crate::Program;

/// How a rule's operator is reached at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// `SecAction`: always matches.
    Unconditional,
    /// Evaluated once at load time (pre-pruning): whether it matches every request.
    Folded(bool),
    /// Run only when one of its required literals occurs in a value it inspects
    /// and, for each byte set it requires, one of the set's bytes.
    Prefiltered {
        /// The required literals (0: none, only bytes).
        literals: usize,
        /// The required byte sets (0: none, only literals).
        byte_sets: usize,
        /// Escape bytes: a value holding one is admitted without a literal.
        escape: usize,
        /// A value its start test matches is admitted without a literal (see
        /// [`crate::prefilter::anchored`]).
        anchored: bool,
        /// A value its end test rules out is not admitted (see
        /// [`crate::prefilter::anchored_end`]).
        end: bool,
        /// The group deciding once per transaction for all its rules (see
        /// [`crate::rule::Rule::prefilter_group`]).
        group: Option<u32>,
    },
    /// Run on every value; the reason why no prefilter applies.
    Always(&'static str),
}

/// How `rule` is admitted.
pub fn admission(program: &Program, rule: &Rule) -> Admission {
    if rule.unconditional {
        return Admission::Unconditional;
    }
    if let Some(r) = &rule.static_result {
        return Admission::Folded(!r.matches.is_empty());
    }
    let op = match &rule.operator.op {
        CompiledOp::Dynamic(_) => return Admission::Always("operator argument has macros"),
        CompiledOp::GeoLookup(_) => return Admission::Always("@geoLookup writes GEO"),
        CompiledOp::Static(op) => op,
    };
    if program.prefilter.is_none() {
        return Admission::Always("prefilter off");
    }
    let byte_sets = rule
        .prefilter
        .and_then(|bit| program.prefilter.as_ref()?.byte_req(bit))
        .map_or(0, |r| r.sets().len());
    match (rule.prefilter, op.required_literals()) {
        (Some(_), l) if l.is_some() || byte_sets > 0 => Admission::Prefiltered {
            literals: l.map_or(0, |l| l.len()),
            byte_sets,
            escape: op
                .escape_bytes()
                .map_or(0, |m| m.iter().map(|w| w.count_ones() as usize).sum()),
            anchored: op.anchored_start().is_some(),
            end: rule
                .prefilter
                .is_some_and(|bit| program.prefilter.as_ref().is_some_and(|pf| pf.has_end(bit))),
            group: rule.prefilter_group,
        },
        _ => Admission::Always(match rule.operator.name {
            "rx" => "no literal every match needs",
            "detectSQLi" | "detectXSS" => "libinjection (no literal test)",
            _ => "operator without literals",
        }),
    }
}

/// The plan as text: one line per rule, by phase.
pub fn render(program: &Program) -> String {
    let mut out = String::new();
    let mut prefiltered = 0;
    let mut folded = 0;
    let mut always = 0;
    let mut prologue = 0;
    let mut unreached = 0;
    let mut late = 0;
    for (p, steps) in program.phases.iter().enumerate() {
        let _ = writeln!(out, "phase {}:", p + 1);
        let reach = crate::step_stops::reachable(program, p);
        let pro = program.prologue.as_ref().filter(|_| p == 0);
        for (s, step) in steps.iter().enumerate() {
            if pro.is_some_and(|pr| pr.end == s) {
                let _ = writeln!(out, "  -- end of the prologue --");
            }
            let Step::Rule(idx) = *step else { continue };
            let hoisted = pro.is_some_and(|pr| pr.is_hoisted(s));
            // Behind a folded rule that always jumps (the rules above the
            // paranoia level): never run, so given no prefilter bit.
            let never = !reach.get(s).copied().unwrap_or(true);
            if hoisted {
                prologue += 1;
            }
            let mut link = Some(idx);
            let mut first = true;
            while let Some(i) = link {
                let rule = &program.rules[i as usize];
                let what = match admission(program, rule) {
                    _ if never => {
                        unreached += 1;
                        "never reached: a folded rule before it always jumps over it".to_string()
                    }
                    Admission::Unconditional => "unconditional".to_string(),
                    Admission::Folded(m) => {
                        folded += 1;
                        format!(
                            "folded at load time: {}",
                            if m { "always matches" } else { "never matches" }
                        )
                    }
                    Admission::Prefiltered {
                        literals,
                        byte_sets,
                        escape,
                        anchored,
                        end,
                        group,
                    } => {
                        prefiltered += 1;
                        let mut what = String::from("prefiltered:");
                        match (literals, escape) {
                            (0, 0) => {}
                            (l, 0) => {
                                let _ = write!(what, " {l} literal(s)");
                            }
                            (l, e) => {
                                let _ = write!(what, " {l} literal(s) or one of {e} rare bytes");
                            }
                        }
                        if anchored {
                            what.push_str(" or a match at the start");
                        }
                        if byte_sets > 0 {
                            let _ = write!(
                                what,
                                "{} {byte_sets} byte set(s)",
                                if literals + escape > 0 { "," } else { "" }
                            );
                        }
                        if end {
                            what.push_str(", end tested");
                        }
                        if let Some(g) = group {
                            let _ = write!(what, ", group {g}");
                        }
                        what
                    }
                    Admission::Always(why) => {
                        always += 1;
                        format!("always evaluated: {why}")
                    }
                };
                let what = if hoisted && first {
                    format!("{what}; prologue: run once at load time")
                } else {
                    what
                };
                let what = if rule.defer_log {
                    late += 1;
                    format!("{what}; messages composed when its record is read")
                } else {
                    what
                };
                let id = if first {
                    rule.id.to_string()
                } else {
                    "  chain".to_string()
                };
                let _ = writeln!(
                    out,
                    "  {id:>8} @{:<18} {what}",
                    format!(
                        "{}{}",
                        if rule.operator.negated { "!" } else { "" },
                        rule.operator.name
                    )
                );
                first = false;
                link = rule.chain_next;
            }
        }
    }
    let _ = writeln!(
        out,
        "{folded} rule(s) folded at load time, {prefiltered} prefiltered, {always} always evaluated, {unreached} never reached"
    );
    let _ = writeln!(
        out,
        "{prologue} rule(s) in the prologue (phase 1's set-up rules, run once at load time)"
    );
    let _ = writeln!(
        out,
        "{late} logged rule(s) compose their messages when their record is read, not at the match"
    );
    if let Some(pf) = &program.prefilter {
        let _ = writeln!(
            out,
            "prefilter: {} literal pieces, {} in the response-body automaton; automata of {} KiB",
            pf.literal_count(),
            pf.long_literal_count(),
            pf.automaton_bytes() / 1024
        );
    }
    out
}
