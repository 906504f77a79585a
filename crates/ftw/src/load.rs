//! Loading test files: one file, or every `*.yaml`/`*.yml` below a
//! directory, into a [`Suite`] of identified [`Case`]s.
//!
//! Post-load rules (as go-ftw's `postLoadTestFTWTest`):
//! * a missing or zero `rule_id` falls back to the first run of digits in the
//!   file name (go-ftw searches the whole path it was given, which can pick
//!   up a directory's number; the file name is what is meant);
//! * a missing or zero `test_id` becomes the 1-based position in the file;
//! * a file that holds only comments (an empty YAML document) has no cases.
//!
//! Added here: a case id that occurs twice in a suite is an error, because
//! overrides and filters address cases by id.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::case_id::CaseId;
use crate::model::{Meta, Stage, TestFile};

/// Every file of a suite, in path order.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The directory (or file) the suite was loaded from.
    pub root: PathBuf,
    /// The files, sorted by path.
    pub files: Vec<LoadedFile>,
}

impl Suite {
    /// Number of test cases across all files.
    pub fn case_count(&self) -> usize {
        self.files.iter().map(|f| f.cases.len()).sum()
    }

    /// Iterates over every case with the file it came from.
    pub fn cases(&self) -> impl Iterator<Item = (&LoadedFile, &Case)> {
        self.files
            .iter()
            .flat_map(|f| f.cases.iter().map(move |c| (f, c)))
    }

    /// Finds a case by id.
    pub fn find(&self, id: CaseId) -> Option<(&LoadedFile, &Case)> {
        self.cases().find(|(_, c)| c.id == id)
    }
}

/// One loaded test file.
#[derive(Debug, Clone)]
pub struct LoadedFile {
    /// Where the file was read from.
    pub path: PathBuf,
    /// The effective rule id (explicit or from the file name); `None` only
    /// for files without cases.
    pub rule_id: Option<u32>,
    /// The file's metadata.
    pub meta: Meta,
    /// The cases, in file order.
    pub cases: Vec<Case>,
}

/// One test case with its effective id.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// `<rule_id>-<test_id>`.
    pub id: CaseId,
    /// The case's description.
    pub desc: Option<String>,
    /// Tags of the case.
    pub tags: Vec<String>,
    /// The stages, in order.
    pub stages: Vec<Stage>,
}

/// Why a suite or file could not be loaded. Every variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The YAML is malformed or does not fit the schema.
    #[error("{}:{}: {message}", path.display(), line.map_or_else(|| "?".to_string(), |l| l.to_string()))]
    Yaml {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem, when the parser knows it.
        line: Option<u64>,
        /// 1-based column of the problem, when the parser knows it.
        column: Option<u64>,
        /// The parser's message (with a source snippet).
        message: String,
    },
    /// The file has tests but neither `rule_id` nor digits in its name.
    #[error("{}: no rule_id and no digits in the file name to fall back on", path.display())]
    MissingRuleId {
        /// The file.
        path: PathBuf,
    },
    /// Two cases share an id.
    #[error("{}: test case {id} is also defined in {}", path.display(), first.display())]
    DuplicateCase {
        /// The file with the second definition.
        path: PathBuf,
        /// The repeated id.
        id: CaseId,
        /// The file with the first definition.
        first: PathBuf,
    },
    /// The directory holds no test file at all.
    #[error("{}: no *.yaml or *.yml test files found", path.display())]
    NoFiles {
        /// The directory searched.
        path: PathBuf,
    },
}

/// Loads every `*.yaml` and `*.yml` file below `root` (recursively, in
/// path order), or `root` itself when it is a file.
pub fn load_suite(root: &Path) -> Result<Suite, LoadError> {
    let mut paths = Vec::new();
    let meta = fs::metadata(root).map_err(|source| LoadError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    if meta.is_file() {
        paths.push(root.to_path_buf());
    } else {
        collect_yaml_files(root, &mut paths)?;
    }
    if paths.is_empty() {
        return Err(LoadError::NoFiles {
            path: root.to_path_buf(),
        });
    }
    paths.sort();
    let mut files = Vec::with_capacity(paths.len());
    let mut seen: HashMap<CaseId, PathBuf> = HashMap::new();
    for path in paths {
        let file = load_file(&path)?;
        for case in &file.cases {
            if let Some(first) = seen.get(&case.id) {
                return Err(LoadError::DuplicateCase {
                    path: path.clone(),
                    id: case.id,
                    first: first.clone(),
                });
            }
            seen.insert(case.id, path.clone());
        }
        files.push(file);
    }
    Ok(Suite {
        root: root.to_path_buf(),
        files,
    })
}

fn collect_yaml_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let io = |source| LoadError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        let kind = entry.file_type().map_err(io)?;
        if kind.is_dir() {
            collect_yaml_files(&path, out)?;
        } else if is_test_file(&path) {
            out.push(path);
        }
    }
    Ok(())
}

fn is_test_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    )
}

/// Reads and parses one test file.
pub fn load_file(path: &Path) -> Result<LoadedFile, LoadError> {
    let text = fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_file(path, &text)
}

/// Parses the text of one test file; `path` is used for the fallback rule
/// id and for error messages.
pub fn parse_file(path: &Path, text: &str) -> Result<LoadedFile, LoadError> {
    let parsed: Option<TestFile> =
        serde_saphyr::from_str(text).map_err(|e| yaml_error(path, &e))?;
    let Some(file) = parsed else {
        // Only comments: an empty document, as in CRS's 920539.yaml.
        return Ok(LoadedFile {
            path: path.to_path_buf(),
            rule_id: None,
            meta: Meta::default(),
            cases: Vec::new(),
        });
    };
    let rule_id = match file.rule_id {
        Some(id) if id != 0 => Some(id),
        _ => rule_id_from_name(path),
    };
    if rule_id.is_none() && !file.tests.is_empty() {
        return Err(LoadError::MissingRuleId {
            path: path.to_path_buf(),
        });
    }
    let rule = rule_id.unwrap_or(0);
    let mut cases = Vec::with_capacity(file.tests.len());
    for (index, test) in file.tests.into_iter().enumerate() {
        let position = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let test_id = match test.test_id {
            Some(id) if id != 0 => id,
            _ => position,
        };
        let id = CaseId::new(rule, test_id);
        if cases.iter().any(|c: &Case| c.id == id) {
            return Err(LoadError::DuplicateCase {
                path: path.to_path_buf(),
                id,
                first: path.to_path_buf(),
            });
        }
        cases.push(Case {
            id,
            desc: test.desc,
            tags: test.tags,
            stages: test.stages,
        });
    }
    Ok(LoadedFile {
        path: path.to_path_buf(),
        rule_id,
        meta: file.meta.unwrap_or_default(),
        cases,
    })
}

fn yaml_error(path: &Path, e: &serde_saphyr::Error) -> LoadError {
    let location = e.location();
    LoadError::Yaml {
        path: path.to_path_buf(),
        line: location.map(|l| l.line()),
        column: location.map(|l| l.column()),
        message: e.to_string(),
    }
}

fn rule_id_from_name(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    let start = name.find(|c: char| c.is_ascii_digit())?;
    let digits: String = name[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|&id| id != 0)
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;

    const MINIMAL: &str = "---\nmeta:\n  author: x\nrule_id: 920100\ntests:\n  - test_id: 7\n    stages:\n      - input: {}\n        output: {}\n  - stages:\n      - input: {}\n        output: {}\n";

    #[test]
    fn ids_explicit_and_positional() {
        let f = parse_file(Path::new("x.yaml"), MINIMAL).unwrap();
        let ids: Vec<String> = f.cases.iter().map(|c| c.id.to_string()).collect();
        assert_eq!(ids, ["920100-7", "920100-2"]);
    }

    #[test]
    fn rule_id_falls_back_to_file_name() {
        let text = MINIMAL.replace("rule_id: 920100\n", "");
        let f = parse_file(Path::new("dir-911/942100.yaml"), &text).unwrap();
        assert_eq!(f.rule_id, Some(942100));
        let err = parse_file(Path::new("dir/none.yaml"), &text).unwrap_err();
        assert!(matches!(err, LoadError::MissingRuleId { .. }), "{err}");
    }

    #[test]
    fn comment_only_file_has_no_cases() {
        let f = parse_file(Path::new("920539.yaml"), "# nothing\n# ---\n").unwrap();
        assert!(f.cases.is_empty());
    }

    #[test]
    fn yaml_errors_carry_path_and_line() {
        let text = "rule_id: 1\ntests:\n  - test_id: 1\n    stages:\n      - input: {}\n        output:\n          log:\n            expect_id: 5\n";
        let err = parse_file(Path::new("bad.yaml"), text).unwrap_err();
        match &err {
            LoadError::Yaml { path, line, .. } => {
                assert_eq!(path, Path::new("bad.yaml"));
                assert_eq!(*line, Some(8));
            }
            other => panic!("unexpected {other}"),
        }
        assert!(err.to_string().starts_with("bad.yaml:8: "), "{err}");
    }

    #[test]
    fn duplicate_ids_in_a_file_are_rejected() {
        let text = MINIMAL.replace("  - stages:", "  - test_id: 7\n    stages:");
        let err = parse_file(Path::new("x.yaml"), &text).unwrap_err();
        assert!(matches!(err, LoadError::DuplicateCase { .. }), "{err}");
    }
}
