//! DTD and XML Schema validation with the system libxml2, for the SecLang
//! operators `@validateDTD` and `@validateSchema`.
//!
//! This crate is the only place in Palisade with `unsafe` code: a few libxml2
//! functions declared by hand (`ffi`, no bindgen, nothing downloaded; `build.rs`
//! links `libxml2` found with `pkg-config`), wrapped in a safe API:
//!
//! - [`Dtd::load`] / [`Schema::load`] parse a DTD or compile an XSD file once
//!   (when the rule set is loaded); a missing or invalid file is a [`LoadError`]
//!   naming the path and libxml2's reasons.
//! - [`Dtd::validate`] / [`Schema::validate`] parse a request document and
//!   validate it, returning [`Invalid`] with libxml2's messages when the document
//!   is not well-formed or not valid. Both types are `Send + Sync`; every call
//!   parses the document again and uses its own validation context.
//!
//! libxml2 prints nothing (its diagnostics are captured per call), never uses the
//! network, and never reads a file on behalf of a request document: the external
//! DTD subset of a document is not loaded, entities are not substituted, and the
//! process-wide entity loader refuses every external resource outside
//! [`Dtd::load`] / [`Schema::load`], where local files (includes of the rule
//! set's own DTDs and schemas) are allowed and `http://` / `ftp://` refused.
//! libxml2's default limits (nesting depth 256, entity amplification) stay on.
//!
//! # Example
//!
//! ```
//! use std::path::Path;
//! use xmlcheck::{Dtd, Invalid, Schema};
//!
//! let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
//! let dtd = Dtd::load(&data.join("note.dtd")).unwrap();
//! assert!(dtd.validate(b"<note><to>a</to><body>b</body></note>").is_ok());
//! assert!(matches!(dtd.validate(b"<note><body>b</body></note>"), Err(Invalid::NotValid(_))));
//!
//! let xsd = Schema::load(&data.join("note.xsd")).unwrap();
//! assert!(xsd.validate(b"<note><to>a</to><body>b</body></note>").is_ok());
//! assert!(matches!(xsd.validate(b"<note>"), Err(Invalid::NotWellFormed(_))));
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]

mod diagnostics;
mod document;
mod dtd;
mod error;
mod ffi;
mod load;
mod schema;

pub use dtd::Dtd;
pub use error::{Invalid, LoadError};
pub use schema::Schema;
