//! Tier 1: the container gates G1–G12 (`neff_get_header_from_buffer`,
//! `neff_parse`; spec §5.1) and the tar walk of spec §3.4.

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Cursor, Read, Seek, SeekFrom};
use std::rc::Rc;
use std::sync::mpsc::sync_channel;

use neff_schema::features::unsupported_bits;
use neff_schema::{HashLayout, NeffHeader, PkgVersion, HEADER_LEN};
use serde::Serialize;

use crate::block_pool::BlockReader;
use crate::digest::{matching_layout, DigestSink, Digester, HashingReader, Tap};
use crate::error::{Error, ErrorKind, TarErrorKind};
use crate::gate::{Gate, Rejection};
use crate::gzip_reader::{looks_like_gzip, GzipReader, MemberTally};
use crate::members::{MemberMeta, MemberTable, Usage, MAP_MAX};
use crate::profile::RuntimeProfile;
use crate::report::Warnings;
use crate::tar_reader::{display_name, escape_name, Entry, EntryKind, StoredHeader, TarReader};

/// Members whose names end with this suffix are skipped by the runtime's walk.
pub const WAVEGRAPH_SUFFIX: &[u8] = b"wavegraph-bin.json";

/// How much decompressed data after the tar end marker is read to check the
/// gzip trailer. libarchive stops at the marker; this only feeds a warning.
const TAIL_CHECK_LIMIT: u64 = 1 << 20;

/// Memory limits for what the walk keeps.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest member whose bytes are kept in memory. Only manifests (names
    /// ending in `.json`) are kept: they are what later gates parse.
    pub keep_member_max: u64,
    /// Total bytes of member data kept in memory.
    pub keep_total_max: u64,
    /// Bytes the member map (`neff_t::files`: names and bookkeeping) may use
    /// at least; the budget is the larger of this and
    /// [`Limits::index_per_stored_byte`] times the stored payload bytes read
    /// so far, so it grows with the file and a valid NEFF fits. The runtime
    /// mallocs every member; past this budget the walk reports G12's
    /// allocation failure instead of growing without bound.
    pub index_max: u64,
    /// Member-map bytes allowed per stored payload byte read (see
    /// `INDEX_PER_STORED_BYTE`).
    pub index_per_stored_byte: u64,
    /// Whether to build [`Container::entries`], the entry table shown by
    /// `inspect` and read by `unpack` (three strings per entry: leave it off
    /// when only the verdict matters, as `verify` does).
    pub entry_table: bool,
    /// Bytes the entry table may use; past it the table is cut short (with a
    /// warning) while the walk goes on.
    pub table_max: u64,
    /// Warnings kept; further ones are counted in a final warning.
    pub warnings_max: usize,
    /// When set, the stored payload bytes read so far are added here (for a
    /// progress display).
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Payloads larger than this are hashed on a thread of their own,
    /// overlapped with inflate and the walk; smaller ones on the walk's
    /// thread, where a thread and a copy per read cost more than they
    /// overlap (`neff verify DIR` checks many such files on every core).
    pub hash_thread_min: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            keep_member_max: 16 << 20,
            keep_total_max: 64 << 20,
            index_max: 64 << 20,
            index_per_stored_byte: INDEX_PER_STORED_BYTE,
            entry_table: true,
            table_max: 64 << 20,
            warnings_max: 100,
            progress: None,
            hash_thread_min: 8 << 20,
        }
    }
}

impl Limits {
    /// The default limits without the entry table: for callers that need
    /// only the verdict (`verify`, the check of a written file).
    pub fn for_verdict() -> Self {
        Limits {
            entry_table: false,
            ..Limits::default()
        }
    }
}

/// How the payload was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    /// A raw tar.
    None,
    /// gzip (detected from the bytes, as libarchive does).
    Gzip,
}

/// How many leading bytes of a `.npy` member are kept: its magic and header
/// (numpy writes 128 bytes for all but very long shapes). Only weights
/// (`.npy`) have their first bytes read by a later gate.
pub const NPY_PREFIX_LEN: usize = 256;

/// The default of [`Limits::index_per_stored_byte`]. A member costs at most
/// 34 bytes plus its key (and 256 bytes
/// for a `.npy`): under 400 bytes with a name that fits its tar header, some
/// 35 for a typical one. Its tar header (512 bytes, its name and checksum
/// unlike its neighbours') does not compress much below 7 bytes: the worst
/// measured, a million `.npy` entries with 100-byte names and a block of
/// zeros each at deflate level 9, costs 52 map bytes per stored byte; real
/// trees 0.02–3. Entries repeating a name cost nothing (the map drops the
/// ones replaced), so a valid NEFF fits, and a hostile 1 MiB file never
/// makes the map grow past 128 MiB.
pub const INDEX_PER_STORED_BYTE: u64 = 128;

/// The prefix kept of the member named `key` (see `NPY_PREFIX_LEN`).
pub fn prefix_len(key: &[u8]) -> usize {
    if key.ends_with(b".npy") {
        NPY_PREFIX_LEN
    } else {
        0
    }
}

/// Why an entry of the tar walk is not in the member map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryFate {
    /// Stored in the member map.
    Stored,
    /// A directory: skipped.
    Directory,
    /// Name ends in `wavegraph-bin.json`: skipped.
    Wavegraph,
    /// A later entry with the same name replaced it.
    Replaced,
}

/// One entry of the tar walk, for the member table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct EntryRecord {
    /// The name as in the archive (escaped where not UTF-8).
    pub name: String,
    /// The name's raw bytes.
    #[serde(skip)]
    pub raw_name: Vec<u8>,
    /// The key the runtime stores it under (`./` stripped), escaped.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// Entry kind.
    #[serde(rename = "type")]
    pub kind: EntryKind,
    /// Offset of its header in the tar stream.
    pub header_offset: u64,
    /// What the walk did with it.
    pub fate: EntryFate,
}

/// What Tier 1 read: the header and the member map.
#[derive(Debug, Clone, Default)]
pub struct Container {
    /// The 1024-byte header.
    pub header: NeffHeader,
    /// Size of the whole file.
    pub file_size: u64,
    /// How the payload is stored, once known.
    pub compression: Option<Compression>,
    /// `neff_t::files`: stored name → member.
    pub members: MemberTable,
    /// The keys of the entries the walk skipped by name (`wavegraph-bin.json`):
    /// in the archive, but never stored by the runtime.
    pub skipped: MemberTable,
    /// Every tar entry in archive order, when [`Limits::entry_table`] asked
    /// for it.
    pub entries: Vec<EntryRecord>,
    /// The layout in which the header stores the payload digest, when the hash
    /// was checked and matched (G9).
    pub hash_layout: Option<HashLayout>,
    /// The payload's digest (standard layout), when it was computed.
    pub digest: Option<Vec<u8>>,
    /// Length of the whole decompressed tar stream: entries, the
    /// end-of-archive blocks and any padding after them (Python's `tarfile`
    /// pads to 10240). `None` when the walk did not reach the end of the
    /// archive, or when more than 1 MiB followed the end marker.
    pub tar_size: Option<u64>,
    /// Offset in the tar stream of the end-of-archive marker (its first zero
    /// block), i.e. where the last entry ends; the stream's end when it ends
    /// without a marker. `None` when the walk did not reach the end.
    pub tar_end_offset: Option<u64>,
    /// Whether every byte the tar walk read past its last entry's data (the
    /// end-of-archive blocks excepted) is zero, up to `tar_size`; `None`
    /// when `tar_size` is.
    pub tar_tail_zero: Option<bool>,
    /// Whether the padding after some entry's data is not all zero; `None`
    /// unless the walk's sink wanted the stored headers
    /// ([`EntrySink::wants_headers`]), the only walk that measures it.
    pub tar_nonzero_padding: Option<bool>,
    /// gzip payloads: how many complete gzip members were read.
    pub gzip_members: Option<u64>,
    /// gzip payloads: bytes from the start of the payload to the end of the
    /// last complete member's trailer (the member's length: every real file
    /// has one). `None` when no member was read to its end.
    pub gzip_member_size: Option<u64>,
    /// The bytes inside `data_size` after the gzip data (see
    /// [`Container::measure_padding`]).
    pub payload_padding: Option<PayloadPadding>,
    /// True when the tar walk reached the end of the archive without a
    /// refusal: the member map is complete.
    pub walk_complete: bool,
    /// True when [`Container::entries`] holds every entry the walk read (it
    /// is cut short past [`Limits::table_max`], and left empty unless
    /// [`Limits::entry_table`]).
    pub entries_complete: bool,
}

/// The bytes inside `data_size` that follow the gzip data. neuronx-cc pads
/// the member with zeros to a multiple of 10240 (libarchive's block size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PayloadPadding {
    /// How many bytes follow the last gzip member inside `data_size`.
    pub bytes: u64,
    /// Whether they are all zero.
    pub all_zero: bool,
}

impl Container {
    /// The stored member `key` (`./` stripped).
    pub fn member(&self, key: &[u8]) -> Option<crate::MemberRef<'_>> {
        self.members.get(key)
    }

    /// The payload bytes the walk actually read from the file: the gzip
    /// member's compressed length, or the raw tar's. Never more than the file
    /// holds, whatever `data_size` claims, so limits scaled by it stay bounded
    /// by the file's real size.
    pub fn stored_bytes(&self) -> u64 {
        match self.compression {
            Some(Compression::Gzip) => self.gzip_member_size.unwrap_or(0),
            _ => self.tar_size.unwrap_or(0),
        }
    }

    /// Fills in [`Container::payload_padding`] ([`Container::padding`]).
    /// Does nothing unless the gzip data was read to its end.
    pub fn measure_padding<R: Read + Seek + ?Sized>(
        &mut self,
        source: &mut R,
    ) -> Result<(), Error> {
        if let Some(padding) = self.padding(source)? {
            self.payload_padding = Some(padding);
        }
        Ok(())
    }

    /// The bytes between the end of the gzip data and the end of
    /// `data_size`, read from `source` (the same NEFF) again, stopping at
    /// the first non-zero byte; `None` unless the gzip data was read to its
    /// end.
    pub fn padding<R: Read + Seek + ?Sized>(
        &self,
        source: &mut R,
    ) -> Result<Option<PayloadPadding>, Error> {
        let Some(end) = self.gzip_member_size else {
            return Ok(None);
        };
        let data_size = self.header.data_size();
        let bytes = data_size.saturating_sub(end);
        source.seek(SeekFrom::Start(HEADER_LEN as u64 + end))?;
        let mut rest = BufReader::new(&mut *source).take(bytes);
        let mut buf = [0u8; 8192];
        let mut all_zero = true;
        loop {
            let n = rest.read(&mut buf)?;
            if n == 0 {
                break;
            }
            if buf[..n].iter().any(|&b| b != 0) {
                all_zero = false;
                break;
            }
        }
        Ok(Some(PayloadPadding { bytes, all_zero }))
    }
}

/// The outcome of the container tier (G1–G12).
#[derive(Debug)]
pub struct Tier1 {
    /// What was read (absent only when even the header could not be read).
    pub container: Option<Container>,
    /// The first failing gate, if any.
    pub rejection: Option<Rejection>,
    /// Warnings, in the order found.
    pub warnings: Vec<String>,
}

/// Runs G1–G12 on a NEFF source. `None` is a NULL buffer (G1).
/// Returns `Err` only for I/O failures of the source itself.
pub fn run<R: Read + Seek>(
    source: Option<&mut R>,
    profile: &RuntimeProfile,
    limits: &Limits,
) -> Result<Tier1, Error> {
    run_with(source, profile, limits, Digester::for_payload, &mut NoSink)
}

/// The container walk and gates (G1–G12), handing every tar entry and its data to `sink` as the walk reads
/// it (an unpack writes them out in the same pass as the check).
pub fn run_into<R: Read + Seek>(
    source: &mut R,
    profile: &RuntimeProfile,
    limits: &Limits,
    sink: &mut dyn EntrySink,
) -> Result<Tier1, Error> {
    run_with(Some(source), profile, limits, Digester::for_payload, sink)
}

/// Receives the tar entries the walk reads, each followed by its data. It
/// cannot fail the walk (it keeps its own errors) and never changes a verdict.
pub trait EntrySink {
    /// The next entry, before its data.
    fn entry(&mut self, entry: &Entry);
    /// The next bytes of the current entry's data.
    fn data(&mut self, bytes: &[u8]);
    /// Whether the data of entries the walk itself skips (the
    /// `wavegraph-bin.json` members) is wanted too.
    fn wants_skipped(&self) -> bool;
    /// Whether each entry's stored header blocks are wanted
    /// ([`EntrySink::headers`]). Default: no.
    fn wants_headers(&self) -> bool {
        false
    }
    /// The stored header blocks of the next entry (its pax and long-name
    /// headers, then its own), just before [`EntrySink::entry`]; only when
    /// [`EntrySink::wants_headers`].
    fn headers(&mut self, headers: &[StoredHeader]) {
        let _ = headers;
    }
}

/// A check only: nothing receives the entries.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSink;

impl EntrySink for NoSink {
    fn entry(&mut self, _: &Entry) {}
    fn data(&mut self, _: &[u8]) {}
    fn wants_skipped(&self) -> bool {
        false
    }
}

/// [`run`] with the payload digest chosen by `digester` (a test seam: a
/// failing hash stage must be an error, never an acceptance).
fn run_with<R: Read + Seek>(
    source: Option<&mut R>,
    profile: &RuntimeProfile,
    limits: &Limits,
    digester: fn(bool, Option<PkgVersion>) -> Digester,
    sink: &mut dyn EntrySink,
) -> Result<Tier1, Error> {
    let Some(source) = source else {
        return Ok(refused(
            Rejection::new(Gate::G1, "Invalid NEFF buffer"),
            None,
            Vec::new(),
        ));
    };
    let file_size = source.seek(SeekFrom::End(0))?;
    if let Some(refusal) = too_small(file_size) {
        return Ok(refusal);
    }
    source.seek(SeekFrom::Start(0))?;
    let mut raw = [0u8; HEADER_LEN];
    source.read_exact(&mut raw)?;
    let mut opened = match open(NeffHeader::from_bytes(raw), file_size, profile) {
        Ok(opened) => opened,
        Err(refusal) => return Ok(*refusal),
    };
    let data_size = opened.container.header.data_size();
    let pkg = PkgVersion::from_value(opened.container.header.pkg_version());
    let mut digester = digester(profile.verify_hash, pkg);
    source.seek(SeekFrom::Start(HEADER_LEN as u64))?;
    let mut payload = (&mut *source).take(data_size);
    // The walk, then whatever it did not read: the digest covers all
    // data_size bytes.
    let mut walk_all = |digest: DigestSink<'_>| {
        let mut reader = HashingReader::new(&mut payload, digest, limits.progress.clone());
        let walked = walk(
            &mut reader,
            limits,
            &mut opened.container,
            &mut opened.warnings,
            sink,
        );
        (walked, crate::block_pool::drain(&mut reader, |_| {}))
    };
    let ((walked, rest), digester) = if data_size <= limits.hash_thread_min || !digester.is_on() {
        // Small payloads: the digest on this thread, as the bytes are read.
        (walk_all(DigestSink::Inline(&mut digester)), Ok(digester))
    } else {
        // The digest runs on its own thread, overlapped with inflate and the walk.
        std::thread::scope(|scope| {
            let (tx, rx) = sync_channel::<Vec<u8>>(16);
            let handle = scope.spawn(move || {
                for buf in rx {
                    digester.update(&buf);
                }
                digester
            });
            let walked = walk_all(DigestSink::Thread(tx));
            // A dead hash thread must never turn G9 off.
            let digester = handle
                .join()
                .map_err(|_| Error::new(ErrorKind::Pipeline, "the payload hash thread panicked"));
            (walked, digester)
        })
    };
    let walked = match walked {
        Err(WalkError::Source(e)) => return Err(e),
        walked => walked,
    };
    rest?;
    Ok(close(opened, walked, digester?.finish(), profile))
}

/// Tier 1 over a payload that was streamed through [`walk`] as it was
/// written (see [`crate::StreamCheck`]): the same gates as [`run`], in the
/// same order, on the header bytes, the real `file_size`, the walk's outcome
/// and the writer's own `digest` of those exact bytes.
pub(crate) fn run_streamed(
    header: NeffHeader,
    file_size: u64,
    walked: Walked,
    digest: Option<Vec<u8>>,
    profile: &RuntimeProfile,
) -> Result<Tier1, Error> {
    if let Some(refusal) = too_small(file_size) {
        return Ok(refusal);
    }
    let mut opened = match open(header, file_size, profile) {
        Ok(opened) => opened,
        Err(refusal) => return Ok(*refusal),
    };
    let Walked {
        mut container,
        warnings,
        outcome,
    } = walked;
    if let Err(WalkError::Source(e)) = outcome {
        return Err(e);
    }
    container.header = opened.container.header;
    container.file_size = file_size;
    opened.container = container;
    opened.warnings.extend(warnings);
    Ok(close(opened, outcome, digest, profile))
}

/// What the gates before the walk leave: the container so far and warnings.
struct Opened {
    container: Container,
    warnings: Vec<String>,
}

/// What a walk over a streamed payload found, for [`run_streamed`].
#[derive(Debug)]
pub(crate) struct Walked {
    /// The member map and framing facts (header and file size unset).
    container: Container,
    warnings: Vec<String>,
    outcome: Result<(), WalkError>,
}

impl Walked {
    /// Walks `payload` (the stored payload bytes) into a fresh container.
    pub(crate) fn run<R: Read>(payload: R, limits: &Limits) -> Walked {
        let mut container = Container::default();
        let mut warnings = Vec::new();
        let outcome = walk(
            HashingReader::new(payload, DigestSink::Off, limits.progress.clone()),
            limits,
            &mut container,
            &mut warnings,
            &mut NoSink,
        );
        Walked {
            container,
            warnings,
            outcome,
        }
    }
}

/// A Tier-1 refusal.
fn refused(rejection: Rejection, container: Option<Container>, warnings: Vec<String>) -> Tier1 {
    Tier1 {
        container,
        rejection: Some(rejection),
        warnings,
    }
}

/// G2: a file too small to hold the header.
fn too_small(file_size: u64) -> Option<Tier1> {
    (file_size <= 0x3FF).then(|| {
        refused(
            Rejection::new(
                Gate::G2,
                format!("Invalid number of NEFF bytes received {file_size:x}"),
            )
            .detail(format!(
                "the file is {file_size} bytes; the 1024-byte header alone needs more"
            )),
            None,
            Vec::new(),
        )
    })
}

/// G3–G8 on the header, and the warning about bytes after the payload.
fn open(
    header: NeffHeader,
    file_size: u64,
    profile: &RuntimeProfile,
) -> Result<Opened, Box<Tier1>> {
    let mut warnings = Vec::new();
    let rejection = header_gates(&header, Some(file_size), profile, &mut warnings);
    let container = Container {
        header,
        file_size,
        ..Container::default()
    };
    if let Some(r) = rejection {
        return Err(Box::new(refused(r, Some(container), warnings)));
    }
    let end = HEADER_LEN as u64 + container.header.data_size();
    if file_size > end {
        warnings.push(format!(
            "{} bytes after the payload (file offset {end:#x} to {file_size:#x}) are ignored",
            file_size - end
        ));
    }
    Ok(Opened {
        container,
        warnings,
    })
}

/// G9 on the payload `digest` (`None`: verification off), after the walk:
/// a hash mismatch is the verdict whatever the walk found.
fn close(
    opened: Opened,
    walked: Result<(), WalkError>,
    digest: Option<Vec<u8>>,
    profile: &RuntimeProfile,
) -> Tier1 {
    let Opened {
        mut container,
        warnings,
    } = opened;
    let walk_rejection = match walked {
        Err(WalkError::Gate(r)) => Some(r),
        _ => None,
    };
    if let Some(digest) = digest {
        container.digest = Some(digest.to_vec());
        let stored = container.header.hash();
        let layouts = profile.hash_layout.layouts();
        match matching_layout(&digest, &stored, layouts) {
            Some(layout) => container.hash_layout = Some(layout),
            None => {
                let r = hash_mismatch(&container.header, &digest, profile);
                return refused(r, Some(container), warnings);
            }
        }
    }
    Tier1 {
        container: Some(container),
        rejection: walk_rejection,
        warnings,
    }
}

/// G9's refusal: the header's hash against the payload's `digest`.
fn hash_mismatch(header: &NeffHeader, digest: &[u8], profile: &RuntimeProfile) -> Rejection {
    let name = if PkgVersion::from_value(header.pkg_version()) == Some(PkgVersion::Sha256Tar) {
        "SHA256"
    } else {
        "MD5"
    };
    let stored = header.hash();
    let expected = neff_schema::hex::encode(&stored[..digest.len()]);
    let layouts = profile.hash_layout.layouts();
    let computed: Vec<String> = layouts
        .iter()
        .map(|l| format!("{} {}", neff_schema::hex::encode(l.apply(digest)), l.name()))
        .collect();
    Rejection::new(Gate::G9, format!("{name} mismatch!")).detail(format!(
        "header hash at +0x0AC is {expected}; the {}-byte payload at file offset 0x400 hashes to {} (hash layouts tried: {})",
        header.data_size(),
        computed.join(" / "),
        profile.hash_layout.name()
    ))
}

/// G3–G8: the checks on header fields alone, in the runtime's order. With no
/// `file_size` (a model still in memory, its payload not yet written) the
/// checks that depend on the payload (G3, G6, G8) are left out.
pub(crate) fn header_gates(
    header: &NeffHeader,
    file_size: Option<u64>,
    profile: &RuntimeProfile,
    warnings: &mut Vec<String>,
) -> Option<Rejection> {
    let header_size = header.header_size();
    if file_size.is_some_and(|file_size| header_size >= file_size) {
        return Some(
            Rejection::new(
                Gate::G3,
                format!(
                    "Invalid NEFF file size hdr sz: {header_size:x}, file sz: {:x}",
                    file_size.unwrap_or_default()
                ),
            )
            .detail("header_size (+0x008) must be smaller than the file"),
        );
    }
    if header_size != HEADER_LEN as u64 {
        warnings.push(format!(
            "header_size (+0x008) is {header_size:#x}, not 0x400: the runtime reads the payload at 0x400 anyway, but other tools trust this field"
        ));
    }
    let (major, minor) = (header.major(), header.minor());
    if major > 2 {
        return Some(
            Rejection::new(
                Gate::G4,
                format!("NEFF version: {major}.{minor} is not supported, accepted version range: 0.x-2.x"),
            )
            .detail("neff_version_major (+0x018) must be at most 2"),
        );
    }
    let unsupported = unsupported_bits(header.feature_bits(), profile.supported_features);
    if major == 2 && unsupported != 0 {
        return Some(
            Rejection::new(
                Gate::G5,
                format!(
                    "This NEFF (version: 2.{minor}, features: {unsupported:#x}) has been compiled by a newer version of Neuron compiler. Features supported by this Neuron Runtime: {:#x}. Please update the aws-neuronx-runtime-lib package to the latest version.",
                    profile.supported_features
                ),
            )
            .detail(format!(
                "feature_bits (+0x220) = {:#x} has bits the runtime does not support",
                header.feature_bits()
            )),
        );
    }
    let data_size = header.data_size();
    let room = file_size.map(|file_size| file_size - HEADER_LEN as u64);
    if let Some(room) = room.filter(|&room| data_size > room) {
        return Some(
            Rejection::new(
                Gate::G6,
                format!("Invalid NEFF data size({data_size:x} vs {room:x})"),
            )
            .detail(format!(
                "data_size (+0x010) is {data_size} bytes but only {room} follow the header"
            )),
        );
    }
    let pkg = header.pkg_version();
    let Some(pkg) = PkgVersion::from_value(pkg) else {
        return Some(
            Rejection::new(Gate::G7, format!("Unsupported NEFF packager: {pkg}"))
                .detail("pkg_version (+0x000) must be 1 (tar + SHA-256) or 2 (gzip tar + MD5)"),
        );
    };
    if profile.verify_hash && data_size == 0 && file_size.is_some() {
        let (line, func) = match pkg {
            PkgVersion::Sha256Tar => (0x34, "void sha256(const uint8_t*, size_t, uint8_t*)"),
            PkgVersion::Md5Gzip => (0x40, "void md5(const uint8_t*, size_t, uint8_t*)"),
        };
        return Some(
            Rejection::new(
                Gate::G8,
                format!("/opt/workspace/KaenaRuntime/kelf/neff.cpp:{line}: {func}: Assertion `len > 0' failed."),
            )
            .detail("data_size is 0 with hash verification on: the runtime asserts and the process aborts"),
        );
    }
    None
}

/// Receives a member's data: keeps up to `room` bytes of it in `body`, and
/// passes all of it on to the walk's [`EntrySink`].
struct KeepSink<'a> {
    body: &'a mut Vec<u8>,
    room: usize,
    also: &'a mut dyn EntrySink,
}

impl io::Write for KeepSink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let kept = self.room.min(buf.len());
        self.body.extend_from_slice(&buf[..kept]);
        self.room -= kept;
        self.also.data(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[derive(Debug)]
pub(crate) enum WalkError {
    Source(Error),
    Gate(Rejection),
}

/// Maps a tar error to its gate; source I/O errors pass through.
fn classify(e: Error, gate: Gate, message: impl FnOnce(&str) -> String) -> WalkError {
    if e.kind() == ErrorKind::Read {
        return WalkError::Source(e);
    }
    WalkError::Gate(Rejection::new(gate, message(e.libarchive_text())).detail(e.to_string()))
}

/// What the walk counts against [`Limits`] as it goes.
struct Budgets<'l> {
    limits: &'l Limits,
    /// Stored payload bytes read so far.
    consumed: Rc<Cell<u64>>,
    index_used: u64,
    table_used: u64,
    table_cut: bool,
    kept_total: u64,
}

impl Budgets<'_> {
    /// Adds `cost` bytes to the member map. Past its budget, drops the
    /// entries later ones replaced (duplicates cost nothing in the end) and
    /// refuses (G12) when what is left still takes over three quarters of it.
    fn charge_index(
        &mut self,
        cost: u64,
        entry: &Entry,
        container: &mut Container,
        warnings: &mut Warnings,
    ) -> Result<(), WalkError> {
        self.index_used += cost;
        let budget = self
            .limits
            .index_max
            .max(
                self.consumed
                    .get()
                    .saturating_mul(self.limits.index_per_stored_byte),
            )
            .min(MAP_MAX);
        if self.index_used <= budget {
            return Ok(());
        }
        let usage = compact_members(container, warnings);
        self.index_used = usage.index + cost;
        self.kept_total = usage.kept;
        if self.index_used <= budget / 4 * 3 {
            return Ok(());
        }
        let shown = display_name(&entry.name);
        Err(WalkError::Gate(
            Rejection::new(
                Gate::G12,
                format!("fail to allocate memory({}) for file {shown}", entry.size),
            )
            .detail(format!(
                "the member index passed this verifier's budget at tar offset {}: {} bytes, more than the larger of {} MiB and {} bytes per stored payload byte read ({} bytes read)",
                entry.header_offset,
                self.index_used,
                self.limits.index_max >> 20,
                self.limits.index_per_stored_byte,
                self.consumed.get()
            )),
        ))
    }

    /// Adds `record` to the entry table while it fits its budget.
    fn table(&mut self, container: &mut Container, record: EntryRecord, warnings: &mut Warnings) {
        // Name bytes are held up to three times (raw, escaped name, escaped key).
        self.table_used += 3 * 4 * record.raw_name.len() as u64 + 96;
        if self.table_used <= self.limits.table_max {
            container.entries.push(record);
        } else if !self.table_cut {
            self.table_cut = true;
            warnings.push(format!(
                "the member table is cut short at tar offset {}: it passed this verifier's {} MiB budget (the walk and the gates go on)",
                record.header_offset,
                self.limits.table_max >> 20
            ));
        }
    }
}

/// The walk of spec §3.4 over the stored payload bytes; every entry and its
/// data also go to `sink`.
fn walk<R: Read>(
    payload: R,
    limits: &Limits,
    container: &mut Container,
    warnings: &mut Vec<String>,
    sink: &mut dyn EntrySink,
) -> Result<(), WalkError> {
    let consumed = Rc::new(Cell::new(0));
    let count = consumed.clone();
    let payload = Tap::new(payload, move |b: &[u8]| {
        count.set(count.get() + b.len() as u64)
    });
    let (compression, stream, tally) = payload_stream_tallied(payload)
        .map_err(|e| classify(e.into(), Gate::G10, |t| format!("Failed to open NEFF {t}")))?;
    container.compression = Some(compression);
    let mut tar = TarReader::new(stream);
    let recording = sink.wants_headers();
    if recording {
        tar = tar.recording_headers();
    }
    let mut budgets = Budgets {
        limits,
        consumed,
        index_used: 0,
        table_used: 0,
        table_cut: false,
        kept_total: 0,
    };
    // The walk's warnings, after the header's, at most `warnings_max` in all.
    let mut capped = Warnings::capped(limits.warnings_max.saturating_sub(warnings.len()));
    let walked = walk_entries(&mut tar, &mut budgets, container, &mut capped, sink);
    compact_members(container, &mut capped);
    warnings.extend(capped.into_vec());
    walked?;
    container.tar_end_offset = Some(tar.end_marker().unwrap_or(tar.offset()));
    container.tar_nonzero_padding = recording.then(|| tar.nonzero_padding());
    let walked_to = tar.offset();
    // libarchive stops at the end marker; look a little further only to warn
    // about a damaged gzip trailer (and to measure the whole tar stream).
    let mut rest = tar.into_inner().take(TAIL_CHECK_LIMIT);
    let mut tail_zero = true;
    match crate::block_pool::drain(&mut rest, |piece| {
        tail_zero &= piece.iter().all(|&b| b == 0)
    }) {
        Ok(n) if n == TAIL_CHECK_LIMIT => warnings.push(format!(
            "more than {} KiB of data after the tar end marker was not inspected",
            TAIL_CHECK_LIMIT >> 10
        )),
        Ok(n) => {
            container.tar_size = Some(walked_to + n);
            container.tar_tail_zero = Some(tail_zero);
        }
        Err(e) => {
            let e = Error::from(e);
            if e.kind() == ErrorKind::Read {
                return Err(WalkError::Source(e));
            }
            warnings.push(format!("after the tar end marker: {e}"));
        }
    }
    if let Some(tally) = tally {
        container.gzip_members = Some(tally.members());
        container.gzip_member_size = (tally.members() > 0).then(|| tally.end());
    }
    container.walk_complete = true;
    container.entries_complete = limits.entry_table && !budgets.table_cut;
    Ok(())
}

/// Reads every entry up to the end marker into the member map (and the
/// entry table when asked).
fn walk_entries<R: BufRead>(
    tar: &mut TarReader<R>,
    budgets: &mut Budgets<'_>,
    container: &mut Container,
    warnings: &mut Warnings,
    sink: &mut dyn EntrySink,
) -> Result<(), WalkError> {
    loop {
        let entry = match tar.next_entry() {
            Ok(Some(entry)) => entry,
            Ok(None) if tar.offset() == 0 => {
                return Err(WalkError::Gate(
                    Rejection::new(Gate::G10, "Failed to open NEFF Unrecognized archive format")
                        .detail("the payload holds no tar data at all"),
                ))
            }
            Ok(None) => return Ok(()),
            Err(e) => return Err(header_error(e, tar.offset())),
        };
        if sink.wants_headers() {
            sink.headers(tar.headers());
        }
        sink.entry(&entry);
        let fate = store_entry(tar, &entry, budgets, container, warnings, sink)?;
        if budgets.limits.entry_table {
            budgets.table(container, entry_record(&entry, fate), warnings);
        }
    }
}

/// The gate of a failure to read an entry's header: libarchive bids on the
/// first 512-byte block, so a failure there is an open failure (G10), later
/// ones are header read failures (G11).
fn header_error(e: Error, offset: u64) -> WalkError {
    let opening = offset <= 512
        && matches!(
            e.kind(),
            ErrorKind::Read
                | ErrorKind::Gzip(_)
                | ErrorKind::Tar(
                    TarErrorKind::TruncatedHeader
                        | TarErrorKind::BadChecksum
                        | TarErrorKind::Unrecognized,
                )
        );
    if opening {
        classify(e, Gate::G10, |t| format!("Failed to open NEFF {t}"))
    } else {
        classify(e, Gate::G11, |t| {
            format!("failure while reading NEFF metadata {t}")
        })
    }
}

/// The entry's line of the entry table.
fn entry_record(entry: &Entry, fate: EntryFate) -> EntryRecord {
    let key = entry.key();
    EntryRecord {
        name: escape_name(&entry.name),
        raw_name: entry.name.clone(),
        key: escape_name(key),
        size: entry.size.max(0) as u64,
        kind: entry.kind,
        header_offset: entry.header_offset,
        fate,
    }
}

/// Stores one entry as the runtime does (or skips it), reading its data.
fn store_entry<R: BufRead>(
    tar: &mut TarReader<R>,
    entry: &Entry,
    budgets: &mut Budgets<'_>,
    container: &mut Container,
    warnings: &mut Warnings,
    sink: &mut dyn EntrySink,
) -> Result<EntryFate, WalkError> {
    let shown = || display_name(&entry.name);
    let key = entry.key();
    let meta = MemberMeta {
        size: entry.size.max(0) as u64,
        kind: entry.kind,
        header_offset: entry.header_offset,
        whole: false,
    };
    if entry.kind == EntryKind::Directory {
        return Ok(EntryFate::Directory);
    }
    if key.ends_with(WAVEGRAPH_SUFFIX) {
        let cost = MemberTable::cost(key, &meta, 0);
        budgets.charge_index(cost, entry, container, warnings)?;
        container.skipped.push(key, &[], meta);
        warnings.push(format!(
            "member {} skipped: the runtime never stores members whose names end in wavegraph-bin.json",
            shown()
        ));
        if sink.wants_skipped() {
            let also = &mut *sink;
            let mut none = Vec::new();
            let mut data = KeepSink {
                body: &mut none,
                room: 0,
                also,
            };
            tar.copy_data(&mut data).map_err(|e| {
                classify(e, Gate::G11, |t| {
                    format!("failure while reading NEFF metadata {t}")
                })
            })?;
        }
        return Ok(EntryFate::Wavegraph);
    }
    if entry.size < 0 {
        return Err(WalkError::Gate(
            Rejection::new(
                Gate::G12,
                format!(
                    "invalid files size({}) for {} - negative size",
                    entry.size,
                    shown()
                ),
            )
            .detail(format!(
                "base-256 size field of the header at tar offset {} is negative",
                entry.header_offset
            )),
        ));
    }
    let size = meta.size;
    let cost = MemberTable::cost(key, &meta, prefix_len(key));
    budgets.charge_index(cost, entry, container, warnings)?;
    let limits = budgets.limits;
    let whole = key.ends_with(b".json")
        && size <= limits.keep_member_max.min(u64::from(u32::MAX))
        && budgets.kept_total + size <= limits.keep_total_max;
    let room = if whole {
        size as usize
    } else {
        prefix_len(key)
    };
    let meta = MemberMeta { whole, ..meta };
    container.members.start(key, &meta);
    let body = container.members.body();
    body.reserve(room.min(size as usize));
    tar.copy_data(&mut KeepSink {
        body,
        room,
        also: sink,
    })
    .map_err(|e| {
        classify(e, Gate::G12, |t| {
            format!("(open NEFF) failed to read {}: {t}", shown())
        })
    })?;
    if whole {
        budgets.kept_total += size;
    }
    container.members.commit();
    Ok(EntryFate::Stored)
}

/// Sorts the member map and drops every entry a later one replaced, warning
/// about it (and marking it in the entry table). Returns what the map holds.
fn compact_members(container: &mut Container, warnings: &mut Warnings) -> Usage {
    let skipped = container.skipped.compact(|_, _, _| {});
    let entries = &mut container.entries;
    let members = container.members.compact(|key, old, by| {
        warnings.push(format!(
            "duplicate member {}: the entry at tar offset {by} replaces the one at tar offset {old}",
            display_name(key),
        ));
        // Entries are in header-offset order: find the replaced one.
        if let Ok(i) = entries.binary_search_by_key(&old, |r| r.header_offset) {
            entries[i].fate = EntryFate::Replaced;
        }
    });
    Usage {
        index: members.index + skipped.index,
        kept: members.kept,
    }
}

/// Reads one stored member again from the source, for a manifest too large
/// to have been kept by the first walk: the entry whose tar header is at
/// `header_offset` (the one the member map kept; the walk stops there), its
/// data handed to `read` as a stream. `Ok(None)` when no entry starts there.
pub fn reread_member<R: Read + Seek + ?Sized, T>(
    source: &mut R,
    data_size: u64,
    header_offset: u64,
    read: impl FnOnce(&mut dyn Read) -> T,
) -> Result<Option<T>, Error> {
    source.seek(SeekFrom::Start(HEADER_LEN as u64))?;
    let (_, stream) = payload_stream(BufReader::new(&mut *source).take(data_size))?;
    let mut tar = TarReader::new(stream);
    while let Some(entry) = tar.next_entry()? {
        if entry.header_offset == header_offset {
            return Ok(Some(read(&mut tar.data())));
        }
        if entry.header_offset > header_offset {
            break;
        }
    }
    Ok(None)
}

/// The tar stream inside stored payload bytes: gzip is detected from the
/// bytes (libarchive's bidder), whatever `pkg_version` says (spec §3.1, §9 C22).
pub fn payload_stream<'a, R: Read + 'a>(
    payload: R,
) -> Result<(Compression, Box<dyn BufRead + 'a>), Error> {
    let (compression, stream, _) = payload_stream_tallied(payload)?;
    Ok((compression, stream))
}

/// [`payload_stream`], with a tally of where the gzip members end (gzip only).
fn payload_stream_tallied<'a, R: Read + 'a>(
    mut payload: R,
) -> io::Result<(Compression, Box<dyn BufRead + 'a>, Option<MemberTally>)> {
    let mut prefix = [0u8; 4];
    let got = read_prefix(&mut payload, &mut prefix)?;
    let prefix = prefix[..got].to_vec();
    let gzip = looks_like_gzip(&prefix);
    let chained = Cursor::new(prefix).chain(payload);
    Ok(if gzip {
        let tally = MemberTally::default();
        let reader = GzipReader::new(BlockReader::new(chained)).with_tally(tally.clone());
        // libarchive bids its filters again on each filter's output.
        let (reader, _layers) = crate::filter_chain::stack_gzip(Box::new(reader))?;
        (Compression::Gzip, reader, Some(tally))
    } else {
        let reader = BlockReader::new(chained);
        (Compression::None, Box::new(reader), None)
    })
}

fn read_prefix<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal valid NEFF: header plus a gzip'd tar of one member.
    fn neff() -> Vec<u8> {
        use std::io::Write;
        let mut tar = vec![0u8; 512];
        tar[..9].copy_from_slice(b"neff.json");
        tar[100..108].copy_from_slice(b"0000644\0");
        tar[124..136].copy_from_slice(b"00000000002\0");
        tar[156] = b'0';
        tar[148..156].copy_from_slice(b"        ");
        let sum: u32 = tar.iter().map(|&b| u32::from(b)).sum();
        tar[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        tar.extend_from_slice(b"{}");
        tar.resize(512 * 4, 0);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar).unwrap();
        let payload = gz.finish().unwrap();
        let mut h = NeffHeader::default();
        h.set_pkg_version(2);
        h.set_header_size(HEADER_LEN as u64);
        h.set_data_size(payload.len() as u64);
        let md5 = <md5::Md5 as md5::Digest>::digest(&payload);
        let mut hash = [0u8; 32];
        hash[..16].copy_from_slice(&md5);
        h.set_hash(hash);
        let mut out = h.as_bytes().to_vec();
        out.extend_from_slice(&payload);
        out
    }

    #[test]
    fn stored_bytes_is_what_was_read_not_what_data_size_claims() {
        let mut c = Container::default();
        c.header.set_data_size(u64::MAX);
        c.compression = Some(Compression::Gzip);
        c.gzip_member_size = Some(10);
        c.tar_size = Some(1 << 40);
        assert_eq!(c.stored_bytes(), 10);
        c.compression = Some(Compression::None);
        c.tar_size = Some(512);
        assert_eq!(c.stored_bytes(), 512);
    }

    #[test]
    fn a_failing_hash_stage_is_an_error_not_an_acceptance() {
        let bytes = neff();
        let profile = RuntimeProfile::default();
        let ok = run(Some(&mut Cursor::new(&bytes)), &profile, &Limits::default()).unwrap();
        assert!(ok.rejection.is_none(), "{:?}", ok.rejection);
        let failing = |_: bool, _: Option<PkgVersion>| Digester::Failing;
        let threaded = Limits {
            hash_thread_min: 0,
            ..Limits::default()
        };
        let err = run_with(
            Some(&mut Cursor::new(&bytes)),
            &profile,
            &threaded,
            failing,
            &mut NoSink,
        )
        .expect_err("a dead hash thread must be an error");
        assert!(err.to_string().contains("hash"), "{err}");
    }
}
