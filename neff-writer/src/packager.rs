//! The deterministic streaming packager: members → tar → gzip → hash → file.
//!
//! Output is written once, front to back: a placeholder header, then the
//! payload, hashed while it is written; the real header is patched in at the
//! end. The payload bytes are teed, as they go to the file, into the loader's
//! streaming check ([`neff_loader::StreamCheck`]), which runs every gate of
//! `verify` on them with the digest the writer computed (one hash, one
//! inflate); the file on disk then gets a cheap check (its length, its header
//! and the first and last 4 KiB of the payload). With
//! [`PackOptions::paranoid_readback`] the whole file is read back through
//! `neff-loader` instead. A NEFF the gates refuse is an error unless
//! [`PackOptions::keep_refused`] is set.

use std::borrow::Cow;
use std::collections::{btree_map, btree_set, BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::iter::Peekable;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use neff_loader::walk::Tap;
use neff_loader::{Limits, Loader, Report, RuntimeProfile, StreamCheck, StreamedDigests, Verdict};
use neff_schema::framing::{DeflateEngine, MemberOrder, TarFraming, UuidRule};
use neff_schema::header::Blob;
use neff_schema::{Framing, FramingPreset, HeaderFields, NeffHeader, PkgVersion, Uuid, HEADER_LEN};

use crate::clobber::OutputGuard;
use crate::deflate_cache::{CachedGzipWriter, DeflateCache};
use crate::error::{Error, ErrorKind};
use crate::gzip_writer::gzip_header;
use crate::hashing_writer::{Digests, HashingWriter};
use crate::header_options::{default_fields, HeaderPatch, UuidChoice};
use crate::labelled::Labelled;
use crate::member::{MemberName, MemberSource};
use crate::parallel_gzip;
use crate::progress::{Phase, Progress};
use crate::tar_writer::TarWriter;
use crate::tee::{Ends, Tee};
use crate::tree_walk::{TreeItem, TreeWalk};
use crate::writeback::Writeback;
use crate::zlib_gzip::ZlibGzipWriter;

/// How to package.
#[derive(Debug, Clone)]
pub struct PackOptions {
    /// 2 (gzip + MD5, the default) or 1 (raw tar + SHA-256).
    pub pkg_version: PkgVersion,
    /// How the payload is framed: tar dialect and fields, member order, gzip
    /// header, deflate engine and level (default 1), padding, hash layout.
    /// Default: the `gnu` preset.
    pub framing: Framing,
    /// Fill the header the way neuronx-cc does (the compiler-like presets):
    /// major 1 without feature bits (else 2), empty build version,
    /// `tpb_per_node[0] = 1`, and the name defaults to the output file's name.
    pub compiler_header: bool,
    /// Compression threads (default: the available cores). The output does
    /// not depend on it.
    pub threads: usize,
    /// When set, the phase and its bytes so far (member bytes as they are
    /// read, then, with [`PackOptions::paranoid_readback`], payload bytes as
    /// they are read back) go here, for a
    /// progress display.
    pub progress: Option<Arc<Progress>>,
    /// How the UUID is chosen (a UUID in `header` wins over this).
    pub uuid: UuidChoice,
    /// The header `hash` of the NEFF the header file or spec was lifted from
    /// (its `source_hash`): a [`UuidChoice::Recorded`] UUID is kept only
    /// while the payload hashes to it, and the outcome says whether it does
    /// ([`PackOutcome::payload_matches_source`]).
    pub source_hash: Option<Blob<32>>,
    /// Header fields to set over the defaults and the computed fields.
    pub header: HeaderPatch,
    /// Keep and hand over the written NEFF even when the output check's gates
    /// refuse it (the verdict is still in the outcome). Only this; it skips no
    /// check.
    pub keep_refused: bool,
    /// The runtime the check simulates. The check runs on every
    /// architecture the NEFF targets (the profile's `instance_arch` is replaced).
    pub profile: RuntimeProfile,
    /// fsync the file and its folder before returning.
    pub fsync: bool,
    /// Read the whole written file back through the loader (inflate and hash
    /// again) instead of checking the bytes as they are written. Default off:
    /// the streamed check runs the same gates on the same bytes.
    pub paranoid_readback: bool,
    /// Deflate pkg 2 payloads through this cache: content-defined chunks,
    /// each deflated once per level and reused by every later write that
    /// holds the same chunk (the framing's engine is then not used). For
    /// many near-identical NEFFs, such as seeds made from real files; the
    /// bytes depend only on the payload and the level.
    pub deflate_cache: Option<Arc<DeflateCache>>,
}

impl PackOptions {
    /// The defaults with a named framing preset (and its header conventions).
    pub fn with_preset(preset: FramingPreset) -> PackOptions {
        PackOptions {
            framing: preset.framing(),
            compiler_header: preset.is_compiler_like(),
            ..PackOptions::default()
        }
    }

    /// The deflate level (1–9).
    pub fn level(&self) -> u32 {
        self.framing.gzip.deflate.level
    }

    /// Sets the deflate level (1–9); see [`Deflate::with_level`] for the
    /// default engine at other levels than 1.
    ///
    /// [`Deflate::with_level`]: neff_schema::framing::Deflate::with_level
    pub fn set_level(&mut self, level: u32) {
        self.framing.gzip.deflate = self.framing.gzip.deflate.with_level(level);
    }
}

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions {
            pkg_version: PkgVersion::Md5Gzip,
            framing: Framing::default(),
            compiler_header: false,
            threads: available_cores(),
            progress: None,
            uuid: UuidChoice::FromContent,
            source_hash: None,
            header: HeaderPatch::default(),
            keep_refused: false,
            profile: RuntimeProfile::default(),
            fsync: true,
            paranoid_readback: false,
            deflate_cache: None,
        }
    }
}

/// The available cores, asked once: the query reads cgroup files, and a
/// corpus makes thousands of builders.
fn available_cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Two members collide, or a member is also a folder.
fn conflict(message: String) -> Error {
    Error::new(ErrorKind::Conflict, message)
}

/// An option is out of range, or a file cannot be packed.
fn bad_option(message: String) -> Error {
    Error::new(ErrorKind::BadOption, message)
}

/// What a build produced (serialized as Python's `neff.pack` and
/// `Builder.write` read it).
#[derive(Debug, Clone, serde::Serialize)]
pub struct PackOutcome {
    /// The header written.
    pub header: HeaderFields,
    /// The loader's verdict on the output: the first refusal on an arch the
    /// NEFF targets, else the first targeted arch's report.
    pub report: Report,
    /// Length of the tar stream.
    pub tar_size: u64,
    /// Number of file members.
    pub files: usize,
    /// Number of directory entries.
    pub directories: usize,
    /// What the caller should hear about choices made for it (a recorded
    /// UUID replaced after an edit).
    pub notes: Vec<String>,
    /// Whether the payload hashes to [`PackOptions::source_hash`]: true when
    /// this rebuilt the payload of the NEFF it was lifted from byte for byte.
    /// `None` when no source hash is recorded.
    pub payload_matches_source: Option<bool>,
}

enum Entry {
    Dir,
    File(MemberSource),
}

/// The tar entries in the order they are written, made as they are: the
/// listed ones, then a merge of the byte-sorted directory entries, added
/// members and tree entries, then `neff.json` when it goes last. Counts the
/// file and directory entries it gives.
struct Entries {
    files: usize,
    directories: usize,
    listed: std::vec::IntoIter<(String, Entry)>,
    /// Directory entries, named with their trailing `/`.
    dirs: Peekable<btree_set::IntoIter<String>>,
    added: Peekable<btree_map::IntoIter<MemberName, MemberSource>>,
    tree: Option<TreeEntries>,
    last: Option<(String, Entry)>,
}

/// Which source holds the next entry of the merge.
#[derive(Clone, Copy)]
enum Next {
    Dir,
    Added,
    Tree,
}

impl Entries {
    fn step(&mut self) -> Result<Option<(String, Entry)>, Error> {
        if let Some(listed) = self.listed.next() {
            return Ok(Some(listed));
        }
        let tree_head = match self.tree.as_mut() {
            Some(tree) => tree.head()?,
            None => None,
        };
        let heads = [
            (self.dirs.peek().map(String::as_str), Next::Dir),
            (self.added.peek().map(|(n, _)| n.as_str()), Next::Added),
            (tree_head, Next::Tree),
        ];
        let Some((name, next)) = heads
            .into_iter()
            .filter_map(|(name, next)| Some((name?, next)))
            .min_by(|a, b| a.0.cmp(b.0))
        else {
            return Ok(self.last.take());
        };
        // A folder both added and in the tree gets one entry; a file both
        // added and in the tree appeared in the tree after it was added.
        let tie = !matches!(next, Next::Tree) && tree_head == Some(name);
        Ok(match next {
            Next::Dir => {
                if tie {
                    self.tree.as_mut().and_then(TreeEntries::pop);
                }
                self.dirs.next().map(|d| (d, Entry::Dir))
            }
            Next::Added if tie => return Err(conflict(format!("member {name} is added twice"))),
            Next::Added => self
                .added
                .next()
                .map(|(n, source)| (n.to_string(), Entry::File(source))),
            Next::Tree => self.tree.as_mut().and_then(TreeEntries::pop),
        })
    }
}

impl Iterator for Entries {
    type Item = Result<(String, Entry), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.step().transpose()?;
        match item {
            Ok((_, Entry::Dir)) => self.directories += 1,
            Ok((_, Entry::File(_))) => self.files += 1,
            Err(_) => {}
        }
        Some(item)
    }
}

/// The folder given to [`Packager::from_dir`]: its root, walked one folder
/// at a time as the archive is written, and (once asked, for a progress
/// display) its files' total bytes.
#[derive(Debug)]
struct Tree {
    root: PathBuf,
    bytes: OnceLock<u64>,
}

impl Tree {
    /// True when the tree holds an entry `name` (a member name) of a type
    /// that passes `is`.
    fn has(&self, name: &str, is: fn(&std::fs::FileType) -> bool) -> bool {
        MemberName::new(name).is_ok_and(|name| {
            std::fs::symlink_metadata(self.root.join(name.as_str()))
                .is_ok_and(|meta| is(&meta.file_type()))
        })
    }

    /// Its files' total bytes, walked once (0 if the walk fails: the write
    /// reports why).
    fn bytes(&self) -> u64 {
        *self
            .bytes
            .get_or_init(|| TreeWalk::file_bytes(&self.root).unwrap_or(0))
    }

    /// Every file's path (for the check that the output overwrites none).
    fn paths(&self) -> impl Iterator<Item = PathBuf> + '_ {
        TreeWalk::new(&self.root).filter_map(|item| match item {
            Ok(TreeItem::File(name, _)) => Some(self.root.join(name)),
            _ => None,
        })
    }
}

/// The tree's entries in walk order, less the ones written out of order.
struct TreeEntries {
    /// The tree being walked.
    tree: Tree,
    walk: TreeWalk,
    head: Option<TreeItem>,
    /// Whether folders get entries.
    directories: bool,
    /// Tree entries already written (listed, or `neff.json` last).
    taken: BTreeSet<String>,
}

impl TreeEntries {
    fn new(tree: Tree, directories: bool) -> TreeEntries {
        TreeEntries {
            walk: TreeWalk::new(&tree.root),
            tree,
            head: None,
            directories,
            taken: BTreeSet::new(),
        }
    }

    /// The name of the next entry to write. Fails when the walk does.
    fn head(&mut self) -> Result<Option<&str>, Error> {
        while self.head.is_none() {
            let Some(item) = self.walk.next().transpose()? else {
                break;
            };
            let skip = match &item {
                TreeItem::File(name, _) => self.taken.contains(name),
                TreeItem::Dir(name) => !self.directories || self.taken.contains(name),
            };
            if !skip {
                self.head = Some(item);
            }
        }
        Ok(self.head.as_ref().map(TreeItem::name))
    }

    /// Takes the entry [`TreeEntries::head`] named.
    fn pop(&mut self) -> Option<(String, Entry)> {
        Some(match self.head.take()? {
            TreeItem::Dir(name) => (name, Entry::Dir),
            TreeItem::File(name, len) => {
                let path = self.tree.root.join(&name);
                (name, Entry::File(MemberSource::File { path, len }))
            }
        })
    }

    /// Takes the tree's entry `name` (a folder's with its trailing `/`) out
    /// of the walk, to write it out of order.
    fn take(&mut self, name: &str) -> Result<Option<Entry>, Error> {
        let entry = match name.strip_suffix('/') {
            Some(dir) if self.tree.has(dir, std::fs::FileType::is_dir) => Entry::Dir,
            None if self.tree.has(name, std::fs::FileType::is_file) => {
                let path = self.tree.root.join(name);
                Entry::File(
                    MemberSource::file(&path).map_err(|e| Error::io("cannot read", &path, e))?,
                )
            }
            _ => return Ok(None),
        };
        Ok(self.taken.insert(name.to_string()).then_some(entry))
    }
}

/// Collects members and writes them as a NEFF.
#[derive(Debug, Default)]
pub struct Packager {
    /// Members added one by one.
    files: BTreeMap<MemberName, MemberSource>,
    /// The folder given to [`Packager::from_dir`].
    tree: Option<Tree>,
    dirs: BTreeSet<MemberName>,
    /// The folders [`Packager::from_dir`] packs: no output goes inside them.
    roots: Vec<PathBuf>,
}

impl Packager {
    /// An empty package.
    pub fn new() -> Self {
        Packager::default()
    }

    /// Total bytes of member data (for a progress display). The first call
    /// walks a [`Packager::from_dir`] tree to count them.
    pub fn input_bytes(&self) -> u64 {
        let added: u64 = self.files.values().map(MemberSource::len).sum();
        added + self.tree.as_ref().map_or(0, Tree::bytes)
    }

    /// Every member file that `guard`'s output could be, for the check that
    /// the output overwrites none: the added ones, and the tree's only when
    /// the output may be a link to one (see [`OutputGuard::may_alias`]).
    fn input_files<'a>(
        &'a self,
        guard: &OutputGuard<'_>,
    ) -> impl Iterator<Item = Cow<'a, Path>> + 'a {
        let added = self.files.values().filter_map(MemberSource::path);
        let may_alias = guard.may_alias();
        let tree = self.tree.iter().filter(move |_| may_alias);
        added
            .map(Cow::Borrowed)
            .chain(tree.flat_map(Tree::paths).map(Cow::Owned))
    }

    /// Adds a member. Fails on an invalid or duplicate name.
    pub fn add(&mut self, name: &str, source: MemberSource) -> Result<&mut Self, Error> {
        let name = MemberName::new(name)?;
        let in_tree = |t: &Tree| t.has(name.as_str(), std::fs::FileType::is_file);
        if self.files.contains_key(&name) || self.tree.as_ref().is_some_and(in_tree) {
            return Err(conflict(format!("member {name} is added twice")));
        }
        self.files.insert(name, source);
        Ok(self)
    }

    /// Adds a member from bytes in memory.
    pub fn add_bytes(&mut self, name: &str, bytes: impl Into<Vec<u8>>) -> Result<&mut Self, Error> {
        self.add(name, MemberSource::Bytes(bytes.into()))
    }

    /// Adds a member streamed from a file when the archive is written.
    pub fn add_file(&mut self, name: &str, path: impl Into<PathBuf>) -> Result<&mut Self, Error> {
        self.add(name, MemberSource::file(path)?)
    }

    /// Adds a member streamed from a reader that yields exactly `len` bytes.
    pub fn add_reader(
        &mut self,
        name: &str,
        reader: impl Read + Send + 'static,
        len: u64,
    ) -> Result<&mut Self, Error> {
        self.add(
            name,
            MemberSource::Reader {
                reader: Box::new(reader),
                len,
            },
        )
    }

    /// Adds an (empty) directory entry. Parents of members get one anyway.
    pub fn add_dir(&mut self, name: &str) -> Result<&mut Self, Error> {
        self.dirs.insert(MemberName::new(name)?);
        Ok(self)
    }

    /// A package holding a directory tree as it is when the archive is
    /// written: every regular file and folder below `root`, walked once, one
    /// folder at a time, as the archive is written. Symlinks and special
    /// files are refused then (and nothing is written); a file whose length
    /// changes while it is read fails the write.
    pub fn from_dir(root: impl AsRef<Path>) -> Result<Packager, Error> {
        let root = root.as_ref();
        let meta = std::fs::metadata(root).map_err(|e| Error::io("cannot read", root, e))?;
        if !meta.is_dir() {
            return Err(bad_option(format!("{} is not a directory", root.display())));
        }
        Ok(Packager {
            tree: Some(Tree {
                root: root.to_path_buf(),
                bytes: OnceLock::new(),
            }),
            roots: vec![root.to_path_buf()],
            ..Packager::default()
        })
    }

    /// The tar entries in the framing's order: byte-sorted paths (with
    /// `neff.json` last, or as listed, when the framing says so), with a
    /// directory entry for every parent folder when it asks for them.
    fn entries(mut self, framing: &TarFraming) -> Result<Entries, Error> {
        let mut dirs: BTreeSet<String> = self.dirs.iter().map(|d| d.to_string()).collect();
        for name in self.files.keys() {
            for parent in name.parents() {
                if !dirs.contains(parent) {
                    dirs.insert(parent.to_string());
                }
            }
        }
        let tree = self.tree.as_ref();
        let is_file = |name: &str| {
            tree.is_some_and(|t| t.has(name, std::fs::FileType::is_file))
                || MemberName::new(name).is_ok_and(|n| self.files.contains_key(&n))
        };
        let is_tree_dir =
            |name: &&str| tree.is_some_and(|t| t.has(name, std::fs::FileType::is_dir));
        let clash = dirs
            .iter()
            .map(String::as_str)
            .find(|d| is_file(d))
            .or_else(|| self.files.keys().map(MemberName::as_str).find(is_tree_dir));
        if let Some(clash) = clash {
            return Err(conflict(format!(
                "{clash} is both a member and a folder of other members"
            )));
        }
        let listed = framing.order == MemberOrder::Listed;
        let wanted = |name: &String| {
            framing.directories || (listed && framing.entries.iter().any(|e| &e.name == name))
        };
        let mut dirs: BTreeSet<String> = dirs.into_iter().map(|d| d + "/").filter(wanted).collect();
        let mut tree = self
            .tree
            .take()
            .map(|t| TreeEntries::new(t, framing.directories));
        let mut take = |name: &str| -> Result<Option<Entry>, Error> {
            let in_tree = match tree.as_mut() {
                Some(tree) => tree.take(name)?,
                None => None,
            };
            if dirs.remove(name) {
                return Ok(Some(Entry::Dir));
            }
            if let Some(source) = MemberName::new(name)
                .ok()
                .and_then(|n| self.files.remove(&n))
            {
                return Ok(Some(Entry::File(source)));
            }
            Ok(in_tree)
        };
        let mut ordered = Vec::new();
        if listed {
            for e in &framing.entries {
                let Some(entry) = take(&e.name)? else {
                    return Err(conflict(format!(
                        "the framing lists member {} but the package has no such member",
                        e.name
                    )));
                };
                ordered.push((e.name.clone(), entry));
            }
        }
        let last = match framing.order == MemberOrder::NeffJsonLast {
            true => take("neff.json")?.map(|e| ("neff.json".to_string(), e)),
            false => None,
        };
        Ok(Entries {
            files: 0,
            directories: 0,
            listed: ordered.into_iter(),
            dirs: dirs.into_iter().peekable(),
            added: self.files.into_iter().peekable(),
            tree,
            last,
        })
    }

    /// Builds the NEFF at `path` atomically: a temp file beside it is
    /// written, checked, fsynced (with [`PackOptions::fsync`]; writeback
    /// starts while the payload is written) and renamed into place. On any failure the
    /// destination is untouched and the temp file is removed. A `path` that is
    /// one of the member files, or lies inside a folder given to
    /// [`Packager::from_dir`], is refused (an error of kind [`crate::ErrorKind::Conflict`]).
    pub fn write_to_path(
        self,
        path: impl AsRef<Path>,
        options: &PackOptions,
    ) -> Result<PackOutcome, Error> {
        let path = path.as_ref();
        let named;
        let options = match path.file_name().and_then(|n| n.to_str()) {
            Some(file_name) if options.compiler_header && options.header.name.is_none() => {
                let mut o = options.clone();
                o.header.name = neff_schema::header::Text::new(file_name).ok();
                named = o;
                &named
            }
            _ => options,
        };
        let guard = OutputGuard::new(path);
        guard
            .check_all(
                self.roots.iter().map(PathBuf::as_path),
                self.input_files(&guard),
            )
            .map_err(|why| Error::new(ErrorKind::Conflict, why).at_path(path))?;
        let mut tmp = crate::atomic::temp_beside(path)?;
        tmp.release_target_cache();
        let syncing = match options.fsync {
            true => Some(tmp.as_file().try_clone().map_err(|e| tmp.context(e))?),
            false => None,
        };
        // With fsync, writeback starts as the payload is written, so the
        // fsync finds little left to write. Without, the kernel writes it
        // when it likes: the move into place swaps instead of renaming over
        // an existing file (`crate::replace`), so ext4 does not flush it then.
        let writeback = match options.fsync {
            true => Some(tmp.as_file().try_clone().map_err(|e| tmp.context(e))?),
            false => None,
        };
        let written = self.write_payload(&mut tmp, options, writeback)?;
        // The fsync (I/O-bound) runs while the check finishes (CPU-bound).
        let outcome = std::thread::scope(|scope| {
            let sync = syncing.map(|file| scope.spawn(move || file.sync_all()));
            let checked = check(&mut tmp, options, written);
            let synced = sync.map_or(Ok(()), |sync| {
                sync.join()
                    .unwrap_or_else(|_| Err(io::Error::other("the fsync thread panicked")))
            });
            let outcome = checked?;
            synced.map_err(|e| tmp.context(e))?;
            Ok::<_, Error>(outcome)
        })?;
        tmp.persist_synced(options.fsync)?;
        Ok(outcome)
    }

    /// Builds the NEFF into any writer (stdout, a pipe). The header can only be
    /// written once the payload is hashed, so the NEFF is spooled to an
    /// anonymous temp file first and copied out after the check.
    pub fn write_to<W: Write>(
        self,
        out: &mut W,
        options: &PackOptions,
    ) -> Result<PackOutcome, Error> {
        let dir = std::env::temp_dir();
        let label = format!("cannot spool the output in {}", dir.display());
        let spool = tempfile::tempfile_in(&dir)
            .map_err(|e| io::Error::new(e.kind(), format!("{label}: {e}")))?;
        let mut spool = Labelled::new(spool, label);
        let written = self.write_payload(&mut spool, options, None)?;
        let outcome = check(&mut spool, options, written)?;
        spool.seek(SeekFrom::Start(0))?;
        let mut out = Labelled::new(out, "cannot write the output".to_string());
        io::copy(&mut spool, &mut out)?;
        out.flush()?;
        Ok(outcome)
    }

    /// Builds the NEFF into a seekable file from its start and checks it (as
    /// [`Packager::write_to_path`] does, without the fsync).
    pub fn write_file(self, file: &mut File, options: &PackOptions) -> Result<PackOutcome, Error> {
        file.set_len(0)?;
        let written = self.write_payload(file, options, None)?;
        check(file, options, written)
    }

    /// Writes the NEFF (payload, then the patched header) into an empty file,
    /// teeing the payload into the streaming check (unless
    /// [`PackOptions::paranoid_readback`]); with `writeback` (the same file),
    /// writeback to the device starts as the payload is written.
    fn write_payload<F: Write + Seek + Send>(
        self,
        file: &mut F,
        options: &PackOptions,
        writeback: Option<File>,
    ) -> Result<Written, Error> {
        let deflate = options.framing.gzip.deflate;
        if !(1..=9).contains(&deflate.level) {
            return Err(bad_option(format!(
                "compression level {} is out of range: use 1 to 9",
                deflate.level
            )));
        }
        if deflate.engine == DeflateEngine::ParallelLibdeflate && deflate.level != 1 {
            return Err(bad_option(format!(
                "the parallel-libdeflate engine runs at level 1 only, not {}: use the parallel engine",
                deflate.level
            )));
        }
        if !(1..=9).contains(&deflate.mem_level) {
            return Err(bad_option(format!(
                "zlib memLevel {} is out of range: use 1 to 9",
                deflate.mem_level
            )));
        }
        let gzip_header = gzip_header(&options.framing.gzip)?;
        let pkg = options.pkg_version;
        let uuid_from_content = options.header.uuid.is_none()
            && matches!(
                options.uuid,
                UuidChoice::FromContent | UuidChoice::Recorded(_)
            );
        let tar_framing = options.framing.tar.clone();
        if let Some(p) = &options.progress {
            p.start(Phase::Writing, self.input_bytes());
        }
        let mut entries = self.entries(&tar_framing)?;

        file.seek(SeekFrom::Start(0))?;
        file.write_all(&[0u8; HEADER_LEN])?;
        let out = BufWriter::with_capacity(
            1 << 20,
            Writeback::new(&mut *file, writeback, HEADER_LEN as u64),
        );
        let check = (!options.paranoid_readback).then(|| stream_check(options));
        // pkg 1's hash thread hands its batches on to the check (no copy);
        // pkg 2's bytes are copied to it as they pass.
        let (teed_check, handed_check) = match pkg {
            PkgVersion::Md5Gzip => (check, None),
            PkgVersion::Sha256Tar => (None, check),
        };
        let out = Tee::new(out, teed_check);
        let progress = options.progress.clone();
        let ((tee, digests, fed_check), tar_size) = match pkg {
            PkgVersion::Md5Gzip => std::thread::scope(|scope| -> Result<_, Error> {
                let sink = HashingWriter::new(out, pkg, uuid_from_content);
                let (mut sink, tar_size) = match (&options.deflate_cache, deflate.engine) {
                    (Some(cache), _) => {
                        let gzip =
                            CachedGzipWriter::new(sink, &gzip_header, deflate, cache.clone())?;
                        let (gzip, tar_size) =
                            write_tar(gzip, tar_framing, &mut entries, progress.as_deref())?;
                        (gzip.finish()?, tar_size)
                    }
                    // Tar framing here, deflate on `threads` workers, hashing
                    // and writing on the pipeline's writer thread.
                    (None, DeflateEngine::Parallel | DeflateEngine::ParallelLibdeflate) => {
                        let gzip = parallel_gzip::start(
                            scope,
                            sink,
                            gzip_header,
                            deflate,
                            options.threads,
                        );
                        let (gzip, tar_size) =
                            write_tar(gzip, tar_framing, &mut entries, progress.as_deref())?;
                        (gzip.finish()?, tar_size)
                    }
                    // Classic zlib, one stream: the compilers' exact bytes.
                    (None, DeflateEngine::Zlib) => {
                        let gzip = ZlibGzipWriter::new(
                            sink,
                            &gzip_header,
                            deflate.level,
                            deflate.mem_level,
                        )?;
                        let (gzip, tar_size) =
                            write_tar(gzip, tar_framing, &mut entries, progress.as_deref())?;
                        (gzip.finish()?, tar_size)
                    }
                };
                let padding = options.framing.gzip.padding.after(sink.count());
                io::copy(&mut io::repeat(0).take(padding), &mut sink)?;
                Ok((sink.finish()?, tar_size))
            })?,
            PkgVersion::Sha256Tar => {
                // SHA-256 on its own thread, overlapped with framing and I/O.
                let sink = HashingWriter::threaded(out, pkg, uuid_from_content, handed_check);
                let (sink, tar_size) =
                    write_tar(sink, tar_framing, &mut entries, progress.as_deref())?;
                (sink.finish()?, tar_size)
            }
        };
        let (files, directories) = (entries.files, entries.directories);
        let (buf, teed_check, ends) = tee.into_parts();
        let stream = teed_check.or(fed_check);
        buf.into_inner().map_err(|e| e.into_error())?;
        let header = assemble_header(pkg, &digests, options);
        let payload_hash = payload_hash(pkg, &digests, options);
        file.seek(SeekFrom::Start(0))?;
        file.write_all(NeffHeader::from_fields(&header).as_bytes())?;
        file.flush()?;
        Ok(Written {
            header,
            payload_hash,
            tar_size,
            files,
            directories,
            stream: stream.map(|check| (check, ends, digests)),
        })
    }
}

/// What [`Packager::write_payload`] wrote, before the check.
struct Written {
    header: HeaderFields,
    /// The `hash` field the payload gives (the header's may be patched).
    payload_hash: Option<Blob<32>>,
    tar_size: u64,
    files: usize,
    directories: usize,
    /// The streaming check, the payload's ends and digests (unless
    /// [`PackOptions::paranoid_readback`]).
    stream: Option<(StreamCheck, Ends, Digests)>,
}

/// The loader's streaming check for a write with `options`.
fn stream_check(options: &PackOptions) -> StreamCheck {
    StreamCheck::new(&options.profile, &Limits::for_verdict())
}

/// Runs every gate on every targeted arch over the written NEFF: the streamed
/// check with the cheap check of the file, or (paranoid, or when the header
/// frames other bytes than were streamed) a full read-back.
fn check<F: Read + Seek>(
    file: &mut F,
    options: &PackOptions,
    mut written: Written,
) -> Result<PackOutcome, Error> {
    let streamed = match written.stream.take() {
        Some((check, ends, digests)) => {
            let header = NeffHeader::from_fields(&written.header);
            ends.compare(file, header.as_bytes())?;
            let digests = StreamedDigests {
                md5: digests.md5,
                sha256: digests.sha256,
            };
            check.finish(&header, &mut *file, &digests)?
        }
        None => None,
    };
    let verdict = match streamed {
        Some(verdict) => verdict,
        None => read_back(file, options, written.header.data_size)?,
    };
    let report = verdict.combined_report();
    if !verdict.accepted && !options.keep_refused {
        return Err(Error::refused("the built NEFF is", report));
    }
    let mut notes = Vec::new();
    if let UuidChoice::Recorded(uuid) = options.uuid {
        if written.header.uuid != uuid && options.header.uuid.is_none() {
            notes.push(format!(
                "the payload changed since UUID {uuid} was recorded: derived a new UUID from the content (--uuid keep pins the recorded one)"
            ));
        }
    }
    Ok(PackOutcome {
        notes,
        payload_matches_source: options.source_hash.map(|h| Some(h) == written.payload_hash),
        header: written.header,
        report,
        tar_size: written.tar_size,
        files: written.files,
        directories: written.directories,
    })
}

/// Reads the written NEFF back through the loader.
fn read_back<F: Read + Seek>(
    file: &mut F,
    options: &PackOptions,
    data_size: u64,
) -> Result<Verdict, Error> {
    file.seek(SeekFrom::Start(0))?;
    if let Some(p) = &options.progress {
        p.start(Phase::ReadingBack, data_size);
    }
    let limits = Limits {
        progress: options.progress.as_ref().map(|p| p.counter()),
        ..Limits::default()
    };
    Ok(Loader::new(&options.profile)
        .limits(limits.clone())
        .verify(Some(BufReader::with_capacity(1 << 20, &mut *file)))?)
}

/// Frames `entries` as tar (`framing`) into `sink`; returns the sink, not yet
/// finished, and the tar stream's length.
fn write_tar<W: Write>(
    sink: W,
    framing: TarFraming,
    entries: impl Iterator<Item = Result<(String, Entry), Error>>,
    progress: Option<&Progress>,
) -> Result<(W, u64), Error> {
    let mut tar = TarWriter::with_framing(sink, framing);
    for item in entries {
        let (name, entry) = item?;
        match entry {
            Entry::Dir => tar.append_dir(name.trim_end_matches('/'))?,
            Entry::File(source) => {
                let what = source.describe();
                let len = source.len();
                let mut reader = Tap::new(source.open()?, |b: &[u8]| Progress::add(progress, b));
                tar.append_file(&name, len, &mut reader, &what)?;
            }
        }
    }
    Ok(tar.finish()?)
}

/// Fills in the header: defaults, then the payload-derived fields, then the
/// caller's patch.
fn assemble_header(pkg: PkgVersion, digests: &Digests, options: &PackOptions) -> HeaderFields {
    let mut h = default_fields(pkg);
    if options.compiler_header {
        compiler_header(&mut h, &options.header);
    }
    h.data_size = digests.count;
    if let Some(hash) = payload_hash(pkg, digests, options) {
        h.hash = hash;
    }
    let from_content = || match options.framing.uuid {
        UuidRule::Sha256 => digests
            .sha256
            .map(|d| Uuid::from_sha256(&d))
            .unwrap_or_default(),
        UuidRule::Hash => Uuid(h.hash.0[..16].try_into().unwrap_or_default()),
    };
    h.uuid = match options.uuid {
        UuidChoice::Explicit(u) => u,
        UuidChoice::Random => random_uuid(),
        UuidChoice::FromContent => from_content(),
        UuidChoice::Recorded(uuid) if options.source_hash == Some(h.hash) => uuid,
        UuidChoice::Recorded(_) => from_content(),
    };
    options.header.apply(&mut h);
    h
}

/// The header `hash` field the payload's `digests` give, in the framing's
/// layout (before any patch of the field); `None` without a digest.
fn payload_hash(pkg: PkgVersion, digests: &Digests, options: &PackOptions) -> Option<Blob<32>> {
    let layout = options.framing.hash.layout;
    let mut hash = Blob([0; 32]);
    match (digests.md5, digests.sha256) {
        (Some(md5), _) if pkg == PkgVersion::Md5Gzip => {
            hash.0[..16].copy_from_slice(&layout.apply(&md5));
            hash.0[16..].copy_from_slice(&options.framing.hash.tail.0);
        }
        (_, Some(sha)) => hash.0.copy_from_slice(&layout.apply(&sha)),
        _ => return None,
    }
    Some(hash)
}

/// neuronx-cc's header conventions (spec §11.1): empty build version,
/// `tpb_per_node[0] = 1`, and major 1 unless feature bits are set.
fn compiler_header(h: &mut HeaderFields, patch: &HeaderPatch) {
    h.build_version = Default::default();
    h.tpb_per_node.0[0] = 1;
    let features = patch.feature_bits.unwrap_or(h.feature_bits);
    h.neff_version_major = if features == 0 { 1 } else { 2 };
}

/// A random v4 UUID from the operating system's random source (the standard
/// library's hash keys and the clock when it cannot be read).
fn random_uuid() -> Uuid {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        use std::hash::{BuildHasher, Hasher};
        let state = std::collections::hash_map::RandomState::new();
        for (i, half) in bytes.chunks_mut(8).enumerate() {
            let mut h = state.build_hasher();
            h.write_usize(i);
            h.write_u128(std::time::UNIX_EPOCH.elapsed().map_or(0, |t| t.as_nanos()));
            half.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    Uuid::v4_from_bytes(bytes)
}
