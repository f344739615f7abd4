//! The page cache of an output about to be replaced.
//!
//! A new output is written beside the old one, which stays whole until the
//! swap, so for a while both are in the page cache and the new file's pages
//! come from free memory. On a virtual machine that hands free memory back
//! to its host (virtio-balloon free page reporting, as Firecracker does),
//! each of those pages is faulted in from the host the first time it is
//! written: 512 MiB took 3–5 s of system time here, against 0.2 s when the
//! pages were freed a moment before. Writing over the file in place
//! (`cat > out`) reuses its pages at once, but loses the old output when the
//! write fails.
//!
//! So before the new output is written, the old one's pages are dropped
//! from the cache when none of them is dirty or under writeback (Linux 6.5+
//! `cachestat`): its data is then on the device and nothing is lost, and the
//! new file reuses those pages. Dirty pages are left alone:
//! `POSIX_FADV_DONTNEED` would first write them out, I/O for a file about to
//! be removed. Linux only: elsewhere nothing is dropped.

use std::fs::File;

/// `cachestat(2)`'s number: 451 on every Linux architecture (new system
/// calls share one table since 5.1); absent from the `libc` crate for most.
const SYS_CACHESTAT: libc::c_long = 451;

/// `struct cachestat_range`: the byte range asked about (length 0: to the end).
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

/// `struct cachestat`: what `cachestat(2)` reports, in pages.
#[repr(C)]
#[derive(Default)]
pub(crate) struct Cachestat {
    pub(crate) nr_cache: u64,
    pub(crate) nr_dirty: u64,
    pub(crate) nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// The page-cache state of the whole of `file`; `None` where the kernel has
/// no `cachestat` (before 6.5) or refuses it.
pub(crate) fn cachestat(file: &File) -> Option<Cachestat> {
    use std::os::fd::AsRawFd;
    let range = CachestatRange { off: 0, len: 0 };
    let mut stat = Cachestat::default();
    // SAFETY: both structs are `repr(C)` as the kernel lays them out, owned
    // here and live across the call; the descriptor is open.
    let result = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const CachestatRange,
            &mut stat as *mut Cachestat,
            0,
        )
    };
    (result == 0).then_some(stat)
}

/// Drops `file`'s pages from the page cache when some are cached and none is
/// dirty or under writeback; returns whether it did.
pub(crate) fn release_if_clean(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    match cachestat(file) {
        Some(s) if s.nr_cache > 0 && s.nr_dirty == 0 && s.nr_writeback == 0 => {
            // SAFETY: a plain call on an open descriptor.
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0 }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A 4 MiB file, fsynced or not, open for reading, and its cache state;
    /// where there is no `cachestat` (Linux < 6.5), checks that nothing is
    /// dropped and gives `None`.
    fn written(fsync: bool) -> Option<(tempfile::TempDir, File, Cachestat)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.neff");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![7u8; 4 << 20]).unwrap();
        if fsync {
            f.sync_all().unwrap();
        }
        let file = File::open(&path).unwrap();
        let Some(state) = cachestat(&file) else {
            assert!(!release_if_clean(&file));
            return None;
        };
        Some((dir, file, state))
    }

    #[test]
    fn a_clean_file_is_dropped_from_the_cache() {
        let Some((_dir, file, before)) = written(true) else {
            return;
        };
        assert!(before.nr_cache > 0);
        if before.nr_dirty > 0 {
            // tmpfs: its pages stay dirty after an fsync (there is no
            // device), and are never dropped.
            assert!(!release_if_clean(&file));
            return;
        }
        assert!(release_if_clean(&file));
        assert_eq!(cachestat(&file).unwrap().nr_cache, 0);
        // The data is all still there.
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut &file, &mut data).unwrap();
        assert_eq!(data, vec![7u8; 4 << 20]);
    }

    #[test]
    fn a_dirty_file_keeps_its_pages_and_is_not_written_out() {
        let Some((_dir, file, before)) = written(false) else {
            return;
        };
        if before.nr_dirty == 0 {
            // Written back already (a busy kernel): then it is clean.
            return;
        }
        assert!(!release_if_clean(&file));
        assert_eq!(cachestat(&file).unwrap().nr_cache, before.nr_cache);
    }
}
