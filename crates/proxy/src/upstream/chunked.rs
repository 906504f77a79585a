//! Decoding a chunked response body (RFC 9112 §7.1) from a read buffer, one step at
//! a time, so that the response body can be polled without an extra task. Chunk
//! extensions and trailers are read and dropped.

use bytes::{Buf, Bytes, BytesMut};

/// Longest chunk-size line or trailer line accepted.
const MAX_LINE: usize = 4096;
/// Most trailer bytes accepted.
const MAX_TRAILERS: usize = 16 * 1024;

/// What one decoding step produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Body bytes.
    Data(Bytes),
    /// The buffer holds no complete next element: read more.
    NeedMore,
    /// The last chunk and the trailers were read.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Size,
    Data(u64),
    DataEnd,
    Trailers(usize),
    Done,
}

/// The decoder's state between steps.
#[derive(Debug)]
pub struct ChunkDecoder {
    state: State,
}

impl Default for ChunkDecoder {
    fn default() -> Self {
        ChunkDecoder { state: State::Size }
    }
}

impl ChunkDecoder {
    /// Consumes from `buf` what the next step needs.
    ///
    /// Errors: a malformed size line, a missing CRLF after chunk data, or an
    /// oversize line or trailer section.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Step, &'static str> {
        loop {
            match self.state {
                State::Done => return Ok(Step::Done),
                State::Size => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(Step::NeedMore);
                    };
                    let size = parse_size(&line)?;
                    self.state = if size == 0 {
                        State::Trailers(0)
                    } else {
                        State::Data(size)
                    };
                }
                State::Data(left) => {
                    if buf.is_empty() {
                        return Ok(Step::NeedMore);
                    }
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
                    let data = buf.split_to(n).freeze();
                    let left = left - n as u64;
                    self.state = if left == 0 {
                        State::DataEnd
                    } else {
                        State::Data(left)
                    };
                    return Ok(Step::Data(data));
                }
                State::DataEnd => {
                    if buf.len() < 2 {
                        return Ok(Step::NeedMore);
                    }
                    if &buf[..2] != b"\r\n" {
                        return Err("missing CRLF after chunk data");
                    }
                    buf.advance(2);
                    self.state = State::Size;
                }
                State::Trailers(seen) => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(Step::NeedMore);
                    };
                    if line.is_empty() {
                        self.state = State::Done;
                        return Ok(Step::Done);
                    }
                    let seen = seen + line.len() + 2;
                    if seen > MAX_TRAILERS {
                        return Err("trailers too large");
                    }
                    self.state = State::Trailers(seen);
                }
            }
        }
    }
}

/// The next CRLF-terminated line (without its CRLF), or `None` when incomplete.
fn take_line(buf: &mut BytesMut) -> Result<Option<Bytes>, &'static str> {
    let Some(nl) = memchr::memchr(b'\n', buf) else {
        return if buf.len() > MAX_LINE {
            Err("chunk line too long")
        } else {
            Ok(None)
        };
    };
    if nl == 0 || buf[nl - 1] != b'\r' {
        return Err("bare LF in chunked body");
    }
    if nl > MAX_LINE {
        return Err("chunk line too long");
    }
    let line = buf.split_to(nl + 1).freeze();
    Ok(Some(line.slice(..nl - 1)))
}

/// `1*HEXDIG [ BWS ";" extensions ]`.
fn parse_size(line: &[u8]) -> Result<u64, &'static str> {
    let digits = line
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(line.len());
    if digits == 0 {
        return Err("bad chunk size");
    }
    let rest = &line[digits..];
    let rest_ok = rest.is_empty() || rest.trim_ascii_start().first() == Some(&b';');
    if !rest_ok || digits > 15 {
        return Err("bad chunk size");
    }
    let mut n = 0u64;
    for &b in &line[..digits] {
        let d = (b as char).to_digit(16).ok_or("bad chunk size")?;
        n = n * 16 + u64::from(d);
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` fed in pieces of `step` bytes.
    fn decode_all(input: &[u8], step: usize) -> Result<Vec<u8>, &'static str> {
        let mut dec = ChunkDecoder::default();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut fed = 0;
        loop {
            match dec.decode(&mut buf)? {
                Step::Data(d) => out.extend_from_slice(&d),
                Step::Done => return Ok(out),
                Step::NeedMore => {
                    if fed >= input.len() {
                        return Err("truncated");
                    }
                    let end = (fed + step).min(input.len());
                    buf.extend_from_slice(&input[fed..end]);
                    fed = end;
                }
            }
        }
    }

    #[test]
    fn decodes_chunks_extensions_and_trailers_whatever_the_split() {
        let input =
            b"5\r\nhello\r\n6;name=v\r\n world\r\nA \t;x\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
        for step in [1, 2, 3, 7, 100] {
            assert_eq!(
                decode_all(input, step).expect("valid"),
                b"hello world0123456789",
                "step {step}"
            );
        }
    }

    #[test]
    fn leaves_what_follows_the_body_in_the_buffer() {
        let mut dec = ChunkDecoder::default();
        let mut buf = BytesMut::from(&b"1\r\na\r\n0\r\n\r\nHTTP/1.1 200"[..]);
        assert_eq!(
            dec.decode(&mut buf),
            Ok(Step::Data(Bytes::from_static(b"a")))
        );
        assert_eq!(dec.decode(&mut buf), Ok(Step::Done));
        assert_eq!(&buf[..], b"HTTP/1.1 200");
    }

    #[test]
    fn refuses_malformed_bodies() {
        for bad in [
            &b"x\r\n"[..],
            b"5\r\nhelloXX",
            b"5\nhello\r\n0\r\n\r\n",
            b"-1\r\n",
            b"1111111111111111\r\n",
            b"5 x\r\n",
        ] {
            assert!(
                decode_all(bad, 64).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let long = vec![b'1'; MAX_LINE + 10];
        assert!(decode_all(&long, 64).is_err());
        let mut many = b"0\r\n".to_vec();
        for _ in 0..2000 {
            many.extend_from_slice(b"X-Trailer: 0123456789\r\n");
        }
        assert!(decode_all(&many, 4096).is_err());
    }
}
