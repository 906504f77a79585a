//! The errors of this crate: a DTD or schema that cannot be loaded, and a
//! document that does not pass validation.

use std::fmt;
use std::path::PathBuf;

/// Why a DTD or an XML Schema could not be loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// The file cannot be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The path cannot be handed to libxml2 (it contains a NUL byte, or is not
    /// UTF-8 on a platform where paths are not bytes).
    BadPath {
        /// The file.
        path: PathBuf,
    },
    /// libxml2 refused the file.
    Invalid {
        /// The file.
        path: PathBuf,
        /// What the file should have been: `DTD` or `XML Schema`.
        what: &'static str,
        /// libxml2's messages (possibly empty).
        messages: Vec<String>,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io { path, source } => {
                write!(f, "cannot read `{}`: {source}", path.display())
            }
            LoadError::BadPath { path } => {
                write!(
                    f,
                    "`{}`: the path cannot be passed to libxml2",
                    path.display()
                )
            }
            LoadError::Invalid {
                path,
                what,
                messages,
            } => {
                write!(f, "`{}` is not a valid {what}", path.display())?;
                if !messages.is_empty() {
                    write!(f, ": {}", messages.join("; "))?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why a document did not pass validation, with libxml2's messages (at most 16,
/// then a line counting the others).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Invalid {
    /// The bytes are not a well-formed XML document for libxml2 (this includes
    /// an empty input and documents beyond libxml2's default limits, such as
    /// elements nested more than 256 deep).
    NotWellFormed(Vec<String>),
    /// The document is well-formed but not valid against the DTD or schema (or
    /// libxml2 could not complete the validation).
    NotValid(Vec<String>),
}

impl Invalid {
    /// libxml2's messages.
    pub fn messages(&self) -> &[String] {
        match self {
            Invalid::NotWellFormed(m) | Invalid::NotValid(m) => m,
        }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, messages) = match self {
            Invalid::NotWellFormed(m) => ("the document is not well-formed XML", m),
            Invalid::NotValid(m) => ("the document is not valid", m),
        };
        f.write_str(what)?;
        if !messages.is_empty() {
            write!(f, ": {}", messages.join("; "))?;
        }
        Ok(())
    }
}

impl std::error::Error for Invalid {}
