//! The audit log: ModSecurity's JSON records (from [`engine::Transaction::audit_json`],
//! parts and relevance from the rule set's `SecAuditEngine`, `SecAuditLogParts`,
//! `SecAuditLogRelevantStatus`), one per line, written by a background thread fed by
//! a bounded queue.
//!
//! When the queue is full the configured policy applies: `drop` (the record is counted
//! in `palisade_audit_records_dropped_total`) or `block` (the request's phase 5 waits
//! for room). [`AuditSink::drain`] waits until everything queued before it is written
//! and flushed; graceful shutdown and reload call it, so nothing is lost there.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use crate::config::WhenFull;

enum Msg {
    Record(String),
    Sync(SyncSender<()>),
}

/// The sending side of the audit log.
#[derive(Debug, Clone)]
pub struct AuditSink {
    tx: SyncSender<Msg>,
    policy: WhenFull,
    written: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Msg::Record(_) => "Record",
            Msg::Sync(_) => "Sync",
        })
    }
}

impl AuditSink {
    /// Opens the log (`-` is standard output) and starts the writer thread.
    pub fn open(
        path: &Path,
        queue: usize,
        policy: WhenFull,
        written: Arc<AtomicU64>,
        dropped: Arc<AtomicU64>,
    ) -> std::io::Result<AuditSink> {
        let out: Box<dyn Write + Send> = if path == Path::new("-") {
            Box::new(std::io::stdout())
        } else {
            Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            )
        };
        let (tx, rx) = mpsc::sync_channel::<Msg>(queue.max(1));
        let w = written.clone();
        std::thread::Builder::new()
            .name("palisade-audit".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
                loop {
                    // Block for one message, then take what is queued without waiting,
                    // and flush when the queue is empty.
                    let Ok(first) = rx.recv() else { break };
                    let mut next = Some(first);
                    while let Some(m) = next.take() {
                        match m {
                            Msg::Record(line) => {
                                let ok = out.write_all(line.as_bytes()).is_ok()
                                    && out.write_all(b"\n").is_ok();
                                if ok {
                                    w.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            Msg::Sync(ack) => {
                                let _ = out.flush();
                                let _ = ack.send(());
                            }
                        }
                        next = rx.try_recv().ok();
                    }
                    let _ = out.flush();
                }
                let _ = out.flush();
            })?;
        Ok(AuditSink {
            tx,
            policy,
            written,
            dropped,
        })
    }

    /// Queues one record (a JSON line without its newline).
    pub fn log(&self, record: String) {
        match self.policy {
            WhenFull::Drop => match self.tx.try_send(Msg::Record(record)) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
            },
            WhenFull::Block => {
                if self.tx.send(Msg::Record(record)).is_err() {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Waits (up to `timeout`) until every record queued before this call is written
    /// and flushed. Returns whether it was.
    pub fn drain(&self, timeout: Duration) -> bool {
        let (ack_tx, ack_rx) = mpsc::sync_channel(1);
        if self.tx.send(Msg::Sync(ack_tx)).is_err() {
            return false;
        }
        ack_rx.recv_timeout(timeout).is_ok()
    }

    /// Records written so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Records dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_lines_and_drains() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        let sink = AuditSink::open(&path, 16, WhenFull::Block, Arc::default(), Arc::default())
            .expect("open");
        for i in 0..100 {
            sink.log(format!("{{\"n\":{i}}}"));
        }
        assert!(sink.drain(Duration::from_secs(5)));
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.lines().count(), 100);
        assert_eq!(sink.written(), 100);
        assert_eq!(sink.dropped(), 0);
    }

    #[test]
    fn drop_policy_counts_what_it_drops() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        let sink = AuditSink::open(&path, 1, WhenFull::Drop, Arc::default(), Arc::default())
            .expect("open");
        for i in 0..2000 {
            sink.log(format!("{{\"n\":{i}}}"));
        }
        assert!(sink.drain(Duration::from_secs(5)));
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.lines().count() as u64 + sink.dropped(), 2000);
        assert_eq!(sink.written() + sink.dropped(), 2000);
    }
}
