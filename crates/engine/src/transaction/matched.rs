//! MATCHED_VARS of the current rule (and chain): the (name, value) of every value
//! it matched, the last being MATCHED_VAR / MATCHED_VAR_NAME.
//!
//! A rule that does not match clears the list, which happens for most rules of
//! every request, and a match appends to it, which CRS's setup rules do dozens of
//! times per request. Entries past the current length keep their buffers, so a
//! warm transaction appends without allocating: [`MatchedVars::spare`] hands out a
//! cleared entry to fill and [`MatchedVars::push`] puts it back in place. The list
//! goes back to the thread's buffer pool with the transaction (see [`super::pool`]).

/// The matched (name, value) pairs, in match order.
#[derive(Debug, Default)]
pub(crate) struct MatchedVars {
    entries: Vec<(String, Vec<u8>)>,
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
        for (n, v) in &mut self.entries {
            if n.capacity() > max {
                *n = String::new();
            }
            if v.capacity() > max {
                *v = Vec::new();
            }
        }
        self.capacity_bytes()
    }

    /// Bytes held, spare entries included (for the pool's size bound).
    pub fn capacity_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(String, Vec<u8>)>()
            + self
                .entries
                .iter()
                .map(|(n, v)| n.capacity() + v.capacity())
                .sum::<usize>()
    }

    /// A cleared entry whose buffers come from a spare slot: fill it and give it
    /// to [`MatchedVars::push`].
    pub fn spare(&mut self) -> (String, Vec<u8>) {
        match self.entries.get_mut(self.len) {
            Some((name, value)) => {
                let mut e = (std::mem::take(name), std::mem::take(value));
                e.0.clear();
                e.1.clear();
                e
            }
            None => Default::default(),
        }
    }

    /// Appends an entry (into the spare slot [`MatchedVars::spare`] emptied).
    pub fn push(&mut self, entry: (String, Vec<u8>)) {
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
            Some((n, v)) => {
                n.clear();
                n.push_str(name);
                v.clear();
                v.extend_from_slice(value);
            }
            None => self.entries.push((name.to_string(), value.to_vec())),
        }
        self.len += 1;
    }

    /// The last entry: MATCHED_VAR_NAME and MATCHED_VAR.
    pub fn last(&self) -> Option<(&str, &[u8])> {
        self.entries[..self.len]
            .last()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
    }

    /// The entries in match order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&str, &[u8])> {
        self.entries[..self.len]
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::MatchedVars;

    fn push_copy(m: &mut MatchedVars, name: &str, value: &[u8]) {
        let mut e = m.spare();
        e.0.push_str(name);
        e.1.extend_from_slice(value);
        m.push(e);
    }

    #[test]
    fn copies_are_pushed_into_spare_slots() {
        let mut m = MatchedVars::default();
        m.push_copy("TX:a", b"long first value");
        m.push_copy("TX:b", b"2");
        m.clear();
        m.push_copy("TX:c", b"3");
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![("TX:c", &b"3"[..])]);
        m.push_copy("TX:d", b"");
        m.push_copy("TX:e", b"5");
        assert_eq!(m.last(), Some(("TX:e", &b"5"[..])));
        assert_eq!(m.iter().count(), 3);
    }

    #[test]
    fn cleared_entries_are_reused_and_never_seen_again() {
        let mut m = MatchedVars::default();
        push_copy(&mut m, "ARGS:a", b"first value");
        push_copy(&mut m, "ARGS:b", b"2");
        assert_eq!(m.last(), Some(("ARGS:b", &b"2"[..])));
        m.clear();
        assert_eq!(m.last(), None);
        assert_eq!(m.iter().count(), 0);
        // The spare entry is empty even though its buffers held "ARGS:a".
        let e = m.spare();
        assert!(e.0.is_empty() && e.1.is_empty() && e.0.capacity() >= 6);
        m.push(e);
        push_copy(&mut m, "X", b"y");
        let all: Vec<_> = m.iter().collect();
        assert_eq!(all, vec![("", &b""[..]), ("X", &b"y"[..])]);
    }
}
