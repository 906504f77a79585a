//! `@ipMatchFromFile` / `@ipMatchF`: `@ipMatch` with the addresses and ranges read from
//! a file.
//!
//! As libmodsecurity v3 (`IpTree::addFromBuffer`): on each line, everything from the
//! first `#` on is a comment, and the rest is a comma-separated list like the argument
//! of `@ipMatch` (so empty lines are fine); an invalid entry makes the rule invalid.
//! One deliberate leniency: whitespace around entries is trimmed (ModSecurity would
//! refuse to load such a file). The path is relative to the rule file's directory.
//! `https://` URLs are not fetched (Palisade makes no network requests): they are
//! reported as unsupported. A file with no entries never matches.

use super::ip_match::IpSet;
use super::{Captures, Operator, OperatorEnv, OperatorError};

/// The `@ipMatchFromFile` operator.
#[derive(Debug)]
pub(crate) struct IpMatchFromFile {
    set: IpSet,
}

impl IpMatchFromFile {
    /// Reads the file.
    pub(crate) fn new(argument: &str, env: &OperatorEnv) -> Result<Self, OperatorError> {
        let name = argument.trim();
        if name.starts_with("https://") || name.starts_with("http://") {
            return Err(OperatorError::Unsupported(format!(
                "@ipMatchFromFile `{name}`: downloading the list is not supported \
                 (Palisade makes no network requests); use a local file"
            )));
        }
        let path = env.resolve(name);
        let data = std::fs::read(&path).map_err(|e| {
            OperatorError::InvalidArgument(format!(
                "@ipMatchFromFile: cannot read `{}`: {e}",
                path.display()
            ))
        })?;
        let text = String::from_utf8_lossy(&data);
        let mut set = IpSet::default();
        let what = format!("@ipMatchFromFile `{}`", path.display());
        for line in text.split('\n') {
            let line = line.split('#').next().unwrap_or("");
            for entry in line.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                set.add(entry, &what)?;
            }
        }
        Ok(IpMatchFromFile { set })
    }
}

impl Operator for IpMatchFromFile {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        self.set.contains(input)
    }
}
