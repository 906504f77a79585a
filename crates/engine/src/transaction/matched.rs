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
//! only when read (see [`Match`]).

use std::borrow::Cow;

use super::data::Data;
use crate::variable::Var;

/// One match: MATCHED_VAR_NAME and MATCHED_VAR. The name of a value stored in
/// the transaction's arena is not written at the match: `slot` says where it is
/// (`VAR:key` of that slot), and [`MatchedVars::name`] writes it when something
/// reads it (a macro, MATCHED_VARS_NAMES, a log record), which most matches never
/// see. Arena slots keep their key and value until the transaction's data is
/// cleared, and the list is cleared with it (see [`super::pool`]).
#[derive(Debug, Default)]
pub(crate) struct Match {
    /// The name, written (empty while `slot` names it).
    pub name: String,
    /// The arena value whose `VAR:key` is the name, when `name` is not written.
    pub slot: Option<(Var, u32)>,
    /// The value matched (transformed).
    pub value: Vec<u8>,
}

impl Match {
    /// Names the match by an arena value: `var`, with the key of `slot`.
    pub fn name_slot(&mut self, var: Var, slot: u32) {
        self.slot = Some((var, slot));
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
            if m.value.capacity() > max {
                m.value = Vec::new();
            }
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
                    slot: None,
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

    /// Appends a copy of `(name, value)`, into a spare slot's buffers when there
    /// is one.
    pub fn push_copy(&mut self, name: &str, value: &[u8]) {
        match self.entries.get_mut(self.len) {
            Some(m) => {
                m.name.clear();
                m.name.push_str(name);
                m.slot = None;
                m.value.clear();
                m.value.extend_from_slice(value);
            }
            None => self.entries.push(Match {
                name: name.to_string(),
                slot: None,
                value: value.to_vec(),
            }),
        }
        self.len += 1;
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The last entry: MATCHED_VAR_NAME and MATCHED_VAR, its name read from
    /// `data` (the transaction's) when it names an arena value.
    pub fn last<'a>(&'a self, data: &'a Data) -> Option<(Cow<'a, str>, &'a [u8])> {
        self.entries[..self.len]
            .last()
            .map(|m| (Self::name(m, data), m.value.as_slice()))
    }

    /// The value of the last entry: MATCHED_VAR.
    pub fn last_value(&self) -> Option<&[u8]> {
        self.entries[..self.len].last().map(|m| m.value.as_slice())
    }

    /// The entries in match order, as [`MatchedVars::last`] gives them.
    pub fn iter<'a>(
        &'a self,
        data: &'a Data,
    ) -> impl DoubleEndedIterator<Item = (Cow<'a, str>, &'a [u8])> {
        self.entries[..self.len]
            .iter()
            .map(move |m| (Self::name(m, data), m.value.as_slice()))
    }

    /// An entry's name: written, or `VAR:key` of its arena slot in `data` (only
    /// `VAR` should the slot be gone, which a list cleared with its data never
    /// meets).
    fn name<'a>(m: &'a Match, data: &'a Data) -> Cow<'a, str> {
        match m.slot {
            None => Cow::Borrowed(&m.name),
            Some((var, slot)) => match data.try_entry(slot) {
                Some(e) if !e.key.is_empty() => {
                    let mut s = String::new();
                    super::resolve::push_var_name(&mut s, var, &e.key);
                    Cow::Owned(s)
                }
                _ => Cow::Borrowed(var.name()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Match, MatchedVars};
    use crate::transaction::data::Data;
    use crate::variable::Var;

    fn push_copy(m: &mut MatchedVars, name: &str, value: &[u8]) {
        let mut e = m.spare();
        e.name.push_str(name);
        e.value.extend_from_slice(value);
        m.push(e);
    }

    fn all(m: &MatchedVars, data: &Data) -> Vec<(String, Vec<u8>)> {
        m.iter(data)
            .map(|(n, v)| (n.into_owned(), v.to_vec()))
            .collect()
    }

    fn pair(n: &str, v: &[u8]) -> (String, Vec<u8>) {
        (n.to_string(), v.to_vec())
    }

    #[test]
    fn copies_are_pushed_into_spare_slots() {
        let data = Data::default();
        let mut m = MatchedVars::default();
        m.push_copy("TX:a", b"long first value");
        m.push_copy("TX:b", b"2");
        m.clear();
        m.push_copy("TX:c", b"3");
        assert_eq!(all(&m, &data), vec![pair("TX:c", b"3")]);
        m.push_copy("TX:d", b"");
        m.push_copy("TX:e", b"5");
        let last = m.last(&data).map(|(n, v)| (n.into_owned(), v.to_vec()));
        assert_eq!(last, Some(pair("TX:e", b"5")));
        assert_eq!(m.last_value(), Some(&b"5"[..]));
        assert_eq!(m.iter(&data).count(), 3);
    }

    #[test]
    fn cleared_entries_are_reused_and_never_seen_again() {
        let data = Data::default();
        let mut m = MatchedVars::default();
        push_copy(&mut m, "ARGS:a", b"first value");
        push_copy(&mut m, "ARGS:b", b"2");
        assert_eq!(m.last_value(), Some(&b"2"[..]));
        m.clear();
        assert!(m.last(&data).is_none() && m.is_empty());
        assert_eq!(m.iter(&data).count(), 0);
        // The spare entry is empty even though its buffers held "ARGS:a".
        let e = m.spare();
        assert!(e.name.is_empty() && e.value.is_empty() && e.name.capacity() >= 6);
        assert!(e.slot.is_none());
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
            m.last(&data).map(|(n, _)| n.into_owned()),
            Some("REQUEST_URI".into())
        );
        data.clear();
        assert_eq!(
            m.iter(&data).next().map(|(n, _)| n.into_owned()),
            Some("TX:1".into())
        );
    }
}
