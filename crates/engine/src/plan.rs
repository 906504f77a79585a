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
    /// Run only when one of its required literals occurs in a value it inspects.
    Prefiltered {
        /// The required literals.
        literals: usize,
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
    match (rule.prefilter, op.required_literals()) {
        (Some(_), Some(l)) => Admission::Prefiltered {
            literals: l.len(),
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
    for (p, steps) in program.phases.iter().enumerate() {
        let _ = writeln!(out, "phase {}:", p + 1);
        for step in steps {
            let Step::Rule(idx) = *step else { continue };
            let mut link = Some(idx);
            let mut first = true;
            while let Some(i) = link {
                let rule = &program.rules[i as usize];
                let what = match admission(program, rule) {
                    Admission::Unconditional => "unconditional".to_string(),
                    Admission::Folded(m) => {
                        folded += 1;
                        format!(
                            "folded at load time: {}",
                            if m { "always matches" } else { "never matches" }
                        )
                    }
                    Admission::Prefiltered { literals, group } => {
                        prefiltered += 1;
                        match group {
                            Some(g) => format!("prefiltered: {literals} literal(s), group {g}"),
                            None => format!("prefiltered: {literals} literal(s)"),
                        }
                    }
                    Admission::Always(why) => {
                        always += 1;
                        format!("always evaluated: {why}")
                    }
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
        "{folded} rule(s) folded at load time, {prefiltered} prefiltered, {always} always evaluated"
    );
    out
}
