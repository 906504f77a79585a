//! Checks shared by [`Dtd::load`](crate::Dtd::load) and
//! [`Schema::load`](crate::Schema::load): the file is readable, and its path is
//! a C string for libxml2.

use std::ffi::CString;
use std::path::Path;

use crate::LoadError;

/// Refuses a path that is not a readable regular file (libxml2's own message for
/// a missing file is vaguer), and returns it as a C string.
pub(crate) fn readable_c_path(path: &Path) -> Result<CString, LoadError> {
    let io = |source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(io(std::io::Error::other("not a regular file")));
    }
    std::fs::File::open(path).map_err(io)?;
    c_path(path).ok_or_else(|| LoadError::BadPath {
        path: path.to_path_buf(),
    })
}

#[cfg(unix)]
fn c_path(path: &Path) -> Option<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes()).ok()
}

#[cfg(not(unix))]
fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.to_str()?).ok()
}
