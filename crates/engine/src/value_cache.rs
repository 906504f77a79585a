//! The Rule Result Cache (the RuleCache paper's §IV-A, improved): results that
//! depend only on a value's bytes, kept across transactions, for the values that
//! repeat (cookies, arguments, user agents, ...).
//!
//! **One entry per value, all rules' results in it.** A [`ValueEntry`] holds, for
//! one exact byte string, two bits per rule (result known, matched). A transaction
//! looks a value up once (one hash of its bytes, one probe) and then answers every
//! rule from bit tests, with no lock, hash or comparison per rule. Results are
//! learned as they are computed (an atomic OR; every writer writes the same bits,
//! since they are pure functions of the bytes), including "no match" for every
//! rule the value's prefilter scan rules out.
//!
//! What is cached: operator results, `(rule, raw value)` -> whether the rule's
//! operator matches the value after the rule's transformations, for rules whose
//! operator is a pure function of its input (see `Rule::pure`); a match of a
//! rule with the transformed value it matched and a `capture` rule's groups (see
//! [`ValueEntry::set_match`]);
//! for `multiMatch` rules (key `rule | MULTI`) only "no intermediate value
//! matched". A value's entry also stands in for its scans in the prefilter's group
//! unions: the rules it may still match (see [`ValueEntry::maybe_into`] and
//! [`crate::classes`]).
//!
//! **Admission by weight, table rebuilt per window.** Which values have an entry is
//! decided by a table that is immutable between rebuilds and read without locks
//! (an [`ArcSwap`]). Transactions report the values they missed with a processing
//! cost (the rule evaluations and scans the value needed, a deterministic stand-in
//! for its processing time); one transaction in [`SAMPLE_EVERY`] per thread is
//! sampled, and a report never waits for the lock. When a window of transactions
//! has passed (16 at first, doubling to [`MAX_WINDOW`]; earlier while the table has
//! room and newly repeated values wait), a background thread ranks
//! values seen at least twice by weight = frequency x cost, together with the
//! current entries by their score (hits x cost in the window plus half their
//! previous score: a decaying weight), keeps the best [`CAPACITY`], and swaps the
//! new table in. Entries that stay keep what they learned. An entry leaves only
//! when the table is full and others weigh more: windows are short while the
//! table fills (tens of transactions), and a value repeated every few hundred
//! requests, missing from one window, is as worth keeping as before.
//!
//! Cached results equal computed ones (pure functions of the bytes, compared by
//! full bytes); `Options::verify` recomputes every hit and panics on a difference.
//! Memory is bounded: at most [`CAPACITY`] entries of at most [`MAX_VALUE_LEN`]
//! bytes holding at most [`TABLE_BYTES_MAX`] bytes of values longer than
//! [`SHORT_VALUE_LEN`], and at most [`CANDIDATES_MAX`] candidates per window
//! holding at most [`CANDIDATE_BYTES_MAX`] such bytes.
//!
//! **Long values.** A value up to [`MAX_VALUE_LEN`] bytes (a response body, a long
//! cookie header, a request body) is cached like a short one: one hash of its
//! bytes per transaction and, on a hit, one comparison, instead of its scans and
//! rules (a 10 KB page costs about 20 instructions per byte to scan). Its
//! processing cost counts its length (see [`scan_cost`]), so weight = frequency x
//! cost ranks it by what a hit saves; the byte budgets keep the table's memory
//! bounded whatever the values' lengths.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwap;
use hashbrown::HashTable;
use rustc_hash::FxHashMap;

/// Longest value cached (bytes).
pub const MAX_VALUE_LEN: usize = 64 * 1024;
/// Values up to this length are short: only the entry count bounds them.
pub const SHORT_VALUE_LEN: usize = 256;
/// Most bytes of long values (above [`SHORT_VALUE_LEN`]) in the table.
pub const TABLE_BYTES_MAX: usize = 8 << 20;
/// Most bytes of long values among a window's candidates.
pub const CANDIDATE_BYTES_MAX: usize = 2 << 20;
/// Most entries in the table.
pub const CAPACITY: usize = 8192;
/// Most candidate values remembered per window.
pub const CANDIDATES_MAX: usize = 16384;
/// Match records kept per value (see [`ValueEntry::set_match`]).
pub const CAPTURES_MAX: usize = 8;

/// A recorded match of one rule on the value: the groups a `capture` rule
/// captured, and the transformed value the rule matched (what MATCHED_VAR
/// holds), so a cached match needs no transformation.
#[derive(Debug)]
struct Matched {
    rule: u32,
    groups: Box<[(u8, Box<[u8]>)]>,
    transformed: Transformed,
}

/// The transformed value of a [`Matched`].
#[derive(Debug)]
enum Transformed {
    /// The value itself (the transformations left it unchanged).
    Same,
    Bytes(Box<[u8]>),
    /// Longer than [`TRANSFORMED_MAX`]: not kept.
    Unknown,
}

/// Longest transformed value a match record keeps.
const TRANSFORMED_MAX: usize = 4 * SHORT_VALUE_LEN;

/// The processing cost of scanning a value of `len` bytes (in the units of the
/// rule evaluations a miss also counts: see [`ResultCache::report`]): two for a
/// short value, plus one per [`SHORT_VALUE_LEN`] bytes.
pub fn scan_cost(len: usize) -> u32 {
    2 + u32::try_from(len / SHORT_VALUE_LEN).unwrap_or(u32::MAX - 2)
}

/// The bytes a value counts against the long-value budgets.
fn long_bytes(value: &[u8]) -> usize {
    if value.len() > SHORT_VALUE_LEN {
        value.len()
    } else {
        0
    }
}
/// One transaction in this many (per thread) reports its misses.
pub const SAMPLE_EVERY: u32 = 4;
/// Longest window (transactions).
pub const MAX_WINDOW: u64 = 4096;
const FIRST_WINDOW: u64 = 16;
/// Newly repeated values that end a window early while the table has room: one
/// is enough (a request that repeats with a few new values, replayed alone, would
/// otherwise wait out a whole window of up to [`MAX_WINDOW`] transactions
/// uncached); the spacing of early rebuilds bounds their cost.
const EARLY_REPEATED: usize = 1;

/// Marks a result id as a `multiMatch` rule's.
pub const MULTI: u32 = 1 << 31;

/// Everything cached for one value.
#[derive(Debug)]
pub struct ValueEntry {
    value: Box<[u8]>,
    /// Words per bit array.
    words: usize,
    /// Four bit arrays by rule index: result known, matched, `multiMatch` rule
    /// known not to match, and the maybe set (see [`ValueEntry::maybe_into`]),
    /// which most transactions read (once per cached value): one run of words.
    bits: Box<[AtomicU64]>,
    /// The program's rule kinds, which the maybe set follows.
    kinds: Arc<RuleKinds>,
    /// The records of rules that matched it (see [`ValueEntry::set_match`]),
    /// allocated on first use; each slot is written once, so reads take no lock.
    captures: OnceLock<Box<[OnceLock<Matched>]>>,
    /// Its weight at the last rebuild (written by the rebuild alone).
    score: AtomicU64,
    /// Its processing cost when it was admitted.
    cost: u32,
}

/// Which rules' maybe bits follow which results (bit sets by rule index).
#[derive(Debug, Default)]
struct RuleKinds {
    /// The `multiMatch` rules: their maybe bit follows their own "no match" (the
    /// third array), the other rules' their result.
    multi: Box<[u64]>,
    /// The negated rules: their maybe bit leaves when their operator matched
    /// (the rule then does not), the other rules' when it did not.
    negated: Box<[u64]>,
}

/// The arrays of [`ValueEntry::bits`], the maybe set first:
/// [`ValueEntry::maybe_into`] reads it from the start of the run, with no
/// offset to compute per value.
const MAYBE: usize = 0;
const KNOWN: usize = 1;
const MATCHED: usize = 2;
const CLEAR: usize = 3;

impl ValueEntry {
    fn new(
        value: Box<[u8]>,
        rules: usize,
        kinds: Arc<RuleKinds>,
        cost: u32,
        score: u64,
    ) -> ValueEntry {
        let words = rules.div_ceil(64).max(1);
        ValueEntry {
            value,
            words,
            bits: (0..4 * words)
                .map(|i| AtomicU64::new(if i / words == MAYBE { u64::MAX } else { 0 }))
                .collect(),
            kinds,
            captures: OnceLock::new(),
            score: AtomicU64::new(score),
            cost,
        }
    }

    fn bit(&self, array: usize, index: u32) -> Option<(&AtomicU64, u64)> {
        let i = index as usize;
        let w = self
            .bits
            .get(array * self.words + i / 64)
            .filter(|_| i / 64 < self.words)?;
        Some((w, 1 << (i % 64)))
    }

    /// Whether rule `index` is a `multiMatch` rule.
    fn is_multi(&self, index: u32) -> bool {
        crate::prefilter::has(&self.kinds.multi, index)
    }

    /// Whether rule `index` is negated.
    fn is_negated(&self, index: u32) -> bool {
        crate::prefilter::has(&self.kinds.negated, index)
    }

    /// Takes rule `index` out of the maybe set (its "no match" is known).
    fn leave_maybe(&self, index: u32) {
        if let Some((w, m)) = self.bit(MAYBE, index) {
            w.fetch_and(!m, Ordering::Relaxed);
        }
    }

    /// The cached result of rule `id` (a rule index, or `index | MULTI`).
    pub fn result(&self, id: u32) -> Option<bool> {
        if id & MULTI != 0 {
            let (w, m) = self.bit(CLEAR, id & !MULTI)?;
            return (w.load(Ordering::Relaxed) & m != 0).then_some(false);
        }
        let (known, m) = self.bit(KNOWN, id)?;
        if known.load(Ordering::Acquire) & m == 0 {
            return None;
        }
        let (matched, m) = self.bit(MATCHED, id)?;
        Some(matched.load(Ordering::Relaxed) & m != 0)
    }

    /// ORs into `out` (words by rule index) the rules of `mask` this value may
    /// still match: those whose result is unknown or a match, and the
    /// `multiMatch` rules not known to leave every intermediate value unmatched.
    /// A rule outside the set is known not to match the value (or is not in
    /// `mask`, given as (word, bits) pairs of its words with a bit: see
    /// [`crate::classes::runs`]). The set is kept as results are learned (one
    /// array: this runs once per cached value and transaction, and reads one word
    /// per word of `mask` with rules).
    pub fn maybe_into(&self, out: &mut [u64], mask: &[(u32, u64)]) {
        let maybe = self
            .bits
            .get(MAYBE * self.words..(MAYBE + 1) * self.words)
            .unwrap_or_default();
        for &(w, r) in mask {
            if let (Some(o), Some(m)) = (out.get_mut(w as usize), maybe.get(w as usize)) {
                *o |= m.load(Ordering::Relaxed) & r;
            }
        }
    }

    /// Records the result of rule `id` (for `MULTI` ids, only "no match" is kept).
    /// Results are pure functions of the value: every writer of a rule writes
    /// the same one. A `multiMatch` rule's results come with `MULTI` ids, the
    /// other rules' without; the maybe set follows each rule's own kind.
    pub fn set_result(&self, id: u32, hit: bool) {
        if id & MULTI != 0 {
            let index = id & !MULTI;
            if let (false, Some((w, m))) = (hit, self.bit(CLEAR, index)) {
                w.fetch_or(m, Ordering::Relaxed);
                if self.is_multi(index) && !self.is_negated(index) {
                    self.leave_maybe(index);
                }
            }
            return;
        }
        if hit {
            if let Some((w, m)) = self.bit(MATCHED, id) {
                w.fetch_or(m, Ordering::Relaxed);
            }
        }
        // The rule cannot match the value: its operator missed it, or, negated,
        // matched it.
        if hit == self.is_negated(id) && !self.is_multi(id) {
            self.leave_maybe(id);
        }
        if let Some((w, m)) = self.bit(KNOWN, id) {
            w.fetch_or(m, Ordering::Release);
        }
    }

    /// The record of rule `id`'s match, when one was kept.
    fn record(&self, id: u32) -> Option<&Matched> {
        let slots = self.captures.get()?;
        for slot in slots.iter() {
            match slot.get() {
                Some(m) if m.rule == id => return Some(m),
                Some(_) => {}
                None => return None,
            }
        }
        None
    }

    /// The groups rule `id` captured on this value (when its match was cached
    /// with them): fills `out` and returns true.
    pub fn captures_into(&self, id: u32, out: &mut crate::operator::Captures) -> bool {
        let Some(m) = self.record(id) else {
            return false;
        };
        out.clear();
        for (i, bytes) in m.groups.iter() {
            out.set(usize::from(*i), bytes);
        }
        true
    }

    /// The transformed value rule `id` matched (what MATCHED_VAR holds), when its
    /// match was recorded with it.
    pub fn matched_value(&self, id: u32) -> Option<&[u8]> {
        match &self.record(id)?.transformed {
            Transformed::Same => Some(&self.value),
            Transformed::Bytes(b) => Some(b),
            Transformed::Unknown => None,
        }
    }

    /// As [`ValueEntry::matched_value`], telling a match on the value as it is
    /// (its transformations left it unchanged: `Some(None)`, MATCHED_VAR is the
    /// request's own value) from one on transformed bytes (`Some(Some(..))`).
    pub fn matched_form(&self, id: u32) -> Option<Option<&[u8]>> {
        match &self.record(id)?.transformed {
            Transformed::Same => Some(None),
            Transformed::Bytes(b) => Some(Some(b)),
            Transformed::Unknown => None,
        }
    }

    /// Records a match of rule `id` (not negated) on the value: the groups of a
    /// `capture` rule (`captures`), and the transformed value it matched, then
    /// the result (a reader that sees the match finds the record). Past
    /// [`CAPTURES_MAX`] records, a `capture` rule's match is not recorded (its
    /// result stays unknown: the groups are needed), another rule's result is.
    pub fn set_match(
        &self,
        id: u32,
        captures: Option<&crate::operator::Captures>,
        transformed: &[u8],
    ) {
        let slots = self.captures.get_or_init(|| {
            (0..CAPTURES_MAX)
                .map(|_| OnceLock::new())
                .collect::<Vec<_>>()
                .into_boxed_slice()
        });
        let groups: Box<[(u8, Box<[u8]>)]> = captures.map_or_else(Box::default, |c| {
            (0..c.len().min(10))
                .filter_map(|i| c.get(i).map(|b| (i as u8, Box::from(b))))
                .collect()
        });
        let transformed = if transformed == &self.value[..] {
            Transformed::Same
        } else if transformed.len() <= TRANSFORMED_MAX {
            Transformed::Bytes(transformed.into())
        } else {
            Transformed::Unknown
        };
        let mut value = Matched {
            rule: id,
            groups,
            transformed,
        };
        for slot in slots.iter() {
            if slot.get().is_none() {
                match slot.set(value) {
                    Ok(()) => {
                        self.set_result(id, true);
                        return;
                    }
                    // Another thread filled the slot first.
                    Err(v) => value = v,
                }
            }
            if slot.get().is_some_and(|m| m.rule == id) {
                self.set_result(id, true);
                return;
            }
        }
        if captures.is_none() {
            self.set_result(id, true);
        }
    }

    /// The value.
    pub fn value(&self) -> &[u8] {
        &self.value
    }
}

/// The immutable lookup table of one window: the entries, found by their bytes.
///
/// A lookup reads compact arrays only (a transaction looks up each of its values,
/// and most are short): the index's buckets say where a value's bytes are, in
/// `short`, the table's copy of the short values, or, for a long value, in its
/// entry, so neither a miss nor a hit on a short value reaches the entry itself
/// (which a rebuild that keeps it shares with the next table).
#[derive(Debug, Default)]
struct Table {
    /// The entries' values, by their hash.
    index: HashTable<Slot>,
    /// The short values' bytes, one after another.
    short: Vec<u8>,
    /// Per position: transactions that found it in this table (its window).
    /// The rebuild reads them once; a hit through this table after that (a
    /// transaction still holding its snapshot) is not counted in the next
    /// window, which only lowers the entry's weight a little.
    hits: Box<[AtomicU32]>,
    /// The entries by position (a transaction keeps the position instead of a
    /// counted reference: no reference count to raise and drop per value, the
    /// snapshot it holds keeps the entries alive).
    entries: Vec<Arc<ValueEntry>>,
}

/// A bucket of [`Table::index`]: an entry's position and where its value's
/// bytes are.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// In [`Table::short`] from here ([`LONG`]: in the entry).
    start: u32,
    len: u32,
    position: u32,
}

/// [`Slot::start`] of a long value.
const LONG: u32 = u32::MAX;

/// The hash a table files a value under.
fn hash_of(value: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(value);
    h.finish()
}

impl Table {
    /// A table of `entries`, in that order.
    fn new(entries: Vec<Arc<ValueEntry>>) -> Table {
        let mut index = HashTable::with_capacity(entries.len());
        let mut hashes = Vec::with_capacity(entries.len());
        let mut short = Vec::new();
        for (position, e) in entries.iter().enumerate() {
            let value = &e.value[..];
            let hash = hash_of(value);
            let start = if value.len() <= SHORT_VALUE_LEN {
                let start = u32::try_from(short.len()).unwrap_or(LONG);
                short.extend_from_slice(value);
                start
            } else {
                LONG
            };
            let slot = Slot {
                start,
                len: u32::try_from(value.len()).unwrap_or(u32::MAX),
                position: u32::try_from(position).unwrap_or(u32::MAX),
            };
            hashes.push(hash);
            // (Room for every entry was reserved: the index does not grow.)
            index.insert_unique(hash, slot, |s: &Slot| {
                hashes.get(s.position as usize).copied().unwrap_or(0)
            });
        }
        Table {
            index,
            short,
            hits: entries.iter().map(|_| AtomicU32::new(0)).collect(),
            entries,
        }
    }

    /// The bytes of a slot's value.
    #[inline]
    fn bytes(&self, s: &Slot) -> Option<&[u8]> {
        match s.start {
            LONG => self.entries.get(s.position as usize).map(|e| &e.value[..]),
            start => self
                .short
                .get(start as usize..(start as usize).checked_add(s.len as usize)?),
        }
    }

    /// The position of `value`'s entry (not counted as a hit).
    #[inline(always)]
    fn position_of(&self, value: &[u8]) -> Option<u32> {
        if value.len() > MAX_VALUE_LEN {
            return None;
        }
        self.index
            .find(hash_of(value), |s| self.bytes(s) == Some(value))
            .map(|s| s.position)
    }

    /// The position of `value`'s entry, counted as a hit.
    #[inline(always)]
    fn find(&self, value: &[u8]) -> Option<u32> {
        let p = self.position_of(value)?;
        // A plain increment, not a locked add (an atomic read-modify-write, per
        // value of every transaction, on a line every worker shares): two threads
        // that hit the entry at once may count one hit, which only lowers its
        // weight a little (the rebuild's `swap` may likewise lose one).
        if let Some(hits) = self.hits.get(p as usize) {
            hits.store(
                hits.load(Ordering::Relaxed).saturating_add(1),
                Ordering::Relaxed,
            );
        }
        Some(p)
    }

    fn lookup(&self, value: &[u8]) -> Option<Arc<ValueEntry>> {
        let p = self.find(value)?;
        self.entries.get(p as usize).cloned()
    }

    /// Whether the table has an entry for `value` (not counted as a hit).
    fn contains(&self, value: &[u8]) -> bool {
        self.position_of(value).is_some()
    }

    /// The hits counted on `value`'s entry, set back to none (tests).
    #[cfg(test)]
    fn take_hits(&self, value: &[u8]) -> u32 {
        self.position_of(value)
            .and_then(|p| self.hits.get(p as usize))
            .map_or(0, |h| h.swap(0, Ordering::Relaxed))
    }
}

/// A table of the cache as it was when taken (see [`ResultCache::snapshot`]).
#[derive(Debug, Clone)]
pub struct Snapshot(Arc<Table>);

impl Snapshot {
    /// The entry of `value`, when the table has one.
    pub fn lookup(&self, value: &[u8]) -> Option<Arc<ValueEntry>> {
        self.0.lookup(value)
    }

    /// The position of `value`'s entry, when the table has one (counted as a
    /// hit, as [`Snapshot::lookup`]); [`Snapshot::entry`] gives the entry.
    pub fn position(&self, value: &[u8]) -> Option<u32> {
        self.0.find(value)
    }

    /// The entry at a position [`Snapshot::position`] gave.
    #[inline]
    pub fn entry(&self, position: u32) -> Option<&ValueEntry> {
        self.0.entries.get(position as usize).map(|e| &**e)
    }
}

/// Values missed in the current window: bytes -> (times reported, largest cost).
#[derive(Debug)]
struct Window {
    transactions: u64,
    length: u64,
    candidates: FxHashMap<Box<[u8]>, (u32, u32)>,
    /// Bytes of the long candidates (see [`CANDIDATE_BYTES_MAX`]).
    long_bytes: usize,
    /// Candidates seen twice in this window (admissible).
    repeated: usize,
}

/// The cache of one program.
#[derive(Debug)]
pub struct ResultCache {
    rules: usize,
    /// The program's `multiMatch` and negated rules, for the entries' maybe sets.
    kinds: Arc<RuleKinds>,
    capacity: usize,
    table: ArcSwap<Table>,
    window: Mutex<Window>,
    rebuilding: AtomicBool,
    rebuilds: AtomicU64,
    /// Rebuild on the reporting thread instead of a background one (tests).
    synchronous: AtomicBool,
}

thread_local! {
    static SAMPLE: Cell<u32> = const { Cell::new(0) };
}

/// Seed threads' sampling with [`FIXED_SEED`] instead of an address (set by
/// [`ResultCache::set_synchronous`]): which transactions report their misses,
/// and so the table's contents, then repeat from run to run.
static SEED_FIXED: AtomicBool = AtomicBool::new(false);
/// The sampling's seed when [`SEED_FIXED`] is set (any odd number).
const FIXED_SEED: u32 = 0x2545_f491;

impl ResultCache {
    /// An empty cache for a program of `rules` rules, of which those of `multi`
    /// are `multiMatch` rules and those of `negated` negated ones (bit sets by
    /// rule index; each value's maybe set follows each rule's kind).
    pub fn new(rules: usize, multi: &[u64], negated: &[u64]) -> ResultCache {
        ResultCache::with_capacity(rules, (multi, negated), CAPACITY, false)
    }

    /// An empty cache of `capacity` entries (the rules' kinds as for
    /// [`ResultCache::new`]); `synchronous` rebuilds on the reporting thread
    /// (for deterministic tests).
    pub fn with_capacity(
        rules: usize,
        (multi, negated): (&[u64], &[u64]),
        capacity: usize,
        synchronous: bool,
    ) -> ResultCache {
        ResultCache {
            rules,
            kinds: Arc::new(RuleKinds {
                multi: multi.into(),
                negated: negated.into(),
            }),
            capacity,
            table: ArcSwap::from_pointee(Table::default()),
            window: Mutex::new(Window {
                transactions: 0,
                length: FIRST_WINDOW,
                candidates: FxHashMap::default(),
                long_bytes: 0,
                repeated: 0,
            }),
            rebuilding: AtomicBool::new(false),
            rebuilds: AtomicU64::new(0),
            synchronous: AtomicBool::new(synchronous),
        }
    }

    /// Rebuilds on the reporting thread from now on (`true`) or on a thread of
    /// their own (`false`, the default): synchronous rebuilds make the table's
    /// contents depend on the requests alone, for reproducible measurements. So
    /// `true` also seeds the sampling of threads that have not sampled yet with a
    /// fixed value (in the whole process) instead of their own address, which
    /// changes from run to run.
    pub fn set_synchronous(&self, on: bool) {
        self.synchronous.store(on, Ordering::Relaxed);
        if on {
            SEED_FIXED.store(true, Ordering::Relaxed);
        }
    }

    /// The entry of `value`, when the table has one.
    pub fn lookup(&self, value: &[u8]) -> Option<Arc<ValueEntry>> {
        Table::lookup(&self.table.load(), value)
    }

    /// The table as it is now, for a transaction to look all its values up in
    /// (one load of the swapped pointer per transaction instead of one per
    /// value). Entries are pure results, so a table swapped in meanwhile would
    /// answer the same; a snapshot only keeps the old table alive while held.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot(self.table.load_full())
    }

    /// Whether this thread's transaction should report its misses: one in
    /// [`SAMPLE_EVERY`], at random (a counter would alias with periodic traffic
    /// and never sample some requests).
    pub fn sampled() -> bool {
        SAMPLE
            .try_with(|c| {
                // xorshift32, seeded per thread from the cell's address.
                let mut x = c.get();
                if x == 0 {
                    x = if SEED_FIXED.load(Ordering::Relaxed) {
                        FIXED_SEED
                    } else {
                        (c as *const Cell<u32> as usize as u32) | 1
                    };
                }
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                c.set(x);
                x % SAMPLE_EVERY == 0
            })
            .unwrap_or(false)
    }

    /// Reports the end of a transaction with the values it missed and their
    /// processing costs (a sampled transaction; see [`ResultCache::sampled`]).
    /// Never waits: a busy window skips the report.
    pub fn report<'a>(self: &Arc<Self>, misses: impl Iterator<Item = (&'a [u8], u32)>) {
        let Ok(mut w) = self.window.try_lock() else {
            return;
        };
        w.transactions += u64::from(SAMPLE_EVERY);
        for (value, cost) in misses {
            if value.len() > MAX_VALUE_LEN || cost == 0 {
                continue;
            }
            if let Some(c) = w.candidates.get_mut(value) {
                c.0 = c.0.saturating_add(1);
                c.1 = c.1.max(cost);
                if c.0 == 2 {
                    w.repeated += 1;
                }
            } else if w.candidates.len() < CANDIDATES_MAX
                && w.long_bytes + long_bytes(value) <= CANDIDATE_BYTES_MAX
            {
                w.long_bytes += long_bytes(value);
                w.candidates.insert(value.into(), (1, cost));
            }
        }
        // The window ends after its length, or early while the table has room and
        // enough newly repeated values wait (new values need not wait a whole long
        // window); early rebuilds are at least a quarter of the table's size apart,
        // so their cost per transaction stays constant.
        let len = self.len() as u64;
        let early = w.repeated >= EARLY_REPEATED
            && len < self.capacity as u64
            && w.transactions >= (len / 4).max(FIRST_WINDOW);
        if !(early || w.transactions >= w.length) || self.rebuilding.swap(true, Ordering::AcqRel) {
            return;
        }
        let candidates = std::mem::take(&mut w.candidates);
        w.long_bytes = 0;
        if w.transactions >= w.length {
            w.length = (w.length * 2).min(MAX_WINDOW);
        }
        w.transactions = 0;
        w.repeated = 0;
        drop(w);
        if self.synchronous.load(Ordering::Relaxed) {
            self.rebuild(candidates);
            return;
        }
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("palisade-cache".into())
            .spawn(move || me.rebuild(candidates));
        if spawned.is_err() {
            self.rebuilding.store(false, Ordering::Release);
        }
    }

    /// Builds and publishes the next table: the current entries by their decayed
    /// scores (hits x cost plus half the previous score) and the candidates seen
    /// at least twice by reports x cost, best first. Every current entry is a
    /// pick: only a full table drops the lightest. A long value that would take
    /// the table past [`TABLE_BYTES_MAX`] is left out (the lighter ones after it
    /// may still fit).
    fn rebuild(&self, candidates: FxHashMap<Box<[u8]>, (u32, u32)>) {
        let old = self.table.load_full();
        enum Pick {
            Keep(Arc<ValueEntry>),
            New(Box<[u8]>, u32),
        }
        let mut picks: Vec<(u64, Pick)> = Vec::new();
        for (e, hits) in old.entries.iter().zip(old.hits.iter()) {
            let hits = hits.swap(0, Ordering::Relaxed);
            let score = e.score.load(Ordering::Relaxed) / 2 + u64::from(hits) * u64::from(e.cost);
            e.score.store(score, Ordering::Relaxed);
            picks.push((score, Pick::Keep(Arc::clone(e))));
        }
        for (value, (count, cost)) in candidates {
            if count >= 2 && !old.contains(&value[..]) {
                // Reports are sampled: a report stands for SAMPLE_EVERY transactions.
                let weight = u64::from(count) * u64::from(SAMPLE_EVERY) * u64::from(cost);
                picks.push((weight, Pick::New(value, cost)));
            }
        }
        picks.sort_by_key(|p| std::cmp::Reverse(p.0));
        let mut bytes = 0;
        picks.retain(|(_, p)| {
            let value = match p {
                Pick::Keep(e) => &e.value,
                Pick::New(v, _) => v,
            };
            let b = long_bytes(value);
            let fits = bytes + b <= TABLE_BYTES_MAX;
            if fits {
                bytes += b;
            }
            fits
        });
        picks.truncate(self.capacity);
        let mut entries = Vec::with_capacity(picks.len());
        for (weight, p) in picks {
            entries.push(match p {
                Pick::Keep(e) => e,
                Pick::New(v, cost) => Arc::new(ValueEntry::new(
                    v,
                    self.rules,
                    Arc::clone(&self.kinds),
                    cost,
                    weight,
                )),
            });
        }
        self.table.store(Arc::new(Table::new(entries)));
        self.rebuilds.fetch_add(1, Ordering::Relaxed);
        self.rebuilding.store(false, Ordering::Release);
    }

    /// Whether rule `index` is one of the program's `multiMatch` rules, as the
    /// entries' maybe sets take it.
    pub fn is_multi_rule(&self, index: u32) -> bool {
        crate::prefilter::has(&self.kinds.multi, index)
    }

    /// Whether rule `index` is one of the program's negated rules, as the
    /// entries' maybe sets take it.
    pub fn is_negated_rule(&self, index: u32) -> bool {
        crate::prefilter::has(&self.kinds.negated, index)
    }

    /// Entries in the table.
    pub fn len(&self) -> usize {
        self.table.load().entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tables published so far.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(capacity: usize) -> Arc<ResultCache> {
        Arc::new(ResultCache::with_capacity(100, (&[], &[]), capacity, true))
    }

    /// Reports one window of transactions, the first `repeats` missing `values`.
    fn window(c: &Arc<ResultCache>, values: &[(&[u8], u32)], repeats: u64) {
        let n = c.window.lock().map(|w| w.length).unwrap_or(0);
        for i in 0..n.div_ceil(u64::from(SAMPLE_EVERY)) {
            let v = if i < repeats { values } else { &[] };
            c.report(v.iter().copied());
        }
    }

    #[test]
    fn the_maybe_set_holds_the_rules_not_known_to_leave_the_value_unmatched() {
        // Rules 3, 70 and 71 (two words); 71 is a multiMatch rule.
        let mut multi = [0u64; 2];
        multi[1] |= 1 << 7;
        let e = ValueEntry::new(
            b"a union b"[..].into(),
            100,
            Arc::new(RuleKinds {
                multi: multi.into(),
                negated: Box::default(),
            }),
            1,
            0,
        );
        let all = vec![u64::MAX; 2];
        let maybe = |e: &ValueEntry| {
            let mut out = vec![0u64; 2];
            e.maybe_into(&mut out, &crate::classes::runs(&all));
            [3usize, 70, 71].map(|i| out[i / 64] & (1 << (i % 64)) != 0)
        };
        // Nothing known: every rule may match.
        assert_eq!(maybe(&e), [true, true, true]);
        e.set_result(3, false);
        e.set_result(70, true);
        // A known miss leaves the set, a known match stays in it.
        assert_eq!(maybe(&e), [false, true, true]);
        // multiMatch rules leave it by their own "no match" only.
        e.set_result(71, false);
        assert_eq!(maybe(&e), [false, true, true]);
        e.set_result(71 | MULTI, false);
        assert_eq!(maybe(&e), [false, true, false]);
        // ORed into what is there.
        let mut out = vec![u64::MAX; 2];
        e.maybe_into(&mut out, &crate::classes::runs(&all));
        assert_eq!(out, vec![u64::MAX; 2]);
        // Limited to the mask's rules: 70 is in the set, not in the mask.
        let mut mask = vec![0u64; 2];
        mask[0] |= 1 << 3;
        mask[1] |= 1 << 7;
        let mut out = vec![0u64; 2];
        e.maybe_into(&mut out, &crate::classes::runs(&mask));
        assert_eq!(out, vec![0u64; 2]);
        mask[1] |= 1 << 6;
        e.maybe_into(&mut out, &crate::classes::runs(&mask));
        assert_eq!(out, vec![0, 1 << 6]);
    }

    proptest::proptest! {
        /// The maybe set kept as results are learned equals the one the three
        /// result arrays define (unknown or matched for the other rules, unknown
        /// or missed for negated ones, not known "no match" for `multiMatch`
        /// ones), whatever the order the
        /// results arrive in; each rule's results agree (they are pure).
        #[test]
        fn the_kept_maybe_set_equals_the_one_the_results_define(
            multi_bits in proptest::collection::vec(proptest::bool::ANY, 130),
            negated_bits in proptest::collection::vec(proptest::bool::ANY, 130),
            truth in proptest::collection::vec(proptest::bool::ANY, 130),
            ops in proptest::collection::vec((0u32..130, proptest::bool::ANY), 0..300),
            mask_bits in proptest::collection::vec(proptest::bool::ANY, 130),
        ) {
            let words = 3;
            let to_words = |bits: &[bool]| {
                let mut w = vec![0u64; words];
                for (i, &b) in bits.iter().enumerate() {
                    if b {
                        w[i / 64] |= 1 << (i % 64);
                    }
                }
                w
            };
            let multi = to_words(&multi_bits);
            let negated = to_words(&negated_bits);
            let mask = to_words(&mask_bits);
            let kinds = Arc::new(RuleKinds { multi: multi.into(), negated: negated.into() });
            let e = ValueEntry::new(b"v"[..].into(), 130, kinds, 1, 0);
            for (rule, as_multi) in ops {
                // A multiMatch rule's results come with MULTI ids, the others'
                // without (what the engine records), plus stray ids of the
                // other kind, which the maybe set must not follow.
                let id = if as_multi { rule | MULTI } else { rule };
                e.set_result(id, truth[rule as usize]);
                let mut kept = vec![0u64; words];
                e.maybe_into(&mut kept, &crate::classes::runs(&mask));
                let mut defined = vec![0u64; words];
                for i in 0..130u32 {
                    let (is_multi, is_negated) = (multi_bits[i as usize], negated_bits[i as usize]);
                    // The rule may match: a negated rule unless its operator
                    // matched (a negated multiMatch rule always: not grouped).
                    let maybe = match (is_multi, is_negated) {
                        (true, false) => e.result(i | MULTI).is_none(),
                        (true, true) => true,
                        (false, false) => e.result(i) != Some(false),
                        (false, true) => e.result(i) != Some(true),
                    };
                    if maybe && mask_bits[i as usize] {
                        defined[i as usize / 64] |= 1 << (i % 64);
                    }
                }
                proptest::prop_assert_eq!(kept, defined);
            }
        }
    }

    #[test]
    fn matches_of_capture_rules_are_cached_with_their_groups() {
        let e = ValueEntry::new(b"abc"[..].into(), 100, Arc::default(), 1, 0);
        let mut groups = crate::operator::Captures::default();
        let mut out = crate::operator::Captures::default();
        assert!(!e.captures_into(9, &mut out));
        groups.set(0, b"abc");
        groups.set(2, b"c");
        e.set_match(9, Some(&groups), b"abc");
        assert_eq!(e.result(9), Some(true));
        assert!(e.captures_into(9, &mut out));
        assert_eq!(
            (out.get(0), out.get(1), out.get(2), out.len()),
            (Some(&b"abc"[..]), None, Some(&b"c"[..]), 3)
        );
        // Recording the same rule again keeps one slot; past CAPTURES_MAX rules
        // nothing is recorded (and the result stays unknown).
        e.set_match(9, Some(&groups), b"abc");
        for id in 10..10 + CAPTURES_MAX as u32 {
            e.set_match(id, Some(&groups), b"abc");
        }
        let last = 10 + CAPTURES_MAX as u32 - 1;
        assert_eq!(e.result(last - 1), Some(true));
        assert_eq!(e.result(last), None);
        assert!(!e.captures_into(last, &mut out));
        // A rule without groups still has its result kept, without a record.
        e.set_match(40, None, b"ABC");
        assert_eq!((e.result(40), e.matched_value(40)), (Some(true), None));
    }

    #[test]
    fn matches_keep_the_transformed_value() {
        let e = ValueEntry::new(b"abc"[..].into(), 100, Arc::default(), 1, 0);
        assert_eq!(e.matched_value(3), None);
        e.set_match(3, None, b"abc");
        e.set_match(4, None, b"ABC");
        let long = vec![b'x'; TRANSFORMED_MAX + 1];
        e.set_match(5, None, &long);
        assert_eq!(
            (e.matched_value(3), e.matched_value(4), e.matched_value(5)),
            (Some(&b"abc"[..]), Some(&b"ABC"[..]), None)
        );
        assert_eq!(
            (e.result(3), e.result(4), e.result(5)),
            (Some(true), Some(true), Some(true))
        );
        // No groups were recorded for them.
        let mut out = crate::operator::Captures::default();
        out.set(0, b"kept");
        assert!(e.captures_into(4, &mut out));
        assert_eq!(out.len(), 0);
    }

    #[test]
    fn entries_keep_results_by_exact_bytes() {
        let e = ValueEntry::new(b"abc"[..].into(), 100, Arc::default(), 1, 0);
        assert_eq!(e.result(3), None);
        e.set_result(3, true);
        e.set_result(4, false);
        assert_eq!(
            (e.result(3), e.result(4), e.result(5)),
            (Some(true), Some(false), None)
        );
        // multiMatch ids keep only "no match".
        e.set_result(7 | MULTI, true);
        assert_eq!(e.result(7 | MULTI), None);
        e.set_result(7 | MULTI, false);
        assert_eq!(e.result(7 | MULTI), Some(false));
        assert_eq!(e.result(7), None);
        // Out of range ids are never answered.
        e.set_result(1000, true);
        assert_eq!(e.result(1000), None);
    }

    #[test]
    fn admits_repeated_values_by_weight_within_capacity() {
        let c = cache(2);
        assert!(c.lookup(b"cookie=1").is_none());
        // Seen once per window: not admitted.
        window(&c, &[(b"once", 100)], 1);
        assert_eq!(c.rebuilds(), 1);
        assert!(c.is_empty());
        // Three repeated values, capacity two: the heaviest two win.
        window(
            &c,
            &[
                (b"light", 1),
                (b"heavy", 50),
                (b"medium", 10),
                (&[b'x'; MAX_VALUE_LEN + 1], 99),
            ],
            2,
        );
        assert_eq!(c.rebuilds(), 2);
        assert_eq!(c.len(), 2);
        let heavy = c
            .lookup(b"heavy")
            .unwrap_or_else(|| panic!("heavy admitted"));
        assert!(c.lookup(b"medium").is_some());
        assert!(c.lookup(b"light").is_none());
        // What an entry learned survives the next rebuild while it is used.
        heavy.set_result(5, true);
        window(&c, &[(b"light", 1)], 2);
        assert_eq!(c.lookup(b"heavy").and_then(|e| e.result(5)), Some(true));
    }

    #[test]
    fn newly_repeated_values_end_a_long_window_early_while_there_is_room() {
        let c = cache(100);
        // Windows without a repeated value end at their length, which doubles:
        // 16, then 32 transactions (four transactions per sampled report).
        for _ in 0..4 {
            c.report(std::iter::empty());
        }
        assert_eq!(c.rebuilds(), 1);
        for _ in 0..8 {
            c.report(std::iter::empty());
        }
        assert_eq!(c.rebuilds(), 2);
        // The window is now 64 transactions long; one value repeated within its
        // first 16 is admitted then, without waiting for the rest of it.
        for _ in 0..2 {
            c.report([(&b"single"[..], 3)].into_iter());
        }
        assert_eq!(c.rebuilds(), 2);
        assert!(c.lookup(b"single").is_none());
        for _ in 0..2 {
            c.report(std::iter::empty());
        }
        assert_eq!(c.rebuilds(), 3);
        assert!(c.lookup(b"single").is_some());
        // Early rebuilds are spaced: ten values repeated right after wait for
        // the next 16 transactions.
        let values: Vec<Vec<u8>> = (0..10).map(|i| format!("v{i}").into_bytes()).collect();
        let batch: Vec<(&[u8], u32)> = values.iter().map(|v| (v.as_slice(), 3)).collect();
        for _ in 0..2 {
            c.report(batch.iter().copied());
        }
        c.report(std::iter::empty());
        assert_eq!(c.rebuilds(), 3);
        c.report(std::iter::empty());
        assert_eq!(c.rebuilds(), 4);
        assert!(c.lookup(b"v7").is_some());
    }

    /// `n` distinct values of the longest cached length, of `fill` bytes after
    /// their index.
    fn longest_values(n: usize, fill: u8) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut v = vec![fill; MAX_VALUE_LEN];
                v[..8].copy_from_slice(&(i as u64).to_le_bytes());
                v
            })
            .collect()
    }

    #[test]
    fn long_values_are_cached_within_the_byte_budget() {
        // A 10 KB value repeated is admitted like a short one, and found.
        let c = cache(64);
        let page = vec![b'p'; 10 * 1024];
        window(&c, &[(&page, scan_cost(page.len()))], 2);
        assert!(c.lookup(&page).is_some());
        assert_eq!(scan_cost(page.len()), 42);
        assert_eq!(scan_cost(SHORT_VALUE_LEN - 1), 2);
        // Long values past the table's budget are left out (over windows: one
        // window's candidates hold fewer bytes than the table may), and short
        // ones still fit.
        let c = cache(1024);
        let n = TABLE_BYTES_MAX / MAX_VALUE_LEN + 8;
        let longs = longest_values(n, b'l');
        for chunk in longs.chunks(16) {
            let mut batch: Vec<(&[u8], u32)> = chunk.iter().map(|v| (v.as_slice(), 1000)).collect();
            batch.push((b"short", 1));
            window(&c, &batch, 2);
        }
        let kept = longs.iter().filter(|v| c.lookup(v).is_some()).count();
        assert_eq!(kept, TABLE_BYTES_MAX / MAX_VALUE_LEN);
        // The last window's values weigh most (the others' scores decay).
        assert!(longs[n - 8..].iter().all(|v| c.lookup(v).is_some()));
        assert!(c.lookup(b"short").is_some());
        // A window's long candidates are bounded by bytes: those past the budget
        // are not remembered.
        let c = cache(64);
        let many = CANDIDATE_BYTES_MAX / MAX_VALUE_LEN + 3;
        let longs = longest_values(many, b'c');
        c.report(longs.iter().map(|v| (v.as_slice(), 5)));
        let w = c.window.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(w.candidates.len(), CANDIDATE_BYTES_MAX / MAX_VALUE_LEN);
        assert!(w.long_bytes <= CANDIDATE_BYTES_MAX);
    }

    #[test]
    fn a_snapshot_answers_from_the_table_it_was_taken_from() {
        let c = cache(1);
        let before = c.snapshot();
        window(&c, &[(b"old", 5)], 2);
        let during = c.snapshot();
        assert!(before.lookup(b"old").is_none());
        let old = during
            .lookup(b"old")
            .unwrap_or_else(|| panic!("old admitted"));
        assert!(Arc::ptr_eq(
            &old,
            &c.lookup(b"old").unwrap_or_else(|| panic!("old"))
        ));
        // A snapshot's lookups count as hits (the admission ranks entries by them).
        during.0.take_hits(b"old");
        assert!(during.lookup(b"old").is_some());
        assert_eq!(during.0.take_hits(b"old"), 1);
        assert_eq!(during.0.take_hits(b"old"), 0);
        // Once the table is swapped, the old snapshot still answers from its own.
        window(&c, &[(b"new", 5)], 2);
        assert!(c.lookup(b"old").is_none() && c.lookup(b"new").is_some());
        assert!(during.lookup(b"old").is_some() && during.lookup(b"new").is_none());
        assert!(c.snapshot().lookup(b"new").is_some());
        // Values longer than the longest cached one are never looked up.
        assert!(during.lookup(&[b'o'; MAX_VALUE_LEN + 1]).is_none());
    }

    #[test]
    fn the_table_finds_short_and_long_values_by_their_exact_bytes() {
        let long: Vec<u8> = (0..SHORT_VALUE_LEN + 40)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        let mut other = long.clone();
        if let Some(b) = other.last_mut() {
            *b = b'#';
        }
        let values = [
            &b""[..],
            b"x",
            b"shop.example.com",
            &long[..SHORT_VALUE_LEN],
            &long,
        ];
        let entries: Vec<Arc<ValueEntry>> = values
            .iter()
            .map(|v| Arc::new(ValueEntry::new((*v).into(), 10, Arc::default(), 1, 0)))
            .collect();
        let t = Table::new(entries);
        for (p, v) in values.iter().enumerate() {
            assert_eq!(
                t.position_of(v),
                Some(p as u32),
                "{:?}",
                String::from_utf8_lossy(v)
            );
            assert_eq!(t.entries[p].value(), *v);
        }
        // The long value is compared in its entry; a value of its length that
        // differs in the last byte, a prefix and an extension are not found.
        assert!(t.index.iter().any(|s| s.start == LONG && s.position == 4));
        assert_eq!(t.position_of(&other), None);
        assert_eq!(t.position_of(&long[..long.len() - 1]), None);
        assert_eq!(t.position_of(b"shop.example.co"), None);
        assert_eq!(t.position_of(b"shop.example.comm"), None);
        // Lookups count hits per position; `contains` does not.
        assert!(t.contains(b"x"));
        assert_eq!(t.find(b"x"), Some(1));
        assert_eq!(t.find(b"x"), Some(1));
        assert_eq!(t.take_hits(b"x"), 2);
        assert_eq!(t.take_hits(b"shop.example.com"), 0);
        // The short values' bytes are copied once, one after another.
        assert_eq!(t.short.len(), 1 + 16 + SHORT_VALUE_LEN);
        // An empty table answers nothing.
        assert_eq!(Table::default().position_of(b"x"), None);
    }

    #[test]
    fn entries_stay_while_the_table_has_room() {
        let c = cache(3);
        window(&c, &[(b"kept", 5)], 2);
        let kept = c.lookup(b"kept").unwrap_or_else(|| panic!("kept admitted"));
        kept.set_result(7, true);
        // Windows without a hit on it, and new values that fit beside it.
        for v in [&b"one"[..], b"two"] {
            c.table.load().take_hits(b"kept");
            window(&c, &[(v, 5)], 2);
        }
        assert_eq!(c.len(), 3);
        assert_eq!(c.lookup(b"kept").and_then(|e| e.result(7)), Some(true));
        // Full: a heavier new value takes the place of the least used entry.
        for v in [&b"kept"[..], b"one", b"two"] {
            c.table.load().take_hits(v);
        }
        let _ = c.lookup(b"one");
        let _ = c.lookup(b"two");
        window(&c, &[(b"three", 50)], 2);
        assert_eq!(c.len(), 3);
        assert!(c.lookup(b"three").is_some());
        assert!(!c.table.load().contains(b"kept"));
    }

    #[test]
    fn unused_entries_make_room_for_new_candidates() {
        let c = cache(1);
        window(&c, &[(b"old", 5)], 2);
        assert!(c.lookup(b"old").is_some());
        // A window without hits on "old" and a new repeated value: replaced.
        c.table.load().take_hits(b"old");
        window(&c, &[(b"new", 5)], 2);
        assert!(c.lookup(b"new").is_some());
        assert!(!c.table.load().contains(b"old"));
    }
}
