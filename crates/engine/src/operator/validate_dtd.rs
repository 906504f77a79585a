//! `@validateDTD FILE`: matches when the XML request body is not valid against
//! the DTD in `FILE` (the path is relative to the rule file's directory).
//!
//! As libmodsecurity v3 (`src/operators/validate_dtd.cc`), for the documented
//! form `SecRule XML "@validateDTD /path/to/file.dtd"`: the rule fires when the
//! document is not valid against the DTD, when it is not well-formed, and when
//! there is no document (the XML body processor failed). The document's own
//! DOCTYPE is ignored (libxml2's `xmlValidateDtd`).
//!
//! How the document reaches the operator: the bare `XML` target yields the raw
//! request body when the XML body processor parsed it, and one empty value when
//! the processor ran and failed (see `transaction/resolve.rs`); the operator
//! parses its input again with libxml2 (`xmlcheck`: no network, no entity
//! substitution, no external DTD subset, libxml2's default limits) and
//! validates it. A rule with this operator therefore costs one libxml2 parse
//! and validation of the body per evaluation, and validations against one DTD
//! are serialised (libxml2 completes a DTD's content models lazily). The result
//! is a function of the input bytes alone, so the operator is value-pure.
//!
//! Differences from v3, each stricter or more predictable:
//! - v3 only checks that the file exists when loading and parses the DTD at every
//!   evaluation (a broken DTD then makes every request match); here the DTD is
//!   parsed once, and a missing or invalid file fails the rule set's loading
//!   with the path and libxml2's reason.
//! - v3 ignores its input and validates the transaction's XML document whatever
//!   the target; here the input is what is validated (for `XML`, the same
//!   document). Transformations are not applied to these operators' input
//!   (`compile.rs`), as v3's result does not depend on them either.
//! - v3's bare `XML` yields a value even when the XML processor never ran (so
//!   the rule fires on every request without an XML body); here such requests
//!   yield no value and the rule does not run, as in ModSecurity v2 ("this
//!   operator requires request body to be processed as XML").
//!
//! Without the `xml-validation` feature (libxml2), the operator is refused at
//! load time.

use super::xml_validation::{self, Grammar};
use super::{Operator, OperatorEnv, OperatorError};

/// Builds the operator (loads and parses the DTD file); refused without the `xml-validation`
/// feature (libxml2).
pub(crate) fn build(argument: &str, env: &OperatorEnv) -> Result<Box<dyn Operator>, OperatorError> {
    xml_validation::build(Grammar::Dtd, argument, env)
}
