//! Buffers a finished transaction leaves to the next one on the same thread: the
//! value arena, the transformation memo, the TX collection and the per-rule work
//! lists keep their capacity, so a warm thread evaluates a request without growing them again.
//!
//! A proxy thread has as many transactions in flight as it has requests waiting on
//! the backend (32 connections: 32 transactions), and each needs its own set, so the
//! pool keeps up to [`POOL_MAX`] sets, as long as they hold at most
//! [`POOL_MAX_BYTES`] together. A set that grew past [`KEEP_MAX_BYTES`] (a large
//! body) is dropped rather than kept: memory stays bounded and flat.

use std::cell::RefCell;

use super::data::{Data, Scratch};
use super::groups::Admission;
use super::memo::TransformMemo;
use super::resolve::Candidate;

/// Most buffer sets kept per thread.
const POOL_MAX: usize = 256;
/// Most bytes the kept sets of one thread may hold together.
const POOL_MAX_BYTES: usize = 32 << 20;
/// Largest arena (bytes of keys and values) worth keeping.
const KEEP_MAX_BYTES: usize = 1 << 20;

/// One set of reusable buffers, cleared.
#[derive(Debug, Default)]
pub(crate) struct Buffers {
    pub data: Data,
    pub memo: TransformMemo,
    pub cands: Vec<Candidate>,
    pub scratch: Scratch,
    pub vbuf: Vec<u8>,
    pub tbuf: Vec<u8>,
    pub admission: Admission,
    pub setvar_buf: Vec<u8>,
    pub setvar_key: Vec<u8>,
    pub bits_buf: Vec<u64>,
    pub target_sets: Vec<super::targets::TargetSetCache>,
    pub class_unions: Vec<super::classes::ClassUnion>,
    pub class_values: Vec<super::classes::ClassValues>,
    pub class_maybes: Vec<super::classes::ClassMaybe>,
    pub lent_buf: Vec<(u32, u32)>,
    pub tx: crate::collection::Collection,
    pub matched_vars: super::matched::MatchedVars,
}

impl Buffers {
    /// Bytes held by the buffers other than the arena, the memo and MATCHED_VARS
    /// (which [`give`] measures on their own), by capacity.
    fn other_bytes(&self) -> usize {
        self.cands.capacity() * std::mem::size_of::<Candidate>()
            + self.scratch.capacity_bytes()
            + self.vbuf.capacity()
            + self.tbuf.capacity()
            + self.setvar_buf.capacity()
            + self.setvar_key.capacity()
            + self.bits_buf.capacity() * 8
            + self.admission.capacity_bytes()
            + self
                .target_sets
                .iter()
                .map(super::targets::TargetSetCache::capacity_bytes)
                .sum::<usize>()
            + self
                .class_unions
                .iter()
                .map(super::classes::ClassUnion::capacity_bytes)
                .sum::<usize>()
            + self
                .class_values
                .iter()
                .map(super::classes::ClassValues::capacity_bytes)
                .sum::<usize>()
            + self
                .class_maybes
                .iter()
                .map(super::classes::ClassMaybe::capacity_bytes)
                .sum::<usize>()
            + self.lent_buf.capacity() * 8
            + self.tx.capacity_bytes()
    }
}

/// A thread's kept sets, each with its size when it was kept.
#[derive(Default)]
struct Pool {
    sets: Vec<(Buffers, usize)>,
    bytes: usize,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

/// A cleared buffer set: from this thread's pool, or new.
pub(crate) fn take() -> Buffers {
    POOL.try_with(|p| {
        let mut p = p.borrow_mut();
        let (b, bytes) = p.sets.pop()?;
        p.bytes -= bytes;
        Some(b)
    })
    .ok()
    .flatten()
    .unwrap_or_default()
}

/// Returns a buffer set to this thread's pool (cleared), unless the pool is full or
/// the set is too large to keep.
pub(crate) fn give(mut b: Buffers) {
    let large = [
        b.data.capacity_bytes(),
        b.memo.capacity_bytes(),
        b.matched_vars.capacity_bytes(),
    ];
    if large.iter().any(|&n| n > KEEP_MAX_BYTES) {
        return;
    }
    b.data.clear();
    b.memo.clear();
    b.cands.clear();
    b.scratch.reset();
    b.vbuf.clear();
    b.tbuf.clear();
    b.admission.forget();
    for t in &mut b.target_sets {
        t.forget();
    }
    for u in &mut b.class_unions {
        u.forget();
    }
    for v in &mut b.class_values {
        v.forget();
    }
    for m in &mut b.class_maybes {
        m.forget();
    }
    b.lent_buf.clear();
    b.setvar_buf.clear();
    b.setvar_key.clear();
    b.tx.clear();
    b.matched_vars.clear();
    // Clearing keeps every capacity: the sizes measured above still hold.
    let bytes = large.iter().sum::<usize>() + b.other_bytes();
    let _ = POOL.try_with(|p| {
        if let Ok(mut pool) = p.try_borrow_mut() {
            if pool.sets.len() < POOL_MAX && pool.bytes + bytes <= POOL_MAX_BYTES {
                pool.bytes += bytes;
                pool.sets.push((b, bytes));
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The number of sets this thread's pool holds.
    fn kept() -> usize {
        POOL.with(|p| p.borrow().sets.len())
    }

    #[test]
    fn the_pool_keeps_sets_up_to_its_byte_budget() {
        std::thread::spawn(|| {
            let big = POOL_MAX_BYTES / 4;
            for _ in 0..5 {
                let mut b = Buffers::default();
                b.vbuf.reserve_exact(big);
                give(b);
            }
            assert_eq!(kept(), 4);
            assert!(POOL.with(|p| p.borrow().bytes) <= POOL_MAX_BYTES);
            for _ in 0..4 {
                assert!(take().vbuf.capacity() >= big);
            }
            assert_eq!(POOL.with(|p| p.borrow().bytes), 0);
            assert_eq!(
                take().vbuf.capacity(),
                0,
                "a new set once the pool is empty"
            );
        })
        .join()
        .expect("the test thread panicked");
    }

    #[test]
    fn the_pool_keeps_at_most_pool_max_sets() {
        std::thread::spawn(|| {
            for _ in 0..POOL_MAX + 10 {
                give(Buffers::default());
            }
            assert_eq!(kept(), POOL_MAX);
        })
        .join()
        .expect("the test thread panicked");
    }

    #[test]
    fn a_set_with_a_large_arena_is_not_kept() {
        std::thread::spawn(|| {
            let mut b = Buffers::default();
            b.data.push(
                crate::variable::Var::Args,
                b"k",
                &vec![b'x'; KEEP_MAX_BYTES + 1],
            );
            give(b);
            assert_eq!(kept(), 0);
        })
        .join()
        .expect("the test thread panicked");
    }
}
