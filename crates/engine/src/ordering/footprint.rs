//! What one rule (with its chain links) reads and writes: the facts the hazard
//! analysis compares. Anything that cannot be described as keyed reads and writes
//! of transaction state makes the rule a barrier, with the reason.

use crate::macros::{MacroString, Part};
use crate::rule::{CompiledOp, Disruptive, KeySel, Rule, RuleIdx};
use crate::variable::Var;
use crate::Program;
use seclang::SetVarOp;

/// A piece of transaction state: a collection member, a whole collection, or the
/// members whose keys start with a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The collection (`tx`, `ip`, `env`, `state` for engine state).
    pub col: String,
    /// The member, lower case; `None` for every member.
    pub name: Option<String>,
    /// Whether `name` is a prefix (keys written through macros).
    pub prefix: bool,
}

impl Key {
    fn member(col: &str, name: &str) -> Key {
        Key {
            col: col.to_string(),
            name: Some(name.to_ascii_lowercase()),
            prefix: false,
        }
    }

    fn any(col: &str) -> Key {
        Key {
            col: col.to_string(),
            name: None,
            prefix: false,
        }
    }

    /// Whether two keys may name the same state.
    pub fn overlaps(&self, other: &Key) -> bool {
        if self.col != other.col {
            return false;
        }
        match (&self.name, &other.name) {
            (None, _) | (_, None) => true,
            (Some(a), Some(b)) => match (self.prefix, other.prefix) {
                (false, false) => a == b,
                (true, false) => b.starts_with(a.as_str()),
                (false, true) => a.starts_with(b.as_str()),
                (true, true) => a.starts_with(b.as_str()) || b.starts_with(a.as_str()),
            },
        }
    }
}

/// How a matched rule can end the phase in self-contained mode: two exits may be
/// swapped only when they end it the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// `deny` with this status.
    Deny(u16),
    /// `drop`.
    Drop,
    /// `redirect` to this literal URL with this status.
    Redirect(String, u16),
}

/// The reads and writes of a chain (starter and links).
#[derive(Debug, Clone, Default)]
pub struct Footprint {
    /// State read (targets, macros anywhere in the rule).
    pub reads: Vec<Key>,
    /// State written other than by commutative additions.
    pub writes: Vec<Key>,
    /// `setvar:tx.k=+N` with N a non-negative literal or a `%{tx.c}` macro:
    /// additions commute with each other.
    pub adds: Vec<Key>,
    /// Whether a match leaves a trace others see besides its exit (a write, a log
    /// record or a severity of a rule that does not end the phase).
    pub effects: bool,
    /// Whether a match is logged.
    pub logs: bool,
    /// How a match ends the phase (a disruptive action), when it does.
    pub exit: Option<Exit>,
    /// Why the rule must keep its place, when it must.
    pub barrier: Option<&'static str>,
    /// Whether it reads a capture group (`TX:0`-`TX:9`) its own chain did not
    /// capture (before its own match, or in a chain without `capture`).
    pub external_capture_reads: bool,
}

impl Footprint {
    /// Drops the writes of capture groups (when no rule of the program reads an
    /// earlier rule's captures, they are private to each chain).
    pub fn without_capture_writes(mut self) -> Footprint {
        self.writes
            .retain(|k| !(k.col == "tx" && k.name.as_deref().is_some_and(is_digit_key)));
        self
    }
}

fn is_digit_key(k: &str) -> bool {
    k.len() == 1 && k.as_bytes()[0].is_ascii_digit()
}

/// The footprint of the chain starting at `idx`.
pub fn of_chain(program: &Program, idx: RuleIdx) -> Footprint {
    let mut f = Footprint::default();
    let mut link = Some(idx);
    let mut first = true;
    let mut captured = false;
    while let Some(l) = link {
        let Some(rule) = program.rules.get(l as usize) else {
            f.barrier = Some("dangling chain link");
            return f;
        };
        add_rule(&mut f, rule, first, captured);
        captured |= rule.capture;
        first = false;
        link = rule.chain_next;
    }
    // A rule's own log record and severity belong to its exit when it has one
    // (which of several matching exits reports is what exit ordering may change);
    // writes are effects either way.
    f.effects = !f.writes.is_empty()
        || f.adds.iter().any(|k| k.col != "state")
        || (f.exit.is_none() && (f.logs || !f.adds.is_empty()));
    f
}

/// `captured`: an earlier link of the chain captures (its groups are the ones a
/// read of `TX:0-9` sees); after this rule's own match its captures count too.
fn add_rule(f: &mut Footprint, rule: &Rule, starter: bool, captured: bool) {
    let after = captured || rule.capture;
    if !rule.ctls.is_empty() {
        f.barrier = Some("ctl action");
    }
    if !rule.initcols.is_empty() || rule.setsid.is_some() || rule.setuid.is_some() {
        f.barrier = Some("initcol/setsid/setuid");
    }
    if !rule.sanitise.is_empty() {
        f.barrier = Some("sanitise action");
    }
    if matches!(rule.operator.op, CompiledOp::GeoLookup(_)) {
        f.barrier = Some("@geoLookup writes GEO");
    }
    if rule.skip > 0 || rule.skip_after.is_some() {
        f.barrier = Some("skip/skipAfter");
    }
    for t in &rule.targets {
        read_var(f, t.var, &t.sel, starter, captured);
    }
    for e in &rule.exclusions {
        read_var(f, e.var, &e.sel, starter, captured);
    }
    if let CompiledOp::Dynamic(m) = &rule.operator.op {
        read_macro(f, m, !starter, captured);
    }
    for m in [&rule.meta.msg, &rule.meta.logdata].into_iter().flatten() {
        read_macro(f, m, true, after);
    }
    if let Disruptive::Redirect(m) = &rule.disruptive {
        read_macro(f, m, true, after);
    }
    if rule.capture {
        for d in 0..10 {
            f.writes.push(Key::member("tx", &d.to_string()));
        }
    }
    if rule.meta.severity.is_some() {
        // HIGHEST_SEVERITY keeps the minimum: commutative, read by HIGHEST_SEVERITY.
        f.adds.push(Key::member("state", "highest_severity"));
    }
    for sv in &rule.setvars {
        read_macro(f, &sv.key, true, after);
        read_macro(f, &sv.value, true, after);
        let col = sv.collection.name().to_ascii_lowercase();
        let key = match &sv.key_literal {
            Some(k) => Key::member(&col, k),
            None => match sv.key.parts().first() {
                Some(Part::Literal(l)) => Key {
                    col: col.clone(),
                    name: Some(String::from_utf8_lossy(l).to_ascii_lowercase()),
                    prefix: true,
                },
                _ => Key::any(&col),
            },
        };
        if sv.op == SetVarOp::Add && !key.prefix && non_negative_value(&sv.value) {
            f.adds.push(key);
        } else {
            f.writes.push(key);
        }
    }
    for (k, v) in &rule.setenvs {
        read_macro(f, k, true, after);
        read_macro(f, v, true, after);
        f.writes.push(match k.literal() {
            Some(l) => Key::member("env", &String::from_utf8_lossy(l)),
            None => Key::any("env"),
        });
    }
    for (var, key, secs) in &rule.expirevars {
        read_macro(f, key, true, after);
        read_macro(f, secs, true, after);
        f.writes.push(Key::any(&var.name().to_ascii_lowercase()));
    }
    if rule.id != 0 {
        f.logs |= rule.log || rule.auditlog;
        match &rule.disruptive {
            Disruptive::Pass => {}
            Disruptive::Deny => f.exit = Some(Exit::Deny(rule.status.unwrap_or(403))),
            Disruptive::Drop => f.exit = Some(Exit::Drop),
            Disruptive::Redirect(url) => match url.literal() {
                Some(u) => {
                    let status = rule
                        .status
                        .filter(|s| (301..=307).contains(s))
                        .unwrap_or(302);
                    f.exit = Some(Exit::Redirect(
                        String::from_utf8_lossy(u).into_owned(),
                        status,
                    ))
                }
                None => f.barrier = Some("redirect to a macro URL"),
            },
            Disruptive::Allow(_) => f.barrier = Some("allow"),
        }
    }
}

/// Whether an added value is provably a non-negative number: a literal, or one
/// `%{tx.k}` macro (checked against the program by the early-exit analysis; here
/// it only makes the write an addition).
fn non_negative_value(v: &MacroString) -> bool {
    match v.literal() {
        Some(l) => crate::transaction::parse_int(l) >= 0 && !l.starts_with(b"-"),
        None => matches!(
            v.parts(),
            [Part::Var {
                var: Var::Tx,
                key: Some(_),
                ..
            }]
        ),
    }
}

fn read_var(f: &mut Footprint, var: Var, sel: &KeySel, starter: bool, captured: bool) {
    if var == Var::Tx {
        let digits = match sel {
            KeySel::Key(k) => is_digit_key(k),
            KeySel::Regex(_) => (0..10).any(|d: u8| sel.selects(&[b'0' + d])),
            _ => true,
        };
        if digits && captured {
            if let KeySel::Key(_) = sel {
                return; // the chain's own capture
            }
        }
        f.external_capture_reads |= digits;
    }
    match var {
        // A chain link reads its own chain's matches; a starter reads the previous
        // rule's, which any reordering changes.
        Var::MatchedVar | Var::MatchedVars | Var::MatchedVarName | Var::MatchedVarsNames
            if starter =>
        {
            f.barrier = Some("reads MATCHED_VAR(S) of an earlier rule");
        }
        Var::HighestSeverity => f.reads.push(Key::member("state", "highest_severity")),
        Var::MscPcreLimitsExceeded | Var::Duration => f.barrier = Some("reads engine state"),
        Var::Env => f.reads.push(key_of("env", sel)),
        v if v.is_store() => f.reads.push(key_of(&v.name().to_ascii_lowercase(), sel)),
        _ => {}
    }
}

fn key_of(col: &str, sel: &KeySel) -> Key {
    match sel {
        KeySel::Key(k) => Key::member(col, k),
        _ => Key::any(col),
    }
}

/// `own`: expanded after the rule's own match (its MATCHED_VAR); `captured`: the
/// chain's captures are its own by then.
fn read_macro(f: &mut Footprint, m: &MacroString, own: bool, captured: bool) {
    for p in m.parts() {
        if let Part::Var { var, key, .. } = p {
            if *var == Var::Tx {
                match key {
                    Some(k) if is_digit_key(k) => {
                        if captured {
                            continue; // the chain's own capture
                        }
                        f.external_capture_reads = true;
                    }
                    None => f.external_capture_reads = true,
                    _ => {}
                }
            }
            match (var, key) {
                (
                    Var::MatchedVar
                    | Var::MatchedVars
                    | Var::MatchedVarName
                    | Var::MatchedVarsNames,
                    _,
                ) if !own => {
                    f.barrier = Some("reads MATCHED_VAR(S) of an earlier rule");
                }
                (Var::HighestSeverity, _) => f.reads.push(Key::member("state", "highest_severity")),
                (Var::Env, Some(k)) => f.reads.push(Key::member("env", k)),
                (Var::Env, None) => f.reads.push(Key::any("env")),
                (v, Some(k)) if v.is_store() => {
                    f.reads.push(Key::member(&v.name().to_ascii_lowercase(), k))
                }
                (v, None) if v.is_store() => f.reads.push(Key::any(&v.name().to_ascii_lowercase())),
                _ => {}
            }
        }
    }
}

/// Whether two footprints must keep their relative order (`a` first).
/// `exits_matter`: units can end the phase (self-contained ordering).
pub fn conflicts(a: &Footprint, b: &Footprint, exits_matter: bool) -> bool {
    let any = |xs: &[Key], ys: &[Key]| xs.iter().any(|x| ys.iter().any(|y| x.overlaps(y)));
    // Read after write, write after read, write after write; additions commute
    // with additions but not with plain reads or writes.
    if any(&a.writes, &b.reads)
        || any(&a.reads, &b.writes)
        || any(&a.writes, &b.writes)
        || any(&a.adds, &b.writes)
        || any(&a.writes, &b.adds)
    {
        return true;
    }
    if any(&a.adds, &b.reads) || any(&a.reads, &b.adds) {
        return true;
    }
    if exits_matter {
        // A rule ending the phase hides everything after it: a rule with visible
        // effects may not pass it either way, and two exits must end it alike.
        match (&a.exit, &b.exit) {
            (Some(x), Some(y)) if x != y => return true,
            (Some(_), _) if b.effects => return true,
            (_, Some(_)) if a.effects => return true,
            _ => {}
        }
    }
    false
}
