//! Lean rules: rules whose values the rule loop finds directly, without the
//! general target resolution (load time; the evaluation is
//! `transaction/lean.rs`).
//!
//! Most rules an ordinary request evaluates are not the detection rules (which
//! the prefilter and the result cache pass over) but protocol checks and the
//! anomaly-score rules: one request variable (`REQUEST_METHOD`,
//! `REQUEST_HEADERS:Host`), a count (`&REQUEST_HEADERS:Content-Type`) or one TX
//! member (`TX:BLOCKING_INBOUND_ANOMALY_SCORE`) against a cheap operator. The
//! general path resolves any target list into a candidate list (with
//! exclusions, `ctl` target removals, the target-set cache, lent group scans and
//! scratch values) and costs several hundred instructions per rule before the
//! operator runs. A lean rule's plan says where each of its values is, so the
//! evaluation walks the arena list, counts or reads the TX member itself.
//!
//! A rule is lean when nothing the general path does beyond that can apply: no
//! exclusions, no `multiMatch`, no `capture`, an operator built at load time,
//! and every target an arena list (all its values or one key) or one TX member
//! by name, each possibly counted. At run time the `ctl` target removals of the
//! transaction must not apply to it, and `Options::verify` takes the general
//! path (which checks every shortcut). The values, their order, the names
//! MATCHED_VARS records, the transformation memo, the prefilter's per-value test
//! and the result cache's reads and writes are those of the general path.

use crate::rule::{CompiledOp, KeySel, Rule};
use crate::variable::Var;

/// Where one target's values are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeanTarget {
    /// An arena list (a stored variable): every value, or those whose key equals
    /// `key` ignoring ASCII case; `count`: `&VAR`, the number of those values.
    List {
        /// The variable (its list in the arena).
        var: Var,
        /// The key selected (lower case, as compiled), `None` for all values.
        key: Option<String>,
        /// A count (`&VAR`).
        count: bool,
    },
    /// The TX members a key regex selects, or all of them (`TX:/^header_name_/`,
    /// `TX`): the rule's only target, `rule.targets[target]`. The members are
    /// tested as they were before the first match's effects, as the general
    /// path's candidate list has them.
    TxSelected {
        /// The target's position in the rule's targets.
        target: usize,
    },
    /// One TX member by name (`TX:score`), or its count (0 or 1).
    Tx {
        /// The key (lower case, as compiled; MATCHED_VAR_NAME shows it so).
        key: String,
        /// A count (`&TX:score`).
        count: bool,
    },
}

/// A lean rule's targets, in the rule's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeanPlan {
    /// One per target.
    pub targets: Box<[LeanTarget]>,
}

/// The plan of a rule that can be evaluated the lean way (see the module notes),
/// after pre-pruning (which builds operators whose macros expand the same for
/// every request).
pub fn plan(rule: &Rule) -> Option<LeanPlan> {
    let built = match &rule.operator.op {
        CompiledOp::Static(_) => true,
        CompiledOp::Dynamic(_) => rule.resolved_op.is_some(),
        CompiledOp::GeoLookup(_) => false,
    };
    if !built
        || rule.unconditional
        || rule.static_result.is_some()
        || rule.multi_match
        || rule.capture
        || !rule.exclusions.is_empty()
        || rule.targets.is_empty()
    {
        return None;
    }
    let only = rule.targets.len() == 1;
    let targets = rule
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| match (&t.sel, t.var) {
            (KeySel::Key(k), Var::Tx) => Some(LeanTarget::Tx {
                key: k.clone(),
                count: t.count,
            }),
            // Several targets would each be read after the earlier ones' matches
            // ran their `setvar`s, where the general path reads them all first.
            (KeySel::Regex(_) | KeySel::All, Var::Tx) if only && !t.count => {
                Some(LeanTarget::TxSelected { target: i })
            }
            (KeySel::All, var) if crate::transaction::is_stored(var) => Some(LeanTarget::List {
                var,
                key: None,
                count: t.count,
            }),
            (KeySel::Key(k), var) if crate::transaction::is_stored(var) => Some(LeanTarget::List {
                var,
                key: Some(k.clone()),
                count: t.count,
            }),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some(LeanPlan {
        targets: targets.into_boxed_slice(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plans(text: &str) -> Vec<Option<LeanPlan>> {
        let program = crate::Program::from_str("t.conf", text).unwrap_or_else(|e| panic!("{e}"));
        program.rules.iter().map(|r| r.lean.clone()).collect()
    }

    #[test]
    fn simple_targets_are_lean_and_the_rest_is_not() {
        let p = plans(concat!(
            "SecRuleEngine On\n",
            "SecRule REQUEST_METHOD \"@rx ^(?:GET|HEAD)$\" \"id:1,phase:1,pass\"\n",
            "SecRule &REQUEST_HEADERS:Host \"@eq 0\" \"id:2,phase:1,pass\"\n",
            "SecRule TX:score|REQUEST_HEADERS \"@ge 5\" \"id:3,phase:1,pass\"\n",
            "SecRule ARGS \"@rx a\" \"id:4,phase:1,pass\"\n",
            "SecRule REQUEST_HEADERS|!REQUEST_HEADERS:Cookie \"@rx a\" \"id:5,phase:1,pass\"\n",
            "SecRule REQUEST_HEADERS:/^x-/ \"@rx a\" \"id:6,phase:1,pass\"\n",
            "SecRule REQUEST_URI \"@rx (a)\" \"id:7,phase:1,pass,capture\"\n",
            "SecRule REQUEST_URI \"@rx a\" \"id:8,phase:1,pass,multiMatch\"\n",
            "SecRule REQUEST_URI \"@rx %{REQUEST_METHOD}\" \"id:9,phase:1,pass\"\n",
            "SecAction \"id:10,phase:1,pass,setvar:tx.x=1\"\n",
            "SecRule IP:score \"@ge 1\" \"id:11,phase:1,pass\"\n",
        ));
        let list = |var, key: Option<&str>, count| LeanTarget::List {
            var,
            key: key.map(str::to_string),
            count,
        };
        assert_eq!(
            p[0].as_ref().map(|p| &p.targets[..]),
            Some(&[list(Var::RequestMethod, None, false)][..])
        );
        assert_eq!(
            p[1].as_ref().map(|p| &p.targets[..]),
            Some(&[list(Var::RequestHeaders, Some("host"), true)][..])
        );
        assert_eq!(
            p[2].as_ref().map(|p| &p.targets[..]),
            Some(
                &[
                    LeanTarget::Tx {
                        key: "score".into(),
                        count: false
                    },
                    list(Var::RequestHeaders, None, false)
                ][..]
            )
        );
        // ARGS (two lists), exclusions, key regexes, capture, multiMatch, macro
        // operators, SecAction and persistent collections take the general path.
        for (i, plan) in p.iter().enumerate().skip(3) {
            assert!(plan.is_none(), "rule {} planned lean", i + 1);
        }
    }

    #[test]
    fn a_lone_tx_selection_is_lean() {
        let p = plans(concat!(
            "SecRuleEngine On\n",
            "SecRule TX:/^name_/ \"@within /a/ /b/\" \"id:1,phase:1,pass\"\n",
            "SecRule TX \"@eq 1\" \"id:2,phase:1,pass\"\n",
            "SecRule TX:/^name_/|TX:/^other_/ \"@eq 1\" \"id:3,phase:1,pass\"\n",
            "SecRule TX:/^name_/|REQUEST_METHOD \"@eq 1\" \"id:4,phase:1,pass\"\n",
            "SecRule &TX:/^name_/ \"@eq 1\" \"id:5,phase:1,pass\"\n",
        ));
        let selected = LeanTarget::TxSelected { target: 0 };
        assert_eq!(
            p[0].as_ref().map(|p| &p.targets[..]),
            Some(&[selected.clone()][..])
        );
        assert_eq!(p[1].as_ref().map(|p| &p.targets[..]), Some(&[selected][..]));
        // With another target, or counted: the general path.
        for (i, plan) in p.iter().enumerate().skip(2) {
            assert!(plan.is_none(), "rule {} planned lean", i + 1);
        }
    }

    #[test]
    fn without_pre_pruning_no_rule_is_lean() {
        let options = crate::Options::none();
        let program = crate::Program::from_str_with(
            "t.conf",
            "SecRule REQUEST_METHOD \"@rx ^GET$\" \"id:1,phase:1,pass\"\n",
            &options,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(program.rules.iter().all(|r| r.lean.is_none()));
    }
}
