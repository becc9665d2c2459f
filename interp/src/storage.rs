//! Tensor storage: 64-byte aligned element buffers whose large allocations
//! go back to a process-wide pool when dropped and are handed out again
//! for the next buffer of the same size.
//!
//! Why: a fresh 64 MB buffer costs about 16k page faults on first touch,
//! as much as a memory-bound kernel that fills it. A reused buffer is
//! already mapped. Alignment to 64 bytes (a cache line, an AVX-512
//! register) lets compiled kernels use aligned vector loads and stores.
//!
//! Rules:
//! - allocations of at least [`POOL_MIN_BYTES`] are pooled, keyed by their
//!   exact size in bytes; smaller ones go straight to the allocator;
//! - the pool keeps at most [`pool_limit`] bytes (`JITC_POOL_BYTES`,
//!   default 1 GiB); a drop that would exceed it frees the memory instead;
//! - a buffer taken for overwriting ([`Storage::for_overwrite`]) holds
//!   valid but unspecified elements (a reused buffer's old contents, or
//!   zeros); `bool` buffers are always zeroed, since other bytes are not
//!   valid `bool`s.

use std::{
    alloc::Layout,
    collections::HashMap,
    fmt,
    ptr::NonNull,
    sync::{
        Mutex, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
};

/// Buffers are aligned to this many bytes.
pub const ALIGNMENT: usize = 64;

/// Allocations of at least this many bytes are pooled.
pub const POOL_MIN_BYTES: usize = 64 << 10;

/// Element types a [`Storage`] can hold.
pub trait Element: Copy + PartialEq + fmt::Debug + Send + Sync + 'static + sealed::Sealed {
    /// Whether every bit pattern is a valid value (so reused memory may be
    /// handed out without clearing it).
    const ANY_BITS: bool;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! element {
    ($($t:ty => $any:expr),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const ANY_BITS: bool = $any;
        }
    )*};
}
element!(f32 => true, f64 => true, i32 => true, i64 => true, bool => false);

struct Pool {
    free: HashMap<usize, Vec<usize>>,
    bytes: usize,
}

fn pool() -> &'static Mutex<Pool> {
    static POOL: OnceLock<Mutex<Pool>> = OnceLock::new();
    POOL.get_or_init(|| {
        Mutex::new(Pool {
            free: HashMap::new(),
            bytes: 0,
        })
    })
}

/// The most bytes the pool keeps: `JITC_POOL_BYTES`, or 1 GiB.
pub fn pool_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("JITC_POOL_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1 << 30)
    })
}

static REUSED: AtomicU64 = AtomicU64::new(0);
static ALLOCATED: AtomicU64 = AtomicU64::new(0);

/// Counters of the pool since the process started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Pooled-size buffers handed out from the pool.
    pub reused: u64,
    /// Pooled-size buffers that had to be allocated.
    pub allocated: u64,
    /// Bytes held by the pool now.
    pub held_bytes: usize,
}

/// The pool's counters.
pub fn pool_stats() -> PoolStats {
    let held_bytes = pool().lock().map_or(0, |p| p.bytes);
    PoolStats {
        reused: REUSED.load(Ordering::Relaxed),
        allocated: ALLOCATED.load(Ordering::Relaxed),
        held_bytes,
    }
}

/// Frees every buffer the pool holds.
pub fn clear_pool() {
    let Ok(mut pool) = pool().lock() else { return };
    for (bytes, addresses) in pool.free.drain() {
        for address in addresses {
            // SAFETY: pooled addresses were allocated with this layout and
            // are owned by the pool alone.
            unsafe { std::alloc::dealloc(address as *mut u8, layout(bytes)) };
        }
    }
    pool.bytes = 0;
}

fn layout(bytes: usize) -> Layout {
    // Sizes come from a `len * size_of` that fits in memory, and 64 is a
    // power of two, so this cannot fail for a live allocation.
    Layout::from_size_align(bytes, ALIGNMENT)
        .unwrap_or_else(|_| std::alloc::handle_alloc_error(Layout::new::<[u8; ALIGNMENT]>()))
}

/// `len` elements of `T`, 64-byte aligned, owned.
pub struct Storage<T: Element> {
    pointer: NonNull<T>,
    len: usize,
}

// SAFETY: `Storage` owns its elements like a `Vec<T>`; `T` is Send + Sync.
unsafe impl<T: Element> Send for Storage<T> {}
// SAFETY: as above; shared access only reads.
unsafe impl<T: Element> Sync for Storage<T> {}

impl<T: Element> Storage<T> {
    /// `len` elements whose values are valid but unspecified, meant to be
    /// overwritten (a reused buffer's old contents, or zeros). Aborts, as
    /// `Vec` does, when the memory cannot be had: callers holding sizes a
    /// user chose use [`Self::try_for_overwrite`].
    pub fn for_overwrite(len: usize) -> Self {
        Self::try_for_overwrite(len).unwrap_or_else(|_| {
            let bytes = len
                .saturating_mul(size_of::<T>())
                .min(isize::MAX as usize - ALIGNMENT);
            std::alloc::handle_alloc_error(layout(bytes))
        })
    }

    /// [`Self::for_overwrite`], or why the memory could not be had: more
    /// bytes than an allocation can hold, or an allocator that said no.
    pub fn try_for_overwrite(len: usize) -> Result<Self, String> {
        let too_large = || {
            format!(
                "cannot allocate {len} elements of {} bytes: out of memory",
                size_of::<T>()
            )
        };
        let bytes = len
            .checked_mul(size_of::<T>())
            .filter(|&b| b <= isize::MAX as usize - ALIGNMENT)
            .ok_or_else(too_large)?;
        if bytes == 0 {
            // An aligned, never dereferenced address, like `NonNull::dangling`.
            let aligned = std::ptr::without_provenance_mut::<T>(ALIGNMENT);
            return Ok(Self {
                // SAFETY: the address is not null.
                pointer: unsafe { NonNull::new_unchecked(aligned) },
                len,
            });
        }
        if bytes >= POOL_MIN_BYTES {
            let reused = pool().lock().ok().and_then(|mut pool| {
                let address = pool.free.get_mut(&bytes)?.pop()?;
                pool.bytes -= bytes;
                Some(address)
            });
            if let Some(address) = reused {
                REUSED.fetch_add(1, Ordering::Relaxed);
                let pointer = address as *mut T;
                if !T::ANY_BITS {
                    // SAFETY: the allocation holds `bytes` writable bytes.
                    unsafe { std::ptr::write_bytes(pointer.cast::<u8>(), 0, bytes) };
                }
                return Ok(Self {
                    // SAFETY: pooled addresses are never null.
                    pointer: unsafe { NonNull::new_unchecked(pointer) },
                    len,
                });
            }
            ALLOCATED.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: `bytes` is non-zero; zeroed memory is a valid value of
        // every `Element` (0.0, 0, false).
        let raw = unsafe { std::alloc::alloc_zeroed(layout(bytes)) };
        let pointer = NonNull::new(raw.cast::<T>()).ok_or_else(too_large)?;
        Ok(Self { pointer, len })
    }

    /// `len` copies of `value`.
    pub fn filled(value: T, len: usize) -> Self {
        let mut storage = Self::for_overwrite(len);
        storage.fill(value);
        storage
    }

    /// [`Self::filled`], or why the memory could not be had.
    pub fn try_filled(value: T, len: usize) -> Result<Self, String> {
        let mut storage = Self::try_for_overwrite(len)?;
        storage.fill(value);
        Ok(storage)
    }

    /// A copy of `values`.
    pub fn from_slice(values: &[T]) -> Self {
        let mut storage = Self::for_overwrite(values.len());
        storage.copy_from_slice(values);
        storage
    }
}

impl<T: Element> Drop for Storage<T> {
    fn drop(&mut self) {
        let bytes = size_of::<T>() * self.len;
        if bytes == 0 {
            return;
        }
        let address = self.pointer.as_ptr() as usize;
        if bytes >= POOL_MIN_BYTES
            && let Ok(mut pool) = pool().lock()
            && pool.bytes + bytes <= pool_limit()
        {
            pool.bytes += bytes;
            pool.free.entry(bytes).or_default().push(address);
            return;
        }
        // SAFETY: allocated in `for_overwrite` with this layout.
        unsafe { std::alloc::dealloc(self.pointer.as_ptr().cast(), layout(bytes)) };
    }
}

impl<T: Element> std::ops::Deref for Storage<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `pointer` holds `len` initialized elements (or is dangling
        // and aligned with `len` 0).
        unsafe { std::slice::from_raw_parts(self.pointer.as_ptr(), self.len) }
    }
}

impl<T: Element> std::ops::DerefMut for Storage<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `self` is borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.pointer.as_ptr(), self.len) }
    }
}

impl<T: Element> Clone for Storage<T> {
    fn clone(&self) -> Self {
        Self::from_slice(self)
    }
}

impl<T: Element> PartialEq for Storage<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Element> fmt::Debug for Storage<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: Element> From<Vec<T>> for Storage<T> {
    fn from(values: Vec<T>) -> Self {
        Self::from_slice(&values)
    }
}

impl<T: Element> FromIterator<T> for Storage<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<Vec<T>>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_keep_their_values() {
        for len in [0, 1, 3, 1000, POOL_MIN_BYTES / 4 + 1] {
            let s = Storage::filled(1.5f32, len);
            assert_eq!(s.as_ptr() as usize % ALIGNMENT, 0);
            assert!(s.iter().all(|&v| v == 1.5));
            assert_eq!(s.len(), len);
        }
    }

    #[test]
    fn an_impossible_allocation_is_an_error() {
        let error = Storage::<f64>::try_for_overwrite(usize::MAX / 4).unwrap_err();
        assert!(error.contains("out of memory"), "{error}");
        // Fits the address space's arithmetic, but no allocator has it.
        let error = Storage::<f32>::try_filled(0.0, 1 << 60).unwrap_err();
        assert!(error.contains("out of memory"), "{error}");
    }

    #[test]
    fn large_buffers_are_reused() {
        // A size no other test uses, so parallel tests cannot take it.
        let len = (POOL_MIN_BYTES / 8) * 3 + 7;
        let first = Storage::filled(2.0f64, len);
        let address = first.as_ptr() as usize;
        drop(first);
        let before = pool_stats().reused;
        let second = Storage::<f64>::for_overwrite(len);
        assert_eq!(second.as_ptr() as usize, address);
        assert!(pool_stats().reused > before);
        // Reused memory handed out as bool is cleared.
        drop(second);
        let flags = Storage::<bool>::for_overwrite(len * 8);
        assert!(flags.iter().all(|&b| !b));
    }
}
