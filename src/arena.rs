//! A bump allocator for short-lived processes: the guard runs once per tool call, builds a few
//! thousand small strings and vectors (words, segments, paths) and exits within milliseconds.
//! With the system allocator a third of a long command's analysis went to `malloc` and `free`;
//! here an allocation is one compare-and-swap on a counter and a free is nothing, except that
//! the newest block gives its room back (a vector that grows at the top grows in place, and a
//! temporary freed right after use is reused at once).
//!
//! The room is a fixed static buffer (zeroed, so the kernel backs only the pages touched).
//! What does not fit goes to the system allocator, and frees of such blocks go back to it, so a
//! very large input costs memory as before instead of failing. Memory freed below the top is
//! not reused: the process ends first.
//!
//! Safe to share between threads (the guard's deadline watchdog where there is one): regions
//! are handed out by compare-and-swap and never overlap.

#![allow(unsafe_code)]
// The one other place unsafe code is allowed (see Cargo.toml's lints): a global allocator is an
// `unsafe trait` by definition. The invariants are stated at each block.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `N` bytes of room, then the system allocator.
pub struct Arena<const N: usize> {
    room: UnsafeCell<[u8; N]>,
    /// Bytes of `room` handed out, from its start.
    used: AtomicUsize,
}

// SAFETY: the buffer is only reached through disjoint regions handed out by `alloc`, each
// reserved by a compare-and-swap on `used`; no two callers ever get overlapping bytes.
unsafe impl<const N: usize> Sync for Arena<N> {}

impl<const N: usize> Arena<N> {
    /// An empty arena (for a `static`).
    pub const fn new() -> Arena<N> {
        Arena {
            room: UnsafeCell::new([0; N]),
            used: AtomicUsize::new(0),
        }
    }

    fn base(&self) -> usize {
        self.room.get() as usize
    }

    /// The offset of `ptr` in the room, when it points into it.
    fn offset(&self, ptr: *mut u8) -> Option<usize> {
        let at = (ptr as usize).checked_sub(self.base())?;
        (at < N).then_some(at)
    }

    /// Bytes handed out so far (for tests and reports).
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Moves the top from `from` to `to` when it is still at `from` (the block ending there
    /// is the newest).
    fn move_top(&self, from: usize, to: usize) -> bool {
        self.used
            .compare_exchange(from, to, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

impl<const N: usize> Default for Arena<N> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every pointer returned is either a fresh region of `room` of at least `layout.size()`
// bytes at `layout.align()`, reserved for its caller alone, or one from `System` (and then
// freed and reallocated through `System` only, told apart by its address).
unsafe impl<const N: usize> GlobalAlloc for Arena<N> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = self.base();
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let fits = (base + used)
                .checked_next_multiple_of(layout.align())
                .and_then(|start| Some((start, start.checked_add(layout.size())?)))
                .filter(|&(_, end)| end <= base + N);
            let Some((start, end)) = fits else {
                // SAFETY: the caller's layout, handed on unchanged.
                return unsafe { System.alloc(layout) };
            };
            match self.used.compare_exchange_weak(
                used,
                end - base,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return start as *mut u8,
                Err(now) => used = now,
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match self.offset(ptr) {
            // The newest block gives its room back; any other stays used until exit.
            Some(at) => {
                self.move_top(at + layout.size(), at);
            }
            // SAFETY: not in the room, so `System` allocated it with this layout.
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if let Some(at) = self.offset(ptr) {
            let end = at + layout.size();
            if new_size <= layout.size() {
                // Shrinking stays in place; the newest block gives the tail back.
                self.move_top(end, at + new_size);
                return ptr;
            }
            // The newest block grows in place while the room lasts.
            if at
                .checked_add(new_size)
                .is_some_and(|new_end| new_end <= N && self.move_top(end, new_end))
            {
                return ptr;
            }
        }
        // SAFETY: `new_size` is non-zero and, with the old alignment, a valid layout (the
        // caller's contract for `realloc`).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as for `alloc`.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are at least this long and are distinct allocations.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn blocks_are_aligned_disjoint_and_inside_the_room() {
        let a: Arena<4096> = Arena::new();
        let mut seen: Vec<(usize, usize)> = Vec::new();
        for (size, align) in [(1, 1), (3, 8), (16, 16), (5, 64), (100, 4), (1, 256)] {
            let p = unsafe { a.alloc(layout(size, align)) };
            assert_eq!(p as usize % align, 0, "{size}@{align}");
            assert!(a.offset(p).is_some());
            unsafe { std::ptr::write_bytes(p, 0xAB, size) };
            let r = (p as usize, p as usize + size);
            assert!(
                seen.iter().all(|&(s, e)| r.1 <= s || e <= r.0),
                "{r:?} {seen:?}"
            );
            seen.push(r);
        }
    }

    #[test]
    fn the_newest_block_gives_its_room_back_and_older_ones_do_not() {
        let a: Arena<4096> = Arena::new();
        let l = layout(32, 8);
        let first = unsafe { a.alloc(l) };
        let second = unsafe { a.alloc(l) };
        let top = a.used();
        unsafe { a.dealloc(first, l) };
        assert_eq!(a.used(), top, "a block below the top stays used");
        unsafe { a.dealloc(second, l) };
        assert_eq!(a.used(), top - 32);
        assert_eq!(unsafe { a.alloc(l) }, second, "its room is reused at once");
    }

    #[test]
    fn the_newest_block_grows_in_place_and_an_older_one_moves_with_its_bytes() {
        let a: Arena<4096> = Arena::new();
        let old = unsafe { a.alloc(layout(8, 8)) };
        unsafe { std::ptr::copy_nonoverlapping(b"abcdefgh".as_ptr(), old, 8) };
        let grown = unsafe { a.realloc(old, layout(8, 8), 64) };
        assert_eq!(grown, old, "the top block grows in place");
        let other = unsafe { a.alloc(layout(8, 8)) };
        let moved = unsafe { a.realloc(old, layout(64, 8), 128) };
        assert_ne!(moved, old, "a block below the top is copied");
        assert!(moved as usize > other as usize);
        let bytes = unsafe { std::slice::from_raw_parts(moved, 8) };
        assert_eq!(bytes, b"abcdefgh");
        let shrunk = unsafe { a.realloc(moved, layout(128, 8), 16) };
        assert_eq!(shrunk, moved, "shrinking stays in place");
        assert_eq!(
            a.used(),
            a.offset(moved).unwrap() + 16,
            "and gives the tail back"
        );
    }

    #[test]
    fn what_does_not_fit_comes_from_the_system_and_goes_back_to_it() {
        let a: Arena<256> = Arena::new();
        let big = layout(1024, 8);
        let p = unsafe { a.alloc(big) };
        assert!(!p.is_null());
        assert!(a.offset(p).is_none(), "too big for the room");
        unsafe { std::ptr::write_bytes(p, 7, 1024) };
        let small = unsafe { a.alloc(layout(200, 8)) };
        assert!(a.offset(small).is_some());
        // Growing past the room moves the block to the system, bytes kept.
        unsafe { std::ptr::write_bytes(small, 9, 200) };
        let moved = unsafe { a.realloc(small, layout(200, 8), 4096) };
        assert!(a.offset(moved).is_none());
        assert!(
            unsafe { std::slice::from_raw_parts(moved, 200) }
                .iter()
                .all(|&b| b == 9)
        );
        unsafe {
            a.dealloc(moved, layout(4096, 8));
            a.dealloc(p, big);
        }
    }

    #[test]
    fn threads_get_disjoint_blocks() {
        static A: Arena<{ 1 << 20 }> = Arena::new();
        let threads: Vec<_> = (0..4u8)
            .map(|t| {
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..500usize {
                        let l = layout(8 + i % 24, 8);
                        let p = unsafe { A.alloc(l) };
                        unsafe { std::ptr::write_bytes(p, t, l.size()) };
                        mine.push((p as usize, l));
                        if i % 3 == 0 {
                            let (q, l) = mine.pop().unwrap();
                            unsafe { A.dealloc(q as *mut u8, l) };
                        }
                    }
                    // Nobody wrote over this thread's blocks.
                    for &(p, l) in &mine {
                        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, l.size()) };
                        assert!(bytes.iter().all(|&b| b == t));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
