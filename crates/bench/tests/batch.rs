//! `bench batch` on a scratch repository whose "build" installs a script that
//! prints benchmark JSON.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use bench::batch::{csv_row, run, BatchConfig, CSV_HEADER};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn commit(dir: &Path, rps: u32, subject: &str) {
    let script = format!(
        "#!/bin/sh\necho \"args: $*\" >&2\nprintf '{{\\n  \"name\": \"all\", \"requests\": 10, \"requests_per_second\": {rps}.0,\\n  \"us_per_request_mean\": 5.5, \"us_per_request_p50\": 5.0, \"us_per_request_p99\": 9.0\\n}}\\n'\n"
    );
    std::fs::write(dir.join("bench.sh"), script).unwrap();
    git(dir, &["add", "bench.sh"]);
    git(dir, &["commit", "-q", "-m", subject]);
}

#[test]
fn one_row_per_revision_with_its_subject_and_no_worktree_left() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    git(dir, &["init", "-q"]);
    commit(dir, 100, "first, slow");
    commit(dir, 250, "second: faster");
    std::fs::write(dir.join("bench.sh"), "#!/bin/sh\nexit 3\n").unwrap();
    git(dir, &["commit", "-q", "-am", "third breaks the benchmark"]);

    let mut cfg = BatchConfig::new(
        dir.to_path_buf(),
        vec!["HEAD~2".into(), "HEAD~1".into(), "HEAD".into()],
        &["--paranoia".into(), "2".into()],
    );
    cfg.build = vec![
        "sh".into(),
        "-c".into(),
        "mkdir -p \"$CARGO_TARGET_DIR/release\" && cp bench.sh \"$CARGO_TARGET_DIR/release/palisade\" && chmod +x \"$CARGO_TARGET_DIR/release/palisade\"".into(),
    ];
    let mut seen = Vec::new();
    let rows = run(&cfg, &mut |r| seen.push(r.revision.clone())).unwrap();
    assert_eq!(seen, ["HEAD~2", "HEAD~1", "HEAD"]);
    assert_eq!(rows[0].subject, "first, slow");
    assert_eq!(rows[0].requests_per_second, Some(100.0));
    assert_eq!(rows[1].subject, "second: faster");
    assert_eq!(rows[1].requests_per_second, Some(250.0));
    assert_eq!(rows[1].us_per_request_p99, Some(9.0));
    assert_eq!(rows[1].commit, git(dir, &["rev-parse", "HEAD~1"]));
    assert!(rows[2]
        .error
        .as_deref()
        .unwrap()
        .contains("benchmark failed"));
    assert_eq!(rows[2].requests_per_second, None);

    let first = csv_row(&rows[0]);
    assert!(
        first.contains(",\"first, slow\",10,100.0,5.5,5.0,9.0,"),
        "{first}"
    );
    assert_eq!(first.split(',').count(), CSV_HEADER.split(',').count() + 1);
    // Only the main worktree is left.
    let trees = git(dir, &["worktree", "list"]);
    assert_eq!(trees.lines().count(), 1, "{trees}");
}

#[test]
fn unknown_revision_fails_before_building() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    git(dir, &["init", "-q"]);
    commit(dir, 1, "only");
    let mut cfg = BatchConfig::new(dir.to_path_buf(), vec!["HEAD".into(), "nope".into()], &[]);
    cfg.build = vec!["false".into()];
    let err = run(&cfg, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}
