//! Benchmark tools for Palisade: request corpora (the standard requests R1–R5 and
//! JSON Lines corpora), the traffic generator behind `palisade traffic generate`,
//! the in-process engine benchmark behind `palisade bench engine`, the HTTP load
//! generator behind `palisade bench http`, the per-revision runner behind
//! `palisade bench batch`, the equivalence check behind `palisade bench engine
//! --verify` and the ablation behind `palisade bench ablation`.
//!
//! ```no_run
//! let corpus = bench::corpus::load(std::path::Path::new("../shared/bench/standard-requests.json")).unwrap();
//! assert!(!corpus.is_empty());
//! ```
#![deny(missing_docs)]

pub mod ablation;
pub mod analyze;
pub mod batch;
pub mod compare;
pub mod corpus;
pub mod engine_bench;
pub mod http;
pub mod traffic;
pub mod verify;
