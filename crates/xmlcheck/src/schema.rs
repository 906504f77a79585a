//! [`Schema`]: an XML Schema (XSD) file compiled once, validating documents as
//! libxml2's `xmlSchemaValidateDoc` does.

use std::fmt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use crate::diagnostics::{Capture, FilesAllowed};
use crate::document::Document;
use crate::dtd::non_empty;
use crate::{ffi, load, Invalid, LoadError};

/// A compiled XML Schema.
///
/// libxml2 does not write to a compiled schema while validating (validation
/// state lives in a per-call validation context), so validations run
/// concurrently without a lock.
pub struct Schema {
    schema: NonNull<ffi::xmlSchema>,
    path: PathBuf,
}

// SAFETY: the `xmlSchema` is owned by this value alone (freed in `Drop`);
// libxml2 objects may move between threads once `xmlInitParser` has run.
unsafe impl Send for Schema {}
// SAFETY: after compilation the schema is only read: libxml2 keeps all
// validation state in the `xmlSchemaValidCtxt`, and each validation has its own
// context and document (the schema's string dictionary is reference-counted
// under libxml2's own lock).
unsafe impl Sync for Schema {}

impl Schema {
    /// Loads and compiles the XML Schema file at `path`. Its `xs:include` and
    /// `xs:import` may name local files; network locations are refused.
    pub fn load(path: &Path) -> Result<Schema, LoadError> {
        let c_path = load::readable_c_path(path)?;
        let _files = FilesAllowed::enter();
        let capture = Capture::start();
        // SAFETY: `c_path` is a NUL-terminated string alive for the call.
        let parser = unsafe { ffi::xmlSchemaNewParserCtxt(c_path.as_ptr()) };
        let schema = if parser.is_null() {
            std::ptr::null_mut()
        } else {
            // SAFETY: `parser` is live; the handler and its context (the capture's
            // sink) outlive the parser, which is freed below before the capture.
            unsafe {
                ffi::xmlSchemaSetParserStructuredErrors(
                    parser,
                    Capture::handler(),
                    capture.context(),
                )
            };
            // SAFETY: `parser` is live and used by this thread only.
            let schema = unsafe { ffi::xmlSchemaParse(parser) };
            // SAFETY: `parser` came from `xmlSchemaNewParserCtxt` and is freed
            // once; the schema does not refer to it.
            unsafe { ffi::xmlSchemaFreeParserCtxt(parser) };
            schema
        };
        let messages = capture.finish();
        match NonNull::new(schema) {
            Some(schema) => Ok(Schema {
                schema,
                path: path.to_path_buf(),
            }),
            None => Err(LoadError::Invalid {
                path: path.to_path_buf(),
                what: "XML Schema",
                messages,
            }),
        }
    }

    /// The file this schema was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Parses `xml` and validates it against this schema.
    pub fn validate(&self, xml: &[u8]) -> Result<(), Invalid> {
        let capture = Capture::start();
        let Some(doc) = Document::parse(xml) else {
            return Err(Invalid::NotWellFormed(capture.finish()));
        };
        // SAFETY: the schema is live and only read by validation contexts.
        let ctxt = unsafe { ffi::xmlSchemaNewValidCtxt(self.schema.as_ptr()) };
        let valid = if ctxt.is_null() {
            false
        } else {
            // SAFETY: `ctxt` is live; the handler's context (the capture's sink)
            // outlives `ctxt`, which is freed below before the capture.
            unsafe {
                ffi::xmlSchemaSetValidStructuredErrors(ctxt, Capture::handler(), capture.context())
            };
            // SAFETY: `ctxt` and `doc` are live and used by this thread only.
            let rc = unsafe { ffi::xmlSchemaValidateDoc(ctxt, doc.as_ptr()) };
            // SAFETY: `ctxt` came from `xmlSchemaNewValidCtxt` and is freed once.
            unsafe { ffi::xmlSchemaFreeValidCtxt(ctxt) };
            rc == 0
        };
        drop(doc);
        let messages = capture.finish();
        if valid {
            Ok(())
        } else {
            Err(Invalid::NotValid(non_empty(messages)))
        }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // SAFETY: `schema` came from `xmlSchemaParse` and is freed only here; no
        // validation context outlives a `validate` call.
        unsafe { ffi::xmlSchemaFree(self.schema.as_ptr()) };
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema").field("path", &self.path).finish()
    }
}
