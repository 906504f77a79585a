//! Loading: files, directories and globs, following `Include` (relative to the
//! including file, with globs), detecting cycles, then validating the whole.

use std::path::{Path, PathBuf};

use crate::ast::{Config, Item};
use crate::diagnostic::{Diagnostic, ErrorKind};
use crate::parse::{parse_file, Parsed};
use crate::source::{SourceFile, SourceMap, Span};
use crate::validate::validate;

/// Largest configuration file read, in bytes.
pub const MAX_FILE_SIZE: u64 = 64 << 20;
/// Deepest `Include` nesting followed.
pub const MAX_INCLUDE_DEPTH: usize = 32;
/// Most files one configuration may consist of.
pub const MAX_FILES: usize = 10_000;

/// A loaded configuration: the AST, its sources, and every error found.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The directives of all files, includes expanded.
    pub config: Config,
    /// The files read, for locating spans.
    pub sources: SourceMap,
    /// All errors, in file order.
    pub errors: Vec<Diagnostic>,
}

impl Loaded {
    /// Whether the configuration loaded without errors.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// Every error rendered with its source line and caret.
    pub fn render_errors(&self) -> String {
        self.errors
            .iter()
            .map(|e| e.render(&self.sources))
            .collect()
    }
}

/// Loads configuration files. Each path may be a file, a directory (its `*.conf`
/// files, sorted) or a glob.
pub fn load_paths<P: AsRef<Path>>(paths: &[P]) -> Loaded {
    let mut loader = Loader::default();
    for p in paths {
        loader.load_top(p.as_ref());
    }
    loader.finish()
}

/// Parses configuration text given in memory. `Include`s are resolved relative to
/// the current directory.
pub fn parse_str(name: &str, text: &str) -> Loaded {
    parse_str_with(name, text, &Options::default())
}

/// How text given in memory is loaded.
#[derive(Debug, Clone)]
pub struct Options {
    /// Whether `Include` reads files; when false, an `Include` is an error.
    pub follow_includes: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            follow_includes: true,
        }
    }
}

/// Parses configuration text given in memory, with options.
pub fn parse_str_with(name: &str, text: &str, options: &Options) -> Loaded {
    let mut loader = Loader {
        no_includes: !options.follow_includes,
        ..Loader::default()
    };
    loader.load_text(PathBuf::from(name), text.to_string(), Path::new("."));
    loader.finish()
}

#[derive(Default)]
struct Loader {
    sources: SourceMap,
    errors: Vec<Diagnostic>,
    items: Vec<Item>,
    stack: Vec<PathBuf>,
    no_includes: bool,
}

impl Loader {
    fn finish(mut self) -> Loaded {
        let config = Config { items: self.items };
        validate(&config, &self.sources, &mut self.errors);
        Loaded {
            config,
            sources: self.sources,
            errors: self.errors,
        }
    }

    fn load_top(&mut self, path: &Path) {
        if path.is_dir() {
            match conf_files_in(path) {
                Ok(files) if !files.is_empty() => {
                    for f in files {
                        self.load_file(&f, None);
                    }
                }
                Ok(_) => self.errors.push(Diagnostic::unlocated(
                    ErrorKind::UnreadableInclude,
                    format!("directory {} has no .conf files", path.display()),
                )),
                Err(e) => self.errors.push(Diagnostic::unlocated(
                    ErrorKind::UnreadableInclude,
                    format!("cannot read directory {}: {e}", path.display()),
                )),
            }
        } else if !path.exists() && is_glob(&path.to_string_lossy()) {
            self.load_glob(&path.to_string_lossy(), None);
        } else {
            self.load_file(path, None);
        }
    }

    fn load_glob(&mut self, pattern: &str, at: Option<Span>) {
        let matches: Vec<PathBuf> = match glob::glob(pattern) {
            Ok(paths) => paths
                .filter_map(Result::ok)
                .filter(|p| p.is_file())
                .collect(),
            Err(e) => {
                self.error_at(at, format!("invalid glob `{pattern}`: {e}"));
                return;
            }
        };
        if matches.is_empty() {
            self.error_at(at, format!("`{pattern}` matches no file"));
        }
        for m in matches {
            self.load_file(&m, at);
        }
    }

    fn error_at(&mut self, at: Option<Span>, msg: String) {
        self.errors.push(match at {
            Some(s) => Diagnostic::new(ErrorKind::UnreadableInclude, s, msg),
            None => Diagnostic::unlocated(ErrorKind::UnreadableInclude, msg),
        });
    }

    fn load_file(&mut self, path: &Path, at: Option<Span>) {
        if self.sources.files().len() >= MAX_FILES {
            self.error_at(at, format!("more than {MAX_FILES} configuration files"));
            return;
        }
        let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if self.stack.contains(&canonical) {
            let chain: Vec<String> = self
                .stack
                .iter()
                .chain(std::iter::once(&canonical))
                .map(|p| p.display().to_string())
                .collect();
            let d = Diagnostic {
                kind: ErrorKind::IncludeCycle,
                message: format!("include cycle: {}", chain.join(" -> ")),
                span: at,
                help: None,
            };
            self.errors.push(d);
            return;
        }
        if self.stack.len() >= MAX_INCLUDE_DEPTH {
            self.error_at(
                at,
                format!("includes nested deeper than {MAX_INCLUDE_DEPTH}"),
            );
            return;
        }
        let text = match read_limited(path) {
            Ok(t) => t,
            Err(e) => {
                self.error_at(at, format!("cannot read {}: {e}", path.display()));
                return;
            }
        };
        let dir = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        self.stack.push(canonical);
        self.load_text(path.to_path_buf(), text, &dir);
        self.stack.pop();
    }

    fn load_text(&mut self, path: PathBuf, text: String, dir: &Path) {
        let id = self.sources.add(SourceFile::new(path, text));
        let parsed = match self.sources.get(id) {
            Some(file) => parse_file(file, id, &mut self.errors),
            None => return,
        };
        for p in parsed {
            match p {
                Parsed::Item(item) => self.items.push(item),
                Parsed::Include { span, .. } if self.no_includes => {
                    self.error_at(Some(span), "Include is disabled here".to_string());
                }
                Parsed::Include { pattern, span } => {
                    let target = if Path::new(&pattern).is_absolute() {
                        PathBuf::from(&pattern)
                    } else {
                        dir.join(&pattern)
                    };
                    let s = target.to_string_lossy().to_string();
                    if is_glob(&pattern) {
                        self.load_glob(&s, Some(span));
                    } else if target.is_dir() {
                        match conf_files_in(&target) {
                            Ok(files) => {
                                for f in files {
                                    self.load_file(&f, Some(span));
                                }
                            }
                            Err(e) => self.error_at(Some(span), format!("cannot read {s}: {e}")),
                        }
                    } else {
                        self.load_file(&target, Some(span));
                    }
                }
            }
        }
    }
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

fn conf_files_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "conf"))
        .collect();
    files.sort();
    Ok(files)
}

fn read_limited(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let f = std::fs::File::open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let len = meta.len();
    if len > MAX_FILE_SIZE {
        return Err(std::io::Error::other(format!(
            "file is {len} bytes, more than the {MAX_FILE_SIZE}-byte limit"
        )));
    }
    let mut buf = Vec::with_capacity(len as usize);
    f.take(MAX_FILE_SIZE + 1).read_to_end(&mut buf)?;
    Ok(match String::from_utf8(buf) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}
