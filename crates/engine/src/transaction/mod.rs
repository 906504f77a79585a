//! A transaction: one HTTP request/response pair evaluated against a [`Program`]
//! through the SecLang phases:
//!
//! 1. connection, request line and headers (`process_request_headers`),
//! 2. request body (`append_request_body` in chunks, then `process_request_body`),
//! 3. response headers, 4. response body, 5. logging.
//!
//! After each phase an [`Intervention`] may be pending. The transaction owns its
//! copies of request data in an arena (see [`data`]); derived collections are built
//! once, values transformed at most once per chain (see [`memo`]).

mod classes;
pub mod data;
mod early_exit;
mod geo;
mod groups;
mod lean;
mod learn;
mod matched;
pub mod memo;
mod phase;
pub(crate) use phase::parse_int;
mod pool;
mod records;
mod resolve;
mod stops;
mod targets;
mod tracked;

pub(crate) use resolve::{is_scalar, is_stored};
pub(crate) use targets::request_data_only;

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::audit::MatchedRule;
use crate::body::{self, Arg};
use crate::collection::{Collection, CollectionStore};
use crate::config::{AuditEngine, LimitAction};
use crate::program::Program;
use crate::rule::Exclusion;
use crate::variable::Var;
use crate::EngineMode;

use data::Data;

/// What the engine decided to do with a transaction.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Intervention {
    /// Answer with this status (deny).
    Deny {
        /// HTTP status.
        status: u16,
        /// The rule that decided, if any.
        rule_id: Option<u32>,
    },
    /// Close the connection without an answer.
    Drop {
        /// The rule that decided.
        rule_id: Option<u32>,
    },
    /// Redirect the client.
    Redirect {
        /// 301, 302, 303 or 307.
        status: u16,
        /// Where to.
        location: String,
        /// The rule that decided.
        rule_id: Option<u32>,
    },
}

impl Intervention {
    /// The HTTP status the client gets (0 for drop).
    pub fn status(&self) -> u16 {
        match self {
            Intervention::Deny { status, .. } | Intervention::Redirect { status, .. } => *status,
            Intervention::Drop { .. } => 0,
        }
    }
}

/// Connection facts for a transaction. The addresses may be borrowed: a
/// transaction copies them into its own data as it starts, so a server need not
/// build a string per request.
#[derive(Debug, Clone)]
pub struct Connection<'a> {
    /// Client address (REMOTE_ADDR).
    pub client_ip: Cow<'a, str>,
    /// Client port.
    pub client_port: u16,
    /// Server address (SERVER_ADDR).
    pub server_ip: Cow<'a, str>,
    /// Server port.
    pub server_port: u16,
}

impl Default for Connection<'_> {
    fn default() -> Self {
        Connection {
            client_ip: Cow::Borrowed("127.0.0.1"),
            client_port: 40000,
            server_ip: Cow::Borrowed("127.0.0.1"),
            server_port: 80,
        }
    }
}

/// Result of feeding request or response body bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyStatus {
    /// Keep going.
    Continue,
    /// The limit was reached; the rest is not inspected (ProcessPartial).
    Partial,
    /// The limit was reached and the transaction must be rejected.
    Reject,
}

/// A value the audit log must mask (`sanitise*` actions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sanitise {
    /// `sanitiseArg:name`.
    Arg(String),
    /// `sanitiseMatched` (the matched variable, as `ARGS:name`).
    Matched(String),
    /// `sanitiseRequestHeader:name`.
    RequestHeader(String),
    /// `sanitiseResponseHeader:name`.
    ResponseHeader(String),
}

/// Scope of an `allow` in effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Allowed {
    None,
    All,
    Request,
    Phase(u8),
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// Mutable state written by rules.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub tx: Collection,
    pub persistent: Vec<(Var, String, Collection)>,
    pub env: Collection,
    pub geo: Collection,
    /// MATCHED_VARS of the current rule (and chain); the last is MATCHED_VAR.
    pub matched_vars: matched::MatchedVars,
    pub removed_ids: Vec<seclang::IdRange>,
    pub removed_tags: Vec<crate::rule::TagSelector>,
    pub removed_msgs: Vec<Arc<regex::bytes::Regex>>,
    pub removed_targets_by_id: Vec<(Vec<seclang::IdRange>, Exclusion)>,
    pub removed_targets_by_tag: Vec<(crate::rule::TagSelector, Exclusion)>,
    pub removed_targets_by_msg: Vec<(Arc<regex::bytes::Regex>, Exclusion)>,
    pub highest_severity: Option<u8>,
    pub sanitised: Vec<Sanitise>,
    pub session_id: Option<String>,
    pub user_id: Option<String>,
}

/// One HTTP transaction.
#[derive(Debug)]
pub struct Transaction {
    program: Arc<Program>,
    store: Option<Arc<dyn CollectionStore>>,
    pub(crate) data: Data,
    pub(crate) state: State,
    /// The pooled TX kept for the prologue to restore (see
    /// [`crate::collection::Collection::restore_from`]); empty otherwise.
    pub(crate) tx_base: Collection,
    pub(crate) matched: records::Records,
    mode: EngineMode,
    intervention: Option<Intervention>,
    allowed: Allowed,
    request_body: Vec<u8>,
    /// FULL_REQUEST's parts once the request body was processed (the number of
    /// request headers and of body bytes then): it is composed only when read
    /// (see `resolve.rs` `dynamic_scalar`).
    full_request: Option<(usize, usize)>,
    request_body_truncated: bool,
    /// The response body received so far, until phase 4 moves it into the
    /// arena's RESPONSE_BODY slot (see `response_body_in_arena`).
    response_body: Vec<u8>,
    /// Phase 4 moved the response body into the arena (a buffer swap, not a
    /// copy): `response_body` is then an empty buffer, and
    /// [`Transaction::response_body`] reads the arena.
    response_body_in_arena: bool,
    body_processor: Option<String>,
    request_body_access: Option<bool>,
    response_body_access: Option<bool>,
    request_body_limit: Option<u64>,
    response_body_limit: Option<u64>,
    audit_engine: Option<AuditEngine>,
    audit_parts: Option<String>,
    force_request_body_variable: bool,
    pub(crate) xml: Option<body::xml::XmlDoc>,
    /// The XPath values of `xml`, each expression evaluated once.
    pub(crate) xpath_values: body::xml::XPathValues,
    /// The XML body processor ran and refused the body (`xml` is then `None`).
    pub(crate) xml_failed: bool,
    unique_id: String,
    started: Instant,
    phases_done: u8,
    pub(crate) profile: Option<Box<crate::profile::Profile>>,
    /// The caches and scratch space of a running phase (the transformation memo,
    /// target lists, class and group unions, work lists): a set from the pool
    /// while a phase runs, an empty stand-in in between (see [`pool`]).
    pub(crate) work: Box<pool::WorkSet>,
    /// This transaction's number among those of the process (from 1), the owner
    /// of the work sets it holds (see [`pool`]).
    serial: u64,
    /// `work` holds a set from the pool.
    holds_work: bool,
}

impl Transaction {
    /// A transaction over `program`, for a client connection.
    pub fn new(program: Arc<Program>, conn: &Connection) -> Self {
        Self::with_store(program, conn, None)
    }

    /// A transaction whose persistent collections live in `store`.
    pub fn with_store(
        program: Arc<Program>,
        conn: &Connection,
        store: Option<Arc<dyn CollectionStore>>,
    ) -> Self {
        let n = UNIQUE.fetch_add(1, Ordering::Relaxed);
        let unique_id = unique_id(crate::collection::now_unix(), n);
        let mode = program.config.rule_engine;
        let b = pool::take();
        // A TX restored from a prologue before waits to be restored again (TX
        // starts empty until the prologue's state is taken); another is empty.
        let (tx, tx_base) = if b.tx.has_baseline() {
            (Collection::default(), b.tx)
        } else {
            (b.tx, Collection::default())
        };
        let mut t = Transaction {
            program,
            store,
            data: b.data,
            state: State {
                tx,
                matched_vars: b.matched_vars,
                ..State::default()
            },
            tx_base,
            matched: records::Records::default(),
            mode,
            intervention: None,
            allowed: Allowed::None,
            request_body: Vec::new(),
            full_request: None,
            request_body_truncated: false,
            response_body: Vec::new(),
            response_body_in_arena: false,
            body_processor: None,
            request_body_access: None,
            response_body_access: None,
            request_body_limit: None,
            response_body_limit: None,
            audit_engine: None,
            audit_parts: None,
            force_request_body_variable: false,
            xml: None,
            xpath_values: Default::default(),
            xml_failed: false,
            unique_id,
            started: Instant::now(),
            phases_done: 0,
            profile: None,
            work: pool::stand_in(),
            serial: n + 1,
            holds_work: false,
        };
        // The ports in decimal, from a stack buffer (no allocation).
        let mut digits = [0; 20];
        t.data.set(Var::RemoteAddr, conn.client_ip.as_bytes());
        let port = phase::format_int(i64::from(conn.client_port), &mut digits);
        t.data.set(Var::RemotePort, port);
        t.data.set(Var::ServerAddr, conn.server_ip.as_bytes());
        let port = phase::format_int(i64::from(conn.server_port), &mut digits);
        t.data.set(Var::ServerPort, port);
        t.data.set(Var::UniqueId, t.unique_id.as_bytes());
        t.data.set(Var::UseragentIp, conn.client_ip.as_bytes());
        t.data
            .set(Var::WebAppId, t.program.config.web_app_id.as_bytes());
        t.data.set(Var::ModsecBuild, b"030014100");
        t
    }

    /// Records the cost of every rule this transaction evaluates (see
    /// [`crate::profile`]); call before the first phase.
    pub fn enable_profile(&mut self) {
        let mut p = crate::profile::Profile::new(self.program.rules.len());
        p.transactions = 1;
        self.profile = Some(Box::new(p));
    }

    /// The rule cost profile, when enabled.
    pub fn profile(&self) -> Option<&crate::profile::Profile> {
        self.profile.as_deref()
    }

    /// The program this transaction runs.
    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }

    /// The engine mode in effect (changed by `ctl:ruleEngine`).
    pub fn mode(&self) -> EngineMode {
        self.mode
    }

    /// The transaction's unique id.
    pub fn unique_id(&self) -> &str {
        &self.unique_id
    }

    /// The pending intervention, if any.
    pub fn intervention(&self) -> Option<&Intervention> {
        self.intervention.as_ref()
    }

    /// Rules that matched and are logged, in order. The messages of rules that
    /// compose them late (see [`crate::deferred_log`]) are expanded at the first
    /// call after a change.
    pub fn matched_rules(&self) -> &[MatchedRule] {
        self.matched.view(|idx, m| {
            if let Some(rule) = self.program.rules.get(idx as usize) {
                (m.msg, m.data) = self.record_messages(rule);
            }
        })
    }

    /// The value of a TX variable (for tests and tools).
    pub fn tx(&self, key: &str) -> Option<&[u8]> {
        self.state.tx.get(key)
    }

    /// All TX variables.
    pub fn tx_collection(&self) -> &Collection {
        &self.state.tx
    }

    /// The request URI as given (REQUEST_URI_RAW, which `process_uri` set from
    /// a `&str`; empty before it).
    pub fn uri(&self) -> &str {
        self.data
            .first(Var::RequestUriRaw)
            .and_then(|u| std::str::from_utf8(u).ok())
            .unwrap_or_default()
    }

    /// The request body as received (within the limit).
    pub fn request_body(&self) -> &[u8] {
        &self.request_body
    }

    /// The response body as inspected (within the limit).
    pub fn response_body(&self) -> &[u8] {
        match self.data.response_body_slot() {
            Some(slot) if self.response_body_in_arena => &self.data.entry(slot).value,
            _ => &self.response_body,
        }
    }

    /// The response body's buffer for more bytes: after phase 4 moved it into
    /// the arena, a copy of it (the arena keeps RESPONSE_BODY as phase 4 saw it).
    fn response_body_buf(&mut self) -> &mut Vec<u8> {
        if std::mem::take(&mut self.response_body_in_arena) {
            if let Some(slot) = self.data.response_body_slot() {
                let body = &self.data.entry(slot).value;
                self.response_body.clear();
                self.response_body.extend_from_slice(body);
            }
        }
        &mut self.response_body
    }

    /// The (key, value) pairs of a stored variable (headers, arguments, ...).
    pub fn values(&self, var: Var) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.data.slots(var).iter().map(move |&s| {
            let e = self.data.entry(s);
            (e.key.as_slice(), e.value.as_slice())
        })
    }

    /// The first value of a stored variable.
    pub fn first(&self, var: Var) -> Option<&[u8]> {
        self.data.first(var)
    }

    /// Values the audit log masks.
    pub fn sanitised(&self) -> Vec<Sanitise> {
        self.state.sanitised.clone()
    }

    /// The audit record in ModSecurity's JSON format.
    pub fn audit_json(&self) -> String {
        crate::audit_json::render(self)
    }

    /// Sets the request line (before phase 1).
    pub fn process_uri(&mut self, uri: &str, method: &str, http_version: &str) {
        // Every leading "HTTP/" removed (as `trim_start_matches`, without its
        // substring searcher).
        let mut version = http_version;
        while let Some(v) = version.strip_prefix("HTTP/") {
            version = v;
        }
        let version = version.as_bytes();
        let (method, uri_bytes) = (method.as_bytes(), uri.as_bytes());
        self.data.set_concat(
            Var::RequestLine,
            &[method, b" ", uri_bytes, b" HTTP/", version],
        );
        self.data.set(Var::RequestMethod, method);
        self.data
            .set_concat(Var::RequestProtocol, &[b"HTTP/", version]);
        let decoded = uri_decode(uri.as_bytes());
        let (path_decoded, _) = split_query(&decoded);
        let (_, raw_query) = split_query(uri.as_bytes());
        if let Some(q) = raw_query {
            self.data.set(Var::QueryString, q);
            let separator = self.program.config.argument_separator;
            let add = self.arg_adder(Var::ArgsGet, Var::ArgsGetNames);
            body::urlencoded::for_each_urlencoded(q, separator, add);
        } else {
            self.data.set(Var::QueryString, b"");
        }
        self.data.set(Var::PathInfo, path_decoded);
        self.data.set(Var::RequestFilename, path_decoded);
        if let Some(pos) = path_decoded.iter().rposition(|&b| b == b'/' || b == b'\\') {
            if pos + 1 < path_decoded.len() {
                self.data
                    .set(Var::RequestBasename, &path_decoded[pos + 1..]);
            }
        }
        let parsed = strip_scheme_host(&decoded);
        self.data.set(Var::RequestUri, parsed);
        self.data.set(Var::RequestUriRaw, uri.as_bytes());
    }

    /// Adds arguments, at most `SecArgumentsLimit` in ARGS (as libmodsecurity v3's
    /// `addArgument`, further ones are skipped; the CRS base configuration denies
    /// requests that reach the limit).
    fn add_args(&mut self, args: &[Arg], var: Var, names: Var) {
        let mut add = self.arg_adder(var, names);
        for a in args {
            add(&a.name, &a.value);
        }
    }

    /// Adds one argument (name, value) per call, as [`Transaction::add_args`]
    /// does, for parsers that hand arguments out one by one.
    fn arg_adder(&mut self, var: Var, names: Var) -> impl FnMut(&[u8], &[u8]) + '_ {
        let mut room = self.args_room();
        let data = &mut self.data;
        move |name, value| {
            if room > 0 {
                room -= 1;
                data.push(var, name, value);
                data.push(names, name, name);
            }
        }
    }

    /// How many more arguments ARGS may hold.
    fn args_room(&self) -> usize {
        let have = self.data.slots(Var::ArgsGet).len() + self.data.slots(Var::ArgsPost).len();
        usize::try_from(self.program.config.arguments_limit)
            .unwrap_or(usize::MAX)
            .saturating_sub(have)
    }

    /// Adds a request header (before phase 1).
    pub fn add_request_header(&mut self, name: &[u8], value: &[u8]) {
        self.data.push(Var::RequestHeaders, name, value);
        self.data.push(Var::RequestHeadersNames, name, name);
        if name.eq_ignore_ascii_case(b"cookie") {
            let data = &mut self.data;
            body::cookies::for_each_cookie(value, |name, value| {
                data.push(Var::RequestCookies, name, value);
                data.push(Var::RequestCookiesNames, name, name);
            });
        } else if name.eq_ignore_ascii_case(b"authorization") {
            let kind = value.split(|&b| b == b' ').next().unwrap_or_default();
            self.data.set(Var::AuthType, kind);
        } else if name.eq_ignore_ascii_case(b"host") {
            let host = value.split(|&b| b == b':').next().unwrap_or_default();
            self.data.set(Var::ServerName, host);
        } else if name.eq_ignore_ascii_case(b"content-type") {
            let l = value.to_ascii_lowercase();
            if l.starts_with(b"multipart/form-data") {
                self.data.set(Var::ReqbodyProcessor, b"MULTIPART");
            } else if l.starts_with(b"application/x-www-form-urlencoded") {
                self.data.set(Var::ReqbodyProcessor, b"URLENCODED");
            }
        }
    }

    fn header(&self, var: Var, name: &[u8]) -> Option<&[u8]> {
        self.data
            .slots(var)
            .iter()
            .map(|&s| self.data.entry(s))
            .find(|e| e.key.eq_ignore_ascii_case(name))
            .map(|e| e.value.as_slice())
    }

    fn active(&self) -> bool {
        self.mode != EngineMode::Off
    }

    /// Phase 1: evaluates the request-headers rules.
    pub fn process_request_headers(&mut self) -> Option<&Intervention> {
        self.run(1);
        self.intervention.as_ref()
    }

    /// Feeds request body bytes (in order). Bytes beyond the limit are not kept.
    pub fn append_request_body(&mut self, chunk: &[u8]) -> BodyStatus {
        let mut limit = self
            .request_body_limit
            .unwrap_or(self.program.config.request_body_limit);
        // SecRequestBodyNoFilesLimit: a body without file uploads (anything but
        // multipart) is held to the smaller limit.
        let multipart = self.body_processor.as_deref() == Some("MULTIPART")
            || (self.body_processor.is_none()
                && self.data.first(Var::ReqbodyProcessor) == Some(&b"MULTIPART"[..]));
        let no_files = self.program.config.request_body_no_files_limit;
        if !multipart && no_files > 0 && (limit == 0 || no_files < limit) {
            limit = no_files;
        }
        let current = self.request_body.len() as u64;
        if limit > 0 && current + chunk.len() as u64 > limit {
            self.data.set(Var::InboundDataError, b"1");
            self.request_body_truncated = true;
            let room = limit.saturating_sub(current) as usize;
            self.request_body
                .extend_from_slice(&chunk[..room.min(chunk.len())]);
            return match self.program.config.request_body_limit_action {
                LimitAction::ProcessPartial => BodyStatus::Partial,
                LimitAction::Reject => {
                    if self.mode == EngineMode::On {
                        self.intervention.get_or_insert(Intervention::Deny {
                            status: 413,
                            rule_id: None,
                        });
                    }
                    BodyStatus::Reject
                }
            };
        }
        self.request_body.extend_from_slice(chunk);
        BodyStatus::Continue
    }

    /// Phase 2: parses the request body with its processor and evaluates the
    /// request-body rules.
    pub fn process_request_body(&mut self) -> Option<&Intervention> {
        if !self.active() {
            return self.intervention.as_ref();
        }
        if !self.data.has(Var::InboundDataError) {
            self.data.set(Var::InboundDataError, b"0");
        }
        let access = self
            .request_body_access
            .unwrap_or(self.program.config.request_body_access);
        if access {
            self.parse_request_body();
        }
        self.run(2);
        self.intervention.as_ref()
    }

    fn parse_request_body(&mut self) {
        let body = std::mem::take(&mut self.request_body);
        let processor = self.body_processor.clone().or_else(|| {
            self.data
                .first(Var::ReqbodyProcessor)
                .map(|p| String::from_utf8_lossy(p).into_owned())
        });
        let mut error: Option<String> = None;
        match processor.as_deref() {
            Some("URLENCODED") => {
                let separator = self.program.config.argument_separator;
                let add = self.arg_adder(Var::ArgsPost, Var::ArgsPostNames);
                body::urlencoded::for_each_urlencoded(&body, separator, add);
            }
            Some("MULTIPART") => {
                let ct = self
                    .header(Var::RequestHeaders, b"content-type")
                    .unwrap_or_default()
                    .to_vec();
                let limits = body::multipart::MultipartLimits::default();
                let result = body::multipart::parse_multipart(&body, &ct, &limits);
                self.apply_multipart(&result);
                error = result
                    .error
                    .clone()
                    .map(|e| format!("Multipart parsing error: {e}"));
            }
            Some("JSON") => {
                let depth = self.program.config.json_depth_limit as usize;
                let max = self.args_room();
                // Each argument goes into the arena as it is parsed.
                let add = self.arg_adder(Var::ArgsPost, Var::ArgsPostNames);
                if let Err(e) = body::json::for_each_json_arg(&body, depth, max, add) {
                    if !body.is_empty() {
                        error = Some(format!("JSON parsing error: {e}"));
                    }
                }
            }
            Some("XML") => {
                // The document is request data outside the arena: prefilter group
                // unions computed before it existed no longer hold.
                self.data.touch();
                match body::xml::parse_xml(&body) {
                    Ok(doc) => {
                        self.xpath_values.clear();
                        self.xml = Some(doc);
                    }
                    Err(e) => {
                        self.xml_failed = true;
                        error = Some(format!("XML parsing error: {e}"));
                    }
                }
            }
            Some(other) if !other.is_empty() && self.body_processor.is_some() => {
                error = Some(format!("Unknown request body processor: {other}"));
            }
            _ => {}
        }
        match &error {
            Some(msg) => {
                self.data.set(Var::ReqbodyError, b"1");
                self.data.set(Var::ReqbodyProcessorError, b"1");
                self.data.set(Var::ReqbodyErrorMsg, msg.as_bytes());
                self.data.set(Var::ReqbodyProcessorErrorMsg, msg.as_bytes());
            }
            None => {
                self.data.set(Var::ReqbodyError, b"0");
                self.data.set(Var::ReqbodyProcessorError, b"0");
            }
        }
        // FULL_REQUEST (and its length): the headers and body as they are now,
        // composed when a rule or macro reads them (CRS does not).
        self.full_request = Some((self.data.slots(Var::RequestHeaders).len(), body.len()));
        // REQUEST_BODY holds the raw body, except when the XML processor parsed it
        // (as ModSecurity v2 and Coraza; libmodsecurity v3 also fills it then, which
        // makes CRS match XML element names — see docs/ARCHITECTURE.md).
        let xml = processor.as_deref() == Some("XML");
        if (!body.is_empty() && !xml) || self.force_request_body_variable {
            self.data.set(Var::RequestBody, &body);
            self.data
                .set(Var::RequestBodyLength, body.len().to_string().as_bytes());
        }
        self.request_body = body;
    }

    fn apply_multipart(&mut self, r: &body::multipart::MultipartResult) {
        self.add_args(&r.args, Var::ArgsPost, Var::ArgsPostNames);
        let mut combined = 0u64;
        for f in &r.files {
            self.data.push(Var::Files, &f.field_name, &f.filename);
            self.data
                .push(Var::FilesNames, &f.field_name, &f.field_name);
            self.data.push(
                Var::FilesSizes,
                &f.field_name,
                f.size.to_string().as_bytes(),
            );
            self.data
                .push(Var::FilesTmpContent, &f.field_name, &f.content);
            self.data.push(Var::FilesTmpNames, &f.field_name, b"");
            combined += f.size;
        }
        self.data
            .set(Var::FilesCombinedSize, combined.to_string().as_bytes());
        for (name, line) in &r.part_headers {
            self.data.push(Var::MultipartPartHeaders, name, line);
        }
        let flags = &r.flags;
        let flag = |b: bool| if b { &b"1"[..] } else { &b"0"[..] };
        self.data
            .set(Var::MultipartBoundaryQuoted, flag(flags.boundary_quoted));
        self.data.set(
            Var::MultipartBoundaryWhitespace,
            flag(flags.boundary_whitespace),
        );
        self.data
            .set(Var::MultipartDataBefore, flag(flags.data_before));
        self.data
            .set(Var::MultipartDataAfter, flag(flags.data_after));
        self.data
            .set(Var::MultipartHeaderFolding, flag(flags.header_folding));
        self.data.set(Var::MultipartLfLine, flag(flags.lf_line));
        self.data
            .set(Var::MultipartCrlfLfLines, flag(flags.crlf_lf_lines));
        self.data.set(
            Var::MultipartMissingSemicolon,
            flag(flags.missing_semicolon),
        );
        self.data.set(
            Var::MultipartSemicolonMissing,
            flag(flags.missing_semicolon),
        );
        self.data
            .set(Var::MultipartInvalidQuoting, flag(flags.invalid_quoting));
        self.data
            .set(Var::MultipartInvalidPart, flag(flags.invalid_part));
        self.data.set(
            Var::MultipartInvalidHeaderFolding,
            flag(flags.invalid_header_folding),
        );
        self.data.set(
            Var::MultipartFileLimitExceeded,
            flag(flags.file_limit_exceeded),
        );
        self.data.set(
            Var::MultipartUnmatchedBoundary,
            flag(flags.unmatched_boundary),
        );
        self.data
            .set(Var::MultipartStrictError, flag(r.strict_error()));
        if let Some(f) = &r.filename {
            self.data.set(Var::MultipartFilename, f);
        }
        if let Some(n) = &r.name {
            self.data.set(Var::MultipartName, n);
        }
    }

    /// Adds a response header (before phase 3).
    pub fn add_response_header(&mut self, name: &[u8], value: &[u8]) {
        self.data.push(Var::ResponseHeaders, name, value);
        self.data.push(Var::ResponseHeadersNames, name, name);
        if name.eq_ignore_ascii_case(b"content-type") {
            let ct = value.split(|&b| b == b';').next().unwrap_or_default();
            self.data.set(Var::ResponseContentType, ct);
        }
    }

    /// Phase 3: evaluates the response-headers rules.
    pub fn process_response_headers(
        &mut self,
        status: u16,
        protocol: &str,
    ) -> Option<&Intervention> {
        let mut digits = [0u8; 20];
        let code = phase::format_int(i64::from(status), &mut digits);
        self.data.set(Var::ResponseStatus, code);
        self.data.set(Var::Status, code);
        self.data.set(Var::ResponseProtocol, protocol.as_bytes());
        // Written into the arena slot: no buffer of the work set, which is a
        // stand-in here (one that gets a buffer is not kept: see `pool`).
        self.data
            .set_concat(Var::StatusLine, &[protocol.as_bytes(), b" ", code]);
        self.run(3);
        self.intervention.as_ref()
    }

    /// Whether the request body should be fed to the engine: request body access on
    /// (as in force after phase 1, `ctl:requestBodyAccess` included) and the engine
    /// active. A server streams the body past the engine otherwise.
    pub fn wants_request_body(&self) -> bool {
        self.active()
            && self
                .request_body_access
                .unwrap_or(self.program.config.request_body_access)
    }

    /// Whether the response body should be fed to the engine: response body access
    /// on (after `ctl:responseBodyAccess`), the engine active, and the response's
    /// MIME type among `SecResponseBodyMimeType`.
    pub fn wants_response_body(&self) -> bool {
        let access = self
            .response_body_access
            .unwrap_or(self.program.config.response_body_access);
        if !access || !self.active() {
            return false;
        }
        let types = &self.program.config.response_body_mime_types;
        match self.data.first(Var::ResponseContentType) {
            // An ASCII type, compared without building the lower-cased string
            // (`str::trim` removes only ASCII whitespace from ASCII text).
            Some(c) if c.is_ascii() => {
                let c = c.trim_ascii();
                types.iter().any(|t| {
                    t.len() == c.len()
                        && t.bytes().zip(c).all(|(a, &b)| a == b.to_ascii_lowercase())
                })
            }
            ct => {
                let ct = ct
                    .map(|c| String::from_utf8_lossy(c).trim().to_ascii_lowercase())
                    .unwrap_or_default();
                types.contains(&ct)
            }
        }
    }

    /// Feeds response body bytes.
    pub fn append_response_body(&mut self, chunk: &[u8]) -> BodyStatus {
        if !self.wants_response_body() {
            return BodyStatus::Continue;
        }
        let limit = self
            .response_body_limit
            .unwrap_or(self.program.config.response_body_limit);
        let current = self.response_body_buf().len() as u64;
        if limit > 0 && current + chunk.len() as u64 > limit {
            self.data.set(Var::OutboundDataError, b"1");
            let room = limit.saturating_sub(current) as usize;
            self.response_body
                .extend_from_slice(&chunk[..room.min(chunk.len())]);
            return match self.program.config.response_body_limit_action {
                LimitAction::ProcessPartial => BodyStatus::Partial,
                LimitAction::Reject => BodyStatus::Reject,
            };
        }
        self.response_body.extend_from_slice(chunk);
        BodyStatus::Continue
    }

    /// Phase 4: evaluates the response-body rules.
    pub fn process_response_body(&mut self) -> Option<&Intervention> {
        if self.wants_response_body() {
            if !self.data.has(Var::OutboundDataError) {
                self.data.set(Var::OutboundDataError, b"0");
            }
            // Moved into the arena, not copied (a second call takes it back
            // first).
            let len = self.response_body_buf().len();
            self.data
                .set_swapped(Var::ResponseBody, &mut self.response_body);
            self.response_body_in_arena = true;
            self.data
                .set(Var::ResponseContentLength, len.to_string().as_bytes());
        }
        self.run(4);
        self.intervention.as_ref()
    }

    /// Phase 5: evaluates the logging rules and stores persistent collections.
    pub fn process_logging(&mut self) {
        self.run(5);
        if let Some(store) = &self.store {
            let ttl = self.program.config.collection_timeout;
            for (var, key, record) in &self.state.persistent {
                store.store(&var.name().to_ascii_lowercase(), key, record, ttl);
            }
        }
    }

    /// Whether this transaction should be written to the audit log
    /// (`SecAuditEngine`, `ctl:auditEngine`, relevant status).
    pub fn audit_relevant(&self) -> bool {
        match self
            .audit_engine
            .unwrap_or(self.program.config.audit_engine)
        {
            AuditEngine::On => true,
            AuditEngine::Off => false,
            AuditEngine::RelevantOnly => {
                let status_relevant = match (
                    &self.program.relevant_status,
                    self.data.first(Var::ResponseStatus),
                ) {
                    (Some(re), Some(status)) => re.evaluate(status, None),
                    _ => false,
                };
                // Only matches that go to the audit log make a transaction relevant
                // (libmodsecurity's AuditLog::saveIfRelevant).
                status_relevant || self.matched.kept().iter().any(|m| m.auditlog)
            }
        }
    }

    /// The audit log parts in effect.
    pub fn audit_parts(&self) -> &str {
        self.audit_parts
            .as_deref()
            .unwrap_or(&self.program.config.audit_log_parts)
    }

    /// FULL_REQUEST as ModSecurity composes it (each header `name: value` and a
    /// newline, two newlines, the body), from the first `headers` request headers
    /// and `body` bytes of the request body; `None` before the request body was
    /// processed.
    pub(crate) fn full_request(&self) -> Option<Vec<u8>> {
        let (headers, body) = self.full_request?;
        let mut full = Vec::new();
        for &s in self.data.slots(Var::RequestHeaders).iter().take(headers) {
            let e = self.data.entry(s);
            full.extend_from_slice(&e.key);
            full.extend_from_slice(b": ");
            full.extend_from_slice(&e.value);
            full.push(b'\n');
        }
        full.extend_from_slice(b"\n\n");
        full.extend_from_slice(self.request_body.get(..body).unwrap_or(&self.request_body));
        Some(full)
    }

    /// Time since the transaction started, in microseconds.
    pub fn duration_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    /// Which phases have run (bit i = phase i+1).
    pub fn phases_done(&self) -> u8 {
        self.phases_done
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        // The result cache's statistics: the values this transaction missed.
        if self.program.options.value_cache && crate::value_cache::ResultCache::sampled() {
            self.program.caches.report(self.data.misses());
        }
        self.release_work(true);
        let tx = if !self.state.tx.has_baseline() && self.tx_base.has_baseline() {
            std::mem::take(&mut self.tx_base)
        } else {
            std::mem::take(&mut self.state.tx)
        };
        pool::give(pool::Buffers {
            // Left in its place: nothing (the transaction is going).
            data: std::mem::replace(&mut self.data, Data::spent()),
            tx,
            matched_vars: std::mem::take(&mut self.state.matched_vars),
        });
    }
}

impl Transaction {
    /// Takes a work set from the pool into `work`, for a phase (see
    /// [`pool`]): the one this transaction left, with its caches, when it is
    /// still there, else another, cleared.
    pub(crate) fn hold_work(&mut self) {
        if self.holds_work {
            return;
        }
        let mut w = pool::take_work(self.serial);
        if w.owner != self.serial {
            w.reset();
        }
        pool::give_stand_in(std::mem::replace(&mut self.work, w));
        self.holds_work = true;
    }

    /// Gives the transaction's work set (its transformation memo, target lists and
    /// unions: caches and scratch space) back to this thread's pool while the
    /// caller waits, for a request body for instance: requests in flight then hold
    /// only their data. The next phase takes a set again, this one with its caches
    /// if no other transaction took it meanwhile. Phase 2 does this by itself when
    /// it ends (a proxy waits for the upstream then).
    pub fn park(&mut self) {
        self.release_work(false);
    }

    /// Returns the work set to the pool (see [`pool`]): after phase 2, when a proxy
    /// waits for the upstream, and at the transaction's end (`last`). `work` is
    /// left an empty stand-in: should anything use it before the next
    /// [`hold_work`](Self::hold_work), it holds empty caches, which are correct.
    pub(crate) fn release_work(&mut self, last: bool) {
        if !self.holds_work {
            return;
        }
        self.holds_work = false;
        let mut w = std::mem::replace(&mut self.work, pool::stand_in());
        w.owner = self.serial;
        pool::give_work(w, last);
    }
}

/// UNIQUE_ID: the time in seconds and the transaction's number, in lower-case
/// hexadecimal (`format!("{:x}{:08x}")`, written without the formatting machinery,
/// which cost about 700 instructions a transaction).
fn unique_id(secs: u64, n: u64) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // Hex digits of `v`, at least `min`, most significant first, into `out`.
    fn push_hex(out: &mut String, v: u64, min: usize) {
        let mut buf = [b'0'; 16];
        let mut i = buf.len();
        let mut v = v;
        loop {
            i -= 1;
            buf[i] = HEX[(v & 0xf) as usize];
            v >>= 4;
            if v == 0 {
                break;
            }
        }
        let start = i.min(buf.len() - min);
        // ASCII digits: one checked copy, not one `char` push per digit (about
        // 100 instructions fewer per transaction).
        out.push_str(std::str::from_utf8(&buf[start..]).unwrap_or_default());
    }
    let mut s = String::with_capacity(24);
    push_hex(&mut s, secs, 1);
    push_hex(&mut s, n, 8);
    s
}

/// `%XX` decoding as ModSecurity applies to the URI (no `+` conversion; invalid
/// sequences kept).
pub fn uri_decode(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    // The bytes up to each `%` are copied as they are, in one piece.
    let mut rest = input;
    while let Some(p) = memchr::memchr(b'%', rest) {
        out.extend_from_slice(&rest[..p]);
        let escape = &rest[p..];
        let digit = |i: usize| escape.get(i).copied().and_then(hex);
        match (digit(1), digit(2)) {
            (Some(h), Some(l)) => {
                out.push(h << 4 | l);
                rest = escape.get(3..).unwrap_or_default();
            }
            // Not an escape: the `%` is kept.
            _ => {
                out.push(b'%');
                rest = escape.get(1..).unwrap_or_default();
            }
        }
    }
    out.extend_from_slice(rest);
    out
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn split_query(uri: &[u8]) -> (&[u8], Option<&[u8]>) {
    match uri.iter().position(|&b| b == b'?') {
        Some(p) => (&uri[..p], Some(&uri[p + 1..])),
        None => (uri, None),
    }
}

/// `http://host/path` -> `/path` (as ModSecurity does for REQUEST_URI).
fn strip_scheme_host(uri: &[u8]) -> &[u8] {
    if uri.first() == Some(&b'/') || uri.is_empty() {
        return uri;
    }
    let Some(colon) = uri.iter().position(|&b| b == b':') else {
        return uri;
    };
    if uri.get(colon + 1..colon + 3) != Some(b"//") {
        return uri;
    }
    match uri[colon + 3..].iter().position(|&b| b == b'/') {
        Some(p) => &uri[colon + 3 + p..],
        None => uri,
    }
}

#[cfg(test)]
mod tests {
    use super::phase::format_int;

    #[test]
    fn unique_ids_are_written_as_the_format_macro_writes_them() {
        for secs in [0u64, 1, 0xf, 0x10, 1_764_950_400, u64::MAX] {
            for n in [0u64, 1, 0xabc, 0xffff_ffff, 0x1_0000_0000, u64::MAX] {
                assert_eq!(super::unique_id(secs, n), format!("{secs:x}{n:08x}"));
            }
        }
    }

    /// `%XX` decoding byte by byte: what `uri_decode` must give.
    fn uri_decode_bytewise(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < input.len() {
            if input[i] == b'%' && i + 2 < input.len() {
                if let (Some(h), Some(l)) = (super::hex(input[i + 1]), super::hex(input[i + 2])) {
                    out.push(h << 4 | l);
                    i += 3;
                    continue;
                }
            }
            out.push(input[i]);
            i += 1;
        }
        out
    }

    #[test]
    fn uri_decoding_keeps_what_is_not_an_escape() {
        for (input, want) in [
            (&b"/a%20b"[..], &b"/a b"[..]),
            (b"%41%4a%4A", b"AJJ"),
            (b"%", b"%"),
            (b"%4", b"%4"),
            (b"x%4g%%41", b"x%4g%A"),
            (b"%%%", b"%%%"),
            (b"%e2%82%ac", "\u{20ac}".as_bytes()),
            (b"", b""),
        ] {
            assert_eq!(super::uri_decode(input), want, "{input:?}");
            assert_eq!(uri_decode_bytewise(input), want, "{input:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn uri_decoding_matches_the_bytewise_decoder(
            input in proptest::collection::vec(
                proptest::sample::select(&b"%%%0129aAfFgG/ \xff"[..]),
                0..40,
            )
        ) {
            proptest::prop_assert_eq!(super::uri_decode(&input), uri_decode_bytewise(&input));
        }
    }

    #[test]
    fn ports_are_written_in_decimal() {
        let mut buf = [0; 20];
        for n in [0u16, 7, 10, 80, 443, 8080, 10000, 65535] {
            assert_eq!(format_int(i64::from(n), &mut buf), n.to_string().as_bytes());
        }
    }
}
