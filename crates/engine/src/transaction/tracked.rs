//! A vector of work-set entries that keeps the bytes they hold as it goes, so
//! the pool (see [`super::pool`]) knows a returned work set's size without a
//! pass over every entry of every list at each transaction's end.
//!
//! An entry changes only through an [`Edit`] (which counts what its buffers
//! grew or shrank by when it is dropped), through [`Tracked::set_flags`]
//! (changes that leave its buffers as they are, checked in debug builds) or
//! through [`Tracked::lending`] (buffers taken out for a while, counted as the
//! entry's until they come back or are given up). [`Tracked::bytes`] is then always what
//! [`Tracked::measure`] finds; debug builds assert it whenever a work set goes
//! back to the pool.

use std::ops::{Deref, DerefMut, Index};

/// An entry's heap bytes: its buffers' capacities (not the entry itself, which
/// the vector's capacity counts).
pub(crate) trait HeapBytes {
    fn heap_bytes(&self) -> usize;
}

/// Entries with their bytes kept (see the module).
#[derive(Debug)]
pub(crate) struct Tracked<T> {
    items: Vec<T>,
    /// The vector's capacity times the entry size, plus every entry's
    /// [`HeapBytes::heap_bytes`].
    bytes: usize,
}

impl<T> Default for Tracked<T> {
    fn default() -> Self {
        Tracked {
            items: Vec::new(),
            bytes: 0,
        }
    }
}

impl<T: HeapBytes + Default> Tracked<T> {
    /// Bytes held, as kept.
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bytes held, measured entry by entry.
    pub(crate) fn measure(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<T>()
            + self.items.iter().map(HeapBytes::heap_bytes).sum::<usize>()
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        self.items.get(i)
    }

    /// Entry `i` for a change of any kind, the vector grown with new entries
    /// to hold it if needed.
    #[inline(always)]
    pub(crate) fn edit(&mut self, i: usize) -> Edit<'_, T> {
        self.ensure(i);
        let item = &mut self.items[i];
        let before = item.heap_bytes();
        Edit {
            item,
            bytes: &mut self.bytes,
            before,
        }
    }

    /// Applies `f` to entry `i` (the vector grown to hold it if needed), which
    /// must leave the entry's buffers as they are: flags, versions, clears.
    #[inline]
    pub(crate) fn set_flags<R>(&mut self, i: usize, f: impl FnOnce(&mut T) -> R) -> R {
        self.ensure(i);
        let item = &mut self.items[i];
        #[cfg(debug_assertions)]
        let before = item.heap_bytes();
        let r = f(item);
        #[cfg(debug_assertions)]
        debug_assert_eq!(before, item.heap_bytes(), "set_flags changed a buffer");
        r
    }

    /// Entry `i` (when there is one), to lend buffers out of it for a while or
    /// to put them back: a lent buffer stays counted as the entry's, so it must
    /// come back through this or be given up with [`Tracked::lent_dropped`].
    #[inline]
    pub(crate) fn lending(&mut self, i: usize) -> Option<&mut T> {
        self.items.get_mut(i)
    }

    /// A lent buffer holding `bytes` was dropped instead of put back.
    #[inline]
    pub(crate) fn lent_dropped(&mut self, bytes: usize) {
        self.bytes = self.bytes.saturating_sub(bytes);
    }

    #[inline]
    fn ensure(&mut self, i: usize) {
        if self.items.len() <= i {
            let cap = self.items.capacity();
            // New entries hold no buffer.
            self.items.resize_with(i + 1, T::default);
            self.bytes += (self.items.capacity() - cap) * std::mem::size_of::<T>();
        }
    }
}

impl<T> Index<usize> for Tracked<T> {
    type Output = T;

    #[inline]
    fn index(&self, i: usize) -> &T {
        &self.items[i]
    }
}

/// An entry being changed: what its buffers grew or shrank by is counted when
/// this is dropped.
pub(crate) struct Edit<'a, T: HeapBytes> {
    item: &'a mut T,
    bytes: &'a mut usize,
    before: usize,
}

impl<T: HeapBytes> Deref for Edit<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        self.item
    }
}

impl<T: HeapBytes> DerefMut for Edit<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        self.item
    }
}

impl<T: HeapBytes> Drop for Edit<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // (`bytes` holds `before`; saturating all the same: a wrong count
        // must not panic a worker.)
        *self.bytes = (*self.bytes + self.item.heap_bytes()).saturating_sub(self.before);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Entry {
        flag: bool,
        buf: Vec<u64>,
    }

    impl HeapBytes for Entry {
        fn heap_bytes(&self) -> usize {
            self.buf.capacity() * 8
        }
    }

    #[test]
    fn the_kept_bytes_follow_every_change() {
        let mut t: Tracked<Entry> = Tracked::default();
        assert_eq!(t.bytes(), 0);
        t.edit(3).buf.extend([1, 2, 3]);
        assert_eq!(t.bytes(), t.measure());
        assert!(t.bytes() >= 4 * std::mem::size_of::<Entry>() + 24);
        // Taken out and dropped elsewhere: the entry holds nothing any more.
        let taken = std::mem::take(&mut t.edit(3).buf);
        assert_eq!(t.bytes(), t.measure());
        drop(taken);
        {
            let mut e = t.edit(1);
            e.buf.reserve_exact(100);
            e.buf.push(7);
        }
        assert_eq!(t.bytes(), t.measure());
        t.edit(1).buf = Vec::new();
        assert_eq!(t.bytes(), t.measure());
        // Lent and put back, lent and given up.
        let lent = std::mem::take(&mut t.lending(1).expect("entry 1 exists").buf);
        assert_eq!(t.bytes(), t.measure() + lent.capacity() * 8);
        t.lending(1).expect("entry 1 exists").buf = lent;
        assert_eq!(t.bytes(), t.measure());
        let lent = std::mem::take(&mut t.lending(1).expect("entry 1 exists").buf);
        t.lent_dropped(lent.capacity() * 8);
        assert_eq!(t.bytes(), t.measure());
        t.set_flags(9, |e| e.flag = true);
        assert!(t[9].flag);
        assert_eq!(t.bytes(), t.measure());
        assert!(t.get(10).is_none());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "set_flags changed a buffer")]
    fn a_buffer_change_outside_an_edit_is_caught() {
        let mut t: Tracked<Entry> = Tracked::default();
        t.set_flags(0, |e| e.buf.push(1));
    }
}
