//! Resolving targets to values and expanding macros.

use std::borrow::Cow;

use super::data::{Entry, Scratch};
use super::Transaction;
use crate::collection::{now_unix, Collection};
use crate::macros::MacroString;
use crate::rule::{KeySel, Rule, TargetSpec};
use crate::variable::Var;

/// Where a candidate value lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Src {
    /// In the arena: memoisable.
    Slot(u32),
    /// In the per-rule scratch list (state-derived values, counts).
    Scratch(usize),
}

/// A value a rule inspects.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate {
    /// The variable it came from (as named in the rule).
    pub var: Var,
    /// Whether it is a count (`&VAR`).
    pub count: bool,
    /// Where the key and value are.
    pub src: Src,
}

impl Transaction {
    /// The key and value of a candidate.
    pub(crate) fn entry_of<'a>(&'a self, c: &Candidate, scratch: &'a [Entry]) -> &'a Entry {
        match c.src {
            Src::Slot(s) => self.data.entry(s),
            Src::Scratch(i) => &scratch[i],
        }
    }

    /// Where the matches kept by reference are read from (see
    /// [`super::matched::Source`]).
    #[inline]
    pub(crate) fn lookup(&self) -> super::matched::Lookup<'_> {
        super::matched::Lookup {
            data: &self.data,
            rules: &self.program.rules,
        }
    }

    /// Names a match by its value's display name (`ARGS:foo`, `REQUEST_URI`,
    /// `&ARGS`): an arena value's is written only when read (see
    /// [`super::matched::Match`]), the others' now.
    pub(crate) fn name_match(
        &self,
        c: &Candidate,
        scratch: &[Entry],
        m: &mut super::matched::Match,
    ) {
        if c.count {
            m.name.push('&');
            m.name.push_str(c.var.name());
            return;
        }
        match c.src {
            Src::Slot(slot) => m.name_slot(c.var, slot),
            Src::Scratch(_) => push_var_name(&mut m.name, c.var, &self.entry_of(c, scratch).key),
        }
    }

    fn push_slots(&self, var: Var, list: Var, sel: &KeySel, out: &mut Vec<Candidate>) {
        for &slot in self.data.slots(list) {
            if sel.selects(&self.data.entry(slot).key) {
                out.push(Candidate {
                    var,
                    count: false,
                    src: Src::Slot(slot),
                });
            }
        }
    }

    fn push_collection(
        var: Var,
        c: &Collection,
        sel: &KeySel,
        scratch: &mut Scratch,
        out: &mut Vec<Candidate>,
    ) {
        c.for_each_selected(sel, |k, v| {
            let i = scratch.add(k, v);
            out.push(Candidate {
                var,
                count: false,
                src: Src::Scratch(i),
            });
        });
    }

    fn push_scalar(var: Var, value: &[u8], scratch: &mut Scratch, out: &mut Vec<Candidate>) {
        let i = scratch.add(b"", value);
        out.push(Candidate {
            var,
            count: false,
            src: Src::Scratch(i),
        });
    }

    pub(crate) fn persistent(&self, var: Var) -> Option<&Collection> {
        self.state
            .persistent
            .iter()
            .find(|(v, _, _)| *v == var)
            .map(|(_, _, c)| c)
    }

    /// Appends the values `spec` selects (before exclusions). Values stored in the
    /// arena (all request and response data) take an inlined path; counts and
    /// values computed from state go through [`Transaction::collect_other`].
    #[inline]
    pub(crate) fn collect(
        &self,
        spec: &TargetSpec,
        rule: &Rule,
        scratch: &mut Scratch,
        out: &mut Vec<Candidate>,
    ) {
        let var = spec.var;
        if spec.count {
            return self.collect_other(spec, rule, scratch, out);
        }
        let lists = match var {
            Var::Args => [Var::ArgsGet, Var::ArgsPost],
            Var::ArgsNames => [Var::ArgsGetNames, Var::ArgsPostNames],
            _ if is_stored(var) => [var, var],
            _ => return self.collect_other(spec, rule, scratch, out),
        };
        let n = if lists[0] == lists[1] { 1 } else { 2 };
        let mut any = false;
        for &list in &lists[..n] {
            for &slot in self.data.slots(list) {
                any = true;
                if spec.sel.selects(&self.data.entry(slot).key) {
                    out.push(Candidate {
                        var,
                        count: false,
                        src: Src::Slot(slot),
                    });
                }
            }
        }
        // As libmodsecurity v3's anchored variables: a single-valued variable that
        // was never set still yields one empty value.
        if !any && n == 1 && is_scalar(var) {
            Self::push_scalar(var, b"", scratch, out);
        }
    }

    /// [`Transaction::collect`] for counts and for variables not (only) stored in
    /// the arena.
    #[inline(never)]
    fn collect_other(
        &self,
        spec: &TargetSpec,
        rule: &Rule,
        scratch: &mut Scratch,
        out: &mut Vec<Candidate>,
    ) {
        let start = out.len();
        let var = spec.var;
        let sel = &spec.sel;
        match var {
            Var::Args => {
                self.push_slots(var, Var::ArgsGet, sel, out);
                self.push_slots(var, Var::ArgsPost, sel, out);
            }
            Var::ArgsNames => {
                self.push_slots(var, Var::ArgsGetNames, sel, out);
                self.push_slots(var, Var::ArgsPostNames, sel, out);
            }
            Var::Tx => Self::push_collection(var, &self.state.tx, sel, scratch, out),
            Var::Env => Self::push_collection(var, &self.state.env, sel, scratch, out),
            Var::Geo => Self::push_collection(var, &self.state.geo, sel, scratch, out),
            Var::Ip | Var::Global | Var::Session | Var::User | Var::Resource => {
                if let Some(c) = self.persistent(var) {
                    Self::push_collection(var, c, sel, scratch, out);
                }
            }
            Var::MatchedVars | Var::MatchedVarsNames => {
                for (name, value) in self.state.matched_vars.iter(self.lookup()) {
                    let key = name.split_once(':').map_or(&*name, |(_, k)| k);
                    if sel.selects(key.as_bytes()) {
                        let v: &[u8] = if var == Var::MatchedVars {
                            value
                        } else {
                            name.as_bytes()
                        };
                        let i = scratch.add(key.as_bytes(), v);
                        out.push(Candidate {
                            var,
                            count: false,
                            src: Src::Scratch(i),
                        });
                    }
                }
            }
            Var::Rule => {
                let mut c = Collection::default();
                self.rule_collection(rule, &mut c);
                Self::push_collection(var, &c, sel, scratch, out);
            }
            Var::Xml => match sel {
                KeySel::XPath(path) => {
                    if let Some(doc) = &self.xml {
                        self.xpath_values.for_each(doc, path, |v| {
                            Self::push_scalar(var, v, scratch, out);
                        });
                    }
                }
                // The bare `XML` is "the document" (v3 yields the placeholder
                // `[XML document tree]` and its @validateDTD / @validateSchema read
                // the parsed tree): here the raw body when the XML processor parsed
                // it, and an empty value (no document, which those operators treat
                // as invalid) when the processor ran and failed. Requests the XML
                // processor never saw have no value, so such rules do not run.
                _ if self.xml.is_some() => {
                    Self::push_scalar(var, &self.request_body, scratch, out);
                }
                _ if self.xml_failed => Self::push_scalar(var, b"", scratch, out),
                _ => {}
            },
            _ => {
                if let Some(v) = self.dynamic_scalar(var) {
                    Self::push_scalar(var, &v, scratch, out);
                } else if is_scalar(var) && !self.data.has(var) {
                    // As libmodsecurity v3's anchored variables: a single-valued
                    // variable that was never set still yields one empty value.
                    Self::push_scalar(var, b"", scratch, out);
                } else {
                    self.push_slots(var, var, sel, out);
                }
            }
        }
        if spec.count {
            let n = out.len() - start;
            out.truncate(start);
            let mut digits = [0u8; 20];
            let n = i64::try_from(n).unwrap_or(i64::MAX);
            let i = scratch.add(b"", super::phase::format_int(n, &mut digits));
            out.push(Candidate {
                var,
                count: true,
                src: Src::Scratch(i),
            });
        }
    }

    fn rule_collection(&self, rule: &Rule, c: &mut Collection) {
        c.set("id", rule.chain_id.to_string().into_bytes());
        if let Some(s) = rule.meta.severity {
            c.set("severity", s.to_string().into_bytes());
        }
        if let Some(r) = &rule.meta.rev {
            c.set("rev", r.as_bytes().to_vec());
        }
        if let Some(v) = &rule.meta.ver {
            c.set("ver", v.as_bytes().to_vec());
        }
        if let Some(m) = &rule.meta.maturity {
            c.set("maturity", m.as_bytes().to_vec());
        }
        if let Some(a) = &rule.meta.accuracy {
            c.set("accuracy", a.as_bytes().to_vec());
        }
        c.set("phase", rule.phase.to_string().into_bytes());
        let mut buf = Vec::new();
        if let Some(m) = &rule.meta.msg {
            self.expand(m, None, &mut buf);
            c.set("msg", buf.clone());
        }
        if let Some(l) = &rule.meta.logdata {
            self.expand(l, None, &mut buf);
            c.set("logdata", buf.clone());
        }
    }

    /// Values computed from state rather than stored.
    fn dynamic_scalar(&self, var: Var) -> Option<Cow<'_, [u8]>> {
        let owned = |s: String| Some(Cow::Owned(s.into_bytes()));
        match var {
            Var::MatchedVar => Some(Cow::Borrowed(
                self.state
                    .matched_vars
                    .last_value(self.lookup())
                    .unwrap_or_default(),
            )),
            Var::MatchedVarName => Some(
                match self.state.matched_vars.last(self.lookup()).map(|(n, _)| n) {
                    Some(Cow::Borrowed(n)) => Cow::Borrowed(n.as_bytes()),
                    Some(Cow::Owned(n)) => Cow::Owned(n.into_bytes()),
                    None => Cow::Borrowed(&b""[..]),
                },
            ),
            Var::HighestSeverity => owned(
                self.state
                    .highest_severity
                    .map_or(255, u32::from)
                    .to_string(),
            ),
            Var::Duration => owned(self.duration_us().to_string()),
            Var::ArgsCombinedSize => {
                let mut n = 0usize;
                for list in [Var::ArgsGet, Var::ArgsPost] {
                    for &s in self.data.slots(list) {
                        let e = self.data.entry(s);
                        n += e.key.len() + e.value.len();
                    }
                }
                owned(n.to_string())
            }
            Var::FullRequest => self.full_request().map(Cow::Owned),
            Var::FullRequestLength => self.full_request().and_then(|f| owned(f.len().to_string())),
            Var::SessionId => self.state.session_id.clone().and_then(owned),
            Var::UserId => self.state.user_id.clone().and_then(owned),
            Var::UrlencodedError | Var::MscPcreLimitsExceeded if !self.data.has(var) => {
                owned("0".into())
            }
            _ if is_time(var) => owned(time_value(var)),
            _ => None,
        }
    }

    /// The first value of `var` (with `key` for collections), for macros.
    pub(crate) fn first_value(
        &self,
        var: Var,
        key: Option<&str>,
        rule: Option<&Rule>,
        out: &mut Vec<u8>,
    ) {
        let coll = |c: &Collection, out: &mut Vec<u8>| {
            // Macro keys are lower case (see `macros::Part::Var`).
            if let Some(v) = key.and_then(|k| c.get_lower(k)) {
                out.extend_from_slice(v);
            }
        };
        match var {
            Var::Tx => coll(&self.state.tx, out),
            Var::Env => coll(&self.state.env, out),
            Var::Geo => coll(&self.state.geo, out),
            Var::Ip | Var::Global | Var::Session | Var::User | Var::Resource => {
                if let Some(c) = self.persistent(var) {
                    coll(c, out);
                }
            }
            Var::Rule => {
                if let Some(r) = rule {
                    let mut c = Collection::default();
                    self.rule_collection(r, &mut c);
                    coll(&c, out);
                }
            }
            Var::Args | Var::ArgsNames => {
                let lists = if var == Var::Args {
                    [Var::ArgsGet, Var::ArgsPost]
                } else {
                    [Var::ArgsGetNames, Var::ArgsPostNames]
                };
                for list in lists {
                    if let Some(v) = self.keyed(list, key) {
                        out.extend_from_slice(v);
                        return;
                    }
                }
            }
            _ => {
                if let Some(v) = self.dynamic_scalar(var) {
                    out.extend_from_slice(&v);
                } else if let Some(v) = self.keyed(var, key) {
                    out.extend_from_slice(v);
                }
            }
        }
    }

    fn keyed(&self, var: Var, key: Option<&str>) -> Option<&[u8]> {
        self.data
            .slots(var)
            .iter()
            .map(|&s| self.data.entry(s))
            .find(|e| key.is_none_or(|k| e.key.eq_ignore_ascii_case(k.as_bytes())))
            .map(|e| e.value.as_slice())
    }

    /// Expands a macro string into `out`.
    pub(crate) fn expand(&self, m: &MacroString, rule: Option<&Rule>, out: &mut Vec<u8>) {
        m.expand_into_hinted(out, |var, key, hint, out| {
            self.expand_part(var, key, hint, rule, out);
        });
    }

    /// Appends a macro's variable part to `out`.
    #[inline]
    fn expand_part(
        &self,
        var: Var,
        key: Option<&str>,
        hint: &crate::collection::Hint,
        rule: Option<&Rule>,
        out: &mut Vec<u8>,
    ) {
        match (var, key) {
            // TX members by name, at the position the hint gives when it holds.
            (Var::Tx, Some(k)) => {
                if let Some(v) = self.state.tx.get_lower_hinted(k.as_bytes(), hint) {
                    out.extend_from_slice(v);
                }
            }
            _ => self.first_value(var, key, rule, out),
        }
    }

    /// Expands a `setvar`'s key (its literal parts lower case since load time)
    /// into `out`, lower-casing what its variables add; returns whether the
    /// whole key is ASCII.
    pub(crate) fn expand_setvar_key(
        &self,
        sv: &crate::rule::SetVarAction,
        rule: &Rule,
        out: &mut Vec<u8>,
    ) -> bool {
        let mut ascii = sv.key_ascii;
        sv.key.expand_into_hinted(out, |var, key, hint, out| {
            let start = out.len();
            self.expand_part(var, key, hint, Some(rule), out);
            // One pass: the bytes' high bits ORed (ASCII when clear) and each
            // byte lower-cased (920450 adds a header name per request header).
            let mut high = 0u8;
            for b in out.get_mut(start..).unwrap_or_default() {
                high |= *b;
                b.make_ascii_lowercase();
            }
            ascii &= high.is_ascii();
        });
        ascii
    }

    /// Expands a macro string to a `String` (lossy).
    pub(crate) fn expand_string(&self, m: &MacroString, rule: Option<&Rule>) -> String {
        let mut buf = Vec::with_capacity(m.expansion_hint());
        self.expand(m, rule, &mut buf);
        crate::lossy::lossy_owned(buf)
    }
}

/// `VAR`, or `VAR:key` for a value with a key (invalid UTF-8 in it replaced),
/// appended to `s`: the name MATCHED_VAR_NAME gives a value.
pub(crate) fn push_var_name(s: &mut String, var: Var, key: &[u8]) {
    s.push_str(var.name());
    if !key.is_empty() {
        s.push(':');
        match std::str::from_utf8(key) {
            Ok(k) => s.push_str(k),
            Err(_) => s.push_str(&String::from_utf8_lossy(key)),
        }
    }
}

fn time_value(var: Var) -> String {
    let secs = now_unix();
    let t = crate::collection::CivilTime::from_unix(secs);
    let (y, mo, d, h, m, s) = (t.year, t.month, t.day, t.hour, t.minute, t.second);
    match var {
        Var::TimeEpoch => secs.to_string(),
        Var::TimeSec => format!("{s:02}"),
        Var::TimeMin => format!("{m:02}"),
        Var::TimeHour => format!("{h:02}"),
        Var::TimeDay => format!("{d:02}"),
        Var::TimeMon => format!("{:02}", mo - 1),
        Var::TimeYear => y.to_string(),
        Var::TimeWday => t.weekday.to_string(),
        _ => format!("{y}{mo:02}{d:02}{h:02}{m:02}{s:02}"),
    }
}

/// Whether a variable's values are exactly the arena's list of the same name:
/// neither collected from state nor computed (see `Transaction::collect_other` and
/// `Transaction::dynamic_scalar`), nor the union of two lists (ARGS, ARGS_NAMES).
pub(crate) fn is_stored(var: Var) -> bool {
    !is_time(var)
        && !matches!(
            var,
            Var::Args
                | Var::ArgsNames
                | Var::Tx
                | Var::Env
                | Var::Geo
                | Var::Ip
                | Var::Global
                | Var::Session
                | Var::User
                | Var::Resource
                | Var::MatchedVars
                | Var::MatchedVarsNames
                | Var::Rule
                | Var::Xml
                | Var::MatchedVar
                | Var::MatchedVarName
                | Var::HighestSeverity
                | Var::Duration
                | Var::ArgsCombinedSize
                | Var::FullRequest
                | Var::FullRequestLength
                | Var::SessionId
                | Var::UserId
                | Var::UrlencodedError
                | Var::MscPcreLimitsExceeded
        )
}

/// The TIME variables (computed from the clock when read).
fn is_time(var: Var) -> bool {
    matches!(
        var,
        Var::Time
            | Var::TimeDay
            | Var::TimeEpoch
            | Var::TimeHour
            | Var::TimeMin
            | Var::TimeMon
            | Var::TimeSec
            | Var::TimeWday
            | Var::TimeYear
    )
}

/// Whether a variable is single-valued (per the SecLang name table).
pub(crate) fn is_scalar(var: Var) -> bool {
    static SCALAR: std::sync::OnceLock<Vec<bool>> = std::sync::OnceLock::new();
    let table = SCALAR.get_or_init(|| {
        Var::ALL
            .iter()
            .map(|v| {
                seclang::names::VARIABLES
                    .iter()
                    .find(|(n, _)| *n == v.name())
                    .is_some_and(|(_, shape)| *shape == seclang::names::VariableShape::Scalar)
            })
            .collect()
    });
    table.get(var as usize).copied().unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{Connection, Program};

    /// `collect`'s inlined path takes a stored variable's list as its values: no
    /// variable on it may be one `dynamic_scalar` computes.
    #[test]
    fn stored_variables_are_never_computed() {
        let program =
            Program::from_str("t.conf", "SecRuleEngine On\n").unwrap_or_else(|e| panic!("{e}"));
        let t = Transaction::new(Arc::clone(&program), &Connection::default());
        for &var in Var::ALL {
            if is_stored(var) {
                assert!(
                    t.dynamic_scalar(var).is_none(),
                    "{} is computed but taken as stored",
                    var.name()
                );
            }
        }
    }
}
