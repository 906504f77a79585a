//! Whole-configuration checks that need more than one directive: rule ids, chains,
//! markers and default actions.

use std::collections::{HashMap, HashSet};

use crate::ast::{ActionValue, Config, Directive, Rule};
use crate::diagnostic::{Diagnostic, ErrorKind};
use crate::names::{self, ActionClass, ACTIONS};
use crate::source::{SourceMap, Span};

/// Actions that only the first rule of a chain may carry (as ModSecurity enforces):
/// disruptive actions, the phase, metadata and skips.
pub fn allowed_in_chained_rule(action: &str) -> bool {
    let class = ACTIONS.iter().find(|a| a.0 == action).map(|a| a.1);
    match class {
        Some(ActionClass::Disruptive) => action == "status",
        Some(ActionClass::Metadata) => !matches!(
            action,
            "id" | "phase"
                | "msg"
                | "logdata"
                | "tag"
                | "severity"
                | "rev"
                | "ver"
                | "maturity"
                | "accuracy"
        ),
        Some(ActionClass::Flow) => action == "chain",
        _ => true,
    }
}

/// Runs the checks, appending to `errors`.
pub fn validate(config: &Config, sources: &SourceMap, errors: &mut Vec<Diagnostic>) {
    let mut ids: HashMap<u32, Span> = HashMap::new();
    let markers: HashSet<&str> = config
        .items
        .iter()
        .filter_map(|i| match &i.directive {
            Directive::Marker(m) => Some(m.as_str()),
            _ => None,
        })
        .collect();
    let rule_ids: HashSet<u32> = config
        .items
        .iter()
        .filter_map(|i| match &i.directive {
            Directive::Rule(r) => r.id(),
            _ => None,
        })
        .collect();
    // The span of the previous rule if it asked for a chain.
    let mut open_chain: Option<Span> = None;
    for item in &config.items {
        match &item.directive {
            Directive::Rule(rule) => {
                if open_chain.is_some() {
                    check_chained(rule, errors);
                } else {
                    check_starter(rule, item.span, &mut ids, sources, errors);
                }
                open_chain = rule.is_chain().then_some(item.span);
                check_skip_after(rule, &markers, &rule_ids, errors);
            }
            other => {
                if let Some(span) = open_chain.take() {
                    errors.push(dangling(span));
                }
                if let Directive::DefaultAction(actions) = other {
                    if !actions.iter().any(|a| a.name == "phase") {
                        errors.push(Diagnostic::new(
                            ErrorKind::MissingArgument,
                            item.span,
                            "SecDefaultAction must name a phase",
                        ));
                    }
                    for a in actions {
                        if matches!(
                            a.name,
                            "id" | "msg"
                                | "rev"
                                | "severity"
                                | "logdata"
                                | "chain"
                                | "skip"
                                | "skipAfter"
                        ) {
                            errors.push(Diagnostic::new(
                                ErrorKind::InvalidValue,
                                a.span,
                                format!("`{}` is not allowed in SecDefaultAction", a.name),
                            ));
                        }
                    }
                }
            }
        }
    }
    if let Some(span) = open_chain {
        errors.push(dangling(span));
    }
}

fn dangling(span: Span) -> Diagnostic {
    Diagnostic::new(
        ErrorKind::DanglingChain,
        span,
        "this rule has `chain` but no rule follows it",
    )
    .with_help("add the chained SecRule right after it, or remove `chain`")
}

fn check_starter(
    rule: &Rule,
    span: Span,
    ids: &mut HashMap<u32, Span>,
    sources: &SourceMap,
    errors: &mut Vec<Diagnostic>,
) {
    match rule.id() {
        None => errors.push(
            Diagnostic::new(ErrorKind::MissingRuleId, span, "rule has no `id` action")
                .with_help("every rule (except chained ones) needs a unique id:N"),
        ),
        Some(id) => {
            if let Some(first) = ids.get(&id) {
                let at = rule.action("id").map_or(span, |a| a.span);
                errors.push(
                    Diagnostic::new(
                        ErrorKind::DuplicateRuleId,
                        at,
                        format!("rule id {id} is already used"),
                    )
                    .with_help(format!(
                        "first used at {}:{}:{}",
                        sources.path(first.file).display(),
                        first.line,
                        first.col
                    )),
                );
            } else {
                ids.insert(id, span);
            }
        }
    }
    let ids_here = rule.actions.iter().filter(|a| a.name == "id").count();
    if ids_here > 1 {
        if let Some(a) = rule.actions.iter().filter(|a| a.name == "id").nth(1) {
            errors.push(Diagnostic::new(
                ErrorKind::DuplicateRuleId,
                a.span,
                "rule has more than one `id` action",
            ));
        }
    }
}

fn check_chained(rule: &Rule, errors: &mut Vec<Diagnostic>) {
    for a in &rule.actions {
        if !allowed_in_chained_rule(a.name) {
            errors.push(
                Diagnostic::new(
                    ErrorKind::ActionNotAllowedInChain,
                    a.span,
                    format!(
                        "`{}` can only be given to the first rule of a chain",
                        a.name
                    ),
                )
                .with_help("move it to the chain's first rule"),
            );
        }
    }
}

fn check_skip_after(
    rule: &Rule,
    markers: &HashSet<&str>,
    rule_ids: &HashSet<u32>,
    errors: &mut Vec<Diagnostic>,
) {
    for a in &rule.actions {
        if a.name != "skipAfter" {
            continue;
        }
        if let ActionValue::Text(target) = &a.value {
            let is_id = target.parse::<u32>().is_ok_and(|id| rule_ids.contains(&id));
            if !is_id && !markers.contains(target.as_str()) {
                errors.push(
                    Diagnostic::new(
                        ErrorKind::UnknownMarker,
                        a.span,
                        format!("skipAfter target `{target}` is not a SecMarker (nor a rule id)"),
                    )
                    .with_suggestion(names::suggest(markers.iter().copied(), target)),
                );
            }
        }
    }
}
