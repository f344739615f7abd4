//! The compile caches NEFFs live in (`neff cache`): the layout of a cache
//! folder detected, each entry's state read from the files it holds, and
//! every entry's NEFF checked by the loader's gates, on several threads.
//!
//! Layouts:
//! * **libneuronxla** (neuronx-cc's persistent cache,
//!   `/var/tmp/neuron-compile-cache`): `neuronxcc-<version>/MODULE_<hlo
//!   hash>+<flags hash>/` holding `model.hlo_module.pb` (older:
//!   `model.hlo.pb`), `compile_flags.json` (older: `compile_flags.txt`), on
//!   success `model.neff` and an empty `model.done` (2.21+:
//!   `wrapped_neff.hlo` carries the NEFF), on failure `model.log` and no
//!   NEFF, and a `*.lock` file while a compile holds it; optimum-neuron's
//!   Hub cache adds `neuronxcc-<version>/0_REGISTRY/…/<hash>.json` lookup
//!   entries beside them (listed, never entries);
//! * **vLLM Neuron** (`$VLLM_CACHE_ROOT/neuron/compile_cache`): one folder
//!   per key (32 hex digits, an MD5) with a `.compilation_complete` marker
//!   once done; its NEFF is any `*.neff` in it (the name is not fixed in the
//!   public material read) and a `*.lock` holds it;
//! * **any other folder**: every `*.neff` (and `wrapped_neff.hlo`) below it
//!   is an entry of its own (an exported model's `compiled/`, a vLLM
//!   entry's folder).
//!
//! A lock's holder is not recorded in the lock file, so a lock is judged by
//! its age: older than `stale_after`, it is stale (no live compile holds a
//! lock that long).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use neff_loader::{ArchScope, Loader, RuntimeProfile};
use schemars::JsonSchema;
use serde::Serialize;

use crate::carrier::open_neff;

/// A cache folder's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// `neuronxcc-<version>/MODULE_<hash>+<hash>/` entries.
    Libneuronxla,
    /// `<md5>/` entries with a `.compilation_complete` marker.
    Vllm,
    /// Every NEFF below the folder, each an entry.
    Files,
}

/// An entry's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    /// A NEFF, complete, accepted by the gates.
    Ok,
    /// A NEFF, complete, refused by the gates.
    Refused,
    /// A failed compile: a `model.log` and no NEFF.
    Failed,
    /// A compile holds it (a lock younger than the stale age).
    Locked,
    /// A lock older than the stale age: its compile is gone.
    StaleLock,
    /// A NEFF without its `model.done`, or inputs without a result.
    Incomplete,
    /// No file at all.
    Empty,
}

/// One cache entry.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CacheEntry {
    /// The entry's folder (or file), relative to the root.
    pub path: String,
    /// The compiler version its folder names (`neuronxcc-2.21.18209.0+043b1bf7`).
    pub compiler: Option<String>,
    /// The HLO module's hash in the key.
    pub module: Option<String>,
    /// The compile flags' hash in the key.
    pub flags: Option<String>,
    /// Its state.
    pub state: EntryState,
    /// Bytes of its files.
    pub size: u64,
    /// Its NEFF (`model.neff`, or the `wrapped_neff.hlo` carrying it), relative to the root.
    pub neff: Option<String>,
    /// The NEFF's KELF target.
    pub target: Option<String>,
    /// The NEFF's graphs.
    pub graphs: Option<usize>,
    /// The names of the NEFF's feature bits.
    pub features: Option<Vec<String>>,
    /// The NEFF's header UUID.
    pub uuid: Option<String>,
    /// The gates' refusal (`G17: …`), for a refused NEFF.
    pub refusal: Option<String>,
}

/// What `neff cache ls --json` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CacheListing {
    /// The folder read.
    pub root: String,
    /// Its layout.
    pub layout: Layout,
    /// Every entry, sorted by path.
    pub entries: Vec<CacheEntry>,
    /// Files of a libneuronxla cache that belong to no entry.
    pub orphans: Vec<String>,
    /// optimum-neuron's registry lookup entries (`0_REGISTRY/…/*.json`).
    pub registry: Vec<String>,
    /// Entries per compiler version (`""` when none) and state.
    pub totals: BTreeMap<String, BTreeMap<String, usize>>,
}

/// Reads the cache at `root`, checking each entry's NEFF under `profile` on
/// `scope` with `threads` threads; a lock older than `stale_after` is stale.
pub fn scan(
    root: &Path,
    profile: &RuntimeProfile,
    scope: ArchScope,
    threads: usize,
    stale_after: Duration,
) -> std::io::Result<CacheListing> {
    let versions: Vec<PathBuf> = children(root)?
        .into_iter()
        .filter(|p| p.is_dir() && name(p).starts_with("neuronxcc-"))
        .collect();
    let mut registry = Vec::new();
    let vllm: Vec<PathBuf> = children(root)?
        .into_iter()
        .filter(|p| p.is_dir() && is_md5(&name(p)))
        .collect();
    let (layout, mut found, orphans) = if versions.is_empty() && !vllm.is_empty() {
        let mut found = Vec::new();
        for dir in &vllm {
            found.push(vllm_entry(root, dir, stale_after)?);
        }
        (Layout::Vllm, found, Vec::new())
    } else if versions.is_empty() {
        (Layout::Files, neff_files(root, root)?, Vec::new())
    } else {
        let mut found = Vec::new();
        let mut orphans = Vec::new();
        for version in &versions {
            for child in children(version)? {
                if child.is_dir() && name(&child).starts_with("MODULE_") {
                    found.push(module_entry(root, version, &child, stale_after)?);
                } else if child.is_dir() && name(&child) == "0_REGISTRY" {
                    registry.extend(files_below(&child)?.iter().map(|f| relative(root, f)));
                } else {
                    orphans.push(relative(root, &child));
                }
            }
        }
        for child in children(root)? {
            if !versions.contains(&child) {
                orphans.push(relative(root, &child));
            }
        }
        (Layout::Libneuronxla, found, orphans)
    };
    let checked = crate::parallel::map(&found, threads, |entry| check(root, entry, profile, scope));
    for (entry, checked) in found.iter_mut().zip(checked) {
        *entry = checked;
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    let mut totals: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for e in &found {
        let state = serde_json::to_value(e.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string));
        *totals
            .entry(e.compiler.clone().unwrap_or_default())
            .or_default()
            .entry(state.unwrap_or_default())
            .or_default() += 1;
    }
    Ok(CacheListing {
        root: root.display().to_string(),
        layout,
        entries: found,
        orphans,
        registry,
        totals,
    })
}

/// An entry of a libneuronxla cache, its state read from its files.
fn module_entry(
    root: &Path,
    version: &Path,
    dir: &Path,
    stale_after: Duration,
) -> std::io::Result<CacheEntry> {
    let files = children(dir)?;
    let has = |n: &str| files.iter().any(|f| name(f) == n);
    let size = files
        .iter()
        .filter_map(|f| f.metadata().ok())
        .map(|m| m.len())
        .sum();
    let key = name(dir).trim_start_matches("MODULE_").to_string();
    let (module, flags) = match key.split_once('+') {
        Some((m, f)) => (Some(m.to_string()), Some(f.to_string())),
        None => (Some(key), None),
    };
    let lock = files.iter().find(|f| name(f).ends_with(".lock"));
    let neff = ["model.neff", "wrapped_neff.hlo"]
        .into_iter()
        .find(|n| has(n));
    let state = if let Some(lock) = lock {
        lock_state(lock, stale_after)
    } else if files.is_empty() {
        EntryState::Empty
    } else if neff.is_some() && has("model.done") {
        EntryState::Ok
    } else if neff.is_none() && has("model.log") {
        EntryState::Failed
    } else {
        EntryState::Incomplete
    };
    Ok(CacheEntry {
        path: relative(root, dir),
        compiler: Some(name(version).trim_start_matches("neuronxcc-").to_string()),
        module,
        flags,
        state,
        size,
        neff: neff.map(|n| relative(root, &dir.join(n))),
        target: None,
        graphs: None,
        features: None,
        uuid: None,
        refusal: None,
    })
}

/// An entry of a vLLM Neuron cache.
fn vllm_entry(root: &Path, dir: &Path, stale_after: Duration) -> std::io::Result<CacheEntry> {
    let files = files_below(dir)?;
    let size = files
        .iter()
        .filter_map(|f| f.metadata().ok())
        .map(|m| m.len())
        .sum();
    let neff = files.iter().find(|f| name(f).ends_with(".neff"));
    let lock = files.iter().find(|f| name(f).ends_with(".lock"));
    let done = files.iter().any(|f| name(f) == ".compilation_complete");
    let state = match (lock, files.is_empty()) {
        (Some(lock), _) => lock_state(lock, stale_after),
        (None, true) => EntryState::Empty,
        (None, false) if done && neff.is_some() => EntryState::Ok,
        _ => EntryState::Incomplete,
    };
    Ok(CacheEntry {
        path: relative(root, dir),
        compiler: None,
        module: Some(name(dir)),
        flags: None,
        state,
        size,
        neff: neff.map(|n| relative(root, n)),
        target: None,
        graphs: None,
        features: None,
        uuid: None,
        refusal: None,
    })
}

/// A lock's state by its age.
fn lock_state(lock: &Path, stale_after: Duration) -> EntryState {
    let age = lock
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .unwrap_or_default();
    if age > stale_after {
        EntryState::StaleLock
    } else {
        EntryState::Locked
    }
}

/// Every file below `dir`, sorted.
fn files_below(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for child in children(dir)? {
        if is_real_dir(&child) {
            out.extend(files_below(&child)?);
        } else {
            out.push(child);
        }
    }
    Ok(out)
}

/// 32 hex digits (an MD5), as vLLM Neuron names its cache keys.
fn is_md5(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Every NEFF below `dir` as an entry of its own.
fn neff_files(root: &Path, dir: &Path) -> std::io::Result<Vec<CacheEntry>> {
    let mut found = Vec::new();
    for child in children(dir)? {
        if is_real_dir(&child) {
            found.extend(neff_files(root, &child)?);
        } else if name(&child).ends_with(".neff") || name(&child) == "wrapped_neff.hlo" {
            found.push(CacheEntry {
                path: relative(root, &child),
                compiler: None,
                module: None,
                flags: None,
                state: EntryState::Ok,
                size: child.metadata()?.len(),
                neff: Some(relative(root, &child)),
                target: None,
                graphs: None,
                features: None,
                uuid: None,
                refusal: None,
            });
        }
    }
    Ok(found)
}

/// `entry` with its NEFF read by the loader: an `ok` one becomes `refused`
/// when the gates refuse it; one that cannot be read, `incomplete`.
fn check(
    root: &Path,
    entry: &CacheEntry,
    profile: &RuntimeProfile,
    scope: ArchScope,
) -> CacheEntry {
    let mut entry = entry.clone();
    let Some(neff) = &entry.neff else {
        return entry;
    };
    let verdict = open_neff(&root.join(neff), None)
        .map_err(|e| e.to_string())
        .and_then(|source| {
            let profile = match scope {
                ArchScope::Arch(arch) => RuntimeProfile {
                    instance_arch: arch,
                    ..profile.clone()
                },
                ArchScope::All => profile.clone(),
            };
            // A verdict and the model need no entry table.
            Loader::new(&profile)
                .limits(neff_loader::Limits::for_verdict())
                .verify(Some(source))
                .map_err(|e| e.to_string())
        });
    let verdict = match verdict {
        Ok(v) => v,
        Err(e) => {
            if entry.state == EntryState::Ok {
                entry.state = EntryState::Incomplete;
                entry.refusal = Some(e);
            }
            return entry;
        }
    };
    let report = match scope {
        ArchScope::All => verdict.combined_report(),
        ArchScope::Arch(arch) => verdict
            .on(arch)
            .map_or_else(|| verdict.combined_report(), |l| l.report.clone()),
    };
    if let Some(c) = &verdict.container {
        let fields = c.header.fields();
        entry.uuid = Some(fields.uuid.to_string());
        entry.features = Some(neff_schema::features::names(fields.feature_bits));
    }
    if let Some(model) = &verdict.display_load().model {
        entry.target = model.target.clone();
        entry.graphs = Some(model.graphs.len());
    }
    if !report.accepted {
        entry.refusal = Some(report.summary());
        if entry.state == EntryState::Ok {
            entry.state = EntryState::Refused;
        }
    }
    entry
}

/// A folder that is not a symlink: the walks below an entry never follow
/// one (a link back up would never end).
fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

fn children(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    out.sort();
    Ok(out)
}

fn name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// What `neff cache prune` removes.
#[derive(Debug, Clone, Default)]
pub struct PruneOptions {
    /// Entries whose compile failed.
    pub failed: bool,
    /// Entries holding a stale lock.
    pub stale_locks: bool,
    /// Entries whose NEFF the gates refuse.
    pub refused: bool,
    /// Entries of a compiler version below this one (`2.21`).
    pub compiler_below: Option<String>,
    /// Entries last written longer ago than this.
    pub older_than: Option<Duration>,
    /// Then, oldest first, entries until the cache holds at most this many bytes.
    pub max_size: Option<u64>,
    /// Say what would go, remove nothing.
    pub dry_run: bool,
}

/// What a prune removed (or, dry, would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Pruned {
    /// The entries removed, relative to the root.
    pub removed: Vec<String>,
    /// Bytes freed.
    pub freed: u64,
    /// Entries chosen but left, and why (a live compile holds them, a symlink).
    pub kept: Vec<(String, String)>,
}

/// The folder inside a cache root that entries are moved into before they
/// are deleted: no layout reads it as an entry.
pub const TRASH: &str = ".neff-prune";

/// Removes the entries of `listing` (of the cache at `root`; a libneuronxla
/// or vLLM layout, never a plain folder of NEFFs) that `options` choose. An entry goes only when no compile holds it: a fresh lock is
/// left, and every `*.lock` file in it is `flock`ed exclusively (as
/// `filelock`-style lockers take it) while it is moved, by one rename, into
/// [`TRASH`], then deleted; a reader never sees half an entry. Symlinked
/// entries (Hub snapshots) are never removed.
pub fn prune(
    root: &Path,
    listing: &CacheListing,
    options: &PruneOptions,
) -> std::io::Result<Pruned> {
    let mut chosen: Vec<&CacheEntry> = listing
        .entries
        .iter()
        .filter(|_| listing.layout != Layout::Files)
        .filter(|e| {
            (options.failed && e.state == EntryState::Failed)
                || (options.stale_locks && e.state == EntryState::StaleLock)
                || (options.refused && e.state == EntryState::Refused)
                || options
                    .compiler_below
                    .as_deref()
                    .is_some_and(|v| version_below(e.compiler.as_deref().unwrap_or_default(), v))
                || options
                    .older_than
                    .is_some_and(|age| age_of(&root.join(&e.path)) > age)
        })
        .collect();
    if let Some(max) = options.max_size {
        let mut rest: Vec<&CacheEntry> = listing
            .entries
            .iter()
            .filter(|e| listing.layout != Layout::Files && !chosen.iter().any(|c| c.path == e.path))
            .collect();
        rest.sort_by_key(|e| std::cmp::Reverse(age_of(&root.join(&e.path))));
        let mut size: u64 = rest.iter().map(|e| e.size).sum();
        for e in rest {
            if size <= max {
                break;
            }
            size -= e.size;
            chosen.push(e);
        }
    }
    let mut done = Pruned::default();
    let trash = root.join(TRASH);
    for (n, e) in chosen.into_iter().enumerate() {
        let dir = root.join(&e.path);
        if std::fs::symlink_metadata(&dir)?.file_type().is_symlink() {
            done.kept
                .push((e.path.clone(), "a symlink (a snapshot), read only".into()));
            continue;
        }
        if e.state == EntryState::Locked {
            done.kept
                .push((e.path.clone(), "a compile holds its lock".into()));
            continue;
        }
        if options.dry_run {
            done.removed.push(e.path.clone());
            done.freed += e.size;
            continue;
        }
        let Some(_held) = hold_locks(&dir)? else {
            done.kept
                .push((e.path.clone(), "a compile holds its lock".into()));
            continue;
        };
        std::fs::create_dir_all(&trash)?;
        let moved = trash.join(format!("{}.{n}", std::process::id()));
        std::fs::rename(&dir, &moved)?;
        drop(_held);
        std::fs::remove_dir_all(&moved)?;
        done.removed.push(e.path.clone());
        done.freed += e.size;
    }
    if !options.dry_run {
        let _ = std::fs::remove_dir(&trash);
    }
    Ok(done)
}

/// Exclusive `flock`s on every `*.lock` file of `dir`, or `None` when one is
/// held by another process.
fn hold_locks(dir: &Path) -> std::io::Result<Option<Vec<std::fs::File>>> {
    let mut held = Vec::new();
    for file in children(dir)?
        .into_iter()
        .filter(|f| name(f).ends_with(".lock"))
    {
        let lock = std::fs::File::open(&file)?;
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on a file descriptor this function owns.
            if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                return Ok(None);
            }
        }
        held.push(lock);
    }
    Ok(Some(held))
}

/// How long ago `path` (an entry's `model.done`, else its folder) was last
/// written.
fn age_of(path: &Path) -> Duration {
    let done = path.join("model.done");
    let modified = done
        .metadata()
        .or_else(|_| path.metadata())
        .and_then(|m| m.modified());
    modified
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .unwrap_or_default()
}

/// Whether compiler version `version` (`2.21.18209.0+043b1bf7`) is below
/// `below` (`2.21`, compared number by number).
fn version_below(version: &str, below: &str) -> bool {
    let numbers = |v: &str| -> Vec<u64> {
        v.split('+')
            .next()
            .unwrap_or_default()
            .split('.')
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    let (a, b) = (numbers(version), numbers(below));
    a[..a.len().min(b.len())] < b[..]
}

/// Why two libneuronxla entries are different keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Explanation {
    /// The two compiler versions, when they differ.
    pub compiler: Option<(String, String)>,
    /// Flags only the first entry's compile had.
    pub flags_only_first: Vec<String>,
    /// Flags only the second entry's compile had.
    pub flags_only_second: Vec<String>,
    /// The HLO modules' first structural difference (computation,
    /// instruction, opcode, shape), or that only names, ids, metadata or
    /// paths differ.
    pub hlo: String,
}

/// One side of an explanation: a cache entry's folder, or an HLO module
/// file with the flags file it was (or would be) compiled with.
#[derive(Debug, Clone, Copy)]
pub struct Side<'p> {
    /// The entry's folder, or the HLO module file.
    pub path: &'p Path,
    /// For a module file: its flags (`compile_flags.json` or text form).
    pub flags: Option<&'p Path>,
}

/// Why `a` and `b` are different cache keys: the compiler version their
/// folders name, each flag one compile had and the other not
/// (`compile_flags.json`, or the older text file), and the first structural
/// difference of their HLO modules. Entries without a module (vLLM's) are
/// compared by the files they hold.
pub fn explain(a: Side<'_>, b: Side<'_>) -> Result<Explanation, String> {
    let version = |s: Side<'_>| {
        if s.path.is_file() {
            return String::new();
        }
        s.path
            .parent()
            .map(|v| name(v).trim_start_matches("neuronxcc-").to_string())
            .unwrap_or_default()
    };
    let (va, vb) = (version(a), version(b));
    let (fa, fb) = (side_flags(a)?, side_flags(b)?);
    let hlo = match (side_module(a)?, side_module(b)?) {
        (Some(ma), Some(mb)) => crate::carrier::hlo::first_difference(ma.into(), mb.into())?
            .unwrap_or_else(|| "only names, ids, metadata or paths differ".to_string()),
        _ => held_difference(a.path, b.path)?,
    };
    Ok(Explanation {
        compiler: (va != vb && !va.is_empty() && !vb.is_empty()).then_some((va, vb)),
        flags_only_first: fa.iter().filter(|f| !fb.contains(f)).cloned().collect(),
        flags_only_second: fb.iter().filter(|f| !fa.contains(f)).cloned().collect(),
        hlo,
    })
}

/// A side's flags: a module file's given flags file, an entry's own.
fn side_flags(side: Side<'_>) -> Result<Vec<String>, String> {
    match (side.path.is_file(), side.flags) {
        (true, Some(file)) => flags_file(file),
        (true, None) => Ok(Vec::new()),
        (false, _) => {
            let json = side.path.join("compile_flags.json");
            match json.is_file() {
                true => flags_file(&json),
                false => flags_file(&side.path.join("compile_flags.txt")),
            }
        }
    }
}

/// A side's HLO module bytes: the file itself, or the entry's.
fn side_module(side: Side<'_>) -> Result<Option<Vec<u8>>, String> {
    match side.path.is_file() {
        true => std::fs::read(side.path)
            .map(Some)
            .map_err(|e| format!("{}: {e}", side.path.display())),
        false => hlo_module(side.path),
    }
}

/// What two entries without HLO modules hold differently: the files only
/// one has, and those both have with other bytes.
fn held_difference(a: &Path, b: &Path) -> Result<String, String> {
    let held = |dir: &Path| -> Result<BTreeMap<String, Vec<u8>>, String> {
        let files = files_below(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        files
            .iter()
            .map(|f| {
                let bytes = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
                Ok((relative(dir, f), bytes))
            })
            .collect()
    };
    if a.is_file() || b.is_file() {
        return Ok("one side has no HLO module".to_string());
    }
    let (ha, hb) = (held(a)?, held(b)?);
    let mut differ = Vec::new();
    for (name, bytes) in &ha {
        match hb.get(name) {
            None => differ.push(format!("{name} only in the first")),
            Some(other) if other != bytes => differ.push(format!("{name} differs")),
            _ => {}
        }
    }
    differ.extend(
        hb.keys()
            .filter(|n| !ha.contains_key(*n))
            .map(|n| format!("{n} only in the second")),
    );
    Ok(match differ.is_empty() {
        true => "no HLO modules; the entries hold the same files".to_string(),
        false => format!("no HLO modules; {}", differ.join(", ")),
    })
}

/// Compile flags from a file: JSON (a list, or an object's `key=value`s),
/// else its whitespace-separated words (a missing file: none).
fn flags_file(file: &Path) -> Result<Vec<String>, String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Ok(Vec::new());
    };
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
        let word = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        return Ok(match value {
            serde_json::Value::Array(items) => items.iter().map(word).collect(),
            serde_json::Value::Object(map) => map
                .iter()
                .map(|(k, v)| format!("{k}={}", word(v)))
                .collect(),
            // A JSON string or number is a word of the text form.
            serde_json::Value::String(_) | serde_json::Value::Number(_) => {
                text.split_whitespace().map(str::to_string).collect()
            }
            other => vec![word(&other)],
        });
    }
    Ok(text.split_whitespace().map(str::to_string).collect())
}

/// An entry's HLO module bytes (`model.hlo_module.pb`, older `model.hlo.pb`).
fn hlo_module(entry: &Path) -> Result<Option<Vec<u8>>, String> {
    for file in ["model.hlo_module.pb", "model.hlo.pb"] {
        match std::fs::read(entry.join(file)) {
            Ok(bytes) => return Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}/{file}: {e}", entry.display())),
        }
    }
    Ok(None)
}
