//! The run-time side of rule ordering: the early-exit test (see
//! [`crate::ordering::early_exit`] for what the compiler proved) and the match
//! records of a reordered phase put back into the original rule order.

use super::Transaction;
use crate::ordering::early_exit::{EarlyExit, Threshold};
use crate::variable::Var;
use crate::EngineMode;

impl Transaction {
    /// Whether the blocking evaluation of `exit` would deny now, so the rest of
    /// the region may be skipped: the engine is On, neither the blocking rule nor
    /// a section rule was removed, the blocking rule's target is not excluded,
    /// and the score the section computes from the current values reaches the
    /// threshold.
    pub(super) fn early_exit_reached(&self, program: &crate::Program, exit: &EarlyExit) -> bool {
        if self.mode != EngineMode::On {
            return false;
        }
        let tx = &self.state.tx;
        let mut score = exit.base;
        for (k, hint) in exit.scores.iter().zip(&exit.score_hints) {
            let v = tx.get_lower_hinted(k.as_bytes(), hint);
            score = score.saturating_add(super::parse_int(v.unwrap_or(b"0")));
        }
        let threshold = match &exit.threshold {
            Threshold::Literal(n) => *n,
            Threshold::Tx(k) => {
                let v = tx.get_lower_hinted(k.as_bytes(), &exit.threshold_hint);
                crate::operator::number::atoll(v.unwrap_or(b""))
            }
        };
        if score < threshold {
            return false;
        }
        let Some(blocking) = program.rules.get(exit.blocking as usize) else {
            return false;
        };
        if self.rule_removed(blocking) || self.excluded(blocking, Var::Tx, exit.score.as_bytes()) {
            return false;
        }
        !exit
            .section
            .iter()
            .filter_map(|&i| program.rules.get(i as usize))
            .any(|r| self.rule_removed(r))
    }

    /// Sorts the match records added since `from` (one phase of a reordered
    /// program) back into the original rule order.
    pub(super) fn restore_match_order(&mut self, program: &crate::Program, from: usize) {
        let rank = &program.ordering.rank;
        self.matched
            .sort_from_by_key(from, |m| rank.get(&m.id).copied().unwrap_or(u32::MAX));
    }
}
