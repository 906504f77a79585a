//! XML request bodies (`ctl:requestBodyProcessor=XML`) and the `XML:<xpath>`
//! variable.
//!
//! # libmodsecurity v3 behaviour
//!
//! Sources: `src/request_body_processor/xml.cc` (libxml2 push parser, external
//! entities answered with nothing unless SecXmlExternalEntity is On) and
//! `src/variables/xml.cc` (`XML::evaluate`).
//!
//! * The whole body is parsed; if it is not well-formed the processor error is
//!   `XML: Failed parsing document.` (the transaction reports
//!   `XML parsing error: XML: Failed parsing document.`).
//! * `XML:<xpath>` evaluates the expression with libxml2 and produces **one value
//!   per node** of the result: `xmlNodeGetContent(node)`, i.e. for an element the
//!   concatenation, in document order, of all the text and CDATA inside it
//!   (descendants included, entity references expanded, comments and processing
//!   instructions excluded); for an attribute its value.
//! * `XML:/*` therefore yields exactly **one** value: the text content of the
//!   whole document (the root element's content, including the whitespace between
//!   elements). `XML://@*` yields the value of every attribute of every element, in
//!   document order (namespace declarations `xmlns…` are not attributes).
//! * A bare `XML` (no xpath) always yields the placeholder `[XML document tree]`:
//!   it is the target of `@validateDTD` / `@validateSchema`, which read the parsed
//!   tree. It is not evaluated here: the transaction gives it the raw body instead
//!   (see `transaction/resolve.rs` and `operator/validate_dtd.rs`).
//!
//! # This implementation
//!
//! The document is parsed with `roxmltree` (pure Rust; DTDs are accepted, internal
//! entities expanded with billion-laughs protection, external entities resolved to
//! nothing and never fetched) and copied into a small owned tree that keeps each
//! element's and attribute's namespace URI (interned per document). Encodings: UTF-8
//! (optional BOM), UTF-16 with a BOM, and ISO-8859-1 / US-ASCII when the XML
//! declaration says so are decoded as libxml2 would (its tree, and so
//! `xmlNodeGetContent`, is UTF-8); other declared encodings must be valid UTF-8.
//! An undeclared namespace prefix, which libxml2 accepts with a namespace warning
//! while roxmltree rejects it, is declared on the root element and the document
//! parsed again (up to 8 prefixes); such elements and attributes then get what
//! libxml2 gives them: the qualified name `p:local` as their name and no namespace.
//! Remaining difference: on a malformed document v3 keeps libxml2's partial tree
//! for `XML:` while here the document is simply absent.
//!
//! The supported XPath subset, with namespace prefixes bound by the rule's `xmlns`
//! actions, is compiled when rules load ([`XPath`], module `body::xpath`). Results
//! are node-sets in document order without duplicates; evaluation is linear in the
//! document size per step (plus the size of the text produced).

use std::fmt;

use rustc_hash::FxHashMap;

use super::xpath::{Axis, NsTest, Test, XPath};

/// A parsed XML document (the tree `XML:<xpath>` is evaluated against).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct XmlDoc {
    /// Nodes in document order; index 0 is the root element when present.
    nodes: Vec<XNode>,
    /// Indices of the text nodes, ascending (to find a subtree's text quickly).
    texts: Vec<usize>,
    /// Namespace URIs of the document; index 0 is "no namespace".
    namespaces: Vec<String>,
}

/// The values of each XPath expression evaluated on one document, kept for the
/// document's transaction: every CRS rule over `XML:/*` reads the same
/// expression, which is evaluated once instead of once per rule.
/// (A mutex, not a `RefCell`: a transaction is `Sync`; it is never contended.)
#[derive(Debug, Default)]
pub struct XPathValues(std::sync::Mutex<Vec<(XPath, Vec<Vec<u8>>)>>);

impl XPathValues {
    /// Calls `f` with each value of `path` on `doc` (as [`XmlDoc::evaluate`]
    /// gives them), evaluating it only the first time. The values must be of
    /// `doc`: [`XPathValues::clear`] when the document changes.
    pub fn for_each(&self, doc: &XmlDoc, path: &XPath, mut f: impl FnMut(&[u8])) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let k = match kept.iter().position(|(p, _)| p == path) {
            Some(k) => k,
            None => {
                let mut values = Vec::new();
                doc.evaluate(path, &mut values);
                kept.push((path.clone(), values));
                kept.len() - 1
            }
        };
        if let Some((_, values)) = kept.get(k) {
            for v in values {
                f(v);
            }
        }
    }

    /// Forgets the values (for another document).
    pub fn clear(&mut self) {
        self.0.get_mut().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl fmt::Debug for XmlDoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XmlDoc")
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum XKind {
    /// An element: its local name, namespace and attributes.
    Element {
        name: String,
        /// Index into [`XmlDoc::namespaces`].
        ns: u32,
        attrs: Vec<XAttr>,
    },
    /// A text (or CDATA) node.
    Text(String),
}

/// An attribute (namespace declarations are not attributes).
#[derive(Debug, Clone, PartialEq, Eq)]
struct XAttr {
    name: String,
    /// Index into [`XmlDoc::namespaces`].
    ns: u32,
    value: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct XNode {
    kind: XKind,
    /// Index of the last node of this node's subtree (itself for a leaf).
    subtree_end: usize,
    /// Children, in order.
    children: Vec<usize>,
}

/// The processor error libmodsecurity reports for any malformed document.
pub const XML_PARSE_ERROR: &str = "XML: Failed parsing document.";

/// How many undeclared namespace prefixes [`parse_xml`] declares for roxmltree
/// before giving up (libxml2 accepts undeclared prefixes).
const MAX_UNDECLARED_PREFIXES: usize = 8;

/// The namespace URI given to an undeclared prefix `p` is this followed by `p`
/// (recognised when the tree is copied, see [`XmlDoc::from_roxmltree`]).
const UNDECLARED_NS: &str = "urn:palisade:undeclared-prefix:";

/// Most attributes one element may have.
pub const MAX_ATTRIBUTES: usize = 256;
/// Most namespace declarations a document may have.
pub const MAX_NAMESPACE_DECLARATIONS: usize = 256;

/// A linear pre-scan that refuses documents whose shape would make the tree
/// builder super-linear (found by fuzzing: roxmltree checks each attribute against
/// the element's previous ones, and copies the namespaces in scope into every
/// element). Attributes are counted as `=` inside a tag outside quotes; comments,
/// CDATA sections, declarations and processing instructions are skipped.
fn check_shape(body: &[u8]) -> Result<(), String> {
    let mut i = 0;
    let mut namespaces = 0usize;
    while let Some(lt) = memchr::memchr(b'<', &body[i..]) {
        i += lt + 1;
        let rest = &body[i..];
        let skip_to = |end: &[u8]| memchr::memmem::find(rest, end).map(|p| p + end.len());
        if rest.starts_with(b"!--") {
            i += skip_to(b"-->").unwrap_or(rest.len());
            continue;
        }
        if rest.starts_with(b"![CDATA[") {
            i += skip_to(b"]]>").unwrap_or(rest.len());
            continue;
        }
        if rest.starts_with(b"?") || rest.starts_with(b"!") {
            i += memchr::memchr(b'>', rest).map_or(rest.len(), |p| p + 1);
            continue;
        }
        let mut attributes = 0usize;
        let mut quote = 0u8;
        let mut word_start = 0;
        let mut j = 0;
        while j < rest.len() {
            let b = rest[j];
            if quote != 0 {
                if b == quote {
                    quote = 0;
                    word_start = j + 1;
                }
            } else if b == b'"' || b == b'\'' {
                quote = b;
            } else if b.is_ascii_whitespace() {
                word_start = j + 1;
            } else if b == b'=' {
                attributes += 1;
                if attributes > MAX_ATTRIBUTES {
                    return Err(format!(
                        "XML: more than {MAX_ATTRIBUTES} attributes on one element."
                    ));
                }
                let name = &rest[word_start..j];
                if name == b"xmlns" || name.starts_with(b"xmlns:") {
                    namespaces += 1;
                    if namespaces > MAX_NAMESPACE_DECLARATIONS {
                        return Err(format!(
                            "XML: more than {MAX_NAMESPACE_DECLARATIONS} namespace declarations."
                        ));
                    }
                }
            } else if b == b'>' {
                break;
            }
            j += 1;
        }
        i += j;
    }
    Ok(())
}

/// Parses an XML body. Returns [`XML_PARSE_ERROR`] when the document is not
/// well-formed (or its encoding is not supported). Never panics, never fetches
/// anything.
pub fn parse_xml(body: &[u8]) -> Result<XmlDoc, String> {
    let mut text = decode(body).ok_or_else(|| XML_PARSE_ERROR.to_string())?;
    // On the decoded text: a UTF-16 body would hide its shape from a byte scan.
    check_shape(text.as_bytes())?;
    for _ in 0..=MAX_UNDECLARED_PREFIXES {
        match try_parse(&text) {
            Ok(doc) => return Ok(doc),
            Err(Some(prefix)) => {
                // libxml2 only warns about an undeclared prefix; declare it on
                // the root element and try again.
                let Some(at) = root_name_end(&text) else {
                    break;
                };
                text.insert_str(at, &format!(" xmlns:{prefix}=\"{UNDECLARED_NS}{prefix}\""));
            }
            Err(None) => break,
        }
    }
    Err(XML_PARSE_ERROR.to_string())
}

/// One roxmltree parse; `Err(Some(prefix))` for an undeclared namespace prefix.
fn try_parse(text: &str) -> Result<XmlDoc, Option<String>> {
    let resolver =
        |_pub_id: Option<&str>, _uri: &str| -> Result<Option<&str>, String> { Ok(Some("")) };
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        nodes_limit: u32::MAX,
        entity_resolver: Some(&resolver),
    };
    match roxmltree::Document::parse_with_options(text, opts) {
        Ok(doc) => Ok(XmlDoc::from_roxmltree(&doc)),
        Err(roxmltree::Error::UnknownNamespace(prefix, _)) => Err(Some(prefix)),
        Err(_) => Err(None),
    }
}

/// The document as text: UTF-8 (optional BOM), UTF-16 with a BOM, or, as
/// declared in the XML declaration, ISO-8859-1 / US-ASCII. `None` otherwise.
fn decode(body: &[u8]) -> Option<String> {
    if let Some(rest) = body.strip_prefix(b"\xEF\xBB\xBF") {
        return String::from_utf8(rest.to_vec()).ok();
    }
    let utf16 = |rest: &[u8], be: bool| -> Option<String> {
        if !rest.len().is_multiple_of(2) {
            return None;
        }
        let units: Vec<u16> = rest
            .chunks_exact(2)
            .map(|c| {
                if be {
                    u16::from_be_bytes([c[0], c[1]])
                } else {
                    u16::from_le_bytes([c[0], c[1]])
                }
            })
            .collect();
        String::from_utf16(&units).ok()
    };
    if let Some(rest) = body.strip_prefix(b"\xFF\xFE") {
        return utf16(rest, false);
    }
    if let Some(rest) = body.strip_prefix(b"\xFE\xFF") {
        return utf16(rest, true);
    }
    match declared_encoding(body).as_deref() {
        Some("iso-8859-1" | "latin1" | "iso_8859-1" | "latin-1" | "l1") => {
            Some(body.iter().map(|&b| char::from(b)).collect())
        }
        Some("us-ascii" | "ascii") if body.is_ascii() => String::from_utf8(body.to_vec()).ok(),
        Some("us-ascii" | "ascii") => None,
        _ => String::from_utf8(body.to_vec()).ok(),
    }
}

/// The lower-cased `encoding` of the XML declaration, if any.
fn declared_encoding(body: &[u8]) -> Option<String> {
    let head = body.get(..body.len().min(256))?;
    if !head.starts_with(b"<?xml") {
        return None;
    }
    let end = memchr::memmem::find(head, b"?>")?;
    let decl = &head[..end];
    let pos = memchr::memmem::find(decl, b"encoding")?;
    let rest = &decl[pos + 8..];
    let rest = rest
        .trim_ascii_start()
        .strip_prefix(b"=")?
        .trim_ascii_start();
    let quote = *rest.first()?;
    if quote != b'"' && quote != b'\'' {
        return None;
    }
    let value = &rest[1..];
    let close = memchr::memchr(quote, value)?;
    Some(String::from_utf8_lossy(&value[..close]).to_ascii_lowercase())
}

/// Byte offset just after the root element's name in `text` (skipping the XML
/// declaration, processing instructions, comments and the DOCTYPE).
fn root_name_end(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        let rest = &b[i..];
        if rest.starts_with(b"<?") {
            i += memchr::memmem::find(rest, b"?>")? + 2;
        } else if rest.starts_with(b"<!--") {
            i += memchr::memmem::find(rest, b"-->")? + 3;
        } else if rest.starts_with(b"<!") {
            // DOCTYPE: skip to its '>' outside quotes and the internal subset.
            let mut j = 2;
            let (mut quote, mut depth) = (0u8, 0usize);
            loop {
                let c = *rest.get(j)?;
                if quote != 0 {
                    if c == quote {
                        quote = 0;
                    }
                } else if c == b'"' || c == b'\'' {
                    quote = c;
                } else if c == b'[' {
                    depth += 1;
                } else if c == b']' {
                    depth = depth.saturating_sub(1);
                } else if c == b'>' && depth == 0 {
                    break;
                }
                j += 1;
            }
            i += j + 1;
        } else {
            let name_len = rest[1..]
                .iter()
                .position(|&c| c.is_ascii_whitespace() || c == b'>' || c == b'/')
                .unwrap_or(rest.len() - 1);
            return Some(i + 1 + name_len);
        }
    }
    None
}

impl XmlDoc {
    fn from_roxmltree(doc: &roxmltree::Document<'_>) -> Self {
        let mut nodes: Vec<XNode> = Vec::new();
        let mut namespaces = Namespaces::default();
        // Iterative pre-order copy: (roxmltree node, parent index in `nodes`).
        let mut stack: Vec<(roxmltree::Node<'_, '_>, Option<usize>)> =
            vec![(doc.root_element(), None)];
        let mut open: Vec<usize> = Vec::new();
        while let Some((node, parent)) = stack.pop() {
            // Close the subtrees that ended before this node.
            while let Some(&top) = open.last() {
                if Some(top) == parent {
                    break;
                }
                open.pop();
                let last = nodes.len().saturating_sub(1);
                if let Some(on) = nodes.get_mut(top) {
                    on.subtree_end = last;
                }
            }
            let kind = if node.is_element() {
                let tag = node.tag_name();
                let (name, ns) = namespaces.qualify(tag.namespace(), tag.name());
                XKind::Element {
                    name,
                    ns,
                    attrs: node
                        .attributes()
                        .map(|a| {
                            let (name, ns) = namespaces.qualify(a.namespace(), a.name());
                            XAttr {
                                name,
                                ns,
                                value: a.value().to_string(),
                            }
                        })
                        .collect(),
                }
            } else if node.is_text() {
                XKind::Text(node.text().unwrap_or("").to_string())
            } else {
                continue;
            };
            let idx = nodes.len();
            nodes.push(XNode {
                kind,
                subtree_end: idx,
                children: Vec::new(),
            });
            if let Some(p) = parent {
                if let Some(pn) = nodes.get_mut(p) {
                    pn.children.push(idx);
                }
            }
            if node.is_element() {
                open.push(idx);
                let children: Vec<_> = node.children().collect();
                for child in children.into_iter().rev() {
                    stack.push((child, Some(idx)));
                }
            }
        }
        let last = nodes.len().saturating_sub(1);
        for o in open {
            if let Some(on) = nodes.get_mut(o) {
                on.subtree_end = last;
            }
        }
        let texts = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(n.kind, XKind::Text(_)))
            .map(|(i, _)| i)
            .collect();
        XmlDoc {
            nodes,
            texts,
            namespaces: namespaces.uris,
        }
    }

    /// Compiles `xpath` (no namespace bindings: see [`XPath::compile`]) and
    /// appends one value per resulting node to `out`, in document order (see the
    /// module docs for what a node's value is). Errors for expressions outside
    /// the supported subset.
    pub fn select(&self, xpath: &str, out: &mut Vec<Vec<u8>>) -> Result<(), String> {
        let path = XPath::compile(xpath, &[])?;
        self.evaluate(&path, out);
        Ok(())
    }

    /// Evaluates a compiled expression and appends one value per resulting node
    /// to `out`, in document order.
    pub fn evaluate(&self, path: &XPath, out: &mut Vec<Vec<u8>>) {
        // Context: the document node (represented by `at_document`).
        let mut current: Vec<usize> = Vec::new();
        let mut at_document = true;
        let mut attrs: Option<Vec<(usize, usize)>> = None;
        for step in &path.steps {
            let candidates: Vec<usize> = if at_document {
                match step.axis {
                    Axis::Child => (!self.nodes.is_empty()).then_some(0).into_iter().collect(),
                    Axis::Descendant => (0..self.nodes.len()).collect(),
                }
            } else {
                match step.axis {
                    Axis::Child => self.children_of(&current),
                    Axis::Descendant => self.descendants_of(&current),
                }
            };
            at_document = false;
            match &step.test {
                Test::Element(ns, local) => {
                    let ns = self.ns_filter(ns);
                    current = candidates
                        .into_iter()
                        .filter(|&i| match &self.nodes[i].kind {
                            XKind::Element { name, ns: n, .. } => {
                                ns.admits(*n) && local.as_ref().is_none_or(|l| l == name)
                            }
                            XKind::Text(_) => false,
                        })
                        .collect();
                }
                Test::Text => {
                    current = candidates
                        .into_iter()
                        .filter(|&i| matches!(self.nodes[i].kind, XKind::Text(_)))
                        .collect();
                }
                Test::Attr(ns, local) => {
                    let ns = self.ns_filter(ns);
                    // `//@x` selects attributes of the context node and of its
                    // descendants: the candidates are the elements themselves.
                    let mut found = Vec::new();
                    let owners: Vec<usize> = match step.axis {
                        Axis::Child => current.clone(),
                        Axis::Descendant => {
                            let mut v = current.clone();
                            v.extend(candidates);
                            v.sort_unstable();
                            v.dedup();
                            v
                        }
                    };
                    for i in owners {
                        if let Some(XNode {
                            kind: XKind::Element { attrs, .. },
                            ..
                        }) = self.nodes.get(i)
                        {
                            for (k, a) in attrs.iter().enumerate() {
                                if ns.admits(a.ns) && local.as_ref().is_none_or(|l| *l == a.name) {
                                    found.push((i, k));
                                }
                            }
                        }
                    }
                    attrs = Some(found);
                }
            }
        }
        if let Some(attrs) = attrs {
            for (i, k) in attrs {
                if let Some(XNode {
                    kind: XKind::Element { attrs, .. },
                    ..
                }) = self.nodes.get(i)
                {
                    if let Some(a) = attrs.get(k) {
                        out.push(a.value.as_bytes().to_vec());
                    }
                }
            }
        } else {
            for i in current {
                out.push(self.text_content(i));
            }
        }
    }

    /// What a step's namespace test admits in this document.
    fn ns_filter(&self, test: &NsTest) -> NsFilter {
        match test {
            NsTest::Any => NsFilter::Any,
            NsTest::None => NsFilter::Only(0),
            NsTest::Uri(uri) => self
                .namespaces
                .iter()
                .position(|u| u == uri)
                .and_then(|i| u32::try_from(i).ok())
                .map_or(NsFilter::Nothing, NsFilter::Only),
            NsTest::Unbound => NsFilter::Nothing,
        }
    }

    /// `xmlNodeGetContent`: the text of a node and of all its descendants, in
    /// time proportional to the number of text nodes found (binary search in the
    /// text index), not to the size of the subtree.
    fn text_content(&self, i: usize) -> Vec<u8> {
        let Some(node) = self.nodes.get(i) else {
            return Vec::new();
        };
        let lo = self.texts.partition_point(|&t| t < i);
        let hi = self.texts.partition_point(|&t| t <= node.subtree_end);
        let mut out = Vec::new();
        for &t in self.texts.get(lo..hi).unwrap_or(&[]) {
            if let Some(XNode {
                kind: XKind::Text(text),
                ..
            }) = self.nodes.get(t)
            {
                out.extend_from_slice(text.as_bytes());
            }
        }
        out
    }

    fn children_of(&self, set: &[usize]) -> Vec<usize> {
        let mut v: Vec<usize> = set
            .iter()
            .filter_map(|&i| self.nodes.get(i))
            .flat_map(|n| n.children.iter().copied())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// All proper descendants of the nodes in `set` (sorted, deduplicated), in
    /// time linear in the document: nested subtrees are visited once.
    fn descendants_of(&self, set: &[usize]) -> Vec<usize> {
        let mut sorted = set.to_vec();
        sorted.sort_unstable();
        let mut v = Vec::new();
        let mut covered_until: Option<usize> = None;
        for i in sorted {
            let Some(node) = self.nodes.get(i) else {
                continue;
            };
            let from = match covered_until {
                Some(c) if c >= node.subtree_end => continue,
                Some(c) if c >= i => c + 1,
                _ => i + 1,
            };
            v.extend(from..=node.subtree_end);
            covered_until = Some(node.subtree_end);
        }
        v
    }
}

/// A namespace test resolved against one document's namespace table.
#[derive(Debug, Clone, Copy)]
enum NsFilter {
    Any,
    Only(u32),
    Nothing,
}

impl NsFilter {
    fn admits(self, ns: u32) -> bool {
        match self {
            NsFilter::Any => true,
            NsFilter::Only(n) => n == ns,
            NsFilter::Nothing => false,
        }
    }
}

/// The namespace URIs of a document being copied, interned (index 0: none).
struct Namespaces {
    uris: Vec<String>,
    index: FxHashMap<String, u32>,
}

impl Default for Namespaces {
    fn default() -> Self {
        Namespaces {
            uris: vec![String::new()],
            index: FxHashMap::default(),
        }
    }
}

impl Namespaces {
    /// The name and namespace index of an element or attribute. A prefix that
    /// was undeclared in the document (see [`parse_xml`]) becomes part of the
    /// name, with no namespace, as libxml2 does.
    fn qualify(&mut self, uri: Option<&str>, local: &str) -> (String, u32) {
        let Some(uri) = uri.filter(|u| !u.is_empty()) else {
            return (local.to_string(), 0);
        };
        if let Some(prefix) = uri.strip_prefix(UNDECLARED_NS) {
            return (format!("{prefix}:{local}"), 0);
        }
        if let Some(&i) = self.index.get(uri) {
            return (local.to_string(), i);
        }
        // At most MAX_NAMESPACE_DECLARATIONS + MAX_UNDECLARED_PREFIXES + 1 (xml).
        let i = u32::try_from(self.uris.len()).unwrap_or(u32::MAX);
        self.uris.push(uri.to_string());
        self.index.insert(uri.to_string(), i);
        (local.to_string(), i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tokens() -> impl Strategy<Value = Vec<u8>> {
        let tok = prop_oneof![
            Just(b"<a>".to_vec()),
            Just(b"</a>".to_vec()),
            Just(b"<b x='1' y=\"2\">".to_vec()),
            Just(b"</b>".to_vec()),
            Just(b"<c/>".to_vec()),
            Just(b"<p:a xmlns:p='urn:p' p:x='1' x='2'>".to_vec()),
            Just(b"</p:a>".to_vec()),
            Just(b"<q:b>".to_vec()),
            Just(b"<d xmlns='urn:p'>".to_vec()),
            Just(b"text".to_vec()),
            Just(b"<![CDATA[d]]>".to_vec()),
            Just(b"&amp;".to_vec()),
            Just(b"<!DOCTYPE a [<!ENTITY e \"&e;\">]>".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..4),
        ];
        proptest::collection::vec(tok, 0..48).prop_map(|v| v.concat())
    }

    #[test]
    fn kept_xpath_values_are_the_evaluated_ones_of_the_current_document() {
        let first = parse_xml(b"<a x='1'><b y='2'>one</b><c>two</c></a>").unwrap_or_default();
        let second = parse_xml(b"<z w='9'>three</z>").unwrap_or_default();
        let paths: Vec<XPath> = ["/*", "//@*", "//b", "/*"]
            .iter()
            .map(|x| XPath::compile_unbound(x).unwrap_or_else(|e| panic!("{x}: {e}")))
            .collect();
        let mut kept = XPathValues::default();
        for doc in [&first, &second] {
            kept.clear();
            // Each path twice: the second read is the kept values.
            for path in paths.iter().chain(&paths) {
                let mut want = Vec::new();
                doc.evaluate(path, &mut want);
                let mut got = Vec::new();
                kept.for_each(doc, path, |v| got.push(v.to_vec()));
                assert_eq!(got, want);
            }
        }
        let mut root = Vec::new();
        first.evaluate(&paths[0], &mut root);
        assert_eq!(root, vec![b"onetwo".to_vec()]);
        let mut attrs = Vec::new();
        kept.for_each(&second, &paths[1], |v| attrs.push(v.to_vec()));
        assert_eq!(attrs, vec![b"9".to_vec()]);
        // Three distinct paths kept, the repeated `/*` once.
        assert_eq!(kept.0.lock().map(|k| k.len()).unwrap_or(0), 3);
    }

    proptest! {
        #[test]
        fn never_panics_on_bytes(input in proptest::collection::vec(any::<u8>(), 0..512)) {
            if let Ok(doc) = parse_xml(&input) {
                let mut out = Vec::new();
                prop_assert!(doc.select("/*", &mut out).is_ok());
            }
        }

        #[test]
        fn never_panics_on_tokens(input in tokens()) {
            if let Ok(doc) = parse_xml(&input) {
                for xp in ["/*", "//@*", "//a", "//b/@x", "/a/b", "//*", "//text()", "//a//b"] {
                    let mut out = Vec::new();
                    prop_assert!(doc.select(xp, &mut out).is_ok());
                }
                let ns = [("n".to_string(), "urn:p".to_string())];
                for xp in ["//n:a", "//n:*", "//@n:x", "//@n:*", "/n:a/q:b", "//d/n:d"] {
                    if let Ok(path) = XPath::compile(xp, &ns).or_else(|_| XPath::compile_unbound(xp)) {
                        doc.evaluate(&path, &mut Vec::new());
                    }
                }
                let mut root = Vec::new();
                prop_assert!(doc.select("/*", &mut root).is_ok());
                prop_assert_eq!(root.len(), 1);
            }
        }
    }

    #[test]
    fn deep_nesting_is_iterative() {
        let n = 100_000;
        let mut body = "<a>".repeat(n);
        body.push('x');
        body.push_str(&"</a>".repeat(n));
        let doc = parse_xml(body.as_bytes());
        if let Ok(doc) = doc {
            let mut out = Vec::new();
            assert!(doc.select("/*", &mut out).is_ok());
            assert_eq!(out, vec![b"x".to_vec()]);
            let mut all = Vec::new();
            assert!(doc.select("//a//a", &mut all).is_ok());
            assert_eq!(all.len(), n - 1);
        }
    }
}
