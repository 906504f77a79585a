//! The audit record of a transaction in ModSecurity's JSON audit-log format
//! (`SecAuditLogFormat JSON`): one object per transaction, parts chosen by
//! `SecAuditLogParts` (A: transaction, B: request headers, C: request body,
//! E: response body, F: response headers, H: messages and producer, K: matched rules,
//! I is treated as C; Z ends a record and has no content in JSON).
//!
//! Values named by `sanitiseArg`, `sanitiseRequestHeader`, `sanitiseResponseHeader`
//! and `sanitiseMatched` are masked with `*` of the same length.

use serde_json::{json, Map, Value};

use crate::audit::MatchedRule;
use crate::collection::{now_unix, CivilTime};
use crate::lossy::lossy;
use crate::transaction::{Sanitise, Transaction};
use crate::variable::Var;
use crate::EngineMode;

fn mask(s: &str) -> String {
    "*".repeat(s.chars().count())
}

/// Renders the audit record of a transaction (after phase 5) as one JSON line.
pub fn render(tx: &Transaction) -> String {
    render_value(tx).to_string()
}

/// The audit record as a JSON value.
pub fn render_value(tx: &Transaction) -> Value {
    let parts = tx.audit_parts().to_ascii_uppercase();
    let has = |c: char| parts.contains(c);
    let sanitised = tx.sanitised();
    let header_masked = |var: Var, name: &[u8]| {
        sanitised.iter().any(|s| match (s, var) {
            (Sanitise::RequestHeader(n), Var::RequestHeaders)
            | (Sanitise::ResponseHeader(n), Var::ResponseHeaders) => {
                n.as_bytes().eq_ignore_ascii_case(name)
            }
            _ => false,
        })
    };
    let headers = |var: Var| {
        let mut m = Map::new();
        for (k, v) in tx.values(var) {
            let key = lossy(k);
            let mut val = lossy(v);
            if header_masked(var, k) {
                val = mask(&val);
            }
            m.insert(key, Value::String(val));
        }
        Value::Object(m)
    };
    let mut t = Map::new();
    let conn = |v: Var| tx.first(v).map(lossy).unwrap_or_default();
    t.insert("client_ip".into(), json!(conn(Var::RemoteAddr)));
    t.insert("time_stamp".into(), json!(http_date(now_unix())));
    t.insert("server_id".into(), json!(conn(Var::ServerName)));
    t.insert(
        "client_port".into(),
        json!(conn(Var::RemotePort).parse::<u64>().unwrap_or(0)),
    );
    t.insert("host_ip".into(), json!(conn(Var::ServerAddr)));
    t.insert(
        "host_port".into(),
        json!(conn(Var::ServerPort).parse::<u64>().unwrap_or(0)),
    );
    t.insert("unique_id".into(), json!(tx.unique_id()));
    let mut request = Map::new();
    request.insert("method".into(), json!(conn(Var::RequestMethod)));
    let proto = conn(Var::RequestProtocol);
    let version = proto
        .trim_start_matches("HTTP/")
        .parse::<f64>()
        .unwrap_or(1.1);
    request.insert("http_version".into(), json!(version));
    request.insert("uri".into(), json!(tx.uri()));
    if has('B') {
        request.insert("headers".into(), headers(Var::RequestHeaders));
    }
    if has('C') || has('I') {
        let body = sanitise_args(tx, &lossy(tx.request_body()), &sanitised);
        if !body.is_empty() {
            request.insert("body".into(), json!(body));
        }
    }
    t.insert("request".into(), Value::Object(request));
    let mut response = Map::new();
    response.insert(
        "http_code".into(),
        json!(tx
            .intervention()
            .map(|i| u64::from(i.status()))
            .unwrap_or_else(|| conn(Var::ResponseStatus).parse::<u64>().unwrap_or(0))),
    );
    if has('F') {
        response.insert("headers".into(), headers(Var::ResponseHeaders));
    }
    if has('E') && !tx.response_body().is_empty() {
        response.insert("body".into(), json!(lossy(tx.response_body())));
    }
    t.insert("response".into(), Value::Object(response));
    if has('H') {
        let engine = match tx.mode() {
            EngineMode::On => "Enabled",
            EngineMode::DetectionOnly => "DetectionOnly",
            EngineMode::Off => "Disabled",
        };
        t.insert(
            "producer".into(),
            json!({
                "modsecurity": format!("Palisade v{}", env!("CARGO_PKG_VERSION")),
                "connector": "palisade",
                "secrules_engine": engine,
                "components": tx.program().config.component_signatures,
            }),
        );
        let messages: Vec<Value> = tx
            .matched_rules()
            .iter()
            .map(|m| message(m, &sanitised))
            .collect();
        t.insert("messages".into(), Value::Array(messages));
    }
    if has('K') {
        let ids: Vec<u32> = tx.matched_rules().iter().map(|m| m.id).collect();
        t.insert("matched_rules".into(), json!(ids));
    }
    json!({ "transaction": Value::Object(t) })
}

fn message(m: &MatchedRule, sanitised: &[Sanitise]) -> Value {
    let masked = sanitised
        .iter()
        .any(|s| matches!(s, Sanitise::Matched(n) if *n == m.matched_var_name));
    let value = if masked {
        mask(&m.matched_var)
    } else {
        m.matched_var.clone()
    };
    json!({
        "message": m.msg,
        "details": {
            "match": format!("Matched \"Operator `{}' against variable `{}' (Value: `{}' )", m.operator, m.matched_var_name, value),
            "reference": "",
            "ruleId": m.id.to_string(),
            "file": m.file,
            "lineNumber": m.line.to_string(),
            "data": if masked { mask(&m.data) } else { m.data.clone() },
            "severity": m.severity.map_or(String::new(), |s| s.to_string()),
            "ver": m.ver,
            "rev": m.rev,
            "tags": m.tags,
            "maturity": if m.maturity.is_empty() { "0".to_string() } else { m.maturity.to_string() },
            "accuracy": if m.accuracy.is_empty() { "0".to_string() } else { m.accuracy.to_string() },
        }
    })
}

/// Masks the values of sanitised arguments in a urlencoded body.
fn sanitise_args(tx: &Transaction, body: &str, sanitised: &[Sanitise]) -> String {
    let names: Vec<&str> = sanitised
        .iter()
        .filter_map(|s| match s {
            Sanitise::Arg(n) => Some(n.as_str()),
            _ => None,
        })
        .collect();
    if names.is_empty() {
        return body.to_string();
    }
    let sep = char::from(tx.program().config.argument_separator);
    body.split(sep)
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if names.iter().any(|n| n.eq_ignore_ascii_case(k)) => {
                format!("{k}={}", mask(v))
            }
            _ => pair.to_string(),
        })
        .collect::<Vec<_>>()
        .join(&sep.to_string())
}

/// `Mon Nov 22 00:11:14 2026` style time stamp (UTC).
fn http_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = CivilTime::from_unix(secs);
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} {}",
        DAYS[t.weekday as usize],
        MONTHS[(t.month - 1) as usize],
        t.day,
        t.hour,
        t.minute,
        t.second,
        t.year
    )
}

#[cfg(test)]
mod tests {
    use super::http_date;

    #[test]
    fn dates_render_in_utc() {
        assert_eq!(http_date(0), "Thu Jan 01 00:00:00 1970");
        assert_eq!(http_date(1_795_392_000), "Mon Nov 23 00:00:00 2026");
    }
}
