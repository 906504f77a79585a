//! Online rule ordering: the RuleCache paper's learning loop in `palisade serve`.
//!
//! The engine can evaluate a phase's independent rules in any order that keeps
//! results identical ([`engine::ordering`]: self-contained exits among rules
//! without visible effects, anomaly scoring only with early exit); the cheapest
//! order depends on the traffic. Three parts learn it while serving:
//!
//! - [`stats`]: one transaction in `sample_every` per worker thread is profiled
//!   (per-rule evaluations, matches, nanoseconds); when it finishes, its profile is
//!   merged into the calling thread's shard, keyed by the program it ran. Requests
//!   that are not sampled pay one thread-local counter increment.
//! - [`analyzer`]: every `window_secs`, off the request path (a blocking thread),
//!   the shards are drained; for each program of the running table with at least
//!   `min_samples` sampled transactions, [`engine::ordering::plan`] proposes an
//!   order. When it moves rules and its expected saving is at least
//!   `min_gain_percent` of the measured rule time per request, the same parsed
//!   configuration is compiled again, given the running order
//!   ([`engine::ordering::like`]) and then the plan, and the routing table is
//!   swapped with the route(s) of that program pointing at the new one (the
//!   `ArcSwap` hot reload uses; in-flight requests finish on the old program).
//! - this module: the policy compiled from `[learning]`.
//!
//! Statistics are never applied to another program: shards key them by the
//! program's identity (a `Weak` pointer, so an address cannot be reused while a
//! key lives) and by the learner's generation, which a reload bumps; the analyzer
//! drops what belongs to a program no longer in the table, and publishes with a
//! compare-and-swap on the table it analysed, so a reload in between wins.
//!
//! The new program starts with an empty result cache (`engine::value_cache`):
//! it is a separate compile. Publishing is rare (only when the order improves by
//! the configured margin), and the cache refills within a few windows of its own.

pub mod analyzer;
pub mod stats;

use std::time::Duration;

use crate::config::{ConfigError, Learning, Source};

pub use stats::Learner;

/// The `[learning]` settings, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Learn and publish rule orders.
    pub order: bool,
    /// Time between analyses.
    pub window: Duration,
    /// One transaction in this many is profiled (per worker thread).
    pub sample_every: u64,
    /// Sampled transactions needed before a plan is computed.
    pub min_samples: u64,
    /// Smallest expected saving, as a fraction of the rule time per request.
    pub min_gain: f64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            order: false,
            window: Duration::from_secs(60),
            sample_every: 64,
            min_samples: 200,
            min_gain: 0.01,
        }
    }
}

impl Policy {
    /// Validates `[learning]`; errors name the key and its location.
    pub fn compile(l: &Learning, source: &Source) -> Result<Policy, ConfigError> {
        let range = |name: &str, v: &toml::Spanned<u64>, lo: u64, hi: u64| {
            let n = *v.get_ref();
            if (lo..=hi).contains(&n) {
                Ok(n)
            } else {
                Err(source.error(
                    v.span(),
                    format!("learning.{name}: {n} is not between {lo} and {hi}"),
                ))
            }
        };
        let window = range("window_secs", &l.window_secs, 1, 86_400)?;
        let sample_every = range("sample_every", &l.sample_every, 1, 1_000_000)?;
        let min_samples = range("min_samples", &l.min_samples, 1, 100_000_000)?;
        let gain = *l.min_gain_percent.get_ref();
        if !(0.0..=100.0).contains(&gain) {
            return Err(source.error(
                l.min_gain_percent.span(),
                format!("learning.min_gain_percent: {gain} is not between 0 and 100"),
            ));
        }
        Ok(Policy {
            order: l.order,
            window: Duration::from_secs(window),
            sample_every,
            min_samples,
            min_gain: gain / 100.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> Result<Policy, ConfigError> {
        let source = Source {
            path: "p.toml".into(),
            text: text.into(),
        };
        let cfg = crate::config::parse(&source)?;
        Policy::compile(&cfg.learning, &source)
    }

    #[test]
    fn defaults_are_off() {
        assert_eq!(policy(""), Ok(Policy::default()));
        assert!(!Policy::default().order);
    }

    #[test]
    fn settings_are_read() {
        let p = policy(
            "[learning]\norder = true\nwindow_secs = 5\nsample_every = 8\nmin_samples = 10\nmin_gain_percent = 0\n",
        )
        .expect("valid");
        assert_eq!(
            p,
            Policy {
                order: true,
                window: Duration::from_secs(5),
                sample_every: 8,
                min_samples: 10,
                min_gain: 0.0,
            }
        );
    }

    #[test]
    fn out_of_range_values_are_located() {
        let e = policy("[learning]\norder = true\nsample_every = 0\n").expect_err("zero");
        assert_eq!((e.line, e.column), (3, 16));
        assert!(e.message.contains("learning.sample_every"), "{}", e.message);
        let e = policy("[learning]\nwindow_secs = 100000\n").expect_err("too long");
        assert_eq!(e.line, 2);
        let e = policy("[learning]\n\nmin_gain_percent = 150.0\n").expect_err("gain");
        assert_eq!(e.line, 3);
        assert!(e.message.contains("min_gain_percent"), "{}", e.message);
        let e = policy("[learning]\nordr = true\n").expect_err("unknown key");
        assert_eq!(e.line, 2);
    }
}
