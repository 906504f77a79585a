//! [`Dtd`]: a DTD file loaded once, validating documents as libxml2's
//! `xmlValidateDtd` does (the document's own DOCTYPE, if any, is ignored).

use std::fmt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Mutex, PoisonError};

use crate::diagnostics::{Capture, FilesAllowed};
use crate::document::Document;
use crate::{ffi, load, Invalid, LoadError};

/// A parsed DTD.
///
/// Validation takes a lock: libxml2 compiles each element's content model into
/// the DTD the first time an element of that name is validated, so concurrent
/// validations against one DTD are not safe. Each validation uses its own
/// parsed document and validation context.
pub struct Dtd {
    dtd: NonNull<ffi::xmlDtd>,
    lock: Mutex<()>,
    path: PathBuf,
}

// SAFETY: the `xmlDtd` is owned by this value alone (freed in `Drop`); libxml2
// objects may move between threads once `xmlInitParser` has run (done before
// any load), and the only use after loading, `xmlValidateDtd`, runs under
// `lock`, so shared references never touch the DTD concurrently.
unsafe impl Send for Dtd {}
// SAFETY: as for `Send`: all access through `&Dtd` is serialised by `lock`.
unsafe impl Sync for Dtd {}

impl Dtd {
    /// Loads and parses the DTD file at `path`. Parameter entities of the DTD may
    /// refer to local files; network locations are refused.
    pub fn load(path: &Path) -> Result<Dtd, LoadError> {
        let c_path = load::readable_c_path(path)?;
        let _files = FilesAllowed::enter();
        let capture = Capture::start();
        // SAFETY: `c_path` is a NUL-terminated string alive for the call; a null
        // external ID is allowed. libxml2 is initialised (`FilesAllowed::enter`).
        let dtd = unsafe { ffi::xmlParseDTD(std::ptr::null(), c_path.as_ptr().cast()) };
        let messages = capture.finish();
        match NonNull::new(dtd) {
            Some(dtd) => Ok(Dtd {
                dtd,
                lock: Mutex::new(()),
                path: path.to_path_buf(),
            }),
            None => Err(LoadError::Invalid {
                path: path.to_path_buf(),
                what: "DTD",
                messages,
            }),
        }
    }

    /// The file this DTD was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Parses `xml` and validates it against this DTD.
    pub fn validate(&self, xml: &[u8]) -> Result<(), Invalid> {
        let capture = Capture::start();
        let Some(doc) = Document::parse(xml) else {
            return Err(Invalid::NotWellFormed(capture.finish()));
        };
        let valid = {
            let _lock = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            // SAFETY: no arguments; the context is freed below.
            let ctxt = unsafe { ffi::xmlNewValidCtxt() };
            if ctxt.is_null() {
                false
            } else {
                // SAFETY: `ctxt`, `doc` and `self.dtd` are live; the DTD is only
                // used under `lock`; libxml2 swaps the DTD into the document for
                // the call and restores the document's own subsets before
                // returning. Its zeroed error callbacks send messages to the
                // thread's handler, the capture.
                let rc = unsafe { ffi::xmlValidateDtd(ctxt, doc.as_ptr(), self.dtd.as_ptr()) };
                // SAFETY: `ctxt` came from `xmlNewValidCtxt` and is freed once.
                unsafe { ffi::xmlFreeValidCtxt(ctxt) };
                rc == 1
            }
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

/// At least one message.
pub(crate) fn non_empty(mut messages: Vec<String>) -> Vec<String> {
    if messages.is_empty() {
        messages.push("validation failed".to_string());
    }
    messages
}

impl Drop for Dtd {
    fn drop(&mut self) {
        // SAFETY: `dtd` came from `xmlParseDTD`, belongs to no document (libxml2
        // detaches it) and is freed only here.
        unsafe { ffi::xmlFreeDtd(self.dtd.as_ptr()) };
    }
}

impl fmt::Debug for Dtd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dtd").field("path", &self.path).finish()
    }
}
