//! Signal dispositions for the `neff` binary (never installed by the library).
//!
//! SIGINT, SIGTERM and SIGHUP are blocked in every thread and taken by a
//! dedicated thread (from a `signalfd` on Linux, noted before it leaves the
//! pending set; `sigwait` elsewhere), which removes the live temp files
//! ([`neff::writer::fs::abandon_temp_files`], and the temp dirs of an unpack,
//! [`neff::tools::abandon_unpack_dirs`]) and then ends the process with the
//! same signal, so the exit status still reports it. A signal that was
//! ignored when `neff` started (`nohup`, a background job) stays ignored.
//! SIGXFSZ is ignored, so a write past `ulimit -f` fails with "File too
//! large" and the normal error path removes the temp file and names it.
//! SIGPIPE gets its default action back, so `neff … | head` ends quietly
//! (Rust ignores it). A signal taken or pending before an output's rename
//! keeps the old output (the rename does not happen) and still ends the
//! process by the signal ([`settle`]). SIGKILL cannot be caught: the next write beside the
//! output removes the temp file it leaves.

/// Installs the dispositions; call it first, before any thread starts.
#[cfg(unix)]
pub fn install() {
    // SAFETY: plain libc calls on a zeroed, then initialised, signal set; they
    // run before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in neff::writer::fs::TERMINATION_SIGNALS {
            if !ignored(sig) {
                libc::sigaddset(&mut set, sig);
            }
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let waiter = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || wait_then_exit(set));
        match waiter {
            Ok(_) => neff::writer::fs::watch_signals(),
            Err(_) => {
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            }
        }
    }
}

#[cfg(not(unix))]
pub fn install() {}

/// When a termination signal was taken, waits for the signal thread to end
/// the process by it (the run's own exit status must not win the race):
/// call it before printing a result or an error and exiting.
pub fn settle() {
    if neff::writer::fs::termination_signalled() {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// True when `sig` is ignored (as `nohup` and background jobs set up).
#[cfg(unix)]
unsafe fn ignored(sig: libc::c_int) -> bool {
    let mut old: libc::sigaction = std::mem::zeroed();
    libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
}

/// Takes one signal of `set`. On Linux it is read from a `signalfd` and
/// noted ([`neff::writer::fs::note_signal`]) while still pending, so a rename
/// that checks "pending, then noted" always sees it
/// ([`neff::writer::fs::termination_signalled`]); elsewhere `sigwait` takes
/// it, and a rename in the moment between `sigwait` and the note can still
/// go ahead.
#[cfg(unix)]
fn take_signal(set: &libc::sigset_t) -> libc::c_int {
    #[cfg(target_os = "linux")]
    // SAFETY: `set` is initialised; the pollfd and the siginfo buffer are
    // owned here and sized as the calls expect.
    unsafe {
        let fd = libc::signalfd(-1, set, libc::SFD_CLOEXEC);
        if fd >= 0 {
            loop {
                let mut ready = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                if libc::poll(&mut ready, 1, -1) <= 0 {
                    continue;
                }
                // Only signals of `set` can be pending: one left out of it
                // is ignored, and an ignored signal is discarded when sent.
                let Some(sig) = neff::writer::fs::pending_termination_signal() else {
                    continue;
                };
                neff::writer::fs::note_signal(sig);
                let mut info: libc::signalfd_siginfo = std::mem::zeroed();
                let size = std::mem::size_of::<libc::signalfd_siginfo>();
                libc::read(fd, (&mut info as *mut libc::signalfd_siginfo).cast(), size);
                return sig;
            }
        }
    }
    let mut sig: libc::c_int = 0;
    // SAFETY: `set` is initialised and `sig` is a valid out-pointer.
    while unsafe { libc::sigwait(set, &mut sig) } != 0 {}
    sig
}

/// Waits for one of `set`, removes the temp files, and dies of that signal.
#[cfg(unix)]
fn wait_then_exit(set: libc::sigset_t) {
    let sig = take_signal(&set);
    // First: no output is renamed into place from now on.
    neff::writer::fs::note_signal(sig);
    neff::writer::fs::abandon_temp_files();
    neff::tools::abandon_unpack_dirs();
    // SAFETY: restores the default action and unblocks `sig` in this thread
    // only, then sends it to this thread, which ends the process.
    unsafe {
        let mut one: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, sig);
        libc::signal(sig, libc::SIG_DFL);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::raise(sig);
    }
    std::process::exit(128 + sig);
}
