//! Request bodies held back while the engine inspects them.
//!
//! The engine needs the request body (as far as `SecRequestBodyLimit` goes) before
//! phase 2 decides, and only then is the body forwarded. What is held back meanwhile
//! stays in memory up to `limits.body_memory_bytes` per request; beyond that it is
//! written to a temporary file (created in `limits.body_temp_dir`, unlinked at once so
//! that nothing is left behind, even after a crash) and read back when forwarding.
//! Many concurrent large uploads therefore cost disk, not memory. The engine's own
//! inspection copy is bounded separately by `SecRequestBodyLimit` /
//! `SecRequestBodyNoFilesLimit`.

use std::collections::VecDeque;
use std::io::{self, SeekFrom};
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::fs::File;
use tokio::io::{AsyncRead, AsyncSeekExt, AsyncWriteExt, ReadBuf};

/// Where and from what size held-back bodies spill (compiled from `[limits]`).
#[derive(Debug, Clone)]
pub struct SpillPolicy {
    /// Bytes held in memory per request before spilling.
    pub memory_bytes: usize,
    /// Directory of the temporary files.
    pub dir: PathBuf,
}

/// A request body being held back: chunks in memory, then a temporary file.
#[derive(Debug)]
pub struct HeldBody {
    memory: VecDeque<Bytes>,
    in_memory: usize,
    memory_bytes: usize,
    dir: PathBuf,
    file: Option<File>,
    spilled: u64,
}

impl HeldBody {
    /// An empty body under `policy`.
    pub fn new(policy: &SpillPolicy) -> Self {
        HeldBody {
            memory: VecDeque::new(),
            in_memory: 0,
            memory_bytes: policy.memory_bytes,
            dir: policy.dir.clone(),
            file: None,
            spilled: 0,
        }
    }

    /// Holds the next chunk: in memory while the body fits, then in the file.
    ///
    /// Errors: the temporary file cannot be created or written (disk full, directory
    /// gone).
    pub async fn push(&mut self, chunk: Bytes) -> io::Result<()> {
        if self.file.is_none() && self.in_memory + chunk.len() <= self.memory_bytes {
            self.in_memory += chunk.len();
            self.memory.push_back(chunk);
            return Ok(());
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                let dir = self.dir.clone();
                let f = tokio::task::spawn_blocking(move || tempfile::tempfile_in(dir))
                    .await
                    .map_err(io::Error::other)??;
                self.file.insert(File::from_std(f))
            }
        };
        file.write_all(&chunk).await?;
        self.spilled += chunk.len() as u64;
        Ok(())
    }

    /// Whether part of the body went to the temporary file.
    pub fn spilled(&self) -> bool {
        self.file.is_some()
    }

    /// The chunks held in memory and the spilled remainder, ready to be read from
    /// its start.
    ///
    /// Errors: the file cannot be flushed or rewound.
    pub async fn finish(self) -> io::Result<(VecDeque<Bytes>, Option<SpilledBody>)> {
        let spilled = match self.file {
            None => None,
            Some(mut f) => {
                f.flush().await?;
                f.seek(SeekFrom::Start(0)).await?;
                Some(SpilledBody {
                    file: f,
                    remaining: self.spilled,
                    buf: Vec::new(),
                })
            }
        };
        Ok((self.memory, spilled))
    }
}

/// The spilled part of a body, read back in blocks when forwarding.
#[derive(Debug)]
pub struct SpilledBody {
    file: File,
    remaining: u64,
    buf: Vec<u8>,
}

/// Size of the blocks read back from the file.
const READ_BLOCK: usize = 64 * 1024;

impl SpilledBody {
    /// Bytes not yet read back.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// The next block, `None` once everything was read.
    ///
    /// Errors: the read failed or the file ended early.
    pub fn poll_block(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        if self.remaining == 0 {
            return Poll::Ready(None);
        }
        let want = READ_BLOCK.min(usize::try_from(self.remaining).unwrap_or(READ_BLOCK));
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let mut rb = ReadBuf::new(&mut self.buf[..want]);
        match Pin::new(&mut self.file).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(())) => {
                let filled = rb.filled();
                if filled.is_empty() {
                    return Poll::Ready(Some(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "spilled request body ended early",
                    ))));
                }
                self.remaining -= filled.len() as u64;
                Poll::Ready(Some(Ok(Bytes::copy_from_slice(filled))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(memory_bytes: usize, dir: &std::path::Path) -> SpillPolicy {
        SpillPolicy {
            memory_bytes,
            dir: dir.to_path_buf(),
        }
    }

    async fn read_back(mut s: SpilledBody) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(b) = std::future::poll_fn(|cx| s.poll_block(cx)).await {
            out.extend_from_slice(&b.expect("read"));
        }
        out
    }

    #[tokio::test]
    async fn small_bodies_stay_in_memory() {
        let dir = tempfile::tempdir().expect("dir");
        let mut h = HeldBody::new(&policy(10, dir.path()));
        h.push(Bytes::from_static(b"hello")).await.expect("push");
        h.push(Bytes::from_static(b"world")).await.expect("push");
        assert!(!h.spilled());
        let (mem, file) = h.finish().await.expect("finish");
        assert_eq!(mem.len(), 2);
        assert!(file.is_none());
    }

    #[tokio::test]
    async fn large_bodies_spill_in_order_and_leave_no_file() {
        let dir = tempfile::tempdir().expect("dir");
        let mut h = HeldBody::new(&policy(1000, dir.path()));
        let mut expected = Vec::new();
        for i in 0..300u32 {
            let chunk: Vec<u8> = (0..777u32).map(|j| ((i * 31 + j) % 251) as u8).collect();
            expected.extend_from_slice(&chunk);
            h.push(Bytes::from(chunk)).await.expect("push");
        }
        assert!(h.spilled());
        // The file is unlinked: nothing is visible in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 0);
        let (mem, file) = h.finish().await.expect("finish");
        let mut got: Vec<u8> = mem.iter().flat_map(|b| b.iter().copied()).collect();
        assert_eq!(got.len(), 777, "only the first chunk fits in memory");
        let file = file.expect("spilled");
        assert_eq!(file.remaining(), 299 * 777);
        got.extend_from_slice(&read_back(file).await);
        assert_eq!(got, expected);
    }

    #[tokio::test]
    async fn zero_memory_spills_everything() {
        let dir = tempfile::tempdir().expect("dir");
        let mut h = HeldBody::new(&policy(0, dir.path()));
        h.push(Bytes::from_static(b"abc")).await.expect("push");
        let (mem, file) = h.finish().await.expect("finish");
        assert!(mem.is_empty());
        assert_eq!(read_back(file.expect("spilled")).await, b"abc");
    }

    #[tokio::test]
    async fn a_missing_directory_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("dir");
        let gone = dir.path().join("gone");
        let mut h = HeldBody::new(&policy(0, &gone));
        assert!(h.push(Bytes::from_static(b"abc")).await.is_err());
    }
}
