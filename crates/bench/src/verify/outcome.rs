//! What one request's evaluation produced, in a form two runs can be compared by:
//! the decision, the matched rules, the TX variables (anomaly scores apart) and the
//! JSON audit record with its per-transaction identity normalised.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use engine::audit::MatchedRule;
use engine::{Connection, Intervention, Program, Transaction};
use serde::Serialize;
use serde_json::Value;

use crate::corpus::Request;
use crate::engine_bench;

/// Stands for the transaction's unique id in a normalised audit record.
pub const UNIQUE_ID: &str = "<unique_id>";
/// Stands for the time stamp in a normalised audit record.
pub const TIME_STAMP: &str = "<time_stamp>";

/// The decision: an intervention and the phase whose processing returned it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// Phase 1-4.
    pub phase: u8,
    /// What the engine decided.
    pub intervention: Intervention,
}

/// One evaluation's observable results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The decision, when the request was stopped.
    pub decision: Option<Decision>,
    /// Matched (logged) rules in order, with their data.
    pub matched: Vec<MatchedRule>,
    /// TX variables whose name contains `anomaly_score`, as text.
    pub scores: BTreeMap<String, String>,
    /// The other TX variables, as text.
    pub tx: BTreeMap<String, String>,
    /// The JSON audit record, unique id and time stamp normalised.
    pub audit: Value,
}

impl Outcome {
    /// Evaluates `req` in a fresh transaction over `program` through all five
    /// phases (the response of [`engine_bench::drive`]) and records the results.
    pub fn observe(program: &Arc<Program>, req: &Request, response_body: &[u8]) -> Outcome {
        let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
        let phase = engine_bench::drive(&mut tx, req, response_body);
        Outcome::of(&tx, phase)
    }

    /// Records a finished transaction; `phase` is the phase that decided.
    pub fn of(tx: &Transaction, phase: Option<u8>) -> Outcome {
        let decision = match (phase, tx.intervention()) {
            (Some(phase), Some(i)) => Some(Decision {
                phase,
                intervention: i.clone(),
            }),
            _ => None,
        };
        let mut scores = BTreeMap::new();
        let mut others = BTreeMap::new();
        for (k, v) in tx.tx_collection().iter() {
            let key = k.to_ascii_lowercase();
            let value = String::from_utf8_lossy(v).into_owned();
            if key.contains("anomaly_score") {
                scores.insert(key, value);
            } else {
                others.insert(key, value);
            }
        }
        Outcome {
            decision,
            matched: tx.matched_rules().to_vec(),
            scores,
            tx: others,
            audit: normalised_audit(tx),
        }
    }

    /// A digest of the whole outcome, to compare later passes without keeping every
    /// reference outcome in memory.
    pub fn digest(&self) -> u64 {
        let mut h = DefaultHasher::new();
        // Serialising plain data to a string cannot fail.
        serde_json::to_string(self).unwrap_or_default().hash(&mut h);
        h.finish()
    }
}

/// The audit record with the per-transaction unique id and the time stamp replaced
/// by [`UNIQUE_ID`] and [`TIME_STAMP`]: the engine draws both from a process-wide
/// counter and the clock, with no hook to fix them.
pub fn normalised_audit(tx: &Transaction) -> Value {
    let mut v = engine::audit_json::render_value(tx);
    if let Some(t) = v.get_mut("transaction").and_then(Value::as_object_mut) {
        t.insert("unique_id".into(), UNIQUE_ID.into());
        t.insert("time_stamp".into(), TIME_STAMP.into());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_decision_rules_scores_and_a_normalised_audit_record() {
        let program = Program::from_str(
            "t.conf",
            "SecRuleEngine On\n\
             SecAuditLogParts ABHKZ\n\
             SecRule ARGS \"@rx evil\" \"id:1,phase:1,pass,log,msg:'m',setvar:tx.inbound_anomaly_score=+5,setvar:tx.seen=1\"\n\
             SecRule TX:inbound_anomaly_score \"@ge 5\" \"id:2,phase:1,deny,status:403,log\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let req = Request {
            name: "r".into(),
            method: "GET".into(),
            target: "/?q=evil".into(),
            version: "HTTP/1.1".into(),
            headers: vec![("Host".into(), "example.com".into())],
            body: String::new(),
            resp_len: 10,
        };
        let a = Outcome::observe(&program, &req, b"0123456789");
        let b = Outcome::observe(&program, &req, b"0123456789");
        let d = a
            .decision
            .as_ref()
            .map(|d| (d.phase, d.intervention.status()));
        assert_eq!(d, Some((1, 403)));
        let ids: Vec<u32> = a.matched.iter().map(|m| m.id).collect();
        assert_eq!(ids, [1, 2]);
        assert_eq!(
            a.scores.get("inbound_anomaly_score").map(String::as_str),
            Some("5")
        );
        assert_eq!(a.tx.get("seen").map(String::as_str), Some("1"));
        assert_eq!(a.audit["transaction"]["unique_id"], UNIQUE_ID);
        // Two transactions differ only in what was normalised.
        assert_eq!(a, b);
        assert_eq!(a.digest(), b.digest());
    }
}
