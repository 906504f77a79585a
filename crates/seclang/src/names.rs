//! The one list of SecLang names: directives, variables, operators, actions and
//! transformations. The parser, `palisade check`, the engine's registries and the docs
//! all read these tables, so they cannot disagree.

/// Every transformation name of the ModSecurity v3 reference manual (`t:NAME`).
/// Names are matched case-sensitively by ModSecurity; Palisade matches them
/// case-insensitively and reports the canonical spelling.
pub const TRANSFORMATIONS: &[&str] = &[
    "base64Decode",
    "base64DecodeExt",
    "base64Encode",
    "cmdLine",
    "compressWhitespace",
    "cssDecode",
    "escapeSeqDecode",
    "hexDecode",
    "hexEncode",
    "htmlEntityDecode",
    "jsDecode",
    "length",
    "lowercase",
    "md5",
    "none",
    "normalisePath",
    "normalizePath",
    "normalisePathWin",
    "normalizePathWin",
    "parityEven7bit",
    "parityOdd7bit",
    "parityZero7bit",
    "removeComments",
    "removeCommentsChar",
    "removeNulls",
    "removeWhitespace",
    "replaceComments",
    "replaceNulls",
    "sha1",
    "sqlHexDecode",
    "trim",
    "trimLeft",
    "trimRight",
    "uppercase",
    "urlDecode",
    "urlDecodeUni",
    "urlEncode",
    "utf8toUnicode",
];

/// How a variable may be addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VariableShape {
    /// A single value (`REQUEST_URI`); a selector is an error.
    Scalar,
    /// A collection of named values (`ARGS`, `TX`): selectors, regex selectors,
    /// exclusions and counts apply.
    Collection,
    /// The XML document: the selector is an XPath expression.
    Xml,
}

/// Every variable of the ModSecurity v3 reference manual, with its shape.
pub const VARIABLES: &[(&str, VariableShape)] = {
    use VariableShape::{Collection as C, Scalar as S, Xml as X};
    &[
        ("ARGS", C),
        ("ARGS_COMBINED_SIZE", S),
        ("ARGS_GET", C),
        ("ARGS_GET_NAMES", C),
        ("ARGS_NAMES", C),
        ("ARGS_POST", C),
        ("ARGS_POST_NAMES", C),
        ("AUTH_TYPE", S),
        ("DURATION", S),
        ("ENV", C),
        ("FILES", C),
        ("FILES_COMBINED_SIZE", S),
        ("FILES_NAMES", C),
        ("FILES_SIZES", C),
        ("FILES_TMPNAMES", C),
        ("FILES_TMP_CONTENT", C),
        ("FULL_REQUEST", S),
        ("FULL_REQUEST_LENGTH", S),
        ("GEO", C),
        ("GLOBAL", C),
        ("HIGHEST_SEVERITY", S),
        ("INBOUND_DATA_ERROR", S),
        ("IP", C),
        ("MATCHED_VAR", S),
        ("MATCHED_VARS", C),
        ("MATCHED_VARS_NAMES", C),
        ("MATCHED_VAR_NAME", S),
        ("MODSEC_BUILD", S),
        ("MSC_PCRE_LIMITS_EXCEEDED", S),
        ("MULTIPART_BOUNDARY_QUOTED", S),
        ("MULTIPART_BOUNDARY_WHITESPACE", S),
        ("MULTIPART_CRLF_LF_LINES", S),
        ("MULTIPART_DATA_AFTER", S),
        ("MULTIPART_DATA_BEFORE", S),
        ("MULTIPART_FILENAME", S),
        ("MULTIPART_FILE_LIMIT_EXCEEDED", S),
        ("MULTIPART_HEADER_FOLDING", S),
        ("MULTIPART_INVALID_HEADER_FOLDING", S),
        ("MULTIPART_INVALID_PART", S),
        ("MULTIPART_INVALID_QUOTING", S),
        ("MULTIPART_LF_LINE", S),
        ("MULTIPART_MISSING_SEMICOLON", S),
        ("MULTIPART_NAME", S),
        ("MULTIPART_PART_HEADERS", C),
        ("MULTIPART_SEMICOLON_MISSING", S),
        ("MULTIPART_STRICT_ERROR", S),
        ("MULTIPART_UNMATCHED_BOUNDARY", S),
        ("OUTBOUND_DATA_ERROR", S),
        ("PATH_INFO", S),
        ("QUERY_STRING", S),
        ("REMOTE_ADDR", S),
        ("REMOTE_HOST", S),
        ("REMOTE_PORT", S),
        ("REMOTE_USER", S),
        ("REQBODY_ERROR", S),
        ("REQBODY_ERROR_MSG", S),
        ("REQBODY_PROCESSOR", S),
        ("REQBODY_PROCESSOR_ERROR", S),
        ("REQBODY_PROCESSOR_ERROR_MSG", S),
        ("REQUEST_BASENAME", S),
        ("REQUEST_BODY", S),
        ("REQUEST_BODY_LENGTH", S),
        ("REQUEST_COOKIES", C),
        ("REQUEST_COOKIES_NAMES", C),
        ("REQUEST_FILENAME", S),
        ("REQUEST_HEADERS", C),
        ("REQUEST_HEADERS_NAMES", C),
        ("REQUEST_LINE", S),
        ("REQUEST_METHOD", S),
        ("REQUEST_PROTOCOL", S),
        ("REQUEST_URI", S),
        ("REQUEST_URI_RAW", S),
        ("RESOURCE", C),
        ("RESPONSE_BODY", S),
        ("RESPONSE_CONTENT_LENGTH", S),
        ("RESPONSE_CONTENT_TYPE", S),
        ("RESPONSE_HEADERS", C),
        ("RESPONSE_HEADERS_NAMES", C),
        ("RESPONSE_PROTOCOL", S),
        ("RESPONSE_STATUS", S),
        ("RULE", C),
        ("SERVER_ADDR", S),
        ("SERVER_NAME", S),
        ("SERVER_PORT", S),
        ("SESSION", C),
        ("SESSIONID", S),
        ("STATUS", S),
        ("STATUS_LINE", S),
        ("TIME", S),
        ("TIME_DAY", S),
        ("TIME_EPOCH", S),
        ("TIME_HOUR", S),
        ("TIME_MIN", S),
        ("TIME_MON", S),
        ("TIME_SEC", S),
        ("TIME_WDAY", S),
        ("TIME_YEAR", S),
        ("TX", C),
        ("UNIQUE_ID", S),
        ("URLENCODED_ERROR", S),
        ("USER", C),
        ("USERAGENT_IP", S),
        ("USERID", S),
        ("WEBAPPID", S),
        ("WEBSERVER_ERROR_LOG", S),
        ("XML", X),
    ]
};

/// Whether an operator takes an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperatorArg {
    /// An argument is required (`@rx PATTERN`).
    Required,
    /// No argument is taken (`@detectSQLi`); one given is an error.
    None,
    /// The argument may be omitted.
    Optional,
}

/// Every operator of the ModSecurity v3 reference manual, with its argument rule.
pub const OPERATORS: &[(&str, OperatorArg)] = {
    use OperatorArg::{None as N, Optional as O, Required as R};
    &[
        ("beginsWith", R),
        ("contains", R),
        ("containsWord", R),
        ("detectSQLi", N),
        ("detectXSS", N),
        ("endsWith", R),
        ("eq", R),
        ("fuzzyHash", R),
        ("ge", R),
        ("geoLookup", O),
        ("gsbLookup", R),
        ("gt", R),
        ("inspectFile", R),
        ("ipMatch", R),
        ("ipMatchF", R),
        ("ipMatchFromFile", R),
        ("le", R),
        ("lt", R),
        ("noMatch", O),
        ("pm", R),
        ("pmf", R),
        ("pmFromFile", R),
        ("rbl", R),
        ("rsub", R),
        ("rx", R),
        ("rxGlobal", R),
        ("streq", O),
        ("strmatch", R),
        ("unconditionalMatch", O),
        ("validateByteRange", R),
        ("validateDTD", R),
        ("validateHash", R),
        ("validateSchema", R),
        ("validateUrlEncoding", N),
        ("validateUtf8Encoding", N),
        ("verifyCC", R),
        ("verifyCPF", R),
        ("verifySSN", R),
        ("verifySVNR", R),
        ("within", O),
    ]
};

/// The class of an action, as the reference manual groups them. The class decides
/// where an action may appear (only chain starters may carry disruptive, flow
/// and metadata actions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionClass {
    /// deny, block, drop, pass, allow, redirect, proxy, pause.
    Disruptive,
    /// chain, skip, skipAfter.
    Flow,
    /// id, phase, msg, logdata, tag, severity, rev, ver, maturity, accuracy.
    Metadata,
    /// Everything that changes state or logging: setvar, t, ctl, capture, ...
    NonDisruptive,
    /// exec.
    Data,
}

/// Whether an action takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionArg {
    /// `name:value` is required.
    Required,
    /// A bare name; a value is an error.
    None,
    /// The value may be omitted.
    Optional,
}

/// Every action of the ModSecurity v3 reference manual.
pub const ACTIONS: &[(&str, ActionClass, ActionArg)] = {
    use ActionArg::{None as N, Optional as O, Required as R};
    use ActionClass::{Data as Dt, Disruptive as D, Flow as F, Metadata as M, NonDisruptive as ND};
    &[
        ("accuracy", M, R),
        ("allow", D, O),
        ("append", ND, R),
        ("auditlog", ND, N),
        ("block", D, N),
        ("capture", ND, N),
        ("chain", F, N),
        ("ctl", ND, R),
        ("deny", D, N),
        ("deprecatevar", ND, R),
        ("drop", D, N),
        ("exec", Dt, R),
        ("expirevar", ND, R),
        ("id", M, R),
        ("initcol", ND, R),
        ("log", ND, N),
        ("logdata", M, R),
        ("maturity", M, R),
        ("msg", M, R),
        ("multiMatch", ND, N),
        ("noauditlog", ND, N),
        ("nolog", ND, N),
        ("pass", D, N),
        ("pause", D, R),
        ("phase", M, R),
        ("prepend", ND, R),
        ("proxy", D, R),
        ("redirect", D, R),
        ("rev", M, R),
        ("sanitiseArg", ND, R),
        ("sanitiseMatched", ND, N),
        ("sanitiseMatchedBytes", ND, O),
        ("sanitiseRequestHeader", ND, R),
        ("sanitiseResponseHeader", ND, R),
        ("setenv", ND, R),
        ("setrsc", ND, R),
        ("setsid", ND, R),
        ("setuid", ND, R),
        ("setvar", ND, R),
        ("severity", M, R),
        ("skip", F, R),
        ("skipAfter", F, R),
        ("status", D, R),
        ("t", ND, R),
        ("tag", M, R),
        ("ver", M, R),
        ("xmlns", ND, R),
    ]
};

/// Every `ctl:` option of the ModSecurity v3 reference manual.
pub const CTL_OPTIONS: &[&str] = &[
    "auditEngine",
    "auditLogParts",
    "debugLogLevel",
    "forceRequestBodyVariable",
    "hashEnforcement",
    "hashEngine",
    "parseXmlIntoArgs",
    "requestBodyAccess",
    "requestBodyLimit",
    "requestBodyProcessor",
    "responseBodyAccess",
    "responseBodyLimit",
    "ruleEngine",
    "ruleRemoveById",
    "ruleRemoveByMsg",
    "ruleRemoveByTag",
    "ruleRemoveTargetById",
    "ruleRemoveTargetByMsg",
    "ruleRemoveTargetByTag",
];

/// Finds the canonical spelling of `name` in `list`, ignoring ASCII case.
pub fn canonical<'a>(list: impl IntoIterator<Item = &'a str>, name: &str) -> Option<&'a str> {
    list.into_iter().find(|c| c.eq_ignore_ascii_case(name))
}

/// The closest valid name to `name` (edit distance, case-insensitive), when it is
/// close enough to be a plausible typo.
pub fn suggest<'a>(list: impl IntoIterator<Item = &'a str>, name: &str) -> Option<&'a str> {
    if name.len() > MAX_NAME {
        return None;
    }
    let limit = (name.len() / 3).max(1) + 1;
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in list {
        if candidate.len().abs_diff(name.len()) > limit || candidate.len() > MAX_NAME {
            continue;
        }
        let d = edit_distance(name.as_bytes(), candidate.as_bytes());
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// Names longer than this are never typos of a SecLang name.
const MAX_NAME: usize = 48;

/// Optimal-string-alignment distance between two short names, ignoring ASCII case.
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut rows = [[0usize; MAX_NAME + 1]; 3];
    let (mut prev2, mut prev, mut cur) = (0, 1, 2);
    for (j, cell) in rows[prev].iter_mut().enumerate().take(b.len() + 1) {
        *cell = j;
    }
    for i in 1..=a.len() {
        rows[cur][0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(!a[i - 1].eq_ignore_ascii_case(&b[j - 1]));
            let mut v = (rows[prev][j] + 1)
                .min(rows[cur][j - 1] + 1)
                .min(rows[prev][j - 1] + cost);
            if i > 1
                && j > 1
                && a[i - 1].eq_ignore_ascii_case(&b[j - 2])
                && a[i - 2].eq_ignore_ascii_case(&b[j - 1])
            {
                v = v.min(rows[prev2][j - 2] + 1);
            }
            rows[cur][j] = v;
        }
        (prev2, prev, cur) = (prev, cur, prev2);
    }
    rows[prev][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_find_typos_and_ignore_case() {
        assert_eq!(
            suggest(TRANSFORMATIONS.iter().copied(), "lowercse"),
            Some("lowercase")
        );
        assert_eq!(
            suggest(TRANSFORMATIONS.iter().copied(), "URLDECODE"),
            Some("urlDecode")
        );
        assert_eq!(
            suggest(TRANSFORMATIONS.iter().copied(), "utf8tounicdoe"),
            Some("utf8toUnicode")
        );
        assert_eq!(
            suggest(TRANSFORMATIONS.iter().copied(), "completelywrong"),
            None
        );
        assert_eq!(edit_distance(b"ab", b"ba"), 1);
        assert_eq!(edit_distance(b"", b"abc"), 3);
    }
}
