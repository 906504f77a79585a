//! Integer parsing the way ModSecurity's numeric operators parse their operands.
//!
//! `@eq` uses C++ `std::stoi` (a failed parse or a value outside `int` throws, and
//! ModSecurity catches it as 0); `@ge`, `@gt`, `@le` and `@lt` use C `atoll`
//! (`strtoll`: out-of-range values saturate). Both skip leading C whitespace
//! (space, `\t`, `\n`, `\v`, `\f`, `\r`), take an optional sign and decimal digits, and
//! stop at the first other byte; the C string ends at the first NUL byte.

/// How an out-of-range value is handled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    /// `std::stoi`: the whole value becomes 0.
    Zero,
    /// `atoll`: clamps to the `long long` range.
    Saturate,
}

/// Parses the leading integer of `s`; `None` when there are no digits. (The C
/// string's end, a NUL byte, needs no search: NUL is neither whitespace, a sign
/// nor a digit, so the parse stops there as at any other byte.)
fn parse(s: &[u8], overflow: Overflow) -> Option<i64> {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r') {
        i += 1;
    }
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    // Accumulate negatively so that i64::MIN is representable.
    let mut v: i64 = 0;
    let mut overflowed = false;
    while let Some(d) = s.get(i).filter(|d| d.is_ascii_digit()) {
        let digit = i64::from(d - b'0');
        match v.checked_mul(10).and_then(|x| x.checked_sub(digit)) {
            Some(x) => v = x,
            None => overflowed = true,
        }
        i += 1;
    }
    if i == start {
        return None;
    }
    if overflowed {
        return Some(match overflow {
            Overflow::Zero => 0,
            Overflow::Saturate if negative => i64::MIN,
            Overflow::Saturate => i64::MAX,
        });
    }
    if negative {
        Some(v)
    } else {
        match v.checked_neg() {
            Some(x) => Some(x),
            None => Some(match overflow {
                Overflow::Zero => 0,
                Overflow::Saturate => i64::MAX,
            }),
        }
    }
}

/// `std::stoi` as ModSecurity's `@eq` uses it: 0 when there are no digits or the
/// value does not fit an `int`.
pub(crate) fn stoi(s: &[u8]) -> i64 {
    match parse(s, Overflow::Zero) {
        Some(v) if i32::try_from(v).is_ok() => v,
        _ => 0,
    }
}

/// C `atoll`: 0 when there are no digits, saturating on overflow.
pub(crate) fn atoll(s: &[u8]) -> i64 {
    parse(s, Overflow::Saturate).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_c() {
        assert_eq!(stoi(b"  -12abc"), -12);
        assert_eq!(stoi(b"+7"), 7);
        assert_eq!(stoi(b"- 7"), 0);
        assert_eq!(stoi(b"2147483648"), 0);
        assert_eq!(stoi(b"-2147483648"), i64::from(i32::MIN));
        assert_eq!(atoll(b"99999999999999999999"), i64::MAX);
        assert_eq!(atoll(b"-99999999999999999999"), i64::MIN);
        assert_eq!(atoll(b"-9223372036854775808"), i64::MIN);
        assert_eq!(atoll(b"1\x002"), 1);
        // The C string ends at NUL wherever it is.
        assert_eq!(atoll(b" \x005"), 0);
        assert_eq!(atoll(b"-\x005"), 0);
        assert_eq!(stoi(b"\x007"), 0);
        assert_eq!(atoll(b"\x0b\x0c\r\n\t 5"), 5);
        assert_eq!(atoll(b""), 0);
    }
}
