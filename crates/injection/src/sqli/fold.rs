//! Token folding: reduces the token stream to at most [`MAX_TOKENS`] tokens
//! (`libinjection_sqli_fold`).
//!
//! Folding removes what does not change the shape of a query: repeated
//! strings or semicolons, unary operators, arithmetic (`1+1` is `1`), type
//! casts, `{ODBC escapes}`, and merges multi-word keywords (`UNION ALL`).

use super::keywords::{equals_upper, lookup_word, may_be_two_words};
use super::token::{Token, TokenType as T, TOKEN_VALUE_CAPACITY};
use super::{SqliState, MAX_TOKENS};

/// Whether the token is a one-byte arithmetic operator.
fn is_arithmetic_op(t: &Token) -> bool {
    t.kind == T::Operator && t.len == 1 && matches!(t.first(), b'*' | b'/' | b'-' | b'+' | b'%')
}

/// Whether the token is a unary operator (`+ - ! ~ !! NOT`).
fn is_unary_op(t: &Token) -> bool {
    is_unary(t.kind, t.value())
}

/// [`is_unary_op`] of a token's type and (kept) value.
fn is_unary(kind: T, v: &[u8]) -> bool {
    kind == T::Operator
        && match *v {
            [c] => matches!(c, b'+' | b'-' | b'!' | b'~'),
            [b'!', b'!'] => true,
            [_, _, _] => v.eq_ignore_ascii_case(b"NOT"),
            _ => false,
        }
}

/// Whether folding drops a token of this type and (kept) value at the start
/// of the input: comments, left parens, SQL types and unary operators.
pub(crate) fn skipped_at_start(kind: T, value: &[u8]) -> bool {
    matches!(kind, T::Comment | T::LeftParens | T::SqlType) || is_unary(kind, value)
}

/// Whether `a b` is a two-word keyword (`UNION ALL`, `IS NOT`, ...); if so,
/// `a` becomes the merged token.
fn merge_words(a: &mut Token, b: &Token) -> bool {
    if !mergeable(a.kind, b.kind) {
        return false;
    }
    match joined_keyword(a.value(), b.value()) {
        Some((kind, joined, len)) => {
            let pos = a.pos;
            a.assign(kind, pos, &joined[..len]);
            true
        }
        None => false,
    }
}

/// The type of the keyword that tokens of types `a_kind` and `b_kind` with
/// (kept) values `a` and `b` make when folding merges them, if they do.
pub(crate) fn merged_kind(a_kind: T, a: &[u8], b_kind: T, b: &[u8]) -> Option<T> {
    if !mergeable(a_kind, b_kind) {
        return None;
    }
    joined_keyword(a, b).map(|(kind, _, _)| kind)
}

/// Whether tokens of these types may merge into a multi-word keyword.
fn mergeable(a: T, b: T) -> bool {
    matches!(
        a,
        T::Keyword
            | T::Bareword
            | T::Operator
            | T::Union
            | T::Function
            | T::Expression
            | T::Tsql
            | T::SqlType
    ) && mergeable_a_or_logic(b)
}

/// The keyword `a b` (the values joined by a space, if that fits a token):
/// its type, and the joined value of the given length.
#[inline(always)]
fn joined_keyword(a: &[u8], b: &[u8]) -> Option<(T, [u8; TOKEN_VALUE_CAPACITY + 1], usize)> {
    // (almost every pair is told apart here, without joining)
    if a.len() + b.len() + 1 > TOKEN_VALUE_CAPACITY || !may_be_two_words(a, b) {
        return None;
    }
    join_and_look_up(a, b)
}

/// [`joined_keyword`] once the cheap tests passed.
#[inline(never)]
fn join_and_look_up(a: &[u8], b: &[u8]) -> Option<(T, [u8; TOKEN_VALUE_CAPACITY + 1], usize)> {
    let (sz1, sz2) = (a.len(), b.len());
    let sz3 = sz1 + sz2 + 1;
    let mut joined = [0u8; TOKEN_VALUE_CAPACITY + 1];
    joined.get_mut(..sz1)?.copy_from_slice(a);
    *joined.get_mut(sz1)? = b' ';
    joined.get_mut(sz1 + 1..sz3)?.copy_from_slice(b);
    lookup_word(joined.get(..sz3)?).map(|kind| (kind, joined, sz3))
}

/// [`merge_words`] on the tokens in slots `left` and `left + 1`.
fn merge_pair(tokens: &mut [Token], left: usize) -> bool {
    match tokens.get_mut(left..left + 2) {
        Some([a, b]) => merge_words(a, b),
        _ => false,
    }
}

fn mergeable_a_or_logic(kind: T) -> bool {
    matches!(
        kind,
        T::Keyword
            | T::Bareword
            | T::Operator
            | T::Union
            | T::Function
            | T::Expression
            | T::Tsql
            | T::SqlType
            | T::LogicOperator
    )
}

impl SqliState<'_> {
    /// Reads the next token into slot `pos`; comments are kept aside in
    /// `last_comment` instead. Returns the new `pos`.
    fn fold_read(&mut self, pos: usize, more: &mut bool, last_comment: &mut Token) -> usize {
        self.current = pos;
        *more = self.tokenize();
        if *more {
            if self.tokens[pos].kind == T::Comment {
                *last_comment = self.tokens[pos];
                pos
            } else {
                last_comment.kind = T::None;
                pos + 1
            }
        } else {
            pos
        }
    }

    /// Tokenizes and folds the whole input (`libinjection_sqli_fold`).
    ///
    /// Returns the number of folded tokens, which are then in slots `0..n`
    /// (see [`SqliState::token`]): at most [`MAX_TOKENS`], except that an
    /// evil `{ ``` sequence ends folding at once, possibly with one token more
    /// (the fingerprint is then `X` anyway).
    pub fn fold(&mut self) -> usize {
        let mut last_comment = Token::EMPTY;
        // where the next token goes
        let mut pos: usize = 0;
        // number of tokens already folded (final)
        let mut left: usize = 0;
        let mut more;

        // Skip leading comments, left parens, SQL types and unary operators.
        self.current = 0;
        loop {
            more = self.tokenize();
            let t = &self.tokens[0];
            if !skipped_at_start(t.kind, t.value()) {
                break;
            }
            if !more {
                break;
            }
        }
        if !more {
            return 0;
        }
        pos += 1;

        loop {
            if pos >= MAX_TOKENS {
                let k = |i: usize| self.tokens[i].kind;
                if (k(0) == T::Number
                    && (k(1) == T::Operator || k(1) == T::Comma)
                    && k(2) == T::LeftParens
                    && k(3) == T::Number
                    && k(4) == T::RightParens)
                    || (k(0) == T::Bareword
                        && k(1) == T::Operator
                        && k(2) == T::LeftParens
                        && (k(3) == T::Bareword || k(3) == T::Number)
                        && k(4) == T::RightParens)
                    || (k(0) == T::Number
                        && k(1) == T::RightParens
                        && k(2) == T::Comma
                        && k(3) == T::LeftParens
                        && k(4) == T::Number)
                    || (k(0) == T::Bareword
                        && k(1) == T::RightParens
                        && k(2) == T::Operator
                        && k(3) == T::LeftParens
                        && k(4) == T::Bareword)
                {
                    if pos > MAX_TOKENS {
                        self.tokens[1] = self.tokens[MAX_TOKENS];
                        pos = 2;
                    } else {
                        pos = 1;
                    }
                    left = 0;
                }
            }

            if !more || left >= MAX_TOKENS {
                left = pos;
                break;
            }

            // get up to two tokens
            while more && pos <= MAX_TOKENS && pos - left < 2 {
                pos = self.fold_read(pos, &mut more, &mut last_comment);
            }
            if pos - left < 2 {
                left = pos;
                continue;
            }

            // (references, not copies: the tokens are 56 bytes each)
            let a = &self.tokens[left];
            let b = &self.tokens[left + 1];

            if a.kind == T::String && b.kind == T::String {
                // "foo" "bar" is valid SQL: ignore the second string
                pos -= 1;
                self.stats_folds += 1;
                continue;
            } else if a.kind == T::Semicolon && b.kind == T::Semicolon {
                pos -= 1;
                self.stats_folds += 1;
                continue;
            } else if (a.kind == T::Operator || a.kind == T::LogicOperator)
                && (is_unary_op(b) || b.kind == T::SqlType)
            {
                pos -= 1;
                self.stats_folds += 1;
                left = 0;
                continue;
            }
            if (a.kind == T::LeftParens && is_unary_op(b)) || merge_pair(&mut self.tokens, left) {
                // "( -" drops the unary operator; "UNION ALL" becomes one keyword
                pos -= 1;
                self.stats_folds += 1;
                left = left.saturating_sub(1);
                continue;
            }
            let a = &self.tokens[left];
            let b = &self.tokens[left + 1];
            if a.kind == T::Semicolon
                && b.kind == T::Function
                && b.first().eq_ignore_ascii_case(&b'I')
                && b.byte(1).eq_ignore_ascii_case(&b'F')
            {
                // "; IF": Transact-SQL control flow, not the IF() function
                self.tokens[left + 1].kind = T::Tsql;
                continue;
            } else if (a.kind == T::Bareword || a.kind == T::Variable)
                && b.kind == T::LeftParens
                && [
                    "USER_ID",
                    "USER_NAME",
                    "DATABASE",
                    "PASSWORD",
                    "USER",
                    "CURRENT_USER",
                    "CURRENT_DATE",
                    "CURRENT_TIME",
                    "CURRENT_TIMESTAMP",
                    "LOCALTIME",
                    "LOCALTIMESTAMP",
                ]
                .iter()
                .any(|w| equals_upper(w, a.value()))
            {
                // common column names that are also functions
                self.tokens[left].kind = T::Function;
                continue;
            } else if a.kind == T::Keyword
                && (equals_upper("IN", a.value()) || equals_upper("NOT IN", a.value()))
            {
                self.tokens[left].kind = if b.kind == T::LeftParens {
                    // ... IN ( : an operator
                    T::Operator
                } else {
                    T::Bareword
                };
                continue;
            } else if a.kind == T::Operator
                && (equals_upper("LIKE", a.value()) || equals_upper("NOT LIKE", a.value()))
            {
                if b.kind == T::LeftParens {
                    // SELECT LIKE(...: a function
                    self.tokens[left].kind = T::Function;
                }
            } else if a.kind == T::SqlType
                && matches!(
                    b.kind,
                    T::Bareword
                        | T::Number
                        | T::SqlType
                        | T::LeftParens
                        | T::Function
                        | T::Variable
                        | T::String
                )
            {
                self.tokens[left] = *b;
                pos -= 1;
                self.stats_folds += 1;
                left = 0;
                continue;
            } else if a.kind == T::Collate && b.kind == T::Bareword {
                // too many collations: a bare word with '_' is taken as a type
                if b.c_value().contains(&b'_') {
                    self.tokens[left + 1].kind = T::SqlType;
                    left = 0;
                }
            } else if a.kind == T::Backslash {
                if is_arithmetic_op(b) {
                    // T-SQL parses '\%1' as '0 % 1'
                    self.tokens[left].kind = T::Number;
                } else {
                    // T-SQL parses '\1' as '1'
                    self.tokens[left] = *b;
                    pos -= 1;
                    self.stats_folds += 1;
                }
                left = 0;
                continue;
            } else if (a.kind == T::LeftParens && b.kind == T::LeftParens)
                || (a.kind == T::RightParens && b.kind == T::RightParens)
            {
                pos -= 1;
                left = 0;
                self.stats_folds += 1;
                continue;
            } else if a.kind == T::LeftBrace && b.kind == T::Bareword {
                // MySQL's degenerate "{ ``.``.id }": blacklisted
                if b.len == 0 {
                    self.tokens[left + 1].kind = T::Evil;
                    return left + 2;
                }
                // ODBC "{foo expr}": drop "{ foo"
                left = 0;
                pos -= 2;
                self.stats_folds += 2;
                continue;
            } else if b.kind == T::RightBrace {
                pos -= 1;
                left = 0;
                self.stats_folds += 1;
                continue;
            }

            // no two-token fold: get a third token
            while more && pos <= MAX_TOKENS && pos - left < 3 {
                pos = self.fold_read(pos, &mut more, &mut last_comment);
            }
            if pos - left < 3 {
                left = pos;
                continue;
            }

            let a = &self.tokens[left];
            let b = &self.tokens[left + 1];
            let c = &self.tokens[left + 2];

            if (a.kind == T::Number && b.kind == T::Operator && c.kind == T::Number)
                || (a.kind == T::Operator && b.kind != T::LeftParens && c.kind == T::Operator)
                || (a.kind == T::LogicOperator && c.kind == T::LogicOperator)
                || (a.kind == T::Variable
                    && b.kind == T::Operator
                    && matches!(c.kind, T::Variable | T::Number | T::Bareword))
                || (matches!(a.kind, T::Bareword | T::Number)
                    && b.kind == T::Operator
                    && matches!(c.kind, T::Number | T::Bareword))
            {
                // arithmetic and comparisons fold to their left operand:
                // "1+1", "a=b", "@x:=1", "+ 1 -", "AND 1 OR"
                pos -= 2;
                left = 0;
                continue;
            } else if matches!(a.kind, T::Bareword | T::Number | T::Variable | T::String)
                && b.kind == T::Operator
                && b.c_value() == b"::"
                && c.kind == T::SqlType
            {
                pos -= 2;
                left = 0;
                self.stats_folds += 2;
                continue;
            } else if matches!(a.kind, T::Bareword | T::Number | T::String | T::Variable)
                && b.kind == T::Comma
                && matches!(c.kind, T::Number | T::Bareword | T::String | T::Variable)
            {
                pos -= 2;
                left = 0;
                continue;
            } else if matches!(a.kind, T::Expression | T::Group | T::Comma)
                && is_unary_op(b)
                && c.kind == T::LeftParens
            {
                // SELECT + (, LIMIT + (: drop the unary operator
                self.tokens[left + 1] = *c;
                pos -= 1;
                left = 0;
                continue;
            } else if matches!(a.kind, T::Keyword | T::Expression | T::Group)
                && is_unary_op(b)
                && matches!(
                    c.kind,
                    T::Number | T::Bareword | T::Variable | T::String | T::Function
                )
            {
                // select - 1
                self.tokens[left + 1] = *c;
                pos -= 1;
                left = 0;
                continue;
            } else if a.kind == T::Comma
                && is_unary_op(b)
                && matches!(c.kind, T::Number | T::Bareword | T::Variable | T::String)
            {
                // ", -1" becomes ",1", then back up: "1,-1" folds to "1"
                self.tokens[left + 1] = *c;
                left = 0;
                pos = pos.saturating_sub(3);
                continue;
            } else if a.kind == T::Comma && is_unary_op(b) && c.kind == T::Function {
                // "1,-sin(1)" becomes "1,sin(1)"
                self.tokens[left + 1] = *c;
                pos -= 1;
                left = 0;
                continue;
            } else if a.kind == T::Bareword && b.kind == T::Dot && c.kind == T::Bareword {
                // database.table
                pos -= 2;
                left = 0;
                continue;
            } else if a.kind == T::Expression && b.kind == T::Dot && c.kind == T::Bareword {
                // select . `foo` --> select `foo`
                self.tokens[left + 1] = *c;
                pos -= 1;
                left = 0;
                continue;
            } else if a.kind == T::Function && b.kind == T::LeftParens && c.kind != T::RightParens {
                // USER() takes no argument: USER(foo) is not the function
                if equals_upper("USER", a.value()) {
                    self.tokens[left].kind = T::Bareword;
                }
            }

            // no fold: the left-most token is final
            left += 1;
        }

        // with room left, put back a trailing comment
        if left < MAX_TOKENS && last_comment.kind == T::Comment {
            self.mark_used(left);
            self.tokens[left] = last_comment;
            left += 1;
        }

        // a 6th token may have been read to type the 5th
        left.min(MAX_TOKENS)
    }
}
