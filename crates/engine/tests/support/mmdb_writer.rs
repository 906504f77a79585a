//! A small MaxMind DB writer for tests: builds GeoIP2-City-shaped databases with a
//! few networks, so that `SecGeoLookupDb` / `@geoLookup` are tested without
//! shipping or downloading a real database.
//!
//! It follows the MaxMind DB File Format Specification v2.0:
//! - a binary search tree, one level per address bit, each node two records
//!   (bit 0, bit 1) of 24, 28 or 32 bits; a record below `node_count` is a node,
//!   equal to it "no data", above it a data section offset plus `node_count + 16`;
//!   28-bit nodes keep the high nibbles of both records in their middle byte;
//! - sixteen zero bytes separating the tree from the data section;
//! - the data section: typed fields, each a control byte (3 type bits, 5 size bits;
//!   type 0 means "extended", the type minus 7 in the next byte; sizes 29-31 take
//!   one to three more bytes), maps, UTF-8 strings, doubles, unsigned integers with
//!   leading zero bytes dropped, arrays, booleans, and pointers (type 1, offsets in
//!   the data section, four sizes) which the writer uses for repeated map keys as
//!   MaxMind's own writer does;
//! - `"\xAB\xCD\xEFMaxMind.com"` and the metadata map.
//!
//! In an IPv6 database IPv4 networks are stored under `::/96` (`::a.b.c.d`), where
//! readers look IPv4 addresses up. Networks must be inserted from the least to the
//! most specific when they nest (a more specific one splits the leaf it falls in).
//!
//! Included by the integration tests with `#[path]` (engine and palisade); not
//! every test uses every function.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::IpAddr;

/// A data section value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A map (keys in order).
    Map(Vec<(String, Value)>),
    /// A UTF-8 string.
    Str(String),
    /// A double.
    Double(f64),
    /// A 16-bit unsigned integer.
    U16(u16),
    /// A 32-bit unsigned integer.
    U32(u32),
    /// A 64-bit unsigned integer.
    U64(u64),
    /// An array.
    Array(Vec<Value>),
    /// A boolean.
    Bool(bool),
}

/// A map from `(key, value)` pairs.
pub fn map<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Map(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// A string value.
pub fn s(v: &str) -> Value {
    Value::Str(v.to_string())
}

/// `{"en": name}` as GeoIP2's `names`.
pub fn names(en: &str) -> Value {
    map([("de", s(&format!("{en} (de)"))), ("en", s(en))])
}

/// A GeoIP2-City record with the fields ModSecurity reads (and a few it does not).
pub fn city_record(
    country_code: &str,
    country: &str,
    continent: &str,
    city: &str,
    postal: &str,
    latitude: f64,
    longitude: f64,
) -> Value {
    map([
        (
            "city",
            map([
                ("geoname_id", Value::U32(5_037_649)),
                ("names", names(city)),
            ]),
        ),
        (
            "continent",
            map([
                ("code", s(&continent[..2].to_ascii_uppercase())),
                ("geoname_id", Value::U32(6_255_149)),
                ("names", names(continent)),
            ]),
        ),
        (
            "country",
            map([
                ("geoname_id", Value::U32(6_252_001)),
                ("iso_code", s(country_code)),
                ("names", names(country)),
            ]),
        ),
        (
            "location",
            map([
                ("accuracy_radius", Value::U16(20)),
                ("latitude", Value::Double(latitude)),
                ("longitude", Value::Double(longitude)),
                ("time_zone", s("America/Chicago")),
            ]),
        ),
        ("postal", map([("code", s(postal))])),
        (
            "subdivisions",
            Value::Array(vec![map([
                ("iso_code", s("MN")),
                ("names", names("Minnesota")),
            ])]),
        ),
        ("traits", map([("is_anycast", Value::Bool(false))])),
    ])
}

/// A database being built.
#[derive(Debug, Clone)]
pub struct Writer {
    database_type: String,
    ip_version: u16,
    record_size: u16,
    /// Tree nodes: two children each.
    nodes: Vec<[Child; 2]>,
    /// Distinct record values.
    values: Vec<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Child {
    Empty,
    Node(usize),
    Data(usize),
}

impl Writer {
    /// An empty database (`ip_version` 4 or 6, `record_size` 24, 28 or 32).
    pub fn new(database_type: &str, ip_version: u16, record_size: u16) -> Writer {
        assert!(ip_version == 4 || ip_version == 6);
        assert!(matches!(record_size, 24 | 28 | 32));
        Writer {
            database_type: database_type.to_string(),
            ip_version,
            record_size,
            nodes: vec![[Child::Empty; 2]],
            values: Vec::new(),
        }
    }

    /// Adds a network (`192.0.2.0/24`, `2001:db8::/32`) with its record.
    pub fn insert(&mut self, network: &str, value: Value) -> &mut Writer {
        let (addr, prefix) = network.split_once('/').expect("network/prefix");
        let addr: IpAddr = addr.parse().expect("address");
        let prefix: usize = prefix.parse().expect("prefix");
        let (bits, prefix) = match (addr, self.ip_version) {
            (IpAddr::V4(a), 4) => (u32::from(a).to_be_bytes().to_vec(), prefix),
            (IpAddr::V4(a), _) => {
                let mut b = vec![0u8; 12];
                b.extend_from_slice(&a.octets());
                (b, prefix + 96)
            }
            (IpAddr::V6(a), 6) => (a.octets().to_vec(), prefix),
            (IpAddr::V6(_), _) => panic!("an IPv6 network in an IPv4 database"),
        };
        assert!(prefix >= 1 && prefix <= bits.len() * 8, "prefix {prefix}");
        let data = match self.values.iter().position(|v| *v == value) {
            Some(i) => i,
            None => {
                self.values.push(value);
                self.values.len() - 1
            }
        };
        let bit = |i: usize| usize::from(bits[i / 8] >> (7 - i % 8) & 1);
        let mut node = 0;
        for depth in 0..prefix - 1 {
            let b = bit(depth);
            node = match self.nodes[node][b] {
                Child::Node(n) => n,
                leaf => {
                    // Split a leaf (or an empty record): both halves keep it.
                    self.nodes.push([leaf; 2]);
                    let n = self.nodes.len() - 1;
                    self.nodes[node][b] = Child::Node(n);
                    n
                }
            };
        }
        self.nodes[node][bit(prefix - 1)] = Child::Data(data);
        self
    }

    /// The database file's bytes.
    pub fn build(&self) -> Vec<u8> {
        let mut data = Encoder::default();
        let offsets: Vec<usize> = self
            .values
            .iter()
            .map(|v| {
                let at = data.out.len();
                data.value(v);
                at
            })
            .collect();
        let node_count = self.nodes.len();
        let record = |c: Child| -> u64 {
            (match c {
                Child::Empty => node_count,
                Child::Node(n) => n,
                Child::Data(d) => node_count + 16 + offsets[d],
            }) as u64
        };
        let mut out = Vec::new();
        for [l, r] in &self.nodes {
            let (l, r) = (record(*l), record(*r));
            assert!(l < 1 << self.record_size && r < 1 << self.record_size);
            match self.record_size {
                24 => {
                    out.extend_from_slice(&l.to_be_bytes()[5..]);
                    out.extend_from_slice(&r.to_be_bytes()[5..]);
                }
                28 => {
                    out.extend_from_slice(&l.to_be_bytes()[5..]);
                    out.push(((l >> 24) as u8 & 0x0f) << 4 | ((r >> 24) as u8 & 0x0f));
                    out.extend_from_slice(&r.to_be_bytes()[5..]);
                }
                _ => {
                    out.extend_from_slice(&l.to_be_bytes()[4..]);
                    out.extend_from_slice(&r.to_be_bytes()[4..]);
                }
            }
        }
        out.extend_from_slice(&[0u8; 16]);
        out.extend_from_slice(&data.out);
        out.extend_from_slice(b"\xAB\xCD\xEFMaxMind.com");
        let metadata = map([
            ("binary_format_major_version", Value::U16(2)),
            ("binary_format_minor_version", Value::U16(0)),
            ("build_epoch", Value::U64(1_700_000_000)),
            ("database_type", s(&self.database_type)),
            ("description", map([("en", s("Palisade test database"))])),
            ("ip_version", Value::U16(self.ip_version)),
            ("languages", Value::Array(vec![s("de"), s("en")])),
            ("node_count", Value::U32(node_count as u32)),
            ("record_size", Value::U16(self.record_size)),
        ]);
        // The metadata is decoded on its own: no pointers into the data section.
        let mut meta = Encoder {
            no_pointers: true,
            ..Encoder::default()
        };
        meta.value(&metadata);
        out.extend_from_slice(&meta.out);
        out
    }
}

/// Data section encoding; map keys seen before become pointers.
#[derive(Default)]
struct Encoder {
    out: Vec<u8>,
    keys: HashMap<String, usize>,
    no_pointers: bool,
}

impl Encoder {
    fn control(&mut self, type_num: u8, size: usize) {
        let (bits, extra): (u8, Vec<u8>) = if size < 29 {
            (size as u8, vec![])
        } else if size < 29 + 256 {
            (29, vec![(size - 29) as u8])
        } else if size < 285 + 65_536 {
            (30, ((size - 285) as u16).to_be_bytes().to_vec())
        } else {
            (31, ((size - 65_821) as u32).to_be_bytes()[1..].to_vec())
        };
        if type_num <= 7 {
            self.out.push(type_num << 5 | bits);
        } else {
            self.out.push(bits);
            self.out.push(type_num - 7);
        }
        self.out.extend_from_slice(&extra);
    }

    fn uint(&mut self, type_num: u8, v: u64, width: usize) {
        let bytes = v.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        let payload = &bytes[skip.max(8 - width)..];
        self.control(type_num, payload.len());
        self.out.extend_from_slice(payload);
    }

    fn pointer(&mut self, to: usize) {
        if to < 1 << 11 {
            self.out.push(0x20 | (to >> 8) as u8);
            self.out.push(to as u8);
        } else if to < 2048 + (1 << 19) {
            let v = to - 2048;
            self.out.push(0x28 | (v >> 16) as u8);
            self.out.extend_from_slice(&(v as u16).to_be_bytes());
        } else if to < 526_336 + (1 << 27) {
            let v = to - 526_336;
            self.out.push(0x30 | (v >> 24) as u8);
            self.out.extend_from_slice(&(v as u32).to_be_bytes()[1..]);
        } else {
            self.out.push(0x38);
            self.out.extend_from_slice(&(to as u32).to_be_bytes());
        }
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Str(t) => {
                self.control(2, t.len());
                self.out.extend_from_slice(t.as_bytes());
            }
            Value::Double(d) => {
                self.control(3, 8);
                self.out.extend_from_slice(&d.to_be_bytes());
            }
            Value::U16(n) => self.uint(5, u64::from(*n), 2),
            Value::U32(n) => self.uint(6, u64::from(*n), 4),
            Value::U64(n) => self.uint(9, *n, 8),
            Value::Bool(b) => self.control(14, usize::from(*b)),
            Value::Array(items) => {
                self.control(11, items.len());
                for i in items {
                    self.value(i);
                }
            }
            Value::Map(pairs) => {
                self.control(7, pairs.len());
                for (k, v) in pairs {
                    match self.keys.get(k) {
                        Some(&at) if !self.no_pointers => self.pointer(at),
                        _ => {
                            self.keys.insert(k.clone(), self.out.len());
                            self.value(&Value::Str(k.clone()));
                        }
                    }
                    self.value(v);
                }
            }
        }
    }
}

/// Writes `bytes` to a new file in a new temporary directory (removed on drop).
pub struct TempDb {
    dir: std::path::PathBuf,
    /// The database file.
    pub path: std::path::PathBuf,
}

impl TempDb {
    /// A file named `name` holding `bytes`.
    pub fn new(name: &str, bytes: &[u8]) -> TempDb {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "palisade-mmdb-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write database");
        TempDb { dir, path }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
