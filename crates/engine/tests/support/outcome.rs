//! What a transaction decided: its intervention's status (200 without one) and the
//! matched rules' ids and messages, for tests that compare runs.

use engine::Transaction;

/// The status and the matched rules (id, message) of `tx` so far.
pub fn decision(tx: &Transaction) -> (u16, Vec<(u32, String)>) {
    let status = tx.intervention().map_or(200, engine::Intervention::status);
    let matched = tx
        .matched_rules()
        .iter()
        .map(|m| (m.id, m.msg.clone()))
        .collect();
    (status, matched)
}
