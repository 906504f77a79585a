//! Macro strings (`%{tx.score}`, `%{MATCHED_VAR}`, `%{rule.id}`): split once at load
//! time into literal and variable parts, expanded per use.

use crate::variable::Var;

/// One part of a macro string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text copied as is.
    Literal(Vec<u8>),
    /// `%{VAR}` or `%{VAR.key}`: the first value of the variable (empty if none).
    Var {
        /// The variable.
        var: Var,
        /// The key, lower case, for collections.
        key: Option<String>,
        /// Where the key was last found in its collection.
        hint: crate::collection::Hint,
    },
}

/// A string that may contain macros.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MacroString {
    parts: Vec<Part>,
}

impl MacroString {
    /// Splits `text` into parts. `%{...}` naming no known variable stays literal.
    pub fn parse(text: &str) -> MacroString {
        let bytes = text.as_bytes();
        let mut parts = Vec::new();
        let mut lit = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' && bytes.get(i + 1) == Some(&b'{') {
                if let Some(end) = text[i + 2..].find('}') {
                    let inner = &text[i + 2..i + 2 + end];
                    let (name, key) = match inner.find(['.', ':']) {
                        Some(p) => (&inner[..p], Some(inner[p + 1..].to_ascii_lowercase())),
                        None => (inner, None),
                    };
                    if let Some(var) = Var::from_name(name.trim()) {
                        if !lit.is_empty() {
                            parts.push(Part::Literal(std::mem::take(&mut lit)));
                        }
                        parts.push(Part::Var {
                            var,
                            key,
                            hint: Default::default(),
                        });
                        i += 2 + end + 1;
                        continue;
                    }
                }
            }
            lit.push(bytes[i]);
            i += 1;
        }
        if !lit.is_empty() {
            parts.push(Part::Literal(lit));
        }
        MacroString { parts }
    }

    /// Lower-cases the literal parts (ASCII letters only), as a key that is
    /// lower-cased whole once expanded needs them.
    pub fn lowercase_literals(&mut self) {
        for p in &mut self.parts {
            if let Part::Literal(l) = p {
                l.make_ascii_lowercase();
            }
        }
    }

    /// Whether every literal part is ASCII.
    pub fn literals_ascii(&self) -> bool {
        self.parts.iter().all(|p| match p {
            Part::Literal(l) => l.is_ascii(),
            Part::Var { .. } => true,
        })
    }

    /// Whether any part is a variable.
    pub fn has_macros(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Var { .. }))
    }

    /// A capacity for an expansion: the literal parts' bytes and 32 per variable
    /// part (so that most expansions fill one allocation instead of growing one
    /// from eight bytes).
    pub fn expansion_hint(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Literal(l) => l.len(),
                Part::Var { .. } => 32,
            })
            .sum()
    }

    /// The parts.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The text when there are no macros.
    pub fn literal(&self) -> Option<&[u8]> {
        match self.parts.as_slice() {
            [] => Some(b""),
            [Part::Literal(l)] => Some(l),
            _ => None,
        }
    }

    /// Expands into `out` (cleared first), asking `resolve` for each variable part.
    pub fn expand_into(
        &self,
        out: &mut Vec<u8>,
        mut resolve: impl FnMut(Var, Option<&str>, &mut Vec<u8>),
    ) {
        self.expand_into_hinted(out, |var, key, _, out| resolve(var, key, out));
    }

    /// As [`MacroString::expand_into`], with each variable part's key hint (see
    /// [`crate::collection::Hint`]).
    pub fn expand_into_hinted(
        &self,
        out: &mut Vec<u8>,
        mut resolve: impl FnMut(Var, Option<&str>, &crate::collection::Hint, &mut Vec<u8>),
    ) {
        out.clear();
        for p in &self.parts {
            match p {
                Part::Literal(l) => out.extend_from_slice(l),
                Part::Var { var, key, hint } => resolve(*var, key.as_deref(), hint, out),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_literals_and_variables() {
        let m = MacroString::parse("score %{tx.anomaly_score} at %{MATCHED_VAR_NAME} %{nope} 100%");
        assert!(m.has_macros());
        let mut out = Vec::new();
        m.expand_into(&mut out, |v, k, out| {
            out.extend_from_slice(format!("<{}:{}>", v.name(), k.unwrap_or("-")).as_bytes())
        });
        assert_eq!(
            String::from_utf8_lossy(&out),
            "score <TX:anomaly_score> at <MATCHED_VAR_NAME:-> %{nope} 100%"
        );
        assert_eq!(MacroString::parse("plain").literal(), Some(&b"plain"[..]));
    }
}
