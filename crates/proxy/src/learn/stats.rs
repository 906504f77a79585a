//! Sampled per-rule statistics, accumulated per worker thread.
//!
//! The request path decides with a thread-local counter whether to profile a
//! transaction ([`Learner::sample`]); a sampled transaction's profile is merged,
//! when it finishes, into one of [`SHARDS`] mutex-guarded shards chosen by the
//! calling thread ([`Learner::record`]), so worker threads do not contend and
//! unsampled requests take no lock. The analyzer drains every shard once per
//! window ([`Learner::drain`]). Memory is bounded: a shard holds at most
//! [`MAX_ENTRIES`] profiles, each sized by its program's rule count.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use engine::profile::Profile;
use engine::Program;

/// Shards of accumulated profiles (threads are spread over them).
pub const SHARDS: usize = 16;

/// Most profiles (programs) a shard holds; more are dropped until the next drain.
pub const MAX_ENTRIES: usize = 64;

/// The profiles accumulated for one program.
#[derive(Debug)]
pub struct Entry {
    /// The program the profile was measured on (its identity).
    pub program: Weak<Program>,
    /// The learner's generation when it was recorded.
    pub generation: u64,
    /// Merged profiles of its sampled transactions.
    pub profile: Profile,
}

impl Entry {
    /// Whether this entry was measured on `program`.
    pub fn is_for(&self, program: &Arc<Program>) -> bool {
        std::ptr::eq(self.program.as_ptr(), Arc::as_ptr(program))
    }
}

/// Sampling and the sharded accumulators.
#[derive(Debug)]
pub struct Learner {
    shards: Vec<Mutex<Vec<Entry>>>,
    generation: AtomicU64,
}

impl Default for Learner {
    fn default() -> Self {
        Learner {
            shards: (0..SHARDS).map(|_| Mutex::new(Vec::new())).collect(),
            generation: AtomicU64::new(0),
        }
    }
}

thread_local! {
    /// Transactions seen by this thread (for sampling).
    static SEEN: Cell<u64> = const { Cell::new(0) };
    /// This thread's shard.
    static SHARD: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS
    };
}

impl Learner {
    /// Whether to profile this thread's next transaction: one in `every`.
    pub fn sample(&self, every: u64) -> bool {
        SEEN.with(|c| {
            let n = c.get().wrapping_add(1);
            c.set(n);
            n % every.max(1) == 0
        })
    }

    /// The current generation (bumped by [`Learner::reset`]).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Merges a sampled transaction's profile, measured on `program`.
    pub fn record(&self, program: &Arc<Program>, profile: &Profile) {
        let generation = self.generation();
        let i = SHARD.with(|s| *s);
        let Some(Ok(mut entries)) = self.shards.get(i).map(Mutex::lock) else {
            return;
        };
        if let Some(e) = entries
            .iter_mut()
            .find(|e| e.generation == generation && e.is_for(program))
        {
            e.profile.merge(profile);
        } else if entries.len() < MAX_ENTRIES {
            entries.push(Entry {
                program: Arc::downgrade(program),
                generation,
                profile: profile.clone(),
            });
        }
    }

    /// Takes everything accumulated so far.
    pub fn drain(&self) -> Vec<Entry> {
        let mut out = Vec::new();
        for s in &self.shards {
            if let Ok(mut entries) = s.lock() {
                out.append(&mut entries);
            }
        }
        out
    }

    /// Forgets everything (a new configuration is in force): statistics recorded
    /// before are dropped, and a transaction of the old configuration that
    /// finishes later is recorded under the new generation for a program the
    /// analyzer no longer finds in the table, so it is dropped too.
    pub fn reset(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        drop(self.drain());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(id: u32) -> Arc<Program> {
        Program::from_str(
            "t.conf",
            &format!("SecRule ARGS \"@contains x\" \"id:{id},phase:1,deny\"\n"),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn sampled(p: &Program) -> Profile {
        let mut prof = Profile::new(p.rules.len());
        prof.transactions = 1;
        prof
    }

    #[test]
    fn samples_one_in_n_per_thread() {
        let l = Learner::default();
        let hits = (0..64).filter(|_| l.sample(8)).count();
        assert_eq!(hits, 8);
        assert_eq!((0..10).filter(|_| l.sample(1)).count(), 10);
    }

    #[test]
    fn merges_by_program_and_reset_forgets() {
        let l = Learner::default();
        let (a, b) = (program(1), program(2));
        for _ in 0..3 {
            l.record(&a, &sampled(&a));
        }
        l.record(&b, &sampled(&b));
        let mut got = l.drain();
        got.sort_by_key(|e| e.profile.transactions);
        assert_eq!(got.len(), 2);
        assert!(got[0].is_for(&b) && got[1].is_for(&a));
        assert_eq!(got[1].profile.transactions, 3);
        assert!(l.drain().is_empty());
        l.record(&a, &sampled(&a));
        l.reset();
        assert!(l.drain().is_empty());
        assert_eq!(l.generation(), 1);
        l.record(&a, &sampled(&a));
        assert_eq!(l.drain()[0].generation, 1);
    }

    #[test]
    fn entries_are_bounded() {
        let l = Learner::default();
        let programs: Vec<_> = (1..=MAX_ENTRIES as u32 + 5).map(program).collect();
        for p in &programs {
            l.record(p, &sampled(p));
        }
        assert_eq!(l.drain().len(), MAX_ENTRIES);
    }
}
