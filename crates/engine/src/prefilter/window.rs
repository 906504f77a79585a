//! Which [`PREFIX_MAX`]-byte piece of a longer literal the automaton holds.
//!
//! Any piece of a literal is a necessary condition for it (a value containing the
//! literal contains each of its pieces), so the prefilter stays exact whichever
//! piece it holds; what the choice changes is how often benign values admit the
//! literal's rules for nothing. The first bytes are often the worst piece:
//! `@pmFromFile scanners-user-agents.data` lists `Mozilla/4.0 (Hydra)` and
//! `Mozilla/5.0 (compatible; Panoptic`, whose prefix `mozilla/` is in every
//! browser's User-Agent, so CRS 913100 ran its phrase search on every request.
//!
//! The piece is the one occurring least often in [`BENIGN`], a sample of ordinary
//! header values, paths and parameters (written for this purpose); among equally
//! rare pieces, the one with the most bytes that ordinary text seldom holds
//! (brackets, quotes, operators); then the earliest.

use super::PREFIX_MAX;

/// Ordinary request text: browser and client User-Agents, Accept headers, paths,
/// parameters, cookies, content types. Compared ASCII-case-insensitively.
const BENIGN: &str = "\
mozilla/5.0 (windows nt 10.0; win64; x64) applewebkit/537.36 (khtml, like gecko) chrome/131.0.0.0 safari/537.36 edg/131.0.0.0
mozilla/5.0 (macintosh; intel mac os x 10_15_7) applewebkit/605.1.15 (khtml, like gecko) version/18.1 safari/605.1.15
mozilla/5.0 (x11; linux x86_64; rv:133.0) gecko/20100101 firefox/133.0
mozilla/5.0 (iphone; cpu iphone os 17_6 like mac os x) applewebkit/605.1.15 (khtml, like gecko) version/17.6 mobile/15e148 safari/604.1
mozilla/5.0 (linux; android 10; k) applewebkit/537.36 (khtml, like gecko) chrome/131.0.0.0 mobile safari/537.36
mozilla/5.0 (compatible; googlebot/2.1; +http://www.google.com/bot.html)
mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)
mozilla/4.0 (compatible; msie 8.0; windows nt 6.1; trident/4.0)
curl/8.5.0 wget/1.21.4 python-requests/2.32.3 okhttp/4.12.0 go-http-client/1.1 java/17.0.2 apache-httpclient/4.5.14
text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7
application/json, text/plain, */*; text/css,*/*;q=0.1; image/png; application/x-www-form-urlencoded; charset=utf-8
multipart/form-data; boundary=----webkitformboundary7ma4ywxtrzu0gw; application/octet-stream; text/javascript
en-us,en;q=0.9,de;q=0.8,fr-fr;q=0.7; gzip, deflate, br, zstd; keep-alive; no-cache; max-age=0
https://www.example.com/index.html?utm_source=newsletter&utm_medium=email&utm_campaign=spring
/api/v1/users/42/orders?page=2&per_page=50&sort=created_at&order=desc&include=items,customer
/static/js/main.8f3a2c1b.js /static/css/app.min.css /images/logo.svg /favicon.ico /robots.txt /sitemap.xml
/search?q=running+shoes&category=sports /product/view?id=1337&ref=homepage /account/login?next=/dashboard
sessionid=3f9a1c7e; csrftoken=abc; _ga=ga1.2.1843920571.1718035200; _gid=ga1.2.90711; phpsessid=k2; jsessionid=a1; remember_me=true
bearer eyjhbgcioijiuzi1nij9; basic dxnlcjpwyxnzd29yza==; if-none-match: w/\"5d8c72a5\"; if-modified-since: mon, 02 dec 2024 10:00:00 gmt
first_name=john&last_name=smith&email=john.smith%40example.com&phone=%2b1-555-0100&message=hello+world&submit=send
{\"name\":\"widget\",\"price\":19.99,\"tags\":[\"new\",\"sale\"],\"description\":\"a small, useful item for the home\"}
";

/// How often each [`PREFIX_MAX`]-byte piece occurs in [`BENIGN`].
pub(super) struct Pieces(std::collections::HashMap<[u8; PREFIX_MAX], u32>);

impl Pieces {
    /// Counts the sample's pieces (once per automaton built).
    pub(super) fn new() -> Pieces {
        let mut seen = std::collections::HashMap::new();
        for w in BENIGN.as_bytes().windows(PREFIX_MAX) {
            if let Ok(piece) = <[u8; PREFIX_MAX]>::try_from(w) {
                *seen.entry(piece).or_insert(0) += 1;
            }
        }
        Pieces(seen)
    }

    /// The piece of `lit` (lower-cased) the automaton holds: `lit` itself when
    /// it has at most [`PREFIX_MAX`] bytes, else its rarest [`PREFIX_MAX`]-byte
    /// piece (see the module notes).
    pub(super) fn window(&self, lit: &[u8]) -> Vec<u8> {
        let lit = lit.to_ascii_lowercase();
        if lit.len() <= PREFIX_MAX {
            return lit;
        }
        let best = lit
            .windows(PREFIX_MAX)
            .enumerate()
            .min_by_key(|&(i, piece)| {
                let seen = <[u8; PREFIX_MAX]>::try_from(piece)
                    .ok()
                    .and_then(|p| self.0.get(&p).copied())
                    .unwrap_or(0);
                let rare: usize = piece.iter().map(|&b| usize::from(rare_byte(b))).sum();
                (seen, std::cmp::Reverse(rare), i)
            })
            .map_or(0, |(i, _)| i);
        lit[best..best + PREFIX_MAX].to_vec()
    }
}

/// Whether ordinary request text seldom holds byte `b` (lower-cased).
fn rare_byte(b: u8) -> bool {
    !(b.is_ascii_alphanumeric()
        || matches!(
            b,
            b' ' | b'/' | b'.' | b'-' | b'_' | b'=' | b'&' | b';' | b',' | b':' | b'?'
        ))
}

#[cfg(test)]
mod tests {
    use super::Pieces;

    fn window(lit: &[u8]) -> Vec<u8> {
        Pieces::new().window(lit)
    }

    #[test]
    fn short_literals_are_kept_whole_and_lowered() {
        assert_eq!(window(b"Select"), b"select");
        assert_eq!(window(b"12345678"), b"12345678");
    }

    #[test]
    fn a_long_literal_gives_a_piece_of_itself_that_browsers_do_not_send() {
        let browser = b"mozilla/5.0 (windows nt 10.0; win64; x64) applewebkit/537.36 \
            (khtml, like gecko) chrome/126.0.0.0 safari/537.36";
        for lit in [
            &b"Mozilla/4.0 (Hydra)"[..],
            b"Mozilla/5.0 (compatible; Panoptic",
            b"Mozilla/5.g",
            b"file_get_contents",
            b"<script>alert(",
            b"aaaaaaaaaaaaaaaaaa",
        ] {
            let w = window(lit);
            let lower = lit.to_ascii_lowercase();
            // A piece of the literal: a necessary condition.
            assert_eq!(w.len(), 8);
            assert!(lower.windows(8).any(|p| p == w.as_slice()), "{w:?}");
            assert!(
                !browser.windows(8).any(|p| p == w.as_slice()),
                "{:?} holds {:?}, which a browser sends",
                String::from_utf8_lossy(lit),
                String::from_utf8_lossy(&w)
            );
        }
        // Among pieces no sample holds, the one with brackets.
        assert_eq!(window(b"Mozilla/4.0 (Hydra)"), b" (hydra)");
    }
}
