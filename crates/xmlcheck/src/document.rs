//! A request document parsed by libxml2 for one validation, freed on drop.
//!
//! Parse options: `XML_PARSE_NONET`, and errors and warnings suppressed (they
//! reach the [`Capture`](crate::diagnostics::Capture) instead). Deliberately
//! absent: `XML_PARSE_NOENT` (entities are not substituted), `XML_PARSE_DTDLOAD`
//! and `XML_PARSE_DTDATTR` (the document's external DTD subset is not read), and
//! `XML_PARSE_HUGE` (libxml2's limits on depth, name and text sizes and entity
//! amplification stay on). The process-wide entity loader refuses every external
//! resource while a request document is parsed, so a DOCTYPE naming a file or URL
//! is never read.

use std::ffi::c_int;
use std::ptr::{self, NonNull};

use crate::ffi;

/// A parsed document.
pub(crate) struct Document {
    doc: NonNull<ffi::xmlDoc>,
}

impl Document {
    /// Parses `xml`; `None` when it is not well-formed (or too large for
    /// libxml2's `int` length). Call inside a `Capture` to collect the reasons.
    pub(crate) fn parse(xml: &[u8]) -> Option<Document> {
        let len = c_int::try_from(xml.len()).ok()?;
        let options = ffi::XML_PARSE_NONET | ffi::XML_PARSE_NOERROR | ffi::XML_PARSE_NOWARNING;
        // SAFETY: `xml` is valid for `len` bytes for the duration of the call
        // (libxml2 copies what it keeps); null URL and encoding are allowed
        // (no base URL; encoding from the document itself).
        let doc = unsafe {
            ffi::xmlReadMemory(xml.as_ptr().cast(), len, ptr::null(), ptr::null(), options)
        };
        NonNull::new(doc).map(|doc| Document { doc })
    }

    /// The document, for libxml2 calls that borrow it.
    pub(crate) fn as_ptr(&self) -> *mut ffi::xmlDoc {
        self.doc.as_ptr()
    }
}

impl Drop for Document {
    fn drop(&mut self) {
        // SAFETY: `doc` came from `xmlReadMemory`, is owned by this value and
        // freed only here; no libxml2 object refers to it any more.
        unsafe { ffi::xmlFreeDoc(self.doc.as_ptr()) };
    }
}
