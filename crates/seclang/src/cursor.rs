//! A located piece of argument text: maps offsets within a substring of a lexed
//! argument back to source spans, so every sub-parser can report precise positions.

use crate::diagnostic::Diagnostic;
use crate::lexer::Token;
use crate::source::{FileId, SourceFile, Span};

/// Shared state of one file's parse: where errors go and how to locate text.
pub(crate) struct Ctx<'a> {
    pub file: &'a SourceFile,
    pub id: FileId,
    pub errors: &'a mut Vec<Diagnostic>,
}

/// A substring of a token: `base` is its offset within the token's text.
#[derive(Clone, Copy)]
pub(crate) struct Loc<'t> {
    pub token: &'t Token,
    pub base: usize,
}

impl<'t> Loc<'t> {
    /// The whole token.
    pub fn of(token: &'t Token) -> Self {
        Loc { token, base: 0 }
    }

    /// A location shifted `by` bytes further into the token.
    pub fn shift(self, by: usize) -> Self {
        Loc {
            token: self.token,
            base: self.base + by,
        }
    }

    /// The span of `start..end` relative to this location.
    pub fn span(self, ctx: &Ctx<'_>, start: usize, end: usize) -> Span {
        let len = self.token.text.len();
        let s = (self.base + start).min(len);
        let e = (self.base + end).min(len).max(s);
        if len == 0 {
            return self.token.span(ctx.file, ctx.id);
        }
        self.token.span_of(ctx.file, ctx.id, s, e)
    }
}
