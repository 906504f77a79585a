//! `@rbl`: real-time block list lookup (a DNS query of the client address under the
//! given zone).
//!
//! Palisade makes no network requests, so this operator deliberately never matches:
//! a rule using it is loaded and evaluated, and simply never fires. This is a
//! documented offline behaviour, not an emulation of ModSecurity (which would query
//! DNS); the engine logs it when such a rule is loaded.

use super::{Captures, Operator, OperatorError};

/// The `@rbl` operator (offline: never matches).
#[derive(Debug)]
pub(crate) struct Rbl;

impl Rbl {
    /// Checks that a zone is given.
    pub(crate) fn new(argument: &str) -> Result<Self, OperatorError> {
        if argument.trim().is_empty() {
            return Err(OperatorError::InvalidArgument(
                "@rbl needs a block list zone (e.g. `sbl-xbl.spamhaus.org`)".to_string(),
            ));
        }
        Ok(Rbl)
    }
}

impl Operator for Rbl {
    fn evaluate(&self, _input: &[u8], _captures: Option<&mut Captures>) -> bool {
        false
    }
}
