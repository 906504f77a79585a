//! Buffers a finished transaction leaves to the next one on the same thread: the
//! value arena, the transformation memo, the TX collection and the per-rule work
//! lists keep their capacity, so a warm thread evaluates a request without growing them again.
//! At most [`POOL_MAX`] sets are kept per thread, and a set that grew past
//! [`KEEP_MAX_BYTES`] (a large body) is dropped rather than kept: memory stays
//! bounded and flat.

use std::cell::RefCell;

use super::data::{Data, Scratch};
use super::groups::GroupUnion;
use super::memo::TransformMemo;
use super::resolve::Candidate;

/// Buffer sets kept per thread.
const POOL_MAX: usize = 4;
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
    pub groups: Vec<GroupUnion>,
    pub setvar_buf: Vec<u8>,
    pub bits_buf: Vec<u64>,
    pub target_sets: Vec<super::targets::TargetSetCache>,
    pub tx: crate::collection::Collection,
    pub matched_vars: super::matched::MatchedVars,
}

thread_local! {
    static POOL: RefCell<Vec<Buffers>> = const { RefCell::new(Vec::new()) };
}

/// A cleared buffer set: from this thread's pool, or new.
pub(crate) fn take() -> Buffers {
    POOL.try_with(|p| p.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Returns a buffer set to this thread's pool (cleared), unless the pool is full or
/// the set is too large to keep.
pub(crate) fn give(mut b: Buffers) {
    if b.data.capacity_bytes() > KEEP_MAX_BYTES
        || b.memo.capacity_bytes() > KEEP_MAX_BYTES
        || b.matched_vars.capacity_bytes() > KEEP_MAX_BYTES
    {
        return;
    }
    b.data.clear();
    b.memo.clear();
    b.cands.clear();
    b.scratch.reset();
    b.vbuf.clear();
    b.tbuf.clear();
    for g in &mut b.groups {
        g.forget();
    }
    for t in &mut b.target_sets {
        t.forget();
    }
    b.setvar_buf.clear();
    b.tx.clear();
    b.matched_vars.clear();
    let _ = POOL.try_with(|p| {
        if let Ok(mut pool) = p.try_borrow_mut() {
            if pool.len() < POOL_MAX {
                pool.push(b);
            }
        }
    });
}
