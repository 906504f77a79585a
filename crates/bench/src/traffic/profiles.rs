//! Application profiles: the benign requests of four kinds of web application.
//!
//! | profile | requests |
//! |---|---|
//! | `site` | HTML pages of a shop: home, listings, product pages, search, campaign links; browser headers, session and analytics cookies |
//! | `api` | a JSON API called from a browser: paginated GETs and JSON POST bodies, bearer tokens |
//! | `form` | urlencoded form posts: login, contact, newsletter, checkout; CSRF tokens |
//! | `static` | assets: scripts, style sheets, images, fonts, with cache-busting versions |
//!
//! `mixed` (the default) draws the profile of each request: site 50%, api 20%, form
//! 10%, static 20%. Every argument value, cookie value and User-Agent comes from the
//! [`ValueModel`], so their repetition follows the requested shares.

use std::fmt;
use std::str::FromStr;

use super::values::{ArgKind, CookieSlot, ValueModel, WORDS};
use super::zipf::Rng;
use crate::corpus::Request;

/// The host name of generated requests.
pub const HOST: &str = "www.example.com";

/// An application profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Profile {
    /// Each request's profile drawn from the others (50/20/10/20%).
    Mixed,
    /// HTML pages with session and analytics cookies.
    Site,
    /// A JSON API.
    Api,
    /// Urlencoded form posts.
    Form,
    /// Static assets.
    Static,
}

impl Profile {
    /// Every concrete profile with its weight in `mixed`.
    pub const MIX: [(Profile, f64); 4] = [
        (Profile::Site, 0.5),
        (Profile::Api, 0.2),
        (Profile::Form, 0.1),
        (Profile::Static, 0.2),
    ];

    /// The class name of the profile's requests (`benign/site`, ...).
    pub fn class(self) -> &'static str {
        match self {
            Profile::Mixed => "benign/mixed",
            Profile::Site => "benign/site",
            Profile::Api => "benign/api",
            Profile::Form => "benign/form",
            Profile::Static => "benign/static",
        }
    }

    /// The profile's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Mixed => "mixed",
            Profile::Site => "site",
            Profile::Api => "api",
            Profile::Form => "form",
            Profile::Static => "static",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "mixed" => Ok(Profile::Mixed),
            "site" => Ok(Profile::Site),
            "api" => Ok(Profile::Api),
            "form" => Ok(Profile::Form),
            "static" => Ok(Profile::Static),
            _ => Err(format!(
                "unknown profile '{s}' (mixed, site, api, form, static)"
            )),
        }
    }
}

const ACCEPT_LANGUAGES: &[&str] = &[
    "en-US,en;q=0.9",
    "en-GB,en;q=0.9",
    "de-DE,de;q=0.9,en;q=0.8",
    "fr-FR,fr;q=0.9,en;q=0.8",
    "es-ES,es;q=0.9",
    "nl-NL,nl;q=0.9,en;q=0.8",
];

const ACCEPT_HTML: &str =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

/// Percent-encodes a query or form value (`application/x-www-form-urlencoded`).
pub fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn query(pairs: &[(&str, String)]) -> String {
    let mut out = String::new();
    for (k, v) in pairs {
        if !out.is_empty() {
            out.push('&');
        }
        out.push_str(k);
        out.push('=');
        out.push_str(&form_encode(v));
    }
    out
}

fn slug(rng: &mut Rng) -> String {
    let a = rng.pick(WORDS).copied().unwrap_or("item");
    let b = rng.pick(WORDS).copied().unwrap_or("item");
    format!("{a}-{b}")
}

/// Builds benign requests of every profile.
#[derive(Debug, Clone)]
pub struct BenignModel {
    values: ValueModel,
}

impl BenignModel {
    /// A model drawing its values from `values`.
    pub fn new(values: ValueModel) -> Self {
        BenignModel { values }
    }

    /// The value model.
    pub fn values(&self) -> &ValueModel {
        &self.values
    }

    /// A benign request of `profile` (a concrete one is drawn for `Mixed`).
    pub fn request(&self, profile: Profile, rng: &mut Rng) -> Request {
        let profile = match profile {
            Profile::Mixed => {
                let weights: Vec<f64> = Profile::MIX.iter().map(|(_, w)| *w).collect();
                let i = rng.weighted(&weights).unwrap_or(0);
                Profile::MIX[i].0
            }
            p => p,
        };
        match profile {
            Profile::Api => self.api(rng),
            Profile::Form => self.form(rng),
            Profile::Static => self.asset(rng),
            Profile::Site | Profile::Mixed => self.site(rng),
        }
    }

    /// Browser headers common to every profile: Host, User-Agent, Accept-Language,
    /// Accept-Encoding.
    pub fn browser_headers(&self, rng: &mut Rng, accept: &str) -> Vec<(String, String)> {
        vec![
            ("Host".into(), HOST.into()),
            ("User-Agent".into(), self.values.user_agent(rng)),
            ("Accept".into(), accept.into()),
            (
                "Accept-Language".into(),
                rng.pick(ACCEPT_LANGUAGES)
                    .copied()
                    .unwrap_or("en")
                    .to_string(),
            ),
            ("Accept-Encoding".into(), "gzip, deflate, br".into()),
        ]
    }

    /// Cookies of a returning visitor with the given slots; none on a first visit
    /// (probability `first_visit`).
    fn cookies(
        &self,
        headers: &mut Vec<(String, String)>,
        slots: &[CookieSlot],
        first_visit: f64,
        rng: &mut Rng,
    ) {
        if rng.chance(first_visit) {
            return;
        }
        let value = self.values.cookie_header(slots, rng);
        headers.push(("Cookie".into(), value));
    }

    fn referer(&self, headers: &mut Vec<(String, String)>, rng: &mut Rng) {
        if rng.chance(0.7) {
            let path = match rng.below(3) {
                0 => String::from("/"),
                1 => format!("/category/{}", slug(rng)),
                _ => format!("/products/{}", slug(rng)),
            };
            headers.push(("Referer".into(), format!("https://{HOST}{path}")));
        }
    }

    fn site(&self, rng: &mut Rng) -> Request {
        let v = &self.values;
        let target = match rng.below(6) {
            0 => "/".to_string(),
            1 => format!(
                "/search?{}",
                query(&[
                    ("q", v.arg(ArgKind::Term, rng)),
                    ("page", v.arg(ArgKind::Number, rng)),
                ])
            ),
            2 => format!(
                "/product?{}",
                query(&[
                    ("id", v.arg(ArgKind::Number, rng)),
                    ("ref", v.arg(ArgKind::Slug, rng)),
                ])
            ),
            3 => format!(
                "/category/{}?{}",
                slug(rng),
                query(&[
                    ("page", v.arg(ArgKind::Number, rng)),
                    ("per_page", v.arg(ArgKind::Number, rng)),
                ])
            ),
            4 => format!(
                "/landing/{}?{}",
                slug(rng),
                query(&[
                    ("utm_source", v.arg(ArgKind::Slug, rng)),
                    ("utm_campaign", v.arg(ArgKind::Slug, rng)),
                    ("gclid", v.arg(ArgKind::Token, rng)),
                ])
            ),
            _ => format!("/products/{}", slug(rng)),
        };
        let mut headers = self.browser_headers(rng, ACCEPT_HTML);
        self.referer(&mut headers, rng);
        let mut slots = vec![
            CookieSlot::Session,
            CookieSlot::Ga,
            CookieSlot::Gid,
            CookieSlot::Csrf,
        ];
        if rng.chance(0.3) {
            slots.push(CookieSlot::Cart);
        }
        self.cookies(&mut headers, &slots, 0.1, rng);
        headers.push(("Upgrade-Insecure-Requests".into(), "1".into()));
        request(Profile::Site, "GET", target, headers, String::new())
    }

    fn api(&self, rng: &mut Rng) -> Request {
        let v = &self.values;
        let mut headers = self.browser_headers(rng, "application/json");
        headers.push((
            "Authorization".into(),
            format!("Bearer {}.{}", rng.alnum(24), rng.alnum(32)),
        ));
        headers.push(("Origin".into(), format!("https://{HOST}")));
        match rng.below(4) {
            0 | 1 => {
                let target = format!(
                    "/api/v1/items?{}",
                    query(&[
                        ("q", v.arg(ArgKind::Term, rng)),
                        ("limit", v.arg(ArgKind::Number, rng)),
                        ("offset", v.arg(ArgKind::Number, rng)),
                    ])
                );
                request(Profile::Api, "GET", target, headers, String::new())
            }
            2 => {
                let body = serde_json::json!({
                    "product_id": number(v.arg(ArgKind::Number, rng)),
                    "quantity": number(v.arg(ArgKind::Number, rng)),
                    "note": v.arg(ArgKind::Text, rng),
                    "customer": {
                        "email": v.arg(ArgKind::Email, rng),
                        "name": v.arg(ArgKind::Name, rng),
                    },
                    "coupon": v.arg(ArgKind::Slug, rng),
                })
                .to_string();
                json_post(headers, "/api/v1/orders", body)
            }
            _ => {
                let body = serde_json::json!({
                    "display_name": v.arg(ArgKind::Name, rng),
                    "bio": v.arg(ArgKind::Text, rng),
                    "interests": [v.arg(ArgKind::Term, rng), v.arg(ArgKind::Term, rng)],
                    "newsletter_token": v.arg(ArgKind::Token, rng),
                })
                .to_string();
                json_post(headers, "/api/v1/profile", body)
            }
        }
    }

    fn form(&self, rng: &mut Rng) -> Request {
        let v = &self.values;
        let (path, fields): (&str, Vec<(&str, String)>) = match rng.below(4) {
            0 => (
                "/account/login",
                vec![
                    ("email", v.arg(ArgKind::Email, rng)),
                    ("password", v.arg(ArgKind::Token, rng)),
                    ("remember", v.arg(ArgKind::Number, rng)),
                ],
            ),
            1 => (
                "/contact",
                vec![
                    ("name", v.arg(ArgKind::Name, rng)),
                    ("email", v.arg(ArgKind::Email, rng)),
                    ("subject", v.arg(ArgKind::Term, rng)),
                    ("message", v.arg(ArgKind::Text, rng)),
                ],
            ),
            2 => (
                "/newsletter/subscribe",
                vec![
                    ("email", v.arg(ArgKind::Email, rng)),
                    ("list", v.arg(ArgKind::Slug, rng)),
                ],
            ),
            _ => (
                "/checkout",
                vec![
                    ("name", v.arg(ArgKind::Name, rng)),
                    ("email", v.arg(ArgKind::Email, rng)),
                    ("street", v.arg(ArgKind::Term, rng)),
                    ("zip", v.arg(ArgKind::Number, rng)),
                    ("quantity", v.arg(ArgKind::Number, rng)),
                    ("note", v.arg(ArgKind::Text, rng)),
                ],
            ),
        };
        let mut fields = fields;
        fields.push(("csrf_token", v.arg(ArgKind::Token, rng)));
        let body = query(&fields);
        let mut headers = self.browser_headers(rng, ACCEPT_HTML);
        headers.push(("Origin".into(), format!("https://{HOST}")));
        headers.push(("Referer".into(), format!("https://{HOST}{path}")));
        self.cookies(
            &mut headers,
            &[CookieSlot::Session, CookieSlot::Csrf, CookieSlot::Ga],
            0.0,
            rng,
        );
        headers.push((
            "Content-Type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
        headers.push(("Content-Length".into(), body.len().to_string()));
        request(Profile::Form, "POST", path.to_string(), headers, body)
    }

    fn asset(&self, rng: &mut Rng) -> Request {
        let v = &self.values;
        let (dir, ext, accept) = match rng.below(5) {
            0 => ("js", "js", "*/*"),
            1 => ("css", "css", "text/css,*/*;q=0.1"),
            2 => (
                "img",
                "webp",
                "image/avif,image/webp,image/apng,image/*,*/*;q=0.8",
            ),
            3 => (
                "img",
                "png",
                "image/avif,image/webp,image/apng,image/*,*/*;q=0.8",
            ),
            _ => ("fonts", "woff2", "*/*"),
        };
        let mut target = format!("/static/{dir}/{}.{}.{ext}", slug(rng), rng.hex(8));
        if rng.chance(0.5) {
            target.push('?');
            target.push_str(&query(&[("v", v.arg(ArgKind::Number, rng))]));
        }
        let mut headers = self.browser_headers(rng, accept);
        headers.push(("Referer".into(), format!("https://{HOST}/")));
        self.cookies(
            &mut headers,
            &[CookieSlot::Session, CookieSlot::Ga, CookieSlot::Gid],
            0.2,
            rng,
        );
        request(Profile::Static, "GET", target, headers, String::new())
    }
}

/// A JSON number when the text is one, else a string.
fn number(text: String) -> serde_json::Value {
    match text.parse::<u64>() {
        Ok(n) => serde_json::Value::from(n),
        Err(_) => serde_json::Value::from(text),
    }
}

fn json_post(mut headers: Vec<(String, String)>, path: &str, body: String) -> Request {
    headers.push(("Content-Type".into(), "application/json".into()));
    headers.push(("Content-Length".into(), body.len().to_string()));
    request(Profile::Api, "POST", path.to_string(), headers, body)
}

fn request(
    profile: Profile,
    method: &str,
    target: String,
    headers: Vec<(String, String)>,
    body: String,
) -> Request {
    Request {
        name: profile.class().to_string(),
        method: method.to_string(),
        target,
        version: "HTTP/1.1".into(),
        headers,
        body,
        resp_len: if profile == Profile::Static {
            10240
        } else {
            64
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::values::Shares;
    use super::*;

    #[test]
    fn every_profile_builds_well_formed_requests() {
        let mut rng = Rng::new(1);
        let m = BenignModel::new(ValueModel::new(Shares::default(), 1.0, &mut rng));
        for p in [Profile::Site, Profile::Api, Profile::Form, Profile::Static] {
            for _ in 0..50 {
                let r = m.request(p, &mut rng);
                assert_eq!(r.name, p.class());
                assert!(r.target.starts_with('/'));
                assert!(r.headers.iter().any(|(n, v)| n == "Host" && v == HOST));
                if !r.body.is_empty() {
                    let cl = r.headers.iter().find(|(n, _)| n == "Content-Length");
                    assert_eq!(cl.unwrap().1, r.body.len().to_string());
                }
                if p == Profile::Api && r.method == "POST" {
                    serde_json::from_str::<serde_json::Value>(&r.body).unwrap();
                }
            }
        }
    }

    #[test]
    fn form_encoding() {
        assert_eq!(form_encode("a b@c.d/é"), "a+b%40c.d%2F%C3%A9");
    }
}
