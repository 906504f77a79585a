//! `@pmFromFile` / `@pmf`: `@pm` with the phrases read from files, one per line.
//!
//! As libmodsecurity v3 (`pm_from_file.cc`): lines are taken as they are (no
//! trimming: trailing spaces or a `\r` are part of the phrase); a line is skipped when
//! it is empty or when `#` occurs in it after only whitespace. Paths are relative to
//! the rule file's directory. The argument may name several files separated by
//! spaces (`split(m_param, ' ')` in v3, so a path cannot contain a space). `https://`
//! URLs are not fetched
//! (Palisade makes no network requests) and are reported as unsupported. Matching is
//! the same `acmp` automaton as `@pm` (see [`super::acmp`]); with `capture`, TX:0 is
//! the phrase found.

use super::acmp::Acmp;
use super::pm::c_space;
use super::{Captures, Operator, OperatorEnv, OperatorError};

/// The `@pmFromFile` operator.
#[derive(Debug)]
pub(crate) struct PmFromFile {
    phrases: Acmp,
    literals: Vec<Vec<u8>>,
}

/// `PmFromFile::isComment`.
fn is_comment(line: &[u8]) -> bool {
    if line.is_empty() {
        return true;
    }
    match memchr::memchr(b'#', line) {
        Some(pos) => line[..pos].iter().all(|&b| c_space(b)),
        None => false,
    }
}

/// Reads the phrases of one file.
fn read_phrases(
    name: &str,
    env: &OperatorEnv,
    out: &mut Vec<Vec<u8>>,
) -> Result<(), OperatorError> {
    if name.starts_with("https://") || name.starts_with("http://") {
        return Err(OperatorError::Unsupported(format!(
            "@pmFromFile `{name}`: downloading phrase lists is not supported (Palisade \
             makes no network requests); use a local file"
        )));
    }
    let path = env.resolve(name);
    let data = std::fs::read(&path).map_err(|e| {
        OperatorError::InvalidArgument(format!(
            "@pmFromFile: cannot read `{}`: {e}",
            path.display()
        ))
    })?;
    // std::getline: split on '\n'; a final newline does not start another line.
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if data.ends_with(b"\n") {
        lines.pop();
    }
    out.extend(
        lines
            .into_iter()
            .filter(|l| !is_comment(l))
            .map(<[u8]>::to_vec),
    );
    Ok(())
}

impl PmFromFile {
    /// Reads the files and builds the automaton.
    pub(crate) fn new(argument: &str, env: &OperatorEnv) -> Result<Self, OperatorError> {
        let mut phrases = Vec::new();
        let mut files = 0;
        for name in argument.split(' ').filter(|n| !n.is_empty()) {
            read_phrases(name, env, &mut phrases)?;
            files += 1;
        }
        if files == 0 {
            return Err(OperatorError::InvalidArgument(
                "@pmFromFile: no file given".to_string(),
            ));
        }
        let literals: Vec<Vec<u8>> = phrases.iter().filter(|p| !p.is_empty()).cloned().collect();
        Ok(PmFromFile {
            phrases: Acmp::new(phrases),
            literals,
        })
    }
}

impl Operator for PmFromFile {
    fn required_literals(&self) -> Option<Vec<Vec<u8>>> {
        Some(self.literals.clone())
    }

    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool {
        self.phrases.matches(input, captures)
    }
}
