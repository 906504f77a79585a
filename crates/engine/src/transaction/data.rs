//! Request- and response-derived variables, stored once per transaction in an
//! append-only arena. Every value has a stable slot number, which keys the
//! transformation memo: a value is transformed at most once per chain, whatever the
//! number of rules that inspect it.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::value_cache::{ResultCache, Snapshot, ValueEntry};
use crate::variable::Var;

/// Generations come in blocks of `1 << BLOCK_BITS` numbers, each block taken by
/// one [`Data`] from a process-wide counter when it starts (new or cleared for
/// the next transaction) and whenever it has used up the numbers of its block.
/// So no two transactions' data ever share a generation or a list version, and
/// a work set's caches (keyed by them, see [`super::pool`]) made for one
/// transaction are never found current by another: it needs no pass over them
/// when it changes hands. (2^48 blocks: at a million transactions a second,
/// about nine years before the counter wraps.)
const BLOCK_BITS: u32 = 16;

/// The next block (see [`BLOCK_BITS`]).
static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);

/// The first generation of a block of this data's own.
fn fresh_generation() -> u64 {
    NEXT_BLOCK.fetch_add(1, Ordering::Relaxed) << BLOCK_BITS
}

/// A slot's state in the result cache.
#[derive(Debug, Clone, Copy, Default)]
enum Cached {
    /// Not looked up yet.
    #[default]
    NotLooked,
    /// Not in the table; the processing cost the value has needed so far.
    Miss(u32),
    /// Its entry's position in the transaction's snapshot of the table.
    Hit(u32),
}

/// One stored value: the member key (empty for single-valued variables) and value.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// The member key (argument name, header name, ...), as received.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
}

impl Entry {
    /// Replaces the key and value, reusing the buffers.
    #[inline]
    fn fill(&mut self, key: &[u8], value: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(key);
        self.value.clear();
        self.value.extend_from_slice(value);
    }
}

/// The arena and, per variable, the slots of its values in order.
#[derive(Debug)]
pub struct Data {
    /// Entries; those past `used` are spare buffers from before a `clear`.
    arena: Vec<Entry>,
    /// Per slot: the value's entry in the result cache, once looked up.
    cached: Vec<Cached>,
    /// The result cache's table, taken at the transaction's first lookup: every
    /// value is looked up in it (one load of the table pointer per transaction).
    table: Option<Snapshot>,
    used: usize,
    lists: Vec<Vec<u32>>,
    /// Bumped on every change: results derived from the values (the prefilter's
    /// per-group unions) are valid while it stays the same. Unique to this
    /// transaction (see [`BLOCK_BITS`]).
    generation: u64,
    /// Per variable: the generation of its list's last change (results derived
    /// from one list, the class unions, stay valid while it is the same).
    versions: Vec<u64>,
    /// Bytes the entries' buffers hold (their capacities), kept as they grow,
    /// so that a transaction's end need not walk the arena (see [`Data::trim`]).
    held: usize,
    /// The largest capacity of an entry's buffer since the last walk (an upper
    /// bound: a buffer freed since is still counted).
    largest: usize,
}

impl Default for Data {
    fn default() -> Self {
        let generation = fresh_generation();
        Data {
            arena: Vec::new(),
            cached: Vec::new(),
            table: None,
            used: 0,
            lists: vec![Vec::new(); Var::ALL.len()],
            generation,
            versions: vec![generation; Var::ALL.len()],
            held: 0,
            largest: 0,
        }
    }
}

impl Data {
    /// A value that holds nothing and allocates nothing, to leave in the place
    /// of a transaction's data as it is dropped (its buffers go to the pool). It
    /// has no variable lists: no other method may be called on it.
    pub(crate) fn spent() -> Data {
        Data {
            arena: Vec::new(),
            cached: Vec::new(),
            table: None,
            used: 0,
            lists: Vec::new(),
            generation: 0,
            versions: Vec::new(),
            held: 0,
            largest: 0,
        }
    }

    /// Empties everything, keeping allocations for reuse.
    pub fn clear(&mut self) {
        self.generation = fresh_generation();
        self.used = 0;
        self.cached.clear();
        self.table = None;
        for l in &mut self.lists {
            l.clear();
        }
        let g = self.generation;
        for v in &mut self.versions {
            *v = g;
        }
    }

    /// The next generation (a new block's first when this one's are used up).
    #[inline]
    fn bump(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation & ((1 << BLOCK_BITS) - 1) == 0 {
            self.generation = fresh_generation();
        }
    }

    /// Appends a member to a collection variable.
    pub fn push(&mut self, var: Var, key: &[u8], value: &[u8]) -> u32 {
        self.bump();
        let slot = self.used as u32;
        if self.used == self.arena.len() {
            let e = Entry {
                key: key.to_vec(),
                value: value.to_vec(),
            };
            self.count_held(0, (e.key.capacity(), e.value.capacity()));
            self.arena.push(e);
        } else {
            let e = &mut self.arena[self.used];
            if key.len() <= e.key.capacity() && value.len() <= e.value.capacity() {
                // Written in place: the count stays.
                e.fill(key, value);
            } else {
                self.grow_into(key, value);
            }
        }
        // One state per slot below `used` (`clear` empties both).
        if self.cached.len() != self.used {
            self.cached.resize_with(self.used, || Cached::NotLooked);
        }
        self.cached.push(Cached::NotLooked);
        self.used += 1;
        self.lists[var as usize].push(slot);
        self.versions[var as usize] = self.generation;
        slot
    }

    /// Writes a member into the next entry, one of whose buffers must grow to
    /// hold it, and counts the growth (out of line: rare once a thread's arenas
    /// have grown to its traffic).
    #[cold]
    #[inline(never)]
    fn grow_into(&mut self, key: &[u8], value: &[u8]) {
        self.edit_counted(self.used, |e| e.fill(key, value));
    }

    /// Changes the entry in slot `i` with `f` and counts any change of its
    /// buffers' capacities in [`Data::held`](Self) and [`Data::largest`](Self).
    #[inline]
    fn edit_counted(&mut self, i: usize, f: impl FnOnce(&mut Entry)) {
        let Some(e) = self.arena.get_mut(i) else {
            return;
        };
        let before = e.key.capacity() + e.value.capacity();
        f(e);
        let caps = (e.key.capacity(), e.value.capacity());
        self.count_held(before, caps);
    }

    /// Counts an entry's buffers, which held `before` bytes and now hold `caps`
    /// (key, value).
    #[inline]
    fn count_held(&mut self, before: usize, caps: (usize, usize)) {
        self.held = self.held.saturating_sub(before) + caps.0 + caps.1;
        self.largest = self.largest.max(caps.0).max(caps.1);
    }

    /// Sets a single-valued variable (replacing an earlier value).
    pub fn set(&mut self, var: Var, value: &[u8]) {
        self.lists[var as usize].clear();
        self.push(var, b"", value);
    }

    /// Sets a single-valued variable to the bytes of `value` without copying
    /// them: the buffer is swapped into the arena slot, and `value` is left with
    /// the slot's earlier buffer, cleared.
    pub fn set_swapped(&mut self, var: Var, value: &mut Vec<u8>) {
        self.lists[var as usize].clear();
        let slot = self.push(var, b"", b"");
        self.edit_counted(slot as usize, |e| std::mem::swap(&mut e.value, value));
    }

    /// Sets a single-valued variable to the concatenation of `parts`, written
    /// into the arena slot's buffer (no string built first).
    pub fn set_concat(&mut self, var: Var, parts: &[&[u8]]) {
        self.lists[var as usize].clear();
        let slot = self.push(var, b"", b"");
        self.edit_counted(slot as usize, |e| {
            for p in parts {
                e.value.extend_from_slice(p);
            }
        });
    }

    /// Marks the request data as changed outside the arena (the XML document was
    /// parsed): results tied to the generation, or to `XML`'s version, are
    /// recomputed.
    pub fn touch(&mut self) {
        self.bump();
        self.versions[Var::Xml as usize] = self.generation;
    }

    /// Removes all values of a variable.
    pub fn unset(&mut self, var: Var) {
        self.bump();
        self.lists[var as usize].clear();
        self.versions[var as usize] = self.generation;
    }

    /// The generation of `var`'s list's last change (see the field).
    #[inline]
    pub fn version(&self, var: Var) -> u64 {
        self.versions[var as usize]
    }

    /// Bytes held by the entries' buffers (for the pool's size bound), as
    /// counted while they grew.
    pub fn capacity_bytes(&self) -> usize {
        debug_assert_eq!(self.held, self.measure(), "the arena's count is wrong");
        self.held
    }

    /// The entries' buffers' bytes, counted one by one (what `held` keeps).
    fn measure(&self) -> usize {
        self.arena
            .iter()
            .map(|e| e.key.capacity() + e.value.capacity())
            .sum()
    }

    /// Frees every entry buffer larger than `max` bytes (the others are kept for
    /// reuse) and returns the bytes still held: a pooled arena then holds what
    /// typical values need, not the largest value each slot ever held. The
    /// arena is walked only when some buffer grew past `max` since the last
    /// walk; otherwise the count kept as buffers grew is the answer.
    pub fn trim(&mut self, max: usize) -> usize {
        if self.largest <= max {
            return self.capacity_bytes();
        }
        let (mut held, mut largest) = (0, 0);
        for e in &mut self.arena {
            for b in [&mut e.key, &mut e.value] {
                let n = crate::buffers::shed(b, max);
                held += n;
                largest = largest.max(n);
            }
        }
        (self.held, self.largest) = (held, largest);
        held
    }

    /// The change counter (see the field).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The slot of the response body (scanned with the prefilter's long-value
    /// automaton), once set.
    pub fn response_body_slot(&self) -> Option<u32> {
        self.lists[crate::variable::Var::ResponseBody as usize]
            .first()
            .copied()
    }

    /// The slots of a variable's values.
    pub fn slots(&self, var: Var) -> &[u32] {
        &self.lists[var as usize]
    }

    /// The result-cache entry of a slot's value, looked up on first use; `None`
    /// when the table has none (the miss is then counted as processing cost).
    #[inline]
    pub fn cached(&mut self, slot: u32, cache: &ResultCache) -> Option<&ValueEntry> {
        let i = slot as usize;
        let state = self.cached.get_mut(i)?;
        Self::entry_of(state, &mut self.table, cache, (&self.arena, i))
    }

    /// The entry slot `i`'s state gives, the slot's value (in `arena`) looked
    /// up in the table first when it has not been.
    #[inline]
    fn entry_of<'t>(
        state: &mut Cached,
        table: &'t mut Option<Snapshot>,
        cache: &ResultCache,
        (arena, i): (&[Entry], usize),
    ) -> Option<&'t ValueEntry> {
        if let Cached::NotLooked = state {
            *state = Self::look_up(table, cache, &arena.get(i)?.value);
        }
        match *state {
            Cached::Hit(e) => table.as_ref()?.entry(e),
            _ => None,
        }
    }

    /// For each value of `var`'s list, in order: `pick` is given its key, and
    /// when it picks the value, `f` is given what it returned and the value's
    /// result-cache entry (as [`Data::cached`] gives it, looked up on first
    /// use). One pass over the list, each slot's state read in place.
    #[inline]
    pub fn each_cached<P>(
        &mut self,
        var: Var,
        cache: &ResultCache,
        mut pick: impl FnMut(&[u8]) -> Option<P>,
        mut f: impl FnMut(P, Option<&ValueEntry>),
    ) {
        let Some(slots) = self.lists.get(var as usize) else {
            return;
        };
        for &slot in slots {
            let i = slot as usize;
            let (Some(state), Some(e)) = (self.cached.get_mut(i), self.arena.get(i)) else {
                continue;
            };
            let Some(p) = pick(&e.key) else {
                continue;
            };
            f(
                p,
                Self::entry_of(state, &mut self.table, cache, (&self.arena, i)),
            );
        }
    }

    /// The result-cache entry of a slot whose value [`Data::cached`] has looked
    /// up (`None` when it has not, or the table has none), read without
    /// borrowing the data mutably: the caller may hold the slot's value.
    #[inline]
    pub fn cached_known(&self, slot: u32) -> Option<&ValueEntry> {
        match *self.cached.get(slot as usize)? {
            Cached::Hit(e) => self.table.as_ref()?.entry(e),
            _ => None,
        }
    }

    /// The first lookup of a slot's value (kept out of line: once per slot).
    #[inline(never)]
    fn look_up(table: &mut Option<Snapshot>, cache: &ResultCache, value: &[u8]) -> Cached {
        match table
            .get_or_insert_with(|| cache.snapshot())
            .position(value)
        {
            Some(e) => Cached::Hit(e),
            None => Cached::Miss(0),
        }
    }

    /// Adds processing cost to a slot whose value the cache missed.
    pub fn add_cost(&mut self, slot: u32, cost: u32) {
        if let Some(Cached::Miss(c)) = self.cached.get_mut(slot as usize) {
            *c = c.saturating_add(cost);
        }
    }

    /// The values the cache missed, with their processing costs.
    pub fn misses(&self) -> impl Iterator<Item = (&[u8], u32)> {
        self.cached.iter().enumerate().filter_map(|(i, c)| match c {
            Cached::Miss(cost) if *cost > 0 => Some((self.arena[i].value.as_slice(), *cost)),
            _ => None,
        })
    }

    /// The entry in a slot.
    pub fn entry(&self, slot: u32) -> &Entry {
        &self.arena[slot as usize]
    }

    /// The entry in a slot, when the slot holds one of this transaction's
    /// values (`None` past them).
    pub fn try_entry(&self, slot: u32) -> Option<&Entry> {
        self.arena.get(..self.used)?.get(slot as usize)
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

    /// Bytes held by the buffers (for the pool's size bound).
    pub fn capacity_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
            + self
                .entries
                .iter()
                .map(|e| e.key.capacity() + e.value.capacity())
                .sum::<usize>()
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

#[cfg(test)]
mod tests {
    use super::Data;
    use crate::value_cache::ResultCache;
    use crate::variable::Var;

    #[test]
    fn the_cache_table_is_taken_once_per_transaction_and_let_go_at_its_end() {
        let cache = std::sync::Arc::new(ResultCache::with_capacity(10, (&[], &[]), 8, true));
        let mut data = Data::default();
        let a = data.push(Var::ArgsGet, b"a", b"1");
        let b = data.push(Var::ArgsGet, b"b", b"1");
        assert!(data.table.is_none());
        assert!(data.cached(a, &cache).is_none());
        // The table is rebuilt with "1" in it while the transaction runs: its
        // values are still looked up in the table it took first.
        for _ in 0..64 {
            if cache.rebuilds() > 0 {
                break;
            }
            cache.report([(&b"1"[..], 5)].into_iter());
        }
        assert!(cache.rebuilds() == 1 && cache.lookup(b"1").is_some());
        assert!(data.cached(b, &cache).is_none());
        // A pooled arena does not keep an old table alive; the next transaction
        // takes the current one.
        data.clear();
        assert!(data.table.is_none());
        let c = data.push(Var::ArgsGet, b"c", b"1");
        assert!(data.cached(c, &cache).is_some());
    }

    #[test]
    fn each_cached_gives_the_picked_values_entries_in_list_order_and_looks_up_no_other() {
        let cache = std::sync::Arc::new(ResultCache::with_capacity(10, (&[], &[]), 8, true));
        for _ in 0..64 {
            if cache.rebuilds() > 0 {
                break;
            }
            cache.report([(&b"hot"[..], 5)].into_iter());
        }
        assert!(cache.lookup(b"hot").is_some());
        let mut data = Data::default();
        data.push(Var::ArgsGet, b"a", b"hot");
        data.push(Var::RequestHeaders, b"h", b"hot");
        let skipped = data.push(Var::ArgsGet, b"skip", b"hot");
        data.push(Var::ArgsGet, b"b", b"cold");
        data.push(Var::ArgsGet, b"c", b"hot");
        let mut seen = Vec::new();
        data.each_cached(
            Var::ArgsGet,
            &cache,
            |key| (key != b"skip").then(|| key.to_vec()),
            |key, e| seen.push((key, e.map(|e| e.value().to_vec()))),
        );
        let hot = Some(b"hot".to_vec());
        assert_eq!(
            seen,
            [
                (b"a".to_vec(), hot.clone()),
                (b"b".to_vec(), None),
                (b"c".to_vec(), hot),
            ]
        );
        // The value passed over was not looked up: its state is as it was.
        assert!(matches!(
            data.cached[skipped as usize],
            super::Cached::NotLooked
        ));
        assert!(data.cached(skipped, &cache).is_some());
    }

    #[test]
    fn the_held_count_follows_the_buffers_and_a_trim_frees_only_large_ones() {
        let mut d = Data::default();
        d.push(Var::ArgsGet, b"a", b"1");
        d.push(Var::ArgsGet, b"key", &[b'x'; 100]);
        d.set(Var::RequestUri, b"/p");
        d.set_concat(Var::RequestLine, &[b"GET ", b"/p", b" HTTP/1.1"]);
        let mut body = Vec::with_capacity(300);
        body.extend_from_slice(&[b'y'; 50]);
        d.set_swapped(Var::RequestBody, &mut body);
        assert_eq!(d.held, d.measure());
        // The next transaction's values go into the same buffers: those that
        // fit leave the count as it was, one that does not grows it.
        d.clear();
        d.push(Var::ArgsGet, b"b", b"2");
        d.push(Var::ArgsGet, b"k", &[b'z'; 5000]);
        d.set_concat(Var::RequestLine, &[b"POST ", &[b'/'; 3000]]);
        assert_eq!(d.held, d.measure());
        assert!(d.held >= 8000);
        // A trim frees the buffers past the bound and counts what is left.
        let held = d.trim(1000);
        assert_eq!((held, d.held), (d.measure(), d.measure()));
        assert!(d.arena.iter().all(|e| e.value.capacity() <= 1000));
        assert!(held < 1000);
        // With none past it, a trim keeps every buffer and gives the count.
        d.clear();
        d.push(Var::ArgsGet, b"c", &[b'w'; 900]);
        assert_eq!(d.trim(1000), d.measure());
        assert!(d.arena.iter().any(|e| e.value.capacity() >= 900));
    }

    #[test]
    fn no_two_transactions_share_a_generation_or_a_version() {
        let mut a = Data::default();
        let b = Data::default();
        assert_ne!(a.generation(), b.generation());
        assert_ne!(a.version(Var::ArgsGet), b.version(Var::ArgsGet));
        // A cleared arena (the next transaction's) starts a block of its own,
        // past every number the first transaction used.
        a.push(Var::ArgsGet, b"a", b"1");
        let first = (a.generation(), a.version(Var::ArgsGet));
        a.clear();
        assert!(a.generation() > first.0 && a.version(Var::ArgsGet) > first.1);
        assert_ne!(a.generation(), b.generation());
        // At the end of its block, an arena takes another: its numbers still
        // grow, and the block after its own (another's) is not used.
        let block = 1u64 << super::BLOCK_BITS;
        a.generation = (a.generation() | (block - 1)) - 1;
        a.push(Var::ArgsGet, b"b", b"2");
        let last = a.generation();
        a.push(Var::ArgsGet, b"c", b"3");
        assert!(a.generation() > last);
        assert_ne!(a.generation() / block, last / block);
        assert_eq!(a.generation() % block, 0);
        assert_eq!(a.version(Var::ArgsGet), a.generation());
        let c = Data::default();
        assert!(c.generation() > a.generation());
    }
}
