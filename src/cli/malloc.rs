//! glibc malloc thresholds for the `neff` binary (never set by the library
//! or the Python extension, whose host process owns its allocator).
//!
//! Checking a NEFF allocates a few hundred KiB (inflate state and window,
//! read and block buffers, manifests) and frees it all at the end. With
//! glibc's starting thresholds every thread hands that memory back to the
//! kernel after each small NEFF (`madvise`, about 0.5 MiB) and faults it in
//! again for the next: `neff verify DIR` of 2,000 11 KiB NEFFs spent more
//! time in the kernel than in checking. glibc raises its own thresholds the
//! first time a large block is freed (up to 32 MiB mmap, twice that kept),
//! which a large NEFF does at once; these values set that state from the
//! start, well below the cap glibc would reach itself.

/// Blocks from this size on are mapped on their own (glibc starts at 128 KiB).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 4 << 20;

/// Free memory kept at the top of a heap before it is returned (glibc starts
/// at 128 KiB).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 8 << 20;

/// Sets the thresholds; call it first, before any thread starts.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any other
    // thread exists. A refused value (return 0) leaves glibc's default.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}
