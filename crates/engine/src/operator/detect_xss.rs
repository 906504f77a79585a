//! `@detectXSS`: libinjection's XSS detection (the `injection` crate).
//!
//! As libmodsecurity v3 (`detect_xss.cc`): with `capture`, TX:0 is set to the whole
//! input.
//!
//! Every input it matches contains `<` or `=` ([`injection::xss::XSS_NEEDS_ONE_OF`]):
//! the prefilter's byte test skips it on values without them.

use super::{Captures, Operator};
use crate::prefilter::bytes::{ByteReq, ByteSet};

/// The `@detectXSS` operator.
#[derive(Debug)]
pub(crate) struct DetectXss;

impl Operator for DetectXss {
    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool {
        if !injection::detect_xss(input) {
            return false;
        }
        if let Some(c) = captures {
            c.clear();
            c.set(0, input);
        }
        true
    }

    fn required_bytes(&self) -> Option<ByteReq> {
        let mut set = ByteSet::default();
        for b in injection::xss::XSS_NEEDS_ONE_OF {
            set.insert(b);
        }
        ByteReq::new(vec![set])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requires_a_less_than_or_equals_sign() {
        let req = DetectXss.required_bytes().expect("a requirement");
        let presence = |v: &[u8]| {
            let mut p = [0u64; 4];
            crate::prefilter::bytes::presence(v, &mut p);
            p
        };
        assert!(!req.admits(&presence(b"Mozilla/5.0 (X11; Linux x86_64)")));
        assert!(req.admits(&presence(b"a=b")));
        assert!(req.admits(&presence(b"<b>")));
        assert!(DetectXss.evaluate(b"\" onmouseover=\"alert(1)", None));
    }
}
