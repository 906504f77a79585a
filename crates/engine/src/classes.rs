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

use std::collections::HashMap;

use crate::chains::ChainId;
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
    /// Its distinct classes (for the maybe sets).
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
    /// By class chain: the prefilter bits of the rules reading it.
    pub cc_bits: Vec<Vec<u64>>,
    /// By class: the rules (by index) reading it.
    pub class_rules: Vec<Vec<u64>>,
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
    /// The plan for the prefilter groups of `rules` (indexes set), whose
    /// prefilter bits fill `bit_words` words.
    pub fn build(rules: &[Rule], bit_words: usize) -> ClassPlan {
        let rule_words = rules.len().div_ceil(64).max(1);
        let mut plan = ClassPlan {
            multi_rules: vec![0; rule_words],
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
        for rule in rules {
            if rule.multi_match {
                let i = rule.index as usize;
                if let Some(w) = plan.multi_rules.get_mut(i / 64) {
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
                if plan.cc_bits.len() <= i as usize {
                    plan.cc_bits.resize(i as usize + 1, Vec::new());
                }
                if let Some(bit) = rule.prefilter {
                    set(&mut plan.cc_bits[i as usize], bit_words, bit as usize);
                }
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
        plan
    }

    /// Number of classes (for `check --plan`).
    pub fn class_count(&self) -> usize {
        self.classes.len()
    }
}

#[cfg(test)]
mod tests {
    use crate::Program;

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
