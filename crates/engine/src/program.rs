//! The compiled, immutable program shared by all transactions.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, RwLock};

use crate::chains::ChainTable;
use crate::config::EngineConfig;
use crate::operator::{self, Operator, OperatorEnv};
use crate::prefilter::Prefilter;
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

/// Optimisations, each switchable (the bench tool's `--optimizations`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The multi-pattern prefilter (see [`crate::prefilter`]).
    pub prefilter: bool,
    /// Check every evaluation the prefilter skips by running the operator anyway;
    /// a skipped match panics. For tests and `--verify` runs only.
    pub verify_prefilter: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            prefilter: true,
            verify_prefilter: false,
        }
    }
}

impl Options {
    /// Every optimisation off: plain sequential evaluation.
    pub fn none() -> Self {
        Options {
            prefilter: false,
            verify_prefilter: false,
        }
    }
}

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
    /// Operators whose argument has macros, built per expanded argument and kept
    /// (bounded): `@within %{tx.allowed_methods}` is built once, not per request.
    dynamic_ops: RwLock<DynamicOps>,
    /// The multi-pattern prefilter, when enabled and useful.
    pub prefilter: Option<Prefilter>,
    /// The options it was compiled with.
    pub options: Options,
    /// `SecAuditLogRelevantStatus`, compiled once (a PCRE pattern, as `@rx`).
    pub relevant_status: Option<Box<dyn Operator>>,
}

/// Built dynamic operators: operator name -> expanded argument -> operator.
type DynamicOps = HashMap<&'static str, HashMap<String, Arc<dyn Operator>>>;

/// Most dynamic operators kept; beyond this, they are built per use.
const DYNAMIC_OPS_MAX: usize = 4096;

impl Program {
    pub(crate) fn new(
        config: EngineConfig,
        rules: Vec<Rule>,
        phases: [Vec<Step>; 5],
        chains: ChainTable,
        prefilter: Option<Prefilter>,
        options: Options,
    ) -> Self {
        Program {
            config,
            rules,
            phases,
            chains,
            dynamic_ops: RwLock::new(HashMap::new()),
            prefilter,
            options,
            relevant_status: None,
        }
    }

    /// The operator `name` built for an expanded (macro-substituted) argument,
    /// cached.
    pub fn dynamic_operator(
        &self,
        name: &'static str,
        argument: &str,
    ) -> Option<Arc<dyn Operator>> {
        if let Ok(cache) = self.dynamic_ops.read() {
            if let Some(op) = cache.get(name).and_then(|m| m.get(argument)) {
                return Some(Arc::clone(op));
            }
        }
        let env = OperatorEnv {
            match_limit: self.config.pcre_match_limit,
            ..OperatorEnv::default()
        };
        let op: Arc<dyn Operator> = Arc::from(operator::build(name, argument, &env).ok()?);
        if let Ok(mut cache) = self.dynamic_ops.write() {
            let total: usize = cache.values().map(HashMap::len).sum();
            if total < DYNAMIC_OPS_MAX {
                cache
                    .entry(name)
                    .or_default()
                    .insert(argument.to_string(), Arc::clone(&op));
            }
        }
        Some(op)
    }

    /// Loads and compiles configuration files (files, directories, globs).
    pub fn from_paths<P: AsRef<Path>>(paths: &[P]) -> Result<Arc<Program>, CompileError> {
        let loaded = seclang::load_paths(paths);
        crate::compile::compile(&loaded, &Options::default()).map(Arc::new)
    }

    /// Compiles configuration text (Includes resolved relative to the current
    /// directory).
    pub fn from_str(name: &str, text: &str) -> Result<Arc<Program>, CompileError> {
        let loaded = seclang::parse_str(name, text);
        crate::compile::compile(&loaded, &Options::default()).map(Arc::new)
    }

    /// Compiles an already loaded configuration.
    pub fn from_loaded(loaded: &seclang::Loaded) -> Result<Arc<Program>, CompileError> {
        crate::compile::compile(loaded, &Options::default()).map(Arc::new)
    }

    /// Compiles an already loaded configuration with chosen optimisations.
    pub fn from_loaded_with(
        loaded: &seclang::Loaded,
        options: &Options,
    ) -> Result<Arc<Program>, CompileError> {
        crate::compile::compile(loaded, options).map(Arc::new)
    }

    /// Compiles configuration text with chosen optimisations.
    pub fn from_str_with(
        name: &str,
        text: &str,
        options: &Options,
    ) -> Result<Arc<Program>, CompileError> {
        let loaded = seclang::parse_str(name, text);
        crate::compile::compile(&loaded, options).map(Arc::new)
    }

    /// The number of rules (chain starters) in all phases.
    pub fn rule_count(&self) -> usize {
        self.phases
            .iter()
            .map(|p| p.iter().filter(|s| matches!(s, Step::Rule(_))).count())
            .sum()
    }
}
