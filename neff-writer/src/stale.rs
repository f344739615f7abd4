//! Temp files left by a killed process (SIGKILL cannot be caught), found by
//! their name, `.<target>.neff-tmp.<pid>.<n>`. One is removed only when it is
//! a regular file, its pid is not a running process and no process holds its
//! lock (a writer locks its temp file for as long as it has it open), so a
//! file that is not ours, or is still being written, is never touched.

use std::fs::File;
use std::path::Path;

use crate::folder::Folder;

/// What separates the target's name from the pid in a temp file's name.
pub(crate) const MARKER: &str = ".neff-tmp.";

/// Removes the stale temp files in `folder`, passing each to `report`.
/// Unreadable folders and entries are left alone. The names are listed by
/// the folder's path, but each is opened, checked and removed through the
/// folder's descriptor: a listing of some other folder only names files
/// that are then looked for, and checked, in this one.
pub(crate) fn sweep(folder: &Folder, report: Option<fn(&Path)>) {
    let Ok(entries) = std::fs::read_dir(folder.path()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_pid) else {
            continue;
        };
        let stale = pid != std::process::id() && !pid_alive(pid) && unlocked_file(folder, &name);
        if stale && folder.remove(&name).is_ok() {
            if let Some(report) = report {
                report(&folder.path().join(&name));
            }
        }
    }
}

/// The pid in a temp file name of ours, `.<target>.neff-tmp.<pid>.<n>`.
fn temp_pid(name: &str) -> Option<u32> {
    let (target, tail) = name.strip_prefix('.')?.rsplit_once(MARKER)?;
    let (pid, n) = tail.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if target.is_empty() || !digits(pid) || !digits(n) {
        return None;
    }
    pid.parse().ok()
}

/// Takes the advisory lock that marks `file` as being written (best effort:
/// a folder without locks only loses the stale-file cleanup).
#[cfg(unix)]
pub(crate) fn hold_lock(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor `file` owns; the lock ends when it is closed.
    unsafe {
        libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB);
    }
}

/// True when `name` in `folder` is a regular file nobody holds the lock of
/// (a failure to open or lock it counts as held).
#[cfg(unix)]
fn unlocked_file(folder: &Folder, name: &std::ffi::OsStr) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(file) = folder.open_nofollow(name) else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    // SAFETY: flock on a descriptor `file` owns; the lock ends when it is closed.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// True unless `pid` is certainly not a running process.
#[cfg(unix)]
fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: signal 0 sends nothing; it only checks that the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    exists || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
pub(crate) fn hold_lock(_file: &File) {}

#[cfg(not(unix))]
fn unlocked_file(_folder: &Folder, _name: &std::ffi::OsStr) -> bool {
    false
}

#[cfg(not(unix))]
fn pid_alive(_pid: u32) -> bool {
    true
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static REMOVED: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

    /// The pid of a process that has exited.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    }

    #[test]
    fn names_of_ours_only() {
        assert_eq!(temp_pid(".x.neff.neff-tmp.123.0"), Some(123));
        assert_eq!(temp_pid(".a.neff-tmp.b.neff-tmp.7.12"), Some(7));
        for other in [
            "x.neff.neff-tmp.123.0",
            "..neff-tmp.123.0",
            ".x.neff-tmp.123",
            ".x.neff-tmp.123.",
            ".x.neff-tmp.12a.0",
            ".x.neff-tmp.123.0.tmp",
            ".x.neff.Ab12Cd.tmp",
            ".x.neff-tmp.99999999999.0",
        ] {
            assert_eq!(temp_pid(other), None, "{other}");
        }
    }

    #[test]
    fn only_unlocked_regular_files_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let write = |name: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, b"partial").unwrap();
            path
        };
        let stale = write(format!(".a.neff.neff-tmp.{dead}.0"));
        let mine = write(format!(".a.neff.neff-tmp.{}.0", std::process::id()));
        let parent = write(format!(
            ".a.neff.neff-tmp.{}.3",
            std::os::unix::process::parent_id()
        ));
        let other = write(format!(".a.neff.{dead}.tmp"));
        let locked = write(format!(".b.neff.neff-tmp.{dead}.1"));
        let lock = File::open(&locked).unwrap();
        hold_lock(&lock);
        let folder = dir.path().join(format!(".c.neff.neff-tmp.{dead}.2"));
        std::fs::create_dir(&folder).unwrap();
        let link = dir.path().join(format!(".d.neff.neff-tmp.{dead}.4"));
        std::os::unix::fs::symlink(&other, &link).unwrap();

        let opened = Folder::open(dir.path()).unwrap();
        sweep(
            &opened,
            Some(|p| REMOVED.lock().unwrap().push(p.to_path_buf())),
        );
        assert_eq!(*REMOVED.lock().unwrap(), std::slice::from_ref(&stale));
        assert!(!stale.exists());
        for kept in [&mine, &parent, &other, &locked, &folder, &link] {
            assert!(kept.symlink_metadata().is_ok(), "{}", kept.display());
        }
        drop(lock);
        sweep(&opened, None);
        assert!(!locked.exists());
    }
}
