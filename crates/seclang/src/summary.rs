//! Counts and histograms of a loaded configuration, for `palisade check`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ast::{ActionValue, Directive, RuleKind};
use crate::loader::Loaded;

/// What a configuration contains.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Summary {
    /// Files read (includes counted).
    pub files: usize,
    /// Directives of any kind.
    pub directives: usize,
    /// Rules with an id (chain starters and single rules): `SecRule` and `SecAction`.
    pub rules: usize,
    /// Of those, `SecAction`s.
    pub sec_actions: usize,
    /// Rules that continue a chain (no id of their own).
    pub chain_links: usize,
    /// `SecMarker`s.
    pub markers: usize,
    /// Rules per phase (1-5; a rule with no phase action counts under 2, the
    /// ModSecurity default).
    pub rules_by_phase: BTreeMap<u8, usize>,
    /// How often each operator is used (`rx`, `pm`, ...).
    pub operators: BTreeMap<String, usize>,
    /// How often each variable is targeted.
    pub variables: BTreeMap<String, usize>,
    /// How often each transformation chain is used (`lowercase,urlDecodeUni`).
    pub transformation_chains: BTreeMap<String, usize>,
}

impl Summary {
    /// Computes the summary of a loaded configuration.
    pub fn of(loaded: &Loaded) -> Summary {
        let mut s = Summary {
            files: loaded.sources.files().len(),
            directives: loaded.config.items.len(),
            ..Summary::default()
        };
        let mut in_chain = false;
        for item in &loaded.config.items {
            match &item.directive {
                Directive::Rule(rule) => {
                    if in_chain {
                        s.chain_links += 1;
                    } else {
                        s.rules += 1;
                        if rule.kind == RuleKind::SecAction {
                            s.sec_actions += 1;
                        }
                        let phase = rule
                            .actions
                            .iter()
                            .find_map(|a| match a.value {
                                ActionValue::Phase(p) => Some(p),
                                _ => None,
                            })
                            .unwrap_or(2);
                        *s.rules_by_phase.entry(phase).or_default() += 1;
                    }
                    in_chain = rule.is_chain();
                    *s.operators
                        .entry(rule.operator.name.to_string())
                        .or_default() += 1;
                    for t in &rule.targets {
                        *s.variables.entry(t.variable.to_string()).or_default() += 1;
                    }
                    let mut chain: Vec<&str> = Vec::new();
                    for a in &rule.actions {
                        if let ActionValue::Transformation(t) = a.value {
                            if t == "none" {
                                chain.clear();
                            } else {
                                chain.push(t);
                            }
                        }
                    }
                    if rule.kind == RuleKind::SecRule {
                        let key = if chain.is_empty() {
                            "(none)".to_string()
                        } else {
                            chain.join(",")
                        };
                        *s.transformation_chains.entry(key).or_default() += 1;
                    }
                }
                Directive::Marker(_) => {
                    in_chain = false;
                    s.markers += 1;
                }
                _ => in_chain = false,
            }
        }
        s
    }
}
