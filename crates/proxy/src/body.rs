//! Bodies in flight: the request body sent upstream (what the engine buffered, then
//! the rest streamed from the client) and the response body sent to the client (what
//! phase 4 buffered, then the rest streamed from the upstream), with phase 5 run when
//! the response body is done or dropped.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use crate::spill::SpilledBody;
use crate::upstream::exchange::UpstreamBody;

/// A boxed error crossing hyper's body interfaces.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why the client's request body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientBodyError {
    /// Malformed chunked coding (bad chunk size, missing CRLF).
    #[error("malformed chunked body")]
    BadChunk,
    /// The connection closed before the body was complete.
    #[error("client closed the connection mid-body")]
    Truncated,
    /// The body is larger than the configured maximum.
    #[error("request body too large")]
    TooLarge,
    /// The client was too slow or the stream failed.
    #[error("client body read failed")]
    Io,
}

/// Request body chunks from the client connection.
pub type BodyRx = mpsc::Receiver<Result<Bytes, ClientBodyError>>;

/// Records the first client-side body error, so that an upstream failure caused by
/// the client is answered 400, not 502.
pub type ClientErrorSlot = Arc<OnceLock<ClientBodyError>>;

/// The request body forwarded upstream: chunks held in memory, then the part held in
/// a temporary file ([`crate::spill`]), then the rest of the client stream.
#[derive(Debug)]
pub struct ForwardBody {
    buffered: VecDeque<Bytes>,
    spilled: Option<SpilledBody>,
    rest: Option<BodyRx>,
    remaining: Option<u64>,
    error: ClientErrorSlot,
}

impl ForwardBody {
    /// An empty body.
    pub fn empty() -> Self {
        ForwardBody {
            buffered: VecDeque::new(),
            spilled: None,
            rest: None,
            remaining: Some(0),
            error: ClientErrorSlot::default(),
        }
    }

    /// Buffered chunks, then the spilled part, then the rest of the client stream;
    /// `length` is the exact total when the client sent Content-Length.
    pub fn new(
        buffered: VecDeque<Bytes>,
        spilled: Option<SpilledBody>,
        rest: Option<BodyRx>,
        length: Option<u64>,
        error: ClientErrorSlot,
    ) -> Self {
        ForwardBody {
            buffered,
            spilled,
            rest,
            remaining: length,
            error,
        }
    }

    /// Whether the whole body is in memory (so the request can be retried).
    pub fn replayable(&self) -> bool {
        self.rest.is_none() && self.spilled.is_none()
    }

    /// A copy of a body held wholly in memory, for a retry.
    pub fn try_clone(&self) -> Option<ForwardBody> {
        if !self.replayable() {
            return None;
        }
        Some(ForwardBody {
            buffered: self.buffered.clone(),
            spilled: None,
            rest: None,
            remaining: self.remaining,
            error: self.error.clone(),
        })
    }

    fn take(&mut self, b: &Bytes) {
        if let Some(r) = &mut self.remaining {
            *r = r.saturating_sub(b.len() as u64);
        }
    }
}

impl Body for ForwardBody {
    type Data = Bytes;
    type Error = ClientBodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ClientBodyError>>> {
        let this = &mut *self;
        if let Some(b) = this.buffered.pop_front() {
            this.take(&b);
            return Poll::Ready(Some(Ok(Frame::data(b))));
        }
        if let Some(s) = &mut this.spilled {
            match s.poll_block(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(b))) => {
                    this.take(&b);
                    return Poll::Ready(Some(Ok(Frame::data(b))));
                }
                Poll::Ready(Some(Err(e))) => {
                    tracing::warn!("reading back a spilled request body failed: {e}");
                    this.spilled = None;
                    this.rest = None;
                    return Poll::Ready(Some(Err(ClientBodyError::Io)));
                }
                Poll::Ready(None) => this.spilled = None,
            }
        }
        let Some(rx) = &mut this.rest else {
            return Poll::Ready(None);
        };
        match rx.poll_recv(cx) {
            Poll::Ready(Some(Ok(b))) => {
                this.take(&b);
                Poll::Ready(Some(Ok(Frame::data(b))))
            }
            Poll::Ready(Some(Err(e))) => {
                let _ = this.error.set(e);
                this.rest = None;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                this.rest = None;
                if this.remaining.is_some_and(|r| r > 0) {
                    let _ = this.error.set(ClientBodyError::Truncated);
                    return Poll::Ready(Some(Err(ClientBodyError::Truncated)));
                }
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.buffered.is_empty() && self.spilled.is_none() && self.rest.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match self.remaining {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

/// Work to do once the response body is finished (or the client went away): phase
/// 5, the audit record, metrics.
pub trait Finish: Send + Sync {
    /// Called once, with whether the whole body was delivered.
    fn finish(&mut self, complete: bool);
}

/// The response body sent to the client.
pub struct ProxyBody {
    buffered: VecDeque<Bytes>,
    rest: Option<UpstreamBody>,
    exact: Option<u64>,
    finish: Option<Box<dyn Finish>>,
}

impl std::fmt::Debug for ProxyBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyBody")
            .field("buffered", &self.buffered.len())
            .field("streaming", &self.rest.is_some())
            .field("exact", &self.exact)
            .finish()
    }
}

impl ProxyBody {
    /// A body held in memory.
    pub fn full(b: impl Into<Bytes>) -> Self {
        let b: Bytes = b.into();
        ProxyBody {
            exact: Some(b.len() as u64),
            buffered: if b.is_empty() {
                VecDeque::new()
            } else {
                VecDeque::from([b])
            },
            rest: None,
            finish: None,
        }
    }

    /// Buffered chunks, then the rest of the upstream body; `exact` is the total when
    /// known.
    pub fn streamed(
        buffered: VecDeque<Bytes>,
        rest: Option<UpstreamBody>,
        exact: Option<u64>,
    ) -> Self {
        ProxyBody {
            buffered,
            rest,
            exact,
            finish: None,
        }
    }

    /// Runs `f` when the body is done or dropped.
    pub fn on_finish(mut self, f: Box<dyn Finish>) -> Self {
        self.finish = Some(f);
        self
    }

    fn done(&mut self, complete: bool) {
        if let Some(mut f) = self.finish.take() {
            f.finish(complete);
        }
    }
}

impl Drop for ProxyBody {
    fn drop(&mut self) {
        self.done(false);
    }
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if let Some(b) = this.buffered.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(b))));
        }
        let Some(rest) = &mut this.rest else {
            this.done(true);
            return Poll::Ready(None);
        };
        loop {
            return match Pin::new(&mut *rest).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(d) if d.is_empty() => continue,
                    Ok(d) => Poll::Ready(Some(Ok(Frame::data(d)))),
                    // Trailers are not forwarded.
                    Err(_) => continue,
                },
                Poll::Ready(Some(Err(e))) => {
                    this.rest = None;
                    tracing::debug!(error = %e, "upstream response body failed");
                    Poll::Ready(Some(Err(Box::new(e))))
                }
                Poll::Ready(None) => {
                    this.rest = None;
                    this.done(true);
                    Poll::Ready(None)
                }
                Poll::Pending => Poll::Pending,
            };
        }
    }

    fn is_end_stream(&self) -> bool {
        self.buffered.is_empty() && self.rest.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match self.exact {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}
