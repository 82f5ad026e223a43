//! Cache hints. The engine is memory-bound at scale: most of an event's time
//! is the first load of a port, a queue slot or a packet on a wire that no
//! recent event touched. The event loop knows the next events of the current
//! calendar slot, so it asks the CPU to fetch what they will touch while it
//! works on the one before them (`Shard::hint_ahead`). A hint never changes
//! a result: it reads nothing and cannot fault.

/// Asks the CPU to fetch every cache line of `v` (x86-64; nothing elsewhere).
#[inline(always)]
pub fn prefetch<T>(v: &T) {
    prefetch_ptr(v as *const T);
}

/// [`prefetch`] for an address that may lie outside any live value (one
/// past a buffer's last element): a prefetch of any address is harmless.
#[inline(always)]
pub fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let size = std::mem::size_of::<T>().max(1);
        let p = p as *const i8;
        let mut off = 0;
        while off < size {
            // SAFETY: a prefetch never faults and has no visible effect,
            // whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
            off += 64;
        }
        // The value's last byte, in case it starts part-way into a line.
        // SAFETY: as above.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(size - 1)) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
