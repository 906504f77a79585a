//! What `@validateDTD` and `@validateSchema` share: loading the grammar file once
//! at build time (a missing or invalid file is an [`OperatorError::InvalidArgument`]
//! with the path and libxml2's reason), the evaluation (match = the input is not a
//! valid document against the grammar), and the refusal when Palisade is built
//! without the `xml-validation` feature (libxml2). The behaviour of each operator
//! is documented in its own file (`validate_dtd.rs`, `validate_schema.rs`).

use super::{Operator, OperatorEnv, OperatorError};

/// The kind of grammar an XML-validating operator checks its input against.
#[derive(Clone, Copy, Debug)]
pub(super) enum Grammar {
    /// A DTD (`@validateDTD`).
    Dtd,
    /// An XML Schema, XSD (`@validateSchema`).
    Schema,
}

impl Grammar {
    /// The operator's SecLang name (named in the refusal without libxml2).
    #[cfg(not(feature = "xml-validation"))]
    fn operator_name(self) -> &'static str {
        match self {
            Grammar::Dtd => "validateDTD",
            Grammar::Schema => "validateSchema",
        }
    }
}

/// Builds the operator: loads the `grammar` file named by `argument` (trimmed,
/// relative to the rule file's directory).
#[cfg(feature = "xml-validation")]
pub(super) fn build(
    grammar: Grammar,
    argument: &str,
    env: &OperatorEnv,
) -> Result<Box<dyn Operator>, OperatorError> {
    let path = env.resolve(argument.trim());
    let loaded = match grammar {
        Grammar::Dtd => xmlcheck::Dtd::load(&path).map(Loaded::Dtd),
        Grammar::Schema => xmlcheck::Schema::load(&path).map(Loaded::Schema),
    };
    match loaded {
        Ok(loaded) => Ok(Box::new(ValidateXml { loaded })),
        Err(e) => Err(OperatorError::InvalidArgument(e.to_string())),
    }
}

/// Without libxml2: refused with the reason.
#[cfg(not(feature = "xml-validation"))]
pub(super) fn build(
    grammar: Grammar,
    _argument: &str,
    _env: &OperatorEnv,
) -> Result<Box<dyn Operator>, OperatorError> {
    Err(OperatorError::Unsupported(format!(
        "operator `@{}` is not supported: Palisade was built without the \
         `xml-validation` feature (libxml2)",
        grammar.operator_name()
    )))
}

/// A loaded grammar.
#[cfg(feature = "xml-validation")]
#[derive(Debug)]
enum Loaded {
    Dtd(xmlcheck::Dtd),
    Schema(xmlcheck::Schema),
}

/// The `@validateDTD` / `@validateSchema` operator.
#[cfg(feature = "xml-validation")]
#[derive(Debug)]
struct ValidateXml {
    loaded: Loaded,
}

#[cfg(feature = "xml-validation")]
impl Operator for ValidateXml {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut super::Captures>) -> bool {
        let valid = match &self.loaded {
            Loaded::Dtd(dtd) => dtd.validate(input),
            Loaded::Schema(schema) => schema.validate(input),
        };
        valid.is_err()
    }
}
