//! `multipart/form-data` request bodies.
//!
//! This is a byte-for-byte re-implementation of libmodsecurity v3's line-based
//! parser (`src/request_body_processor/multipart.cc`, `Multipart::init`,
//! `process`, `process_part_header`, `parse_content_disposition`,
//! `process_part_data`, `process_boundary`, `multipart_complete`), quirks included,
//! because CRS rules and the MULTIPART_* variables depend on exactly what it flags.
//!
//! # Boundary extraction (`Multipart::init`)
//!
//! * Content-Type longer than 1024 bytes → `Multipart: Invalid boundary in C-T (length).`
//! * must start (case-insensitively) with `multipart/form-data`, else
//!   `Multipart: Invalid MIME type.`
//! * more than one `boundary…=` (counted case-insensitively) →
//!   `Multipart: Multiple boundary parameters in C-T.`
//! * `boundary` is searched **case-sensitively**; if absent: `Invalid boundary in
//!   C-T (case sensitivity).` when a case-insensitive `boundary=` exists, else
//!   `Boundary not found in C-T.`
//! * between the MIME type and `boundary` only whitespace and at most one `;` are
//!   allowed (else `(malformed)`); no `;` at all sets MULTIPART_MISSING_SEMICOLON.
//! * whitespace between `boundary` and `=` or after `=` sets
//!   MULTIPART_BOUNDARY_WHITESPACE; any other byte there is `(parameter name)`.
//! * the boundary is the whole rest of the header; if it starts **and** ends with
//!   `"` the quotes are removed and MULTIPART_BOUNDARY_QUOTED is set; a lone quote
//!   at either end is `(quote)`. An empty boundary makes `init` fail **without any
//!   error message** (so `boundary=""` leaves the body unparsed and REQBODY_ERROR
//!   at 0, as in v3).
//! * a boundary containing `boundary…=` is `(content)`; characters outside RFC 2046
//!   (`0-9A-Za-z'()+_,-./:=?` and non-final spaces) are `(characters)`, except that
//!   a `;` and everything after it is dropped first (`boundary=abc; charset=x`).
//!
//! # Body (`Multipart::process`)
//!
//! The body is consumed in lines of at most 4096 bytes (`MULTIPART_BUF_SIZE`); a
//! `\r` is never the last byte of a full buffer. For each line:
//!
//! * A line that starts with `--` (and is longer than 3 bytes, counted up to the
//!   first NUL like C's `strlen`) at the start of a real line is a boundary
//!   candidate. If it continues with the boundary: when the current part has not
//!   read any data yet (and a boundary was already seen) the line is **not** a
//!   boundary: MULTIPART_INVALID_PART is set and it is processed as header/data;
//!   otherwise it must be followed by `--` (final) and then exactly `\r\n` or
//!   `\n` (else error `Multipart: Invalid boundary: <line>`), sets
//!   MULTIPART_LF_LINE or the CRLF flag, closes the current part and, if not
//!   final, opens a new one. Any boundary after the first sets
//!   MULTIPART_UNMATCHED_BOUNDARY to **2** (v3 marks "an opening boundary was seen
//!   and this one matches": the value is 0, 1 or 2, hence
//!   [`MultipartResult::unmatched_boundary`] is a number). A bare `\n` ending the
//!   line before a boundary also sets MULTIPART_LF_LINE.
//! * A `--` line that does not continue with the boundary is an error if it is the
//!   boundary in quotes (`Invalid boundary (quotes).`, only when the C-T boundary
//!   was quoted) or preceded by whitespace (`Invalid boundary (whitespace).`), and
//!   otherwise sets MULTIPART_UNMATCHED_BOUNDARY to 1. A line containing
//!   `--<boundary>` anywhere also sets it to 1.
//! * Lines before the first boundary set MULTIPART_DATA_BEFORE and are ignored;
//!   bytes after the final boundary line set MULTIPART_DATA_AFTER and are ignored.
//! * Header lines: NUL bytes → `Nul byte in part headers.`; a header line of
//!   4096 bytes or more → `Part header line over 4096 bytes long` (parsing stops).
//!   Lines ending in `\r\n` set the CRLF flag, others MULTIPART_LF_LINE. A line
//!   starting with whitespace folds into the previous header (MULTIPART_HEADER_FOLDING,
//!   plus MULTIPART_INVALID_HEADER_FOLDING when the whitespace is not space/tab).
//!   Header names must be made of bytes 33..=126 (`(contains invalid character).`),
//!   duplicates (case-insensitive) are silently ignored, values have leading
//!   spaces/tabs removed and trailing CR/LF removed (unless the value is only CR/LF).
//! * **Errors found while processing a header line do not stop the parser** (in v3
//!   `process_part_header` returns `false`, i.e. 0, and the caller only stops on a
//!   negative value): the message is recorded (the last one wins) and the part stays
//!   in header state, so its data lines are read as headers. Errors found by
//!   `process` itself (invalid boundary, header line too long) stop parsing.
//! * At the empty line ending the headers, the Content-Disposition header is
//!   required and parsed (`parse_content_disposition`, error
//!   `Invalid Content-Disposition header (<rc>): <value>` with v3's negative
//!   codes): it must start with `form-data`, parameters are `name`, `filename` and
//!   `filename*` (RFC 5987 syntax checked, but its value is otherwise unused; a
//!   `filename*` without `filename` is `-21`), values may be `"quoted"` (with `\"`
//!   and `\\` escapes), `'quoted'` (sets MULTIPART_INVALID_QUOTING) or tokens; a
//!   `'` inside a non-double-quoted name/filename also sets MULTIPART_INVALID_QUOTING.
//!   Each `name`/`filename` value seen is recorded in MULTIPART_NAME /
//!   MULTIPART_FILENAME. A part with a non-empty `filename` is a file part.
//! * Part data: the line terminator (`\r\n` or `\n`) of each data line is held
//!   back so that the one before a boundary is not part of the value. **v3 then
//!   loses the held-back terminators of form fields** (`d.assign(reserve)` is
//!   immediately overwritten by `d.assign(buf)`), so a form-field value is the
//!   concatenation of its lines *without* line breaks; the same happens to
//!   FILES_TMP_CONTENT. File sizes (FILES_SIZES) do count them.
//! * A part without a name is dropped and sets MULTIPART_INVALID_PART. Its header
//!   lines still go to MULTIPART_PART_HEADERS (under the empty name).
//!
//! # End (`Multipart::multipart_complete`)
//!
//! * If data was seen but the final boundary was not: a final boundary left in the
//!   buffer without a line terminator is accepted; otherwise the error is
//!   `Multipart: Final boundary missing.` (or `No boundaries found in payload.`)
//!   and — as in v3 — **no ARGS nor FILES at all** are produced.
//! * MULTIPART_STRICT_ERROR is the OR of the internal error flag (set by init and
//!   `process` failures, not by header-line errors) and of BOUNDARY_QUOTED,
//!   BOUNDARY_WHITESPACE, DATA_BEFORE, DATA_AFTER, HEADER_FOLDING, LF_LINE,
//!   MISSING_SEMICOLON, INVALID_QUOTING, INVALID_PART, INVALID_HEADER_FOLDING and
//!   FILE_LIMIT_EXCEEDED (not UNMATCHED_BOUNDARY, not CRLF_LF_LINES).
//! * MULTIPART_CRLF_LF_LINES is "both CRLF and LF line endings were seen".
//!
//! # Files
//!
//! v3 writes file parts to disk only when SecUploadKeepFiles or
//! SecTmpSaveUploadedFiles is on ([`MultipartLimits::extract_files`]); only then is
//! FILES_TMP_CONTENT filled and SecUploadFileLimit enforced (the files over the
//! limit set MULTIPART_FILE_LIMIT_EXCEEDED and the error `Multipart: Upload file
//! limit exceeded N. Use SecUploadFileLimit to change the limit.`, parsing
//! continues). Nothing is written to disk here: the content is kept in memory up to
//! [`MultipartLimits::max_file_content`] bytes per file.
//!
//! # Limits
//!
//! Lines are bounded by the 4096-byte buffer, so memory is linear in the body.
//! Parts beyond [`MultipartLimits::max_parts`] are not recorded and set the error
//! `Multipart: Too many parts (limit N).` (a Palisade addition; v3 has no such
//! limit).

use super::{c_isspace, Arg};
use crate::lossy::lossy;

/// libmodsecurity's `MULTIPART_BUF_SIZE`: the longest line handled at once.
pub const MULTIPART_BUF_SIZE: usize = 4096;

/// Limits and configuration for [`parse_multipart`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MultipartLimits {
    /// Most parts recorded (form fields and files together); later parts are
    /// dropped and an error is reported.
    pub max_parts: usize,
    /// Most bytes of each file's content kept in [`FilePart::content`].
    pub max_file_content: usize,
    /// SecUploadFileLimit: most file parts "extracted" (0 = no limit). Only
    /// enforced when [`MultipartLimits::extract_files`] is set, as in v3.
    pub file_limit: usize,
    /// SecUploadKeepFiles or SecTmpSaveUploadedFiles is on: file contents are
    /// kept (FILES_TMP_CONTENT) and SecUploadFileLimit applies.
    pub extract_files: bool,
    /// The body was truncated under SecRequestBodyLimitAction ProcessPartial:
    /// a missing final boundary is then not an error (v3's `m_allow_partial`).
    pub allow_partial: bool,
}

impl Default for MultipartLimits {
    fn default() -> Self {
        MultipartLimits {
            max_parts: 1000,
            max_file_content: 1024 * 1024,
            file_limit: 100,
            extract_files: false,
            allow_partial: false,
        }
    }
}

/// One uploaded file (a part whose Content-Disposition has a `filename`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilePart {
    /// The part's `name` (key of FILES, FILES_SIZES, FILES_TMP_CONTENT; value of
    /// FILES_NAMES).
    pub field_name: Vec<u8>,
    /// The `filename` as sent (value of FILES).
    pub filename: Vec<u8>,
    /// The part's Content-Type header value, if any (not a v3 variable; offered
    /// for convenience).
    pub content_type: Option<Vec<u8>>,
    /// The file size as v3 computes it (FILES_SIZES): the part data without the
    /// line terminator before the next boundary.
    pub size: u64,
    /// FILES_TMP_CONTENT: what v3 keeps in memory, i.e. the data lines **without
    /// their line terminators** (v3 quirk), only when files are extracted, and at
    /// most [`MultipartLimits::max_file_content`] bytes.
    pub content: Vec<u8>,
    /// Whether [`FilePart::content`] was cut at the limit.
    pub content_truncated: bool,
}

/// The MULTIPART_* flags, as booleans (`1`/`0` in ModSecurity).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MultipartFlags {
    /// MULTIPART_BOUNDARY_QUOTED.
    pub boundary_quoted: bool,
    /// MULTIPART_BOUNDARY_WHITESPACE.
    pub boundary_whitespace: bool,
    /// MULTIPART_DATA_BEFORE.
    pub data_before: bool,
    /// MULTIPART_DATA_AFTER.
    pub data_after: bool,
    /// MULTIPART_HEADER_FOLDING.
    pub header_folding: bool,
    /// MULTIPART_LF_LINE.
    pub lf_line: bool,
    /// A CRLF line ending was seen (internal; see `crlf_lf_lines`).
    pub crlf_line: bool,
    /// MULTIPART_CRLF_LF_LINES: both CRLF and bare-LF line endings were seen
    /// (kept equal to `crlf_line && lf_line` by [`parse_multipart`]).
    pub crlf_lf_lines: bool,
    /// MULTIPART_MISSING_SEMICOLON (alias MULTIPART_SEMICOLON_MISSING).
    pub missing_semicolon: bool,
    /// MULTIPART_INVALID_QUOTING.
    pub invalid_quoting: bool,
    /// MULTIPART_INVALID_PART.
    pub invalid_part: bool,
    /// MULTIPART_INVALID_HEADER_FOLDING.
    pub invalid_header_folding: bool,
    /// MULTIPART_FILE_LIMIT_EXCEEDED.
    pub file_limit_exceeded: bool,
    /// MULTIPART_UNMATCHED_BOUNDARY is not 0. **Use
    /// [`MultipartResult::unmatched_boundary`] for the variable's value**: v3
    /// stores 0, 1 or 2 (2 is set by every boundary after the first one, so a
    /// well-formed body has 2; the recommended rule tests `@eq 1`).
    pub unmatched_boundary: bool,
    /// v3's internal `m_flag_error`: set by C-T (boundary) errors and by the
    /// errors that stop the line parser; part of MULTIPART_STRICT_ERROR.
    pub internal_error: bool,
}

/// Everything [`parse_multipart`] extracts from a body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MultipartResult {
    /// Form fields (ARGS_POST), in order.
    pub args: Vec<Arg>,
    /// File parts, in order.
    pub files: Vec<FilePart>,
    /// MULTIPART_PART_HEADERS: `(part name, header line)` pairs; the line is the
    /// raw header line without its terminator (or `Name: value` for a folded one).
    pub part_headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// Every `name` parameter parsed, in order (MULTIPART_NAME receives each).
    pub names: Vec<Vec<u8>>,
    /// Every `filename` parameter parsed, in order (MULTIPART_FILENAME receives each).
    pub filenames: Vec<Vec<u8>>,
    /// The last `name` parsed (the value a scalar MULTIPART_NAME ends with).
    pub name: Option<Vec<u8>>,
    /// The last `filename` parsed (the value a scalar MULTIPART_FILENAME ends with).
    pub filename: Option<Vec<u8>>,
    /// The flags.
    pub flags: MultipartFlags,
    /// MULTIPART_UNMATCHED_BOUNDARY's exact value: 0, 1 or 2 (see
    /// [`MultipartFlags::unmatched_boundary`]).
    pub unmatched_boundary: u8,
    /// The body processor error (REQBODY_ERROR = 1 when set), without the
    /// transaction's `Multipart parsing error: ` prefix.
    pub error: Option<String>,
    /// Bytes of the body that are not file content (v3's
    /// `m_reqbody_no_files_length`, for SecRequestBodyNoFilesLimit).
    pub no_files_length: u64,
}

impl MultipartResult {
    /// MULTIPART_STRICT_ERROR as v3 computes it.
    pub fn strict_error(&self) -> bool {
        let f = &self.flags;
        f.internal_error
            || f.boundary_quoted
            || f.boundary_whitespace
            || f.data_before
            || f.data_after
            || f.header_folding
            || f.lf_line
            || f.missing_semicolon
            || f.invalid_quoting
            || f.invalid_part
            || f.invalid_header_folding
            || f.file_limit_exceeded
    }

    /// MULTIPART_CRLF_LF_LINES: both CRLF and bare-LF line endings were seen.
    pub fn crlf_lf_lines(&self) -> bool {
        self.flags.crlf_line && self.flags.lf_line
    }

    /// FILES_COMBINED_SIZE: the sum of the file sizes.
    pub fn files_combined_size(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// Parses a `multipart/form-data` body with libmodsecurity v3 semantics.
///
/// `content_type` is the request's Content-Type header value (v3 takes the first
/// Content-Type header). Never panics; linear in `body.len()` (with a constant
/// factor bounded by the 1024-byte boundary limit).
pub fn parse_multipart(
    body: &[u8],
    content_type: &[u8],
    limits: &MultipartLimits,
) -> MultipartResult {
    parse_with(body, content_type, limits, Parser::process)
}

/// [`parse_multipart`] with the body fed by `process` (tests compare
/// [`Parser::process`] with a byte-by-byte reference).
fn parse_with(
    body: &[u8],
    content_type: &[u8],
    limits: &MultipartLimits,
    process: fn(&mut Parser, &[u8]),
) -> MultipartResult {
    let mut p = Parser::new(*limits);
    if p.init(content_type) {
        process(&mut p, body);
    }
    p.complete();
    let mut res = p.res;
    res.flags.crlf_lf_lines = res.flags.crlf_line && res.flags.lf_line;
    res.flags.unmatched_boundary = res.unmatched_boundary != 0;
    res.name = res.names.last().cloned();
    res.filename = res.filenames.last().cloned();
    res
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartType {
    FormData,
    File,
}

#[derive(Debug)]
struct Part {
    kind: PartType,
    name: Vec<u8>,
    filename: Vec<u8>,
    value: Vec<u8>,
    file_size: u64,
    content: Vec<u8>,
    content_truncated: bool,
    tmp_file_open: bool,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// Lower-cased header names, for the duplicate check in constant time (v3 keeps
    /// the headers in a map).
    header_names: std::collections::HashSet<Vec<u8>>,
    last_header_name: Vec<u8>,
    last_header_line: Vec<u8>,
    header_lines: Vec<Vec<u8>>,
}

impl Part {
    fn new() -> Self {
        Part {
            kind: PartType::FormData,
            name: Vec::new(),
            filename: Vec::new(),
            value: Vec::new(),
            file_size: 0,
            content: Vec::new(),
            content_truncated: false,
            tmp_file_open: false,
            headers: Vec::new(),
            header_names: std::collections::HashSet::new(),
            last_header_name: Vec::new(),
            last_header_line: Vec::new(),
            header_lines: Vec::new(),
        }
    }

    fn header(&self, name: &[u8]) -> Option<&Vec<u8>> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    fn header_mut(&mut self, name: &[u8]) -> Option<&mut Vec<u8>> {
        // Folding continues the header added last: search from the end.
        self.headers
            .iter_mut()
            .rev()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }
}

/// The line parser stopped (v3's `process` returned false).
struct Stop;

struct Parser {
    limits: MultipartLimits,
    res: MultipartResult,
    boundary: Vec<u8>,
    /// `--` + boundary, for the "looks like a boundary anywhere" scan.
    dash_boundary: Vec<u8>,
    /// That scan's searcher, built once for the body (not once per line).
    dash_finder: memchr::memmem::Finder<'static>,
    buf: Vec<u8>,
    buf_contains_line: bool,
    crlf_state: u8,
    crlf_state_buf_end: u8,
    mpp: Option<Part>,
    mpp_in_data: bool,
    data_read: bool,
    reserve: Vec<u8>,
    seen_data: bool,
    is_complete: bool,
    boundary_count: usize,
    nfiles: usize,
    parts: Vec<Part>,
    parts_seen: usize,
}

/// Characters RFC 2046 allows in a boundary (the space is checked separately).
fn boundary_char_ok(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'\'' | b'(' | b')' | b'+' | b'_' | b',' | b'-' | b'.' | b'/' | b':' | b'=' | b'?'
        )
}

fn boundary_characters_valid(b: &[u8]) -> bool {
    b.iter()
        .enumerate()
        .all(|(i, &c)| boundary_char_ok(c) || (c == b' ' && i + 1 < b.len()))
}

/// v3's `count_boundary_params`: occurrences of `boundary` (case-insensitive)
/// followed somewhere later by `=`.
fn count_boundary_params(s: &[u8]) -> usize {
    let lower = s.to_ascii_lowercase();
    // The last '=' of the string: an occurrence counts when it starts before it.
    let last_eq = match memchr::memrchr(b'=', &lower) {
        Some(p) => p,
        None => return 0,
    };
    let mut count = 0;
    let mut from = 0;
    while let Some(pos) = memchr::memmem::find(&lower[from..], b"boundary") {
        let after = from + pos + 8;
        if after <= last_eq {
            count += 1;
        }
        from = after;
    }
    count
}

fn is_token_char(c: u8) -> bool {
    if c <= 32 || c >= 127 {
        return false;
    }
    !matches!(
        c,
        b'(' | b')'
            | b'<'
            | b'>'
            | b'@'
            | b','
            | b';'
            | b':'
            | b'\\'
            | b'"'
            | b'/'
            | b'['
            | b']'
            | b'?'
            | b'='
    )
}

/// Up to the first NUL, like C's `strlen`.
fn cstr(b: &[u8]) -> &[u8] {
    match memchr::memchr(0, b) {
        Some(p) => &b[..p],
        None => b,
    }
}

impl Parser {
    fn new(limits: MultipartLimits) -> Self {
        Parser {
            limits,
            res: MultipartResult::default(),
            boundary: Vec::new(),
            dash_boundary: Vec::new(),
            dash_finder: memchr::memmem::Finder::new(b"").into_owned(),
            buf: Vec::with_capacity(MULTIPART_BUF_SIZE),
            buf_contains_line: true,
            crlf_state: 0,
            crlf_state_buf_end: 0,
            mpp: None,
            mpp_in_data: false,
            data_read: false,
            reserve: Vec::new(),
            seen_data: false,
            is_complete: false,
            boundary_count: 0,
            nfiles: 0,
            parts: Vec::new(),
            parts_seen: 0,
        }
    }

    fn set_error(&mut self, msg: impl Into<String>) {
        self.res.error = Some(msg.into());
    }

    fn fail_init(&mut self, msg: &str) -> bool {
        self.res.flags.internal_error = true;
        self.set_error(msg);
        false
    }

    /// `Multipart::init`: extracts the boundary from the Content-Type.
    fn init(&mut self, header: &[u8]) -> bool {
        if header.is_empty() {
            return self.fail_init("Multipart: Content-Type header not available.");
        }
        if header.len() > 1024 {
            return self.fail_init("Multipart: Invalid boundary in C-T (length).");
        }
        // C string semantics from here on.
        let header = cstr(header);
        if header.len() < 19 || !header[..19].eq_ignore_ascii_case(b"multipart/form-data") {
            return self.fail_init("Multipart: Invalid MIME type.");
        }
        if count_boundary_params(header) > 1 {
            return self.fail_init("Multipart: Multiple boundary parameters in C-T.");
        }
        let Some(bpos) = memchr::memmem::find(header, b"boundary") else {
            self.res.flags.internal_error = true;
            if count_boundary_params(header) > 0 {
                self.set_error("Multipart: Invalid boundary in C-T (case sensitivity).");
            } else {
                self.set_error("Multipart: Boundary not found in C-T.");
            }
            return false;
        };
        let mut seen_semicolon = false;
        for &c in header.get(19..bpos).unwrap_or(&[]) {
            if !c_isspace(c) {
                if !seen_semicolon && c == b';' {
                    seen_semicolon = true;
                } else {
                    return self.fail_init("Multipart: Invalid boundary in C-T (malformed).");
                }
            }
        }
        if !seen_semicolon {
            self.res.flags.missing_semicolon = true;
        }
        let after_name = bpos + 8;
        let Some(eq_rel) = memchr::memchr(b'=', &header[after_name..]) else {
            return self.fail_init("Multipart: Invalid boundary in C-T (malformed).");
        };
        let eq = after_name + eq_rel;
        for &c in &header[after_name..eq] {
            if c_isspace(c) {
                self.res.flags.boundary_whitespace = true;
            } else {
                return self.fail_init("Multipart: Invalid boundary in C-T (parameter name).");
            }
        }
        let b = &header[eq + 1..];
        if b.first().is_some_and(|&c| c_isspace(c)) {
            self.res.flags.boundary_whitespace = true;
        }
        let len = b.len();
        let mut boundary: Vec<u8>;
        if len >= 2 && b[0] == b'"' && b[len - 1] == b'"' {
            boundary = b[1..len - 1].to_vec();
            if boundary.is_empty() {
                // v3 returns false without an error message.
                return false;
            }
            self.res.flags.boundary_quoted = true;
        } else {
            if b.first() == Some(&b'"') || (len >= 2 && b[len - 1] == b'"') {
                return self.fail_init("Multipart: Invalid boundary in C-T (quote).");
            }
            boundary = b.to_vec();
            if boundary.is_empty() {
                return false;
            }
        }
        if count_boundary_params(&boundary) != 0 {
            return self.fail_init("Multipart: Invalid boundary in C-T (content).");
        }
        if !boundary_characters_valid(&boundary) {
            if let Some(semi) = memchr::memchr(b';', &boundary) {
                boundary.truncate(semi);
            }
        }
        if !boundary_characters_valid(&boundary) {
            return self.fail_init("Multipart: Invalid boundary in C-T (characters).");
        }
        if boundary.is_empty() {
            return self.fail_init("Multipart: Invalid boundary in C-T (empty).");
        }
        self.dash_boundary = [b"--".as_slice(), &boundary].concat();
        self.dash_finder = memchr::memmem::Finder::new(&self.dash_boundary).into_owned();
        self.boundary = boundary;
        true
    }

    /// `Multipart::process` over the whole body.
    fn process(&mut self, data: &[u8]) {
        self.feed(data, true);
    }

    /// `Multipart::process` as v3 writes it, with each byte taken one at a time
    /// (the reference tests hold [`Parser::process`]'s runs to), or, with
    /// `runs`, each run of bytes other than CR and LF that leaves the buffer
    /// short of its last byte appended at once: byte by byte, each would be
    /// pushed and set the CR/LF state to 0, and none would process the buffer
    /// (only a full buffer, a line's end or a CR that would be its last byte
    /// do). Once the final boundary was seen, bytes are taken one at a time
    /// (the first one after it ends the body).
    fn feed(&mut self, data: &[u8], runs: bool) {
        if data.is_empty() {
            return;
        }
        self.seen_data = true;
        let mut i = 0;
        while i < data.len() {
            if runs && !self.is_complete {
                let room = (MULTIPART_BUF_SIZE - 1).saturating_sub(self.buf.len());
                let rest = data.get(i..).unwrap_or_default();
                let line = memchr::memchr2(b'\r', b'\n', rest).unwrap_or(rest.len());
                let n = line.min(room);
                if n > 0 {
                    self.buf
                        .extend_from_slice(rest.get(..n).unwrap_or_default());
                    self.crlf_state = 0;
                    i += n;
                    continue;
                }
            }
            let c = data[i];
            let mut process_buffer = false;
            if c == b'\r' && self.buf.len() == MULTIPART_BUF_SIZE - 1 {
                // Never take '\r' as the last byte of the buffer.
                process_buffer = true;
            } else {
                i += 1;
                self.buf.push(c);
            }
            if c == b'\n' || self.buf.len() == MULTIPART_BUF_SIZE || process_buffer {
                if self.process_buffer(process_buffer).is_err() {
                    return;
                }
                self.buf.clear();
                self.buf_contains_line = c == b'\n';
                if c == b'\n' {
                    self.crlf_state = if self.crlf_state == 1 { 3 } else { 2 };
                }
                self.crlf_state_buf_end = self.crlf_state;
            }
            if c == b'\r' {
                self.crlf_state = 1;
            } else if c != b'\n' {
                self.crlf_state = 0;
            }
            if self.is_complete && i < data.len() {
                self.res.flags.data_after = true;
                return;
            }
        }
    }

    /// Reads the current buffer as a C string would (0 at and past the end).
    fn at(&self, i: usize) -> u8 {
        self.buf.get(i).copied().unwrap_or(0)
    }

    fn process_buffer(&mut self, process_buffer: bool) -> Result<(), Stop> {
        let blen = self.boundary.len();
        let slen = cstr(&self.buf).len();
        let mut processed_as_boundary = false;
        if self.buf_contains_line && slen > 3 && self.buf[0] == b'-' && self.buf[1] == b'-' {
            if slen >= blen + 2 && self.buf[2..2 + blen] == self.boundary[..] {
                if self.crlf_state_buf_end == 2 {
                    self.res.flags.lf_line = true;
                }
                if !self.data_read && self.boundary_count > 0 {
                    // Looks like our boundary, but it is where part data should begin.
                    self.res.flags.invalid_part = true;
                } else {
                    let mut end = 2 + blen;
                    if self.boundary_count > 0 {
                        self.res.unmatched_boundary = 2;
                    }
                    let mut is_final = false;
                    if self.at(end) == b'-' && self.at(end + 1) == b'-' {
                        is_final = true;
                        end += 2;
                        if self.is_complete {
                            self.res.flags.internal_error = true;
                            self.set_error("Multipart: Invalid boundary (final duplicate).");
                            return Err(Stop);
                        }
                    }
                    let crlf =
                        self.at(end) == b'\r' && self.at(end + 1) == b'\n' && self.at(end + 2) == 0;
                    let lf = self.at(end) == b'\n' && self.at(end + 1) == 0;
                    if crlf || lf {
                        if lf {
                            self.res.flags.lf_line = true;
                        } else {
                            self.res.flags.crlf_line = true;
                        }
                        self.process_boundary(is_final);
                        if is_final {
                            self.is_complete = true;
                        }
                        processed_as_boundary = true;
                        self.boundary_count += 1;
                    } else {
                        self.res.flags.internal_error = true;
                        let msg =
                            format!("Multipart: Invalid boundary: {}", lossy(cstr(&self.buf)));
                        self.set_error(msg);
                        return Err(Stop);
                    }
                }
            } else {
                if self.res.flags.boundary_quoted
                    && slen >= blen + 3
                    && self.buf[2] == b'"'
                    && self.buf[3..3 + blen] == self.boundary[..]
                {
                    self.res.flags.internal_error = true;
                    self.set_error("Multipart: Invalid boundary (quotes).");
                    return Err(Stop);
                }
                let mut p = 2;
                while c_isspace(self.at(p)) {
                    p += 1;
                }
                if p != 2 && self.buf.get(p..p + blen) == Some(&self.boundary[..]) {
                    self.res.flags.internal_error = true;
                    self.set_error("Multipart: Invalid boundary (whitespace).");
                    return Err(Stop);
                }
                self.res.unmatched_boundary = 1;
            }
        } else if self.buf_contains_line && self.dash_finder.find(&self.buf).is_some() {
            self.res.unmatched_boundary = 1;
        }

        if !processed_as_boundary {
            if self.mpp.is_none() {
                self.res.flags.data_before = true;
            } else if !self.mpp_in_data {
                if self.buf.len() == MULTIPART_BUF_SIZE || process_buffer {
                    self.res.flags.internal_error = true;
                    self.set_error(format!(
                        "Multipart: Part header line over {MULTIPART_BUF_SIZE} bytes long"
                    ));
                    return Err(Stop);
                }
                self.process_part_header();
            } else {
                self.process_part_data();
            }
        }
        Ok(())
    }

    /// `Multipart::process_part_header`. Errors are recorded, never fatal.
    fn process_part_header(&mut self) {
        let Some(mut mpp) = self.mpp.take() else {
            return;
        };
        self.part_header_line(&mut mpp);
        self.mpp = Some(mpp);
    }

    fn part_header_line(&mut self, mpp: &mut Part) {
        let len = self.buf.len();
        if memchr::memchr(0, &self.buf).is_some() {
            self.set_error("Multipart: Nul byte in part headers.");
            return;
        }
        self.res.no_files_length += len as u64;
        let mut len_without_termination = len.saturating_sub(1);
        if len > 1 {
            if self.buf[len - 2] == b'\r' {
                self.res.flags.crlf_line = true;
                len_without_termination -= 1;
            } else {
                self.res.flags.lf_line = true;
            }
        } else {
            self.res.flags.lf_line = true;
        }

        if self.buf == b"\r\n" || self.buf == b"\n" {
            // End of the part headers.
            if !mpp.last_header_line.is_empty() {
                let line = std::mem::take(&mut mpp.last_header_line);
                mpp.header_lines.push(line);
            }
            let Some(cd) = mpp.header(b"Content-Disposition").cloned() else {
                self.set_error("Multipart: Part missing Content-Disposition header.");
                return;
            };
            let rc = self.parse_content_disposition(mpp, &cd);
            if rc < 0 {
                self.set_error(format!(
                    "Multipart: Invalid Content-Disposition header ({rc}): {}",
                    lossy(&cd)
                ));
                return;
            }
            if mpp.name.is_empty() {
                self.set_error("Multipart: Content-Disposition header missing name field.");
                return;
            }
            if !mpp.filename.is_empty() {
                if memchr::memmem::find(&cd, b"filename=").is_none() {
                    self.set_error("Multipart: Invalid Content-Disposition header (filename).");
                    return;
                }
                mpp.kind = PartType::File;
            } else {
                mpp.kind = PartType::FormData;
            }
            self.mpp_in_data = true;
            self.data_read = false;
            mpp.last_header_name.clear();
            return;
        }

        if c_isspace(self.at(0)) {
            // Header folding.
            self.res.flags.header_folding = true;
            if self.at(0) != b'\t' && self.at(0) != b' ' {
                self.res.flags.invalid_header_folding = true;
            }
            if mpp.last_header_name.is_empty() {
                self.set_error("Multipart: Invalid part header (folding error).");
                return;
            }
            let mut d = 0;
            while d < len && c_isspace(self.buf[d]) {
                if self.buf[d] != b'\t' && self.buf[d] != b' ' {
                    self.res.flags.invalid_header_folding = true;
                }
                d += 1;
            }
            let mut new_value = self.buf[d..].to_vec();
            chomp(&mut new_value);
            let last_name = mpp.last_header_name.clone();
            let Some(value) = mpp.header_mut(&last_name) else {
                return;
            };
            // The length is checked before the value grows: a header folded over
            // many lines stops growing at the limit, so each further line costs
            // nothing (no quadratic copying; found by fuzzing).
            if value.len() + 1 + new_value.len() > MULTIPART_BUF_SIZE {
                self.set_error("Multipart: Part header too long.");
                return;
            }
            value.push(b' ');
            value.extend_from_slice(&new_value);
            let mut line = last_name;
            line.extend_from_slice(b": ");
            line.extend_from_slice(value);
            mpp.last_header_line = line;
            return;
        }

        // A new header.
        if !mpp.last_header_line.is_empty() {
            let line = std::mem::take(&mut mpp.last_header_line);
            mpp.header_lines.push(line);
        }
        let Some(colon) = memchr::memchr(b':', &self.buf) else {
            let msg = format!(
                "Multipart: Invalid part header (colon missing): {}",
                lossy(&self.buf)
            );
            self.set_error(msg);
            return;
        };
        if colon == 0 {
            self.set_error("Multipart: Invalid part header (header name missing).");
            return;
        }
        let name = self.buf[..colon].to_vec();
        if name.iter().any(|&c| !(33..=126).contains(&c)) {
            self.set_error("Multipart: Invalid part header (contains invalid character).");
            return;
        }
        let mut v = colon + 1;
        while v < len && (self.buf[v] == b' ' || self.buf[v] == b'\t') {
            v += 1;
        }
        let mut value = self.buf[v..].to_vec();
        chomp(&mut value);
        if !mpp.header_names.insert(name.to_ascii_lowercase()) {
            // "Duplicate part header": v3 returns without an error message.
            return;
        }
        mpp.last_header_name = name.clone();
        mpp.headers.push((name, value));
        mpp.last_header_line = self.buf[..len_without_termination].to_vec();
    }

    /// `Multipart::parse_content_disposition`; returns v3's code (negative on error).
    fn parse_content_disposition(&mut self, mpp: &mut Part, v: &[u8]) -> i32 {
        // Reads like a C string: 0 at and after the end.
        let at = |i: usize| -> u8 { v.get(i).copied().unwrap_or(0) };
        let is_ws = |c: u8| c == b' ' || c == b'\t';
        if !v.starts_with(b"form-data") {
            return -1;
        }
        let mut p = 9;
        while is_ws(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return 1;
        }
        if at(p) != b';' {
            return -2;
        }
        p += 1;
        let mut filename_star: Vec<u8> = Vec::new();
        while at(p) != 0 {
            while is_ws(at(p)) {
                p += 1;
            }
            if at(p) == 0 {
                return -3;
            }
            let start = p;
            while at(p) != 0 && at(p) != b'=' && !is_ws(at(p)) {
                p += 1;
            }
            if at(p) == 0 {
                return -4;
            }
            let name = &v[start..p];
            while is_ws(at(p)) {
                p += 1;
            }
            if at(p) == 0 {
                return -5;
            }
            if at(p) != b'=' {
                return -13;
            }
            p += 1;
            while is_ws(at(p)) {
                p += 1;
            }
            if at(p) == 0 {
                return -6;
            }
            let mut quote = 0u8;
            let mut value: Vec<u8> = Vec::new();
            if name == b"filename*" {
                let start_of_charset = p;
                while at(p) != 0
                    && (at(p).is_ascii_alphanumeric() || b"!#$%&+-^_`{}~".contains(&at(p)))
                {
                    p += 1;
                }
                if at(p) != b'\'' || p == start_of_charset {
                    return -16;
                }
                p += 1;
                while at(p) != 0 && at(p) != b'\'' {
                    p += 1;
                }
                if at(p) != b'\'' {
                    return -17;
                }
                p += 1;
                let start_of_filename = p;
                while at(p) != 0 && at(p) != b';' {
                    if at(p) == b'%' {
                        if at(p + 1) == 0
                            || !at(p + 1).is_ascii_hexdigit()
                            || !at(p + 2).is_ascii_hexdigit()
                        {
                            return -18;
                        }
                        p += 3;
                    } else if at(p).is_ascii_alphanumeric() || b"!#$&+-.^_`~".contains(&at(p)) {
                        p += 1;
                    } else {
                        return -19;
                    }
                }
                value = v[start_of_filename..p.min(v.len())].to_vec();
            } else if at(p) == b'"' || at(p) == b'\'' {
                quote = at(p);
                if quote == b'\'' {
                    self.res.flags.invalid_quoting = true;
                }
                p += 1;
                if at(p) == 0 {
                    return -7;
                }
                while at(p) != 0 {
                    if at(p) == b'\\' {
                        if at(p + 1) == 0 {
                            return -8;
                        }
                        if at(p + 1) == quote || at(p + 1) == b'\\' {
                            p += 1;
                        }
                    } else if at(p) == quote {
                        break;
                    }
                    value.push(at(p));
                    p += 1;
                }
                p += 1; // over the closing quote (or past the end)
            } else {
                let start = p;
                while at(p) != 0 && is_token_char(at(p)) {
                    p += 1;
                }
                value = v[start..p].to_vec();
            }

            if name == b"name" {
                self.validate_quotes(&value, quote);
                self.res.names.push(value.clone());
                if !mpp.name.is_empty() {
                    return -14;
                }
                mpp.name = value;
            } else if name == b"filename" {
                self.validate_quotes(&value, quote);
                self.res.filenames.push(value.clone());
                if !mpp.filename.is_empty() {
                    return -15;
                }
                mpp.filename = value;
            } else if name == b"filename*" {
                if !filename_star.is_empty() {
                    return -20;
                }
                filename_star = value;
            } else {
                return -11;
            }

            if at(p) != 0 {
                while is_ws(at(p)) {
                    p += 1;
                }
                if at(p) != 0 {
                    if at(p) != b';' {
                        let prev = if p > 0 { at(p - 1) } else { 0 };
                        if prev == b'\'' || prev == b'"' {
                            self.res.flags.invalid_quoting = true;
                        }
                        return -12;
                    }
                    p += 1;
                }
            }
        }
        if !filename_star.is_empty() && mpp.filename.is_empty() {
            return -21;
        }
        1
    }

    fn validate_quotes(&mut self, data: &[u8], quote: u8) {
        if quote == b'"' {
            return;
        }
        if data.contains(&b'\'') {
            self.res.flags.invalid_quoting = true;
        }
    }

    /// `Multipart::process_part_data`.
    fn process_part_data(&mut self) {
        let Some(mut mpp) = self.mpp.take() else {
            return;
        };
        self.data_read = true;
        let mut len = self.buf.len();
        let mut reserved: &[u8] = &[];
        if len >= 1 && self.buf[len - 1] == b'\n' {
            if len >= 2 && self.buf[len - 2] == b'\r' {
                reserved = b"\r\n";
                len -= 2;
            } else {
                reserved = b"\n";
                len -= 1;
            }
        }
        let data = &self.buf[..len];
        match mpp.kind {
            PartType::File => {
                let mut extract = self.limits.extract_files;
                if extract && self.limits.file_limit != 0 && self.nfiles >= self.limits.file_limit {
                    if !self.res.flags.file_limit_exceeded {
                        self.res.error = Some(format!(
                            "Multipart: Upload file limit exceeded {}. Use SecUploadFileLimit to change the limit.",
                            self.limits.file_limit
                        ));
                        self.res.flags.file_limit_exceeded = true;
                    }
                    extract = false;
                }
                if extract {
                    if !mpp.tmp_file_open {
                        mpp.tmp_file_open = true;
                        self.nfiles += 1;
                    }
                    // v3 writes the reserve to the file but appends only the
                    // line itself to the in-memory value.
                    let room = self
                        .limits
                        .max_file_content
                        .saturating_sub(mpp.content.len());
                    if data.len() > room {
                        mpp.content_truncated = true;
                    }
                    mpp.content.extend_from_slice(&data[..data.len().min(room)]);
                }
                mpp.file_size += (data.len() + self.reserve.len()) as u64;
            }
            PartType::FormData => {
                self.res.no_files_length += (data.len() + self.reserve.len()) as u64;
                // v3: the reserve is assigned, then overwritten by the line.
                mpp.value.extend_from_slice(data);
            }
        }
        self.reserve.clear();
        self.reserve.extend_from_slice(reserved);
        self.mpp = Some(mpp);
    }

    /// `Multipart::process_boundary`.
    fn process_boundary(&mut self, last_part: bool) {
        if let Some(mpp) = self.mpp.take() {
            self.parts_seen += 1;
            let over_limit = self.parts_seen > self.limits.max_parts;
            if over_limit {
                self.set_error(format!(
                    "Multipart: Too many parts (limit {}).",
                    self.limits.max_parts
                ));
            } else {
                for line in &mpp.header_lines {
                    self.res.part_headers.push((mpp.name.clone(), line.clone()));
                }
            }
            if mpp.name.is_empty() {
                self.res.flags.invalid_part = true;
            } else if !over_limit {
                self.parts.push(mpp);
            }
        }
        if !last_part {
            self.mpp = Some(Part::new());
            self.mpp_in_data = false;
            self.data_read = false;
            self.reserve.clear();
        }
    }

    /// `Multipart::multipart_complete`.
    fn complete(&mut self) {
        if self.seen_data && !self.is_complete {
            if self.boundary_count > 0 {
                let blen = self.boundary.len();
                if self.buf_contains_line
                    && self.buf.len() == 4 + blen
                    && self.buf.starts_with(&self.dash_boundary)
                    && self.buf[2 + blen] == b'-'
                    && self.buf[3 + blen] == b'-'
                {
                    if self.crlf_state_buf_end == 2 {
                        self.res.flags.lf_line = true;
                    }
                    if !self.data_read {
                        self.res.flags.invalid_part = true;
                    }
                    self.process_boundary(true);
                    self.is_complete = true;
                }
                if !self.is_complete && !self.limits.allow_partial {
                    self.set_error("Multipart: Final boundary missing.");
                    return;
                }
            } else {
                self.set_error("Multipart: No boundaries found in payload.");
                return;
            }
        }
        for part in std::mem::take(&mut self.parts) {
            match part.kind {
                PartType::File => {
                    let content_type = part.header(b"Content-Type").cloned();
                    self.res.files.push(FilePart {
                        field_name: part.name,
                        filename: part.filename,
                        content_type,
                        size: part.file_size,
                        content: part.content,
                        content_truncated: part.content_truncated,
                    });
                }
                PartType::FormData => self.res.args.push(Arg::new(part.name, part.value)),
            }
        }
    }
}

/// v3's `utils::string::chomp`: removes trailing `\r`/`\n`, unless the string
/// is made only of them.
fn chomp(s: &mut Vec<u8>) {
    if let Some(pos) = s.iter().rposition(|&c| c != b'\n' && c != b'\r') {
        s.truncate(pos + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn body() -> impl Strategy<Value = Vec<u8>> {
        let tok = prop_oneof![
            Just(b"--XyZ".to_vec()),
            Just(b"--XyZ--".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"Content-Disposition: form-data; name=\"a\"".to_vec()),
            Just(b"Content-Disposition: form-data; name='b'; filename=\"f\"".to_vec()),
            Just(b"; filename*=UTF-8''x%41".to_vec()),
            Just(b"Content-Type: text/plain".to_vec()),
            Just(b" folded".to_vec()),
            Just(b"\"".to_vec()),
            Just(b"\\".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..8),
        ];
        proptest::collection::vec(tok, 0..64).prop_map(|v| v.concat())
    }

    fn content_type() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(b"multipart/form-data; boundary=XyZ".to_vec()),
            Just(b"multipart/form-data; boundary=\"XyZ\"".to_vec()),
            Just(b"multipart/form-data boundary = XyZ; charset=x".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..64).prop_map(|v| [
                b"multipart/form-data; boundary=".to_vec(),
                v
            ]
            .concat()),
            proptest::collection::vec(any::<u8>(), 0..64),
        ]
    }

    proptest! {
        #[test]
        fn never_panics(body in body(), ct in content_type(), extract in any::<bool>()) {
            let limits = MultipartLimits {
                max_parts: 4,
                max_file_content: 16,
                file_limit: 1,
                extract_files: extract,
                allow_partial: false,
            };
            let r = parse_multipart(&body, &ct, &limits);
            prop_assert!(r.args.len() + r.files.len() <= 4);
            for f in &r.files {
                prop_assert!(f.content.len() <= 16);
            }
            prop_assert_eq!(r.flags.crlf_lf_lines, r.flags.crlf_line && r.flags.lf_line);
        }

        #[test]
        fn never_panics_on_bytes(body in proptest::collection::vec(any::<u8>(), 0..1024)) {
            let _ = parse_multipart(&body, b"multipart/form-data; boundary=a", &MultipartLimits::default());
        }
    }

    impl Parser {
        /// The reference: every byte taken one at a time, as v3 does.
        fn process_bytewise(&mut self, data: &[u8]) {
            self.feed(data, false);
        }
    }

    /// Bodies with lines around the buffer's size, CRs where the buffer's last
    /// byte falls, and data after the final boundary.
    fn long_body() -> impl Strategy<Value = Vec<u8>> {
        let tok = prop_oneof![
            Just(b"--XyZ\r\n".to_vec()),
            Just(b"--XyZ--\r\n".to_vec()),
            Just(b"--XyZ--".to_vec()),
            Just(b"Content-Disposition: form-data; name=\"a\"; filename=\"f\"\r\n\r\n".to_vec()),
            Just(b"Content-Disposition: form-data; name=\"b\"\r\n\r\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"v\rX\n".to_vec()),
            (4090usize..4100).prop_map(|n| vec![b'a'; n]),
            (0usize..300).prop_map(|n| vec![b'x'; n]),
            proptest::collection::vec(any::<u8>(), 0..16),
        ];
        proptest::collection::vec(tok, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn runs_give_what_bytes_one_by_one_give(
            body in prop_oneof![body(), long_body()],
            ct in content_type(),
            extract in any::<bool>(),
            partial in any::<bool>(),
        ) {
            let limits = MultipartLimits {
                max_parts: 8,
                max_file_content: 5000,
                file_limit: 2,
                extract_files: extract,
                allow_partial: partial,
            };
            let fast = parse_multipart(&body, &ct, &limits);
            let slow = parse_with(&body, &ct, &limits, Parser::process_bytewise);
            prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn a_run_after_a_cr_makes_the_line_end_a_bare_lf() {
        // The CR before `X` does not make the LF a CRLF: the line before the
        // final boundary ends with a bare LF (MULTIPART_LF_LINE).
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\rX\n--XyZ--\r\n";
        let ct = b"multipart/form-data; boundary=XyZ";
        let limits = MultipartLimits::default();
        let fast = parse_multipart(body, ct, &limits);
        assert_eq!(
            fast,
            parse_with(body, ct, &limits, Parser::process_bytewise)
        );
        assert!(fast.flags.lf_line);
    }

    #[test]
    fn long_lines_and_long_boundary_stay_linear() {
        let boundary = "-".repeat(1000);
        let ct = format!("multipart/form-data; boundary={boundary}");
        let body = vec![b'-'; 2_000_000];
        let r = parse_multipart(&body, ct.as_bytes(), &MultipartLimits::default());
        assert!(r.error.is_some());
    }

    #[test]
    fn header_line_over_buffer_size() {
        let mut body = b"--XyZ\r\nX-Long: ".to_vec();
        body.extend(vec![b'a'; 5000]);
        body.extend_from_slice(b"\r\n\r\nv\r\n--XyZ--\r\n");
        let r = parse_multipart(
            &body,
            b"multipart/form-data; boundary=XyZ",
            &MultipartLimits::default(),
        );
        assert!(r.flags.internal_error);
        // Parsing stopped; the final-boundary check then reports the body.
        assert_eq!(
            r.error.as_deref(),
            Some("Multipart: Final boundary missing.")
        );
    }

    #[test]
    fn data_lines_longer_than_the_buffer() {
        for n in [4094usize, 4095, 4096, 4097, 10_000] {
            let mut body =
                b"--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\n"
                    .to_vec();
            body.extend(std::iter::repeat_n(b'a', n));
            body.extend_from_slice(b"\r\nb\r\n--XyZ--\r\n");
            let limits = MultipartLimits {
                extract_files: true,
                ..MultipartLimits::default()
            };
            let r = parse_multipart(&body, b"multipart/form-data; boundary=XyZ", &limits);
            assert_eq!(r.error, None, "n={n}");
            assert_eq!(r.files.len(), 1, "n={n}");
            assert_eq!(r.files[0].size, n as u64 + 3, "n={n}");
            assert_eq!(r.files[0].content.len(), n + 1, "n={n}");
        }
    }
}
