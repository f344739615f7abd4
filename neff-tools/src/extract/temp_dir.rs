//! The unpack's temp dir, `DIR/.neff-unpack.<pid>.<random>`: entries are
//! written there as the archive streams and moved into DIR only once every
//! gate passed. It is removed when dropped (with DIR itself when the unpack
//! created it), and listed process-wide until then so that a signal handler
//! can remove it ([`abandon_unpack_dirs`]; the `neff` CLI installs one).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use super::dir::with_path;
use neff_loader::Error;

/// The temp dirs of this process not yet removed.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes every unpack temp dir of this process, and keeps any more from
/// being created or removed (threads that try wait forever): for a signal
/// handler about to end the process.
pub fn abandon_unpack_dirs() {
    let live = live();
    for path in live.iter() {
        // The unpack may create one more file while the tree is removed
        // (it stops at its next entry once the signal is noted): try again.
        for _ in 0..100 {
            match fs::remove_dir_all(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                _ => break,
            }
        }
    }
    std::mem::forget(live);
}

/// The name prefix of the temp dirs: `.neff-unpack.<pid>.`.
const PREFIX: &str = ".neff-unpack.";

/// Removes the temp dirs in `dest` left by unpacks that did not finish: a
/// SIGKILL cannot be caught, so the process could not remove its own. One is
/// removed only when it is a folder named `.neff-unpack.<pid>.<random>` whose
/// pid is not a running process (Linux: no `/proc/<pid>`), and never this
/// process's own. Returns the folders removed.
pub(super) fn sweep_stale(dest: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(dest) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split_once('.'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && pid != std::process::id() && !pid_alive(pid) {
            let path = entry.path();
            if fs::remove_dir_all(&path).is_ok() {
                removed.push(path);
            }
        }
    }
    removed
}

/// Whether `pid` may be a running process (true where it cannot be told).
fn pid_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// A temp dir inside the destination, removed when dropped.
#[derive(Debug)]
pub(super) struct TempDir {
    path: PathBuf,
    /// The destination, when the unpack created it: removed with the temp
    /// dir unless the unpack succeeded.
    created: Option<PathBuf>,
}

impl TempDir {
    /// A new temp dir in `dest`; `created` says the unpack made `dest`.
    pub(super) fn new_in(dest: &Path, created: bool) -> Result<TempDir, Error> {
        let mut live = live();
        let prefix = format!("{PREFIX}{}.", std::process::id());
        let path = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(dest)
            .map_err(|e| with_path(e, "cannot create a temp dir in", dest))?
            .keep();
        live.push(path.clone());
        Ok(TempDir {
            path,
            created: created.then(|| dest.to_path_buf()),
        })
    }

    /// Where it is.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The unpack succeeded: the destination stays.
    pub(super) fn keep_destination(&mut self) {
        self.created = None;
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let mut live = live();
        let _ = fs::remove_dir_all(&self.path);
        live.retain(|p| p != &self.path);
        if let Some(dest) = &self.created {
            let _ = fs::remove_dir(dest);
        }
    }
}
