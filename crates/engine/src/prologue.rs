//! The prologue: phase 1's leading rules whose effects are the same for every
//! request, run once when the program is compiled. A transaction takes the state
//! they leave (TX, MATCHED_VARS, HIGHEST_SEVERITY) instead of running them. In the
//! CRS these are `crs-setup.conf` and the initialisation rules of `REQUEST-901`:
//! about 25 rules and 60 `setvar`s per request.
//!
//! The prologue is a segment of phase 1's steps from the start, made of two kinds
//! of rules:
//! - **Hoisted** rules: the rule and every link of its chain are unconditional
//!   (`SecAction`) or folded by pre-pruning ([`crate::prune`]); its `setvar`s write
//!   TX with keys and values made of literals and macros over TX, RULE and
//!   MATCHED_VAR(_NAME); no `capture`, `ctl`, `initcol`, `setsid`, `setuid`,
//!   `setenv`, `expirevar` or `sanitise*` on any link; the starter is `pass`, not
//!   logged, and neither skips nor jumps. A folded rule that never matches has no
//!   effect but clearing MATCHED_VARS, so it is hoisted whatever its actions.
//! - **Kept** rules, which depend on the request and still run, in order, at run
//!   time (in the CRS set-up: the `ctl:requestBodyProcessor` rules by
//!   Content-Type). They commute with the hoisted ones: they write no TX (no
//!   `setvar`, no `capture`), read no state rules write (no TX, MATCHED_VAR(S),
//!   HIGHEST_SEVERITY, ... targets, no operator macros), have no `ctl` but body and
//!   audit settings, and are `pass`, unlogged, without severity, skip or jump.
//!
//! Since kept rules write only MATCHED_VARS among the recorded state, the segment
//! ends where a hoisted rule that never matches has cleared MATCHED_VARS after the
//! last kept rule (or where there is no kept rule before it). The recorded state
//! is what the engine's own rule loop leaves after running the whole segment on an
//! empty transaction. At run time the kept rules run (the hoisted ones are passed
//! over), then the recorded state is taken. With `Options::verify` every
//! transaction runs the whole segment instead and checks that it leaves the
//! recorded state.

use std::sync::Arc;

use crate::collection::Collection;
use crate::macros::{MacroString, Part};
use crate::program::CompileError;
use crate::rule::{CompiledOp, CtlAction, Disruptive, Rule, Step};
use crate::transaction::{Connection, Transaction};
use crate::variable::Var;
use crate::{EngineMode, Program};

/// The prologue's segment and the state it leaves.
#[derive(Debug, Clone, Default)]
pub struct Prologue {
    /// The phase-1 step where the segment ends (evaluation continues there).
    pub end: usize,
    /// Per step before `end`: whether its rule is hoisted (not run per request).
    pub hoisted: Vec<bool>,
    /// TX after the segment.
    pub tx: Collection,
    /// An identity for `tx` (never 0), by which a pooled transaction's TX
    /// restored from it before is restored by undoing its changes (see
    /// [`Collection::restore_from`]).
    pub tx_id: u64,
    /// MATCHED_VARS after the segment, as (name, value).
    pub matched_vars: Vec<(String, Vec<u8>)>,
    /// HIGHEST_SEVERITY after the segment.
    pub highest_severity: Option<u8>,
}

impl Prologue {
    /// Whether the rule at phase-1 step `i` is hoisted.
    pub fn is_hoisted(&self, i: usize) -> bool {
        self.hoisted.get(i).copied().unwrap_or(false)
    }

    /// The number of hoisted rules.
    pub fn hoisted_count(&self) -> usize {
        self.hoisted.iter().filter(|&&h| h).count()
    }
}

/// Computes and attaches the prologue of a compiled program (none when no rule
/// can be hoisted, pre-pruning is off or the rule engine is off).
pub(crate) fn attach(mut program: Program) -> Result<Program, CompileError> {
    program.prologue = None;
    if !program.options.prune || program.config.rule_engine == EngineMode::Off {
        return Ok(program);
    }
    let Some((end, hoisted)) = segment(&program) else {
        return Ok(program);
    };
    let program = Arc::new(program);
    let recorded = {
        let mut t = Transaction::new(Arc::clone(&program), &Connection::default());
        t.run_prologue_segment(&program, end)
    };
    // The transaction, the only other owner, has been dropped.
    let mut program = Arc::try_unwrap(program).map_err(|_| {
        CompileError::new(
            "internal error: the program is shared while its prologue is computed".into(),
        )
    })?;
    static TX_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    program.prologue = recorded.map(|(tx, matched_vars, highest_severity)| Prologue {
        end,
        hoisted,
        tx,
        tx_id: TX_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        matched_vars,
        highest_severity,
    });
    Ok(program)
}

/// The segment's end and which of its steps are hoisted; `None` when no rule is.
fn segment(program: &Program) -> Option<(usize, Vec<bool>)> {
    let steps = &program.phases[0];
    let mut hoisted = Vec::new();
    // The longest valid segment so far: (end, hoisted rules in it).
    let mut best = (0, 0);
    let mut count = 0;
    // No kept rule yet, or MATCHED_VARS cleared by a hoisted rule since the last.
    let mut settled = true;
    for (i, step) in steps.iter().enumerate() {
        if let Step::Rule(idx) = *step {
            let rule = &program.rules[idx as usize];
            if hoistable(program, rule) {
                hoisted.push(true);
                count += 1;
                if never_matches(rule) {
                    settled = true;
                }
            } else if commutes(program, rule) {
                hoisted.push(false);
                settled = false;
            } else {
                break;
            }
        } else {
            hoisted.push(false);
        }
        if settled {
            best = (i + 1, count);
        }
    }
    let (end, n) = best;
    if n == 0 {
        return None;
    }
    hoisted.truncate(end);
    Some((end, hoisted))
}

fn never_matches(rule: &Rule) -> bool {
    rule.static_result
        .as_ref()
        .is_some_and(|s| s.matches.is_empty())
}

/// Whether the chain starting at `start` is hoisted (see the module notes).
pub(crate) fn hoistable(program: &Program, start: &Rule) -> bool {
    if never_matches(start) {
        return true;
    }
    if !passes_on(start) {
        return false;
    }
    links(program, start).all(|rule| {
        (rule.unconditional || rule.static_result.is_some())
            && !rule.capture
            && rule.ctls.is_empty()
            && no_other_effects(rule)
            && rule.setvars.iter().all(|sv| {
                sv.collection == Var::Tx && request_free(&sv.key) && request_free(&sv.value)
            })
    })
}

/// Whether the chain starting at `start` may stay in the segment and run at run
/// time (see the module notes).
fn commutes(program: &Program, start: &Rule) -> bool {
    if !passes_on(start) || start.meta.severity.is_some() {
        return false;
    }
    links(program, start).all(|rule| {
        matches!(rule.operator.op, CompiledOp::Static(_))
            && !rule.unconditional
            && !rule.capture
            && rule.setvars.is_empty()
            && no_other_effects(rule)
            && rule.ctls.iter().all(|c| {
                matches!(
                    c,
                    CtlAction::RequestBodyProcessor(_)
                        | CtlAction::RequestBodyAccess(_)
                        | CtlAction::ResponseBodyAccess(_)
                        | CtlAction::RequestBodyLimit(_)
                        | CtlAction::ResponseBodyLimit(_)
                        | CtlAction::AuditEngine(_)
                        | CtlAction::AuditLogParts(_)
                        | CtlAction::ForceRequestBodyVariable(_)
                )
            })
            && rule.targets.iter().all(|t| {
                !t.var.is_rule_state()
                    && !matches!(
                        t.var,
                        Var::MatchedVar
                            | Var::MatchedVarName
                            | Var::HighestSeverity
                            | Var::Rule
                            | Var::Xml
                    )
            })
    })
}

/// A starter that, when it matches, neither logs nor disrupts nor jumps.
fn passes_on(start: &Rule) -> bool {
    !start.log
        && start.disruptive == Disruptive::Pass
        && start.skip == 0
        && start.skip_after.is_none()
}

/// The rule and the links chained to it.
fn links<'a>(program: &'a Program, start: &'a Rule) -> impl Iterator<Item = &'a Rule> {
    std::iter::successors(Some(start), |r| {
        r.chain_next.and_then(|n| program.rules.get(n as usize))
    })
}

/// No `initcol`, `setsid`, `setuid`, `setenv`, `expirevar` or `sanitise*`.
fn no_other_effects(rule: &Rule) -> bool {
    rule.initcols.is_empty()
        && rule.setsid.is_none()
        && rule.setuid.is_none()
        && rule.setenvs.is_empty()
        && rule.expirevars.is_empty()
        && rule.sanitise.is_empty()
}

/// Whether a macro string expands the same for every request at this point: its
/// macros read TX, RULE or MATCHED_VAR(_NAME) only.
fn request_free(m: &MacroString) -> bool {
    m.parts().iter().all(|p| match p {
        Part::Literal(_) => true,
        Part::Var { var, .. } => matches!(
            var,
            Var::Tx | Var::Rule | Var::MatchedVar | Var::MatchedVarName
        ),
    })
}
