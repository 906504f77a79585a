//! Keep-alive connections to one upstream address: opened on demand, returned after
//! a response was read to its end, reused most-recent-first, dropped when idle too
//! long or when the upstream closed them meanwhile.

use std::io;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::net::TcpStream;

/// Initial read buffer of a connection.
const READ_BUFFER: usize = 8 * 1024;

/// One connection to an upstream address.
#[derive(Debug)]
pub struct UpConn {
    /// The socket.
    pub io: TcpStream,
    /// Bytes read from it and not consumed yet.
    pub buf: BytesMut,
    /// Whether it served an earlier request (a failure before any response byte
    /// may then be the upstream having closed it while idle).
    pub reused: bool,
}

impl UpConn {
    /// Connects to `authority` (`host:port`) within `timeout`.
    ///
    /// Errors: resolution or connection failed, or the timeout passed.
    pub async fn connect(authority: &str, timeout: Duration) -> io::Result<UpConn> {
        let io = match tokio::time::timeout(timeout, TcpStream::connect(authority)).await {
            Ok(r) => r?,
            Err(_) => return Err(io::Error::new(io::ErrorKind::TimedOut, "connect timed out")),
        };
        io.set_nodelay(true)?;
        Ok(UpConn {
            io,
            buf: BytesMut::with_capacity(READ_BUFFER),
            reused: false,
        })
    }

    /// Whether the idle connection is still usable: nothing arrived on it (no stray
    /// bytes, no end of stream). Costs a system call only when the reactor reported
    /// it readable.
    fn idle_and_open(&self) -> bool {
        if !self.buf.is_empty() {
            return false;
        }
        let mut cx = Context::from_waker(Waker::noop());
        match self.io.poll_read_ready(&mut cx) {
            Poll::Pending => true,
            Poll::Ready(Err(_)) => false,
            Poll::Ready(Ok(())) => {
                let mut probe = [0u8; 1];
                matches!(self.io.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
            }
        }
    }
}

/// The idle connections of one address.
#[derive(Debug)]
pub struct Pool {
    idle: Mutex<Vec<(UpConn, Instant)>>,
    max_idle: usize,
    idle_timeout: Duration,
}

impl Pool {
    /// A pool keeping at most `max_idle` connections, each at most `idle_timeout`.
    pub fn new(max_idle: usize, idle_timeout: Duration) -> Self {
        Pool {
            idle: Mutex::new(Vec::new()),
            max_idle,
            idle_timeout,
        }
    }

    /// The most recently returned usable connection, if any.
    pub fn take(&self) -> Option<UpConn> {
        let mut idle = self.idle.lock().ok()?;
        while let Some((mut conn, since)) = idle.pop() {
            if since.elapsed() <= self.idle_timeout && conn.idle_and_open() {
                conn.reused = true;
                return Some(conn);
            }
        }
        None
    }

    /// Returns a connection whose last response was read to its end.
    pub fn put(&self, conn: UpConn) {
        if !conn.buf.is_empty() {
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < self.max_idle {
                idle.push((conn, Instant::now()));
            }
        }
    }

    /// Idle connections held (for tests).
    pub fn idle(&self) -> usize {
        self.idle.lock().map(|i| i.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    #[tokio::test]
    async fn connections_are_reused_until_the_peer_closes_them() {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr").to_string();
        let accept = tokio::spawn(async move {
            let (a, _) = l.accept().await.expect("accept");
            let (b, _) = l.accept().await.expect("accept");
            (a, b)
        });
        let pool = Pool::new(4, Duration::from_secs(30));
        let c1 = UpConn::connect(&addr, Duration::from_secs(1))
            .await
            .expect("c1");
        let c2 = UpConn::connect(&addr, Duration::from_secs(1))
            .await
            .expect("c2");
        let (s1, mut s2) = accept.await.expect("join");
        pool.put(c1);
        pool.put(c2);
        assert_eq!(pool.idle(), 2);
        // The peer of c2 (most recent) sends stray bytes, the peer of c1 closes:
        // neither connection is handed out again.
        s2.write_all(b"x").await.expect("write");
        drop(s1);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(pool.take().is_none());
        assert_eq!(pool.idle(), 0);
    }

    #[tokio::test]
    async fn a_quiet_idle_connection_is_handed_out_as_reused() {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr").to_string();
        let accept = tokio::spawn(async move { l.accept().await.expect("accept") });
        let pool = Pool::new(1, Duration::from_secs(30));
        let c = UpConn::connect(&addr, Duration::from_secs(1))
            .await
            .expect("c");
        let _peer = accept.await.expect("join");
        pool.put(c);
        let c = pool.take().expect("reused");
        assert!(c.reused);
        // Over the idle limit: not kept.
        let pool = Pool::new(0, Duration::from_secs(30));
        pool.put(c);
        assert_eq!(pool.idle(), 0);
    }

    #[tokio::test]
    async fn refused_connections_are_errors() {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr").to_string();
        drop(l);
        assert!(UpConn::connect(&addr, Duration::from_secs(1))
            .await
            .is_err());
    }
}
