//! The size bound of pooled buffers: when their holder goes back to a pool, a
//! buffer grown past the bound is freed and the others are kept for reuse.

/// Frees `b` when its capacity is over `max` bytes; returns the bytes it still
/// holds.
#[inline]
pub(crate) fn shed(b: &mut Vec<u8>, max: usize) -> usize {
    if b.capacity() > max {
        *b = Vec::new();
    }
    b.capacity()
}
