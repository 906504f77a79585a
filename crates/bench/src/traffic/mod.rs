//! Request corpora modelled on real web traffic, behind `palisade traffic generate`.
//!
//! * [`profiles`]: benign requests of four kinds of application (site, JSON API, form
//!   posts, static assets) with realistic header sets;
//! * [`values`] and [`zipf`]: the repetition of ARGS values, cookie values and
//!   User-Agents, so that the top 10 values of each cover chosen shares of traffic
//!   (the RuleCache paper's Table IV reports 1–100% per target), Zipf-distributed
//!   among themselves with a configurable skew;
//! * [`attacks`]: attack payloads from the CRS regression tests placed in realistic
//!   requests, kept only when the CRS blocks them;
//! * [`mix`]: an exact attack ratio and the distribution of attacks over rule groups
//!   (even, real, best and worst case for rule ordering, as in the paper's §VI-C);
//! * [`verify`]: the in-process CRS check that keeps false positives out of the
//!   benign traffic;
//! * [`generate`]: the seeded, streaming generator; [`stats`]: Table IV for a corpus.
//!
//! ```
//! use bench::traffic::generate::{generate, GenerateOptions};
//!
//! let opts = GenerateOptions { count: 100, seed: 42, ..GenerateOptions::default() };
//! let mut out = Vec::new();
//! let summary = generate(&opts, None, None, &mut out, None).unwrap();
//! assert_eq!(summary.requests, 100);
//! assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 100);
//! ```

pub mod attacks;
pub mod generate;
pub mod mix;
pub mod profiles;
pub mod stats;
pub mod values;
pub mod verify;
pub mod zipf;
