//! Request corpora: the JSON array of `../shared/bench/standard-requests.json`, or
//! JSON Lines with one request per line (`method`, `target` or `uri`, `version`,
//! `headers` as `[name, value]` pairs, `body`, and optional `name`/`class` and
//! `resp_len`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One request of a corpus.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Request {
    /// A name (R1, R2, ...) or class (benign, attack/sqli, ...) to report by.
    #[serde(default, alias = "class")]
    pub name: String,
    /// The method.
    pub method: String,
    /// The request target.
    #[serde(alias = "uri")]
    pub target: String,
    /// The HTTP version (default HTTP/1.1).
    #[serde(default = "default_version")]
    pub version: String,
    /// Headers in order.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body.
    #[serde(default)]
    pub body: String,
    /// Size of the backend's response body.
    #[serde(default = "default_resp_len")]
    pub resp_len: usize,
}

fn default_version() -> String {
    "HTTP/1.1".into()
}

fn default_resp_len() -> usize {
    64
}

/// Why a corpus could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CorpusError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A line or the array is not a valid request.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line (1 for a JSON array).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Loads a corpus: a JSON array (first non-blank byte `[`) or JSON Lines.
pub fn load(path: &Path) -> Result<Vec<Request>, CorpusError> {
    let io = |source| CorpusError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut reader = BufReader::new(file);
    let first = reader
        .fill_buf()
        .map_err(io)?
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace());
    if first == Some(b'[') {
        return serde_json::from_reader(reader).map_err(|e| CorpusError::Parse {
            path: path.to_path_buf(),
            line: e.line(),
            message: e.to_string(),
        });
    }
    let mut out = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        let r: Request = serde_json::from_str(&line).map_err(|e| CorpusError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        out.push(r);
    }
    Ok(out)
}
