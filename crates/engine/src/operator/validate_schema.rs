//! `@validateSchema FILE`: matches when the XML request body is not valid
//! against the XML Schema (XSD) in `FILE` (the path is relative to the rule
//! file's directory).
//!
//! As libmodsecurity v3 (`src/operators/validate_schema.cc`), for the documented
//! form `SecRule XML "@validateSchema /path/to/file.xsd"`: the rule fires when
//! the document is not valid against the schema, when it is not well-formed, and
//! when there is no document. The schema is compiled once at load time (its
//! local `xs:include` / `xs:import` files are read then; network locations are
//! refused) and shared by concurrent validations, each with its own libxml2
//! validation context.
//!
//! Everything else — how the body reaches the operator through the bare `XML`
//! target, the cost (one libxml2 parse and validation per evaluation), the
//! load-time errors and the differences from v3 — is as for `@validateDTD`
//! (see `validate_dtd.rs`).

use super::xml_validation::{self, Grammar};
use super::{Operator, OperatorEnv, OperatorError};

/// Builds the operator (loads and compiles the schema file); refused without the `xml-validation`
/// feature (libxml2).
pub(crate) fn build(argument: &str, env: &OperatorEnv) -> Result<Box<dyn Operator>, OperatorError> {
    xml_validation::build(Grammar::Schema, argument, env)
}
