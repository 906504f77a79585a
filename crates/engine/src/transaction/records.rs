//! The records of a transaction's logged matches ([`MatchedRule`]), in match
//! order. A rule whose messages may be composed late
//! ([`crate::rule::Rule::defer_log`], see [`crate::deferred_log`]) is recorded
//! with its `msg` and `logdata` empty and its rule index kept beside; they are
//! expanded when the records are first read after a change
//! ([`Records::view`]), into a copy of the list kept until the next change. A
//! transaction whose records nobody reads (no audit log, or not relevant) never
//! expands them.

use std::sync::OnceLock;

use crate::audit::MatchedRule;
use crate::rule::RuleIdx;

/// The match records.
#[derive(Debug, Default)]
pub(crate) struct Records {
    /// The records, those composed late without their messages.
    list: Vec<MatchedRule>,
    /// Per record: the rule whose messages are still to be expanded; empty
    /// until a record is composed late (most transactions have none).
    late: Vec<Option<RuleIdx>>,
    /// The list with every message expanded, made at the first read since the
    /// last change (only when a record is composed late).
    view: OnceLock<Vec<MatchedRule>>,
}

impl Records {
    /// The number of records.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// The records as kept: ids, phases, flags and matched variables are
    /// final; the messages of late records are empty.
    pub(crate) fn kept(&self) -> &[MatchedRule] {
        &self.list
    }

    /// Adds a record whose messages are written.
    pub(crate) fn push(&mut self, record: MatchedRule) {
        self.changed();
        self.list.push(record);
        if !self.late.is_empty() {
            self.late.push(None);
        }
    }

    /// Adds the record of rule `rule`, whose messages [`Records::view`]
    /// expands.
    pub(crate) fn push_late(&mut self, record: MatchedRule, rule: RuleIdx) {
        self.changed();
        self.late.resize(self.list.len(), None);
        self.list.push(record);
        self.late.push(Some(rule));
    }

    /// Sorts the records from position `from` on by `key` (stable).
    pub(crate) fn sort_from_by_key(&mut self, from: usize, key: impl Fn(&MatchedRule) -> u32) {
        if self.list.len() <= from + 1 {
            return;
        }
        self.changed();
        if self.late.is_empty() {
            self.list[from..].sort_by_key(|m| key(m));
            return;
        }
        // Each record sorted with its rule index.
        let mut tail: Vec<(MatchedRule, Option<RuleIdx>)> = self
            .list
            .drain(from..)
            .zip(self.late.drain(from..))
            .collect();
        tail.sort_by_key(|(m, _)| key(m));
        for (m, l) in tail {
            self.list.push(m);
            self.late.push(l);
        }
    }

    /// The records with every message written: the list itself when none is
    /// composed late, otherwise a copy whose late records `compose` fills (given
    /// the rule and the record), made once until the next change.
    pub(crate) fn view(&self, compose: impl Fn(RuleIdx, &mut MatchedRule)) -> &[MatchedRule] {
        if self.late.is_empty() {
            return &self.list;
        }
        self.view.get_or_init(|| {
            let mut all = self.list.clone();
            for (m, late) in all.iter_mut().zip(&self.late) {
                if let Some(rule) = *late {
                    compose(rule, m);
                }
            }
            all
        })
    }

    /// Forgets the view (a record was added or moved).
    fn changed(&mut self) {
        if self.view.get().is_some() {
            self.view = OnceLock::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: u32, msg: &str) -> MatchedRule {
        MatchedRule {
            id,
            phase: 2,
            msg: msg.to_string(),
            data: String::new(),
            severity: None,
            tags: Default::default(),
            rev: "".into(),
            ver: "".into(),
            maturity: "".into(),
            accuracy: "".into(),
            file: "".into(),
            line: 0,
            matched_var_name: String::new(),
            matched_var: String::new(),
            operator: "".into(),
            disruptive: false,
            auditlog: true,
        }
    }

    #[test]
    fn late_records_are_composed_when_read_and_again_after_a_change() {
        let mut r = Records::default();
        r.push(record(1, "written"));
        r.push_late(record(2, ""), 7);
        let compose = |rule: RuleIdx, m: &mut MatchedRule| m.msg = format!("rule {rule}");
        let msgs = |r: &Records| -> Vec<String> {
            r.view(compose).iter().map(|m| m.msg.clone()).collect()
        };
        assert_eq!(msgs(&r), ["written", "rule 7"]);
        assert_eq!(r.kept()[1].msg, "");
        r.push_late(record(3, ""), 9);
        assert_eq!(msgs(&r), ["written", "rule 7", "rule 9"]);
        // Sorting keeps each record's rule with it.
        r.sort_from_by_key(0, |m| 10 - m.id);
        assert_eq!(msgs(&r), ["rule 9", "rule 7", "written"]);
        assert_eq!(r.len(), 3);
    }

    #[test]
    fn without_late_records_the_view_is_the_list() {
        let mut r = Records::default();
        r.push(record(1, "a"));
        let v = r.view(|_, _| panic!("nothing to compose"));
        assert!(std::ptr::eq(v.as_ptr(), r.kept().as_ptr()));
    }
}
