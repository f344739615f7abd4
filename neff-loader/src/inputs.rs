//! The NEFFs a list of paths names, as `neff verify` and Python's
//! `neff.verify_many` read it: files (and `-`) as given, and every `*.neff`
//! under a folder, with every file that may carry NEFFs (`*.hlo`,
//! `*.neuron`), sorted by path.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use walkdir::WalkDir;

/// One input: a path to check, or an entry of a folder that could not be read.
#[derive(Debug)]
pub enum Input {
    /// A NEFF to check (or `-`, stdin).
    Path(PathBuf),
    /// A folder entry that could not be read, and why.
    Unreadable(PathBuf, io::Error),
}

impl Input {
    /// The path this input names.
    pub fn path(&self) -> &Path {
        match self {
            Input::Path(p) | Input::Unreadable(p, _) => p,
        }
    }
}

/// The extensions a folder's inputs have: NEFFs, and the files that carry
/// them (compile-cache HLO modules, torch-neuron(x) traced models).
pub const EXTENSIONS: [&str; 3] = ["neff", "hlo", "neuron"];

/// Every input `args` name, in argument order; a folder gives its files of
/// the [`EXTENSIONS`] (recursively) sorted by path.
pub fn expand(args: &[PathBuf]) -> Vec<Input> {
    let mut out = Vec::new();
    for arg in args {
        if arg.is_dir() {
            walk(arg, &mut out);
        } else {
            out.push(Input::Path(arg.clone()));
        }
    }
    out
}

/// Collects the files of the [`EXTENSIONS`] under `root`, sorted by path (depth first,
/// each folder's entries by name). Symlinks to files are taken, symlinks to
/// folders are not followed (no loops); what cannot be read is collected as
/// [`Input::Unreadable`].
fn walk(root: &Path, out: &mut Vec<Input>) {
    for entry in WalkDir::new(root).sort_by_file_name() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let path = e.path().unwrap_or(root).to_path_buf();
                out.push(Input::Unreadable(path, e.into()));
                continue;
            }
        };
        let path = entry.path();
        let wanted = path
            .extension()
            .is_some_and(|e| EXTENSIONS.iter().any(|x| e == *x));
        if entry.file_type().is_dir() || !wanted {
            continue;
        }
        // A symlink is taken when it leads to a file.
        match fs::metadata(path) {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.is_file() => out.push(Input::Path(path.to_path_buf())),
            // Never opened: reading a FIFO would block.
            Ok(_) => out.push(Input::Unreadable(
                path.to_path_buf(),
                io::Error::other("not a regular file (a FIFO, socket or device): not opened"),
            )),
            Err(e) => out.push(Input::Unreadable(path.to_path_buf(), e)),
        }
    }
}

/// Runs `work` on each of `items` on `threads` threads (each with the
/// loader's stack, [`crate::LOAD_STACK`]) and hands each result to `emit` in
/// item order, as soon as it and every one before it are done: how
/// `neff verify DIR` and Python's `neff.verify_many` check many NEFFs.
///
/// The worker that finishes the result next due calls `emit` (one at a
/// time), so no thread is woken to pass results on: a folder of small NEFFs
/// spent an eighth of its time in those wake-ups.
pub fn in_order<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    work: impl Fn(&T) -> R + Sync,
    emit: impl FnMut(R) + Send,
) {
    raise_glibc_trim_threshold();
    let next = AtomicUsize::new(0);
    let ordered = Mutex::new(Ordered {
        pending: BTreeMap::new(),
        due: 0,
        emit,
    });
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = items.get(i) else { break };
        let result = work(item);
        // Poisoned: `emit` panicked on another worker. The rest is not
        // checked; the panic reaches the caller once every worker stops.
        let Ok(mut ordered) = ordered.lock() else {
            break;
        };
        ordered.finished(i, result);
    };
    std::thread::scope(|scope| {
        let mut spawned = 0;
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            let started = std::thread::Builder::new()
                .stack_size(crate::LOAD_STACK)
                .spawn_scoped(scope, worker);
            // Out of threads: the ones running take the rest.
            if started.is_err() {
                break;
            }
            spawned += 1;
        }
        if spawned == 0 {
            // Not even one: this thread does the work.
            worker();
        }
    });
}

/// The results of [`in_order`] not yet emitted, and what takes them.
struct Ordered<R, E> {
    /// Finished results waiting for an earlier one.
    pending: BTreeMap<usize, R>,
    /// The index emitted next.
    due: usize,
    emit: E,
}

impl<R, E: FnMut(R)> Ordered<R, E> {
    /// Takes item `i`'s result and emits every result now due.
    fn finished(&mut self, i: usize, result: R) {
        if i != self.due {
            self.pending.insert(i, result);
            return;
        }
        (self.emit)(result);
        self.due += 1;
        while let Some(r) = self.pending.remove(&self.due) {
            (self.emit)(r);
            self.due += 1;
        }
    }
}

/// Results on their way from producing threads (such as [`in_order`]'s
/// workers) to one thread that takes them, in the order put, `size` at a
/// time: the taker is woken once per batch, not once per result (each wake
/// preempts a producer on a busy machine). Python's `neff.verify_many`
/// builds its reports so.
#[derive(Debug)]
pub struct Batches<T> {
    state: Mutex<BatchState<T>>,
    ready: Condvar,
    size: usize,
}

#[derive(Debug)]
struct BatchState<T> {
    waiting: Vec<T>,
    finished: bool,
}

impl<T> Batches<T> {
    /// Batches of `size` (at least 1).
    pub fn new(size: usize) -> Self {
        Batches {
            state: Mutex::new(BatchState {
                waiting: Vec::new(),
                finished: false,
            }),
            ready: Condvar::new(),
            size: size.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BatchState<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `produce`, which [`Batches::put`]s the results; once it returns,
    /// or unwinds, no more come, and [`Batches::take`] hands over what is
    /// left and then `None` (a taker never waits for a producer that died).
    pub fn fill(&self, produce: impl FnOnce(&Self)) {
        struct Finish<'a, T>(&'a Batches<T>);
        impl<T> Drop for Finish<'_, T> {
            fn drop(&mut self) {
                self.0.lock().finished = true;
                self.0.ready.notify_one();
            }
        }
        let _finish = Finish(self);
        produce(self);
    }

    /// Adds the next result; wakes the taker once a batch is ready.
    pub fn put(&self, item: T) {
        let mut state = self.lock();
        state.waiting.push(item);
        if state.waiting.len() == self.size {
            self.ready.notify_one();
        }
    }

    /// The next batch (a full one, or what is left once the filling ended),
    /// waiting for it; `None` once everything was taken.
    pub fn take(&self) -> Option<Vec<T>> {
        let mut state = self.lock();
        while state.waiting.len() < self.size && !state.finished {
            state = self.ready.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        (!state.waiting.is_empty()).then(|| std::mem::take(&mut state.waiting))
    }
}

/// Puts glibc's malloc now in the state it reaches by itself the first time
/// a block of 4 MiB is freed: blocks under 4 MiB come from the heap and up to
/// 8 MiB of free memory stays at its top (from 128 KiB for both). Checking a
/// NEFF allocates a few hundred KiB and frees it all; from glibc's starting
/// state each thread handed that back to the kernel after every small NEFF
/// and faulted it in again for the next, and `neff verify DIR` of 2,000
/// 11 KiB NEFFs spent more time in the kernel than checking. Nothing is
/// touched: the block is mapped, freed and unmapped. Elsewhere a no-op.
fn raise_glibc_trim_threshold() {
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        drop(std::hint::black_box(Vec::<u8>::with_capacity(4 << 20)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn results_are_emitted_in_item_order_whatever_order_they_finish_in() {
        let items: Vec<u64> = (0..24).collect();
        let mut seen = Vec::new();
        // Earlier items take longer, so later ones finish first.
        in_order(
            &items,
            4,
            |&i| {
                std::thread::sleep(Duration::from_millis(24 - i));
                i * 10
            },
            |r| seen.push(r),
        );
        assert_eq!(seen, (0..24).map(|i| i * 10).collect::<Vec<_>>());
    }

    #[test]
    fn the_workers_emit_so_the_calling_thread_is_never_woken_per_result() {
        let caller = std::thread::current().id();
        let mut emitted_on = Vec::new();
        in_order(
            &[1, 2, 3, 4, 5],
            2,
            |&i| i,
            |_| emitted_on.push(std::thread::current().id()),
        );
        assert_eq!(emitted_on.len(), 5);
        assert!(emitted_on.iter().all(|&t| t != caller));
    }

    #[test]
    fn a_panic_in_emit_stops_the_workers_and_reaches_the_caller() {
        let items: Vec<u32> = (0..200).collect();
        let worked = AtomicUsize::new(0);
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            in_order(
                &items,
                2,
                |&i| {
                    worked.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(1));
                    i
                },
                |r| assert!(r < 3, "emit refuses {r}"),
            )
        }));
        assert!(run.is_err());
        assert!(worked.load(Ordering::Relaxed) < 20);
    }

    #[test]
    fn batches_come_in_order_full_then_the_rest() {
        let batches = Batches::new(4);
        let taken = std::thread::scope(|scope| {
            scope.spawn(|| batches.fill(|b| (0..10).for_each(|i| b.put(i))));
            std::iter::from_fn(|| batches.take()).collect::<Vec<_>>()
        });
        assert_eq!(taken.concat(), (0..10).collect::<Vec<_>>());
        // Each batch but the last is full (the taker may find more waiting).
        let (last, full) = taken.split_last().unwrap();
        assert!(full.iter().all(|b| b.len() >= 4), "{taken:?}");
        assert!(!last.is_empty());
        assert_eq!(batches.take(), None);
    }

    #[test]
    fn a_producer_that_panics_still_ends_the_taking() {
        let batches = std::sync::Arc::new(Batches::new(8));
        let producer = std::thread::spawn({
            let batches = batches.clone();
            move || {
                batches.fill(|b| {
                    b.put(1u8);
                    b.put(2);
                    panic!("the producer fails");
                })
            }
        });
        assert!(producer.join().is_err());
        // On a thread of its own: without the end being marked, `take` would
        // wait forever, and this test fails by its timeout instead.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(std::iter::from_fn(|| batches.take()).collect::<Vec<_>>());
        });
        let taken = rx.recv_timeout(Duration::from_secs(10));
        assert_eq!(taken, Ok(vec![vec![1, 2]]));
    }

    #[test]
    fn no_items_emit_nothing_and_zero_threads_still_run_one() {
        let mut seen = Vec::new();
        in_order(&[] as &[u8], 3, |&i| i, |r| seen.push(r));
        assert!(seen.is_empty());
        in_order(&[7u8, 8], 0, |&i| i + 1, |r| seen.push(r));
        assert_eq!(seen, [8, 9]);
    }
}
