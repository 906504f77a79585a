//! Mixing attacks into benign traffic: exactly `round(count × ratio)` attacks at
//! seeded positions, and the distribution of attacks over CRS rule groups.

use std::fmt;
use std::str::FromStr;

use super::zipf::Rng;

/// Places exactly `attacks` attacks among `total` requests, one decision per
/// position, without storing the positions (Knuth's selection sampling: position `i`
/// is an attack with probability `remaining attacks / remaining positions`).
#[derive(Debug, Clone)]
pub struct Selection {
    remaining: u64,
    attacks_left: u64,
}

impl Selection {
    /// `attacks` (clamped to `total`) among `total` positions.
    pub fn new(total: u64, attacks: u64) -> Self {
        Selection {
            remaining: total,
            attacks_left: attacks.min(total),
        }
    }

    /// The number of attacks for `count` requests at `ratio` (0..=1), rounded to the
    /// nearest integer.
    pub fn attacks_for(count: u64, ratio: f64) -> u64 {
        let r = ratio.clamp(0.0, 1.0);
        ((count as f64) * r).round() as u64
    }

    /// Whether the next position is an attack; `None` once every position is decided.
    pub fn next(&mut self, rng: &mut Rng) -> Option<bool> {
        if self.remaining == 0 {
            return None;
        }
        let attack = rng.below(self.remaining) < self.attacks_left;
        self.remaining -= 1;
        if attack {
            self.attacks_left -= 1;
        }
        Some(attack)
    }
}

/// How attacks are spread over the CRS rule groups (the RuleCache paper, §VI-C).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Distribution {
    /// Every rule group equally often; every test case of a group equally often.
    Even,
    /// Fitted to real traffic: most attacks hit few rules, SQL injection first (see
    /// [`REAL_GROUP_WEIGHTS`]); within a group, rules by a Zipf law (exponent 1.2)
    /// in rule id order.
    Real,
    /// Best case for rule ordering: every attack hits the last rule group (in CRS
    /// load order) that has attacks, so reordering gains the most.
    Best,
    /// Worst case for rule ordering: every attack hits the first rule group, which
    /// is already evaluated first.
    Worst,
}

impl Distribution {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Even => "even",
            Distribution::Real => "real",
            Distribution::Best => "best",
            Distribution::Worst => "worst",
        }
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Distribution {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "even" => Ok(Distribution::Even),
            "real" => Ok(Distribution::Real),
            "best" => Ok(Distribution::Best),
            "worst" => Ok(Distribution::Worst),
            _ => Err(format!(
                "unknown distribution '{s}' (even, real, best, worst)"
            )),
        }
    }
}

/// Weights of the CRS rule groups in the "real" distribution. The RuleCache paper
/// (§III-C, Fig. 2) found 87% of attacks in real traffic blocked by 10 rules, 7 of
/// them SQL injection (942); the rest follows the usual ranking of attack classes in
/// WAF logs (XSS, command injection, path traversal, protocol violations, scanners).
/// Groups without attacks in the pool are left out and the rest renormalised.
pub const REAL_GROUP_WEIGHTS: &[(u32, f64)] = &[
    (942, 0.50),
    (941, 0.15),
    (932, 0.08),
    (930, 0.07),
    (920, 0.05),
    (913, 0.04),
    (933, 0.03),
    (931, 0.02),
    (921, 0.02),
    (934, 0.015),
    (944, 0.01),
    (943, 0.01),
    (911, 0.005),
    (922, 0.005),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_is_exact() {
        let mut rng = Rng::new(9);
        for (total, attacks) in [(0, 0), (1, 1), (10, 3), (1000, 371), (1000, 1000), (5, 9)] {
            let mut s = Selection::new(total, attacks);
            let mut n = 0;
            let mut got = 0;
            while let Some(a) = s.next(&mut rng) {
                n += 1;
                got += u64::from(a);
            }
            assert_eq!(n, total);
            assert_eq!(got, attacks.min(total));
        }
        assert_eq!(Selection::attacks_for(1000, 0.3705), 371);
        assert_eq!(Selection::attacks_for(10, 1.5), 10);
    }
}
