//! The variables (targets) the engine knows, as an enum generated from one list that
//! mirrors `seclang::names::VARIABLES` (a test checks they agree).

macro_rules! variables {
    ($($v:ident => $n:literal),* $(,)?) => {
        /// A SecLang variable.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(missing_docs)] // each variant is the variable of the same name
        pub enum Var { $($v),* }

        impl Var {
            /// Every variable.
            pub const ALL: &'static [Var] = &[$(Var::$v),*];

            /// The canonical (upper-case) name.
            pub fn name(self) -> &'static str {
                match self { $(Var::$v => $n),* }
            }

            /// Looks a variable up by name, ignoring ASCII case.
            pub fn from_name(name: &str) -> Option<Var> {
                Var::ALL.iter().copied().find(|v| v.name().eq_ignore_ascii_case(name))
            }
        }
    };
}

variables! {
    Args => "ARGS",
    ArgsCombinedSize => "ARGS_COMBINED_SIZE",
    ArgsGet => "ARGS_GET",
    ArgsGetNames => "ARGS_GET_NAMES",
    ArgsNames => "ARGS_NAMES",
    ArgsPost => "ARGS_POST",
    ArgsPostNames => "ARGS_POST_NAMES",
    AuthType => "AUTH_TYPE",
    Duration => "DURATION",
    Env => "ENV",
    Files => "FILES",
    FilesCombinedSize => "FILES_COMBINED_SIZE",
    FilesNames => "FILES_NAMES",
    FilesSizes => "FILES_SIZES",
    FilesTmpNames => "FILES_TMPNAMES",
    FilesTmpContent => "FILES_TMP_CONTENT",
    FullRequest => "FULL_REQUEST",
    FullRequestLength => "FULL_REQUEST_LENGTH",
    Geo => "GEO",
    Global => "GLOBAL",
    HighestSeverity => "HIGHEST_SEVERITY",
    InboundDataError => "INBOUND_DATA_ERROR",
    Ip => "IP",
    MatchedVar => "MATCHED_VAR",
    MatchedVars => "MATCHED_VARS",
    MatchedVarsNames => "MATCHED_VARS_NAMES",
    MatchedVarName => "MATCHED_VAR_NAME",
    ModsecBuild => "MODSEC_BUILD",
    MscPcreLimitsExceeded => "MSC_PCRE_LIMITS_EXCEEDED",
    MultipartBoundaryQuoted => "MULTIPART_BOUNDARY_QUOTED",
    MultipartBoundaryWhitespace => "MULTIPART_BOUNDARY_WHITESPACE",
    MultipartCrlfLfLines => "MULTIPART_CRLF_LF_LINES",
    MultipartDataAfter => "MULTIPART_DATA_AFTER",
    MultipartDataBefore => "MULTIPART_DATA_BEFORE",
    MultipartFilename => "MULTIPART_FILENAME",
    MultipartFileLimitExceeded => "MULTIPART_FILE_LIMIT_EXCEEDED",
    MultipartHeaderFolding => "MULTIPART_HEADER_FOLDING",
    MultipartInvalidHeaderFolding => "MULTIPART_INVALID_HEADER_FOLDING",
    MultipartInvalidPart => "MULTIPART_INVALID_PART",
    MultipartInvalidQuoting => "MULTIPART_INVALID_QUOTING",
    MultipartLfLine => "MULTIPART_LF_LINE",
    MultipartMissingSemicolon => "MULTIPART_MISSING_SEMICOLON",
    MultipartName => "MULTIPART_NAME",
    MultipartPartHeaders => "MULTIPART_PART_HEADERS",
    MultipartSemicolonMissing => "MULTIPART_SEMICOLON_MISSING",
    MultipartStrictError => "MULTIPART_STRICT_ERROR",
    MultipartUnmatchedBoundary => "MULTIPART_UNMATCHED_BOUNDARY",
    OutboundDataError => "OUTBOUND_DATA_ERROR",
    PathInfo => "PATH_INFO",
    QueryString => "QUERY_STRING",
    RemoteAddr => "REMOTE_ADDR",
    RemoteHost => "REMOTE_HOST",
    RemotePort => "REMOTE_PORT",
    RemoteUser => "REMOTE_USER",
    ReqbodyError => "REQBODY_ERROR",
    ReqbodyErrorMsg => "REQBODY_ERROR_MSG",
    ReqbodyProcessor => "REQBODY_PROCESSOR",
    ReqbodyProcessorError => "REQBODY_PROCESSOR_ERROR",
    ReqbodyProcessorErrorMsg => "REQBODY_PROCESSOR_ERROR_MSG",
    RequestBasename => "REQUEST_BASENAME",
    RequestBody => "REQUEST_BODY",
    RequestBodyLength => "REQUEST_BODY_LENGTH",
    RequestCookies => "REQUEST_COOKIES",
    RequestCookiesNames => "REQUEST_COOKIES_NAMES",
    RequestFilename => "REQUEST_FILENAME",
    RequestHeaders => "REQUEST_HEADERS",
    RequestHeadersNames => "REQUEST_HEADERS_NAMES",
    RequestLine => "REQUEST_LINE",
    RequestMethod => "REQUEST_METHOD",
    RequestProtocol => "REQUEST_PROTOCOL",
    RequestUri => "REQUEST_URI",
    RequestUriRaw => "REQUEST_URI_RAW",
    Resource => "RESOURCE",
    ResponseBody => "RESPONSE_BODY",
    ResponseContentLength => "RESPONSE_CONTENT_LENGTH",
    ResponseContentType => "RESPONSE_CONTENT_TYPE",
    ResponseHeaders => "RESPONSE_HEADERS",
    ResponseHeadersNames => "RESPONSE_HEADERS_NAMES",
    ResponseProtocol => "RESPONSE_PROTOCOL",
    ResponseStatus => "RESPONSE_STATUS",
    Rule => "RULE",
    ServerAddr => "SERVER_ADDR",
    ServerName => "SERVER_NAME",
    ServerPort => "SERVER_PORT",
    Session => "SESSION",
    SessionId => "SESSIONID",
    Status => "STATUS",
    StatusLine => "STATUS_LINE",
    Time => "TIME",
    TimeDay => "TIME_DAY",
    TimeEpoch => "TIME_EPOCH",
    TimeHour => "TIME_HOUR",
    TimeMin => "TIME_MIN",
    TimeMon => "TIME_MON",
    TimeSec => "TIME_SEC",
    TimeWday => "TIME_WDAY",
    TimeYear => "TIME_YEAR",
    Tx => "TX",
    UniqueId => "UNIQUE_ID",
    UrlencodedError => "URLENCODED_ERROR",
    User => "USER",
    UseragentIp => "USERAGENT_IP",
    UserId => "USERID",
    WebAppId => "WEBAPPID",
    WebserverErrorLog => "WEBSERVER_ERROR_LOG",
    Xml => "XML",
}

impl Var {
    /// Whether this is a persistent or transaction collection whose members rules
    /// write with `setvar` (TX, IP, GLOBAL, SESSION, USER, RESOURCE).
    pub fn is_store(self) -> bool {
        matches!(
            self,
            Var::Tx | Var::Ip | Var::Global | Var::Session | Var::User | Var::Resource
        )
    }

    /// Whether the values are transaction state that rules change while a phase runs
    /// (collections written by `setvar`, `setenv`, `initcol` and `@geoLookup`, the
    /// matched variables) rather than request data: results computed over them
    /// cannot be kept until the request data change. (The XML document is request
    /// data: parsing it marks the data changed.)
    pub fn is_rule_state(self) -> bool {
        self.is_store()
            || matches!(
                self,
                Var::Env | Var::Geo | Var::MatchedVars | Var::MatchedVarsNames
            )
    }

    /// The collection named in `setvar`/macros (`tx`, `ip`, ...), if it is one.
    pub fn from_collection_name(name: &str) -> Option<Var> {
        let v = Var::from_name(name)?;
        v.is_store().then_some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enum_covers_exactly_the_seclang_variable_list() {
        let ours: Vec<&str> = Var::ALL.iter().map(|v| v.name()).collect();
        let theirs: Vec<&str> = seclang::names::VARIABLES.iter().map(|v| v.0).collect();
        assert_eq!(ours, theirs);
    }
}
