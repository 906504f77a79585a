//! Prometheus metrics, rendered in the text exposition format by the admin listener.
//! Names are defined here once (`palisade_*`, base units, `_total` for counters);
//! labels are bounded: routes come from the configuration, method classes and
//! decisions are fixed sets, and rule ids are capped at [`MAX_RULE_LABELS`] (the rest
//! are counted under `rule="other"`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The most distinct rule ids given their own label.
pub const MAX_RULE_LABELS: usize = 200;

/// What became of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Forwarded, no rule matched.
    Pass,
    /// Forwarded; rules matched but did not block (DetectionOnly, scores below the
    /// threshold).
    Detected,
    /// Answered by the engine (deny, redirect, drop).
    Blocked,
    /// The client's request was malformed (400, 413).
    ClientError,
    /// The upstream failed (502, 504).
    UpstreamError,
    /// No route matched (404).
    NoRoute,
    /// Forwarded without inspection (the route's static-content bypass).
    Bypassed,
}

impl Decision {
    fn as_str(self) -> &'static str {
        match self {
            Decision::Pass => "pass",
            Decision::Detected => "detected",
            Decision::Blocked => "blocked",
            Decision::ClientError => "client_error",
            Decision::UpstreamError => "upstream_error",
            Decision::NoRoute => "no_route",
            Decision::Bypassed => "bypassed",
        }
    }
}

/// SecLang phases, for the WAF time histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Phase 1.
    RequestHeaders,
    /// Phase 2 (including feeding the body).
    RequestBody,
    /// Phase 3.
    ResponseHeaders,
    /// Phase 4 (including feeding the body).
    ResponseBody,
    /// Phase 5.
    Logging,
}

const PHASES: [&str; 5] = [
    "request_headers",
    "request_body",
    "response_headers",
    "response_body",
    "logging",
];

/// What an analysis of the order learner did for one program
/// (`palisade_order_analyses_total{result}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderOutcome {
    /// Fewer sampled transactions than `min_samples`: kept for the next window.
    Waiting,
    /// The plan moved nothing, or saved less than `min_gain_percent`.
    Unchanged,
    /// A reordered program was published.
    Published,
    /// A reordered program was built, but the table changed meanwhile (reload).
    Superseded,
    /// The reordered program could not be built.
    Failed,
}

const ORDER_OUTCOMES: [&str; 5] = ["waiting", "unchanged", "published", "superseded", "failed"];

/// Bucket upper bounds, seconds.
const BUCKETS: [f64; 14] = [
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25,
    1.0, 5.0,
];

/// A histogram with fixed buckets.
#[derive(Debug, Default)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_ns: AtomicU64,
}

impl Histogram {
    /// Records one observation.
    pub fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|&b| s <= b)
            .unwrap_or(BUCKETS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cum = 0;
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, b) in BUCKETS.iter().enumerate() {
            cum += self.counts[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {cum}");
        }
        cum += self.counts[BUCKETS.len()].load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {cum}");
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        let lb = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{lb} {sum}");
        let _ = writeln!(out, "{name}_count{lb} {cum}");
    }
}

/// Route, method class, decision.
type RequestKey = (Arc<str>, &'static str, Decision);

/// All of the proxy's metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<HashMap<RequestKey, u64>>,
    blocked: Mutex<HashMap<u32, u64>>,
    blocked_other: AtomicU64,
    blocked_no_rule: AtomicU64,
    phases: [Histogram; 5],
    upstream: Histogram,
    total: Histogram,
    /// Open client connections.
    pub active_connections: AtomicI64,
    front_rejected: AtomicU64,
    bodies_spilled: AtomicU64,
    responses_bypassed: AtomicU64,
    /// Rules loaded in the running configuration.
    pub rules_loaded: AtomicU64,
    reloads_ok: AtomicU64,
    reloads_failed: AtomicU64,
    /// Audit records written.
    pub audit_written: Arc<AtomicU64>,
    /// Audit records dropped because the queue was full.
    pub audit_dropped: Arc<AtomicU64>,
    order_samples: AtomicU64,
    order_analyses: [AtomicU64; 5],
    order_published: AtomicU64,
    order_moved: AtomicU64,
    order_gain_ns: AtomicU64,
}

impl Metrics {
    /// Counts a finished request.
    pub fn request(&self, route: &str, method_class: &'static str, d: Decision, t: Duration) {
        self.total.observe(t);
        if let Ok(mut m) = self.requests.lock() {
            if let Some(n) = m
                .iter_mut()
                .find(|((r, c, dd), _)| &**r == route && *c == method_class && *dd == d)
                .map(|(_, n)| n)
            {
                *n += 1;
            } else {
                m.insert((Arc::from(route), method_class, d), 1);
            }
        }
    }

    /// Counts a blocked request by the deciding rule.
    pub fn blocked(&self, rule: Option<u32>) {
        let Some(id) = rule else {
            self.blocked_no_rule.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if let Ok(mut m) = self.blocked.lock() {
            if let Some(n) = m.get_mut(&id) {
                *n += 1;
            } else if m.len() < MAX_RULE_LABELS {
                m.insert(id, 1);
            } else {
                self.blocked_other.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Records WAF time in a phase.
    pub fn phase(&self, p: Phase, t: Duration) {
        self.phases[p as usize].observe(t);
    }

    /// Records the time to the upstream's response head.
    pub fn upstream(&self, t: Duration) {
        self.upstream.observe(t);
    }

    /// Counts a request head refused by the front door.
    pub fn front_rejected(&self) {
        self.front_rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a request body held back partly in a temporary file.
    pub fn body_spilled(&self) {
        self.bodies_spilled.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a response passed without response inspection (its media type is
    /// in the route's `bypass_content_types`).
    pub fn response_bypassed(&self) {
        self.responses_bypassed.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a reload.
    pub fn reload(&self, ok: bool) {
        if ok {
            self.reloads_ok.fetch_add(1, Ordering::Relaxed);
        } else {
            self.reloads_failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a transaction profiled for the order learner.
    pub fn order_sampled(&self) {
        self.order_samples.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an analysis of one program by the order learner.
    pub fn order_analysis(&self, o: OrderOutcome) {
        self.order_analyses[o as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Records a published order: units moved and expected ns saved per request.
    pub fn order_published(&self, moved: usize, gain_ns: f64) {
        self.order_published.fetch_add(1, Ordering::Relaxed);
        self.order_moved.store(moved as u64, Ordering::Relaxed);
        self.order_gain_ns
            .store(gain_ns.max(0.0).round() as u64, Ordering::Relaxed);
    }

    /// Published orders so far.
    pub fn order_plans_published(&self) -> u64 {
        self.order_published.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut o = String::with_capacity(8192);
        o.push_str("# HELP palisade_requests_total Requests by route, method class and decision.\n# TYPE palisade_requests_total counter\n");
        if let Ok(m) = self.requests.lock() {
            let mut rows: Vec<_> = m.iter().collect();
            rows.sort_by(|a, b| {
                (&*a.0 .0, a.0 .1, a.0 .2.as_str()).cmp(&(&*b.0 .0, b.0 .1, b.0 .2.as_str()))
            });
            for ((route, class, d), n) in rows {
                let _ = writeln!(
                    o,
                    "palisade_requests_total{{route=\"{}\",method_class=\"{class}\",decision=\"{}\"}} {n}",
                    escape(route),
                    d.as_str()
                );
            }
        }
        o.push_str("# HELP palisade_blocked_total Requests blocked, by the deciding rule id.\n# TYPE palisade_blocked_total counter\n");
        if let Ok(m) = self.blocked.lock() {
            let mut rows: Vec<_> = m.iter().collect();
            rows.sort();
            for (id, n) in rows {
                let _ = writeln!(o, "palisade_blocked_total{{rule=\"{id}\"}} {n}");
            }
        }
        let _ = writeln!(
            o,
            "palisade_blocked_total{{rule=\"other\"}} {}\npalisade_blocked_total{{rule=\"none\"}} {}",
            self.blocked_other.load(Ordering::Relaxed),
            self.blocked_no_rule.load(Ordering::Relaxed)
        );
        o.push_str("# HELP palisade_waf_seconds Time spent in the rule engine, by phase.\n# TYPE palisade_waf_seconds histogram\n");
        for (i, h) in self.phases.iter().enumerate() {
            h.render(
                &mut o,
                "palisade_waf_seconds",
                &format!("phase=\"{}\"", PHASES[i]),
            );
        }
        o.push_str("# HELP palisade_upstream_seconds Time to the upstream's response head.\n# TYPE palisade_upstream_seconds histogram\n");
        self.upstream
            .render(&mut o, "palisade_upstream_seconds", "");
        o.push_str("# HELP palisade_request_seconds Total time per request, to the end of the response body.\n# TYPE palisade_request_seconds histogram\n");
        self.total.render(&mut o, "palisade_request_seconds", "");
        let g = |o: &mut String, name: &str, help: &str, kind: &str, v: i64| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
        };
        g(
            &mut o,
            "palisade_active_connections",
            "Open client connections.",
            "gauge",
            self.active_connections.load(Ordering::Relaxed),
        );
        g(
            &mut o,
            "palisade_front_rejected_total",
            "Request heads refused with 400/431 before any rule ran.",
            "counter",
            self.front_rejected.load(Ordering::Relaxed) as i64,
        );
        g(
            &mut o,
            "palisade_request_bodies_spilled_total",
            "Request bodies held back partly in a temporary file (limits.body_memory_bytes).",
            "counter",
            self.bodies_spilled.load(Ordering::Relaxed) as i64,
        );
        g(
            &mut o,
            "palisade_responses_bypassed_total",
            "Responses passed without response inspection (route bypass_content_types).",
            "counter",
            self.responses_bypassed.load(Ordering::Relaxed) as i64,
        );
        g(
            &mut o,
            "palisade_rules_loaded",
            "Rules in the running configuration.",
            "gauge",
            self.rules_loaded.load(Ordering::Relaxed) as i64,
        );
        let _ = writeln!(
            o,
            "# HELP palisade_reloads_total Configuration reloads by result.\n# TYPE palisade_reloads_total counter\npalisade_reloads_total{{result=\"ok\"}} {}\npalisade_reloads_total{{result=\"failed\"}} {}",
            self.reloads_ok.load(Ordering::Relaxed),
            self.reloads_failed.load(Ordering::Relaxed)
        );
        g(
            &mut o,
            "palisade_audit_records_written_total",
            "Audit records written.",
            "counter",
            self.audit_written.load(Ordering::Relaxed) as i64,
        );
        g(
            &mut o,
            "palisade_audit_records_dropped_total",
            "Audit records dropped because the queue was full.",
            "counter",
            self.audit_dropped.load(Ordering::Relaxed) as i64,
        );
        g(
            &mut o,
            "palisade_order_samples_total",
            "Transactions profiled for the rule-order learner.",
            "counter",
            self.order_samples.load(Ordering::Relaxed) as i64,
        );
        o.push_str("# HELP palisade_order_analyses_total Rule-order analyses per program, by result.\n# TYPE palisade_order_analyses_total counter\n");
        for (name, n) in ORDER_OUTCOMES.iter().zip(&self.order_analyses) {
            let _ = writeln!(
                o,
                "palisade_order_analyses_total{{result=\"{name}\"}} {}",
                n.load(Ordering::Relaxed)
            );
        }
        g(
            &mut o,
            "palisade_order_plans_published_total",
            "Reordered programs published by the rule-order learner.",
            "counter",
            self.order_published.load(Ordering::Relaxed) as i64,
        );
        g(
            &mut o,
            "palisade_order_rules_moved",
            "Rules that changed position in the last published order.",
            "gauge",
            self.order_moved.load(Ordering::Relaxed) as i64,
        );
        let _ = writeln!(
            o,
            "# HELP palisade_order_expected_gain_seconds Expected rule time saved per request by the last published order.\n# TYPE palisade_order_expected_gain_seconds gauge\npalisade_order_expected_gain_seconds {}",
            self.order_gain_ns.load(Ordering::Relaxed) as f64 / 1e9
        );
        o
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_labels_are_bounded() {
        let m = Metrics::default();
        for id in 0..(MAX_RULE_LABELS as u32 + 50) {
            m.blocked(Some(id));
        }
        let text = m.render();
        assert_eq!(
            text.matches("palisade_blocked_total{rule=\"").count(),
            MAX_RULE_LABELS + 2
        );
        assert!(text.contains("palisade_blocked_total{rule=\"other\"} 50"));
    }

    #[test]
    fn renders_requests_and_histograms() {
        let m = Metrics::default();
        m.request("*/", "read", Decision::Pass, Duration::from_micros(30));
        m.request("*/", "read", Decision::Pass, Duration::from_micros(30));
        let t = m.render();
        assert!(t.contains(
            "palisade_requests_total{route=\"*/\",method_class=\"read\",decision=\"pass\"} 2"
        ));
        assert!(t.contains("palisade_request_seconds_bucket{le=\"0.00005\"} 2"));
        assert!(t.contains("palisade_request_seconds_count 2"));
    }
}
