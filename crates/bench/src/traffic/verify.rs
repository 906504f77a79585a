//! Checking generated requests against the CRS in-process: benign requests must pass
//! (a false positive is removed and listed with the rules that fired), attack
//! requests must be blocked.

use std::path::Path;
use std::sync::Arc;

use engine::{Connection, Program, Transaction};

use crate::corpus::Request;

/// The outcome of a request's phases 1 and 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The engine intervened (deny, drop or redirect).
    pub blocked: bool,
    /// Ids of the rules that matched, in order (anomaly-scoring rules included).
    pub rules: Vec<u32>,
}

/// Why the CRS could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The CRS directory could not be read.
    #[error("reading the CRS at {path}: {source}")]
    Io {
        /// The directory.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The rules did not compile.
    #[error("compiling the CRS: {0}")]
    Compile(String),
}

/// The CRS at one paranoia level, engine On, compiled once.
#[derive(Debug, Clone)]
pub struct Verifier {
    program: Arc<Program>,
}

impl Verifier {
    /// Compiles the CRS in `crs_dir` with `ftw::crs_config` at `paranoia`.
    pub fn crs(crs_dir: &Path, paranoia: u8) -> Result<Self, VerifyError> {
        let text = ftw::crs_config::crs_config(crs_dir, paranoia, false).map_err(|source| {
            VerifyError::Io {
                path: crs_dir.to_path_buf(),
                source,
            }
        })?;
        let program = Program::from_str("crs.conf", &text)
            .map_err(|e| VerifyError::Compile(e.to_string()))?;
        Ok(Verifier { program })
    }

    /// A verifier over an already compiled program.
    pub fn new(program: Arc<Program>) -> Self {
        Verifier { program }
    }

    /// Runs the request through phases 1 and 2.
    pub fn check(&self, req: &Request) -> Verdict {
        let mut tx = Transaction::new(Arc::clone(&self.program), &Connection::default());
        tx.process_uri(&req.target, &req.method, &req.version);
        for (k, v) in &req.headers {
            tx.add_request_header(k.as_bytes(), v.as_bytes());
        }
        let mut blocked = tx.process_request_headers().is_some();
        if !blocked {
            tx.append_request_body(req.body.as_bytes());
            blocked = tx.process_request_body().is_some();
        }
        let rules = tx.matched_rules().iter().map(|m| m.id).collect();
        Verdict { blocked, rules }
    }
}
