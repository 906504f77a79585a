//! Per-rule cost profile: how often each rule (chain starter) ran, how often it
//! matched and how long it took, per transaction. Off by default; a caller turns it
//! on for the transactions it samples ([`crate::Transaction::enable_profile`]), so
//! that it can stay on in production at a small sampling rate. The cost when on is
//! two clock reads per evaluated rule.

/// The counters of one rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuleCost {
    /// Times the rule (with its chain) was evaluated.
    pub evaluations: u64,
    /// Times the whole chain matched.
    pub matches: u64,
    /// Nanoseconds spent evaluating it (chain links and match effects included).
    pub nanos: u64,
}

impl RuleCost {
    /// Adds another counter set to this one.
    pub fn add(&mut self, other: &RuleCost) {
        self.evaluations += other.evaluations;
        self.matches += other.matches;
        self.nanos += other.nanos;
    }
}

/// A profile: one counter set per rule of the program (indexed as
/// [`crate::Program::rules`]) and the nanoseconds spent per phase.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// Per rule index.
    pub rules: Vec<RuleCost>,
    /// Nanoseconds spent in each phase's rule loop (phases 1-5).
    pub phase_nanos: [u64; 5],
    /// Transactions merged into this profile.
    pub transactions: u64,
}

impl Profile {
    /// An empty profile for a program of `rules` rules.
    pub fn new(rules: usize) -> Self {
        Profile {
            rules: vec![RuleCost::default(); rules],
            phase_nanos: [0; 5],
            transactions: 0,
        }
    }

    /// Adds another profile (of the same program) to this one.
    pub fn merge(&mut self, other: &Profile) {
        if self.rules.len() < other.rules.len() {
            self.rules.resize(other.rules.len(), RuleCost::default());
        }
        for (a, b) in self.rules.iter_mut().zip(&other.rules) {
            a.add(b);
        }
        for (a, b) in self.phase_nanos.iter_mut().zip(other.phase_nanos) {
            *a += b;
        }
        self.transactions += other.transactions;
    }

    /// Rule indexes with at least one evaluation, sorted by `key` (largest first).
    pub fn top_by<K: Ord>(&self, key: impl Fn(&RuleCost) -> K) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.rules.len())
            .filter(|&i| self.rules[i].evaluations > 0)
            .collect();
        idx.sort_by(|&a, &b| key(&self.rules[b]).cmp(&key(&self.rules[a])));
        idx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_counters_and_top_sorts_descending() {
        let mut a = Profile::new(3);
        a.rules[0] = RuleCost {
            evaluations: 1,
            matches: 0,
            nanos: 10,
        };
        a.rules[2] = RuleCost {
            evaluations: 2,
            matches: 1,
            nanos: 50,
        };
        a.transactions = 1;
        let mut b = Profile::new(3);
        b.rules[0] = RuleCost {
            evaluations: 1,
            matches: 1,
            nanos: 100,
        };
        b.phase_nanos[1] = 7;
        b.transactions = 1;
        a.merge(&b);
        assert_eq!(
            a.rules[0],
            RuleCost {
                evaluations: 2,
                matches: 1,
                nanos: 110
            }
        );
        assert_eq!(a.phase_nanos[1], 7);
        assert_eq!(a.transactions, 2);
        assert_eq!(a.top_by(|c| c.nanos), vec![0, 2]);
        assert_eq!(a.top_by(|c| c.matches), vec![0, 2]);
    }
}
