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
    /// Pre-pruning: rules whose result is static are evaluated at load time (see
    /// [`crate::prune`]).
    pub prune: bool,
    /// The value cache: prefilter scans and pure operator results of repeated
    /// values, kept across transactions (see [`crate::value_cache`]).
    pub value_cache: bool,
    /// The transformation memo: a value's transformation chain (and its prefixes)
    /// computed once per transaction, whatever number of rules use it (see
    /// [`crate::transaction::memo`]). Off: every rule transforms its values itself.
    pub memo: bool,
    /// Rule ordering: a learned order of independent rules may be applied (see
    /// [`crate::ordering`]); without a plan nothing moves.
    pub order: bool,
    /// Early exit in anomaly-scoring mode: a phase's detection rules stop once the
    /// score reaches the blocking threshold (opt-in: the matched rules after that
    /// point are not reported; `all` does not turn it on).
    pub early_exit: bool,
    /// Check every optimisation against plain evaluation: every evaluation the
    /// prefilter skips and every folded rule is evaluated anyway, and a difference
    /// panics. For tests and `--verify` runs only.
    pub verify: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            prefilter: true,
            prune: true,
            value_cache: true,
            memo: true,
            order: true,
            early_exit: false,
            verify: false,
        }
    }
}

impl Options {
    /// Names accepted by [`Options::parse`].
    pub const NAMES: [&'static str; 6] = [
        "prune",
        "memo",
        "prefilter",
        "value_cache",
        "order",
        "early_exit",
    ];

    /// Parses a comma-separated list of optimisations to turn on (`all`, `none`, or
    /// names from [`Options::NAMES`]; `cache` is short for `value_cache`). `all`
    /// turns on everything but `early_exit`, which changes the reported matches.
    pub fn parse(list: &str) -> Result<Options, String> {
        let mut o = Options::none();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "all" => {
                    let verify = o.verify;
                    o = Options::default();
                    o.verify = verify;
                }
                "none" => o = Options::none(),
                "prefilter" => o.prefilter = true,
                "prune" => o.prune = true,
                "value_cache" | "cache" => o.value_cache = true,
                "memo" => o.memo = true,
                "order" => o.order = true,
                "early_exit" => o.early_exit = true,
                other => {
                    return Err(format!(
                        "unknown optimisation `{other}` (expected all, none or {})",
                        Options::NAMES.join(", ")
                    ))
                }
            }
        }
        Ok(o)
    }

    /// Every optimisation off: plain sequential evaluation.
    pub fn none() -> Self {
        Options {
            prefilter: false,
            prune: false,
            value_cache: false,
            memo: false,
            order: false,
            early_exit: false,
            verify: false,
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
    /// The Rule Result Cache: results of repeated values (used when
    /// `options.value_cache`).
    pub caches: Arc<crate::value_cache::ResultCache>,
    /// Rule ordering and early exit at run time (see [`crate::ordering`]).
    pub ordering: crate::ordering::Runtime,
    /// How the prefilter groups' unions are built (see [`crate::classes`]).
    pub classes: crate::classes::ClassPlan,
    /// Per step, what the rule loop needs to pass over a rule that cannot match
    /// (see [`crate::step_gates`]).
    pub step_gates: crate::step_gates::StepGates,
    /// The leading phase-1 rules run once at load time (see [`crate::prologue`]).
    pub prologue: Option<crate::prologue::Prologue>,
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
        // Replaced by compilation once the rules' indexes and the class plan
        // (which knows the `multiMatch` rules) are made.
        let caches = Arc::new(crate::value_cache::ResultCache::new(rules.len(), &[], &[]));
        Program {
            config,
            rules,
            phases,
            chains,
            dynamic_ops: RwLock::new(HashMap::new()),
            prefilter,
            options,
            relevant_status: None,
            caches,
            ordering: crate::ordering::Runtime::default(),
            classes: crate::classes::ClassPlan::default(),
            step_gates: crate::step_gates::StepGates::default(),
            prologue: None,
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
        Self::from_paths_with(paths, &Options::default())
    }

    /// [`Program::from_paths`] with chosen optimisations.
    pub fn from_paths_with<P: AsRef<Path>>(
        paths: &[P],
        options: &Options,
    ) -> Result<Arc<Program>, CompileError> {
        let loaded = seclang::load_paths(paths);
        crate::compile::compile(&loaded, options).map(Arc::new)
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

    /// Applies a rule order (see [`crate::ordering::apply`]) to a program no other
    /// owner shares yet (as returned by the `from_*` constructors).
    pub fn reordered(
        program: Arc<Program>,
        plan: &crate::ordering::OrderPlan,
    ) -> Result<(Arc<Program>, usize), String> {
        let mut p = Arc::try_unwrap(program)
            .map_err(|_| "the program is shared: reorder it before handing it out".to_string())?;
        let moved = crate::ordering::apply(&mut p, plan).map_err(|e| e.to_string())?;
        // Phase 1's order may have changed: its prologue is computed again.
        let p = crate::prologue::attach(p).map_err(|e| e.to_string())?;
        Ok((Arc::new(p), moved))
    }

    /// The ids of a phase's rules (chain starters) in evaluation order; empty for a
    /// phase outside 1-5.
    pub fn rule_ids(&self, phase: u8) -> Vec<u32> {
        let steps = usize::from(phase)
            .checked_sub(1)
            .and_then(|i| self.phases.get(i))
            .map_or(&[][..], Vec::as_slice);
        steps
            .iter()
            .filter_map(|s| match s {
                Step::Rule(i) => self.rules.get(*i as usize).map(|r| r.id),
                _ => None,
            })
            .collect()
    }

    /// The number of rules (chain starters) in all phases.
    pub fn rule_count(&self) -> usize {
        self.phases
            .iter()
            .map(|p| p.iter().filter(|s| matches!(s, Step::Rule(_))).count())
            .sum()
    }
}

#[cfg(test)]
mod options_tests {
    use super::Options;

    #[test]
    fn parses_optimisation_lists() {
        assert_eq!(Options::parse("all"), Ok(Options::default()));
        assert_eq!(Options::parse("none"), Ok(Options::none()));
        let p = Options::parse("prefilter,cache").unwrap_or_else(|e| panic!("{e}"));
        assert!(p.prefilter && p.value_cache && !p.prune && !p.verify);
        assert!(Options::parse("turbo").is_err());
        let all = Options::parse("all").unwrap_or_else(|e| panic!("{e}"));
        assert!(all.order && !all.early_exit);
        let e = Options::parse("all,early_exit").unwrap_or_else(|e| panic!("{e}"));
        assert!(e.order && e.early_exit);
    }
}
