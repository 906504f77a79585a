//! Value classes: what the prefilter groups' unions are built from, decided at
//! load time.
//!
//! A prefilter group (rules with the same targets and chain, see
//! `compile::assign_prefilter_groups`) needs the union of its values' scans under
//! its chain. Many groups share a variable under one chain while their target lists
//! differ (`ARGS|ARGS_NAMES|REQUEST_COOKIES|...` with and without
//! `REQUEST_FILENAME` or `REQUEST_HEADERS:User-Agent`), so a union is made per
//! *class* of values and chain, and a group's union is the OR of its classes'
//! unions: a value is visited once per chain instead of once per group.
//!
//! A class is the values of one arena list (two for `ARGS` and `ARGS_NAMES`), all of
//! them or only those with one key (`REQUEST_HEADERS:User-Agent`). A regex key
//! selector (`ARGS:/^id_/`) and exclusions (`!REQUEST_COOKIES:/__utm/`) only narrow
//! a target, so its class is the whole list: the union is then a superset, which
//! may keep a rule (each value is tested on its own scan when the rule runs), never
//! skip one. Targets that are not arena lists make a group's union unknown, and its
//! rules run as without the prefilter; `XML` targets do so only when the
//! transaction has an XML document (or the XML processor failed): without one they
//! have no value.
//!
//! With the Rule Result Cache, a value with a cache entry adds to its class's
//! *maybe* set instead: the rules (by index) not known to leave it unmatched (see
//! [`crate::value_cache::ValueEntry::maybe_into`]). A rule of a group may match
//! when the group's union admits it or one of its classes' maybe sets holds it.
//! The maybe sets are made per arena list (see [`ListPlan`]): each value once,
//! limited to the rules of the classes holding it.

use std::collections::HashMap;

use crate::chains::ChainId;
use crate::prefilter::or_into;
use crate::rule::{KeySel, Rule};
use crate::variable::Var;

/// Values of one or two arena lists, all or only those with one key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ValueClass {
    /// The lists, in the order target resolution visits them.
    pub lists: Vec<Var>,
    /// Only values with this key (lower case; compared ignoring ASCII case).
    pub key: Option<Vec<u8>>,
    /// A single-valued variable: unset, it yields one empty value, which is not in
    /// the arena (the union is then unknown).
    pub scalar: bool,
}

/// A class's values under one chain (`multi`: every intermediate value of a
/// `multiMatch` rule's chain).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClassChain {
    /// Index in [`ClassPlan::classes`].
    pub class: u32,
    /// The chain.
    pub chain: ChainId,
    /// The union takes every intermediate value.
    pub multi: bool,
}

/// How one prefilter group's union is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupPlan {
    /// Its class chains (indexes in [`ClassPlan::class_chains`]), in target order.
    pub class_chains: Vec<u32>,
    /// Its distinct classes (making its class mask).
    pub classes: Vec<u32>,
    /// A target reads `XML`.
    pub xml: bool,
    /// A target is not an arena list: the union is always unknown.
    pub unclassed: bool,
    /// Its classes as a bit set over class indexes.
    pub class_mask: Vec<u64>,
}

/// The classes, class chains and group plans of a program.
#[derive(Debug, Clone, Default)]
pub struct ClassPlan {
    /// The classes.
    pub classes: Vec<ValueClass>,
    /// The class chains.
    pub class_chains: Vec<ClassChain>,
    /// By prefilter group.
    pub groups: Vec<GroupPlan>,
    /// By class: every rule reading it is pure (its results may be cached), so a
    /// cached value may stand in by its maybe set.
    pub class_pure: Vec<bool>,
    /// Rule-index mask of the `multiMatch` rules (their cached "no match" is kept
    /// apart).
    pub multi_rules: Vec<u64>,
    /// Rule-index mask of the negated rules (a value's maybe set keeps one while
    /// its operator may miss the value).
    pub negated_rules: Vec<u64>,
    /// By class chain: where its entries of `cc_words` are, (start, length).
    cc_runs: Vec<(u32, u32)>,
    /// The class chains' prefilter bits (see [`ClassPlan::cc_bits`]), one
    /// chain's after the other: one array, not one per chain.
    cc_words: Vec<(u32, u64)>,
    /// By class chain: the fewest bytes a value any of its rules matches holds
    /// (see [`crate::prefilter::RuleTest::min_match_len`]); 0 when a rule has no
    /// prefilter bit or nothing is known. A value whose result under the chain
    /// is known to be shorter (see [`crate::chains::ChainTable::base64_bounded`])
    /// is admitted by none of them.
    pub cc_min_len: Vec<u32>,
    /// By class: the rules (by index) reading it.
    pub class_rules: Vec<Vec<u64>>,
    /// Per arena list some class reads: which pure classes hold its values (see
    /// [`ListPlan`]).
    pub lists: Vec<ListPlan>,
    /// By class: the phases of the rules reading it (bit `p - 1` for phase `p`).
    pub class_phases: Vec<u8>,
    /// By entry of [`ClassPlan::lists`]: the phases whose rules read a class of
    /// the list (bit `p - 1` for phase `p`). A settle for a phase visits only
    /// these lists: phases 3 and 4 need not look up the request's values.
    pub list_phases: Vec<u8>,
    /// By phase (index `p - 1` for phase `p`): the entries of
    /// [`ClassPlan::lists`] whose phases hold it, in order (a settle passes over
    /// only these, not every list of the plan).
    pub phase_lists: [Vec<u32>; 5],
    /// The classes that are not pure, as a bit set over class indexes.
    pub impure: Vec<u64>,
    /// Every arena list some class reads, with the classes reading it (a bit
    /// set over class indexes): a class has a value when one of its lists has.
    pub list_classes: Vec<(Var, Vec<u64>)>,
    /// The classes of single-valued variables (see [`ValueClass::scalar`]), as
    /// a bit set over class indexes.
    pub scalar: Vec<u64>,
    /// The classes with a key (`REQUEST_HEADERS:Content-Length`) that are not
    /// single-valued, as a bit set over class indexes: a list with values may
    /// hold none of the key, and such a class then has no value ...
    pub keyed_mask: Vec<u64>,
    /// ... found per list they read (see [`KeyedList`]).
    pub keyed_lists: Vec<KeyedList>,
}

/// The keyed classes reading one arena list, by the length of their keys: a
/// value's key is compared only with the keys of its length.
#[derive(Debug, Clone)]
pub struct KeyedList {
    /// The list.
    pub var: Var,
    /// (class, key), ordered by the key's length ...
    pub keys: Vec<(u32, Vec<u8>)>,
    /// ... those of length `n` at `starts[n]..starts[n + 1]` (none longer than
    /// the last entry allows).
    pub starts: Vec<u32>,
}

impl KeyedList {
    /// The (class, key) entries whose key has `len` bytes.
    #[inline]
    pub fn of_len(&self, len: usize) -> &[(u32, Vec<u8>)] {
        match (self.starts.get(len), self.starts.get(len + 1)) {
            (Some(&a), Some(&b)) => self.keys.get(a as usize..b as usize).unwrap_or_default(),
            _ => &[],
        }
    }
}

/// The index of the first entry of `v` that `found` picks, after pushing
/// `make()` when there is none.
fn index_or_push<T>(v: &mut Vec<T>, found: impl Fn(&T) -> bool, make: impl FnOnce() -> T) -> usize {
    match v.iter().position(found) {
        Some(at) => at,
        None => {
            v.push(make());
            v.len() - 1
        }
    }
}

/// What a value of one arena list adds to the result cache's settle (the union of
/// every class's maybe set): the pure classes holding it, so that each cached
/// value is visited once whatever number of classes read it. A class's maybe set
/// limited to its rules, ORed over the classes, is the same as each value's maybe
/// set limited to the rules of the classes holding it, ORed over the values.
#[derive(Debug, Clone)]
pub struct ListPlan {
    /// The list.
    pub var: Var,
    /// Whether a pure class without a key holds every value of the list.
    pub all: bool,
    /// Those classes, as a bit set over class indexes.
    pub classes: Vec<u64>,
    /// Their rules (by index).
    pub rules: Vec<u64>,
    /// `rules` as (word, bits) pairs of its words with a bit (see
    /// [`crate::value_cache::ValueEntry::maybe_into`]).
    pub rule_runs: Vec<(u32, u64)>,
    /// The pure classes that hold only the values with one key, by key (lower
    /// case, compared ignoring ASCII case): their classes and rules together
    /// with the key-less ones above. In order of key length ...
    pub keyed: Vec<KeyedPlan>,
    /// ... from `keyed_starts[n]` to `keyed_starts[n + 1]` the keys of `n`
    /// bytes (see [`ListPlan::keyed_plan`]).
    pub keyed_starts: Vec<u32>,
}

impl ListPlan {
    /// The keyed plan of a value's key (compared ignoring ASCII case): only the
    /// keys of its length are compared (a header list has some twenty keys that
    /// classes name), and of those only the ones with its last byte in full.
    #[inline]
    pub fn keyed_plan(&self, key: &[u8]) -> Option<&KeyedPlan> {
        let n = key.len();
        let (&a, &b) = (self.keyed_starts.get(n)?, self.keyed_starts.get(n + 1)?);
        let last = key.last().map(u8::to_ascii_lowercase);
        self.keyed
            .get(a as usize..b as usize)?
            .iter()
            .find(|kp| kp.key.last().copied() == last && key.eq_ignore_ascii_case(&kp.key))
    }
}

/// The pure classes holding a list's values with one key (see [`ListPlan`]).
#[derive(Debug, Clone)]
pub struct KeyedPlan {
    /// The key (lower case).
    pub key: Vec<u8>,
    /// The classes holding such a value (key-less ones included), by class index.
    pub classes: Vec<u64>,
    /// Their rules (by index).
    pub rules: Vec<u64>,
    /// `rules` as (word, bits) pairs of its words with a bit.
    pub rule_runs: Vec<(u32, u64)>,
}

/// The (word, bits) pairs of the words of `bits` with a bit.
pub(crate) fn runs(bits: &[u64]) -> Vec<(u32, u64)> {
    (0u32..)
        .zip(bits)
        .filter(|&(_, &b)| b != 0)
        .map(|(w, &b)| (w, b))
        .collect()
}

/// The element of `items` that `found` picks, or a new one `make` gives, pushed.
fn found_or_pushed<T>(
    items: &mut Vec<T>,
    found: impl Fn(&T) -> bool,
    make: impl FnOnce() -> T,
) -> &mut T {
    let i = match items.iter().position(found) {
        Some(i) => i,
        None => {
            items.push(make());
            items.len() - 1
        }
    };
    &mut items[i]
}

/// Phase `phase`'s bit in a phase mask (bit `p - 1` for phase `p`, 1 to 5; 0
/// for anything else).
pub(crate) fn phase_bit(phase: u8) -> u8 {
    match phase {
        1..=5 => 1 << (phase - 1),
        _ => 0,
    }
}

/// Whether the values a target variable selects are exactly its arena list(s);
/// the lists when they are.
fn lists_of(var: Var) -> Option<Vec<Var>> {
    match var {
        Var::Args => Some(vec![Var::ArgsGet, Var::ArgsPost]),
        Var::ArgsNames => Some(vec![Var::ArgsGetNames, Var::ArgsPostNames]),
        _ if crate::transaction::is_stored(var) => Some(vec![var]),
        _ => None,
    }
}

impl ClassPlan {
    /// Class chain `cc`'s prefilter bits: those of the rules reading it, as
    /// (word, bits) pairs of its words with a bit (a chain's rules are few: a
    /// union's admitted bits are worked out over one or two words, not every
    /// word).
    #[inline]
    pub fn cc_bits(&self, cc: usize) -> &[(u32, u64)] {
        let (start, len) = self.cc_runs.get(cc).copied().unwrap_or_default();
        self.cc_words
            .get(start as usize..(start + len) as usize)
            .unwrap_or_default()
    }

    /// The plan for the prefilter groups of `rules` (indexes set), whose
    /// prefilter bits fill `bit_words` words.
    ///
    /// `min_len`: by prefilter bit, the fewest bytes a value the rule's operator
    /// matches holds (empty: unknown).
    pub fn build(rules: &[Rule], bit_words: usize, min_len: &[u32]) -> ClassPlan {
        let rule_words = rules.len().div_ceil(64).max(1);
        let mut plan = ClassPlan {
            multi_rules: vec![0; rule_words],
            negated_rules: vec![0; rule_words],
            ..ClassPlan::default()
        };
        let set = |words: &mut Vec<u64>, n: usize, i: usize| {
            let n = n.max(i / 64 + 1);
            if words.len() < n {
                words.resize(n, 0);
            }
            if let Some(w) = words.get_mut(i / 64) {
                *w |= 1 << (i % 64);
            }
        };
        let mut class_ids: HashMap<ValueClass, u32> = HashMap::new();
        let mut cc_ids: HashMap<ClassChain, u32> = HashMap::new();
        let mut cc_bits: Vec<Vec<u64>> = Vec::new();
        for rule in rules {
            let i = rule.index as usize;
            if rule.multi_match {
                if let Some(w) = plan.multi_rules.get_mut(i / 64) {
                    *w |= 1 << (i % 64);
                }
            }
            if rule.operator.negated {
                if let Some(w) = plan.negated_rules.get_mut(i / 64) {
                    *w |= 1 << (i % 64);
                }
            }
            let Some(g) = rule.prefilter_group else {
                continue;
            };
            let g = g as usize;
            if plan.groups.len() <= g {
                plan.groups.resize_with(g + 1, GroupPlan::default);
            }
            // Every rule of a group has the same targets and chain: the first one
            // makes the plan, the others only add to the classes' purity.
            let fresh = plan.groups[g] == GroupPlan::default();
            let mut gp = GroupPlan::default();
            for spec in &rule.targets {
                if spec.count {
                    gp.unclassed = true;
                    continue;
                }
                if spec.var == Var::Xml {
                    gp.xml = true;
                    continue;
                }
                let Some(lists) = lists_of(spec.var) else {
                    gp.unclassed = true;
                    continue;
                };
                let key = match &spec.sel {
                    KeySel::Key(k) => Some(k.to_ascii_lowercase().into_bytes()),
                    KeySel::All | KeySel::Regex(_) | KeySel::XPath(_) => None,
                };
                let class = ValueClass {
                    scalar: lists.len() == 1 && crate::transaction::is_scalar(spec.var),
                    lists,
                    key,
                };
                let next = class_ids.len() as u32;
                let c = *class_ids.entry(class).or_insert(next);
                if plan.class_pure.len() <= c as usize {
                    plan.class_pure.resize(c as usize + 1, true);
                }
                plan.class_pure[c as usize] &= rule.pure;
                if plan.class_phases.len() <= c as usize {
                    plan.class_phases.resize(c as usize + 1, 0);
                }
                plan.class_phases[c as usize] |= phase_bit(rule.phase);
                if plan.class_rules.len() <= c as usize {
                    plan.class_rules.resize(c as usize + 1, Vec::new());
                }
                set(
                    &mut plan.class_rules[c as usize],
                    rule_words,
                    rule.index as usize,
                );
                let cc = ClassChain {
                    class: c,
                    chain: rule.transforms,
                    multi: rule.multi_match,
                };
                let next = cc_ids.len() as u32;
                let i = *cc_ids.entry(cc).or_insert(next);
                if cc_bits.len() <= i as usize {
                    cc_bits.resize(i as usize + 1, Vec::new());
                }
                if let Some(bit) = rule.prefilter {
                    set(&mut cc_bits[i as usize], bit_words, bit as usize);
                }
                if plan.cc_min_len.len() <= i as usize {
                    plan.cc_min_len.resize(i as usize + 1, u32::MAX);
                }
                let m = rule
                    .prefilter
                    .and_then(|bit| min_len.get(bit as usize))
                    .copied()
                    .unwrap_or(0);
                let cm = &mut plan.cc_min_len[i as usize];
                *cm = (*cm).min(m);
                if !gp.class_chains.contains(&i) {
                    gp.class_chains.push(i);
                }
                if !gp.classes.contains(&c) {
                    gp.classes.push(c);
                }
            }
            if fresh {
                for &c in &gp.classes {
                    set(&mut gp.class_mask, 0, c as usize);
                }
                plan.groups[g] = gp;
            }
        }
        plan.classes = vec![
            ValueClass {
                lists: Vec::new(),
                key: None,
                scalar: false
            };
            class_ids.len()
        ];
        for (class, i) in class_ids {
            plan.classes[i as usize] = class;
        }
        plan.class_chains = vec![
            ClassChain {
                class: 0,
                chain: 0,
                multi: false
            };
            cc_ids.len()
        ];
        for (cc, i) in cc_ids {
            plan.class_chains[i as usize] = cc;
        }
        plan.cc_min_len.resize(plan.class_chains.len(), 0);
        for m in &mut plan.cc_min_len {
            if *m == u32::MAX {
                *m = 0;
            }
        }
        for words in &cc_bits {
            let start = plan.cc_words.len() as u32;
            plan.cc_words.extend(runs(words));
            let len = plan.cc_words.len() as u32 - start;
            plan.cc_runs.push((start, len));
        }
        plan.build_lists(rule_words);
        plan.build_list_phases();
        plan.build_list_classes();
        plan
    }

    /// Makes [`ClassPlan::list_phases`] from the classes' phases.
    fn build_list_phases(&mut self) {
        self.list_phases = self
            .lists
            .iter()
            .map(|lp| {
                self.classes
                    .iter()
                    .zip(&self.class_phases)
                    .filter(|(class, _)| class.lists.contains(&lp.var))
                    .fold(0, |acc, (_, &p)| acc | p)
            })
            .collect();
        self.phase_lists = std::array::from_fn(|p| {
            (0u32..)
                .zip(&self.list_phases)
                .filter(|&(_, &ph)| ph & (1 << p) != 0)
                .map(|(li, _)| li)
                .collect()
        });
    }

    /// The entries of [`ClassPlan::lists`] that a rule of `phase` reads a class
    /// of, in order.
    #[inline]
    pub fn lists_in_phase(&self, phase: u8) -> &[u32] {
        match phase {
            1..=5 => &self.phase_lists[usize::from(phase - 1)],
            _ => &[],
        }
    }

    /// Makes [`ClassPlan::list_classes`], [`ClassPlan::scalar`] and the keyed
    /// classes by list.
    fn build_list_classes(&mut self) {
        let class_words = self.classes.len().div_ceil(64);
        self.scalar = vec![0; class_words];
        self.list_classes.clear();
        self.keyed_mask = vec![0; class_words];
        self.keyed_lists.clear();
        for (i, class) in self.classes.iter().enumerate() {
            let bit = 1u64 << (i % 64);
            if class.scalar {
                self.scalar[i / 64] |= bit;
            } else if let Some(key) = &class.key {
                self.keyed_mask[i / 64] |= bit;
                for &l in &class.lists {
                    let at = index_or_push(
                        &mut self.keyed_lists,
                        |k| k.var == l,
                        || KeyedList {
                            var: l,
                            keys: Vec::new(),
                            starts: Vec::new(),
                        },
                    );
                    self.keyed_lists[at].keys.push((i as u32, key.clone()));
                }
            }
            for &l in &class.lists {
                let at = index_or_push(
                    &mut self.list_classes,
                    |(v, _)| *v == l,
                    || (l, vec![0; class_words]),
                );
                self.list_classes[at].1[i / 64] |= bit;
            }
        }
        for kl in &mut self.keyed_lists {
            kl.keys.sort_by_key(|(_, k)| k.len());
            let longest = kl.keys.last().map_or(0, |(_, k)| k.len());
            kl.starts = (0..=longest + 1)
                .map(|n| kl.keys.partition_point(|(_, k)| k.len() < n) as u32)
                .collect();
        }
    }

    /// Makes [`ClassPlan::lists`] and [`ClassPlan::impure`] from the classes.
    fn build_lists(&mut self, rule_words: usize) {
        let class_words = self.classes.len().div_ceil(64);
        self.impure = vec![0; class_words];
        let mut lists: Vec<ListPlan> = Vec::new();
        for (i, class) in self.classes.iter().enumerate() {
            let bit = |words: &mut Vec<u64>| {
                if let Some(w) = words.get_mut(i / 64) {
                    *w |= 1 << (i % 64);
                }
            };
            if !self.class_pure.get(i).copied().unwrap_or(false) {
                bit(&mut self.impure);
                continue;
            }
            let rules = self.class_rules.get(i).map_or(&[][..], Vec::as_slice);
            for &var in &class.lists {
                let lp = found_or_pushed(
                    &mut lists,
                    |l| l.var == var,
                    || ListPlan {
                        var,
                        all: false,
                        classes: vec![0; class_words],
                        rules: vec![0; rule_words],
                        rule_runs: Vec::new(),
                        keyed: Vec::new(),
                        keyed_starts: Vec::new(),
                    },
                );
                let (classes, rules_of) = match &class.key {
                    None => {
                        lp.all = true;
                        (&mut lp.classes, &mut lp.rules)
                    }
                    Some(key) => {
                        let k = found_or_pushed(
                            &mut lp.keyed,
                            |k| &k.key == key,
                            || KeyedPlan {
                                key: key.clone(),
                                classes: vec![0; class_words],
                                rules: vec![0; rule_words],
                                rule_runs: Vec::new(),
                            },
                        );
                        (&mut k.classes, &mut k.rules)
                    }
                };
                bit(classes);
                or_into(rules_of, rules);
            }
        }
        // A keyed value is also in the key-less classes.
        for lp in &mut lists {
            for k in &mut lp.keyed {
                or_into(&mut k.classes, &lp.classes);
                or_into(&mut k.rules, &lp.rules);
                k.rule_runs = runs(&k.rules);
            }
            lp.rule_runs = runs(&lp.rules);
            lp.keyed.sort_by_key(|k| k.key.len());
            let longest = lp.keyed.last().map_or(0, |k| k.key.len());
            lp.keyed_starts = (0..=longest + 1)
                .map(|n| lp.keyed.partition_point(|k| k.key.len() < n) as u32)
                .collect();
        }
        self.lists = lists;
    }

    /// Number of classes (for `check --plan`).
    pub fn class_count(&self) -> usize {
        self.classes.len()
    }
}

#[cfg(test)]
mod tests {
    use crate::variable::Var;
    use crate::Program;

    #[test]
    fn each_list_names_the_classes_reading_it() {
        // ARGS is two lists; REQUEST_FILENAME is single-valued (scalar).
        let program = Program::from_str(
            "t.conf",
            "SecRuleEngine On\n\
             SecRule ARGS|REQUEST_HEADERS:User-Agent \"@rx evil\" \"id:1,phase:2,pass\"\n\
             SecRule REQUEST_FILENAME|ARGS_GET \"@rx worse\" \"id:2,phase:2,pass\"\n\
             SecRule REQUEST_HEADERS \"@rx other\" \"id:3,phase:2,t:lowercase,pass\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let plan = &program.classes;
        assert!(plan.classes.len() >= 5, "{:?}", plan.classes);
        let has = |w: &[u64], i: usize| w.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0);
        for (i, class) in plan.classes.iter().enumerate() {
            assert_eq!(has(&plan.scalar, i), class.scalar, "{class:?}");
            for (l, classes) in &plan.list_classes {
                assert_eq!(has(classes, i), class.lists.contains(l), "{class:?} {l:?}");
            }
            for l in &class.lists {
                assert!(plan.list_classes.iter().any(|(v, _)| v == l));
            }
        }
        assert!(plan.classes.iter().any(|c| c.scalar));
        assert!(plan.classes.iter().any(|c| c.lists.len() == 2));
    }

    #[test]
    fn a_phase_passes_over_the_lists_only_its_rules_read() {
        let program = Program::from_str(
            "t.conf",
            "SecRuleEngine On\n\
             SecRule REQUEST_HEADERS \"@rx evil\" \"id:1,phase:1,pass\"\n\
             SecRule ARGS \"@rx worse\" \"id:2,phase:2,pass\"\n\
             SecRule REQUEST_HEADERS:User-Agent \"@rx other\" \"id:3,phase:2,pass\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let plan = &program.classes;
        let vars = |phase: u8| -> Vec<Var> {
            plan.lists_in_phase(phase)
                .iter()
                .map(|&li| plan.lists[li as usize].var)
                .collect()
        };
        assert_eq!(vars(1), vec![Var::RequestHeaders]);
        let two = vars(2);
        assert!(
            two.contains(&Var::RequestHeaders) && two.contains(&Var::ArgsGet),
            "{two:?}"
        );
        assert!(vars(3).is_empty() && vars(0).is_empty() && vars(6).is_empty());
        // Every list of a phase, in the plan's order, as `list_phases` says.
        for phase in 1..=5u8 {
            let want: Vec<u32> = (0u32..)
                .zip(&plan.list_phases)
                .filter(|&(_, &p)| p & (1 << (phase - 1)) != 0)
                .map(|(li, _)| li)
                .collect();
            assert_eq!(plan.lists_in_phase(phase), &want[..]);
        }
    }

    #[test]
    fn a_lists_plan_holds_the_pure_classes_of_its_values_by_key() {
        let mut program = Program::from_str(
            "t.conf",
            "SecRuleEngine On\n\
             SecRule ARGS|REQUEST_HEADERS:User-Agent \"@rx evil\" \"id:1,phase:2,t:lowercase,pass\"\n\
             SecRule REQUEST_HEADERS \"@rx worse\" \"id:2,phase:2,pass\"\n\
             SecRule ARGS_GET:User-Agent \"@rx other\" \"id:3,phase:2,pass\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let index = |program: &Program, id: u32| {
            program
                .rules
                .iter()
                .find(|r| r.id == id)
                .map(|r| r.index as usize)
                .unwrap_or_else(|| panic!("rule {id}"))
        };
        let (r1, r2, r3) = (index(&program, 1), index(&program, 2), index(&program, 3));
        let plan = &program.classes;
        let has =
            |words: &[u64], i: usize| words.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0);
        let class = |lists: &[Var], key: Option<&[u8]>| {
            plan.classes
                .iter()
                .position(|c| c.lists == lists && c.key.as_deref() == key)
                .unwrap_or_else(|| panic!("class {lists:?} {key:?}"))
        };
        let list = |var: Var| {
            plan.lists
                .iter()
                .find(|l| l.var == var)
                .unwrap_or_else(|| panic!("list {var:?}"))
        };
        let headers = class(&[Var::RequestHeaders], None);
        let ua = class(&[Var::RequestHeaders], Some(b"user-agent"));
        let args = class(&[Var::ArgsGet, Var::ArgsPost], None);
        let get_ua = class(&[Var::ArgsGet], Some(b"user-agent"));
        // Every header is in REQUEST_HEADERS (rule 2); a User-Agent header also in
        // REQUEST_HEADERS:User-Agent (rule 1).
        let h = list(Var::RequestHeaders);
        assert!(h.all && has(&h.classes, headers) && !has(&h.classes, ua));
        assert!(has(&h.rules, r2) && !has(&h.rules, r1));
        assert_eq!(h.keyed.len(), 1);
        let k = &h.keyed[0];
        assert_eq!(k.key, b"user-agent");
        assert!(has(&k.classes, headers) && has(&k.classes, ua));
        assert!(has(&k.rules, r1) && has(&k.rules, r2));
        assert!(!has(&k.rules, r3));
        // ARGS reads both argument lists; ARGS_GET:User-Agent only one of them.
        let g = list(Var::ArgsGet);
        assert!(g.all && has(&g.classes, args) && has(&g.rules, r1));
        assert_eq!(g.keyed.len(), 1);
        assert!(has(&g.keyed[0].classes, get_ua) && has(&g.keyed[0].classes, args));
        assert!(has(&g.keyed[0].rules, r3) && has(&g.keyed[0].rules, r1));
        let p = list(Var::ArgsPost);
        assert!(p.all && p.keyed.is_empty() && !has(&p.rules, r3));
        assert!(plan.impure.iter().all(|&w| w == 0));
        // A class read by a rule whose results are not cached holds no cached
        // value: it is marked impure and left out of its list's plan.
        let Some(unique) = std::sync::Arc::get_mut(&mut program) else {
            panic!("the program is shared");
        };
        for r in &mut unique.rules {
            r.pure &= r.id != 2;
        }
        let words = program.prefilter.as_ref().map_or(0, |p| p.words());
        let plan = super::ClassPlan::build(&program.rules, words, &[]);
        assert!(has(&plan.impure, headers) && !has(&plan.impure, ua));
        let h = plan
            .lists
            .iter()
            .find(|l| l.var == Var::RequestHeaders)
            .unwrap_or_else(|| panic!("headers"));
        assert!(!h.all && h.classes.iter().all(|&w| w == 0));
        assert!(has(&h.keyed[0].classes, ua) && !has(&h.keyed[0].classes, headers));
        assert!(has(&h.keyed[0].rules, r1) && !has(&h.keyed[0].rules, r2));
    }

    #[test]
    fn a_values_keyed_plan_is_found_among_the_keys_of_its_length() {
        let program = Program::from_str(
            "t.conf",
            "SecRuleEngine On\n\
             SecRule REQUEST_HEADERS:User-Agent \"@rx a\" \"id:1,phase:1,pass\"\n\
             SecRule REQUEST_HEADERS:Host \"@rx b\" \"id:2,phase:1,pass\"\n\
             SecRule REQUEST_HEADERS:Referer \"@rx c\" \"id:3,phase:1,pass\"\n\
             SecRule REQUEST_HEADERS:Accept \"@rx d\" \"id:4,phase:1,pass\"\n\
             SecRule REQUEST_HEADERS:Origin \"@rx e\" \"id:5,phase:1,pass\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let h = program
            .classes
            .lists
            .iter()
            .find(|l| l.var == Var::RequestHeaders)
            .unwrap_or_else(|| panic!("headers"));
        assert_eq!(h.keyed.len(), 5);
        let found = |key: &[u8]| h.keyed_plan(key).map(|k| k.key.clone());
        for key in ["user-agent", "host", "referer", "accept", "origin"] {
            assert_eq!(found(key.as_bytes()), Some(key.as_bytes().to_vec()));
        }
        // Ignoring ASCII case; two keys of six bytes.
        assert_eq!(found(b"ORIGIN"), Some(b"origin".to_vec()));
        assert_eq!(found(b"Accept"), Some(b"accept".to_vec()));
        assert_eq!(found(b"ACCEPT"), Some(b"accept".to_vec()));
        // Keys of a known key's length differing in their last byte or only
        // before it.
        for key in [&b"acceps"[..], b"origim", b"xccept", b"AccEPt", b"hosT"] {
            let expected = match key {
                b"AccEPt" => Some(b"accept".to_vec()),
                b"hosT" => Some(b"host".to_vec()),
                _ => None,
            };
            assert_eq!(found(key), expected, "{key:?}");
        }
        // Keys no class names, of a length some key has, of none, and longer
        // than every key.
        for key in [
            &b"cookie"[..],
            b"",
            b"x",
            b"user-agents",
            b"x-forwarded-for-long",
        ] {
            assert_eq!(found(key), None, "{key:?}");
        }
    }

    #[test]
    fn groups_sharing_a_variable_and_chain_share_its_class_chain() {
        let program = Program::from_str(
            "t.conf",
            "SecRuleEngine On\n\
             SecRule ARGS|REQUEST_HEADERS:User-Agent \"@rx evil\" \"id:1,phase:2,t:lowercase,pass\"\n\
             SecRule ARGS|REQUEST_FILENAME \"@rx worse\" \"id:2,phase:2,t:lowercase,pass\"\n\
             SecRule ARGS \"@rx other\" \"id:3,phase:2,t:urlDecodeUni,pass\"\n\
             SecRule ARGS:/^id/|TX:x \"@rx tx\" \"id:4,phase:2,pass\"\n\
             SecRule XML:/* \"@rx xml\" \"id:5,phase:2,pass\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let plan = &program.classes;
        let group = |id: u32| {
            let r = program
                .rules
                .iter()
                .find(|r| r.id == id)
                .unwrap_or_else(|| panic!("rule {id}"));
            r.prefilter_group.map(|g| plan.groups[g as usize].clone())
        };
        let (g1, g2, g3) = (
            group(1).unwrap_or_default(),
            group(2).unwrap_or_default(),
            group(3).unwrap_or_default(),
        );
        // ARGS under lowercase: one class chain for both groups.
        assert_eq!(g1.class_chains[0], g2.class_chains[0]);
        assert_ne!(g1.class_chains[1], g2.class_chains[1]);
        // ARGS under another chain: the same class, another class chain.
        assert_eq!(g1.classes[0], g3.classes[0]);
        assert_ne!(g1.class_chains[0], g3.class_chains[0]);
        let ua = &plan.classes[g1.classes[1] as usize];
        assert_eq!(ua.key.as_deref(), Some(&b"user-agent"[..]));
        assert!(!ua.scalar);
        let filename = &plan.classes[g2.classes[1] as usize];
        assert!(filename.scalar && filename.key.is_none());
        // TX is written by rules: no group at all.
        assert!(group(4).is_none());
        // XML: no class; the union is unknown only when there is a document.
        let g5 = group(5).unwrap_or_default();
        assert!(g5.xml && g5.class_chains.is_empty() && !g5.unclassed);
    }
}
