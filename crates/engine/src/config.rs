//! Engine settings gathered from the configuration's directives (`SecRuleEngine`,
//! body access and limits, audit log settings, ...), with ModSecurity v3's defaults.

use seclang::{Directive, Setting, SettingValue};

/// `SecRuleEngine` (and `ctl:ruleEngine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum EngineMode {
    /// Rules run and disruptive actions are applied.
    On,
    /// Rules run and are logged; nothing is blocked.
    DetectionOnly,
    /// Rules do not run.
    Off,
}

impl EngineMode {
    /// Parses `On`, `Off` or `DetectionOnly` (any case).
    pub fn parse(s: &str) -> Option<EngineMode> {
        match s.to_ascii_lowercase().as_str() {
            "on" => Some(EngineMode::On),
            "off" => Some(EngineMode::Off),
            "detectiononly" => Some(EngineMode::DetectionOnly),
            _ => None,
        }
    }
}

/// What to do when a body exceeds its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitAction {
    /// Reject the transaction (413 for requests in the proxy, 403 in ModSecurity).
    Reject,
    /// Inspect the part within the limit and let the rest through.
    ProcessPartial,
}

/// `SecAuditEngine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditEngine {
    /// Every transaction is recorded.
    On,
    /// No transaction is recorded.
    Off,
    /// Transactions with a logged rule match or a relevant status are recorded.
    RelevantOnly,
}

/// Settings of a program.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// `SecRuleEngine` (default DetectionOnly, as ModSecurity).
    pub rule_engine: EngineMode,
    /// `SecRequestBodyAccess` (default Off).
    pub request_body_access: bool,
    /// `SecRequestBodyLimit` (default 13107200).
    pub request_body_limit: u64,
    /// `SecRequestBodyNoFilesLimit` (default 1048576).
    pub request_body_no_files_limit: u64,
    /// `SecRequestBodyInMemoryLimit` (default 131072).
    pub request_body_in_memory_limit: u64,
    /// `SecRequestBodyLimitAction` (default Reject).
    pub request_body_limit_action: LimitAction,
    /// `SecRequestBodyJsonDepthLimit` (default 10000).
    pub json_depth_limit: u64,
    /// `SecArgumentsLimit` (default 1000).
    pub arguments_limit: u64,
    /// `SecResponseBodyAccess` (default Off).
    pub response_body_access: bool,
    /// `SecResponseBodyLimit` (default 524288).
    pub response_body_limit: u64,
    /// `SecResponseBodyLimitAction` (default Reject).
    pub response_body_limit_action: LimitAction,
    /// `SecResponseBodyMimeType` (default text/plain text/html).
    pub response_body_mime_types: Vec<String>,
    /// `SecArgumentSeparator` (default `&`).
    pub argument_separator: u8,
    /// `SecCookieFormat` (0 or 1).
    pub cookie_format: u8,
    /// `SecCollectionTimeout` in seconds (default 3600).
    pub collection_timeout: u64,
    /// `SecComponentSignature`s.
    pub component_signatures: Vec<String>,
    /// `SecAuditEngine` (default Off).
    pub audit_engine: AuditEngine,
    /// `SecAuditLog`.
    pub audit_log: Option<String>,
    /// `SecAuditLogParts` (default ABIJDEFHZ).
    pub audit_log_parts: String,
    /// `SecAuditLogRelevantStatus` (a regex).
    pub audit_log_relevant_status: Option<String>,
    /// `SecAuditLogFormat` is JSON.
    pub audit_log_json: bool,
    /// `SecPcreMatchLimit` (default 1000... as v3's default of 3000).
    pub pcre_match_limit: u64,
    /// `SecWebAppId` (default `default`).
    pub web_app_id: String,
    /// `SecGeoLookupDb`.
    pub geo_lookup_db: Option<String>,
    /// `SecXmlExternalEntity` (always treated as Off: entities are never resolved).
    pub xml_external_entity: bool,
    /// `SecUnicodeMapFile` code page, if set.
    pub unicode_code_page: Option<u64>,
    /// `SecDebugLogLevel`.
    pub debug_log_level: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            rule_engine: EngineMode::DetectionOnly,
            request_body_access: false,
            request_body_limit: 13_107_200,
            request_body_no_files_limit: 1_048_576,
            request_body_in_memory_limit: 131_072,
            request_body_limit_action: LimitAction::Reject,
            json_depth_limit: 10_000,
            arguments_limit: 1000,
            response_body_access: false,
            response_body_limit: 524_288,
            response_body_limit_action: LimitAction::Reject,
            response_body_mime_types: vec!["text/plain".into(), "text/html".into()],
            argument_separator: b'&',
            cookie_format: 0,
            collection_timeout: 3600,
            component_signatures: Vec::new(),
            audit_engine: AuditEngine::Off,
            audit_log: None,
            audit_log_parts: "ABIJDEFHZ".into(),
            audit_log_relevant_status: None,
            audit_log_json: false,
            pcre_match_limit: 3000,
            web_app_id: "default".into(),
            geo_lookup_db: None,
            xml_external_entity: false,
            unicode_code_page: None,
            debug_log_level: 0,
        }
    }
}

impl EngineConfig {
    /// Applies one directive, if it is a setting the engine uses.
    pub fn apply(&mut self, directive: &Directive) {
        let Directive::Setting(Setting { name, value }) = directive else {
            return;
        };
        let flag = matches!(value, SettingValue::Flag(true));
        let num = match value {
            SettingValue::Number(n) => Some(*n),
            _ => None,
        };
        let word = match value {
            SettingValue::Word(w) => Some(*w),
            _ => None,
        };
        let text = match value {
            SettingValue::Text(t) => Some(t.as_str()),
            _ => None,
        };
        let limit_action = |w: Option<&str>| {
            if w == Some("ProcessPartial") {
                LimitAction::ProcessPartial
            } else {
                LimitAction::Reject
            }
        };
        match *name {
            "SecRuleEngine" => {
                self.rule_engine = word.and_then(EngineMode::parse).unwrap_or(self.rule_engine)
            }
            "SecRequestBodyAccess" => self.request_body_access = flag,
            "SecRequestBodyLimit" => {
                self.request_body_limit = num.unwrap_or(self.request_body_limit)
            }
            "SecRequestBodyNoFilesLimit" => {
                self.request_body_no_files_limit = num.unwrap_or(self.request_body_no_files_limit)
            }
            "SecRequestBodyInMemoryLimit" => {
                self.request_body_in_memory_limit = num.unwrap_or(self.request_body_in_memory_limit)
            }
            "SecRequestBodyLimitAction" => self.request_body_limit_action = limit_action(word),
            "SecRequestBodyJsonDepthLimit" => {
                self.json_depth_limit = num.unwrap_or(self.json_depth_limit)
            }
            "SecArgumentsLimit" => self.arguments_limit = num.unwrap_or(self.arguments_limit),
            "SecResponseBodyAccess" => self.response_body_access = flag,
            "SecResponseBodyLimit" => {
                self.response_body_limit = num.unwrap_or(self.response_body_limit)
            }
            "SecResponseBodyLimitAction" => self.response_body_limit_action = limit_action(word),
            "SecResponseBodyMimeType" => {
                if let SettingValue::List(l) = value {
                    for t in l {
                        for m in t.split_whitespace() {
                            let m = m.to_ascii_lowercase();
                            if !self.response_body_mime_types.contains(&m) {
                                self.response_body_mime_types.push(m);
                            }
                        }
                    }
                }
            }
            "SecResponseBodyMimeTypesClear" => self.response_body_mime_types.clear(),
            "SecArgumentSeparator" => {
                if let Some(&b) = text.and_then(|t| t.as_bytes().first()) {
                    self.argument_separator = b;
                }
            }
            "SecCookieFormat" => self.cookie_format = u8::from(word == Some("1")),
            "SecCollectionTimeout" => {
                self.collection_timeout = num.unwrap_or(self.collection_timeout)
            }
            "SecComponentSignature" => {
                if let Some(t) = text {
                    self.component_signatures.push(t.to_string());
                }
            }
            "SecAuditEngine" => {
                self.audit_engine = match word {
                    Some("On") => AuditEngine::On,
                    Some("RelevantOnly") => AuditEngine::RelevantOnly,
                    _ => AuditEngine::Off,
                }
            }
            "SecAuditLog" => self.audit_log = text.map(str::to_string),
            "SecAuditLogParts" => {
                if let Some(t) = text {
                    self.audit_log_parts = t.to_string();
                }
            }
            "SecAuditLogRelevantStatus" => {
                self.audit_log_relevant_status = text.map(str::to_string)
            }
            "SecAuditLogFormat" => self.audit_log_json = word == Some("JSON"),
            "SecPcreMatchLimit" => self.pcre_match_limit = num.unwrap_or(self.pcre_match_limit),
            "SecWebAppId" => {
                if let Some(t) = text {
                    self.web_app_id = t.to_string();
                }
            }
            "SecGeoLookupDb" => self.geo_lookup_db = text.map(str::to_string),
            "SecXmlExternalEntity" => self.xml_external_entity = flag,
            "SecUnicodeCodePage" => self.unicode_code_page = num,
            "SecDebugLogLevel" => self.debug_log_level = num.unwrap_or(0),
            _ => {}
        }
    }
}
