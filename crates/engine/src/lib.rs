//! The Palisade rule engine: compiles a parsed SecLang configuration into an
//! immutable [`Program`] and evaluates HTTP [`Transaction`]s against it with
//! ModSecurity v3's semantics.
//!
//! ```
//! use engine::{Program, Transaction, Connection};
//! let program = Program::from_str("inline.conf", "SecRuleEngine On\n\
//!     SecRule ARGS \"@rx evil\" \"id:1,phase:1,deny,status:403\"\n").unwrap();
//! let mut tx = Transaction::new(program, &Connection::default());
//! tx.process_uri("/?q=evil", "GET", "1.1");
//! tx.add_request_header(b"Host", b"example.com");
//! assert_eq!(tx.process_request_headers().map(|i| i.status()), Some(403));
//! ```

pub mod audit;
pub mod audit_json;
pub mod body;
mod buffers;
pub mod bytes_eq;
pub mod chains;
pub mod classes;
pub mod collection;
mod compile;
pub mod config;
mod deferred_log;
pub mod lean;
pub mod lossy;
pub mod macros;
pub mod operator;
pub mod ordering;
pub mod plan;
pub mod prefilter;
#[cfg(test)]
mod prefilter_proof;
pub mod profile;
pub mod program;
pub mod prologue;
pub mod prune;
pub mod rule;
pub mod step_gates;
pub mod step_stops;
pub mod transaction;
pub mod transform;
pub mod value_cache;
pub mod variable;

pub use config::{EngineConfig, EngineMode};
pub use program::{CompileError, Options, Program};
pub use transaction::{BodyStatus, Connection, Intervention, Sanitise, Transaction};
