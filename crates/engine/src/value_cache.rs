//! The value cache: results that depend only on a value's bytes, kept across
//! transactions (the RuleCache paper's observation: cookies, arguments and user
//! agents repeat across requests). Two kinds of results are cached, each keyed by an
//! id and the exact bytes:
//!
//! - prefilter scans: `(transformation chain, raw value)` -> the prefilter's rule
//!   bits of the transformed value (for `multiMatch` groups, of every intermediate
//!   value), so a repeated value is neither transformed nor scanned again;
//! - operator results: `(rule, raw value)` -> whether the rule's operator matches
//!   the value after the rule's transformations, for rules whose operator is a pure
//!   function of its input (no macros left at run time; not `@rbl`, whose answers
//!   change, nor `@geoLookup`, which writes GEO: see `Rule::pure`); for rules with `capture`
//!   only "no match" is cached, since a match must fill TX:0-9, and for
//!   `multiMatch` rules (key `rule | MULTI`) only "no intermediate value matched".
//!
//! Both are pure functions of the bytes, so a cached result equals a computed one;
//! `Options::verify` recomputes every hit and panics on a difference. Entries are
//! compared by their full bytes (a hash collision never returns another value's
//! result); values longer than [`MAX_VALUE_LEN`] are not cached. Memory is bounded:
//! each shard holds at most [`SHARD_CAPACITY`] entries and is emptied when full,
//! each hash bucket at most [`BUCKET_MAX`] (so crafted collisions cost a constant).
//! Shards are locked independently, so threads rarely wait for each other.

use std::hash::Hasher;
use std::sync::Mutex;

use rustc_hash::{FxHashMap, FxHasher};

/// Longest value cached (bytes).
pub const MAX_VALUE_LEN: usize = 256;
/// Entries per shard before it is emptied.
pub const SHARD_CAPACITY: usize = 4096;
/// Entries per hash bucket.
pub const BUCKET_MAX: usize = 4;
const SHARDS: usize = 16;

#[derive(Debug)]
struct Entry<T> {
    id: u32,
    value: Box<[u8]>,
    result: T,
}

#[derive(Debug)]
struct Shard<T> {
    map: FxHashMap<u64, Vec<Entry<T>>>,
    len: usize,
}

impl<T> Default for Shard<T> {
    fn default() -> Self {
        Shard {
            map: FxHashMap::default(),
            len: 0,
        }
    }
}

/// A bounded, sharded map from `(id, bytes)` to a result.
#[derive(Debug)]
pub struct ValueCache<T> {
    shards: Vec<Mutex<Shard<T>>>,
}

impl<T: Clone> Default for ValueCache<T> {
    fn default() -> Self {
        ValueCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
        }
    }
}

/// The hash of a value's bytes; a transaction computes it once per value and passes
/// it to [`ValueCache::get`] / [`ValueCache::put`] for every rule.
pub fn value_hash(value: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(value);
    h.write_usize(value.len());
    h.finish()
}

fn hash(id: u32, vhash: u64) -> u64 {
    (vhash ^ u64::from(id).wrapping_mul(0x9e37_79b9_7f4a_7c15)).rotate_left(17)
}

impl<T: Clone> ValueCache<T> {
    /// The cached result for `(id, value)`; `vhash` is [`value_hash`] of `value`.
    pub fn get(&self, id: u32, value: &[u8], vhash: u64) -> Option<T> {
        self.get_with(id, value, vhash, T::clone)
    }

    /// Applies `f` to the cached result for `(id, value)` without copying it.
    pub fn get_with<R>(
        &self,
        id: u32,
        value: &[u8],
        vhash: u64,
        f: impl FnOnce(&T) -> R,
    ) -> Option<R> {
        if value.len() > MAX_VALUE_LEN {
            return None;
        }
        let h = hash(id, vhash);
        let shard = self.shards[(h as usize) % SHARDS].lock().ok()?;
        shard
            .map
            .get(&h)?
            .iter()
            .find(|e| e.id == id && &*e.value == value)
            .map(|e| f(&e.result))
    }

    /// Caches the result for `(id, value)`; `vhash` is [`value_hash`] of `value`.
    pub fn put(&self, id: u32, value: &[u8], vhash: u64, result: T) {
        if value.len() > MAX_VALUE_LEN {
            return;
        }
        let h = hash(id, vhash);
        let Ok(mut guard) = self.shards[(h as usize) % SHARDS].lock() else {
            return;
        };
        let shard = &mut *guard;
        if shard.len >= SHARD_CAPACITY {
            shard.map.clear();
            shard.len = 0;
        }
        let bucket = shard.map.entry(h).or_default();
        if bucket.iter().any(|e| e.id == id && &*e.value == value) {
            return;
        }
        let grew = if bucket.len() >= BUCKET_MAX {
            bucket.remove(0);
            false
        } else {
            true
        };
        bucket.push(Entry {
            id,
            value: value.into(),
            result,
        });
        if grew {
            shard.len += 1;
        }
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .filter_map(|s| s.lock().ok().map(|s| s.len))
            .sum()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The caches of one program.
#[derive(Debug, Default)]
pub struct Caches {
    /// `(chain, or chain | MULTI for multiMatch unions)` -> prefilter bits.
    pub scans: ValueCache<Box<[u64]>>,
    /// `rule index` -> operator result on the transformed value.
    pub results: ValueCache<bool>,
}

/// Marks a scan id as the union over every prefix of the chain (`multiMatch`).
pub const MULTI: u32 = 1 << 31;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_by_exact_bytes_and_id_and_stays_bounded() {
        let c: ValueCache<bool> = ValueCache::default();
        let h = |v: &[u8]| value_hash(v);
        assert_eq!(c.get(1, b"abc", h(b"abc")), None);
        c.put(1, b"abc", h(b"abc"), true);
        c.put(2, b"abc", h(b"abc"), false);
        assert_eq!(c.get(1, b"abc", h(b"abc")), Some(true));
        assert_eq!(c.get(2, b"abc", h(b"abc")), Some(false));
        assert_eq!(c.get(1, b"abd", h(b"abd")), None);
        // A colliding hash never returns another value's result.
        assert_eq!(c.get(1, b"abd", h(b"abc")), None);
        let long = vec![b'x'; MAX_VALUE_LEN + 1];
        c.put(1, &long, h(&long), true);
        assert_eq!(c.get(1, &long, h(&long)), None);
        for i in 0..(SHARD_CAPACITY * SHARDS * 2) as u32 {
            c.put(i, b"v", h(b"v"), true);
        }
        assert!(c.len() <= SHARD_CAPACITY * SHARDS);
    }
}
