//! `@ipMatch`: whether the input is an IP address inside one of the listed addresses or
//! CIDR ranges (`127.0.0.1,10.0.0.0/8,::1,2001:db8::/32`).
//!
//! As libmodsecurity v3 (`ip_match.cc`, `msc_tree.cc`): entries are separated by
//! commas (empty entries are skipped); an entry with a `:` is IPv6, otherwise IPv4; a
//! prefix length must be 1-32 (IPv4) or 1-128 (IPv6) — `/0` is rejected as
//! ModSecurity rejects it; host bits below the prefix are ignored. The input is parsed
//! as `inet_pton` does (dotted quad without leading zeros, or IPv6 text; the C string
//! ends at the first NUL byte); anything else never matches. IPv4 and IPv6 are
//! separate: `::ffff:127.0.0.1` does not match `127.0.0.1`. Difference kept small on
//! purpose: spaces around entries are trimmed (ModSecurity fails to load such a rule).

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::{Captures, Operator, OperatorError};

/// A set of IPv4 and IPv6 networks, looked up by prefix length.
#[derive(Debug, Default)]
pub(crate) struct IpSet {
    /// (prefix length, networks with host bits cleared), one entry per length used.
    v4: Vec<(u32, HashSet<u32>)>,
    v6: Vec<(u32, HashSet<u128>)>,
}

fn mask4(bits: u32) -> u32 {
    u32::MAX.checked_shl(32 - bits).unwrap_or(0)
}

fn mask6(bits: u32) -> u128 {
    u128::MAX.checked_shl(128 - bits).unwrap_or(0)
}

impl IpSet {
    /// Adds one entry (`addr` or `addr/bits`); `what` names the source in errors.
    pub(crate) fn add(&mut self, entry: &str, what: &str) -> Result<(), OperatorError> {
        let bad = |why: &str| {
            Err(OperatorError::InvalidArgument(format!(
                "{what}: invalid IP address or range `{entry}`: {why}"
            )))
        };
        let (addr, bits) = match entry.split_once('/') {
            Some((a, b)) => {
                if b.is_empty() || !b.bytes().all(|c| c.is_ascii_digit()) || b.len() > 3 {
                    return bad("the prefix length is not a number");
                }
                (a, Some(b.parse::<u32>().unwrap_or(u32::MAX)))
            }
            None => (entry, None),
        };
        if addr.contains(':') {
            let Ok(ip) = addr.parse::<Ipv6Addr>() else {
                return bad("not an IPv6 address");
            };
            let bits = bits.unwrap_or(128);
            if !(1..=128).contains(&bits) {
                return bad("the IPv6 prefix length must be 1-128");
            }
            let net = u128::from(ip) & mask6(bits);
            match self.v6.iter_mut().find(|(b, _)| *b == bits) {
                Some((_, set)) => {
                    set.insert(net);
                }
                None => self.v6.push((bits, HashSet::from([net]))),
            }
        } else {
            let Ok(ip) = addr.parse::<Ipv4Addr>() else {
                return bad("not an IPv4 address");
            };
            let bits = bits.unwrap_or(32);
            if !(1..=32).contains(&bits) {
                return bad("the IPv4 prefix length must be 1-32");
            }
            let net = u32::from(ip) & mask4(bits);
            match self.v4.iter_mut().find(|(b, _)| *b == bits) {
                Some((_, set)) => {
                    set.insert(net);
                }
                None => self.v4.push((bits, HashSet::from([net]))),
            }
        }
        Ok(())
    }

    /// Whether the set is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }

    /// Whether `input` is an address inside the set.
    pub(crate) fn contains(&self, input: &[u8]) -> bool {
        let end = memchr::memchr(0, input).unwrap_or(input.len());
        let Ok(text) = std::str::from_utf8(&input[..end]) else {
            return false;
        };
        if text.contains(':') {
            let Ok(ip) = text.parse::<Ipv6Addr>() else {
                return false;
            };
            let ip = u128::from(ip);
            self.v6
                .iter()
                .any(|(bits, set)| set.contains(&(ip & mask6(*bits))))
        } else {
            let Ok(ip) = text.parse::<Ipv4Addr>() else {
                return false;
            };
            let ip = u32::from(ip);
            self.v4
                .iter()
                .any(|(bits, set)| set.contains(&(ip & mask4(*bits))))
        }
    }
}

/// The `@ipMatch` operator.
#[derive(Debug)]
pub(crate) struct IpMatch {
    set: IpSet,
}

impl IpMatch {
    /// Parses the comma-separated list.
    pub(crate) fn new(argument: &str) -> Result<Self, OperatorError> {
        let mut set = IpSet::default();
        for entry in argument.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            set.add(entry, "@ipMatch")?;
        }
        if set.is_empty() {
            return Err(OperatorError::InvalidArgument(
                "@ipMatch: no IP address or range given".to_string(),
            ));
        }
        Ok(IpMatch { set })
    }
}

impl Operator for IpMatch {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        self.set.contains(input)
    }
}
