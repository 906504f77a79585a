//! Collections rules write with `setvar`: TX (per transaction) and the persistent
//! ones (IP, GLOBAL, SESSION, USER, RESOURCE), kept in a [`CollectionStore`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use std::hash::BuildHasherDefault;

use indexmap::IndexMap;
use rustc_hash::FxHasher;
use smallvec::SmallVec;

/// Bytes stored inline when short, cloned with one copy (`SmallVec`'s own `Clone`
/// goes byte by byte, which made copying the prologue's TX cost more than the
/// `setvar`s it replaces).
macro_rules! inline_bytes {
    ($(#[$doc:meta])* $name:ident, $n:literal) => {
        $(#[$doc])*
        #[derive(Debug, Default)]
        struct $name(SmallVec<[u8; $n]>);

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                crate::bytes_eq::bytes_eq(&self.0, &other.0)
            }
        }

        impl Eq for $name {}

        impl $name {
            /// A copy of `b`: a short one goes inline with one copy of the whole
            /// buffer (`SmallVec::from_slice` goes through its generic insertion).
            fn from_slice(b: &[u8]) -> Self {
                if b.len() <= $n {
                    let mut buf = [0u8; $n];
                    buf[..b.len()].copy_from_slice(b);
                    $name(SmallVec::from_buf_and_len(buf, b.len()))
                } else {
                    $name(SmallVec::from_vec(b.to_vec()))
                }
            }

            /// Makes it a copy of `b`, keeping a heap buffer that holds it (a
            /// value of the same length, as a score's, is copied over in place).
            #[inline]
            fn assign(&mut self, b: &[u8]) {
                if self.0.len() == b.len() {
                    self.0.copy_from_slice(b);
                } else if self.0.spilled() && b.len() > $n {
                    self.0.clear();
                    self.0.extend_from_slice(b);
                } else {
                    *self = $name::from_slice(b);
                }
            }
        }

        impl Clone for $name {
            fn clone(&self) -> Self {
                $name::from_slice(&self.0)
            }

            fn clone_from(&mut self, source: &Self) {
                self.assign(&source.0);
            }
        }

        impl std::ops::Deref for $name {
            type Target = SmallVec<[u8; $n]>;

            fn deref(&self) -> &Self::Target {
                &self.0
            }
        }

        impl std::ops::DerefMut for $name {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.0
            }
        }

        impl std::hash::Hash for $name {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.0.as_slice().hash(state);
            }
        }

        impl std::borrow::Borrow<[u8]> for $name {
            fn borrow(&self) -> &[u8] {
                &self.0
            }
        }
    };
}

inline_bytes!(
    /// A key, stored inline when short (CRS keys are): no allocation per `setvar`.
    Key,
    40
);

inline_bytes!(
    /// A value, stored inline when short (scores, flags, levels).
    Value,
    24
);

/// A borrowed key to look a member up by: hashed as [`Key`] is (as its bytes)
/// and compared with [`crate::bytes_eq::bytes_eq`], not `memcmp`.
#[derive(Clone, Copy)]
struct ByteKey<'a>(&'a [u8]);

impl std::hash::Hash for ByteKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl indexmap::Equivalent<Key> for ByteKey<'_> {
    #[inline]
    fn equivalent(&self, key: &Key) -> bool {
        crate::bytes_eq::bytes_eq(self.0, key)
    }
}

/// Where a key was last found in a collection: a hint, kept by the rule that
/// names the key (a macro's `%{tx.key}`, a `setvar` key), checked against the
/// key found at that position before use. TX starts every transaction from the
/// same baseline, so a key read by every transaction is found at once, without
/// hashing it. Shared by every thread running the program (a relaxed atomic:
/// any value is safe).
#[derive(Debug)]
pub struct Hint(std::sync::atomic::AtomicU32);

impl Default for Hint {
    fn default() -> Self {
        Hint(std::sync::atomic::AtomicU32::new(u32::MAX))
    }
}

impl Clone for Hint {
    fn clone(&self) -> Self {
        Hint(std::sync::atomic::AtomicU32::new(self.get()))
    }
}

/// Hints never make two keys or rules different.
impl PartialEq for Hint {
    fn eq(&self, _: &Hint) -> bool {
        true
    }
}

impl Eq for Hint {}

impl Hint {
    #[inline]
    fn get(&self) -> u32 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[inline]
    fn set(&self, i: usize) {
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        if self.get() != i {
            self.0.store(i, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// A collection: lower-case keys to values, in insertion order.
#[derive(Debug)]
pub struct Collection {
    vars: IndexMap<Key, Value, BuildHasherDefault<FxHasher>>,
    /// Expiry (unix seconds) per key, from `expirevar`.
    expiry: HashMap<String, u64>,
    /// What changed since the collection was made equal to a baseline (see
    /// [`Collection::restore_from`]).
    baseline: Option<Baseline>,
    /// Where the keys `0` to `9` (`capture`'s TX:0-9, read back by macros) were
    /// last set: a hint, checked against the key found there before use, so no
    /// change to the map has to keep it up to date.
    digits: [u32; 10],
}

impl Default for Collection {
    fn default() -> Self {
        Collection {
            vars: IndexMap::default(),
            expiry: HashMap::new(),
            baseline: None,
            digits: [u32::MAX; 10],
        }
    }
}

/// The digit of a one-digit key (`None` for other keys).
#[inline]
fn digit_key(key: &[u8]) -> Option<usize> {
    match key {
        [d @ b'0'..=b'9'] => Some(usize::from(d - b'0')),
        _ => None,
    }
}

/// The changes made to a collection since it was copied from a baseline: the
/// baseline's members keep their positions unless one is removed, so the copy is
/// restored by dropping the members added after them and copying back the values
/// that were set.
#[derive(Debug, Default, Clone)]
struct Baseline {
    /// The baseline's identity (see [`Collection::restore_from`]).
    id: u64,
    /// Its number of members.
    len: usize,
    /// Positions below `len` whose values were set (repeats allowed).
    dirty: Vec<u32>,
    /// A member of the baseline was removed (positions moved), or too many
    /// were set: the next restore copies everything.
    broken: bool,
}

impl Baseline {
    #[inline]
    fn set(&mut self, index: usize) {
        if index < self.len {
            if self.dirty.len() >= self.len {
                self.broken = true;
            } else {
                self.dirty.push(index as u32);
            }
        }
    }
}

impl PartialEq for Collection {
    fn eq(&self, other: &Self) -> bool {
        self.vars == other.vars && self.expiry == other.expiry
    }
}

impl Eq for Collection {}

impl Collection {
    /// Bytes held (entries and spilled keys and values; for buffer pools' bounds).
    pub fn capacity_bytes(&self) -> usize {
        self.vars.capacity() * std::mem::size_of::<(Key, Value, u64)>()
            + self
                .vars
                .iter()
                .map(|(k, v)| spilled(k.capacity(), 40) + spilled(v.capacity(), 24))
                .sum::<usize>()
            + self.expiry.capacity() * std::mem::size_of::<(String, u64)>()
    }
}

/// Heap bytes of an inline buffer of `inline` bytes with `capacity`.
fn spilled(capacity: usize, inline: usize) -> usize {
    if capacity > inline {
        capacity
    } else {
        0
    }
}

impl Clone for Collection {
    fn clone(&self) -> Self {
        Collection {
            vars: self.vars.clone(),
            expiry: self.expiry.clone(),
            baseline: None,
            digits: self.digits,
        }
    }

    /// Copies `source` into this collection's allocations.
    fn clone_from(&mut self, source: &Self) {
        self.vars.clone_from(&source.vars);
        self.expiry.clone_from(&source.expiry);
        self.baseline = None;
        self.digits = source.digits;
    }
}

impl Collection {
    /// Makes this collection equal to `source`, a baseline that never changes
    /// while it carries the identity `id` (not 0): the prologue's TX, which each
    /// transaction starts from. When this collection was restored from the same
    /// baseline before (a pooled transaction's TX), only what changed since is
    /// undone; otherwise everything is copied.
    pub fn restore_from(&mut self, source: &Collection, id: u64) {
        match &mut self.baseline {
            Some(b)
                if id != 0
                    && b.id == id
                    && !b.broken
                    && b.len == source.vars.len()
                    && self.vars.len() >= b.len =>
            {
                self.vars.truncate(b.len);
                for &i in &b.dirty {
                    let i = i as usize;
                    if let (Some((_, v)), Some((_, src))) =
                        (self.vars.get_index_mut(i), source.vars.get_index(i))
                    {
                        v.assign(src);
                    }
                }
                b.dirty.clear();
            }
            _ => {
                self.vars.clone_from(&source.vars);
                let mut dirty = self.baseline.take().map(|b| b.dirty).unwrap_or_default();
                dirty.clear();
                self.baseline = (id != 0).then_some(Baseline {
                    id,
                    len: source.vars.len(),
                    dirty,
                    broken: false,
                });
            }
        }
        self.expiry.clone_from(&source.expiry);
        debug_assert!(
            self == source,
            "a restored collection differs from its baseline"
        );
    }

    /// When it was restored from a baseline and still holds the baseline's
    /// members at their positions (none was removed): the baseline's identity and
    /// its number of members. Their keys are then the baseline's, in order (their
    /// values may have been set since).
    #[inline]
    pub fn baseline_keys(&self) -> Option<(u64, usize)> {
        let b = self.baseline.as_ref()?;
        (!b.broken && self.vars.len() >= b.len).then_some((b.id, b.len))
    }

    /// Calls `f` on the members `sel` selects, in order. A named member is one
    /// lookup (given with the selector's key), not a scan. A regex over a
    /// collection restored from a baseline (TX) tests only the members added
    /// since: which of the baseline's keys it selects was found once (see
    /// [`crate::rule::KeyRegex::baseline_matches`]).
    pub fn for_each_selected(&self, sel: &crate::rule::KeySel, mut f: impl FnMut(&[u8], &[u8])) {
        if let crate::rule::KeySel::Key(k) = sel {
            if let Some(v) = self.get(k) {
                f(k.as_bytes(), v);
            }
            return;
        }
        if let (crate::rule::KeySel::Regex(r), Some((id, len))) = (sel, self.baseline_keys()) {
            if let Some(fixed) = r.baseline_matches(self, id, len) {
                for &p in fixed {
                    if let Some((k, v)) = self.member_bytes(p as usize) {
                        f(k, v);
                    }
                }
                for (k, v) in self.members_from(len) {
                    if r.is_match(k) {
                        f(k, v);
                    }
                }
                return;
            }
        }
        for (k, v) in self.iter_bytes() {
            if sel.selects(k) {
                f(k, v);
            }
        }
    }

    /// The members from `position` on (in insertion order), keys as bytes.
    pub fn members_from(&self, position: usize) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.vars
            .get_range(position..)
            .into_iter()
            .flat_map(|s| s.iter())
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
    }

    /// The member at `position` (in insertion order), key as bytes.
    #[inline]
    pub fn member_bytes(&self, position: usize) -> Option<(&[u8], &[u8])> {
        self.vars
            .get_index(position)
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
    }

    /// Whether it was restored from a baseline (see [`Collection::restore_from`]);
    /// its members may since have changed.
    pub fn has_baseline(&self) -> bool {
        self.baseline.is_some()
    }
}

impl Collection {
    /// The value of a key (keys are case-insensitive).
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        let key = key.as_bytes();
        if !key.iter().any(u8::is_ascii_uppercase) {
            return self.vars.get(&ByteKey(key)).map(|v| v.as_slice());
        }
        // Rules name members in upper case (`TX:BLOCKING_PARANOIA_LEVEL`): the
        // lower-cased key on the stack, not in a new string per lookup.
        let mut buf = [0u8; 64];
        let lower = match buf.get_mut(..key.len()) {
            Some(b) => {
                b.copy_from_slice(key);
                b.make_ascii_lowercase();
                self.vars.get(&ByteKey(b))
            }
            None => self.vars.get(&ByteKey(&key.to_ascii_lowercase())),
        };
        lower.map(|v| v.as_slice())
    }

    /// The value of a key known to hold no ASCII upper-case letter (macro keys
    /// and `setvar` keys are lower-cased at load time): no case test.
    #[inline]
    pub fn get_lower(&self, key: &str) -> Option<&[u8]> {
        self.get_lower_bytes(key.as_bytes())
    }

    /// As [`Collection::get_lower`], the key given as bytes (valid UTF-8).
    pub fn get_lower_bytes(&self, key: &[u8]) -> Option<&[u8]> {
        debug_assert!(!key.iter().any(u8::is_ascii_uppercase));
        if let Some(i) = digit_key(key).and_then(|d| self.digit_index(d)) {
            return self.vars.get_index(i).map(|(_, v)| v.as_slice());
        }
        self.vars.get(&ByteKey(key)).map(|v| v.as_slice())
    }

    /// As [`Collection::get_lower_bytes`], trying the position `hint` gives first
    /// (and keeping where the key was found in it).
    #[inline]
    pub fn get_lower_hinted(&self, key: &[u8], hint: &Hint) -> Option<&[u8]> {
        if let Some(i) = self.hinted_index(key, hint) {
            return self.vars.get_index(i).map(|(_, v)| v.as_slice());
        }
        let (i, _, v) = self.vars.get_full(&ByteKey(key))?;
        hint.set(i);
        Some(v.as_slice())
    }

    /// The position `hint` gives, when the key is there.
    #[inline]
    fn hinted_index(&self, key: &[u8], hint: &Hint) -> Option<usize> {
        let i = hint.get() as usize;
        let (k, _) = self.vars.get_index(i)?;
        crate::bytes_eq::bytes_eq(k, key).then_some(i)
    }

    /// As [`Collection::set_lower_bytes`], trying the position `hint` gives first
    /// (and keeping where the key was found or added in it).
    pub fn set_lower_hinted(&mut self, key: &[u8], value: &[u8], hint: &Hint) {
        if digit_key(key).is_none() {
            if let Some(i) = self.hinted_index(key, hint) {
                self.overwrite(i, value);
                return;
            }
        }
        let i = self.set_lower_at(key, value);
        hint.set(i);
    }

    /// [`Collection::get_lower_bytes`], through `hint` when there is one.
    #[inline]
    pub fn get_lower_with(&self, key: &[u8], hint: Option<&Hint>) -> Option<&[u8]> {
        match hint {
            Some(h) => self.get_lower_hinted(key, h),
            None => self.get_lower_bytes(key),
        }
    }

    /// [`Collection::set_lower_bytes`], through `hint` when there is one.
    #[inline]
    pub fn set_lower_with(&mut self, key: &[u8], value: &[u8], hint: Option<&Hint>) {
        match hint {
            Some(h) => self.set_lower_hinted(key, value, h),
            None => self.set_lower_bytes(key, value),
        }
    }

    /// The position of a key known to hold no ASCII upper-case letter, through
    /// `hint` when there is one (and keeping where the key was found in it): a
    /// `setvar` that reads and then writes a member finds it once.
    #[inline]
    pub fn position_lower_with(&self, key: &[u8], hint: Option<&Hint>) -> Option<usize> {
        debug_assert!(!key.iter().any(u8::is_ascii_uppercase));
        if let Some(i) = digit_key(key).and_then(|d| self.digit_index(d)) {
            return Some(i);
        }
        if let Some(i) = hint.and_then(|h| self.hinted_index(key, h)) {
            return Some(i);
        }
        let i = self.vars.get_index_of(&ByteKey(key))?;
        if let Some(h) = hint {
            h.set(i);
        }
        Some(i)
    }

    /// The value at position `i` (from [`Collection::position_lower_with`]).
    #[inline]
    pub fn value_at(&self, i: usize) -> Option<&[u8]> {
        self.vars.get_index(i).map(|(_, v)| v.as_slice())
    }

    /// Sets the member at position `i` (from [`Collection::position_lower_with`],
    /// with no change to the collection since) to `value`.
    #[inline]
    pub fn set_at(&mut self, i: usize, value: &[u8]) {
        self.overwrite(i, value);
    }

    /// Sets the member at position `i` (which exists) to `value`, recording the
    /// change against the baseline.
    fn overwrite(&mut self, i: usize, value: &[u8]) {
        if let Some((_, v)) = self.vars.get_index_mut(i) {
            v.assign(value);
        }
        if let Some(b) = &mut self.baseline {
            b.set(i);
        }
    }

    /// Where the key `d` (a digit) is, when the hint still holds.
    #[inline]
    fn digit_index(&self, d: usize) -> Option<usize> {
        let i = *self.digits.get(d)? as usize;
        let (k, _) = self.vars.get_index(i)?;
        (k.as_slice() == [b'0' + d as u8]).then_some(i)
    }

    /// Sets a key known to hold no ASCII upper-case letter (see
    /// [`Collection::get_lower`]).
    pub fn set_lower(&mut self, key: &str, value: &[u8]) {
        self.set_lower_bytes(key.as_bytes(), value);
    }

    /// As [`Collection::set_lower`], the key given as bytes (valid UTF-8: keys
    /// are strings).
    pub fn set_lower_bytes(&mut self, key: &[u8], value: &[u8]) {
        self.set_lower_at(key, value);
    }

    /// As [`Collection::set_lower_bytes`]; returns the key's position.
    fn set_lower_at(&mut self, key: &[u8], value: &[u8]) -> usize {
        debug_assert!(!key.iter().any(u8::is_ascii_uppercase));
        debug_assert!(std::str::from_utf8(key).is_ok());
        let digit = digit_key(key);
        // One hash and probe: the key found, or its place for a new member
        // (which goes after every existing one, beyond a baseline's).
        // (`digit_index` gives only a position that holds the key.)
        let (i, found) = match digit.and_then(|d| self.digit_index(d)) {
            Some(i) => (i, true),
            None => match self.vars.entry(Key::from_slice(key)) {
                indexmap::map::Entry::Occupied(o) => (o.index(), true),
                indexmap::map::Entry::Vacant(e) => {
                    let i = e.index();
                    e.insert(Value::from_slice(value));
                    (i, false)
                }
            },
        };
        if found {
            self.overwrite(i, value);
        }
        if let Some(d) = digit {
            self.digits[d] = i as u32;
        }
        i
    }

    /// Sets a key.
    pub fn set(&mut self, key: &str, value: Vec<u8>) {
        self.set_slice(key, &value);
    }

    /// Sets a key to a copy of `value` (no allocation for short keys and values).
    pub fn set_slice(&mut self, key: &str, value: &[u8]) {
        if key.bytes().any(|b| b.is_ascii_uppercase()) {
            let k = key.to_ascii_lowercase();
            let (i, old) = self
                .vars
                .insert_full(Key::from_slice(k.as_bytes()), Value::from_slice(value));
            if let (Some(b), Some(_)) = (&mut self.baseline, old) {
                b.set(i);
            }
            return;
        }
        self.set_lower(key, value);
    }

    /// Removes a key.
    pub fn remove(&mut self, key: &str) {
        let k = key.to_ascii_lowercase();
        if let Some((i, _, _)) = self.vars.shift_remove_full(k.as_bytes()) {
            // Members after it move up: a baseline's positions no longer hold.
            if let Some(b) = &mut self.baseline {
                b.broken |= i < b.len;
            }
        }
        self.expiry.remove(&k);
    }

    /// Sets a key's expiry time.
    pub fn expire(&mut self, key: &str, at_unix: u64) {
        self.expiry.insert(key.to_ascii_lowercase(), at_unix);
    }

    /// Drops keys whose expiry has passed.
    pub fn purge_expired(&mut self, now_unix: u64) {
        let expired: Vec<String> = self
            .expiry
            .iter()
            .filter(|(_, &t)| t <= now_unix)
            .map(|(k, _)| k.clone())
            .collect();
        for k in expired {
            self.remove(&k);
        }
    }

    /// All members in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        // Keys are made from `&str`s: always UTF-8.
        self.vars
            .iter()
            .map(|(k, v)| (std::str::from_utf8(k).unwrap_or_default(), v.as_slice()))
    }

    /// All members in order, keys as bytes.
    pub fn iter_bytes(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.vars.iter().map(|(k, v)| (k.as_slice(), v.as_slice()))
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.vars.clear();
        self.expiry.clear();
        self.baseline = None;
    }
}

/// Where persistent collections live between transactions. A shared store (Redis)
/// lets a fleet count a client once.
pub trait CollectionStore: Send + Sync + std::fmt::Debug {
    /// Loads a record (`ip` / `192.0.2.1`), or an empty one.
    fn load(&self, collection: &str, key: &str) -> Collection;
    /// Stores a record back, with a time-to-live in seconds.
    fn store(&self, collection: &str, key: &str, record: &Collection, ttl_secs: u64);
}

/// An in-memory store with TTLs (one process).
#[derive(Debug, Default)]
pub struct MemoryStore {
    records: Mutex<HashMap<(String, String), (Collection, u64)>>,
}

/// Seconds since the Unix epoch.
pub fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A UTC calendar time (proleptic Gregorian), for TIME* variables and log stamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilTime {
    /// Year.
    pub year: i64,
    /// Month, 1-12.
    pub month: u32,
    /// Day of the month, 1-31.
    pub day: u32,
    /// Hour, 0-23.
    pub hour: u64,
    /// Minute, 0-59.
    pub minute: u64,
    /// Second, 0-59.
    pub second: u64,
    /// Day of the week, 0 = Sunday.
    pub weekday: u64,
}

impl CivilTime {
    /// The calendar time of a Unix time stamp.
    pub fn from_unix(secs: u64) -> CivilTime {
        let days = secs / 86_400;
        let rem = secs % 86_400;
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        CivilTime {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day,
            hour: rem / 3600,
            minute: rem % 3600 / 60,
            second: rem % 60,
            weekday: (days + 4) % 7,
        }
    }
}

impl CollectionStore for MemoryStore {
    fn load(&self, collection: &str, key: &str) -> Collection {
        let now = now_unix();
        let Ok(mut map) = self.records.lock() else {
            return Collection::default();
        };
        let k = (collection.to_string(), key.to_string());
        match map.get(&k) {
            Some((_, expires)) if *expires <= now => {
                map.remove(&k);
                Collection::default()
            }
            Some((c, _)) => {
                let mut c = c.clone();
                c.purge_expired(now);
                c
            }
            None => Collection::default(),
        }
    }

    fn store(&self, collection: &str, key: &str, record: &Collection, ttl_secs: u64) {
        if let Ok(mut map) = self.records.lock() {
            map.insert(
                (collection.to_string(), key.to_string()),
                (record.clone(), now_unix() + ttl_secs),
            );
        }
    }
}

#[cfg(test)]
mod restore_tests {
    use super::Collection;
    use proptest::prelude::*;

    /// One change a rule may make to TX.
    #[derive(Debug, Clone)]
    enum Op {
        SetLower(usize, u8),
        /// Through the key's position hint (a `setvar` with a literal key).
        SetHinted(usize, u8),
        SetUpper(usize, u8),
        Remove(usize),
        Expire(usize),
    }

    const KEYS: &[&str] = &[
        "a", "score", "pl", "level", "new_1", "new_2", "NEW_3", "0", "1", "7",
    ];

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..KEYS.len(), any::<u8>()).prop_map(|(k, v)| Op::SetLower(k, v)),
            (0..KEYS.len(), any::<u8>()).prop_map(|(k, v)| Op::SetHinted(k, v)),
            (0..KEYS.len(), any::<u8>()).prop_map(|(k, v)| Op::SetUpper(k, v)),
            (0..KEYS.len()).prop_map(Op::Remove),
            (0..KEYS.len()).prop_map(Op::Expire),
        ]
    }

    fn apply(c: &mut Collection, op: &Op, hints: &[super::Hint]) {
        match *op {
            Op::SetLower(k, v) => c.set_lower(&KEYS[k].to_ascii_lowercase(), &[v]),
            Op::SetHinted(k, v) => {
                c.set_lower_hinted(KEYS[k].to_ascii_lowercase().as_bytes(), &[v], &hints[k]);
            }
            Op::SetUpper(k, v) => c.set_slice(&KEYS[k].to_ascii_uppercase(), &[v, v]),
            Op::Remove(k) => c.remove(KEYS[k]),
            Op::Expire(k) => c.expire(KEYS[k], 7),
        }
    }

    fn baseline() -> Collection {
        let mut b = Collection::default();
        for (i, k) in ["a", "score", "0", "pl", "level"].iter().enumerate() {
            b.set_lower(k, i.to_string().as_bytes());
        }
        b
    }

    proptest! {
        /// Whatever transactions change between restores, a restore gives the
        /// baseline back, in order.
        #[test]
        fn restoring_undoes_any_changes(rounds in prop::collection::vec(prop::collection::vec(op(), 0..12), 1..5)) {
            let base = baseline();
            let selectors: Vec<crate::rule::KeySel> = ["^new_", "e", "^[0-9]$", "^zzz"]
                .iter()
                .filter_map(|p| crate::rule::KeyRegex::new(p).ok())
                .map(|r| crate::rule::KeySel::Regex(std::sync::Arc::new(r)))
                .collect();
            prop_assert_eq!(selectors.len(), 4);
            let mut c = Collection::default();
            // Kept across transactions, as rules keep them.
            let hints: Vec<super::Hint> = KEYS.iter().map(|_| super::Hint::default()).collect();
            for ops in &rounds {
                c.restore_from(&base, 9);
                prop_assert!(c == base);
                prop_assert!(c.iter().eq(base.iter()));
                for op in ops {
                    apply(&mut c, op, &hints);
                    // A regex selects what testing every key selects (the
                    // baseline's keys found once, whatever changed since).
                    for sel in &selectors {
                        let mut fast = Vec::new();
                        c.for_each_selected(sel, |k, v| fast.push((k.to_vec(), v.to_vec())));
                        let plain: Vec<_> = c
                            .iter_bytes()
                            .filter(|(k, _)| sel.selects(k))
                            .map(|(k, v)| (k.to_vec(), v.to_vec()))
                            .collect();
                        prop_assert_eq!(fast, plain);
                    }
                    // Every key reads what the members hold (the digit keys'
                    // position hints included, after removals moved members).
                    for (k, hint) in KEYS.iter().zip(&hints) {
                        let k = k.to_ascii_lowercase();
                        let member = c.iter().find(|(m, _)| *m == k).map(|(_, v)| v);
                        prop_assert_eq!(c.get_lower(&k), member);
                        prop_assert_eq!(c.get(&k), member);
                        // Whatever position the hint holds.
                        prop_assert_eq!(c.get_lower_hinted(k.as_bytes(), hint), member);
                    }
                }
            }
            c.restore_from(&base, 9);
            prop_assert!(c.iter().eq(base.iter()));
            // Another baseline: copied whole.
            let mut other = Collection::default();
            other.set_lower("x", b"1");
            c.restore_from(&other, 10);
            prop_assert!(c.iter().eq(other.iter()));
        }
    }

    #[test]
    fn values_and_keys_across_the_inline_size_are_kept_whole() {
        // Keys go inline up to 40 bytes, values up to 24: set, overwrite and
        // restore across both bounds, a spilled buffer reused and given up, and
        // values of the same length copied over in place.
        let long_key = "k".repeat(41);
        let mut base = Collection::default();
        base.set_lower("short", b"v");
        base.set_lower(&long_key, &[b'b'; 30]);
        let mut c = Collection::default();
        c.restore_from(&base, 5);
        for value in [
            &[b'x'; 24][..],
            &[b'y'; 25],
            &[b'z'; 100],
            b"",
            &[b'w'; 60],
            b"s",
            b"t",
            &[b'q'; 30],
            &[b'r'; 30],
        ] {
            c.set_lower("short", value);
            c.set_lower(&long_key, value);
            c.set_lower(&"n".repeat(value.len()), value);
            assert_eq!(c.get("short"), Some(value));
            assert_eq!(c.get(&long_key), Some(value));
            assert_eq!(c.get(&"n".repeat(value.len())), Some(value));
            let mut copy = Collection::default();
            copy.clone_from(&c);
            assert!(copy == c);
            c.restore_from(&base, 5);
            assert!(c == base);
            assert_eq!(c.get(&long_key), Some(&[b'b'; 30][..]));
        }
    }

    #[test]
    fn only_restored_collections_carry_a_baseline() {
        let base = baseline();
        let mut c = Collection::default();
        assert!(!c.has_baseline());
        c.restore_from(&base, 3);
        assert!(c.has_baseline());
        assert!(!c.clone().has_baseline());
        c.clear();
        assert!(!c.has_baseline());
        // Identity 0 never takes the short way.
        c.restore_from(&base, 0);
        assert!(!c.has_baseline() && c == base);
    }
}
