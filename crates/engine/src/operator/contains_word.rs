//! `@containsWord`: whether the argument occurs in the input as a whole word.
//!
//! As libmodsecurity v3 (`contains_word.cc`): an occurrence counts when each of its
//! sides is the start/end of the input or a byte that is not an ASCII letter
//! (`A-Z`, `a-z`; digits and `_` *are* boundaries there, unlike `\b`). An empty
//! argument matches every input; an empty input matches nothing else. Nothing is
//! captured.

use memchr::memmem::Finder;

use super::{Captures, Operator};

/// The `@containsWord` operator.
#[derive(Debug)]
pub(crate) struct ContainsWord {
    finder: Finder<'static>,
}

impl ContainsWord {
    /// Builds the substring searcher.
    pub(crate) fn new(argument: &str) -> Self {
        ContainsWord {
            finder: Finder::new(argument.as_bytes()).into_owned(),
        }
    }
}

/// Whether the byte at `pos` exists and is not an ASCII letter.
fn boundary(input: &[u8], pos: Option<usize>) -> bool {
    pos.and_then(|p| input.get(p))
        .is_some_and(|b| !b.is_ascii_alphabetic())
}

impl Operator for ContainsWord {
    fn required_literals(&self) -> Option<Vec<Vec<u8>>> {
        let lit: &[u8] = self.finder.needle();
        (!lit.is_empty()).then(|| vec![lit.to_vec()])
    }

    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        let word = self.finder.needle();
        if word.is_empty() {
            return true;
        }
        if input.is_empty() {
            return false;
        }
        if input == word {
            return true;
        }
        let n = word.len();
        let mut from = 0;
        while let Some(found) = self.finder.find(&input[from..]) {
            let pos = from + found;
            let before = pos.checked_sub(1);
            let after = Some(pos + n);
            if pos == 0 && boundary(input, after) {
                return true;
            }
            if pos + n == input.len() && boundary(input, before) {
                return true;
            }
            if boundary(input, before) && boundary(input, after) {
                return true;
            }
            from = pos + 1;
        }
        false
    }
}
