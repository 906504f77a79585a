//! Errors found while loading a configuration, located and rendered with the
//! offending line and a caret.

use std::fmt::{self, Write as _};

use crate::source::{SourceMap, Span};

/// What went wrong. Every diagnostic has exactly one kind, so tests (and tools) can
/// match on it without parsing messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A directive name that is not part of SecLang.
    UnknownDirective,
    /// A variable (target) name that does not exist.
    UnknownVariable,
    /// An operator name that does not exist.
    UnknownOperator,
    /// An action name that does not exist.
    UnknownAction,
    /// A `t:` transformation that does not exist.
    UnknownTransformation,
    /// A `ctl:` option that does not exist.
    UnknownCtlOption,
    /// A directive, operator or action lacks a required argument.
    MissingArgument,
    /// A directive, operator or action was given an argument it does not take.
    UnexpectedArgument,
    /// A quoted argument is not closed before the end of the directive.
    UnterminatedQuote,
    /// A value is not of the expected form (number, On/Off, ...).
    InvalidValue,
    /// A variable selector is malformed or not allowed for that variable.
    InvalidSelector,
    /// A rule (chain starter) has no `id`.
    MissingRuleId,
    /// Two rules share an `id`.
    DuplicateRuleId,
    /// `phase` is not 1-5 (or request/response/logging).
    PhaseOutOfRange,
    /// A rule ends with `chain` but no rule follows.
    DanglingChain,
    /// An action only a chain starter may carry appears in a chained rule.
    ActionNotAllowedInChain,
    /// `skipAfter` names a marker that does not exist.
    UnknownMarker,
    /// An `Include` path cannot be read or matches nothing.
    UnreadableInclude,
    /// A file includes itself, directly or indirectly.
    IncludeCycle,
    /// `SecRemoteRules`: Palisade never downloads at run time.
    RemoteRulesRefused,
    /// A directive that is understood but deliberately not supported.
    Unsupported,
    /// A `setvar` that is not `[!]collection.key[=[+|-]value]`.
    InvalidSetVar,
}

impl ErrorKind {
    /// A stable, kebab-case name for the kind (used in rendered messages and JSON).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::UnknownDirective => "unknown-directive",
            ErrorKind::UnknownVariable => "unknown-variable",
            ErrorKind::UnknownOperator => "unknown-operator",
            ErrorKind::UnknownAction => "unknown-action",
            ErrorKind::UnknownTransformation => "unknown-transformation",
            ErrorKind::UnknownCtlOption => "unknown-ctl-option",
            ErrorKind::MissingArgument => "missing-argument",
            ErrorKind::UnexpectedArgument => "unexpected-argument",
            ErrorKind::UnterminatedQuote => "unterminated-quote",
            ErrorKind::InvalidValue => "invalid-value",
            ErrorKind::InvalidSelector => "invalid-selector",
            ErrorKind::MissingRuleId => "missing-rule-id",
            ErrorKind::DuplicateRuleId => "duplicate-rule-id",
            ErrorKind::PhaseOutOfRange => "phase-out-of-range",
            ErrorKind::DanglingChain => "dangling-chain",
            ErrorKind::ActionNotAllowedInChain => "action-not-allowed-in-chain",
            ErrorKind::UnknownMarker => "unknown-marker",
            ErrorKind::UnreadableInclude => "unreadable-include",
            ErrorKind::IncludeCycle => "include-cycle",
            ErrorKind::RemoteRulesRefused => "remote-rules-refused",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::InvalidSetVar => "invalid-setvar",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One located error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// What kind of error.
    pub kind: ErrorKind,
    /// A sentence saying what is wrong.
    pub message: String,
    /// Where; `None` for errors with no place in a file (a missing top-level path).
    pub span: Option<Span>,
    /// A hint, such as the closest valid name.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic at a span.
    pub fn new(kind: ErrorKind, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            kind,
            message: message.into(),
            span: Some(span),
            help: None,
        }
    }

    /// A diagnostic with no location.
    pub fn unlocated(kind: ErrorKind, message: impl Into<String>) -> Self {
        Diagnostic {
            kind,
            message: message.into(),
            span: None,
            help: None,
        }
    }

    /// Adds a hint.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds "did you mean" help when a suggestion exists.
    pub fn with_suggestion(self, suggestion: Option<&str>) -> Self {
        match suggestion {
            Some(s) => self.with_help(format!("did you mean `{s}`?")),
            None => self,
        }
    }

    /// `file:line:col` of the diagnostic, or the empty string.
    pub fn location(&self, sources: &SourceMap) -> String {
        match self.span {
            Some(s) => format!("{}:{}:{}", sources.path(s.file).display(), s.line, s.col),
            None => String::new(),
        }
    }

    /// Renders the diagnostic like a compiler does:
    ///
    /// ```text
    /// rules.conf:3:14: error[unknown-operator]: unknown operator `@rxx`
    ///   |
    /// 3 | SecRule ARGS "@rxx foo" "id:1,deny"
    ///   |              ^^^^^
    ///   = help: did you mean `rx`?
    /// ```
    pub fn render(&self, sources: &SourceMap) -> String {
        let mut out = String::new();
        let loc = self.location(sources);
        if loc.is_empty() {
            let _ = writeln!(out, "error[{}]: {}", self.kind, self.message);
        } else {
            let _ = writeln!(out, "{loc}: error[{}]: {}", self.kind, self.message);
        }
        if let Some(span) = self.span {
            if let Some(file) = sources.get(span.file) {
                let full = file.line_text(span.line);
                // Long lines are shown as a window around the caret.
                let col0 = span.col.saturating_sub(1) as usize;
                let skip = col0.saturating_sub(60);
                let text: String = full.chars().skip(skip).take(160).collect();
                let prefix = if skip > 0 { "..." } else { "" };
                let num = span.line.to_string();
                let pad = " ".repeat(num.len());
                let caret_pad: String = std::iter::repeat_n(' ', prefix.len())
                    .chain(
                        text.chars()
                            .take(col0 - skip)
                            .map(|c| if c == '\t' { '\t' } else { ' ' }),
                    )
                    .collect();
                let line_end = file
                    .text
                    .get(span.start as usize..)
                    .and_then(|t| t.find('\n'))
                    .map_or(file.text.len(), |e| e + span.start as usize);
                let width = (span.end.min(line_end as u32).saturating_sub(span.start) as usize)
                    .clamp(1, 80);
                let text = format!("{prefix}{text}");
                let _ = writeln!(out, "{pad} |");
                let _ = writeln!(out, "{num} | {text}");
                let _ = writeln!(out, "{pad} | {caret_pad}{}", "^".repeat(width));
            }
        }
        if let Some(help) = &self.help {
            let _ = writeln!(out, "  = help: {help}");
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.kind, self.message)
    }
}
