//! The compiled, immutable program shared by all transactions.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::chains::ChainTable;
use crate::config::EngineConfig;
use crate::rule::{Rule, Step};

/// Why a configuration could not be compiled: every error, rendered with its
/// location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// The rendered errors, one or more lines each.
    pub message: String,
}

impl CompileError {
    /// Wraps rendered errors.
    pub fn new(message: String) -> Self {
        CompileError { message }
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message.trim_end())
    }
}

impl std::error::Error for CompileError {}

/// A compiled rule set: settings, rules, per-phase step lists, transformation chains.
/// Immutable; shared by every transaction through an `Arc`.
#[derive(Debug)]
pub struct Program {
    /// Settings.
    pub config: EngineConfig,
    /// All compiled rules and chain links.
    pub rules: Vec<Rule>,
    /// Steps of phases 1-5 (index 0 = phase 1).
    pub phases: [Vec<Step>; 5],
    /// Interned transformation chains.
    pub chains: ChainTable,
}

impl Program {
    pub(crate) fn new(
        config: EngineConfig,
        rules: Vec<Rule>,
        phases: [Vec<Step>; 5],
        chains: ChainTable,
    ) -> Self {
        Program {
            config,
            rules,
            phases,
            chains,
        }
    }

    /// Loads and compiles configuration files (files, directories, globs).
    pub fn from_paths<P: AsRef<Path>>(paths: &[P]) -> Result<Arc<Program>, CompileError> {
        let loaded = seclang::load_paths(paths);
        crate::compile::compile(&loaded).map(Arc::new)
    }

    /// Compiles configuration text (Includes resolved relative to the current
    /// directory).
    pub fn from_str(name: &str, text: &str) -> Result<Arc<Program>, CompileError> {
        let loaded = seclang::parse_str(name, text);
        crate::compile::compile(&loaded).map(Arc::new)
    }

    /// Compiles an already loaded configuration.
    pub fn from_loaded(loaded: &seclang::Loaded) -> Result<Arc<Program>, CompileError> {
        crate::compile::compile(loaded).map(Arc::new)
    }

    /// The number of rules (chain starters) in all phases.
    pub fn rule_count(&self) -> usize {
        self.phases
            .iter()
            .map(|p| p.iter().filter(|s| matches!(s, Step::Rule(_))).count())
            .sum()
    }
}
