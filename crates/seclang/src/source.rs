//! Source files, byte spans and line/column resolution.

use std::path::{Path, PathBuf};

/// Index of a file in a [`SourceMap`].
pub type FileId = u32;

/// A region of a source file. `line` and `col` (1-based; columns count characters)
/// locate `start`; `start..end` are byte offsets into the file's text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// The file, an index into the [`SourceMap`].
    pub file: FileId,
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset one past the last byte.
    pub end: u32,
    /// 1-based line of `start`.
    pub line: u32,
    /// 1-based column (in characters) of `start`.
    pub col: u32,
}

/// One loaded configuration file.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path as it was resolved (for messages).
    pub path: PathBuf,
    /// The file's contents (lossily decoded if not UTF-8).
    pub text: String,
    line_starts: Vec<u32>,
    /// Per line: whether it is pure ASCII (columns are then byte offsets).
    line_ascii: Vec<bool>,
}

impl SourceFile {
    /// Wraps a file's text, indexing its line starts.
    pub fn new(path: impl Into<PathBuf>, text: String) -> Self {
        let mut line_starts = vec![0u32];
        let mut line_ascii = Vec::new();
        let mut ascii = true;
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(u32::try_from(i + 1).unwrap_or(u32::MAX));
                line_ascii.push(ascii);
                ascii = true;
            } else if !b.is_ascii() {
                ascii = false;
            }
        }
        line_ascii.push(ascii);
        SourceFile {
            path: path.into(),
            text,
            line_starts,
            line_ascii,
        }
    }

    /// 1-based line and character column of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let line_idx = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.line_starts[line_idx] as usize;
        let end = (offset as usize).min(self.text.len());
        if self.line_ascii.get(line_idx).copied().unwrap_or(false) {
            return (line_idx as u32 + 1, (end.saturating_sub(start)) as u32 + 1);
        }
        let col = self
            .text
            .get(start..end)
            .map_or(end.saturating_sub(start), |s| s.chars().count());
        (line_idx as u32 + 1, col as u32 + 1)
    }

    /// The text of a 1-based line, without its line terminator.
    pub fn line_text(&self, line: u32) -> &str {
        let idx = (line as usize).saturating_sub(1);
        let Some(&start) = self.line_starts.get(idx) else {
            return "";
        };
        let end = self
            .line_starts
            .get(idx + 1)
            .map_or(self.text.len(), |&e| e as usize);
        self.text
            .get(start as usize..end)
            .unwrap_or("")
            .trim_end_matches(['\n', '\r'])
    }

    /// Builds a span from byte offsets.
    pub fn span(&self, file: FileId, start: u32, end: u32) -> Span {
        let (line, col) = self.line_col(start);
        Span {
            file,
            start,
            end,
            line,
            col,
        }
    }
}

/// All files of a loaded configuration.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file and returns its id.
    pub fn add(&mut self, file: SourceFile) -> FileId {
        self.files.push(file);
        (self.files.len() - 1) as FileId
    }

    /// The file with this id.
    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id as usize)
    }

    /// All files, in load order.
    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }

    /// The path of a file, or `<unknown>`.
    pub fn path(&self, id: FileId) -> &Path {
        self.get(id)
            .map_or(Path::new("<unknown>"), |f| f.path.as_path())
    }
}
