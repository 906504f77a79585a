//! Byte-level helpers shared by the transformations.
//!
//! They reproduce the C-locale character classes and the hexadecimal helpers of
//! libmodsecurity, so that every transformation classifies bytes the same way.

/// `isspace()` in the C locale: space, `\t`, `\n`, `\v`, `\f` and `\r`.
/// Bytes at or above 0x80 (including NBSP, 0xA0) are not whitespace.
#[inline]
pub(crate) fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `VALID_HEX()` / `isxdigit()`: `0-9`, `a-f`, `A-F`.
#[inline]
pub(crate) fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

/// `ISODIGIT()`: `0-7`.
#[inline]
pub(crate) fn is_odigit(b: u8) -> bool {
    matches!(b, b'0'..=b'7')
}

/// ModSecurity's `xsingle2c()`: the value of one hexadecimal digit, computed with
/// the same unchecked arithmetic (modulo 256) so that non-hex bytes give the same
/// "garbage" value as libmodsecurity does (used by `hexDecode`, which does not
/// validate its input).
#[inline]
pub(crate) fn xsingle2c(b: u8) -> u8 {
    if b >= b'A' {
        (b & 0xdf).wrapping_sub(b'A').wrapping_add(10)
    } else {
        b.wrapping_sub(b'0')
    }
}

/// ModSecurity's `x2c()`: two hexadecimal digits to a byte (unchecked, modulo 256).
#[inline]
pub(crate) fn x2c(hi: u8, lo: u8) -> u8 {
    xsingle2c(hi).wrapping_mul(16).wrapping_add(xsingle2c(lo))
}

/// Lowercase hexadecimal digits, as `c2x()` and `%x` print them.
pub(crate) const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// Finishes a transformation whose result may or may not differ from its input:
/// when `out` equals `input` it is cleared and `false` is returned (the caller keeps
/// borrowing the input), otherwise `true`.
#[inline]
pub(crate) fn finish(input: &[u8], out: &mut Vec<u8>) -> bool {
    if out.as_slice() == input {
        out.clear();
        false
    } else {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x2c_matches_modsecurity_arithmetic() {
        assert_eq!(x2c(b'4', b'1'), 0x41);
        assert_eq!(x2c(b'f', b'F'), 0xff);
        assert_eq!(x2c(b'0', b'0'), 0);
        // Not hex: the C arithmetic wraps; 'z' -> ('Z' - 'A') + 10 = 35.
        assert_eq!(xsingle2c(b'z'), 35);
        assert_eq!(x2c(b'z', b'z'), 35u8.wrapping_mul(16).wrapping_add(35));
        // Below '0': wraps around.
        assert_eq!(xsingle2c(b'!'), b'!'.wrapping_sub(b'0'));
    }

    #[test]
    fn c_space_set() {
        let spaces: Vec<u8> = (0u8..=255).filter(|&b| is_c_space(b)).collect();
        assert_eq!(spaces, vec![b'\t', b'\n', 0x0b, 0x0c, b'\r', b' ']);
    }
}
