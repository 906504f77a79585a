//! Runs the OWASP CRS regression suite — go-ftw YAML test files — against
//! Palisade.
//!
//! CRS ships about 5000 regression cases (`tests/regression/tests/**.yaml`)
//! in the format of [go-ftw](https://github.com/coreruleset/go-ftw) /
//! ftw-tests-schema: each case sends one or more HTTP requests and states
//! which rule ids must (not) match, which status must come back, or which
//! log lines must (not) appear. This crate does everything that does not
//! need a rule engine:
//!
//! * [`model`] and [`load`]: serde types for the schema and a loader that
//!   accepts every file of the suite, with path and line on errors;
//! * [`request`]: the exact bytes go-ftw would send for a stage (defaults,
//!   sorted headers, `Connection: close`, `Content-Type`, form encoding,
//!   multipart CRLF, `Content-Length`, `encoded_request`), with
//!   [`template`] and [`form_encoding`] as helpers;
//! * [`http_head`]: a small strict parser turning raw request bytes back
//!   into method, target, version, headers and body, and [`chunked`] to
//!   decode chunked bodies;
//! * [`target`]: the [`Target`] trait; [`EngineTarget`] runs stages in-process,
//!   [`HttpTarget`] sends them over TCP to a running server and reads its log
//!   between marker requests ([`log_tail`]), with [`reflect_backend`] as the
//!   CRS test backend behind the server;
//! * [`check`]: comparing a [`StageOutcome`] with a stage's expectations;
//! * [`run`]: filters (`--rule`, `--test`), retries and progress;
//! * [`overrides`]: the known-failures file `tests/crs-overrides.yaml` and
//!   the run verdict (unlisted failure or stale entry = failed run);
//! * [`report`]: the `N passed, N failed, N skipped` line and a JSON report.
//!
//! The `palisade ftw` subcommand drives it: first with an in-process engine
//! target (the request's [`RawRequest::parsed`] view is fed straight to the
//! engine), or with `--target URL --log FILE` the [`HttpTarget`], which sends
//! [`RawRequest::bytes`] to a running server and reads its audit/error log.
//!
//! # Example
//!
//! ```
//! use std::path::Path;
//! use ftw::{
//!     check_stage, load::parse_file, overrides, run_suite, Filter, RawRequest,
//!     Report, Stage, StageOutcome, Suite, Target, TestRef,
//! };
//!
//! /// A stand-in engine: "matches" rule 942100 when the query mentions `select`.
//! struct Toy;
//!
//! impl Target for Toy {
//!     fn run(&mut self, _: &TestRef<'_>, _: &Stage, req: &RawRequest) -> StageOutcome {
//!         let Ok(parsed) = &req.parsed else {
//!             return StageOutcome { error: Some("unparsable request".into()), ..Default::default() };
//!         };
//!         let hit = String::from_utf8_lossy(&parsed.uri).contains("select");
//!         StageOutcome {
//!             status: Some(200),
//!             matched_ids: if hit { vec![942100] } else { vec![] },
//!             ..Default::default()
//!         }
//!     }
//! }
//!
//! let yaml = r#"
//! rule_id: 942100
//! tests:
//!   - test_id: 1
//!     stages:
//!       - input: { uri: "/?q=select+1" }
//!         output: { log: { expect_ids: [942100] } }
//!   - test_id: 2
//!     stages:
//!       - input: { uri: "/?q=hello" }
//!         output: { log: { expect_ids: [942100] } }
//! "#;
//! let file = parse_file(Path::new("942100.yaml"), yaml)?;
//! let suite = Suite { root: "tests".into(), files: vec![file] };
//!
//! let results = run_suite(&suite, &Filter::default(), &mut Toy, &mut |_| {});
//! let known = overrides::parse_overrides(
//!     Path::new("tests/crs-overrides.yaml"),
//!     "- test: 942100-2\n  reason: the toy engine does not decode '+'\n",
//! )?;
//! let verdict = overrides::verdict(results.iter().map(|r| (r.id, r.status)), &known);
//! assert!(verdict.is_ok());
//!
//! let report = Report::new(results, Some(verdict));
//! assert_eq!(report.summary.to_string(), "1 passed, 1 failed, 0 skipped");
//! # let _ = check_stage;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod case_id;
pub mod check;
pub mod chunked;
pub mod crs_config;
pub mod engine_target;
pub mod form_encoding;
pub mod http_head;
pub mod http_target;
pub mod load;
pub mod log_tail;
pub mod model;
pub mod overrides;
pub mod reflect_backend;
pub mod report;
pub mod request;
pub mod result;
pub mod run;
pub mod target;
pub mod template;

pub use case_id::CaseId;
pub use check::{check_stage, CheckFailure};
pub use engine_target::EngineTarget;
pub use http_head::{parse_request, HeadError, HeaderField, ParsedRequest};
pub use http_target::{HttpTarget, HttpTargetConfig, HttpTargetError};
pub use load::{load_suite, Case, LoadError, LoadedFile, Suite};
pub use model::{Input, Output, Stage, TestFile};
pub use overrides::{load_overrides, verdict, OverrideEntry, Overrides, OverridesError, Verdict};
pub use report::{Report, Summary};
pub use request::{build_request, BuildError, RawRequest, RequestKind};
pub use result::{CaseResult, CaseStatus, StageResult};
pub use run::{run_case, run_suite, FileProgress, Filter};
pub use target::{StageOutcome, Target, TestRef};
