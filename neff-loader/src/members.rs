//! The member map (`neff_t::files`), kept compactly: one byte arena holding
//! every member's slot (its key, size, header offset, kind, and the bytes
//! kept of it) and one 5-byte arena offset per member, sorted by key once
//! the walk is over. A member costs about 14 bytes plus its key.

use std::cmp::Reverse;
use std::fmt;

use crate::tar_reader::EntryKind;

/// One stored member, as the gates read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberRef<'a> {
    /// The key it is stored under (`./` stripped).
    pub key: &'a [u8],
    /// Size in bytes (0 for links and devices).
    pub size: u64,
    /// The entry kind.
    pub kind: EntryKind,
    /// Offset of its tar header in the (decompressed) tar stream.
    pub header_offset: u64,
    /// All its bytes, when they were kept (manifests small enough, see
    /// [`crate::Limits`]).
    pub data: Option<&'a [u8]>,
    /// Its first bytes, kept where a later gate reads them: up to
    /// `NPY_PREFIX_LEN` of a `.npy` member (its magic and header
    /// dict), the kept bytes of others, else empty.
    pub prefix: &'a [u8],
}

/// What a member's slot holds besides its key and kept bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemberMeta {
    pub size: u64,
    pub kind: EntryKind,
    pub header_offset: u64,
    /// The kept bytes are the whole member (else a prefix).
    pub whole: bool,
}

/// A slot in the arena: varint key length, key, varint size, varint header
/// offset, a flags byte (kind, whole), the kept bytes' varint length (at most
/// `u32::MAX`) and the kept bytes.
const WHOLE_FLAG: u8 = 0x80;
const KINDS: [EntryKind; 5] = [
    EntryKind::File,
    EntryKind::Directory,
    EntryKind::Symlink,
    EntryKind::Hardlink,
    EntryKind::Special,
];

/// A slot's offset in the arena, 40 bits little-endian.
type Offset = [u8; OFFSET_BYTES];
const OFFSET_BYTES: usize = 5;

/// The largest map the 40-bit offsets address (1 TiB): the walk's budget
/// never grows past it.
pub(crate) const MAP_MAX: u64 = 1 << (8 * OFFSET_BYTES);

fn offset(at: usize) -> Offset {
    let mut bytes = [0; OFFSET_BYTES];
    bytes.copy_from_slice(&(at as u64).to_le_bytes()[..OFFSET_BYTES]);
    bytes
}

fn at(offset: &Offset) -> usize {
    let mut bytes = [0; 8];
    bytes[..OFFSET_BYTES].copy_from_slice(offset);
    u64::from_le_bytes(bytes) as usize
}

/// A replaced entry: a later one with the same key took its place.
#[derive(Debug, Clone, Copy)]
struct Replaced {
    /// Its slot.
    at: usize,
    /// Tar offset of the header of the entry that replaced it.
    by: u64,
}

/// What a [`MemberTable`] holds, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Usage {
    /// The map: offsets, slots and kept prefixes.
    pub index: u64,
    /// The bytes of members kept whole.
    pub kept: u64,
}

/// Stored members by key: filled in archive order with `MemberTable::start`
/// and `MemberTable::commit`, then `MemberTable::compact`ed (sorted, the
/// last entry of each key kept) before it is read.
#[derive(Clone, Default)]
pub struct MemberTable {
    arena: Vec<u8>,
    /// Slot offsets in the arena.
    slots: Vec<Offset>,
    /// Arena length when the member being added began.
    open: usize,
    /// Where the kept bytes of the member being added begin.
    body_at: usize,
}

impl fmt::Debug for MemberTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemberTable")
            .field("members", &self.slots.len())
            .field("arena_bytes", &self.arena.len())
            .finish()
    }
}

impl MemberTable {
    /// What adding a member under `key` with up to `body_max` kept bytes
    /// (not kept whole) costs the map.
    pub(crate) fn cost(key: &[u8], meta: &MemberMeta, body_max: usize) -> u64 {
        let fixed = varint_len(key.len() as u64)
            + varint_len(meta.size)
            + varint_len(meta.header_offset)
            + 1
            + varint_len(body_max as u64);
        (OFFSET_BYTES + fixed + key.len() + body_max) as u64
    }

    /// Begins a member stored under `key`: its kept bytes are then appended
    /// to [`MemberTable::body`] and it is added by [`MemberTable::commit`].
    /// A member begun and not committed is dropped by the next `start`.
    pub(crate) fn start(&mut self, key: &[u8], meta: &MemberMeta) {
        self.arena.truncate(self.open);
        push_varint(&mut self.arena, key.len() as u64);
        self.arena.extend_from_slice(key);
        push_varint(&mut self.arena, meta.size);
        push_varint(&mut self.arena, meta.header_offset);
        let kind = KINDS.iter().position(|&k| k == meta.kind).unwrap_or(0) as u8;
        let whole = if meta.whole { WHOLE_FLAG } else { 0 };
        self.arena.push(kind | whole);
        self.body_at = self.arena.len();
    }

    /// Where the kept bytes of the member begun go.
    pub(crate) fn body(&mut self) -> &mut Vec<u8> {
        &mut self.arena
    }

    /// Adds the member begun by [`MemberTable::start`].
    pub(crate) fn commit(&mut self) {
        let body_at = self.body_at.min(self.arena.len());
        let len = self.arena.len() - body_at;
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        self.arena.truncate(body_at + len as usize);
        let (field, field_len) = varint(u64::from(len));
        let field = field.get(..field_len).unwrap_or_default().iter().copied();
        // Moves the kept bytes (at most one manifest's) behind their length.
        self.arena.splice(body_at..body_at, field);
        self.slots.push(offset(self.open));
        self.open = self.arena.len();
    }

    /// Adds a member with its kept bytes in one call.
    pub(crate) fn push(&mut self, key: &[u8], body: &[u8], meta: MemberMeta) {
        self.start(key, &meta);
        self.body().extend_from_slice(body);
        self.commit();
    }

    /// Sorts the members by key and keeps the last entry of each key (the
    /// latest added), as the runtime's map does, dropping the others and
    /// their bytes. `replaced(key, old, by)` is called for each entry
    /// dropped (`old`, `by`: the tar offsets of its header and of the one
    /// that replaced it), in the order the replacing entries were added.
    /// Members can be added again afterwards.
    pub(crate) fn compact(&mut self, mut replaced: impl FnMut(&[u8], u64, u64)) -> Usage {
        self.arena.truncate(self.open);
        let arena = &self.arena;
        // Same key: the latest added first (slots are added in arena order).
        self.slots.sort_unstable_by(|a, b| {
            let (a, b) = (at(a), at(b));
            key(arena, a).cmp(key(arena, b)).then(b.cmp(&a))
        });
        let mut pairs: Vec<Replaced> = self
            .slots
            .windows(2)
            .filter(|w| key(arena, at(&w[0])) == key(arena, at(&w[1])))
            .map(|w| Replaced {
                at: at(&w[1]),
                by: slot(arena, at(&w[0])).header_offset,
            })
            .collect();
        pairs.sort_unstable_by_key(|r| (r.by, Reverse(r.at)));
        for pair in &pairs {
            let old = slot(arena, pair.at);
            replaced(old.key, old.header_offset, pair.by);
        }
        if !pairs.is_empty() {
            drop(pairs);
            self.drop_replaced();
        }
        self.usage()
    }

    /// Keeps the first slot of each key, and only their bytes.
    fn drop_replaced(&mut self) {
        let arena = &self.arena;
        self.slots
            .dedup_by(|b, a| key(arena, at(a)) == key(arena, at(b)));
        let size = |at: usize| slot(arena, at).end - at;
        let mut live = Vec::with_capacity(self.slots.iter().map(|o| size(at(o))).sum());
        for o in &mut self.slots {
            let (start, from) = (live.len(), at(o));
            live.extend_from_slice(arena.get(from..from + size(from)).unwrap_or_default());
            *o = offset(start);
        }
        self.slots.shrink_to_fit();
        self.arena = live;
        self.open = self.arena.len();
    }

    /// What the members hold: their map bytes (offsets, slots, prefixes)
    /// and the whole members' bytes.
    fn usage(&self) -> Usage {
        let kept: u64 = self
            .slots
            .iter()
            .map(|o| slot(&self.arena, at(o)))
            .filter(|s| s.whole)
            .map(|s| (s.end - s.body_start) as u64)
            .sum();
        let map = (self.slots.len() * OFFSET_BYTES + self.arena.len()) as u64;
        Usage {
            index: map - kept,
            kept,
        }
    }

    /// The member stored under `key`.
    pub fn get(&self, key: &[u8]) -> Option<MemberRef<'_>> {
        let i = self
            .slots
            .binary_search_by(|o| self::key(&self.arena, at(o)).cmp(key))
            .ok()?;
        self.slots.get(i).map(|o| self.member(at(o)))
    }

    /// True when a member is stored under `key`.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Every member, by key.
    pub fn iter(&self) -> impl Iterator<Item = MemberRef<'_>> + '_ {
        self.slots.iter().map(|o| self.member(at(o)))
    }

    /// Every key, in order.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.slots.iter().map(|o| key(&self.arena, at(o)))
    }

    /// How many members are stored.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when no member is stored.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn member(&self, at: usize) -> MemberRef<'_> {
        let s = slot(&self.arena, at);
        let body = self.arena.get(s.body_start..s.end).unwrap_or_default();
        MemberRef {
            key: s.key,
            size: s.size,
            kind: s.kind,
            header_offset: s.header_offset,
            data: s.whole.then_some(body),
            prefix: body,
        }
    }
}

/// A slot read back from the arena.
struct Slot<'a> {
    key: &'a [u8],
    size: u64,
    header_offset: u64,
    kind: EntryKind,
    whole: bool,
    body_start: usize,
    end: usize,
}

fn slot(arena: &[u8], at: usize) -> Slot<'_> {
    let mut pos = at;
    let key_len = read_varint(arena, &mut pos) as usize;
    let key = arena.get(pos..pos + key_len).unwrap_or_default();
    pos += key_len;
    let size = read_varint(arena, &mut pos);
    let header_offset = read_varint(arena, &mut pos);
    let flags = arena.get(pos).copied().unwrap_or(0);
    pos += 1;
    let len = read_varint(arena, &mut pos) as usize;
    let body_start = pos;
    Slot {
        key,
        size,
        header_offset,
        kind: KINDS[usize::from(flags & !WHOLE_FLAG).min(KINDS.len() - 1)],
        whole: flags & WHOLE_FLAG != 0,
        body_start,
        end: body_start + len,
    }
}

fn key(arena: &[u8], at: usize) -> &[u8] {
    let mut pos = at;
    let len = read_varint(arena, &mut pos) as usize;
    arena.get(pos..pos + len).unwrap_or_default()
}

fn varint_len(mut value: u64) -> usize {
    let mut len = 1;
    while value >= 0x80 {
        value >>= 7;
        len += 1;
    }
    len
}

/// `value` in LEB128 (7 bits a byte, low first), and how many bytes that is.
fn varint(mut value: u64) -> ([u8; 10], usize) {
    let mut bytes = [0; 10];
    let mut len = 0;
    for byte in &mut bytes {
        len += 1;
        if value < 0x80 {
            *byte = value as u8;
            break;
        }
        *byte = (value as u8 & 0x7F) | 0x80;
        value >>= 7;
    }
    (bytes, len)
}

/// Appends `value` in LEB128.
fn push_varint(out: &mut Vec<u8>, value: u64) {
    let (bytes, len) = varint(value);
    out.extend_from_slice(bytes.get(..len).unwrap_or_default());
}

fn read_varint(bytes: &[u8], pos: &mut usize) -> u64 {
    let mut value = 0u64;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*pos) {
        *pos += 1;
        value |= u64::from(b & 0x7F).checked_shl(shift).unwrap_or(0);
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(header_offset: u64, size: u64) -> MemberMeta {
        MemberMeta {
            size,
            kind: EntryKind::File,
            header_offset,
            whole: false,
        }
    }

    #[test]
    fn the_last_entry_of_a_key_wins_and_the_replaced_ones_are_reported_in_order() {
        let mut t = MemberTable::default();
        t.push(b"b", b"1", meta(0, 1));
        t.push(b"a", b"", meta(512, 0));
        t.push(b"b", b"22", meta(1024, 2));
        t.start(b"dropped", &meta(1536, 15));
        t.body().extend_from_slice(b"never committed");
        t.push(b"b", b"333", meta(1 << 40, u64::MAX));
        let mut replaced = Vec::new();
        let usage = t.compact(|key, old, by| replaced.push((key.to_vec(), old, by)));
        let keys: Vec<&[u8]> = t.keys().collect();
        assert_eq!(keys, [&b"a"[..], b"b"]);
        let b = t.get(b"b").unwrap();
        assert_eq!((b.size, b.header_offset), (u64::MAX, 1 << 40));
        assert_eq!(
            (b.prefix, b.data, b.kind),
            (&b"333"[..], None, EntryKind::File)
        );
        assert!(t.get(b"dropped").is_none());
        let b = b"b".to_vec();
        assert_eq!(replaced, [(b.clone(), 0, 1024), (b, 1024, 1 << 40)]);
        // Only the live members' bytes are left: a, and b with "333".
        let a = MemberTable::cost(b"a", &meta(512, 0), 0);
        assert_eq!(
            usage.index,
            a + MemberTable::cost(b"b", &meta(1 << 40, u64::MAX), 3)
        );
        t.push(b"a", b"", meta(2048, 0));
        t.compact(|_, old, by| assert_eq!((old, by), (512, 2048)));
        assert_eq!(t.get(b"b").unwrap().prefix, b"333");
        // A member costs at most 34 bytes besides its key and kept bytes:
        // its offset in the index and the fixed fields of its slot (varints
        // of at most 10, 10 and 5 bytes, the key length's 3, a flags byte).
        let overhead = (OFFSET_BYTES + 3 + 10 + 10 + 1 + 5) as u64;
        assert!(overhead >= MemberTable::cost(b"", &meta(u64::MAX, u64::MAX), 0));
    }

    #[test]
    fn whole_members_give_their_data_and_kinds_are_kept() {
        let mut t = MemberTable::default();
        let whole = MemberMeta {
            whole: true,
            ..meta(0, 2)
        };
        t.push(b"neff.json", b"{}", whole);
        let link = MemberMeta {
            kind: EntryKind::Symlink,
            ..meta(512, 0)
        };
        t.push(b"link", b"", link);
        let usage = t.compact(|_, _, _| {});
        assert_eq!(usage.kept, 2);
        assert_eq!(t.get(b"neff.json").unwrap().data, Some(&b"{}"[..]));
        assert_eq!(t.get(b"link").unwrap().kind, EntryKind::Symlink);
    }
}
