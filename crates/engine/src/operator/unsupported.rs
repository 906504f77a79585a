//! Operators that Palisade does not run, with the reason reported by
//! [`super::build`] as [`OperatorError::Unsupported`]. None of them is used by the
//! OWASP Core Rule Set; a rule set that needs one fails to load with this message
//! instead of silently never matching.

use super::OperatorError;

/// The error for an operator that cannot be run (by canonical name).
pub(crate) fn reason(name: &str) -> OperatorError {
    let why = match name {
        "inspectFile" => "it runs an external program on uploaded files, which Palisade never does",
        "fuzzyHash" => "ssdeep fuzzy hashing is not built into Palisade",
        "gsbLookup" => {
            "Google Safe Browsing lookups need the network, and libmodsecurity v3 does not \
             implement it either"
        }
        "rsub" => {
            "it rewrites stream data (STREAM_INPUT_BODY/STREAM_OUTPUT_BODY), which Palisade \
             does not expose, and libmodsecurity v3 does not implement it either"
        }
        "validateHash" => {
            "hash-based link signing (SecHashEngine) is not supported, and libmodsecurity v3 \
             does not implement it either"
        }
        _ => "it is not implemented",
    };
    OperatorError::Unsupported(format!("operator `@{name}` is not supported: {why}"))
}
