//! Benchmark tools for Palisade: request corpora (the standard requests R1–R5 and
//! JSON Lines corpora) and the in-process engine benchmark behind
//! `palisade bench engine`.
//!
//! ```no_run
//! let corpus = bench::corpus::load(std::path::Path::new("../shared/bench/standard-requests.json")).unwrap();
//! assert!(!corpus.is_empty());
//! ```
#![deny(missing_docs)]

pub mod corpus;
pub mod engine_bench;
