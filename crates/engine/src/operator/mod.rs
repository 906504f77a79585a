//! Operators (`@rx`, `@pm`, `@eq`, ...): one file per operator, built by name from the
//! one table of operator names in `seclang::names::OPERATORS`.
//!
//! Contract with the engine:
//! - [`build`] is called once per rule at load time with the operator's argument as
//!   written (after macro expansion when the argument has no macro). Arguments that
//!   contain macros (`@ge %{tx.threshold}`) are expanded per evaluation by the engine,
//!   which then calls [`build`] again with the expanded text (cheap for the operators
//!   CRS uses that way: eq/ge/gt/le/lt/streq/within/...); the engine caches results.
//! - Negation (`!@rx`) is applied by the engine, not here.
//! - [`Operator::evaluate`] receives the (already transformed) value. When `captures`
//!   is given (the rule has the `capture` action), the operator fills it the way
//!   ModSecurity fills TX:0-9.
//! - Nothing here panics on any input, and every operator runs in time linear in its
//!   input (the backtracking fallback of `@rx` is bounded by the match limit).
//!   Exception, kept for fidelity: `@verifyCPF`, `@verifySSN` and `@verifySVNR` search
//!   every suffix of the input as ModSecurity does (quadratic in the worst case); CRS
//!   uses none of them. `@validateDTD` and `@validateSchema` run libxml2 (crate
//!   `xmlcheck`, feature `xml-validation`): a parse and a validation of the request
//!   body per evaluation, bounded by libxml2's own limits.
//! - Everything is compiled in [`build`]; `evaluate` allocates nothing except, for some
//!   operators, to fill `captures` (and the rare backtracking fallback of `@rx`), and
//!   libxml2's document tree for `@validateDTD` / `@validateSchema`.
//!
//! Each operator follows libmodsecurity v3 (`src/operators/*.cc`) including its
//! quirks; the module docs of each file list them. Operators that cannot be run
//! faithfully here return [`OperatorError::Unsupported`] from [`build`] (never a
//! silent no-op).
//!
//! # Example
//!
//! ```
//! use engine::operator::{build, Captures, OperatorEnv};
//!
//! let env = OperatorEnv::default();
//! let op = build("rx", r"^(\d+)-(\d+)$", &env).unwrap();
//! let mut caps = Captures::default();
//! assert!(op.evaluate(b"10-20", Some(&mut caps)));
//! assert_eq!(caps.get(2), Some(&b"20"[..]));
//! assert!(!build("ge", "5", &env).unwrap().evaluate(b"4", None));
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod acmp;
mod begins_with;
mod contains;
mod contains_word;
mod detect_sqli;
mod detect_xss;
mod ends_with;
mod eq;
mod ge;
mod geo_lookup;
mod gt;
mod ip_match;
mod ip_match_from_file;
mod le;
mod lt;
mod no_match;
pub(crate) mod number;
pub(crate) mod pcre;
mod pm;
mod pm_from_file;
mod rbl;
mod regex;
mod rx;
mod rx_global;
mod streq;
mod strmatch;
mod unconditional_match;
mod unsupported;
mod validate_byte_range;
mod validate_dtd;
mod validate_schema;
mod validate_url_encoding;
mod validate_utf8_encoding;
mod verified;
mod verify_cc;
mod verify_cpf;
mod verify_ssn;
mod verify_svnr;
mod within;
mod xml_validation;

pub use geo_lookup::{GeoDb, GeoDbError, GeoLookup, GeoRecord};
pub use regex::DEFAULT_MATCH_LIMIT;

/// Capture groups filled by an operator: index 0 is the whole match (TX:0), 1-9 the
/// groups. Buffers are reused across evaluations.
#[derive(Debug, Default, Clone)]
pub struct Captures {
    slots: Vec<Vec<u8>>,
    len: usize,
    /// Bit i: group i took part in the match (a group that did not is unset, not
    /// empty: ModSecurity leaves TX:i as it was).
    present: u16,
}

impl Captures {
    /// Empties the captures (keeping buffers).
    pub fn clear(&mut self) {
        self.len = 0;
        self.present = 0;
    }

    /// Sets group `i` (0-9) to `bytes`.
    pub fn set(&mut self, i: usize, bytes: &[u8]) {
        if i > 9 {
            return;
        }
        while self.slots.len() <= i {
            self.slots.push(Vec::new());
        }
        let slot = &mut self.slots[i];
        slot.clear();
        slot.extend_from_slice(bytes);
        self.present |= 1 << i;
        self.len = self.len.max(i + 1);
    }

    /// One more than the highest group set (0 when nothing was captured).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was captured.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the captures and frees the group buffers holding more than
    /// `max` bytes (the others are kept for reuse).
    pub fn trim(&mut self, max: usize) {
        self.clear();
        for s in &mut self.slots {
            crate::buffers::shed(s, max);
        }
    }

    /// Heap bytes held by the group buffers.
    pub fn capacity_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Vec<u8>>()
            + self.slots.iter().map(Vec::capacity).sum::<usize>()
    }

    /// Group `i`, if it was set.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        (i < self.len && self.present & (1 << i) != 0).then(|| self.slots[i].as_slice())
    }
}

/// Load-time environment of operators.
#[derive(Debug, Clone, Default)]
pub struct OperatorEnv {
    /// Directory of the rule file, for relative `@pmFromFile` / `@ipMatchFromFile`
    /// paths (ModSecurity resolves them relative to the file that contains the rule).
    pub rule_dir: PathBuf,
    /// `SecPcreMatchLimit` (0: the default of 1000... as ModSecurity).
    ///
    /// Note: libmodsecurity v3 applies a match limit only when `SecPcreMatchLimit` is
    /// configured, otherwise PCRE's own default (10,000,000) is in force; 0 therefore
    /// means [`DEFAULT_MATCH_LIMIT`]. It bounds the backtracking fallback of `@rx`
    /// (linear-time patterns need no limit).
    pub match_limit: u64,
    /// The database of `SecGeoLookupDb`, opened once when the configuration is
    /// compiled, if configured.
    pub geo_db: Option<Arc<GeoDb>>,
}

impl OperatorEnv {
    /// Resolves a data file path relative to the rule's directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.rule_dir.join(p)
        }
    }
}

/// Why an operator could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OperatorError {
    /// The name is not an operator.
    Unknown(String),
    /// The argument is invalid (bad regex, bad IP range, unreadable file, ...).
    InvalidArgument(String),
    /// The operator is understood but cannot work here (with the reason).
    Unsupported(String),
}

impl fmt::Display for OperatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OperatorError::Unknown(n) => write!(f, "unknown operator `@{n}`"),
            OperatorError::InvalidArgument(m) => write!(f, "{m}"),
            OperatorError::Unsupported(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for OperatorError {}

/// A compiled operator.
pub trait Operator: Send + Sync + fmt::Debug {
    /// Whether `input` matches. Fills `captures` (when given) on a match.
    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool;

    /// For operators built on a regular expression (`@rx`, `@rxGlobal`, `@verifyCC`,
    /// `@verifyCPF`, `@verifySSN`, `@verifySVNR`): which engine runs it, so that
    /// `palisade check` can report patterns that needed the backtracking fallback.
    fn regex_engine(&self) -> Option<RegexEngine> {
        None
    }

    /// Literals of which at least one occurs (ASCII case-insensitively) in every
    /// input this operator matches, for the multi-pattern prefilter; `None` when
    /// there is no such set. An empty set means the operator never matches.
    fn required_literals(&self) -> Option<Vec<Vec<u8>>> {
        None
    }

    /// Byte sets every input this operator matches contains a byte of (see
    /// [`crate::prefilter::bytes`]); `None` when none is known.
    fn required_bytes(&self) -> Option<crate::prefilter::bytes::ByteReq> {
        None
    }

    /// The fewest bytes an input this operator matches holds (0: unknown).
    fn min_match_len(&self) -> usize {
        0
    }

    /// Bytes whose presence in an input admits it even without one of
    /// [`Operator::required_literals`]: every match holds a required literal or
    /// one of these bytes. `None`: every match holds a required literal.
    fn escape_bytes(&self) -> Option<crate::transform::triggers::ByteMask> {
        None
    }

    /// A test of the input's start that admits it even without one of
    /// [`Operator::required_literals`] or [`Operator::escape_bytes`]: every match
    /// holds a required literal or an escape byte, or begins at the input's
    /// start and is found there by this test (see
    /// [`crate::prefilter::anchored`]). `None`: no match needs it.
    fn anchored_start(&self) -> Option<std::sync::Arc<crate::prefilter::anchored::AnchoredStart>> {
        None
    }

    /// A test of the input's end that no input it matches fails (see
    /// [`crate::prefilter::anchored_end`]): a scan that admits the rule is
    /// overruled when it fails. `None`: no such test.
    fn anchored_end(&self) -> Option<std::sync::Arc<crate::prefilter::anchored_end::AnchoredEnd>> {
        None
    }
}

/// The engine that runs a regular expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegexEngine {
    /// The linear-time `regex` crate (the normal case).
    Linear,
    /// The backtracking `fancy-regex` fallback, bounded by the match limit.
    Backtracking {
        /// The construct that needed it (e.g. "look-ahead", "back-reference").
        reason: &'static str,
    },
}

/// Which engine `@rx pattern` would run on, without building a whole operator.
pub fn rx_engine(pattern: &str, env: &OperatorEnv) -> Result<RegexEngine, OperatorError> {
    regex::Pattern::compile(pattern, env.match_limit).map(|p| p.engine())
}

/// Builds the operator `name` (any ASCII case, as in `seclang::names::OPERATORS`) with
/// its argument.
///
/// Errors: [`OperatorError::Unknown`] for a name that is not an operator,
/// [`OperatorError::InvalidArgument`] for a bad argument (bad regex, bad IP range,
/// unreadable file, bad byte range, ...), [`OperatorError::Unsupported`] for operators
/// that cannot be run here (with the reason).
pub fn build(
    name: &str,
    argument: &str,
    env: &OperatorEnv,
) -> Result<Box<dyn Operator>, OperatorError> {
    let names = seclang::names::OPERATORS.iter().map(|o| o.0);
    let Some(canonical) = seclang::names::canonical(names, name) else {
        return Err(OperatorError::Unknown(name.to_string()));
    };
    Ok(match canonical {
        "beginsWith" => Box::new(begins_with::BeginsWith::new(argument)),
        "contains" => Box::new(contains::Contains::new(argument)),
        "containsWord" => Box::new(contains_word::ContainsWord::new(argument)),
        "detectSQLi" => Box::new(detect_sqli::DetectSqli),
        "detectXSS" => Box::new(detect_xss::DetectXss),
        "endsWith" => Box::new(ends_with::EndsWith::new(argument)),
        "eq" => Box::new(eq::Eq::new(argument)),
        "ge" => Box::new(ge::Ge::new(argument)),
        "gt" => Box::new(gt::Gt::new(argument)),
        "le" => Box::new(le::Le::new(argument)),
        "lt" => Box::new(lt::Lt::new(argument)),
        "geoLookup" => Box::new(geo_lookup::GeoLookup::new(env)?),
        "ipMatch" => Box::new(ip_match::IpMatch::new(argument)?),
        "ipMatchF" | "ipMatchFromFile" => {
            Box::new(ip_match_from_file::IpMatchFromFile::new(argument, env)?)
        }
        "noMatch" => Box::new(no_match::NoMatch),
        "pm" => Box::new(pm::Pm::new(argument)),
        "pmf" | "pmFromFile" => Box::new(pm_from_file::PmFromFile::new(argument, env)?),
        "rbl" => Box::new(rbl::Rbl::new(argument)?),
        "rx" => Box::new(rx::Rx::new(argument, env)?),
        "rxGlobal" => Box::new(rx_global::RxGlobal::new(argument, env)?),
        "streq" => Box::new(streq::StrEq::new(argument)),
        "strmatch" => Box::new(strmatch::StrMatch::new(argument)),
        "unconditionalMatch" => Box::new(unconditional_match::UnconditionalMatch),
        "validateByteRange" => Box::new(validate_byte_range::ValidateByteRange::new(argument)?),
        "validateDTD" => validate_dtd::build(argument, env)?,
        "validateSchema" => validate_schema::build(argument, env)?,
        "validateUrlEncoding" => Box::new(validate_url_encoding::ValidateUrlEncoding),
        "validateUtf8Encoding" => Box::new(validate_utf8_encoding::ValidateUtf8Encoding),
        "verifyCC" => Box::new(verify_cc::VerifyCc::new(argument, env)?),
        "verifyCPF" => Box::new(verify_cpf::new(argument, env)?),
        "verifySSN" => Box::new(verify_ssn::new(argument, env)?),
        "verifySVNR" => Box::new(verify_svnr::new(argument, env)?),
        "within" => Box::new(within::Within::new(argument)),
        other => return Err(unsupported::reason(other)),
    })
}
