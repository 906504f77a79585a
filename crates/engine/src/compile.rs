//! Compiler: a loaded SecLang configuration -> an immutable [`Program`].
//!
//! Two passes. The first walks the directives in order, collecting settings, default
//! actions (per phase, as in effect where each rule is written), rules with their
//! chain links, and markers, and applies `SecRuleRemoveBy*`, `SecRuleUpdateTargetBy*`
//! and `SecRuleUpdateActionById` to the rules written before them. The second
//! compiles every surviving rule: operators built, transformation chains interned,
//! actions classified, macros split, and `skipAfter` resolved to step indices.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use regex::bytes::Regex;
use seclang::{
    Action, ActionValue, CtlValue, Directive, Loaded, RuleSelector, Selector, Setting,
    SettingValue, Span,
};

use crate::chains::ChainTable;
use crate::config::{AuditEngine, EngineConfig};
use crate::macros::MacroString;
use crate::operator::{self, GeoDb, GeoLookup, OperatorEnv};
use crate::prefilter::Prefilter;
use crate::program::{CompileError, Options, Program};
use crate::rule::{
    AllowScope, CompiledOp, CtlAction, Disruptive, Exclusion, KeyRegex, KeySel, Meta, Rule,
    RuleIdx, RuleOperator, SetVarAction, Step, TagSelector, TargetSpec,
};
use crate::transform::Transformation;
use crate::variable::Var;
use crate::EngineMode;

/// A rule as written, with its chain links, before compilation.
struct Pending {
    links: Vec<(seclang::Rule, Span)>,
    removed: bool,
}

enum Entry {
    Rule(Pending),
    Marker(String),
}

fn rule_phase(rule: &seclang::Rule) -> u8 {
    rule.actions
        .iter()
        .rev()
        .find_map(|a| match a.value {
            ActionValue::Phase(p) => Some(p),
            _ => None,
        })
        .unwrap_or(2)
}

/// The directory of the file `span` is in: where relative data file paths
/// (`@pmFromFile`, `SecGeoLookupDb`) are resolved from.
fn file_dir(loaded: &Loaded, span: Span) -> PathBuf {
    loaded
        .sources
        .path(span.file)
        .parent()
        .map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf)
}

fn texts<'a>(rule: &'a seclang::Rule, name: &str) -> impl Iterator<Item = &'a str> + 'a {
    let name = name.to_string();
    rule.actions.iter().filter_map(move |a| match &a.value {
        ActionValue::Text(t) if a.name == name => Some(t.as_str()),
        _ => None,
    })
}

fn text_matches(pattern: &str, value: &str) -> bool {
    match Regex::new(pattern) {
        Ok(r) => r.is_match(value.as_bytes()),
        Err(_) => value.contains(pattern),
    }
}

impl Pending {
    fn id(&self) -> u32 {
        self.links.first().and_then(|(r, _)| r.id()).unwrap_or(0)
    }

    fn selected(&self, sel: &RuleSelector) -> bool {
        let Some((starter, _)) = self.links.first() else {
            return false;
        };
        match sel {
            RuleSelector::Ids(ids) => ids.iter().any(|r| r.contains(self.id())),
            RuleSelector::Tag(t) => texts(starter, "tag").any(|v| text_matches(t, v)),
            RuleSelector::Msg(m) => texts(starter, "msg").any(|v| text_matches(m, v)),
        }
    }
}

/// Compiles a loaded configuration.
pub fn compile(loaded: &Loaded, options: &Options) -> Result<Program, CompileError> {
    if !loaded.is_ok() {
        return Err(CompileError::new(loaded.render_errors()));
    }
    let mut config = EngineConfig::default();
    // SecDefaultAction, per phase. As in v3, each phase has at most one, and it
    // applies to every rule of that phase wherever the rule is written (v3 reads the
    // phase's default actions at run time: Block::evaluate, executeTransformations,
    // executeActionsAfterFullMatch).
    let mut defaults: [Vec<Action>; 6] = Default::default();
    let mut default_spans: [Option<Span>; 6] = Default::default();
    let mut early_errors: Vec<(Span, String)> = Vec::new();
    let mut entries: Vec<Entry> = Vec::new();
    let mut open_chain = false;
    let mut geo = GeoState::default();
    for item in &loaded.config.items {
        config.apply(&item.directive);
        if let Directive::Setting(Setting {
            name: "SecGeoLookupDb",
            value: SettingValue::Text(path),
        }) = &item.directive
        {
            // As v3, the database is opened where the directive is read: one that
            // cannot be loaded fails the configuration, used by a rule or not.
            let env = OperatorEnv {
                rule_dir: file_dir(loaded, item.span),
                ..OperatorEnv::default()
            };
            match GeoDb::open(&env.resolve(path)) {
                Ok(db) => geo.db = Some(Arc::new(db)),
                Err(e) => {
                    geo.failed = true;
                    early_errors.push((item.span, format!("SecGeoLookupDb: {e}")));
                }
            }
        }
        match &item.directive {
            Directive::Rule(rule) => {
                if open_chain {
                    if let Some(Entry::Rule(p)) = entries.last_mut() {
                        p.links.push((rule.clone(), item.span));
                    }
                } else {
                    entries.push(Entry::Rule(Pending {
                        links: vec![(rule.clone(), item.span)],
                        removed: false,
                    }));
                }
                open_chain = rule.is_chain();
                continue;
            }
            Directive::Marker(m) => entries.push(Entry::Marker(m.clone())),
            Directive::DefaultAction(actions) => {
                let phase = actions
                    .iter()
                    .find_map(|a| match a.value {
                        ActionValue::Phase(p) => Some(p),
                        _ => None,
                    })
                    .unwrap_or(2) as usize;
                if default_spans[phase].is_some() {
                    // v3's parser: "SecDefaultActions can only be placed once per
                    // phase and configuration context".
                    early_errors.push((
                        item.span,
                        format!("SecDefaultAction: phase {phase} already has a SecDefaultAction (ModSecurity v3 allows one per phase)"),
                    ));
                } else {
                    default_spans[phase] = Some(item.span);
                    defaults[phase] = actions.clone();
                }
            }
            Directive::RemoveById(ids) => {
                let sel = RuleSelector::Ids(ids.clone());
                for p in pendings(&mut entries) {
                    if p.selected(&sel) {
                        p.removed = true;
                    }
                }
            }
            Directive::RemoveByTag(t) => {
                let sel = RuleSelector::Tag(t.clone());
                for p in pendings(&mut entries) {
                    if p.selected(&sel) {
                        p.removed = true;
                    }
                }
            }
            Directive::RemoveByMsg(t) => {
                let sel = RuleSelector::Msg(t.clone());
                for p in pendings(&mut entries) {
                    if p.selected(&sel) {
                        p.removed = true;
                    }
                }
            }
            Directive::UpdateTarget(u) => {
                for p in pendings(&mut entries) {
                    if !p.selected(&u.selector) {
                        continue;
                    }
                    if let Some((starter, _)) = p.links.first_mut() {
                        if let Some(replaced) = &u.replaced {
                            starter.targets.retain(|t| {
                                !(t.variable == replaced.variable
                                    && t.selector == replaced.selector)
                            });
                        }
                        starter.targets.extend(u.targets.iter().cloned());
                    }
                }
            }
            Directive::UpdateActionById {
                id,
                chain_offset,
                actions,
            } => {
                for p in pendings(&mut entries) {
                    if p.id() != *id {
                        continue;
                    }
                    let link = chain_offset.map_or(0, |o| o.saturating_sub(1) as usize);
                    if let Some((rule, _)) = p.links.get_mut(link) {
                        update_actions(rule, actions);
                    }
                }
            }
            Directive::Setting(_) => {}
        }
        open_chain = false;
    }

    let mut compiler = Compiler {
        config: &config,
        defaults: &defaults,
        loaded,
        chains: ChainTable::new(),
        rules: Vec::new(),
        errors: Vec::new(),
        geo,
    };
    for (span, msg) in early_errors {
        compiler.error(span, msg);
    }
    let mut phases: [Vec<Step>; 5] = Default::default();
    let mut marker_names: [Vec<(usize, String)>; 5] = Default::default();
    let mut skip_targets: Vec<(RuleIdx, u8, String)> = Vec::new();
    for entry in &entries {
        match entry {
            Entry::Marker(name) => {
                for (p, steps) in phases.iter_mut().enumerate() {
                    marker_names[p].push((steps.len(), name.clone()));
                    steps.push(Step::Marker);
                }
            }
            Entry::Rule(p) if !p.removed => {
                if let Some(idx) = compiler.compile_chain(p) {
                    let rule = &compiler.rules[idx as usize];
                    let phase = rule.phase;
                    if let Some(name) = &rule.skip_after_name {
                        skip_targets.push((idx, phase, name.clone()));
                    }
                    phases[(phase - 1) as usize].push(Step::Rule(idx));
                }
            }
            Entry::Rule(p) => {
                if let Some((starter, _)) = p.links.first() {
                    phases[(rule_phase(starter) - 1) as usize].push(Step::Removed);
                }
            }
        }
    }
    // Resolve skipAfter: continue after the first marker (or rule id) of that name
    // that follows the rule in its phase; if none follows, skip to the phase's end.
    for (idx, phase, name) in skip_targets {
        let steps = &phases[(phase - 1) as usize];
        let pos = steps
            .iter()
            .position(|s| *s == Step::Rule(idx))
            .unwrap_or(0);
        let by_marker = marker_names[(phase - 1) as usize]
            .iter()
            .find(|(at, n)| *at > pos && n == &name)
            .map(|(at, _)| *at + 1);
        let by_id = name.parse::<u32>().ok().and_then(|id| {
            steps
                .iter()
                .enumerate()
                .skip(pos + 1)
                .find_map(|(i, s)| match s {
                    Step::Rule(r) if compiler.rules[*r as usize].id == id => Some(i + 1),
                    _ => None,
                })
        });
        compiler.rules[idx as usize].skip_after = Some(by_marker.or(by_id).unwrap_or(steps.len()));
    }
    if !compiler.errors.is_empty() {
        return Err(CompileError::new(compiler.errors.join("")));
    }
    let Compiler { chains, rules, .. } = compiler;
    let relevant_status = match &config.audit_log_relevant_status {
        Some(pattern) => {
            let env = OperatorEnv {
                match_limit: config.pcre_match_limit,
                ..OperatorEnv::default()
            };
            match operator::build("rx", pattern, &env) {
                Ok(op) => Some(op),
                Err(e) => {
                    return Err(CompileError::new(format!(
                        "error: SecAuditLogRelevantStatus `{pattern}`: {e}\n"
                    )))
                }
            }
        }
        None => None,
    };
    let mut program = Program::new(config, rules, phases, chains, None, options.clone());
    program.relevant_status = relevant_status;
    if options.prune {
        crate::prune::fold(&mut program);
    }
    // By prefilter bit: the fewest bytes a value the rule's operator matches holds
    // (see `ClassPlan::cc_min_len`).
    let min_len = if options.prefilter {
        build_prefilter(&mut program)
    } else {
        Vec::new()
    };
    for (i, rule) in program.rules.iter_mut().enumerate() {
        rule.index = i as RuleIdx;
        // Pure: the result depends on the value alone (so it may be cached per
        // value). Not `@rbl` (DNS answers change) nor `@geoLookup` (it writes GEO).
        let built = match &rule.operator.op {
            CompiledOp::Static(_) => true,
            CompiledOp::Dynamic(_) => rule.resolved_op.is_some(),
            CompiledOp::GeoLookup(_) => false,
        };
        rule.pure = built && !rule.unconditional && rule.operator.name != "rbl";
        if options.prune {
            rule.lean = crate::lean::plan(rule);
        }
    }
    if program.prefilter.is_some() {
        assign_prefilter_groups(&mut program.rules, options.value_cache);
    }
    assign_target_sets(&mut program.rules);
    select_tagged_rules(&mut program.rules);
    if options.prune {
        crate::deferred_log::mark(&mut program);
    }
    let bit_words = program.prefilter.as_ref().map_or(0, Prefilter::words);
    program.classes = crate::classes::ClassPlan::build(&program.rules, bit_words, &min_len);
    program.caches = std::sync::Arc::new(crate::value_cache::ResultCache::new(
        program.rules.len(),
        &program.classes.multi_rules,
        &program.classes.negated_rules,
    ));
    program.step_gates = crate::step_gates::StepGates::build(&program);
    if options.early_exit {
        program.ordering.early_exit = crate::ordering::early_exit::analyse(&program);
    }
    crate::step_gates::StepGates::attach_stops(&mut program);
    crate::prologue::attach(program)
}

/// Builds the prefilter over the rules the rule loop may reach (see
/// [`crate::step_stops::reachable`]: after pre-pruning, the rules above the
/// paranoia level are behind gates that always jump), gives each a bit, and
/// returns, by bit, the fewest bytes a value its operator matches holds. A rule
/// left without a bit is evaluated whenever it is reached, so leaving one out can
/// cost time, never a match; the automaton holds only the literals of rules that
/// may run (CRS PL1: 256 rules and chain links are never reached).
fn build_prefilter(program: &mut Program) -> Vec<u32> {
    let reached = reached_rules(program);
    let Program { rules, chains, .. } = program;
    let mut min_len: Vec<u32> = Vec::new();
    let mut tests = Vec::new();
    for (i, rule) in rules.iter_mut().enumerate() {
        rule.prefilter = None;
        if !reached.get(i).copied().unwrap_or(true) {
            continue;
        }
        // Only operators built once; never `@geoLookup` (it writes GEO).
        if let CompiledOp::Static(op) = &rule.operator.op {
            let (literals, bytes) = (op.required_literals(), op.required_bytes());
            if literals.is_some() || bytes.is_some() {
                let bit = tests.len() as u32;
                rule.prefilter = Some(bit);
                min_len.push(u32::try_from(op.min_match_len()).unwrap_or(u32::MAX));
                tests.push(crate::prefilter::RuleTest {
                    bit,
                    escape: literals.as_ref().and(op.escape_bytes()),
                    anchored: literals.as_ref().and(op.anchored_start()),
                    // Only for a rule reading raw values: the test runs on
                    // their scans alone (see `TransformMemo::scan_offset`).
                    end: op.anchored_end().filter(|_| rule.transforms == 0),
                    literals,
                    bytes,
                });
            }
        }
    }
    // The response body is read only by the rules that name it: a smaller,
    // faster automaton over their literals scans it, and the main automaton
    // leaves out the literals of the rules that read nothing else.
    let bits_of = |only: bool| -> std::collections::HashSet<u32> {
        rules
            .iter()
            .filter(|r| {
                let body = |t: &crate::rule::TargetSpec| t.var == Var::ResponseBody;
                if only {
                    r.targets.iter().all(body) && !r.targets.is_empty()
                } else {
                    r.targets.iter().any(body)
                }
            })
            .filter_map(|r| r.prefilter)
            .collect()
    };
    let (long, long_only) = (bits_of(false), bits_of(true));
    let mut pf = Prefilter::build_with_long(
        &tests,
        |bit| long.contains(&bit),
        |bit| long_only.contains(&bit),
    );
    if let Some(pf) = &mut pf {
        add_deleting_scans(pf, &tests, rules, chains, &long);
    }
    // Both bounds hold: the larger one.
    for (m, t) in min_len.iter_mut().zip(&tests) {
        *m = (*m).max(u32::try_from(t.min_match_len()).unwrap_or(u32::MAX));
    }
    if pf.is_none() {
        for rule in rules.iter_mut() {
            rule.prefilter = None;
        }
    }
    program.prefilter = pf;
    min_len
}

/// By rule index: whether the rule loop may reach the rule (a chain's links with
/// its starter).
fn reached_rules(program: &Program) -> Vec<bool> {
    let mut reached = vec![false; program.rules.len()];
    for p in 0..program.phases.len() {
        let r = crate::step_stops::reachable(program, p);
        for (i, step) in program.phases[p].iter().enumerate() {
            let Step::Rule(idx) = *step else { continue };
            if !r.get(i).copied().unwrap_or(true) {
                continue;
            }
            let mut link = Some(idx);
            while let Some(l) = link {
                if let Some(x) = reached.get_mut(l as usize) {
                    *x = true;
                }
                link = program.rules.get(l as usize).and_then(|r| r.chain_next);
            }
        }
    }
    reached
}

/// Direct searches for the response body's scans under chains that only delete
/// bytes (see [`Prefilter::add_deleting`]): per deleted-byte set, the rules that
/// read the body through a chain deleting it (for `multiMatch` rules, through any
/// prefix of their chain, each of which is scanned).
fn add_deleting_scans(
    pf: &mut Prefilter,
    tests: &[crate::prefilter::RuleTest],
    rules: &[Rule],
    chains: &crate::chains::ChainTable,
    long: &std::collections::HashSet<u32>,
) {
    let mut by_deleted: Vec<(crate::transform::triggers::ByteMask, Vec<u32>)> = Vec::new();
    for r in rules {
        let Some(bit) = r.prefilter.filter(|b| long.contains(b)) else {
            continue;
        };
        let mut chain = r.transforms;
        loop {
            if let Some(d) = chains.deleted_bytes(chain) {
                match by_deleted.iter_mut().find(|(x, _)| *x == d) {
                    Some((_, bits)) => bits.push(bit),
                    None => by_deleted.push((d, vec![bit])),
                }
            }
            match chains.split_last(chain) {
                Some((parent, _)) if r.multi_match => chain = parent,
                _ => break,
            }
        }
    }
    for (deleted, bits) in by_deleted {
        pf.add_deleting(deleted, tests, |b| bits.contains(&b));
    }
}

/// Groups prefiltered rules by (targets, transformation chain): a rule whose
/// literals occur in none of its group's values cannot match, which one union of
/// scan results per group and transaction tells. With the result cache
/// (`cache`), pure rules without literals join groups too: when every value of
/// their classes is cached and known not to match them, the step gate passes
/// over them as over a prefiltered rule the cache rules out (run after the
/// rules' purity is decided). Negated pure rules too: see
/// [`crate::step_gates::gate_bit`].
fn assign_prefilter_groups(rules: &mut [Rule], cache: bool) {
    let mut groups: std::collections::HashMap<(String, u32), u32> =
        std::collections::HashMap::new();
    for rule in rules.iter_mut() {
        // Not over collections rules write (TX, GEO, ...): their members change
        // without new request data, so a union computed while one was still absent
        // (no value: "no literal anywhere") would hide a later match. A rule
        // without a prefilter bit, or negated, joins a group only for the result
        // cache's test (its union never rules it out): a pure rule, whose
        // results the cache keeps (a value's maybe set drops a negated rule
        // when its operator matched the value). Not a negated `multiMatch`
        // rule: the cache keeps only its "no intermediate value matched".
        let negated = rule.operator.negated;
        let admitted = (rule.prefilter.is_some() && !negated)
            || (cache && rule.pure && !(negated && rule.multi_match));
        if !admitted
            || rule.targets.is_empty()
            || rule
                .targets
                .iter()
                .any(|t| t.count || t.var.is_rule_state())
        {
            continue;
        }
        // multiMatch rules inspect every intermediate value: their own groups.
        let key = format!("{:?} multi={}", rule.targets, rule.multi_match);
        let next = groups.len() as u32;
        let g = *groups.entry((key, rule.transforms)).or_insert(next);
        rule.prefilter_group = Some(g);
    }
}

/// Numbers the distinct target lists (with their exclusions) whose values are
/// request data alone (stored variables, ARGS, ARGS_NAMES and XML; no counts): see
/// [`Rule::target_set`].
fn assign_target_sets(rules: &mut [Rule]) {
    let mut sets: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    for rule in rules.iter_mut() {
        if rule.targets.is_empty()
            || !rule
                .targets
                .iter()
                .all(|t| !t.count && crate::transaction::request_data_only(t.var))
        {
            continue;
        }
        // The set's resolution leaves out what the exclusions name: part of the key.
        let key = format!("{:?} {:?}", rule.targets, rule.exclusions);
        let next = sets.len() as u32;
        rule.target_set = Some(*sets.entry(key).or_insert(next));
    }
}

/// Fills in the rules each `ctl` tag regex selects ([`TagSelector::rules`]), once
/// every rule has its index; rules sharing one regex share one bit set.
fn select_tagged_rules(rules: &mut [Rule]) {
    let mut sets: std::collections::HashMap<*const regex::bytes::Regex, std::sync::Arc<[u64]>> =
        std::collections::HashMap::new();
    let mut found = Vec::new();
    for (r, rule) in rules.iter().enumerate() {
        for (c, ctl) in rule.ctls.iter().enumerate() {
            if let CtlAction::RemoveByTag(s) | CtlAction::RemoveTargetByTag(s, _) = ctl {
                let bits = sets
                    .entry(std::sync::Arc::as_ptr(&s.re))
                    .or_insert_with(|| TagSelector::rule_bits(&s.re, rules));
                found.push((r, c, bits.clone()));
            }
        }
    }
    for (r, c, bits) in found {
        if let CtlAction::RemoveByTag(s) | CtlAction::RemoveTargetByTag(s, _) =
            &mut rules[r].ctls[c]
        {
            s.rules = bits;
        }
    }
}

fn pendings(entries: &mut [Entry]) -> impl Iterator<Item = &mut Pending> {
    entries.iter_mut().filter_map(|e| match e {
        Entry::Rule(p) => Some(p),
        Entry::Marker(_) => None,
    })
}

/// `SecRuleUpdateActionById`: replaces actions of the same name (disruptive actions
/// replace the disruptive action) and appends the others. Transformations are
/// appended to the rule's own, as both ModSecurity v2 (actionset merge) and v3
/// (`executeTransformations` runs the update's transformations after the rule's)
/// do; a `t:none` among them discards the earlier ones.
fn update_actions(rule: &mut seclang::Rule, new: &[Action]) {
    let disruptive =
        |n: &str| matches!(n, "deny" | "drop" | "pass" | "allow" | "block" | "redirect");
    let multi = |n: &str| {
        matches!(
            n,
            "tag" | "setvar" | "ctl" | "t" | "setenv" | "initcol" | "expirevar"
        )
    };
    for a in new {
        if disruptive(a.name) {
            rule.actions.retain(|x| !disruptive(x.name));
        } else if !multi(a.name) {
            rule.actions.retain(|x| x.name != a.name);
        }
    }
    rule.actions.extend(new.iter().cloned());
}

/// The database of `SecGeoLookupDb`, opened once for every rule.
#[derive(Default)]
struct GeoState {
    db: Option<Arc<GeoDb>>,
    /// A `SecGeoLookupDb` failed to load (already reported).
    failed: bool,
}

struct Compiler<'a> {
    config: &'a EngineConfig,
    defaults: &'a [Vec<Action>; 6],
    loaded: &'a Loaded,
    chains: ChainTable,
    rules: Vec<Rule>,
    errors: Vec<String>,
    geo: GeoState,
}

impl Compiler<'_> {
    fn error(&mut self, span: Span, msg: String) {
        let loc = format!(
            "{}:{}:{}",
            self.loaded.sources.path(span.file).display(),
            span.line,
            span.col
        );
        self.errors.push(format!("{loc}: error: {msg}\n"));
    }

    fn compile_chain(&mut self, p: &Pending) -> Option<RuleIdx> {
        let (starter, _) = p.links.first()?;
        let phase = rule_phase(starter);
        let chain_id = starter.id().unwrap_or(0);
        let all_defaults = self.defaults;
        let defaults = &all_defaults[phase as usize];
        let mut next: Option<RuleIdx> = None;
        // Compile from the last link back so each link knows its successor.
        for (i, (rule, span)) in p.links.iter().enumerate().rev() {
            let compiled =
                self.compile_rule(rule, *span, phase, chain_id, i == 0, defaults, next)?;
            self.rules.push(compiled);
            next = Some((self.rules.len() - 1) as RuleIdx);
        }
        next
    }

    #[allow(clippy::too_many_arguments)] // one call site; the arguments are the rule's context
    fn compile_rule(
        &mut self,
        rule: &seclang::Rule,
        span: Span,
        phase: u8,
        chain_id: u32,
        starter: bool,
        defaults: &[Action],
        chain_next: Option<RuleIdx>,
    ) -> Option<Rule> {
        let env = OperatorEnv {
            rule_dir: file_dir(self.loaded, span),
            match_limit: self.config.pcre_match_limit,
            geo_db: self.geo.db.clone(),
        };
        // Namespace prefixes for XPath targets: the rule's own `xmlns` actions.
        let namespaces = self.xmlns(rule)?;
        // Targets and exclusions.
        let mut targets = Vec::new();
        let mut exclusions = Vec::new();
        for t in &rule.targets {
            let Some(var) = Var::from_name(t.variable) else {
                continue;
            };
            let ns = (!t.exclude).then_some(namespaces.as_slice());
            let sel = self.key_sel(&t.selector, span, ns)?;
            if t.exclude {
                exclusions.push(Exclusion { var, sel });
            } else {
                targets.push(TargetSpec {
                    var,
                    sel,
                    count: t.count,
                });
            }
        }
        // Operator.
        let op_name = rule.operator.name;
        let argument = rule.operator.argument.clone();
        let mac = MacroString::parse(&argument);
        // As v3, the file operators of XML validation take their path literally.
        let validates_xml = matches!(op_name, "validateDTD" | "validateSchema");
        let op = if op_name == "geoLookup" {
            // It writes GEO, so the phase evaluator runs it (see `CompiledOp`).
            match GeoLookup::new(&env) {
                Ok(g) => CompiledOp::GeoLookup(g),
                // The SecGeoLookupDb error already says why there is no database.
                Err(_) if self.geo.failed => return None,
                Err(e) => {
                    self.error(rule.operator.span, format!("@{op_name}: {e}"));
                    return None;
                }
            }
        } else if mac.has_macros() && !validates_xml {
            CompiledOp::Dynamic(mac)
        } else {
            match operator::build(op_name, &argument, &env) {
                Ok(op) => CompiledOp::Static(op),
                Err(e) => {
                    self.error(rule.operator.span, format!("@{op_name}: {e}"));
                    return None;
                }
            }
        };
        // Actions: defaults first (starters only for non-transformation actions).
        let mut all: Vec<&Action> = Vec::new();
        all.extend(defaults.iter().filter(|a| a.name == "t" || starter));
        all.extend(rule.actions.iter());
        let mut chain: Vec<Transformation> = Vec::new();
        let mut own_disruptive: Option<(&str, Option<&Action>)> = None;
        let mut default_disruptive: Option<&Action> = None;
        let mut log: Option<bool> = None;
        let mut auditlog: Option<bool> = None;
        let mut default_log: Option<bool> = None;
        let mut default_auditlog: Option<bool> = None;
        let mut status = None;
        let mut meta = Meta::default();
        let mut setvars = Vec::new();
        let mut ctls = Vec::new();
        let mut skip = 0;
        let mut skip_after_name = None;
        let mut multi_match = false;
        let mut capture = false;
        let mut initcols = Vec::new();
        let mut setsid = None;
        let mut setuid = None;
        let mut setenvs = Vec::new();
        let mut expirevars = Vec::new();
        let mut sanitise = Vec::new();
        let n_defaults = all.len() - rule.actions.len();
        for (i, a) in all.iter().enumerate() {
            let from_default = i < n_defaults;
            let text = match &a.value {
                ActionValue::Text(t) => Some(t.as_str()),
                _ => None,
            };
            match (a.name, &a.value) {
                ("t", ActionValue::Transformation(name)) => {
                    if *name == "none" {
                        chain.clear();
                    } else if let Some(t) = Transformation::from_name(name) {
                        chain.push(t);
                    } else {
                        self.error(
                            a.span,
                            format!("transformation `{name}` is not implemented"),
                        );
                        return None;
                    }
                }
                (
                    "deny" | "drop" | "pass" | "allow" | "block" | "redirect" | "proxy" | "pause",
                    _,
                ) => {
                    if a.name == "proxy" || a.name == "pause" {
                        self.error(
                            a.span,
                            format!("`{}` is not supported: Palisade runs its own proxy and never stalls connections", a.name),
                        );
                        return None;
                    }
                    if from_default {
                        default_disruptive = Some(a);
                    } else {
                        own_disruptive = Some((a.name, Some(a)));
                    }
                }
                ("log", _) => set_flag(from_default, &mut default_log, &mut log, true),
                ("nolog", _) => {
                    set_flag(from_default, &mut default_log, &mut log, false);
                    if from_default {
                        default_auditlog.get_or_insert(false);
                    } else {
                        auditlog.get_or_insert(false);
                    }
                }
                ("auditlog", _) => {
                    set_flag(from_default, &mut default_auditlog, &mut auditlog, true)
                }
                ("noauditlog", _) => {
                    set_flag(from_default, &mut default_auditlog, &mut auditlog, false)
                }
                ("status", ActionValue::Status(s)) => status = Some(*s),
                ("msg", _) => meta.msg = text.map(MacroString::parse),
                ("logdata", _) => meta.logdata = text.map(MacroString::parse),
                ("severity", ActionValue::Severity(s)) => meta.severity = Some(*s),
                ("tag", _) => meta.tags.extend(text.map(str::to_string)),
                ("rev", _) => meta.rev = text.map(str::to_string),
                ("ver", _) => meta.ver = text.map(str::to_string),
                ("maturity", _) => meta.maturity = text.map(str::to_string),
                ("accuracy", _) => meta.accuracy = text.map(str::to_string),
                ("setvar", ActionValue::SetVar(sv)) => {
                    let Some(collection) = Var::from_collection_name(&sv.collection) else {
                        self.error(a.span, format!("setvar: `{}` is not a collection rules can write (tx, ip, global, session, user, resource)", sv.collection));
                        return None;
                    };
                    let mut key = MacroString::parse(&sv.key);
                    key.lowercase_literals();
                    let key_literal = key
                        .literal()
                        .map(|k| String::from_utf8_lossy(k).into_owned());
                    setvars.push(SetVarAction {
                        collection,
                        key_ascii: key.literals_ascii(),
                        key,
                        op: sv.op,
                        value: MacroString::parse(&sv.value),
                        key_literal,
                        hint: Default::default(),
                    });
                }
                ("ctl", ActionValue::Ctl(c)) => match self.ctl(c, a.span) {
                    Some(c) => ctls.push(c),
                    None => return None,
                },
                ("skip", ActionValue::Skip(n)) => skip = *n,
                ("skipAfter", _) => skip_after_name = text.map(str::to_string),
                ("multiMatch", _) => multi_match = true,
                ("capture", _) => capture = true,
                ("initcol", _) => {
                    let t = text.unwrap_or_default();
                    let Some((col, key)) = t.split_once('=') else {
                        self.error(a.span, format!("initcol `{t}` needs collection=key"));
                        return None;
                    };
                    match Var::from_collection_name(col.trim()) {
                        Some(v) if v != Var::Tx => initcols.push((v, MacroString::parse(key))),
                        _ => {
                            self.error(a.span, format!("initcol: `{col}` is not a persistent collection (ip, global, session, user, resource)"));
                            return None;
                        }
                    }
                }
                ("setsid", _) => setsid = text.map(MacroString::parse),
                ("setuid", _) => setuid = text.map(MacroString::parse),
                ("setrsc", _) => {
                    initcols.push((Var::Resource, MacroString::parse(text.unwrap_or_default())))
                }
                ("setenv", _) => {
                    let t = text.unwrap_or_default();
                    let (k, v) = t.split_once('=').unwrap_or((t, "1"));
                    setenvs.push((MacroString::parse(k), MacroString::parse(v)));
                }
                ("expirevar", _) => {
                    let t = text.unwrap_or_default();
                    let (lhs, secs) = t.split_once('=').unwrap_or((t, "0"));
                    let Some((col, key)) = lhs.split_once('.') else {
                        self.error(
                            a.span,
                            format!("expirevar `{t}` needs collection.key=seconds"),
                        );
                        return None;
                    };
                    let Some(v) = Var::from_collection_name(col.trim()) else {
                        self.error(a.span, format!("expirevar: `{col}` is not a collection"));
                        return None;
                    };
                    expirevars.push((v, MacroString::parse(key), MacroString::parse(secs)));
                }
                (
                    "sanitiseArg"
                    | "sanitiseMatched"
                    | "sanitiseMatchedBytes"
                    | "sanitiseRequestHeader"
                    | "sanitiseResponseHeader",
                    _,
                ) => {
                    sanitise.push((a.name, text.map(MacroString::parse)));
                }
                ("exec", _) => {
                    self.error(
                        a.span,
                        "`exec` is refused: Palisade never runs external programs from rules"
                            .into(),
                    );
                    return None;
                }
                // `xmlns` was read before the targets (`Compiler::xmlns`).
                ("xmlns" | "append" | "prepend" | "deprecatevar", _) => {}
                _ => {}
            }
        }
        let resolve = |name: &str, act: Option<&Action>| -> Disruptive {
            match name {
                "deny" => Disruptive::Deny,
                "drop" => Disruptive::Drop,
                "redirect" => Disruptive::Redirect(MacroString::parse(
                    act.and_then(|a| match &a.value {
                        ActionValue::Text(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .unwrap_or(""),
                )),
                "allow" => match act.map(|a| &a.value) {
                    Some(ActionValue::Text(t)) if t == "phase" => {
                        Disruptive::Allow(AllowScope::Phase)
                    }
                    Some(ActionValue::Text(t)) if t == "request" => {
                        Disruptive::Allow(AllowScope::Request)
                    }
                    _ => Disruptive::Allow(AllowScope::All),
                },
                _ => Disruptive::Pass,
            }
        };
        if validates_xml {
            // v3's @validateDTD / @validateSchema ignore their (transformed) input
            // and validate the parsed document; here the input is the document, so
            // it must reach the operator unchanged.
            chain.clear();
        }
        let default_d = default_disruptive.map_or(Disruptive::Pass, |a| resolve(a.name, Some(a)));
        // v3 applies SecDefaultAction's disruptive action only to rules that carry
        // `block` (RuleWithActions::executeAction ignores a default disruptive
        // action "rule does not contains block"); a rule without a disruptive action
        // of its own just continues, whatever the defaults say.
        let (disruptive, is_block) = match own_disruptive {
            Some(("block", _)) => (default_d, true),
            Some((name, act)) => (resolve(name, act), false),
            None => (Disruptive::Pass, false),
        };
        let log_flag = log.or(default_log).unwrap_or(true);
        let audit_flag = auditlog.or(default_auditlog).unwrap_or(log_flag);
        let file = self.loaded.sources.path(span.file).display().to_string();
        let record = crate::audit::RecordParts::new(
            &meta,
            &file,
            (op_name, &argument, rule.operator.negated),
        );
        let mut compiled = Rule {
            id: if starter { chain_id } else { 0 },
            chain_id,
            phase,
            line: span.line,
            unconditional: rule.kind == seclang::RuleKind::SecAction,
            targets,
            exclusions,
            operator: RuleOperator {
                name: op_name,
                argument,
                negated: rule.operator.negated,
                op,
            },
            transforms: self.chains.intern(&chain),
            multi_match,
            capture,
            chain_next,
            setvars,
            disruptive,
            is_block,
            status,
            log: log_flag,
            auditlog: audit_flag,
            meta,
            record,
            ctls,
            skip,
            skip_after: None,
            skip_after_name,
            initcols,
            setsid,
            setuid,
            setenvs,
            expirevars,
            prefilter: None,
            prefilter_group: None,
            target_set: None,
            static_result: None,
            resolved_op: None,
            pure: false,
            lean: None,
            defer_log: false,
            index: 0,
            sanitise,
            match_actions: false,
        };
        compiled.match_actions = compiled.has_match_actions();
        Some(compiled)
    }

    /// The `(prefix, URI)` bindings of a rule's `xmlns:prefix=URI` actions, in
    /// order. As v3 (`actions/xmlns.cc`): both parts must be present, and a URI in
    /// single quotes is unquoted. v3 also refuses a URI that does not start with
    /// `http://`; here any URI is accepted (`urn:`, `https://`), so every rule set
    /// v3 loads behaves the same.
    fn xmlns(&mut self, rule: &seclang::Rule) -> Option<Vec<(String, String)>> {
        let mut out = Vec::new();
        for a in rule.actions.iter().filter(|a| a.name == "xmlns") {
            let text = match &a.value {
                ActionValue::Text(t) => t.as_str(),
                _ => "",
            };
            let Some((prefix, uri)) = text.split_once('=') else {
                self.error(a.span, format!("xmlns `{text}` needs prefix=URI"));
                return None;
            };
            let (prefix, mut uri) = (prefix.trim(), uri.trim());
            if uri.len() > 2 && uri.starts_with('\'') && uri.ends_with('\'') {
                uri = &uri[1..uri.len() - 1];
            }
            let valid_prefix = prefix.chars().enumerate().all(|(i, c)| {
                c.is_alphabetic()
                    || c == '_'
                    || (i > 0 && (c.is_alphanumeric() || c == '-' || c == '.'))
            });
            if prefix.is_empty() || uri.is_empty() || !valid_prefix {
                self.error(
                    a.span,
                    format!(
                        "xmlns `{text}`: expected prefix=URI, with an XML name (no `:`) as \
                         the prefix and a non-empty URI"
                    ),
                );
                return None;
            }
            out.push((prefix.to_string(), uri.to_string()));
        }
        Some(out)
    }

    /// The selector of a target. `namespaces` binds XPath prefixes; `None` for
    /// exclusions, whose XPath is never evaluated (any prefix is accepted).
    fn key_sel(
        &mut self,
        sel: &Option<Selector>,
        span: Span,
        namespaces: Option<&[(String, String)]>,
    ) -> Option<KeySel> {
        Some(match sel {
            None => KeySel::All,
            // Keys compare case-insensitively; lower-cased once here.
            Some(Selector::Key(k)) => KeySel::Key(k.to_ascii_lowercase()),
            Some(Selector::XPath(x)) => {
                // body::xpath evaluates a subset of XPath; refuse the rest (and
                // unbound prefixes) when loading, as that module documents, rather
                // than let the rule silently never match.
                let compiled = match namespaces {
                    Some(ns) => crate::body::XPath::compile(x, ns),
                    None => crate::body::XPath::compile_unbound(x),
                };
                match compiled {
                    Ok(path) => KeySel::XPath(path),
                    Err(e) => {
                        self.error(span, format!("XML:{x}: {e}"));
                        return None;
                    }
                }
            }
            Some(Selector::Regex(r)) => match KeyRegex::new(r) {
                Ok(re) => KeySel::Regex(Arc::new(re)),
                Err(e) => {
                    self.error(
                        span,
                        format!("invalid regular expression selector /{r}/: {e}"),
                    );
                    return None;
                }
            },
        })
    }

    fn exclusions(&mut self, targets: &[seclang::Target], span: Span) -> Option<Vec<Exclusion>> {
        let mut out = Vec::new();
        for t in targets {
            let var = Var::from_name(t.variable)?;
            out.push(Exclusion {
                var,
                sel: self.key_sel(&t.selector, span, None)?,
            });
        }
        Some(out)
    }

    fn text_regex(&mut self, text: &str, span: Span) -> Option<Arc<Regex>> {
        match Regex::new(text) {
            Ok(r) => Some(Arc::new(r)),
            Err(_) => Regex::new(&regex::escape(text))
                .ok()
                .map(Arc::new)
                .or_else(|| {
                    self.error(span, format!("invalid pattern `{text}`"));
                    None
                }),
        }
    }

    fn ctl(&mut self, c: &seclang::Ctl, span: Span) -> Option<CtlAction> {
        let text = match &c.value {
            CtlValue::Text(t) => t.as_str(),
            _ => "",
        };
        let on =
            |t: &str| t.eq_ignore_ascii_case("on") || t == "1" || t.eq_ignore_ascii_case("true");
        Some(match (c.option, &c.value) {
            ("ruleEngine", _) => match EngineMode::parse(text) {
                Some(m) => CtlAction::RuleEngine(m),
                None => {
                    self.error(
                        span,
                        format!("ctl:ruleEngine: `{text}` is not On, Off or DetectionOnly"),
                    );
                    return None;
                }
            },
            ("ruleRemoveById", CtlValue::Ids(ids)) => CtlAction::RemoveById(ids.clone()),
            ("ruleRemoveByTag", _) => {
                CtlAction::RemoveByTag(TagSelector::new(self.text_regex(text, span)?))
            }
            ("ruleRemoveByMsg", _) => CtlAction::RemoveByMsg(self.text_regex(text, span)?),
            (_, CtlValue::RemoveTarget(u)) => {
                let ex = self.exclusions(&u.targets, span)?;
                match &u.selector {
                    RuleSelector::Ids(ids) => CtlAction::RemoveTargetById(ids.clone(), ex),
                    RuleSelector::Tag(t) => CtlAction::RemoveTargetByTag(
                        TagSelector::new(self.text_regex(t, span)?),
                        ex,
                    ),
                    RuleSelector::Msg(m) => {
                        CtlAction::RemoveTargetByMsg(self.text_regex(m, span)?, ex)
                    }
                }
            }
            ("requestBodyProcessor", _) => {
                CtlAction::RequestBodyProcessor(text.to_ascii_uppercase())
            }
            ("requestBodyAccess", _) => CtlAction::RequestBodyAccess(on(text)),
            ("responseBodyAccess", _) => CtlAction::ResponseBodyAccess(on(text)),
            ("forceRequestBodyVariable", _) => CtlAction::ForceRequestBodyVariable(on(text)),
            ("requestBodyLimit", _) | ("responseBodyLimit", _) => {
                let Ok(n) = text.trim().parse::<u64>() else {
                    self.error(span, format!("ctl:{}: `{text}` is not a number", c.option));
                    return None;
                };
                if c.option == "requestBodyLimit" {
                    CtlAction::RequestBodyLimit(n)
                } else {
                    CtlAction::ResponseBodyLimit(n)
                }
            }
            ("auditEngine", _) => {
                CtlAction::AuditEngine(match text.to_ascii_lowercase().as_str() {
                    "on" => AuditEngine::On,
                    "relevantonly" => AuditEngine::RelevantOnly,
                    "off" => AuditEngine::Off,
                    _ => {
                        self.error(
                            span,
                            format!("ctl:auditEngine: `{text}` is not On, Off or RelevantOnly"),
                        );
                        return None;
                    }
                })
            }
            ("auditLogParts", _) => {
                // v3 (ctl/audit_log_parts.cc) only adds (`+E`) or removes (`-E`)
                // parts; anything else is refused when loading.
                let valid = text.len() > 1
                    && (text.starts_with('+') || text.starts_with('-'))
                    && text[1..].chars().all(|c| "ABCDEFGHIJKZ".contains(c));
                if !valid {
                    self.error(
                        span,
                        format!("ctl:auditLogParts: `{text}` must be `+` or `-` followed by audit log parts (A-K, Z)"),
                    );
                    return None;
                }
                CtlAction::AuditLogParts(text.to_string())
            }
            (other, _) => CtlAction::Other(other, text.to_string()),
        })
    }
}

fn set_flag(from_default: bool, default: &mut Option<bool>, own: &mut Option<bool>, v: bool) {
    if from_default {
        *default = Some(v);
    } else {
        *own = Some(v);
    }
}
