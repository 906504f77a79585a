//! The values of the targets whose repetition the generator controls: ARGS values,
//! cookie values and User-Agent.
//!
//! Each target has exactly `top` (10 by default, as the RuleCache paper's Table IV
//! counts) head values and an unbounded tail. A value is drawn from the head with the
//! target's share as probability ([`HeadTail`]); within the head the values follow a
//! Zipf law with the chosen skew. Tail values come from spaces of millions of values
//! (several random words, long numbers, random tokens), so no tail value comes near
//! the frequency of a head value, and the top values of the target measured on a
//! corpus cover the requested share.
//!
//! Values have a *kind* (a number, search words, an e-mail address, ...) so that every
//! slot of a request gets a value that looks right there; the head values are spread
//! over the kinds and each kind's head values are drawn with its own Zipf law.
//!
//! Every word list is chosen to be benign for CRS at paranoia level 1: no SQL, shell
//! or script keywords, no quotes or special characters.

use super::zipf::{HeadTail, Rng, Zipf};

/// Words for search terms, slugs and free text.
pub const WORDS: &[&str] = &[
    "blue",
    "green",
    "black",
    "white",
    "yellow",
    "purple",
    "orange",
    "silver",
    "golden",
    "shoes",
    "jacket",
    "lamp",
    "chair",
    "garden",
    "kitchen",
    "phone",
    "camera",
    "laptop",
    "coffee",
    "tea",
    "book",
    "novel",
    "guitar",
    "bike",
    "helmet",
    "tent",
    "winter",
    "summer",
    "spring",
    "autumn",
    "sale",
    "gift",
    "kids",
    "women",
    "men",
    "leather",
    "wool",
    "cotton",
    "organic",
    "vegan",
    "travel",
    "mug",
    "bottle",
    "bag",
    "backpack",
    "sofa",
    "desk",
    "pillow",
    "towel",
    "candle",
    "plant",
    "seeds",
    "paint",
    "brush",
    "hammer",
    "ball",
    "puzzle",
    "card",
    "blanket",
    "scarf",
    "gloves",
    "boots",
    "sneakers",
    "dress",
    "shirt",
    "jeans",
    "hat",
    "socks",
    "rug",
    "mirror",
    "clock",
    "vase",
    "basket",
    "kettle",
    "toaster",
    "blender",
    "pan",
    "spoon",
    "plate",
    "bowl",
    "glass",
    "cushion",
    "curtain",
    "shelf",
    "frame",
    "poster",
    "map",
    "compass",
    "lantern",
    "tripod",
    "lens",
    "speaker",
    "headphones",
    "charger",
    "cable",
    "keyboard",
    "monitor",
    "printer",
    "router",
    "tablet",
    "stroller",
    "puppy",
    "kitten",
    "bird",
    "river",
    "mountain",
    "forest",
    "beach",
    "island",
    "city",
    "village",
    "market",
    "bakery",
    "bread",
    "cheese",
    "apple",
    "banana",
    "cherry",
    "lemon",
    "mango",
    "peach",
    "pear",
    "plum",
    "grape",
    "melon",
    "honey",
    "jam",
    "soup",
    "salad",
    "pasta",
    "pizza",
    "cake",
    "cookie",
    "muffin",
    "bagel",
    "yogurt",
    "juice",
    "water",
    "rain",
    "snow",
    "wind",
    "cloud",
    "star",
    "moon",
    "sun",
    "light",
    "dark",
    "small",
    "large",
    "medium",
    "classic",
    "modern",
    "vintage",
    "simple",
    "smart",
    "quick",
    "quiet",
    "bright",
    "soft",
    "warm",
    "cool",
    "fresh",
    "happy",
    "lucky",
    "premium",
    "basic",
];

/// Words for free text only (connecting words; never used alone as a value).
const FILLERS: &[&str] = &[
    "please", "thanks", "hello", "would", "like", "to", "know", "about", "the", "a", "for", "my",
    "with", "new", "size", "is", "it", "in", "stock", "when", "will", "ship", "can", "you", "we",
    "need", "two", "three", "this", "great",
];

const FIRST_NAMES: &[&str] = &[
    "Anna", "Ben", "Clara", "David", "Emma", "Felix", "Grace", "Hugo", "Ida", "Jonas", "Karin",
    "Liam", "Mia", "Noah", "Olga", "Paul", "Rosa", "Sam", "Tara", "Umar", "Vera", "Will", "Xenia",
    "Yusuf", "Zoe", "Alice", "Bruno", "Chloe", "Diego", "Elena", "Finn", "Greta", "Hanna", "Ivan",
    "Julia", "Kai", "Lena", "Marco", "Nina", "Oscar", "Pia", "Quinn", "Rafael", "Sofia", "Tom",
    "Ursula", "Victor", "Wendy", "Yara", "Zack", "Amir", "Bea", "Carl", "Dana", "Eric", "Fatima",
    "Gil", "Hiro", "Ines", "Jack",
];

const LAST_NAMES: &[&str] = &[
    "Smith",
    "Miller",
    "Garcia",
    "Martin",
    "Bernard",
    "Rossi",
    "Novak",
    "Kowalski",
    "Jensen",
    "Nielsen",
    "Silva",
    "Santos",
    "Murphy",
    "Kelly",
    "Walsh",
    "Brown",
    "Wilson",
    "Taylor",
    "Clarke",
    "Wright",
    "Green",
    "Baker",
    "Hall",
    "Wood",
    "Hughes",
    "Evans",
    "Lewis",
    "Young",
    "King",
    "Scott",
    "Meyer",
    "Weber",
    "Wagner",
    "Becker",
    "Hoffmann",
    "Richter",
    "Klein",
    "Wolf",
    "Neumann",
    "Braun",
    "Lopez",
    "Perez",
    "Moreau",
    "Laurent",
    "Dubois",
    "Lambert",
    "Fontaine",
    "Bianchi",
    "Romano",
    "Colombo",
    "Ricci",
    "Marino",
    "Greco",
    "Conti",
    "Costa",
    "Ferrari",
    "Esposito",
    "Nowak",
    "Lindqvist",
    "Berg",
];

/// The kind of an argument value: what it looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ArgKind {
    /// A number (ids, pages, quantities).
    Number,
    /// Search words.
    Term,
    /// A URL slug (`word-word-42`).
    Slug,
    /// A random token (hex).
    Token,
    /// An e-mail address.
    Email,
    /// A person's name.
    Name,
    /// A sentence of free text.
    Text,
}

impl ArgKind {
    /// Every kind, in a fixed order.
    pub const ALL: [ArgKind; 7] = [
        ArgKind::Number,
        ArgKind::Term,
        ArgKind::Slug,
        ArgKind::Token,
        ArgKind::Email,
        ArgKind::Name,
        ArgKind::Text,
    ];

    fn index(self) -> usize {
        match self {
            ArgKind::Number => 0,
            ArgKind::Term => 1,
            ArgKind::Slug => 2,
            ArgKind::Token => 3,
            ArgKind::Email => 4,
            ArgKind::Name => 5,
            ArgKind::Text => 6,
        }
    }

    /// A tail value: from a space of millions of values, never equal to a head value.
    pub fn tail(self, rng: &mut Rng) -> String {
        match self {
            // Head numbers are below 1000.
            ArgKind::Number => rng.range(1000, 9_999_999).to_string(),
            // Head terms are one word.
            ArgKind::Term => {
                let n = rng.range(2, 3) as usize;
                words(rng, WORDS, n, " ")
            }
            // Head slugs have no number.
            ArgKind::Slug => format!("{}-{}", words(rng, WORDS, 2, "-"), rng.range(1, 99_999)),
            ArgKind::Token => rng.hex(32),
            // Head addresses are at example.com.
            ArgKind::Email => format!(
                "{}.{}{}@example.org",
                pick(rng, FIRST_NAMES).to_ascii_lowercase(),
                pick(rng, LAST_NAMES).to_ascii_lowercase(),
                rng.range(1, 9999)
            ),
            // Head names have no middle initial.
            ArgKind::Name => format!(
                "{} {}. {}",
                pick(rng, FIRST_NAMES),
                (b'A' + rng.below(26) as u8) as char,
                pick(rng, LAST_NAMES)
            ),
            ArgKind::Text => {
                let n = rng.range(6, 14) as usize;
                let mut out = String::new();
                for i in 0..n {
                    if i > 0 {
                        out.push(' ');
                    }
                    let list = if rng.chance(0.5) { FILLERS } else { WORDS };
                    out.push_str(pick(rng, list));
                }
                out
            }
        }
    }
}

/// The head values of ARGS, spread over the kinds (10 in all).
pub const ARG_HEADS: &[(ArgKind, &str)] = &[
    (ArgKind::Number, "1"),
    (ArgKind::Number, "20"),
    (ArgKind::Number, "2"),
    (ArgKind::Term, "shoes"),
    (ArgKind::Term, "coffee"),
    (ArgKind::Slug, "summer-sale"),
    (ArgKind::Token, "5f2b8e0c1d9a4b7e8c3f6a2d0e1b9c7a"),
    (ArgKind::Email, "info@example.com"),
    (ArgKind::Name, "Anna Smith"),
    (
        ArgKind::Text,
        "hello I would like to know when this will ship",
    ),
];

/// A cookie of the generated sites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CookieSlot {
    /// Session id.
    Session,
    /// Google Analytics `_ga`.
    Ga,
    /// Google Analytics `_gid`.
    Gid,
    /// CSRF token.
    Csrf,
    /// Shopping cart id.
    Cart,
}

impl CookieSlot {
    /// Every slot, in a fixed order.
    pub const ALL: [CookieSlot; 5] = [
        CookieSlot::Session,
        CookieSlot::Ga,
        CookieSlot::Gid,
        CookieSlot::Csrf,
        CookieSlot::Cart,
    ];

    /// The cookie's name.
    pub fn name(self) -> &'static str {
        match self {
            CookieSlot::Session => "sessionid",
            CookieSlot::Ga => "_ga",
            CookieSlot::Gid => "_gid",
            CookieSlot::Csrf => "csrftoken",
            CookieSlot::Cart => "cart_id",
        }
    }

    fn index(self) -> usize {
        match self {
            CookieSlot::Session => 0,
            CookieSlot::Ga => 1,
            CookieSlot::Gid => 2,
            CookieSlot::Csrf => 3,
            CookieSlot::Cart => 4,
        }
    }

    /// A fresh value in the cookie's format.
    pub fn fresh(self, rng: &mut Rng) -> String {
        match self {
            CookieSlot::Session => rng.hex(32),
            CookieSlot::Ga => format!(
                "GA1.2.{}.{}",
                rng.range(100_000_000, 2_147_483_647),
                rng.range(1_600_000_000, 1_790_000_000)
            ),
            CookieSlot::Gid => format!(
                "GA1.2.{}.{}",
                rng.range(100_000_000, 2_147_483_647),
                rng.range(1_790_000_000, 1_799_999_999)
            ),
            CookieSlot::Csrf => rng.alnum(32),
            CookieSlot::Cart => format!(
                "{}-{}-4{}-a{}-{}",
                rng.hex(8),
                rng.hex(4),
                rng.hex(3),
                rng.hex(3),
                rng.hex(12)
            ),
        }
    }
}

/// How many of the 10 head cookie values each slot gets.
const COOKIE_HEADS_PER_SLOT: [usize; 5] = [3, 2, 2, 2, 1];

/// Ten current browser User-Agents (the head of the User-Agent target).
pub const HEAD_USER_AGENTS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36",
];

/// A tail User-Agent: a browser template with full version numbers (the head ones
/// use the reduced `.0.0.0` form, so they never collide).
fn tail_user_agent(rng: &mut Rng) -> String {
    let major = rng.range(100, 140);
    let build = rng.range(1000, 9999);
    let patch = rng.range(10, 250);
    match rng.below(5) {
        0 => format!("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.{build}.{patch} Safari/537.36"),
        1 => format!("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.{build}.{patch} Safari/537.36"),
        2 => format!("Mozilla/5.0 (Linux; Android {}; Pixel {}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.{build}.{patch} Mobile Safari/537.36", rng.range(9, 15), rng.range(3, 9)),
        3 => format!("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.{build}.{patch} Safari/537.36 Edg/{major}.0.{}.{}", rng.range(1000, 9999), rng.range(10, 250)),
        _ => format!("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.{build}.{patch} Safari/537.36"),
    }
}

fn pick(rng: &mut Rng, list: &[&'static str]) -> &'static str {
    rng.pick(list).copied().unwrap_or("")
}

fn words(rng: &mut Rng, list: &[&'static str], n: usize, sep: &str) -> String {
    let mut out = String::new();
    for i in 0..n {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(pick(rng, list));
    }
    out
}

/// The shares of traffic the top values of each target cover (0..=1).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Shares {
    /// ARGS values.
    pub args: f64,
    /// Cookie values.
    pub cookies: f64,
    /// User-Agent.
    pub user_agent: f64,
}

impl Default for Shares {
    /// App ③ of the RuleCache paper's Table IV (a web service): ARGS 18.9%,
    /// COOKIE 13.5%, USER-AGENT 83.3%.
    fn default() -> Self {
        Shares {
            args: 0.189,
            cookies: 0.135,
            user_agent: 0.833,
        }
    }
}

/// Draws the values of the controlled targets.
#[derive(Debug, Clone)]
pub struct ValueModel {
    shares: Shares,
    /// Head values of ARGS per kind, and the Zipf law over them.
    arg_heads: Vec<(Vec<&'static str>, Zipf)>,
    /// Head values of cookies per slot, and the Zipf law over them.
    cookie_heads: Vec<(Vec<String>, Zipf)>,
    ua_zipf: Zipf,
}

impl ValueModel {
    /// A model with the given shares and Zipf exponent within the head values;
    /// `rng` draws the head cookie values (so they depend on the seed).
    pub fn new(shares: Shares, skew: f64, rng: &mut Rng) -> Self {
        let arg_heads = ArgKind::ALL
            .iter()
            .map(|k| {
                let heads: Vec<&'static str> = ARG_HEADS
                    .iter()
                    .filter(|(kind, _)| kind == k)
                    .map(|(_, v)| *v)
                    .collect();
                let z = Zipf::new(heads.len(), skew);
                (heads, z)
            })
            .collect();
        let cookie_heads = CookieSlot::ALL
            .iter()
            .map(|s| {
                let n = COOKIE_HEADS_PER_SLOT[s.index()];
                let heads: Vec<String> = (0..n).map(|_| s.fresh(rng)).collect();
                (heads, Zipf::new(n, skew))
            })
            .collect();
        ValueModel {
            shares,
            arg_heads,
            cookie_heads,
            ua_zipf: Zipf::new(HEAD_USER_AGENTS.len(), skew),
        }
    }

    /// The shares this model was built for.
    pub fn shares(&self) -> Shares {
        self.shares
    }

    /// An argument value of `kind`.
    pub fn arg(&self, kind: ArgKind, rng: &mut Rng) -> String {
        if (HeadTail {
            share: self.shares.args,
        })
        .head(rng)
        {
            if let Some((heads, z)) = self.arg_heads.get(kind.index()) {
                if let Some(v) = heads.get(z.sample(rng)) {
                    return (*v).to_string();
                }
            }
        }
        kind.tail(rng)
    }

    /// A value for the cookie `slot`.
    pub fn cookie(&self, slot: CookieSlot, rng: &mut Rng) -> String {
        if (HeadTail {
            share: self.shares.cookies,
        })
        .head(rng)
        {
            if let Some((heads, z)) = self.cookie_heads.get(slot.index()) {
                if let Some(v) = heads.get(z.sample(rng)) {
                    return v.clone();
                }
            }
        }
        slot.fresh(rng)
    }

    /// A User-Agent.
    pub fn user_agent(&self, rng: &mut Rng) -> String {
        if (HeadTail {
            share: self.shares.user_agent,
        })
        .head(rng)
        {
            if let Some(ua) = HEAD_USER_AGENTS.get(self.ua_zipf.sample(rng)) {
                return (*ua).to_string();
            }
        }
        tail_user_agent(rng)
    }

    /// A `Cookie` header value with the given slots.
    pub fn cookie_header(&self, slots: &[CookieSlot], rng: &mut Rng) -> String {
        let mut out = String::new();
        for s in slots {
            if !out.is_empty() {
                out.push_str("; ");
            }
            out.push_str(s.name());
            out.push('=');
            out.push_str(&self.cookie(*s, rng));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ten_heads_per_target() {
        assert_eq!(ARG_HEADS.len(), 10);
        assert_eq!(COOKIE_HEADS_PER_SLOT.iter().sum::<usize>(), 10);
        assert_eq!(HEAD_USER_AGENTS.len(), 10);
        for k in ArgKind::ALL {
            assert!(ARG_HEADS.iter().any(|(kind, _)| *kind == k), "{k:?}");
        }
    }

    #[test]
    fn tails_never_equal_heads() {
        let mut rng = Rng::new(11);
        for _ in 0..2000 {
            for k in ArgKind::ALL {
                let v = k.tail(&mut rng);
                assert!(!ARG_HEADS.iter().any(|(_, h)| *h == v), "{v}");
            }
            let ua = tail_user_agent(&mut rng);
            assert!(!HEAD_USER_AGENTS.contains(&ua.as_str()));
        }
    }

    #[test]
    fn share_one_gives_only_heads_and_zero_only_tails() {
        let mut rng = Rng::new(2);
        let all = Shares {
            args: 1.0,
            cookies: 1.0,
            user_agent: 1.0,
        };
        let m = ValueModel::new(all, 1.0, &mut rng);
        for _ in 0..200 {
            let v = m.arg(ArgKind::Term, &mut rng);
            assert!(v == "shoes" || v == "coffee", "{v}");
            assert!(HEAD_USER_AGENTS.contains(&m.user_agent(&mut rng).as_str()));
        }
        let none = Shares {
            args: 0.0,
            cookies: 0.0,
            user_agent: 0.0,
        };
        let m = ValueModel::new(none, 1.0, &mut rng);
        for _ in 0..200 {
            assert!(m.arg(ArgKind::Term, &mut rng).contains(' '));
        }
    }
}
