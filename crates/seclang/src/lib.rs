//! SecLang, the ModSecurity rule language: text to a typed syntax tree with source
//! spans.
//!
//! This crate is the bottom of the Palisade workspace. It reads configuration files
//! (following `Include`s), splits them into directives exactly as ModSecurity reads
//! them (line continuations, quoting, comments), and builds a [`Config`]: every
//! directive typed, every variable, operator, action and transformation name checked
//! against the one list of names in [`names`], every node located by a [`Span`].
//! Errors are collected, not stopped at, and render with `file:line:col`, the
//! offending line and a caret.
//!
//! It has no semantics: the `engine` crate compiles a [`Config`] into an executable
//! program. Dependencies flow one way: `seclang` <- `engine` <- `proxy`/`ftw`/`bench`
//! <- the `palisade` binary.
//!
//! ```
//! let loaded = seclang::parse_str(
//!     "example.conf",
//!     "SecRuleEngine On\n\
//!      SecRule ARGS \"@rx (?i)select\" \"id:1,phase:2,t:lowercase,deny,msg:'SQL'\"\n",
//! );
//! assert!(loaded.is_ok(), "{}", loaded.render_errors());
//! assert_eq!(loaded.config.items.len(), 2);
//!
//! let bad = seclang::parse_str("bad.conf", "SecRule ARGS \"@rxx a\" \"id:2\"\n");
//! assert_eq!(bad.errors[0].kind, seclang::ErrorKind::UnknownOperator);
//! assert!(bad.render_errors().starts_with("bad.conf:1:15:"));
//! ```
#![deny(missing_docs)]

pub mod actions;
pub mod ast;
pub(crate) mod cursor;
pub mod diagnostic;
pub mod directives;
pub(crate) mod lexer;
pub mod loader;
pub mod names;
pub(crate) mod operator;
pub(crate) mod parse;
pub mod print;
pub mod source;
mod spans;
pub mod summary;
pub(crate) mod targets;
pub mod validate;

pub use ast::*;
pub use diagnostic::{Diagnostic, ErrorKind};
pub use loader::{load_paths, parse_str, parse_str_with, Loaded, Options};
pub use source::{FileId, SourceFile, SourceMap, Span};
pub use summary::Summary;
