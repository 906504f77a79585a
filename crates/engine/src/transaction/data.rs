//! Request- and response-derived variables, stored once per transaction in an
//! append-only arena. Every value has a stable slot number, which keys the
//! transformation memo: a value is transformed at most once per chain, whatever the
//! number of rules that inspect it.

use crate::variable::Var;

/// One stored value: the member key (empty for single-valued variables) and value.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// The member key (argument name, header name, ...), as received.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
}

/// The arena and, per variable, the slots of its values in order.
#[derive(Debug, Clone)]
pub struct Data {
    arena: Vec<Entry>,
    lists: Vec<Vec<u32>>,
}

impl Default for Data {
    fn default() -> Self {
        Data {
            arena: Vec::new(),
            lists: vec![Vec::new(); Var::ALL.len()],
        }
    }
}

impl Data {
    /// Empties everything, keeping allocations for reuse.
    pub fn clear(&mut self) {
        self.arena.clear();
        for l in &mut self.lists {
            l.clear();
        }
    }

    /// Appends a member to a collection variable.
    pub fn push(&mut self, var: Var, key: &[u8], value: &[u8]) -> u32 {
        let slot = self.arena.len() as u32;
        self.arena.push(Entry {
            key: key.to_vec(),
            value: value.to_vec(),
        });
        self.lists[var as usize].push(slot);
        slot
    }

    /// Sets a single-valued variable (replacing an earlier value).
    pub fn set(&mut self, var: Var, value: &[u8]) {
        self.lists[var as usize].clear();
        self.push(var, b"", value);
    }

    /// Removes all values of a variable.
    pub fn unset(&mut self, var: Var) {
        self.lists[var as usize].clear();
    }

    /// The slots of a variable's values.
    pub fn slots(&self, var: Var) -> &[u32] {
        &self.lists[var as usize]
    }

    /// The entry in a slot.
    pub fn entry(&self, slot: u32) -> &Entry {
        &self.arena[slot as usize]
    }

    /// The first value of a variable.
    pub fn first(&self, var: Var) -> Option<&[u8]> {
        self.slots(var)
            .first()
            .map(|&s| self.arena[s as usize].value.as_slice())
    }

    /// Whether a variable has any value.
    pub fn has(&self, var: Var) -> bool {
        !self.lists[var as usize].is_empty()
    }
}

/// Owned values computed per rule (state-derived values, counts), kept in buffers
/// reused from rule to rule.
#[derive(Debug, Default)]
pub struct Scratch {
    entries: Vec<Entry>,
    used: usize,
}

impl Scratch {
    /// Forgets the values (keeping their buffers).
    pub fn reset(&mut self) {
        self.used = 0;
    }

    /// Adds a value and returns its index.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> usize {
        if self.used == self.entries.len() {
            self.entries.push(Entry::default());
        }
        let e = &mut self.entries[self.used];
        e.key.clear();
        e.key.extend_from_slice(key);
        e.value.clear();
        e.value.extend_from_slice(value);
        self.used += 1;
        self.used - 1
    }
}

impl std::ops::Deref for Scratch {
    type Target = [Entry];

    fn deref(&self) -> &[Entry] {
        &self.entries[..self.used]
    }
}
