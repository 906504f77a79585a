//! The phrase matcher of `@pm` / `@pmFromFile`: a faithful model of libmodsecurity's
//! `acmp` Aho-Corasick automaton (`src/utils/acmp.cc`), behind a fast prefilter.
//!
//! ModSecurity's automaton differs from a textbook Aho-Corasick in ways that change
//! results, and Palisade reproduces them so that rule sets behave exactly as under
//! ModSecurity v3 (x86-64 build):
//!
//! - Matching is ASCII case-insensitive (`tolower` in the C locale).
//! - Pattern bytes are read as (signed) `char` while input bytes are read as
//!   `unsigned char`, so a phrase containing a byte `>= 0x80` can never match on the
//!   bytes from that one on (a phrase like `169。254` never matches).
//! - Failure links are computed one step deep only (the failure of a node is the
//!   child of its parent's failure with the same letter, else the root), so some
//!   occurrences of a phrase inside a longer partial match are missed.
//! - The search stops at the first position where a phrase ends; the phrase reported
//!   (TX:0 with `capture`) is the text of the automaton state there: the phrase when
//!   the state itself ends one, else the longer prefix that contains the phrase found
//!   through an "output" link. The text is spelled as in the first phrase that created
//!   the state.
//!
//! Because every match the model reports is a real occurrence of a phrase, a standard
//! Aho-Corasick automaton (the `aho-corasick` crate, SIMD-accelerated) is run first:
//! when it finds no phrase, the input cannot match, which is the common case; only
//! inputs that contain a phrase run through the model.

use aho_corasick::AhoCorasick;

const ROOT: u32 = 0;

#[derive(Debug)]
struct Node {
    /// (letter, child), sorted by letter.
    children: Vec<(i16, u32)>,
    fail: u32,
    /// A phrase ends here.
    is_last: bool,
    /// A proper suffix of this state (through failure links) ends a phrase.
    has_output: bool,
    /// The phrase that created the node, and the node's depth (text length).
    creator: u32,
    depth: u32,
}

impl Node {
    fn new(creator: u32, depth: u32) -> Node {
        Node {
            children: Vec::new(),
            fail: ROOT,
            is_last: false,
            has_output: false,
            creator,
            depth,
        }
    }

    fn child(&self, letter: i16) -> Option<u32> {
        self.children
            .binary_search_by_key(&letter, |c| c.0)
            .ok()
            .map(|i| self.children[i].1)
    }
}

/// The letter of a pattern byte: `tolower` of a signed `char`.
fn pattern_letter(b: u8) -> i16 {
    if b >= 0x80 {
        i16::from(b) - 256
    } else {
        i16::from(b.to_ascii_lowercase())
    }
}

/// The letter of an input byte: `tolower` of an `unsigned char`.
fn input_letter(b: u8) -> i16 {
    i16::from(b.to_ascii_lowercase())
}

/// A compiled phrase set.
#[derive(Debug)]
pub(crate) struct Acmp {
    nodes: Vec<Node>,
    phrases: Vec<Box<[u8]>>,
    /// Standard automaton over the phrases that can match at all; `None` when no
    /// phrase can.
    prefilter: Option<AhoCorasick>,
}

impl Acmp {
    /// Builds the automaton from phrases in the order ModSecurity adds them (empty
    /// phrases are ignored, as `acmp_add_pattern` adds nothing for them).
    pub(crate) fn new<I: IntoIterator<Item = Vec<u8>>>(phrases: I) -> Acmp {
        let mut nodes = vec![Node::new(0, 0)];
        let mut kept: Vec<Box<[u8]>> = Vec::new();
        for phrase in phrases {
            if phrase.is_empty() {
                continue;
            }
            let id = u32::try_from(kept.len()).unwrap_or(u32::MAX);
            let mut parent = ROOT as usize;
            for (i, &b) in phrase.iter().enumerate() {
                let letter = pattern_letter(b);
                let next = match nodes[parent].child(letter) {
                    Some(c) => c as usize,
                    None => {
                        let idx = nodes.len();
                        let depth = u32::try_from(i + 1).unwrap_or(u32::MAX);
                        nodes.push(Node::new(id, depth));
                        let children = &mut nodes[parent].children;
                        let at = children.partition_point(|c| c.0 < letter);
                        children.insert(at, (letter, u32::try_from(idx).unwrap_or(0)));
                        idx
                    }
                };
                if i + 1 == phrase.len() {
                    nodes[next].is_last = true;
                }
                parent = next;
            }
            kept.push(phrase.into_boxed_slice());
        }
        // Failure links, level by level, one step deep (as acmp does).
        let mut level: Vec<u32> = nodes[ROOT as usize].children.iter().map(|c| c.1).collect();
        let mut parents: Vec<u32> = vec![ROOT; level.len()];
        while !level.is_empty() {
            let mut next_level = Vec::new();
            let mut next_parents = Vec::new();
            for (&n, &p) in level.iter().zip(&parents) {
                let fail = if p == ROOT {
                    ROOT
                } else {
                    let pf = nodes[p as usize].fail;
                    let letter = letter_of(&nodes, p, n);
                    nodes[pf as usize].child(letter).unwrap_or(ROOT)
                };
                nodes[n as usize].fail = fail;
                for &(_, c) in &nodes[n as usize].children {
                    next_level.push(c);
                    next_parents.push(n);
                }
            }
            level = next_level;
            parents = next_parents;
        }
        // Output links: the nearest phrase end along the failure chain.
        for n in 1..nodes.len() {
            let mut om = nodes[n].fail;
            let mut steps = 0usize;
            while om != ROOT && steps <= nodes.len() {
                if nodes[om as usize].is_last {
                    nodes[n].has_output = true;
                    break;
                }
                om = nodes[om as usize].fail;
                steps += 1;
            }
        }
        let matchable: Vec<&[u8]> = kept
            .iter()
            .filter(|p| p.iter().all(|&b| b < 0x80))
            .map(|p| &p[..])
            .collect();
        let prefilter = if matchable.is_empty() {
            None
        } else {
            AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(&matchable)
                .ok()
        };
        Acmp {
            nodes,
            phrases: kept,
            prefilter,
        }
    }

    /// Runs `acmp_process_quick`: the text of the state where the first phrase ends.
    /// `@pm`'s result: whether a phrase occurs; with captures, TX:0 is the text
    /// ModSecurity reports for the match.
    pub(crate) fn matches(&self, input: &[u8], captures: Option<&mut super::Captures>) -> bool {
        match self.find(input) {
            Some(found) => {
                if let Some(c) = captures {
                    c.clear();
                    c.set(0, found);
                }
                true
            }
            None => false,
        }
    }

    pub(crate) fn find(&self, input: &[u8]) -> Option<&[u8]> {
        let prefilter = self.prefilter.as_ref()?;
        if !prefilter.is_match(input) {
            return None;
        }
        let mut node = ROOT;
        for &b in input {
            let letter = input_letter(b);
            let mut go_to;
            loop {
                go_to = self.nodes[node as usize].child(letter);
                if let Some(g) = go_to {
                    if self.nodes[g as usize].is_last {
                        return Some(self.text(g));
                    }
                }
                if node == ROOT || go_to.is_some() {
                    break;
                }
                node = self.nodes[node as usize].fail;
            }
            if let Some(g) = go_to {
                node = g;
            }
            if self.nodes[node as usize].has_output {
                return Some(self.text(node));
            }
        }
        None
    }

    /// The text of a node (a prefix of its creating phrase; a C string, so it ends at
    /// a NUL byte).
    fn text(&self, node: u32) -> &[u8] {
        let n = &self.nodes[node as usize];
        let phrase = &self.phrases[n.creator as usize];
        let t = &phrase[..(n.depth as usize).min(phrase.len())];
        let end = memchr::memchr(0, t).unwrap_or(t.len());
        &t[..end]
    }
}

/// The letter on the edge from `parent` to `child`.
fn letter_of(nodes: &[Node], parent: u32, child: u32) -> i16 {
    nodes[parent as usize]
        .children
        .iter()
        .find(|c| c.1 == child)
        .map_or(0, |c| c.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acmp(phrases: &[&str]) -> Acmp {
        Acmp::new(phrases.iter().map(|p| p.as_bytes().to_vec()))
    }

    #[test]
    fn finds_phrases_case_insensitively() {
        let a = acmp(&["SELECT", "union"]);
        assert_eq!(a.find(b"x select y"), Some(&b"SELECT"[..]));
        assert_eq!(a.find(b"UNION"), Some(&b"union"[..]));
        assert_eq!(a.find(b"selec"), None);
    }

    #[test]
    fn reports_the_state_text_for_output_links() {
        // "bc" ends inside the partial match "abc" of "abcd": acmp reports "abc".
        let a = acmp(&["abcd", "bc"]);
        assert_eq!(a.find(b"abcx"), Some(&b"abc"[..]));
    }

    #[test]
    fn one_step_failure_links_miss_some_occurrences() {
        // fail("abc") is computed from fail("ab") = "b" only; "bc" is not a node, so
        // fail("abc") = root and "cd" is missed in "abcd" by ModSecurity.
        let a = acmp(&["abcx", "bz", "cd"]);
        assert_eq!(a.find(b"abcd"), None);
        assert_eq!(a.find(b"xcd"), Some(&b"cd"[..]));
    }

    #[test]
    fn non_ascii_phrases_never_match() {
        let a = acmp(&["caf\u{e9}"]);
        assert_eq!(a.find("caf\u{e9}".as_bytes()), None);
    }
}
