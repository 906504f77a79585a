//! MATCHED_VARS of the current rule (and chain): the (name, value) of every value
//! it matched, the last being MATCHED_VAR / MATCHED_VAR_NAME.
//!
//! A rule that does not match clears the list, which happens for most rules of
//! every request, and a match appends to it, which CRS's setup rules do dozens of
//! times per request. Entries past the current length keep their buffers, so a
//! warm transaction appends without allocating: [`MatchedVars::spare`] hands out a
//! cleared entry to fill and [`MatchedVars::push`] puts it back in place. The list
//! goes back to the thread's buffer pool with the transaction (see [`super::pool`]).
//! The name of a match on an arena value is kept as the value's slot and written
//! only when read, its value too when the rule's transformations left it as it
//! was (a response body is not copied), and a rule folded at load time adds its
//! matches by reference (see [`Source`]).

use std::borrow::Cow;

use super::data::Data;
use crate::rule::{Rule, RuleIdx};
use crate::variable::Var;

/// Where a match's name (and value) are, when not written into it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Written: `name` and `value` hold them.
    #[default]
    Written,
    /// The name is `VAR:key` of an arena slot (the value is written).
    Slot(Var, u32),
    /// The name is `VAR:key` of an arena slot and the value is the slot's raw
    /// value (a match on an untransformed value: a response body is not copied).
    SlotValue(Var, u32),
    /// Both are match `k` of a rule's folded result
    /// ([`crate::prune::StaticResult::matches`]), kept by the program.
    Folded(RuleIdx, u32),
}

/// What the names and values kept by reference are read from: the
/// transaction's data and the program's rules.
#[derive(Clone, Copy)]
pub(crate) struct Lookup<'a> {
    pub data: &'a Data,
    pub rules: &'a [Rule],
}

/// One match: MATCHED_VAR_NAME and MATCHED_VAR. The name of a value stored in
/// the transaction's arena is not written at the match: `source` says where it
/// is (`VAR:key` of that slot), and [`MatchedVars::name`] writes it when
/// something reads it (a macro, MATCHED_VARS_NAMES, a log record), which most
/// matches never see. Arena slots keep their key and value until the
/// transaction's data is cleared, and the list is cleared with it (see
/// [`super::pool`]). A folded rule's match is read from the program's rule.
#[derive(Debug, Default)]
pub(crate) struct Match {
    /// The name, written (empty unless `source` is [`Source::Written`]).
    pub name: String,
    /// Where the name (and, for a folded match, the value) are.
    pub source: Source,
    /// The value matched (transformed; empty for a folded match and one read
    /// from its slot).
    pub value: Vec<u8>,
}

impl Match {
    /// Names the match by an arena value: `var`, with the key of `slot`.
    pub fn name_slot(&mut self, var: Var, slot: u32) {
        self.source = Source::Slot(var, slot);
    }

    /// Names the match by an arena value whose raw value is the value matched:
    /// both are read from `slot` (nothing is written).
    pub fn name_slot_value(&mut self, var: Var, slot: u32) {
        self.source = Source::SlotValue(var, slot);
    }

    /// Names the match by an arena value and gives it `v`, the value matched:
    /// read from the slot when `v` is the slot's own bytes `raw` (the memo's
    /// answer where the rule's transformations left the value as it was; nothing
    /// is copied), else copied.
    #[inline]
    pub fn fill_from_slot(&mut self, (var, slot): (Var, u32), v: &[u8], raw: &[u8]) {
        if std::ptr::eq(v, raw) {
            self.name_slot_value(var, slot);
        } else {
            self.value.extend_from_slice(v);
            self.name_slot(var, slot);
        }
    }

    /// Makes this match `k` of rule `rule`'s folded result, name and value (both
    /// read from the rule).
    pub fn name_folded(&mut self, rule: RuleIdx, k: u32) {
        self.source = Source::Folded(rule, k);
    }
}

/// The matches, in match order.
#[derive(Debug, Default)]
pub(crate) struct MatchedVars {
    entries: Vec<Match>,
    len: usize,
}

impl MatchedVars {
    /// Empties the list (keeping the buffers).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Frees every entry buffer larger than `max` bytes (see
    /// [`super::data::Data::trim`]) and returns the bytes still held.
    pub fn trim(&mut self, max: usize) -> usize {
        for m in &mut self.entries {
            if m.name.capacity() > max {
                m.name = String::new();
            }
            crate::buffers::shed(&mut m.value, max);
        }
        self.capacity_bytes()
    }

    /// Bytes held, spare entries included (for the pool's size bound).
    pub fn capacity_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Match>()
            + self
                .entries
                .iter()
                .map(|m| m.name.capacity() + m.value.capacity())
                .sum::<usize>()
    }

    /// A cleared entry whose buffers come from a spare slot: fill it and give it
    /// to [`MatchedVars::push`].
    pub fn spare(&mut self) -> Match {
        match self.entries.get_mut(self.len) {
            Some(m) => {
                let mut e = Match {
                    name: std::mem::take(&mut m.name),
                    source: Source::Written,
                    value: std::mem::take(&mut m.value),
                };
                e.name.clear();
                e.value.clear();
                e
            }
            None => Match::default(),
        }
    }

    /// Appends an entry (into the spare slot [`MatchedVars::spare`] emptied).
    pub fn push(&mut self, entry: Match) {
        match self.entries.get_mut(self.len) {
            Some(slot) => *slot = entry,
            None => self.entries.push(entry),
        }
        self.len += 1;
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The last entry: MATCHED_VAR_NAME and MATCHED_VAR, read through `at`
    /// where kept by reference.
    #[inline]
    pub fn last<'a>(&'a self, at: Lookup<'a>) -> Option<(Cow<'a, str>, &'a [u8])> {
        self.entries[..self.len]
            .last()
            .map(|m| (Self::name(m, at), Self::value(m, at)))
    }

    /// The value of the last entry: MATCHED_VAR.
    pub fn last_value<'a>(&'a self, at: Lookup<'a>) -> Option<&'a [u8]> {
        self.entries[..self.len].last().map(|m| Self::value(m, at))
    }

    /// The entries in match order, as [`MatchedVars::last`] gives them.
    pub fn iter<'a>(
        &'a self,
        at: Lookup<'a>,
    ) -> impl DoubleEndedIterator<Item = (Cow<'a, str>, &'a [u8])> {
        self.entries[..self.len]
            .iter()
            .map(move |m| (Self::name(m, at), Self::value(m, at)))
    }

    /// An entry's name: written, `VAR:key` of its arena slot, or its folded
    /// rule's. (Only `VAR` should the slot be gone, and nothing should the rule
    /// or match be, which a list cleared with its data, in a transaction of the
    /// program whose rules it reads, never meets.)
    fn name<'a>(m: &'a Match, at: Lookup<'a>) -> Cow<'a, str> {
        match m.source {
            Source::Written => Cow::Borrowed(&m.name),
            Source::Slot(var, slot) | Source::SlotValue(var, slot) => match at.data.try_entry(slot)
            {
                Some(e) if !e.key.is_empty() => {
                    let mut s = String::new();
                    super::resolve::push_var_name(&mut s, var, &e.key);
                    Cow::Owned(s)
                }
                _ => Cow::Borrowed(var.name()),
            },
            Source::Folded(rule, k) => {
                Cow::Borrowed(Self::folded(at, rule, k).map_or("", |(n, _)| n.as_str()))
            }
        }
    }

    /// An entry's value: written, its arena slot's, or its folded rule's.
    #[inline]
    fn value<'a>(m: &'a Match, at: Lookup<'a>) -> &'a [u8] {
        match m.source {
            Source::Folded(rule, k) => Self::folded(at, rule, k).map_or(&[], |(_, v)| v),
            Source::SlotValue(_, slot) => at.data.try_entry(slot).map_or(&[], |e| &e.value),
            _ => &m.value,
        }
    }

    /// Match `k` of rule `rule`'s folded result.
    fn folded(at: Lookup<'_>, rule: RuleIdx, k: u32) -> Option<&(String, Vec<u8>)> {
        at.rules
            .get(rule as usize)?
            .static_result
            .as_ref()?
            .matches
            .get(k as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::{Lookup, Match, MatchedVars};
    use crate::transaction::data::Data;
    use crate::variable::Var;

    fn at(data: &Data) -> Lookup<'_> {
        Lookup { data, rules: &[] }
    }

    fn push_copy(m: &mut MatchedVars, name: &str, value: &[u8]) {
        let mut e = m.spare();
        e.name.push_str(name);
        e.value.extend_from_slice(value);
        m.push(e);
    }

    fn all(m: &MatchedVars, data: &Data) -> Vec<(String, Vec<u8>)> {
        m.iter(at(data))
            .map(|(n, v)| (n.into_owned(), v.to_vec()))
            .collect()
    }

    fn pair(n: &str, v: &[u8]) -> (String, Vec<u8>) {
        (n.to_string(), v.to_vec())
    }

    #[test]
    fn entries_are_pushed_into_spare_slots() {
        let data = Data::default();
        let mut m = MatchedVars::default();
        push_copy(&mut m, "TX:a", b"long first value");
        push_copy(&mut m, "TX:b", b"2");
        m.clear();
        push_copy(&mut m, "TX:c", b"3");
        assert_eq!(all(&m, &data), vec![pair("TX:c", b"3")]);
        push_copy(&mut m, "TX:d", b"");
        push_copy(&mut m, "TX:e", b"5");
        let last = m.last(at(&data)).map(|(n, v)| (n.into_owned(), v.to_vec()));
        assert_eq!(last, Some(pair("TX:e", b"5")));
        assert_eq!(m.last_value(at(&data)), Some(&b"5"[..]));
        assert_eq!(m.iter(at(&data)).count(), 3);
    }

    #[test]
    fn cleared_entries_are_reused_and_never_seen_again() {
        let data = Data::default();
        let mut m = MatchedVars::default();
        push_copy(&mut m, "ARGS:a", b"first value");
        push_copy(&mut m, "ARGS:b", b"2");
        assert_eq!(m.last_value(at(&data)), Some(&b"2"[..]));
        m.clear();
        assert!(m.last(at(&data)).is_none() && m.is_empty());
        assert_eq!(m.iter(at(&data)).count(), 0);
        // The spare entry is empty even though its buffers held "ARGS:a".
        let e = m.spare();
        assert!(e.name.is_empty() && e.value.is_empty() && e.name.capacity() >= 6);
        assert_eq!(e.source, super::Source::Written);
        m.push(e);
        push_copy(&mut m, "X", b"y");
        assert_eq!(all(&m, &data), vec![pair("", b""), pair("X", b"y")]);
    }

    #[test]
    fn names_of_arena_values_are_written_when_read() {
        let mut data = Data::default();
        let host = data.push(Var::RequestHeaders, b"Host", b"example.com");
        let uri = data.push(Var::RequestUri, b"", b"/a");
        let bad = data.push(Var::ArgsGet, b"k\xffey", b"v");
        let mut m = MatchedVars::default();
        for (var, slot, value) in [
            (Var::RequestHeadersNames, host, &b"host"[..]),
            (Var::RequestUri, uri, b"/a"),
            (Var::Args, bad, b"v"),
        ] {
            let mut e = m.spare();
            e.name_slot(var, slot);
            e.value.extend_from_slice(value);
            m.push(e);
        }
        push_copy(&mut m, "TX:0", b"x");
        assert_eq!(
            all(&m, &data),
            vec![
                pair("REQUEST_HEADERS_NAMES:Host", b"host"),
                pair("REQUEST_URI", b"/a"),
                pair("ARGS:k\u{fffd}ey", b"v"),
                pair("TX:0", b"x"),
            ]
        );
        // A spare entry reused after a named one is written again: no slot left
        // over from the entry its buffers came from.
        m.clear();
        push_copy(&mut m, "TX:1", b"y");
        let mut e = m.spare();
        e.name.push_str("ARGS:z");
        m.push(e);
        assert_eq!(
            all(&m, &data),
            vec![pair("TX:1", b"y"), pair("ARGS:z", b"")]
        );
        // A slot past the transaction's values (none while the list is cleared
        // with the data) gives the variable's name alone.
        let mut e: Match = m.spare();
        e.name_slot(Var::RequestUri, 99);
        m.push(e);
        assert_eq!(
            m.last(at(&data)).map(|(n, _)| n.into_owned()),
            Some("REQUEST_URI".into())
        );
        // A folded rule's match is read from the program's rule (none here:
        // nothing; `folded_matches_are_read_from_the_rule` has one), and the
        // entry it took is written again when reused.
        m.clear();
        let mut e = m.spare();
        e.name_folded(7, 0);
        m.push(e);
        assert_eq!(all(&m, &data), vec![pair("", b"")]);
        m.clear();
        push_copy(&mut m, "TX:1", b"y");
        assert_eq!(all(&m, &data), vec![pair("TX:1", b"y")]);
        data.clear();
        assert_eq!(
            m.iter(at(&data)).next().map(|(n, _)| n.into_owned()),
            Some("TX:1".into())
        );
    }

    #[test]
    fn values_of_arena_slots_are_read_from_them() {
        let mut data = Data::default();
        let body = data.push(Var::ResponseBody, b"", b"<html>a body</html>");
        let arg = data.push(Var::ArgsGet, b"q", b"v");
        let mut m = MatchedVars::default();
        push_copy(&mut m, "TX:0", b"long earlier value");
        m.clear();
        for (var, slot) in [(Var::ResponseBody, body), (Var::Args, arg)] {
            let mut e = m.spare();
            e.name_slot_value(var, slot);
            m.push(e);
        }
        assert_eq!(
            all(&m, &data),
            vec![
                pair("RESPONSE_BODY", b"<html>a body</html>"),
                pair("ARGS:q", b"v")
            ]
        );
        // The spare entry's own buffer (which held the earlier value) is not read.
        assert_eq!(m.last_value(at(&data)), Some(&b"v"[..]));
    }

    #[test]
    fn folded_matches_are_read_from_the_rule() {
        let rules = "SecAction \"id:1,phase:1,pass,nolog,setvar:tx.level=1\"\n\
            SecRule TX:LEVEL \"@lt 2\" \"id:2,phase:1,pass,nolog,skipAfter:END\"\n\
            SecRule ARGS \"@rx x\" \"id:3,phase:1,deny\"\n\
            SecMarker END\n";
        let program = crate::Program::from_str("folded.conf", rules).expect("rules compile");
        let folded = program
            .rules
            .iter()
            .find(|r| r.id == 2 && r.static_result.as_ref().is_some_and(|s| s.plain))
            .expect("rule 2 is folded");
        let data = Data::default();
        let at = Lookup {
            data: &data,
            rules: &program.rules,
        };
        let mut m = MatchedVars::default();
        push_copy(&mut m, "ARGS:a", b"b");
        let mut e = m.spare();
        e.name_folded(folded.index, 0);
        m.push(e);
        let got: Vec<_> = m
            .iter(at)
            .map(|(n, v)| (n.into_owned(), v.to_vec()))
            .collect();
        assert_eq!(got, vec![pair("ARGS:a", b"b"), pair("TX:level", b"1")]);
        assert_eq!(m.last_value(at), Some(&b"1"[..]));
        // A match the rule does not have reads as nothing.
        let mut e = m.spare();
        e.name_folded(folded.index, 1);
        m.push(e);
        assert_eq!(
            m.last(at).map(|(n, v)| (n.into_owned(), v.to_vec())),
            Some(pair("", b""))
        );
    }
}
