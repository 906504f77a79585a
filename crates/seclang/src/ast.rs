//! The typed syntax tree of a SecLang configuration. Every node carries the
//! [`Span`] it was read from. The tree has no semantics: the engine gives it those.

use crate::source::Span;

/// A whole configuration: every directive of every file, in evaluation order, with
/// `Include`s already expanded in place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The directives.
    pub items: Vec<Item>,
}

/// One directive and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The whole directive, from its name to the end of its last argument.
    pub span: Span,
    /// The directive.
    pub directive: Directive,
}

/// A directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `SecRule` or `SecAction`.
    Rule(Rule),
    /// `SecMarker NAME`.
    Marker(String),
    /// `SecDefaultAction "ACTIONS"`.
    DefaultAction(Vec<Action>),
    /// `SecRuleRemoveById ID|RANGE...`.
    RemoveById(Vec<IdRange>),
    /// `SecRuleRemoveByTag REGEX`.
    RemoveByTag(String),
    /// `SecRuleRemoveByMsg REGEX`.
    RemoveByMsg(String),
    /// `SecRuleUpdateTargetById|ByTag|ByMsg SELECTOR TARGETS [REPLACED]`.
    UpdateTarget(UpdateTarget),
    /// `SecRuleUpdateActionById ID[:OFFSET] "ACTIONS"`.
    UpdateActionById {
        /// The rule.
        id: u32,
        /// Which link of a chain (1-based), if given.
        chain_offset: Option<u32>,
        /// The new actions.
        actions: Vec<Action>,
    },
    /// Any other directive: a configuration setting.
    Setting(Setting),
}

/// How `SecRuleUpdateTarget*` selects the rules it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleSelector {
    /// By id and id ranges.
    Ids(Vec<IdRange>),
    /// By tag (a regular expression or a plain string).
    Tag(String),
    /// By message (a regular expression or a plain string).
    Msg(String),
}

/// `SecRuleUpdateTarget*` and `ctl:ruleRemoveTarget*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateTarget {
    /// The rules to change.
    pub selector: RuleSelector,
    /// Targets to add (or, when negated, to exclude).
    pub targets: Vec<Target>,
    /// A target to replace (third argument), if any.
    pub replaced: Option<Target>,
}

/// An inclusive range of rule ids (`1-99`), or a single id (`start == end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdRange {
    /// First id.
    pub start: u32,
    /// Last id (inclusive).
    pub end: u32,
}

impl IdRange {
    /// Whether `id` lies in the range.
    pub fn contains(&self, id: u32) -> bool {
        self.start <= id && id <= self.end
    }
}

/// A configuration directive other than rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Canonical directive name, e.g. `SecRuleEngine`.
    pub name: &'static str,
    /// Its value.
    pub value: SettingValue,
}

/// The value of a [`Setting`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingValue {
    /// No argument (`SecResponseBodyMimeTypesClear`).
    None,
    /// `On` / `Off`.
    Flag(bool),
    /// One word of a fixed set, canonical spelling (`DetectionOnly`).
    Word(&'static str),
    /// A non-negative number.
    Number(u64),
    /// Free text (paths, names, regexes, MIME type lists).
    Text(String),
    /// Several free arguments.
    List(Vec<String>),
}

/// Which directive a rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleKind {
    /// `SecRule TARGETS OPERATOR [ACTIONS]`.
    SecRule,
    /// `SecAction ACTIONS`: no targets, always matches.
    SecAction,
}

/// A rule: targets, an operator and actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// SecRule or SecAction.
    pub kind: RuleKind,
    /// The targets (`ARGS|!ARGS:foo|&TX:x`); empty for SecAction.
    pub targets: Vec<Target>,
    /// The operator; `@unconditionalMatch` for SecAction.
    pub operator: Operator,
    /// The actions, in written order.
    pub actions: Vec<Action>,
}

impl Rule {
    /// The first action with this (canonical) name.
    pub fn action(&self, name: &str) -> Option<&Action> {
        self.actions.iter().find(|a| a.name == name)
    }

    /// The rule's id, if it has one.
    pub fn id(&self) -> Option<u32> {
        self.actions.iter().find_map(|a| match a.value {
            ActionValue::Id(id) => Some(id),
            _ => None,
        })
    }

    /// Whether the rule starts (or continues) a chain.
    pub fn is_chain(&self) -> bool {
        self.actions.iter().any(|a| a.name == "chain")
    }
}

/// One target of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Where it was written.
    pub span: Span,
    /// `!VAR:sel`: excludes `sel` from the rule's other targets.
    pub exclude: bool,
    /// `&VAR`: the number of values instead of the values.
    pub count: bool,
    /// Canonical variable name (upper case), e.g. `ARGS`.
    pub variable: &'static str,
    /// The selector, if any.
    pub selector: Option<Selector>,
}

/// Which members of a collection a target names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `ARGS:name` (matched case-insensitively for most collections).
    Key(String),
    /// `ARGS:/regex/`.
    Regex(String),
    /// `XML:/xpath`.
    XPath(String),
}

/// A rule's operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    /// Where the operator string was written.
    pub span: Span,
    /// `!@op`: the result is inverted.
    pub negated: bool,
    /// Canonical operator name, e.g. `rx`.
    pub name: &'static str,
    /// The argument, raw (macros are expanded by the engine).
    pub argument: String,
    /// Whether the operator was written with `@` (otherwise it is the implicit `@rx`).
    pub explicit: bool,
}

/// One action of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// Where it was written.
    pub span: Span,
    /// Canonical action name, e.g. `setvar`.
    pub name: &'static str,
    /// Its value, typed where the form is fixed.
    pub value: ActionValue,
}

/// The value of an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionValue {
    /// A bare action (`deny`, `chain`).
    None,
    /// Free text (`msg`, `tag`, `logdata`, `skipAfter`, ...), quotes removed.
    Text(String),
    /// `id:N`.
    Id(u32),
    /// `phase:N` (1-5; `request` = 2, `response` = 4, `logging` = 5).
    Phase(u8),
    /// `severity:N` (0-7; names are converted to numbers).
    Severity(u8),
    /// `skip:N`.
    Skip(u32),
    /// `status:N`.
    Status(u16),
    /// `t:NAME`, canonical spelling.
    Transformation(&'static str),
    /// `setvar:...`.
    SetVar(SetVar),
    /// `ctl:...`.
    Ctl(Ctl),
}

/// `setvar:[!]collection.key[=[+|-]value]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetVar {
    /// Collection name, lower case (`tx`, `ip`, ...).
    pub collection: String,
    /// The key, raw (may contain macros).
    pub key: String,
    /// What to do.
    pub op: SetVarOp,
    /// The value, raw (may contain macros); empty for unset and flag forms.
    pub value: String,
}

/// The operation of a `setvar`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetVarOp {
    /// `key=value`.
    Set,
    /// `key=+value`.
    Add,
    /// `key=-value`.
    Sub,
    /// `!key`: remove the variable.
    Unset,
    /// `key` with no `=`: set to `1`... as ModSecurity does for a bare key.
    Flag,
}

/// `ctl:option=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ctl {
    /// Canonical option name (`ruleRemoveTargetById`).
    pub option: &'static str,
    /// The value, typed by option.
    pub value: CtlValue,
}

/// The value of a `ctl` action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CtlValue {
    /// Free text (`ruleEngine=Off`, `requestBodyProcessor=JSON`, `auditLogParts=+E`).
    Text(String),
    /// `ruleRemoveById=ID|RANGE[ ID|RANGE...]`.
    Ids(Vec<IdRange>),
    /// `ruleRemoveTargetBy*=SELECTOR;TARGETS`.
    RemoveTarget(UpdateTarget),
}
