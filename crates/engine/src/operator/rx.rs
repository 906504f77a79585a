//! `@rx`: regular expression match, with ModSecurity v3's PCRE semantics.
//!
//! The pattern is compiled once (see [`super::regex`]): `.` matches any byte including
//! newlines, `^`/`$` match at line boundaries (`PCRE_DOTALL | PCRE_MULTILINE`), and
//! matching is on bytes with ASCII-only classes and case folding (no UTF mode). With
//! `capture`, the first match fills TX:0 (whole match) and TX:1-9 (groups that took
//! part in the match). An empty pattern matches everything and captures nothing, as in
//! libmodsecurity.

use super::regex::Pattern;
use super::{Captures, Operator, OperatorEnv, OperatorError, RegexEngine};
use crate::prefilter::bytes::ByteReq;

/// The `@rx` operator.
#[derive(Debug)]
pub(crate) struct Rx {
    /// `None` for the empty pattern.
    pattern: Option<Pattern>,
    /// Literals every match contains, unless it holds an escape byte (for the
    /// prefilter).
    literals: Option<crate::prefilter::RequiredLiterals>,
    /// Bytes every match contains (for the prefilter).
    bytes: Option<ByteReq>,
    /// The shortest match's length in bytes (0: unknown).
    min_len: usize,
    /// A test of the value's end every match passes (for the prefilter).
    end: Option<std::sync::Arc<crate::prefilter::anchored_end::AnchoredEnd>>,
    /// The pattern is `^.*$` (CRS's idiom for "capture the whole value", in 30
    /// rules): with `PCRE_DOTALL` it matches every value, whole, so no search.
    whole: bool,
}

impl Rx {
    /// Compiles the pattern.
    pub(crate) fn new(argument: &str, env: &OperatorEnv) -> Result<Self, OperatorError> {
        let pattern = if argument.is_empty() {
            None
        } else {
            Some(Pattern::compile(argument, env.match_limit)?)
        };
        let (literals, bytes, min_len, end) =
            match super::pcre::translate(argument, super::pcre::Dialect::Bytes) {
                super::pcre::Translation::Pattern(p) if !argument.is_empty() => {
                    let literals = crate::prefilter::regex_required(&p);
                    // An end test only for a pattern admitted by escape bytes,
                    // which benign values hold: a test costs every scan a little.
                    let end = literals
                        .as_ref()
                        .and_then(|l| l.escape)
                        .and_then(|_| crate::prefilter::regex_anchored_end(&p));
                    (
                        literals,
                        crate::prefilter::bytes::regex_bytes(&p),
                        crate::prefilter::regex_min_len(&p),
                        end,
                    )
                }
                _ => (None, None, 0, None),
            };
        Ok(Rx {
            pattern,
            literals,
            bytes,
            min_len,
            end: end.map(std::sync::Arc::new),
            whole: argument == "^.*$",
        })
    }
}

impl Operator for Rx {
    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool {
        let Some(pattern) = &self.pattern else {
            return true;
        };
        if self.whole {
            if let Some(c) = captures {
                c.clear();
                c.set(0, input);
            }
            return true;
        }
        // Most values do not match: decide with the fast (DFA) search first and run
        // the slower capturing search only for a match.
        if !pattern.is_match(input) {
            return false;
        }
        match captures {
            Some(c) => pattern.captures_first(input, c),
            None => true,
        }
    }

    fn required_literals(&self) -> Option<Vec<Vec<u8>>> {
        self.literals.as_ref().map(|r| r.literals.clone())
    }

    fn escape_bytes(&self) -> Option<crate::transform::triggers::ByteMask> {
        self.literals.as_ref()?.escape
    }

    fn anchored_start(&self) -> Option<std::sync::Arc<crate::prefilter::anchored::AnchoredStart>> {
        self.literals.as_ref()?.anchored.clone()
    }

    fn anchored_end(&self) -> Option<std::sync::Arc<crate::prefilter::anchored_end::AnchoredEnd>> {
        self.end.clone()
    }

    fn required_bytes(&self) -> Option<ByteReq> {
        self.bytes.clone()
    }

    fn min_match_len(&self) -> usize {
        self.min_len
    }

    fn regex_engine(&self) -> Option<RegexEngine> {
        Some(
            self.pattern
                .as_ref()
                .map_or(RegexEngine::Linear, Pattern::engine),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `^.*$` shortcut gives what the compiled pattern gives, match and
    /// capture, on values with newlines (first, last, only, doubled, CRLF), on
    /// the empty value and on every byte.
    #[test]
    fn whole_value_pattern_matches_as_the_regex_does() {
        let env = OperatorEnv::default();
        let rx = Rx::new("^.*$", &env).unwrap_or_else(|e| panic!("{e}"));
        assert!(rx.whole);
        let pattern = Pattern::compile("^.*$", super::super::regex::DEFAULT_MATCH_LIMIT)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut inputs: Vec<Vec<u8>> = [
            &b""[..],
            b"a",
            b"\n",
            b"a\n",
            b"\na",
            b"a\nb",
            b"a\nb\n",
            b"\n\n",
            b"\r\n",
            b"x\r\ny\r\n",
            b"User-Agent",
            b"\xff\xfe\n\x00",
        ]
        .iter()
        .map(|b| b.to_vec())
        .collect();
        inputs.extend((0..=255u8).map(|b| vec![b]));
        inputs.extend((0..=255u8).map(|b| vec![b'k', b, b'\n']));
        for input in &inputs {
            let mut expected = Captures::default();
            let matched = pattern.is_match(input) && pattern.captures_first(input, &mut expected);
            let mut got = Captures::default();
            assert_eq!(rx.evaluate(input, Some(&mut got)), matched, "{input:?}");
            assert_eq!(rx.evaluate(input, None), matched, "{input:?}");
            let groups = |c: &Captures| {
                (0..10)
                    .map(|i| c.get(i).map(<[u8]>::to_vec))
                    .collect::<Vec<_>>()
            };
            assert_eq!(groups(&got), groups(&expected), "{input:?}");
        }
    }
}
