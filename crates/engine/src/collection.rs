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
        #[derive(Debug, Default, PartialEq, Eq)]
        struct $name(SmallVec<[u8; $n]>);

        impl $name {
            fn from_slice(b: &[u8]) -> Self {
                $name(SmallVec::from_slice(b))
            }
        }

        impl Clone for $name {
            fn clone(&self) -> Self {
                $name::from_slice(&self.0)
            }

            fn clone_from(&mut self, source: &Self) {
                self.0.clear();
                self.0.extend_from_slice(&source.0);
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

/// A collection: lower-case keys to values, in insertion order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Collection {
    vars: IndexMap<Key, Value, BuildHasherDefault<FxHasher>>,
    /// Expiry (unix seconds) per key, from `expirevar`.
    expiry: HashMap<String, u64>,
}

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
        }
    }

    /// Copies `source` into this collection's allocations (a transaction starting
    /// from the prologue's TX reuses the table it had).
    fn clone_from(&mut self, source: &Self) {
        self.vars.clone_from(&source.vars);
        self.expiry.clone_from(&source.expiry);
    }
}

impl Collection {
    /// The value of a key (keys are case-insensitive).
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        if key.bytes().any(|b| b.is_ascii_uppercase()) {
            self.vars
                .get(key.to_ascii_lowercase().as_bytes())
                .map(|v| v.as_slice())
        } else {
            self.vars.get(key.as_bytes()).map(|v| v.as_slice())
        }
    }

    /// The value of a key known to hold no ASCII upper-case letter (macro keys
    /// and `setvar` keys are lower-cased at load time): no case test.
    #[inline]
    pub fn get_lower(&self, key: &str) -> Option<&[u8]> {
        debug_assert!(!key.bytes().any(|b| b.is_ascii_uppercase()));
        self.vars.get(key.as_bytes()).map(|v| v.as_slice())
    }

    /// Sets a key known to hold no ASCII upper-case letter (see
    /// [`Collection::get_lower`]).
    pub fn set_lower(&mut self, key: &str, value: &[u8]) {
        debug_assert!(!key.bytes().any(|b| b.is_ascii_uppercase()));
        if let Some(v) = self.vars.get_mut(key.as_bytes()) {
            v.clear();
            v.extend_from_slice(value);
            return;
        }
        self.vars
            .insert(Key::from_slice(key.as_bytes()), Value::from_slice(value));
    }

    /// Sets a key.
    pub fn set(&mut self, key: &str, value: Vec<u8>) {
        self.set_slice(key, &value);
    }

    /// Sets a key to a copy of `value` (no allocation for short keys and values).
    pub fn set_slice(&mut self, key: &str, value: &[u8]) {
        if key.bytes().any(|b| b.is_ascii_uppercase()) {
            let k = key.to_ascii_lowercase();
            self.vars
                .insert(Key::from_slice(k.as_bytes()), Value::from_slice(value));
            return;
        }
        self.set_lower(key, value);
    }

    /// Removes a key.
    pub fn remove(&mut self, key: &str) {
        let k = key.to_ascii_lowercase();
        self.vars.shift_remove(k.as_bytes());
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
