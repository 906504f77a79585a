//! Compiled rules: every static decision made at load time (targets resolved to
//! variables, operators built, transformation chains interned, actions classified,
//! macros split, jumps resolved).

use std::sync::{Arc, OnceLock};

use regex::bytes::Regex;

use crate::macros::MacroString;
use crate::operator::Operator;
use crate::variable::Var;

/// Index of a rule in [`crate::Program::rules`].
pub type RuleIdx = u32;

/// Which members of a collection a target selects.
#[derive(Debug, Clone)]
pub enum KeySel {
    /// All members.
    All,
    /// Members whose key equals this (compared ignoring ASCII case).
    Key(String),
    /// Members whose key matches this regex.
    Regex(Arc<KeyRegex>),
    /// An XPath expression (XML only), compiled with the rule's `xmlns` bindings.
    XPath(crate::body::XPath),
}

impl KeySel {
    /// Whether a member key is selected.
    pub fn selects(&self, key: &[u8]) -> bool {
        match self {
            KeySel::All | KeySel::XPath(_) => true,
            KeySel::Key(k) => k.as_bytes().eq_ignore_ascii_case(key),
            KeySel::Regex(r) => r.is_match(key),
        }
    }
}

/// A regex selector (`ARGS:/^id_/`, matched case-insensitively). Most CRS
/// selectors are plain words (`/__utm/`); those are matched by a case-insensitive
/// substring search instead of the regex engine.
#[derive(Debug)]
pub struct KeyRegex {
    re: Regex,
    /// The lower-cased literal when the pattern is a plain substring.
    literal: Option<Vec<u8>>,
    /// The lower-cased literal every match starts with, when the pattern is
    /// anchored (`^_pk_ref`, `^pbjs-\w+$`): most keys are rejected without the
    /// regex engine.
    prefix: Vec<u8>,
    /// The pattern is `^` and that literal alone: a key starting with it matches
    /// without the regex engine.
    prefix_only: bool,
    /// For a pattern that matches exactly the keys holding one ASCII literal
    /// (`MULTIPART_HEADERS_CONTENT_TYPES_*`, `paramcounter_.*`: the literal then
    /// a part that matches the empty string anywhere), the lower-cased literal
    /// and whether the pattern is anchored at the start. On an ASCII key the
    /// regex's case folding is ASCII case folding, so such a key is decided by a
    /// comparison; other keys go to the regex (which folds `ſ` to `s`, `K` to
    /// `k`).
    ascii: Option<(Vec<u8>, bool)>,
    /// The positions of the keys it selects among a baseline's members (TX as
    /// the prologue leaves it: about 130 members every transaction starts from),
    /// with the baseline's identity: found once, on the first transaction
    /// restored from it, instead of testing every key on every transaction.
    baseline: OnceLock<(u64, Box<[u32]>)>,
}

impl KeyRegex {
    /// Compiles a selector pattern (case-insensitive, as ModSecurity does).
    pub fn new(pattern: &str) -> Result<KeyRegex, regex::Error> {
        let re = regex::bytes::RegexBuilder::new(pattern)
            .case_insensitive(true)
            .build()?;
        let plain = !pattern.is_empty()
            && pattern
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b' ');
        let prefix = anchored_prefix(pattern);
        let prefix_only = pattern.len() == 1 + prefix.len();
        Ok(KeyRegex {
            re,
            literal: plain.then(|| pattern.to_ascii_lowercase().into_bytes()),
            prefix,
            prefix_only,
            ascii: literal_then_empty(pattern),
            baseline: OnceLock::new(),
        })
    }

    /// The positions below `len` of the keys it selects in `c`, a collection
    /// holding the members of baseline `id` at their positions (see
    /// [`crate::collection::Collection::baseline_keys`]): found on first use
    /// and kept. `None` when they were kept for another baseline.
    pub fn baseline_matches(
        &self,
        c: &crate::collection::Collection,
        id: u64,
        len: usize,
    ) -> Option<&[u32]> {
        let (kept, positions) = self.baseline.get_or_init(|| {
            let positions = (0..len)
                .filter(|&p| c.member_bytes(p).is_some_and(|(k, _)| self.is_match(k)))
                .map(|p| p as u32)
                .collect();
            (id, positions)
        });
        (*kept == id).then_some(positions)
    }

    /// Whether a key matches.
    pub fn is_match(&self, key: &[u8]) -> bool {
        if let Some(lit) = &self.literal {
            return contains_ignore_ascii_case(key, lit);
        }
        // The first byte rejects most keys before the whole prefix is compared.
        let first = match (self.prefix.first(), key.first()) {
            (Some(&p), Some(&k)) => p == k.to_ascii_lowercase(),
            (Some(_), None) => false,
            (None, _) => true,
        };
        // (A key already in lower case, as TX keys are, compares as bytes.)
        if !first
            || !key.get(..self.prefix.len()).is_some_and(|p| {
                crate::bytes_eq::bytes_eq(p, &self.prefix) || p.eq_ignore_ascii_case(&self.prefix)
            })
        {
            return false;
        }
        if self.prefix_only {
            return true;
        }
        match &self.ascii {
            // Every character of the literal takes at least one byte of a match
            // (its case-folded forms `ſ`, `K` take more): a shorter key holds none,
            // without the ASCII test or the search (most TX keys, for 922110's
            // `MULTIPART_HEADERS_CONTENT_TYPES_*` read on every request).
            Some((lit, _)) if key.len() < lit.len() => false,
            Some((lit, true)) if key.is_ascii() => key
                .get(..lit.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(lit)),
            Some((lit, false)) if key.is_ascii() => contains_ignore_ascii_case(key, lit),
            _ => self.re.is_match(key),
        }
    }
}

/// Whether `hay` holds `lit` (lower-case ASCII), ignoring ASCII case.
fn contains_ignore_ascii_case(hay: &[u8], lit: &[u8]) -> bool {
    let Some(&first) = lit.first() else {
        return true;
    };
    hay.len() >= lit.len()
        && (0..=hay.len() - lit.len()).any(|i| {
            hay[i].to_ascii_lowercase() == first && hay[i..i + lit.len()].eq_ignore_ascii_case(lit)
        })
}

/// For a pattern (compiled case-insensitively) of the form `[^]L X`, with `L` a
/// non-empty ASCII literal and `X` a part that matches the empty string at any
/// position (no anchors or word boundaries, minimum length 0): `L` lower-cased
/// and whether `^` leads. Such a pattern matches a key exactly when the key holds
/// (or, anchored, starts with) `L` up to case folding: any match contains `L`, and
/// `L` followed by `X`'s empty match is a match.
fn literal_then_empty(pattern: &str) -> Option<(Vec<u8>, bool)> {
    use regex_syntax::hir::{HirKind, Look};
    // Inline flags (`(?-i)`, `(?x)`) would change what the literal means: not here.
    if pattern
        .match_indices("(?")
        .any(|(i, _)| pattern.as_bytes().get(i + 2) != Some(&b':'))
    {
        return None;
    }
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .ok()?;
    let parts: &[regex_syntax::hir::Hir] = match hir.kind() {
        HirKind::Concat(parts) => parts,
        HirKind::Literal(_) => std::slice::from_ref(&hir),
        _ => return None,
    };
    let (anchored, parts) = match parts.first().map(|h| h.kind()) {
        Some(HirKind::Look(Look::Start)) => (true, &parts[1..]),
        _ => (false, parts),
    };
    let (first, rest) = parts.split_first()?;
    let HirKind::Literal(lit) = first.kind() else {
        return None;
    };
    let nullable_anywhere = rest
        .iter()
        .all(|h| h.properties().look_set().is_empty() && h.properties().minimum_len() == Some(0));
    (!lit.0.is_empty() && lit.0.is_ascii() && nullable_anywhere)
        .then(|| (lit.0.to_ascii_lowercase(), anchored))
}

/// The literal an anchored pattern's matches start with: the letters, digits, `_`
/// and `-` after a leading `^`, up to the first other character, without the last
/// one when a quantifier or alternation may follow and apply to it alone. Empty
/// when the pattern is not anchored (or has no top-level alternation-free prefix).
fn anchored_prefix(pattern: &str) -> Vec<u8> {
    let Some(rest) = pattern.strip_prefix('^') else {
        return Vec::new();
    };
    // A top-level `|` would make `^` apply to one branch only.
    if pattern.contains('|') {
        return Vec::new();
    }
    // Not past `k` or `s`: case-insensitive Unicode matching also takes the
    // Kelvin sign and the long s for them.
    let lit: Vec<u8> = rest
        .bytes()
        .take_while(|b| {
            (b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
                && !matches!(b.to_ascii_lowercase(), b'k' | b's')
        })
        .map(|b| b.to_ascii_lowercase())
        .collect();
    match rest.as_bytes().get(lit.len()) {
        // `^ab?`, `^ab*`, `^ab{0,1}`: the last character is optional.
        Some(b'?' | b'*' | b'{') => lit[..lit.len().saturating_sub(1)].to_vec(),
        _ => lit,
    }
}

/// One compiled target of a rule.
#[derive(Debug, Clone)]
pub struct TargetSpec {
    /// The variable.
    pub var: Var,
    /// Which members.
    pub sel: KeySel,
    /// `&VAR`: count instead of values.
    pub count: bool,
}

/// An exclusion (`!ARGS:foo`, `SecRuleUpdateTargetById ... !ARGS:foo`,
/// `ctl:ruleRemoveTargetById`): values of `var` whose key `sel` selects are skipped.
#[derive(Debug, Clone)]
pub struct Exclusion {
    /// The variable.
    pub var: Var,
    /// Which keys are excluded.
    pub sel: KeySel,
}

impl Exclusion {
    /// Whether a value of `var` with `key` is excluded.
    pub fn excludes(&self, var: Var, key: &[u8]) -> bool {
        self.var == var && self.sel.selects(key)
    }
}

/// A compiled operator.
#[derive(Debug)]
pub enum CompiledOp {
    /// Built once at load time.
    Static(Box<dyn Operator>),
    /// The argument has macros: expanded and built per evaluation.
    Dynamic(MacroString),
    /// `@geoLookup`: a lookup that fills the transaction's `GEO` collection, run by
    /// the phase evaluator itself (an [`Operator`] cannot write transaction state).
    /// Because of that side effect such a rule is never pure, folded or
    /// prefiltered.
    GeoLookup(crate::operator::GeoLookup),
}

/// The operator of a rule.
#[derive(Debug)]
pub struct RuleOperator {
    /// Canonical name (`rx`).
    pub name: &'static str,
    /// The argument as written.
    pub argument: String,
    /// `!@op`.
    pub negated: bool,
    /// The operator.
    pub op: CompiledOp,
}

/// The disruptive action a rule carries, after `block` and defaults are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disruptive {
    /// No disruptive action: processing continues.
    Pass,
    /// Deny with a status.
    Deny,
    /// Close the connection.
    Drop,
    /// Redirect to a URL (macro string).
    Redirect(MacroString),
    /// Stop processing: the rest of the transaction (`allow`), the current phase
    /// (`allow:phase`) or the request phases (`allow:request`).
    Allow(AllowScope),
}

/// The scope of `allow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllowScope {
    /// Everything (except logging).
    All,
    /// The current phase.
    Phase,
    /// The request phases.
    Request,
}

/// A `setvar`.
#[derive(Debug, Clone)]
pub struct SetVarAction {
    /// The collection.
    pub collection: Var,
    /// The key (macro string): its literal parts lower-cased at load time, the
    /// values of its variables when expanded.
    pub key: MacroString,
    /// Whether the key's literal parts are all ASCII (an expanded key is then
    /// valid UTF-8 when the variables' values are ASCII).
    pub key_ascii: bool,
    /// The operation.
    pub op: seclang::SetVarOp,
    /// The value (macro string).
    pub value: MacroString,
    /// The key, lower-cased, when it has no macro (resolved at load time).
    pub key_literal: Option<String>,
    /// Where the literal key was last found in its collection.
    pub hint: crate::collection::Hint,
}

/// The tag regex of a `ctl:ruleRemoveByTag` or `ctl:ruleRemoveTargetByTag`, with
/// the rules it selects (those with a tag the regex matches) found once the whole
/// rule set is compiled: a transaction tests one bit per rule instead of running
/// the regex over every tag of every rule it reaches.
#[derive(Debug, Clone)]
pub struct TagSelector {
    /// The regex (case-insensitive, as ModSecurity matches tags).
    pub re: Arc<Regex>,
    /// Bit `i` set: rule `i` of the program has a tag `re` matches. Empty until
    /// the compiler fills it (then [`TagSelector::selects`] runs the regex).
    pub rules: Arc<[u64]>,
}

impl TagSelector {
    /// A selector whose rules are not known yet.
    pub fn new(re: Arc<Regex>) -> TagSelector {
        TagSelector {
            re,
            rules: Arc::from(Vec::new()),
        }
    }

    /// The bits of the rules among `rules` (by index) with a tag `re` matches.
    pub fn rule_bits(re: &Regex, rules: &[Rule]) -> Arc<[u64]> {
        let mut bits = vec![0u64; rules.len().div_ceil(64).max(1)];
        for (i, rule) in rules.iter().enumerate() {
            if Self::tags_match(re, rule) {
                bits[i / 64] |= 1 << (i % 64);
            }
        }
        Arc::from(bits)
    }

    fn tags_match(re: &Regex, rule: &Rule) -> bool {
        rule.meta.tags.iter().any(|t| re.is_match(t.as_bytes()))
    }

    /// Whether `rule` has a tag the regex matches.
    #[inline]
    pub fn selects(&self, rule: &Rule) -> bool {
        let i = rule.index as usize;
        match self.rules.get(i / 64) {
            Some(w) => w >> (i % 64) & 1 == 1,
            None => Self::tags_match(&self.re, rule),
        }
    }
}

/// A `ctl` action.
#[derive(Debug, Clone)]
pub enum CtlAction {
    /// `ctl:ruleEngine=...`.
    RuleEngine(crate::EngineMode),
    /// `ctl:ruleRemoveById=...`.
    RemoveById(Vec<seclang::IdRange>),
    /// `ctl:ruleRemoveByTag=...`.
    RemoveByTag(TagSelector),
    /// `ctl:ruleRemoveByMsg=...`.
    RemoveByMsg(Arc<Regex>),
    /// `ctl:ruleRemoveTargetById=ID;TARGETS`.
    RemoveTargetById(Vec<seclang::IdRange>, Vec<Exclusion>),
    /// `ctl:ruleRemoveTargetByTag=TAG;TARGETS`.
    RemoveTargetByTag(TagSelector, Vec<Exclusion>),
    /// `ctl:ruleRemoveTargetByMsg=MSG;TARGETS`.
    RemoveTargetByMsg(Arc<Regex>, Vec<Exclusion>),
    /// `ctl:requestBodyProcessor=...` (upper case).
    RequestBodyProcessor(String),
    /// `ctl:requestBodyAccess=on|off`.
    RequestBodyAccess(bool),
    /// `ctl:responseBodyAccess=on|off`.
    ResponseBodyAccess(bool),
    /// `ctl:requestBodyLimit=N`.
    RequestBodyLimit(u64),
    /// `ctl:responseBodyLimit=N`.
    ResponseBodyLimit(u64),
    /// `ctl:auditEngine=...`.
    AuditEngine(crate::config::AuditEngine),
    /// `ctl:auditLogParts=...`.
    AuditLogParts(String),
    /// `ctl:forceRequestBodyVariable=on|off`.
    ForceRequestBodyVariable(bool),
    /// Options that only affect logging detail or hashing (`debugLogLevel`,
    /// `hashEngine`, `hashEnforcement`, `parseXmlIntoArgs`): accepted and recorded.
    Other(&'static str, String),
}

/// Rule metadata for logs. `severity` comes first (`repr(C)`): the rule loop
/// reads it at every match (HIGHEST_SEVERITY), the rest only records do.
#[derive(Debug, Clone, Default)]
#[repr(C)]
pub struct Meta {
    /// `severity`.
    pub severity: Option<u8>,
    /// `msg`.
    pub msg: Option<MacroString>,
    /// `logdata`.
    pub logdata: Option<MacroString>,
    /// `tag`s.
    pub tags: Vec<String>,
    /// `rev`.
    pub rev: Option<String>,
    /// `ver`.
    pub ver: Option<String>,
    /// `maturity`.
    pub maturity: Option<String>,
    /// `accuracy`.
    pub accuracy: Option<String>,
}

/// A compiled rule (or chain link).
///
/// Laid out in declaration order (`repr(C)`), the fields the rule loop reads at
/// every rule it visits first: its folded result, jumps, lean plan, `setvar`s,
/// ids, prefilter bit and group, flags and then the severity (first in
/// [`Meta`]) share the struct's first cache lines, and what only a match's
/// record or a message reads comes last. A proxy's network path evicts the
/// rules between requests; each rule visited then costs fewer line fetches.
#[derive(Debug)]
#[repr(C)]
pub struct Rule {
    /// The result of this rule for every request, when the compiler could
    /// evaluate it at load time (see [`crate::prune`]).
    pub static_result: Option<crate::prune::StaticResult>,
    /// `skipAfter` target: index in the phase's step list to continue from.
    pub skip_after: Option<usize>,
    /// Where its values are, when the rule loop can find them without the
    /// general target resolution (see [`crate::lean`]; with pre-pruning).
    pub lean: Option<crate::lean::LeanPlan>,
    /// Set variables (run on every match).
    pub setvars: Vec<SetVarAction>,
    /// Its index in [`crate::Program::rules`].
    pub index: RuleIdx,
    /// The id (0 for chain links).
    pub id: u32,
    /// The id of the chain starter (equal to `id` for starters).
    pub chain_id: u32,
    /// The transformation chain (interned id; 0 = none).
    pub transforms: u32,
    /// `skip:N`.
    pub skip: u32,
    /// This rule's bit in the program's prefilter, when its operator has
    /// required literals.
    pub prefilter: Option<u32>,
    /// The prefilter group (same targets and transformation chain) whose union of
    /// scan results decides, once per transaction, whether the rule can match at
    /// all; set for prefiltered, non-negated rules without counts that read no
    /// collection rules write ([`Var::is_rule_state`]: those change without new
    /// request data, which the union's validity is tied to), and, with the result
    /// cache, for the other pure rules so placed (see
    /// [`crate::step_gates::gate_bit`]).
    pub prefilter_group: Option<u32>,
    /// The rule's target list, when its values come from request data alone (see
    /// [`crate::transaction`]'s target-set cache): rules with the same list and
    /// exclusions share one resolution per transaction while the data stay the
    /// same.
    pub target_set: Option<u32>,
    /// The next link of the chain.
    pub chain_next: Option<RuleIdx>,
    /// `status`.
    pub status: Option<u16>,
    /// The phase (1-5).
    pub phase: u8,
    /// Whether this is a SecAction (no targets; always matches).
    pub unconditional: bool,
    /// `multiMatch`.
    pub multi_match: bool,
    /// `capture`.
    pub capture: bool,
    /// Whether the disruptive action came from `block`.
    pub is_block: bool,
    /// Whether a match is logged.
    pub log: bool,
    /// Whether a match goes to the audit log.
    pub auditlog: bool,
    /// Whether the operator's result is a pure function of the transformed value
    /// (built at load time): cacheable per value. With `capture` or `multiMatch`,
    /// only "no match" is cached (a match must fill TX:0-9).
    pub pure: bool,
    /// Whether its `msg` and `logdata` are expanded when its record is read
    /// rather than at its match (see [`crate::deferred_log`]; with pre-pruning).
    pub defer_log: bool,
    /// Whether it has one of the actions a full match runs before logging
    /// (`ctl`, `initcol`, `setsid`, `setuid`, `sanitise*`, `setenv`,
    /// `expirevar`; see [`Rule::has_match_actions`]): most rules have none, and
    /// their matches pass over the lists with one test.
    pub match_actions: bool,
    /// Metadata.
    pub meta: Meta,
    /// The operator.
    pub operator: RuleOperator,
    /// A macro operator argument that expands the same for every request, with
    /// the operator built from it at load time (see [`crate::prune`]).
    pub resolved_op: Option<(String, std::sync::Arc<dyn crate::operator::Operator>)>,
    /// The resolved disruptive action.
    pub disruptive: Disruptive,
    /// Targets.
    pub targets: Vec<TargetSpec>,
    /// Exclusions.
    pub exclusions: Vec<Exclusion>,
    /// The line it was written at (in `record.file`).
    pub line: u32,
    /// What its records share (see [`crate::audit::RecordParts`]), among them
    /// the file the rule was written in.
    pub record: crate::audit::RecordParts,
    /// `ctl` actions.
    pub ctls: Vec<CtlAction>,
    /// The `skipAfter` marker name, for messages.
    pub skip_after_name: Option<String>,
    /// `initcol:col=key`.
    pub initcols: Vec<(Var, MacroString)>,
    /// `setsid`.
    pub setsid: Option<MacroString>,
    /// `setuid`.
    pub setuid: Option<MacroString>,
    /// `setenv:name=value`.
    pub setenvs: Vec<(MacroString, MacroString)>,
    /// `expirevar:col.key=seconds`.
    pub expirevars: Vec<(Var, MacroString, MacroString)>,
    /// `sanitiseArg`, `sanitiseMatched`, ... (names and macro arguments).
    pub sanitise: Vec<(&'static str, Option<MacroString>)>,
}

impl Rule {
    /// Whether it has a `ctl`, `initcol`, `setsid`, `setuid`, `sanitise*`,
    /// `setenv` or `expirevar` action (what [`Rule::match_actions`] keeps).
    pub fn has_match_actions(&self) -> bool {
        !self.ctls.is_empty()
            || !self.initcols.is_empty()
            || self.setsid.is_some()
            || self.setuid.is_some()
            || !self.sanitise.is_empty()
            || !self.setenvs.is_empty()
            || !self.expirevars.is_empty()
    }
}

/// One step of a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A rule (chain starter).
    Rule(RuleIdx),
    /// A `SecMarker` (a jump target).
    Marker,
    /// A rule removed at load time by `SecRuleRemoveById/ByTag/ByMsg`: it never
    /// runs, but still counts for `skip` (v3 keeps the removals as exceptions that
    /// `RulesSet::evaluate` checks after the skip counter).
    Removed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_the_rule_loop_reads_are_in_the_first_three_cache_lines() {
        use std::mem::offset_of;
        let hot = [
            ("static_result", offset_of!(Rule, static_result)),
            ("skip_after", offset_of!(Rule, skip_after)),
            ("lean", offset_of!(Rule, lean)),
            ("setvars", offset_of!(Rule, setvars)),
            ("index", offset_of!(Rule, index)),
            ("skip", offset_of!(Rule, skip)),
            ("prefilter", offset_of!(Rule, prefilter)),
            ("prefilter_group", offset_of!(Rule, prefilter_group)),
            ("chain_next", offset_of!(Rule, chain_next)),
            ("unconditional", offset_of!(Rule, unconditional)),
            ("match_actions", offset_of!(Rule, match_actions)),
            (
                "severity",
                offset_of!(Rule, meta) + offset_of!(Meta, severity),
            ),
        ];
        for (name, at) in hot {
            assert!(at < 192, "{name} at byte {at}");
        }
        // What only records and messages read comes after them.
        for (name, at) in [
            ("record", offset_of!(Rule, record)),
            ("sanitise", offset_of!(Rule, sanitise)),
            ("line", offset_of!(Rule, line)),
        ] {
            assert!(at >= 192, "{name} at byte {at}");
        }
    }

    #[test]
    fn anchored_key_patterns_reject_by_prefix_exactly_as_the_regex() {
        assert_eq!(anchored_prefix("^_pk_ref"), b"_p");
        assert_eq!(anchored_prefix("^pbjs-\\w+$"), b"pbj");
        assert_eq!(anchored_prefix("^_ga(?:_\\w+)?$"), b"_ga");
        assert_eq!(anchored_prefix("^abc?"), b"ab");
        assert_eq!(anchored_prefix("^ab|cd"), b"");
        assert_eq!(anchored_prefix("__utm"), b"");
        assert!(KeyRegex::new("^header_name_920450_").is_ok_and(|k| k.prefix_only));
        assert!(KeyRegex::new("^_pk_ref").is_ok_and(|k| !k.prefix_only));
        assert!(KeyRegex::new("^abc?").is_ok_and(|k| !k.prefix_only));
        // The CRS's TX walks with a literal then an optional part compare on ASCII
        // keys; patterns whose tail needs a position (`$`, `\b`) or a character do not.
        let ascii = |p: &str| {
            literal_then_empty(p).map(|(l, a)| (String::from_utf8(l).unwrap_or_default(), a))
        };
        assert_eq!(
            ascii("MULTIPART_HEADERS_CONTENT_TYPES_*"),
            Some(("multipart_headers_content_types".into(), false))
        );
        assert_eq!(
            ascii("rfi_parameter_.*"),
            Some(("rfi_parameter_".into(), false))
        );
        assert_eq!(
            ascii("^header_name_920450_"),
            Some(("header_name_920450_".into(), true))
        );
        assert_eq!(ascii("^_ga(?:_\\w+)?$"), None);
        assert_eq!(ascii("ab\\b"), None);
        assert_eq!(ascii("(?-i)AB.*"), None);
        assert_eq!(ascii("(?:ab)c_*"), Some(("abc".into(), false)));
        assert_eq!(ascii("ab_+"), None);
        assert_eq!(ascii("(?:a|b)c"), None);
        assert_eq!(ascii("caf\u{e9}.*"), None);
        for (pattern, keys) in [
            (
                "^_pk_ref",
                &["_pk_ref.1", "_PK_REF", "_p\u{212a}_ref", "x_pk_ref", "_p"][..],
            ),
            (
                "^_ga(?:_\\w+)?$",
                &["_ga", "_GA_X1", "_gid", "a_ga", ""][..],
            ),
            (
                "^header_name_920450_",
                &[
                    "header_name_920450_host",
                    "HEADER_NAME_920450_",
                    "header_name_92045",
                    "xheader_name_920450_a",
                    "",
                ][..],
            ),
            (
                "^pbjs-\\w+$",
                &["pbjs-a", "PBJS-b", "pbj\u{17f}-c", "pbjs-", "xpbjs-a"][..],
            ),
            (
                "MULTIPART_HEADERS_CONTENT_TYPES_*",
                &[
                    "multipart_headers_content_types_0",
                    "MULTIPART_HEADERS_CONTENT_TYPES",
                    "x_multipart_headers_content_types__",
                    "multipart_header\u{17f}_content_types_1",
                    "multipart_headers_content_type",
                    "ultipart_headers_content_types_0",
                    "multipart_headers_content_typess",
                    "header_name_920450_host",
                    "",
                ][..],
            ),
            (
                "paramcounter_.*",
                &["paramcounter_a", "PARAMCOUNTER_", "paramcounte", "x"][..],
            ),
            (
                "^paramcounter_.*",
                &[
                    "paramcounter_a",
                    "PARAMCOUNTER_",
                    "xparamcounter_a",
                    "aramcounter_",
                    "paramcounter",
                    "",
                ][..],
            ),
            (
                "rfi_parameter_.*",
                &[
                    "tx_rfi_parameter_1",
                    "RFI_PARAMETER_",
                    "fi_parameter_",
                    "rfi_parameter",
                    "rfi_parameter_\u{212a}",
                ][..],
            ),
        ] {
            let k = KeyRegex::new(pattern).unwrap_or_else(|e| panic!("{e}"));
            let re = regex::bytes::RegexBuilder::new(pattern)
                .case_insensitive(true)
                .build()
                .unwrap_or_else(|e| panic!("{e}"));
            for key in keys {
                assert_eq!(
                    k.is_match(key.as_bytes()),
                    re.is_match(key.as_bytes()),
                    "{pattern} on {key}"
                );
            }
        }
    }
}

#[cfg(test)]
mod key_regex_props {
    use super::KeyRegex;
    use proptest::prelude::*;

    /// Keys made of pieces of the patterns below, letters in either case and a
    /// few non-ASCII characters the case folding knows.
    fn key() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("multipart_".to_string()),
            Just("HEADERS_".to_string()),
            Just("content_types".to_string()),
            Just("MultiPart_".to_string()),
            Just("CONTENT_types".to_string()),
            Just("_".to_string()),
            Just("paramcounter".to_string()),
            Just("\u{17f}".to_string()),
            Just("multipart_header\u{17f}_".to_string()),
            Just("\u{212a}".to_string()),
            "[a-zA-Z0-9_]{0,3}",
        ];
        prop::collection::vec(piece, 0..6).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn selectors_match_as_the_regex(k in key()) {
            for pattern in [
                "MULTIPART_HEADERS_CONTENT_TYPES_*",
                "paramcounter_.*",
                "(?:content|header)s_",
                "^paramcounter_.*",
                "rfi_parameter_.*",
                "content_types$",
                "(?-i)Paramcounter_.*",
                "^multipart_headers_(?:content|x)",
                "^multipart_",
                "content",
            ] {
                let sel = KeyRegex::new(pattern).unwrap_or_else(|e| panic!("{e}"));
                let re = regex::bytes::RegexBuilder::new(pattern)
                    .case_insensitive(true)
                    .build()
                    .unwrap_or_else(|e| panic!("{e}"));
                prop_assert_eq!(sel.is_match(k.as_bytes()), re.is_match(k.as_bytes()), "{} on {:?}", pattern, k);
            }
        }
    }
}
