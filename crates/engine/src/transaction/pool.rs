//! Buffers a transaction leaves to the next one on the same thread, in two kinds.
//!
//! - [`Buffers`]: the value arena, the TX collection and MATCHED_VARS, which hold the
//!   transaction's state and so stay with it from start to end.
//! - [`WorkSet`]: the transformation memo, the resolved target lists, the class and
//!   group unions and the per-rule work lists: caches and scratch space, held only
//!   while a phase runs ([`Transaction::hold_work`](super::Transaction)) and
//!   returned to the pool when it ends. A proxy thread with 32 requests waiting on
//!   the backend then has 32 sets of the first kind (small) and about one of the
//!   second, which every phase finds in the CPU caches; and memory under load grows
//!   with the requests in flight by their data alone.
//!
//! Both keep their capacity, so a warm thread evaluates a request without growing
//! them again. Each kind's pool keeps up to [`POOL_MAX`] sets, as long as they hold
//! at most [`POOL_MAX_BYTES`] together. A set that grew past [`KEEP_MAX_BYTES`] (a
//! large body) is dropped rather than kept: memory stays bounded and flat.
//!
//! A work set remembers which transaction last held it (`owner`): one that comes
//! back to the same transaction keeps its caches (they are keyed by that
//! transaction's data generations, see [`super::data::Data::generation`]); one that
//! goes to another has its memo and work lists cleared first ([`WorkSet::reset`]).
//! Its per-list and per-class caches are left as they are: the generations and
//! list versions they are keyed by are unique to a transaction, so another never
//! finds one current.
//!
//! Work sets (about 1 KB each) are boxed, and they change hands by pointer: a
//! transaction always holds one box, its set while a phase runs and otherwise an
//! empty *stand-in* (see [`stand_in`]), so taking a set and giving it back, twice
//! per request through a proxy, copies no set, and a transaction is 1 KB smaller
//! wherever it is moved (a proxy's request future). Stand-ins come from a
//! per-thread stack of unused empty sets: one a transaction gives up when it takes
//! a set goes back there (unless something used it), so the number of boxes in
//! use follows the transactions in flight.

use std::cell::RefCell;

use super::data::{Data, Scratch};
use super::groups::Admission;
use super::memo::TransformMemo;
use super::resolve::Candidate;
use super::tracked::Tracked;

/// Most sets of each kind kept per thread.
const POOL_MAX: usize = 256;
/// Most bytes the kept sets of one kind may hold together, per thread.
const POOL_MAX_BYTES: usize = 32 << 20;
/// Largest arena (bytes of keys and values) or memo worth keeping.
const KEEP_MAX_BYTES: usize = 1 << 20;
/// Largest single value buffer kept with a set. Each slot's buffer would otherwise
/// grow to the largest value that slot ever held, and a thread's pooled sets
/// would creep towards the pool's budget as rare large requests come (8 MB more
/// RSS after a million requests of the realistic corpus at cf478f9); a larger
/// value costs one allocation instead.
const KEEP_MAX_BUFFER: usize = 8 << 10;

/// A transaction's state buffers, cleared (a TX restored from a prologue keeps its
/// members for the next restore: see `Collection::restore_from`).
#[derive(Debug, Default)]
pub(crate) struct Buffers {
    pub data: Data,
    pub tx: crate::collection::Collection,
    pub matched_vars: super::matched::MatchedVars,
}

/// The caches and scratch space of a running phase (see the module).
#[derive(Debug, Default)]
pub(crate) struct WorkSet {
    /// The serial of the transaction that last held it (0: none).
    pub owner: u64,
    /// Its size when last measured (see [`give_work`]).
    pub bytes: usize,
    pub memo: TransformMemo,
    pub cands: Vec<Candidate>,
    pub scratch: Scratch,
    pub vbuf: Vec<u8>,
    pub tbuf: Vec<u8>,
    pub admission: Admission,
    pub stops: super::stops::Stops,
    pub setvar_buf: Vec<u8>,
    pub setvar_key: Vec<u8>,
    /// A TX value a lean rule tests (see `lean.rs`).
    pub lean_buf: Vec<u8>,
    pub bits_buf: Vec<u64>,
    /// The per-list and per-class caches: their bytes are kept as they change
    /// (see [`Tracked`]), not measured at the end.
    pub target_sets: Tracked<super::targets::TargetSetCache>,
    pub class_unions: Tracked<super::classes::ClassUnion>,
    pub class_values: Tracked<super::classes::ClassValues>,
    pub list_maybes: Tracked<super::classes::ListMaybe>,
    pub lent_buf: Vec<(u32, u32)>,
    /// What `lent_buf` holds the per-value scans of, when given back whole (see
    /// `Transaction::take_value_scans`).
    pub lent_for: Option<super::groups::LentFor>,
    /// The candidates a rule's prefilter test keeps (see `eval_candidates`).
    pub kept: Vec<Candidate>,
    /// The groups of a `capture` rule's match, before they go into TX:0-9
    /// (kept with the set: a new transaction's first captures would otherwise
    /// allocate the ten group buffers again; R2 with the result cache about 20
    /// allocations per request).
    pub captures: crate::operator::Captures,
}

impl WorkSet {
    /// Forgets every cached result, keeping the buffers: the set is then as good as
    /// new for any transaction.
    pub(crate) fn reset(&mut self) {
        self.memo.clear();
        self.cands.clear();
        self.scratch.reset();
        self.vbuf.clear();
        self.tbuf.clear();
        self.admission.forget();
        self.stops.forget();
        // The target sets, class values and unions and list maybe sets are
        // kept as they are: they are keyed by data generations and list
        // versions, which are unique to a transaction (see
        // `data::BLOCK_BITS`), so another never finds one current.
        self.lent_buf.clear();
        self.lent_for = None;
        self.kept.clear();
        self.setvar_buf.clear();
        self.setvar_key.clear();
        self.lean_buf.clear();
        self.captures.clear();
        self.owner = 0;
    }

    /// Bytes held, by capacity, other than the memo's: the tracked lists' as
    /// kept, the other buffers' measured.
    fn other_bytes(&self) -> usize {
        self.fixed_bytes()
            + self.target_sets.bytes()
            + self.class_unions.bytes()
            + self.class_values.bytes()
            + self.list_maybes.bytes()
    }

    /// Whether the tracked lists' kept bytes are what they hold (for the debug
    /// check in [`give_work`]).
    fn tracked_bytes_hold(&self) -> bool {
        self.target_sets.bytes() == self.target_sets.measure()
            && self.class_unions.bytes() == self.class_unions.measure()
            && self.class_values.bytes() == self.class_values.measure()
            && self.list_maybes.bytes() == self.list_maybes.measure()
    }

    /// Bytes held by the buffers other than the memo and the tracked lists.
    fn fixed_bytes(&self) -> usize {
        (self.cands.capacity() + self.kept.capacity()) * std::mem::size_of::<Candidate>()
            + self.scratch.capacity_bytes()
            + self.vbuf.capacity()
            + self.tbuf.capacity()
            + self.setvar_buf.capacity()
            + self.setvar_key.capacity()
            + self.lean_buf.capacity()
            + self.bits_buf.capacity() * 8
            + self.admission.capacity_bytes()
            + self.stops.capacity_bytes()
            + self.lent_buf.capacity() * 8
            + self.captures.capacity_bytes()
    }
}

/// A thread's kept sets of one kind, each with its size when it was kept.
struct Kept<T> {
    sets: Vec<(T, usize)>,
    bytes: usize,
}

impl<T> Kept<T> {
    const fn new() -> Self {
        Kept {
            sets: Vec::new(),
            bytes: 0,
        }
    }

    fn pop(&mut self) -> Option<T> {
        let (set, bytes) = self.sets.pop()?;
        self.bytes -= bytes;
        Some(set)
    }

    /// Keeps `set` if the pool has room for it (else it is dropped).
    fn push(&mut self, set: T, bytes: usize) {
        if self.sets.len() < POOL_MAX && self.bytes + bytes <= POOL_MAX_BYTES {
            self.bytes += bytes;
            self.sets.push((set, bytes));
        }
    }
}

thread_local! {
    static POOL: RefCell<Kept<Buffers>> = const { RefCell::new(Kept::new()) };
    static WORK: RefCell<Kept<Box<WorkSet>>> = const { RefCell::new(Kept::new()) };
    /// Unused empty work sets, to stand in for a transaction's set while it holds
    /// none (see the module). Boxed on purpose: a box changes hands, not the set.
    #[allow(clippy::vec_box)]
    static STAND_INS: RefCell<Vec<Box<WorkSet>>> = const { RefCell::new(Vec::new()) };
}

/// A cleared set of state buffers: from this thread's pool, or new.
pub(crate) fn take() -> Buffers {
    POOL.try_with(|p| p.try_borrow_mut().ok()?.pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Returns a set of state buffers to this thread's pool (cleared), unless the pool
/// is full or the set is too large to keep.
pub(crate) fn give(mut b: Buffers) {
    let large = [
        b.data.trim(KEEP_MAX_BUFFER),
        b.matched_vars.trim(KEEP_MAX_BUFFER),
    ];
    if large.iter().any(|&n| n > KEEP_MAX_BYTES) {
        return;
    }
    b.data.clear();
    // A TX restored from a prologue keeps its members: the next transaction's
    // restore undoes only what this one changed.
    if !b.tx.has_baseline() {
        b.tx.clear();
    }
    b.matched_vars.clear();
    // Clearing keeps every capacity: the sizes measured above still hold.
    let bytes = large.iter().sum::<usize>() + b.tx.capacity_bytes();
    let _ = POOL.try_with(|p| {
        if let Ok(mut pool) = p.try_borrow_mut() {
            pool.push(b, bytes);
        }
    });
}

/// A work set from this thread's pool (the one `owner` left last, if it is still
/// there), or new. It is not cleared: see [`WorkSet::owner`].
pub(crate) fn take_work(owner: u64) -> Box<WorkSet> {
    WORK.try_with(|p| {
        let mut p = p.try_borrow_mut().ok()?;
        // The set most recently given is on top; the one `owner` left may be just
        // under it (another transaction's phase ran in between).
        let n = p.sets.len();
        if n >= 2 && p.sets[n - 1].0.owner != owner && p.sets[n - 2].0.owner == owner {
            p.sets.swap(n - 1, n - 2);
        }
        p.pop()
    })
    .ok()
    .flatten()
    .unwrap_or_default()
}

/// Returns a work set to this thread's pool (with its caches, for its owner),
/// unless the pool is full or the set is too large to keep.
///
/// `last` says that its owner is done with it (the transaction ended): the set is
/// measured then, and only then (its per-list caches as [`Tracked`] kept their
/// bytes, the other buffers one by one), so between two phases of one
/// transaction it counts at its size when its last owner ended.
/// What the sets of the transactions in flight grew by since is bounded by those
/// transactions, as when each held its set from start to end.
pub(crate) fn give_work(mut w: Box<WorkSet>, last: bool) {
    if last {
        let memo = w.memo.trim(KEEP_MAX_BUFFER);
        if memo > KEEP_MAX_BYTES {
            return;
        }
        for b in [
            &mut w.vbuf,
            &mut w.tbuf,
            &mut w.setvar_buf,
            &mut w.setvar_key,
            &mut w.lean_buf,
        ] {
            crate::buffers::shed(b, KEEP_MAX_BUFFER);
        }
        w.captures.trim(KEEP_MAX_BUFFER);
        debug_assert!(w.tracked_bytes_hold(), "a work set's kept size is wrong");
        w.bytes = memo + w.other_bytes();
    }
    let bytes = w.bytes;
    let _ = WORK.try_with(|p| {
        if let Ok(mut pool) = p.try_borrow_mut() {
            pool.push(w, bytes);
        }
    });
}

/// An empty work set to stand in for a transaction's while it holds none: an
/// unused one from this thread's stack, or new.
pub(crate) fn stand_in() -> Box<WorkSet> {
    STAND_INS
        .try_with(|s| s.try_borrow_mut().ok()?.pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Takes back a stand-in a transaction gives up for a set from the pool: kept
/// for the next when nothing used it (it holds no buffer), else dropped.
pub(crate) fn give_stand_in(mut w: Box<WorkSet>) {
    if w.memo.capacity_bytes() + w.other_bytes() != 0 {
        return;
    }
    // Buffers aside, a stamp or an owner may have been set: cleared.
    w.reset();
    let _ = STAND_INS.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.len() < POOL_MAX {
                s.push(w);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The number of state sets this thread's pool holds.
    fn kept() -> usize {
        POOL.with(|p| p.borrow().sets.len())
    }

    /// The number of work sets this thread's pool holds.
    fn kept_work() -> usize {
        WORK.with(|p| p.borrow().sets.len())
    }

    #[test]
    fn the_pool_keeps_sets_up_to_its_byte_budget() {
        std::thread::spawn(|| {
            let big = POOL_MAX_BYTES / 4;
            for _ in 0..5 {
                let mut w = Box::<WorkSet>::default();
                w.bits_buf.reserve_exact(big / 8);
                give_work(w, true);
            }
            assert_eq!(kept_work(), 4);
            assert!(WORK.with(|p| p.borrow().bytes) <= POOL_MAX_BYTES);
            for _ in 0..4 {
                assert!(take_work(0).bits_buf.capacity() * 8 >= big);
            }
            assert_eq!(WORK.with(|p| p.borrow().bytes), 0);
            assert_eq!(
                take_work(0).bits_buf.capacity(),
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
                give_work(Box::default(), true);
            }
            assert_eq!(kept(), POOL_MAX);
            assert_eq!(kept_work(), POOL_MAX);
        })
        .join()
        .expect("the test thread panicked");
    }

    #[test]
    fn a_set_with_a_large_arena_is_not_kept() {
        std::thread::spawn(|| {
            let mut b = Buffers::default();
            let value = vec![b'x'; KEEP_MAX_BUFFER / 2];
            for _ in 0..=(KEEP_MAX_BYTES / value.len()) {
                b.data.push(crate::variable::Var::Args, b"k", &value);
            }
            give(b);
            assert_eq!(kept(), 0);
        })
        .join()
        .expect("the test thread panicked");
    }

    #[test]
    fn large_value_buffers_are_freed_and_the_set_kept() {
        std::thread::spawn(|| {
            let mut b = Buffers::default();
            b.data.push(
                crate::variable::Var::Args,
                b"k",
                &vec![b'x'; KEEP_MAX_BUFFER + 1],
            );
            b.data.push(crate::variable::Var::Args, b"small", b"value");
            give(b);
            assert_eq!(kept(), 1);
            let b = take();
            let held = b.data.capacity_bytes();
            assert!(held > 0, "the small buffers are kept");
            assert!(held < KEEP_MAX_BUFFER, "the large one is freed: {held}");
        })
        .join()
        .expect("the test thread panicked");
    }

    #[test]
    fn large_capture_buffers_are_freed_and_the_work_set_kept() {
        std::thread::spawn(|| {
            let mut w = Box::<WorkSet>::default();
            w.owner = 3;
            w.captures.set(0, &vec![b'x'; KEEP_MAX_BUFFER + 1]);
            w.captures.set(1, b"small");
            give_work(w, true);
            assert_eq!(kept_work(), 1);
            let w = take_work(3);
            let held = w.captures.capacity_bytes();
            assert!(held >= 5, "the small buffer is kept: {held}");
            assert!(held < KEEP_MAX_BUFFER, "the large one is freed: {held}");
            assert!(w.captures.is_empty() && w.captures.get(1).is_none());
        })
        .join()
        .expect("the test thread panicked");
    }

    #[test]
    fn only_unused_stand_ins_are_kept_and_they_come_back_cleared() {
        std::thread::spawn(|| {
            let stand_ins = || STAND_INS.with(|s| s.borrow().len());
            // Something used it: it holds a buffer, and is dropped.
            let mut used = stand_in();
            used.vbuf.extend_from_slice(b"a value");
            give_stand_in(used);
            assert_eq!(stand_ins(), 0);
            // Unused but stamped: kept, and the next stand-in is it, cleared.
            let mut unused = stand_in();
            unused.owner = 5;
            give_stand_in(unused);
            assert_eq!(stand_ins(), 1);
            assert_eq!(stand_in().owner, 0);
            assert_eq!(stand_ins(), 0);
        })
        .join()
        .expect("the test thread panicked");
    }

    #[test]
    fn a_work_set_goes_back_to_its_owner_when_it_is_one_of_the_last_two() {
        std::thread::spawn(|| {
            for owner in [7, 8, 9] {
                give_work(
                    Box::new(WorkSet {
                        owner,
                        ..WorkSet::default()
                    }),
                    false,
                );
            }
            assert_eq!(take_work(8).owner, 8, "second from the top");
            assert_eq!(take_work(9).owner, 9, "on top");
            assert_eq!(take_work(1).owner, 7, "another's set when it is not there");
            assert_eq!(take_work(1).owner, 0, "a new set once the pool is empty");
        })
        .join()
        .expect("the test thread panicked");
    }
}
