//! The XPath subset of `XML:<xpath>` targets, compiled once when rules load, with
//! namespace prefixes bound by the rule's `xmlns` actions.
//!
//! # Subset
//!
//! Absolute location paths made of `/` (child) and `//` (descendant-or-self, then
//! child) steps. A step's node test is one of:
//!
//! | test | selects |
//! | --- | --- |
//! | `name` | elements named `name` in **no** namespace (XPath 1.0: a default namespace `xmlns="..."` in the document does not apply to the expression) |
//! | `p:name` | elements named `name` whose namespace URI is the one bound to `p`, whatever prefix the document uses |
//! | `p:*` | every element in that namespace |
//! | `*` | every element |
//! | `text()` | text and CDATA nodes |
//! | `@name`, `@p:name`, `@p:*`, `@*` | attributes, likewise (last step only); an unprefixed attribute is in no namespace whatever the default namespace |
//!
//! e.g. `/*`, `//@*`, `/a/b`, `//name`, `/a/@attr`, `//a/*`,
//! `/soap:Envelope/soap:Body/*`. Anything else (predicates, other axes, functions,
//! `/` alone) is refused, so a rule never silently matches nothing.
//!
//! # Namespace prefixes
//!
//! As libmodsecurity v3 (`src/variables/xml.cc`), which registers every `xmlns`
//! action of the rule with `xmlXPathRegisterNs` before evaluating the expression
//! with libxml2: a prefix is bound by `xmlns:prefix=URI` on the same rule (the last
//! binding of a prefix wins), and `xml` is always bound to
//! `http://www.w3.org/XML/1998/namespace`. A prefix that is not bound makes the
//! expression invalid: libxml2 fails to evaluate it and v3 yields no value; here
//! the rule is refused when loading. Exclusions (`!XML:/p:a`) are never evaluated,
//! so [`XPath::compile_unbound`] accepts any prefix there.

use std::fmt;

/// The namespace of the `xml` prefix, bound in every expression.
pub const XML_NAMESPACE: &str = "http://www.w3.org/XML/1998/namespace";

/// A compiled XPath expression of the supported subset (see the module docs).
#[derive(Clone, PartialEq, Eq)]
pub struct XPath {
    expr: String,
    pub(crate) steps: Vec<Step>,
}

impl fmt::Debug for XPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The expression and the URIs its prefixes are bound to (two rules with the
        // same text but different bindings are different selectors).
        let uris: Vec<&str> = self
            .steps
            .iter()
            .filter_map(|s| match &s.test {
                Test::Element(NsTest::Uri(u), _) | Test::Attr(NsTest::Uri(u), _) => {
                    Some(u.as_str())
                }
                _ => None,
            })
            .collect();
        if uris.is_empty() {
            write!(f, "XPath({:?})", self.expr)
        } else {
            write!(f, "XPath({:?} {uris:?})", self.expr)
        }
    }
}

/// An axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Axis {
    Child,
    Descendant,
}

/// Which namespace a name test requires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NsTest {
    /// Any namespace (`*`, `@*`).
    Any,
    /// No namespace (an unprefixed name).
    None,
    /// This namespace URI (a bound prefix).
    Uri(String),
    /// A prefix left unbound ([`XPath::compile_unbound`]): selects nothing.
    Unbound,
}

/// A node test. The name is `None` for a wildcard (`*`, `p:*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Test {
    /// Elements.
    Element(NsTest, Option<String>),
    /// Text and CDATA nodes (`text()`).
    Text,
    /// Attributes (`@...`).
    Attr(NsTest, Option<String>),
}

/// One location step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) axis: Axis,
    pub(crate) test: Test,
}

/// How prefixes are resolved while compiling.
enum Prefixes<'a> {
    /// By these `(prefix, URI)` bindings; an unbound prefix is an error.
    Bound(&'a [(String, String)]),
    /// Any prefix is accepted; unbound ones select nothing.
    Lenient,
}

impl Prefixes<'_> {
    fn resolve(&self, prefix: &str, expr: &str) -> Result<NsTest, String> {
        if prefix == "xml" {
            return Ok(NsTest::Uri(XML_NAMESPACE.to_string()));
        }
        match self {
            Prefixes::Bound(ns) => match ns.iter().rev().find(|(p, _)| p == prefix) {
                Some((_, uri)) => Ok(NsTest::Uri(uri.clone())),
                None => Err(format!(
                    "XPath expression {expr:?}: namespace prefix `{prefix}` is not declared \
                     (declare it on the rule with the action `xmlns:{prefix}=URI`)"
                )),
            },
            Prefixes::Lenient => Ok(NsTest::Unbound),
        }
    }
}

impl XPath {
    /// Compiles `expr` with namespace prefixes bound by `namespaces`
    /// (`(prefix, URI)` pairs, from the rule's `xmlns` actions). Errors name the
    /// expression and what is wrong: outside the subset, or an unbound prefix.
    pub fn compile(expr: &str, namespaces: &[(String, String)]) -> Result<XPath, String> {
        Self::build(expr, &Prefixes::Bound(namespaces))
    }

    /// Compiles `expr` accepting any prefix (unbound ones select nothing), for
    /// selectors that are only compared, never evaluated (exclusions).
    pub fn compile_unbound(expr: &str) -> Result<XPath, String> {
        Self::build(expr, &Prefixes::Lenient)
    }

    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.expr
    }

    fn build(expr: &str, prefixes: &Prefixes<'_>) -> Result<XPath, String> {
        let unsupported = || format!("unsupported XPath expression: {expr:?}");
        let mut rest = expr.trim();
        if !rest.starts_with('/') {
            return Err(unsupported());
        }
        let mut steps: Vec<Step> = Vec::new();
        while !rest.is_empty() {
            let axis = if let Some(r) = rest.strip_prefix("//") {
                rest = r;
                Axis::Descendant
            } else if let Some(r) = rest.strip_prefix('/') {
                rest = r;
                Axis::Child
            } else {
                return Err(unsupported());
            };
            let end = rest.find('/').unwrap_or(rest.len());
            let token = &rest[..end];
            rest = &rest[end..];
            if steps
                .last()
                .is_some_and(|s| matches!(s.test, Test::Attr(..) | Test::Text))
            {
                // Nothing can follow an attribute or a text node.
                return Err(unsupported());
            }
            let test = match token {
                "*" => Test::Element(NsTest::Any, None),
                "text()" => Test::Text,
                "@*" => Test::Attr(NsTest::Any, None),
                t => {
                    let (attr, qname) = match t.strip_prefix('@') {
                        Some(n) => (true, n),
                        None => (false, t),
                    };
                    let (ns, local) = match qname.split_once(':') {
                        Some((prefix, local)) => {
                            if !is_ncname(prefix) {
                                return Err(unsupported());
                            }
                            let local = match local {
                                "*" => None,
                                l if is_ncname(l) => Some(l.to_string()),
                                _ => return Err(unsupported()),
                            };
                            (prefixes.resolve(prefix, expr)?, local)
                        }
                        None if is_ncname(qname) => (NsTest::None, Some(qname.to_string())),
                        None => return Err(unsupported()),
                    };
                    if attr {
                        Test::Attr(ns, local)
                    } else {
                        Test::Element(ns, local)
                    }
                }
            };
            steps.push(Step { axis, test });
        }
        if steps.is_empty() {
            return Err(unsupported());
        }
        Ok(XPath {
            expr: expr.to_string(),
            steps,
        })
    }
}

fn is_name_char(c: char, first: bool) -> bool {
    c.is_alphabetic() || c == '_' || (!first && (c.is_alphanumeric() || c == '-' || c == '.'))
}

/// An XML name without a colon.
fn is_ncname(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| is_name_char(c, true)) && chars.all(|c| is_name_char(c, false))
}

/// Checks that `xpath` is in the supported subset with no namespace bindings
/// (an expression with a prefix other than `xml` is refused).
pub fn validate_xpath(xpath: &str) -> Result<(), String> {
    XPath::compile(xpath, &[]).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn compiling_never_panics(xp in "[/@*a-z()\\[\\]:.0-9 ]{0,16}") {
            let _ = validate_xpath(&xp);
            let _ = XPath::compile_unbound(&xp);
            let _ = XPath::compile(&xp, &[("a".to_string(), "u".to_string())]);
        }
    }

    fn ns(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(p, u)| (p.to_string(), u.to_string()))
            .collect()
    }

    #[test]
    fn prefixes_resolve_to_uris() {
        let b = ns(&[("s", "urn:one"), ("s", "urn:two"), ("t", "urn:t")]);
        let x = XPath::compile("/s:a//t:*/@s:b", &b).map_err(|e| e.to_string());
        let x = x.as_ref().map(|x| &x.steps);
        assert_eq!(
            x,
            Ok(&vec![
                Step {
                    axis: Axis::Child,
                    test: Test::Element(NsTest::Uri("urn:two".into()), Some("a".into()))
                },
                Step {
                    axis: Axis::Descendant,
                    test: Test::Element(NsTest::Uri("urn:t".into()), None)
                },
                Step {
                    axis: Axis::Child,
                    test: Test::Attr(NsTest::Uri("urn:two".into()), Some("b".into()))
                },
            ])
        );
    }

    #[test]
    fn unbound_prefixes() {
        let e = XPath::compile("/p:a", &[]).err().unwrap_or_default();
        assert!(e.contains("`p`") && e.contains("xmlns:p=URI"), "{e}");
        assert!(XPath::compile("/xml:a/@xml:lang", &[]).is_ok());
        assert!(XPath::compile_unbound("/p:a/@q:b").is_ok());
        assert!(XPath::compile_unbound("/p:a[1]").is_err());
    }

    #[test]
    fn malformed_names_are_refused() {
        for bad in [
            "/:a", "/a:", "/a:b:c", "/*:a", "/@:a", "/p:1a", "/a b", "//", "/a//",
        ] {
            assert!(
                XPath::compile(bad, &ns(&[("a", "u"), ("p", "u")])).is_err(),
                "{bad}"
            );
        }
    }
}
