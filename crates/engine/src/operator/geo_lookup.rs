//! `@geoLookup`: looks the input address up in the MaxMind database of
//! `SecGeoLookupDb` and, when it is found, fills the `GEO` collection.
//!
//! # What libmodsecurity v3 does, and what Palisade does
//!
//! v3 (`src/operators/geo_lookup.cc`, `src/utils/geo_lookup.cc`, MaxMind backend):
//! - `SecGeoLookupDb path` opens the database when the configuration is loaded; a
//!   file that cannot be found or opened fails the load ("Failed to load the GeoDB
//!   from: ..."). Palisade does the same (see [`GeoDb::open`]), resolving a relative
//!   path against the directory of the file that holds the directive. The database
//!   is read into memory once (v3 maps it) and shared by every rule and transaction.
//! - `@geoLookup` without a loaded database never matches in v3 (debug log "Database
//!   is not open"); Palisade refuses such a rule when loading instead, so that a rule
//!   set that cannot work is not silently accepted.
//! - The input goes to `MMDB_lookup_string` (getaddrinfo with `AI_NUMERICHOST`). An
//!   input that is not an address, an IPv6 address in an IPv4-only database, or an
//!   address without a record returns false and sets nothing. Palisade parses the
//!   input with Rust's strict address syntax (dotted-quad IPv4, RFC 4291 IPv6):
//!   getaddrinfo's extra forms (`inet_aton` shorthands such as `127.1` or octal and
//!   hex parts, IPv6 zone ids such as `fe80::1%eth0`) do not match here.
//! - A found record returns true (a match, even when the record has none of the
//!   fields below) and sets, in this order, each key whose path exists in the record
//!   (`MMDB_get_value`), replacing an earlier value of the same key (a second lookup
//!   in one transaction overwrites the keys its record has and leaves the others):
//!
//!   | key | record path | example |
//!   |---|---|---|
//!   | `COUNTRY_CODE` | `country` / `iso_code` | `US` |
//!   | `COUNTRY_NAME` | `country` / `names` / `en` | `United States` |
//!   | `COUNTRY_CONTINENT` | `continent` / `names` / `en` (the English *name*, not the code) | `North America` |
//!   | `CITY` | `city` / `names` / `en` | `Minneapolis` |
//!   | `POSTAL_CODE` | `postal` / `code` | `55401` |
//!   | `LATITUDE` | `location` / `latitude`, as C's `std::to_string(double)` (`%f`) | `44.979700` |
//!   | `LONGITUDE` | `location` / `longitude`, formatted the same way | `-93.263800` |
//!
//!   `COUNTRY_CODE3`, `REGION`, `DMA_CODE` and `AREA_CODE` are left unset: v3 fills
//!   them only from legacy GeoIP databases (its MaxMind code for them is commented
//!   out), and ModSecurity v2's continent *code* is likewise not what v3 stores.
//!   So a GeoLite2/GeoIP2 City database fills all seven keys, a Country database the
//!   first three. A value of an unexpected type is skipped (v3 would read the wrong
//!   member of its union).
//! - The operator captures nothing; `!@geoLookup` still fills `GEO` on a found
//!   address (the lookup happens before the negation).
//!
//! # How the engine runs it
//!
//! The lookup writes transaction state, which [`super::Operator::evaluate`] cannot
//! do. The compiler therefore makes such a rule a [`crate::rule::CompiledOp::GeoLookup`]
//! holding a [`GeoLookup`]: the phase evaluator calls [`GeoLookup::lookup`] and stores
//! the record in `GEO`; other operators' evaluation is unchanged. Because of that
//! side effect the rule is never cached per value, folded at load time or skipped by
//! the prefilter. Through [`super::build`] (tests, tools) it is an ordinary operator
//! that matches when the address is found and writes nothing.

use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use maxminddb::{LookupResult, PathElement, Reader};

use super::{Captures, Operator, OperatorEnv, OperatorError};

/// The string fields v3 copies into `GEO`, in its order.
const STRING_FIELDS: [(&str, &[PathElement<'static>]); 5] = [
    (
        "COUNTRY_CODE",
        &[PathElement::Key("country"), PathElement::Key("iso_code")],
    ),
    (
        "COUNTRY_NAME",
        &[
            PathElement::Key("country"),
            PathElement::Key("names"),
            PathElement::Key("en"),
        ],
    ),
    (
        "COUNTRY_CONTINENT",
        &[
            PathElement::Key("continent"),
            PathElement::Key("names"),
            PathElement::Key("en"),
        ],
    ),
    (
        "CITY",
        &[
            PathElement::Key("city"),
            PathElement::Key("names"),
            PathElement::Key("en"),
        ],
    ),
    (
        "POSTAL_CODE",
        &[PathElement::Key("postal"), PathElement::Key("code")],
    ),
];

/// The numeric fields, after the strings.
const NUMBER_FIELDS: [(&str, &[PathElement<'static>]); 2] = [
    (
        "LATITUDE",
        &[PathElement::Key("location"), PathElement::Key("latitude")],
    ),
    (
        "LONGITUDE",
        &[PathElement::Key("location"), PathElement::Key("longitude")],
    ),
];

/// Why `SecGeoLookupDb` could not be loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum GeoDbError {
    /// The file could not be read (missing, unreadable, not a regular file).
    Read {
        /// The path as resolved.
        path: PathBuf,
        /// The reason.
        reason: String,
    },
    /// The file is not a MaxMind DB file.
    Invalid {
        /// The path as resolved.
        path: PathBuf,
        /// The reader's reason.
        reason: String,
    },
}

impl fmt::Display for GeoDbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GeoDbError::Read { path, reason } => write!(
                f,
                "cannot read the GeoIP database `{}`: {reason}",
                path.display()
            ),
            GeoDbError::Invalid { path, reason } => write!(
                f,
                "`{}` is not a MaxMind DB (GeoIP2/GeoLite2) file: {reason}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for GeoDbError {}

/// A MaxMind DB file (`SecGeoLookupDb`), read once into memory.
pub struct GeoDb {
    path: PathBuf,
    reader: Reader<Vec<u8>>,
}

impl fmt::Debug for GeoDb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeoDb")
            .field("path", &self.path)
            .field("database_type", &self.reader.metadata().database_type)
            .finish()
    }
}

impl GeoDb {
    /// Reads and checks a MaxMind DB file (its metadata and the layout of its search
    /// tree; records are decoded at lookup time).
    pub fn open(path: &Path) -> Result<GeoDb, GeoDbError> {
        let read_error = |reason: String| GeoDbError::Read {
            path: path.to_path_buf(),
            reason,
        };
        let meta = std::fs::metadata(path).map_err(|e| read_error(e.to_string()))?;
        if !meta.is_file() {
            return Err(read_error("not a regular file".to_string()));
        }
        let bytes = std::fs::read(path).map_err(|e| read_error(e.to_string()))?;
        Self::from_bytes(path, bytes)
    }

    /// A database from the bytes of a file (`path` names it in messages).
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<GeoDb, GeoDbError> {
        let reader = Reader::from_source(bytes).map_err(|e| GeoDbError::Invalid {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        Ok(GeoDb {
            path: path.to_path_buf(),
            reader,
        })
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The metadata's `database_type` (`GeoLite2-City`, ...).
    pub fn database_type(&self) -> &str {
        &self.reader.metadata().database_type
    }

    /// The record of `input` (an address as text), if the database has one.
    fn find(&self, input: &[u8]) -> Option<LookupResult<'_, Vec<u8>>> {
        let ip: IpAddr = std::str::from_utf8(input).ok()?.parse().ok()?;
        // Errors (an IPv6 address in an IPv4-only database, a damaged tree) are
        // "not found", as v3's `mmdb_error` is.
        let found = self.reader.lookup(ip).ok()?;
        found.has_data().then_some(found)
    }

    /// Looks `input` up: the `GEO` fields of its record, or `None` when the input is
    /// not an address or the database has no record for it.
    pub fn lookup(&self, input: &[u8]) -> Option<GeoRecord> {
        let found = self.find(input)?;
        let mut record = GeoRecord::default();
        for (key, path) in STRING_FIELDS {
            if let Ok(Some(v)) = found.decode_path::<&str>(path) {
                record.fields.push((key, v.to_string()));
            }
        }
        for (key, path) in NUMBER_FIELDS {
            if let Ok(Some(v)) = found.decode_path::<f64>(path) {
                record.fields.push((key, format_double(v)));
            }
        }
        Some(record)
    }
}

/// The `GEO` members a lookup found, in the order v3 sets them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GeoRecord {
    fields: Vec<(&'static str, String)>,
}

impl GeoRecord {
    /// The members (upper-case key, value).
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.fields.iter().map(|(k, v)| (*k, v.as_str()))
    }

    /// One member by key (`COUNTRY_CODE`, ASCII case ignored).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    }

    /// How many members were found.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the record had none of the fields (the lookup still matched).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

/// A double as C++'s `std::to_string` writes it (`printf("%f")`: six decimals,
/// `nan` / `inf`).
fn format_double(v: f64) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    format!("{v:.6}")
}

/// The `@geoLookup` operator: the shared database.
#[derive(Debug, Clone)]
pub struct GeoLookup {
    db: Arc<GeoDb>,
}

impl GeoLookup {
    /// The operator over the database of `SecGeoLookupDb`; an error when none is
    /// configured.
    pub(crate) fn new(env: &OperatorEnv) -> Result<Self, OperatorError> {
        match &env.geo_db {
            Some(db) => Ok(GeoLookup { db: Arc::clone(db) }),
            None => Err(OperatorError::Unsupported(
                "needs a GeoIP database, and no SecGeoLookupDb is configured (add \
                 `SecGeoLookupDb /path/to/GeoLite2-City.mmdb`)"
                    .to_string(),
            )),
        }
    }

    /// Looks `input` up (see [`GeoDb::lookup`]).
    pub fn lookup(&self, input: &[u8]) -> Option<GeoRecord> {
        self.db.lookup(input)
    }

    /// The database.
    pub fn db(&self) -> &GeoDb {
        &self.db
    }
}

impl Operator for GeoLookup {
    /// Whether the database has a record for the address (nothing is written: the
    /// engine fills `GEO` through [`GeoLookup::lookup`]).
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        self.db.find(input).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::format_double;

    #[test]
    fn doubles_are_formatted_as_cpp_to_string() {
        assert_eq!(format_double(51.5142), "51.514200");
        assert_eq!(format_double(-0.0931), "-0.093100");
        assert_eq!(format_double(0.0), "0.000000");
        assert_eq!(format_double(-0.0), "-0.000000");
        assert_eq!(format_double(90.0), "90.000000");
        // An exact tie rounds to even, as glibc's printf does.
        assert_eq!(format_double(0.0078125), "0.007812");
        assert_eq!(format_double(1e20), "100000000000000000000.000000");
        assert_eq!(format_double(f64::NAN), "nan");
        assert_eq!(format_double(f64::NEG_INFINITY), "-inf");
    }
}
