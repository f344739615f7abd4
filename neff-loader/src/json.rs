//! JSON as the runtime's simdjson DOM reads it, in a compact bounded tree.
//!
//! * When an object repeats a key, lookups find the **first** occurrence
//!   (serde_json's `Value` would keep the last). Later ones are dropped as
//!   they are parsed and reported: the first [`DUPLICATES_SHOWN`] with their
//!   path (`a.b[3].c`, built only for those), the rest counted.
//! * A document holds at most [`MAX_NODES`] values and [`MAX_TEXT`] bytes of
//!   keys and strings; past either, parsing stops with an error naming the
//!   limit. Nesting is read up to simdjson's default depth of 1024 by the
//!   scanner and by serde_json, the fallback for text the scanner does not
//!   take (its own limit of 128 lifted, the depth checked here), so hostile input cannot overflow
//!   the stack.
//! * A value takes 16 bytes, plus 4 for each array element or object member,
//!   plus its text. Members are kept sorted by key (the order serde_json's
//!   `Map` iterates in): a lookup is a binary search, an element an index.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::hash::BuildHasher;
use std::io::{self, BufReader, Read};

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};

mod scan;

/// Most values one document may hold.
pub const MAX_NODES: usize = 4 << 20;
/// Most bytes of keys and strings one document may hold.
pub const MAX_TEXT: usize = 32 << 20;
/// Repeated keys reported with their path; the rest are only counted.
pub const DUPLICATES_SHOWN: usize = 16;
/// Objects with up to this many members look for a repeated key by a scan;
/// larger ones through a hash table.
const SCAN_MEMBERS: usize = 16;
/// Longest key shown whole in a path.
const PATH_KEY_MAX: usize = 64;
/// About the longest text [`Json`]'s `Display` writes.
const DISPLAY_MAX: usize = 256;

#[derive(Debug, Clone, Copy)]
enum Node {
    Null,
    Bool(bool),
    Uint(u64),
    Int(i64),
    Float(f64),
    Str {
        start: u32,
        len: u32,
    },
    /// Element positions at `first..first + count` of [`Doc::children`].
    Array {
        first: u32,
        count: u32,
    },
    /// Key positions at `first..first + count` of [`Doc::children`], sorted
    /// by key; each value follows its key.
    Object {
        first: u32,
        count: u32,
    },
}

/// A parsed document.
#[derive(Debug, Default)]
pub struct Doc {
    nodes: Vec<Node>,
    children: Vec<u32>,
    text: String,
}

impl Doc {
    /// What the document takes of a [`Budget`]: its values (a child link
    /// counted as a quarter of one) and its bytes of keys and strings.
    pub fn size(&self) -> (usize, usize) {
        (self.nodes.len() + self.children.len() / 4, self.text.len())
    }
}

/// The repeated keys of a document (each dropped: the first one counts).
#[derive(Debug, Default)]
pub struct Duplicates {
    /// Paths of the first [`DUPLICATES_SHOWN`].
    pub shown: Vec<String>,
    /// How many more there were.
    pub more: usize,
}

/// Why a document did not parse.
#[derive(Debug)]
pub struct ParseError {
    /// serde_json's error, with the position.
    pub error: serde_json::Error,
    /// Set when the text was valid so far but a limit ([`MAX_NODES`],
    /// [`MAX_TEXT`]) was reached.
    pub limit: bool,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

/// How much a document may hold: the limits, less what the documents still
/// open hold (so that two open at once stay within them together).
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    nodes: usize,
    text: usize,
}

impl Budget {
    /// At most `nodes` values and `text` bytes of keys and strings (a reader
    /// with limits of its own: the lift's typing budget).
    pub fn new(nodes: usize, text: usize) -> Budget {
        Budget { nodes, text }
    }

    /// 4 Mi values and 32 MiB of text.
    pub fn full() -> Budget {
        Budget {
            nodes: MAX_NODES,
            text: MAX_TEXT,
        }
    }

    /// The limits for a NEFF of `stored` payload bytes: [`Budget::full`], or 4 values and 4 text bytes per stored byte when that is
    /// more, so that a large real model fits and memory stays linear in the
    /// file's size.
    pub fn for_stored(stored: u64) -> Budget {
        let scaled = usize::try_from(stored.saturating_mul(4)).unwrap_or(usize::MAX);
        Budget {
            nodes: MAX_NODES.max(scaled),
            text: MAX_TEXT.max(scaled),
        }
    }

    /// What is left once `open`'s document is held too.
    pub fn less(self, open: Json<'_>) -> Budget {
        let (nodes, text) = open.doc.size();
        Budget {
            nodes: self.nodes.saturating_sub(nodes),
            text: self.text.saturating_sub(text),
        }
    }
}

/// Parses a document held in memory: through a fast scanner when it takes
/// the text, else (an error, a limit) through serde_json, which reports it.
pub fn parse(bytes: &[u8], budget: Budget) -> Result<(Doc, Duplicates), ParseError> {
    let mut b = Builder {
        budget,
        ..Builder::default()
    };
    b.reserve_for(bytes.len());
    if scan::scan(bytes, &mut b).is_ok() {
        return Ok((b.doc, b.dups));
    }
    drop(b);
    parse_serde(bytes, budget)
}

/// [`parse`] through serde_json only.
fn parse_serde(bytes: &[u8], budget: Budget) -> Result<(Doc, Duplicates), ParseError> {
    build(&mut serde_json::Deserializer::from_slice(bytes), budget)
}

/// Parses a document streamed from `reader` (never held whole).
pub fn parse_reader(reader: impl Read, budget: Budget) -> Result<(Doc, Duplicates), ParseError> {
    let capped = StringCap {
        inner: reader,
        in_string: false,
        escaped: false,
        run: 0,
    };
    build(
        &mut serde_json::Deserializer::from_reader(BufReader::with_capacity(64 << 10, capped)),
        budget,
    )
}

fn build<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
    budget: Budget,
) -> Result<(Doc, Duplicates), ParseError> {
    let mut b = Builder {
        budget,
        ..Builder::default()
    };
    // The depth is held to the scanner's in `Builder::open`; the loader's
    // threads have the stack for it (`LOAD_STACK`).
    de.disable_recursion_limit();
    match Seed(&mut b).deserialize(&mut *de).and_then(|()| de.end()) {
        Ok(()) => Ok((b.doc, b.dups)),
        Err(error) => Err(ParseError {
            limit: b.overrun || error.io_error_kind() == Some(io::ErrorKind::OutOfMemory),
            error,
        }),
    }
}

/// Passes JSON text through, failing once a string runs past [`MAX_TEXT`]
/// bytes: serde_json gathers a streamed string whole before handing it over.
struct StringCap<R> {
    inner: R,
    in_string: bool,
    escaped: bool,
    run: usize,
}

impl<R: Read> Read for StringCap<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &byte in &buf[..n] {
            if !self.in_string {
                self.in_string = byte == b'"';
                self.run = 0;
            } else if self.escaped {
                self.escaped = false;
            } else {
                self.escaped = byte == b'\\';
                self.in_string = byte != b'"';
            }
            self.run += 1;
        }
        if self.in_string && self.run > MAX_TEXT {
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("a string longer than {MAX_TEXT} bytes (this verifier's limit)"),
            ));
        }
        Ok(n)
    }
}

/// An open array or object.
struct Frame {
    at: usize,
    object: bool,
    /// The key of the member being read (objects).
    current: u32,
    /// Where its element or key positions so far start in
    /// [`Builder::pending`].
    start: usize,
    /// Key hash → key position, once the object is too large to scan.
    keys: Option<HashMap<u64, u32>>,
}

/// Where the document ended before a member, to drop it again.
#[derive(Clone, Copy)]
struct Mark {
    nodes: usize,
    children: usize,
    text: usize,
}

struct Builder {
    budget: Budget,
    doc: Doc,
    frames: Vec<Frame>,
    /// The element or key positions of every open array and object, the
    /// innermost last (one stack: no allocation per array or object).
    pending: Vec<u32>,
    hasher: RandomState,
    dups: Duplicates,
    /// Entries of the open objects' key tables (counted as values).
    keyed: usize,
    overrun: bool,
    /// Set by [`scan`]: repeated keys are looked for once each object is
    /// complete (any sets `repeated`), not as each member is read; the key
    /// tables are only counted, as [`Builder::repeats`] would fill them.
    deferred: bool,
    /// Set when a complete object repeats a key (under `deferred`).
    repeated: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            budget: Budget::full(),
            doc: Doc::default(),
            frames: Vec::new(),
            pending: Vec::new(),
            hasher: RandomState::new(),
            dups: Duplicates::default(),
            keyed: 0,
            overrun: false,
            deferred: false,
            repeated: false,
        }
    }
}

impl Builder {
    /// Room for the document of `len` bytes of text, as manifests
    /// usually need it (about a value per 8 bytes), within the budget, so
    /// the tables are not grown step by step.
    fn reserve_for(&mut self, len: usize) {
        let values = (len / 8).min(self.budget.nodes);
        self.doc.nodes.reserve(values);
        self.doc.children.reserve(values);
        self.doc.text.reserve((len / 2).min(self.budget.text));
    }

    fn push(&mut self, node: Node) -> Result<u32, String> {
        if self.doc.nodes.len() + self.keyed >= self.budget.nodes {
            self.overrun = true;
            return Err(format!(
                "more than {MAX_NODES} JSON values (this verifier's limit for the manifests it holds at once)"
            ));
        }
        self.doc.nodes.push(node);
        Ok((self.doc.nodes.len() - 1) as u32)
    }

    fn push_str(&mut self, s: &str) -> Result<u32, String> {
        let start = self.doc.text.len();
        if start + s.len() > self.budget.text {
            self.overrun = true;
            return Err(format!(
                "more than {MAX_TEXT} bytes of keys and strings (this verifier's limit for the manifests it holds at once)"
            ));
        }
        self.doc.text.push_str(s);
        self.push(Node::Str {
            start: start as u32,
            len: s.len() as u32,
        })
    }

    fn open(&mut self, object: bool) -> Result<(), String> {
        // simdjson's default depth, as the scanner reads it: one limit for
        // every path (serde_json's own 128 is lifted for this).
        if self.frames.len() >= scan::MAX_DEPTH {
            return Err(format!(
                "recursion limit exceeded: nesting deeper than {} levels",
                scan::MAX_DEPTH
            ));
        }
        let at = self.push(Node::Null)? as usize;
        self.frames.push(Frame {
            at,
            object,
            current: 0,
            start: self.pending.len(),
            keys: None,
        });
        Ok(())
    }

    fn close(&mut self) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        let doc = &mut self.doc;
        let children = self.pending.get_mut(frame.start..).unwrap_or_default();
        self.keyed -= match &frame.keys {
            Some(keys) => keys.len(),
            None if self.deferred && frame.object => table_size(children.len()),
            None => 0,
        };
        // Keys already in strictly ascending order (as manifests are mostly
        // written) are sorted and repeat none: one pass instead of a sort
        // and a second pass.
        let ascending = |keys: &[u32]| {
            keys.windows(2)
                .all(|w| key_order(doc.key_bytes(w[0]), doc.key_bytes(w[1])).is_lt())
        };
        if frame.object && !ascending(children) {
            children.sort_unstable_by(|&a, &b| key_order(doc.key_bytes(a), doc.key_bytes(b)));
            self.repeated |= self.deferred
                && children
                    .windows(2)
                    .any(|w| doc.key_bytes(w[0]) == doc.key_bytes(w[1]));
        }
        let (first, count) = (doc.children.len() as u32, children.len() as u32);
        doc.children.extend_from_slice(children);
        self.pending.truncate(frame.start);
        doc.nodes[frame.at] = if frame.object {
            Node::Object { first, count }
        } else {
            Node::Array { first, count }
        };
    }

    fn mark(&self) -> Mark {
        Mark {
            nodes: self.doc.nodes.len(),
            children: self.doc.children.len(),
            text: self.doc.text.len(),
        }
    }

    /// Keeps the member just read (its key at `mark`), or drops it when its
    /// key repeats an earlier one.
    fn member(&mut self, mark: Mark) {
        let key = mark.nodes as u32;
        if self.deferred {
            self.child(key);
            let count = self
                .frames
                .last()
                .map_or(0, |f| self.pending.len() - f.start);
            self.keyed += table_size(count) - table_size(count.saturating_sub(1));
            return;
        }
        if !self.repeats(key) {
            self.child(key);
            return;
        }
        if self.dups.shown.len() < DUPLICATES_SHOWN {
            let path = self.path();
            self.dups.shown.push(path);
        } else {
            self.dups.more += 1;
        }
        self.doc.nodes.truncate(mark.nodes);
        self.doc.children.truncate(mark.children);
        self.doc.text.truncate(mark.text);
    }

    /// Adds the element or key at `pos` to the open array or object.
    fn child(&mut self, pos: u32) {
        if !self.frames.is_empty() {
            self.pending.push(pos);
        }
    }

    /// Whether the key at `pos` repeats one of the open object's keys; a new
    /// one is entered in the object's key table, if it has one.
    fn repeats(&mut self, pos: u32) -> bool {
        let Builder {
            doc,
            frames,
            pending,
            hasher,
            keyed,
            ..
        } = self;
        let Some(frame) = frames.last_mut() else {
            return false;
        };
        let key = doc.key(pos);
        let children = pending.get(frame.start..).unwrap_or_default();
        if frame.keys.is_none() && children.len() < SCAN_MEMBERS {
            return children.iter().any(|&k| doc.key_bytes(k) == key.as_bytes());
        }
        let keys = frame.keys.get_or_insert_with(|| {
            let mut keys = HashMap::new();
            for &k in children {
                keys.insert(hasher.hash_one(doc.key(k)), k);
            }
            *keyed += keys.len();
            keys
        });
        match keys.get(&hasher.hash_one(key)) {
            Some(&k) => doc.key(k) == key,
            None => {
                keys.insert(hasher.hash_one(key), pos);
                *keyed += 1;
                false
            }
        }
    }

    /// The path of the member being read, e.g. `a.b[3].c`.
    fn path(&self) -> String {
        let mut path = String::new();
        let ends = self.frames.iter().skip(1).map(|f| f.start);
        for (frame, end) in self.frames.iter().zip(ends.chain([self.pending.len()])) {
            if !frame.object {
                let _ = write!(path, "[{}]", end - frame.start);
                continue;
            }
            if !path.is_empty() {
                path.push('.');
            }
            let key = self.doc.key(frame.current);
            match key.char_indices().nth(PATH_KEY_MAX) {
                Some((end, _)) => {
                    let _ = write!(path, "{}… ({} bytes)", &key[..end], key.len());
                }
                None => path.push_str(key),
            }
        }
        path
    }

    fn leaf<E: serde::de::Error>(&mut self, node: Node) -> Result<(), E> {
        self.push(node).map(drop).map_err(E::custom)
    }
}

impl Doc {
    /// The top-level value.
    pub fn root(&self) -> Json<'_> {
        Json { doc: self, at: 0 }
    }

    /// The key (or string) at `pos` as bytes: compared without the
    /// character-boundary checks of [`Doc::key`] (same order: UTF-8 sorts
    /// as its code points).
    #[inline]
    fn key_bytes(&self, pos: u32) -> &[u8] {
        match self.nodes.get(pos as usize) {
            Some(&Node::Str { start, len }) => self
                .text
                .as_bytes()
                .get(start as usize..(start + len) as usize)
                .unwrap_or_default(),
            _ => b"",
        }
    }

    fn key(&self, pos: u32) -> &str {
        match self.nodes.get(pos as usize) {
            Some(&Node::Str { start, len }) => self
                .text
                .get(start as usize..(start + len) as usize)
                .unwrap_or_default(),
            _ => "",
        }
    }

    fn range(&self, first: u32, count: u32) -> &[u32] {
        self.children
            .get(first as usize..(first + count) as usize)
            .unwrap_or_default()
    }
}

struct Seed<'b>(&'b mut Builder);

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<(), E> {
        self.0.leaf(Node::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        self.0
            .leaf(u64::try_from(v).map_or(Node::Int(v), Node::Uint))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        self.0.leaf(Node::Uint(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        self.0.leaf(Node::Float(v))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push_str(v).map(drop).map_err(E::custom)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.0.leaf(Node::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let b = self.0;
        b.open(false).map_err(A::Error::custom)?;
        loop {
            let pos = b.doc.nodes.len() as u32;
            if seq.next_element_seed(Seed(&mut *b))?.is_none() {
                break;
            }
            b.child(pos);
        }
        b.close();
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let b = self.0;
        b.open(true).map_err(A::Error::custom)?;
        loop {
            let mark = b.mark();
            if map.next_key_seed(Key(&mut *b))?.is_none() {
                break;
            }
            map.next_value_seed(Seed(&mut *b))?;
            b.member(mark);
        }
        b.close();
        Ok(())
    }
}

/// An object key: stored, and noted as the open object's current key.
struct Key<'b>(&'b mut Builder);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        let pos = self.0.push_str(v).map_err(E::custom)?;
        if let Some(frame) = self.0.frames.last_mut() {
            frame.current = pos;
        }
        Ok(())
    }
}

/// The entries [`Builder::repeats`] has put in the key table of an object
/// of `members` members without repeats: none while a scan finds repeats,
/// every key from the one past [`SCAN_MEMBERS`] on.
fn table_size(members: usize) -> usize {
    if members > SCAN_MEMBERS {
        members
    } else {
        0
    }
}

/// A value of a [`Doc`].
#[derive(Clone, Copy)]
pub struct Json<'a> {
    doc: &'a Doc,
    at: usize,
}

impl fmt::Debug for Json<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl<'a> Json<'a> {
    fn node(self) -> Node {
        self.doc.nodes.get(self.at).copied().unwrap_or(Node::Null)
    }

    /// The string, if this is one.
    pub fn as_str(self) -> Option<&'a str> {
        match self.node() {
            Node::Str { .. } => Some(self.doc.key(self.at as u32)),
            _ => None,
        }
    }

    /// The number, if this is an integer that fits a `u64`.
    pub fn as_u64(self) -> Option<u64> {
        match self.node() {
            Node::Uint(v) => Some(v),
            _ => None,
        }
    }

    /// Whether this is an array.
    pub fn is_array(self) -> bool {
        matches!(self.node(), Node::Array { .. })
    }

    /// Whether this is an object.
    pub fn is_object(self) -> bool {
        matches!(self.node(), Node::Object { .. })
    }

    /// The elements, if this is an array.
    pub fn as_array(self) -> Option<Array<'a>> {
        match self.node() {
            Node::Array { first, count } => Some(Array {
                doc: Some(self.doc),
                items: self.doc.range(first, count),
            }),
            _ => None,
        }
    }

    /// The elements of an array; none for anything else.
    pub fn items(self) -> Array<'a> {
        self.as_array().unwrap_or_default()
    }

    /// The members, if this is an object.
    pub fn as_object(self) -> Option<Object<'a>> {
        match self.node() {
            Node::Object { first, count } => Some(Object {
                doc: self.doc,
                keys: self.doc.range(first, count),
            }),
            _ => None,
        }
    }

    /// An object's member (the first of its name).
    pub fn get(self, key: &str) -> Option<Json<'a>> {
        self.as_object()?.get(key)
    }

    /// An array's element.
    pub fn at(self, index: usize) -> Option<Json<'a>> {
        self.as_array()?.get(index)
    }

    /// Whether both are the same scalar (null, bool, number of the same
    /// kind, string); false for arrays and objects, which compare by parts.
    pub fn same_scalar(self, other: Json<'_>) -> bool {
        match (self.node(), other.node()) {
            (Node::Str { .. }, Node::Str { .. }) => self.as_str() == other.as_str(),
            (Node::Null, Node::Null) => true,
            (Node::Bool(a), Node::Bool(b)) => a == b,
            (Node::Uint(a), Node::Uint(b)) => a == b,
            (Node::Int(a), Node::Int(b)) => a == b,
            (Node::Float(a), Node::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }

    /// Compact JSON text into `out`; false once `out` is past [`DISPLAY_MAX`].
    fn write(self, out: &mut String) -> bool {
        if out.len() > DISPLAY_MAX {
            return false;
        }
        let _ = match self.node() {
            Node::Null => write!(out, "null"),
            Node::Bool(v) => write!(out, "{v}"),
            Node::Uint(v) => write!(out, "{v}"),
            Node::Int(v) => write!(out, "{v}"),
            Node::Float(v) => write!(out, "{}", serde_json::Value::from(v)),
            Node::Str { .. } => return write_str(out, self.as_str().unwrap_or_default()),
            Node::Array { .. } => {
                out.push('[');
                for (i, item) in self.items().iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if !item.write(out) {
                        return false;
                    }
                }
                write!(out, "]")
            }
            Node::Object { .. } => {
                out.push('{');
                for (i, (key, value)) in self
                    .as_object()
                    .into_iter()
                    .flat_map(|o| o.iter())
                    .enumerate()
                {
                    if i > 0 {
                        out.push(',');
                    }
                    if !write_str(out, key) {
                        return false;
                    }
                    out.push(':');
                    if !value.write(out) {
                        return false;
                    }
                }
                write!(out, "}}")
            }
        };
        true
    }
}

/// A JSON string literal into `out`, cut at [`DISPLAY_MAX`] characters.
fn write_str(out: &mut String, s: &str) -> bool {
    let cut = s.char_indices().nth(DISPLAY_MAX).map(|(end, _)| &s[..end]);
    out.push_str(&serde_json::Value::from(cut.unwrap_or(s)).to_string());
    cut.is_none()
}

impl fmt::Display for Json<'_> {
    /// Compact JSON, as serde_json writes it, cut short (with `…`) past
    /// about 256 bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        let whole = self.write(&mut out);
        f.write_str(&out)?;
        if whole {
            Ok(())
        } else {
            f.write_str("…")
        }
    }
}

/// An array's elements (none for the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct Array<'a> {
    doc: Option<&'a Doc>,
    items: &'a [u32],
}

impl<'a> Array<'a> {
    /// Number of elements.
    pub fn len(self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(self) -> bool {
        self.items.is_empty()
    }

    /// An element.
    pub fn get(self, index: usize) -> Option<Json<'a>> {
        Some(Json {
            doc: self.doc?,
            at: *self.items.get(index)? as usize,
        })
    }

    /// The elements in order.
    pub fn iter(self) -> impl Iterator<Item = Json<'a>> {
        let doc = self.doc;
        self.items.iter().filter_map(move |&at| {
            Some(Json {
                doc: doc?,
                at: at as usize,
            })
        })
    }
}

/// An object's members, sorted by key.
#[derive(Clone, Copy)]
pub struct Object<'a> {
    doc: &'a Doc,
    keys: &'a [u32],
}

impl fmt::Debug for Object<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> Object<'a> {
    /// The member named `key`.
    pub fn get(self, key: &str) -> Option<Json<'a>> {
        let i = self
            .keys
            .binary_search_by(|&k| key_order(self.doc.key_bytes(k), key.as_bytes()))
            .ok()?;
        Some(Json {
            doc: self.doc,
            at: self.keys[i] as usize + 1,
        })
    }

    /// Whether a member is named `key`.
    pub fn contains_key(self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The members in key order.
    pub fn iter(self) -> impl Iterator<Item = (&'a str, Json<'a>)> {
        let doc = self.doc;
        self.keys.iter().map(move |&k| {
            (
                doc.key(k),
                Json {
                    doc,
                    at: k as usize + 1,
                },
            )
        })
    }
}

/// Byte order of two keys, as `<[u8]>::cmp`, compared in place: keys are
/// short, and a call to `memcmp` per step of a search or sort cost more
/// than the comparison.
#[inline]
fn key_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> (Doc, Duplicates) {
        parse(text.as_bytes(), Budget::full()).unwrap()
    }

    #[test]
    fn keys_order_as_byte_slices_do() {
        let keys: [&[u8]; 8] = [
            b"",
            b"a",
            b"ab",
            b"b",
            b"from",
            b"from_sizes",
            b"\xff",
            b"to",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(key_order(a, b), a.cmp(b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn the_budget_grows_with_the_file_but_never_below_the_limits() {
        let small = Budget::for_stored(1 << 20);
        assert_eq!((small.nodes, small.text), (MAX_NODES, MAX_TEXT));
        let big = Budget::for_stored(16 << 20);
        assert_eq!((big.nodes, big.text), (64 << 20, 64 << 20));
        assert_eq!(Budget::for_stored(u64::MAX).nodes, usize::MAX);
    }

    #[test]
    fn first_occurrence_wins_and_repeats_are_reported() {
        let (d, dups) = doc(r#"{"a": 1, "b": {"c": [1, {"d": 2, "d": 3}]}, "a": 2}"#);
        let v = d.root();
        assert_eq!(v.get("a").and_then(Json::as_u64), Some(1));
        let d2 = v.get("b").and_then(|b| b.get("c")).and_then(|c| c.at(1));
        assert_eq!(d2.and_then(|d| d.get("d")).and_then(Json::as_u64), Some(2));
        assert_eq!(dups.shown, vec!["b.c[1].d", "a"]);
        assert_eq!(v.to_string(), r#"{"a":1,"b":{"c":[1,{"d":2}]}}"#);
    }

    #[test]
    fn members_iterate_in_key_order_and_large_objects_find_repeats() {
        let mut text = String::from("{");
        for i in (0..100).rev() {
            text += &format!("\"k{i:03}\": {i}, \"k{i:03}\": -1, ");
        }
        text += "\"k000\": [\"x\"]}";
        let (d, dups) = doc(&text);
        let o = d.root().as_object().unwrap();
        assert_eq!(o.iter().count(), 100);
        let keys: Vec<&str> = o.iter().map(|(k, _)| k).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(o.get("k042").and_then(Json::as_u64), Some(42));
        assert_eq!(dups.shown.len(), DUPLICATES_SHOWN);
        assert_eq!(dups.more, 101 - DUPLICATES_SHOWN);
    }

    #[test]
    fn long_keys_are_cut_short_in_paths_and_values_in_display() {
        let key = "k".repeat(10_000);
        let (d, dups) = doc(&format!(r#"{{"{key}": {{"x": 1, "x": 2}}, "s": "{key}"}}"#));
        assert!(dups.shown[0].len() < 100, "{}", dups.shown[0]);
        assert!(
            dups.shown[0].ends_with("(10000 bytes).x"),
            "{}",
            dups.shown[0]
        );
        let shown = d.root().get("s").unwrap().to_string();
        assert!(shown.len() < 300 && shown.ends_with('…'), "{shown}");
    }

    #[test]
    fn the_value_and_text_limits_are_errors() {
        let many = format!("[{}0]", "0,".repeat(MAX_NODES));
        let e = parse(many.as_bytes(), Budget::full()).unwrap_err();
        assert!(
            e.limit && e.to_string().contains("4194304 JSON values"),
            "{e}"
        );
        let e = parse_reader(many.as_bytes(), Budget::full()).unwrap_err();
        assert!(e.limit, "{e}");
        let long = format!("[\"{}\"]", "s".repeat(MAX_TEXT + (1 << 20)));
        assert!(parse(long.as_bytes(), Budget::full()).unwrap_err().limit);
        let e = parse_reader(long.as_bytes(), Budget::full()).unwrap_err();
        assert!(e.limit && e.to_string().contains("string longer"), "{e}");
        assert!(!parse(b"[1,]", Budget::full()).unwrap_err().limit);
    }

    #[test]
    fn deep_nesting_and_trailing_garbage_are_errors_not_crashes() {
        let deep = "[".repeat(100_000);
        assert!(parse(deep.as_bytes(), Budget::full()).is_err());
        assert!(parse_reader(deep.as_bytes(), Budget::full()).is_err());
        assert!(parse(b"{} x", Budget::full()).is_err());
        assert!(parse(b"", Budget::full()).is_err());
        let (d, _) = doc("123456789012345678901234567890");
        assert!(matches!(d.root().node(), Node::Float(_)), "{}", d.root());
        let (d, _) = doc(r#"{"s": "a\"b", "n": -3, "f": 1.5, "z": [null, true]}"#);
        assert_eq!(
            d.root().to_string(),
            r#"{"f":1.5,"n":-3,"s":"a\"b","z":[null,true]}"#
        );
    }

    /// `parse` (scanner first) and `parse_serde` agree on `text`: the same
    /// document, repeats, or error and message. Returns whether the scanner
    /// took it.
    fn agrees(text: &[u8]) -> bool {
        let shown = |r: Result<(Doc, Duplicates), ParseError>| format!("{r:?}");
        let budget = Budget::full();
        assert_eq!(
            shown(parse(text, budget)),
            shown(parse_serde(text, budget)),
            "{}",
            String::from_utf8_lossy(text)
        );
        scan::scan(text, &mut Builder::default()).is_ok()
    }

    /// simdjson (the runtime's parser) takes nesting up to 1024 deep; so
    /// does the scanner (serde_json alone stops at 128), on a small stack.
    #[test]
    fn nesting_up_to_1024_deep_is_read_as_simdjson_reads_it() {
        let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let small_stack = std::thread::Builder::new().stack_size(2 << 20);
        let verdicts = small_stack
            .spawn(move || {
                [129, 1000, 1024, 1025].map(|d| parse(deep(d).as_bytes(), Budget::full()).is_ok())
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(verdicts, [true, true, true, false]);
        let obj = format!("{}1{}", "{\"a\":".repeat(1024), "}".repeat(1024));
        assert!(parse(obj.as_bytes(), Budget::full()).is_ok());
    }

    /// The fallback (taken for a repeated key, which the scanner leaves to
    /// it) reads the same depths: one verdict whatever path reads it.
    #[test]
    fn the_fallback_reads_as_deep_as_the_scanner() {
        let deep = |depth: usize| {
            format!(
                "{{\"k\":1,\"k\":2,\"d\":{}{}}}",
                "[".repeat(depth),
                "]".repeat(depth)
            )
        };
        let verdicts = std::thread::Builder::new()
            .stack_size(16 << 20)
            .spawn(move || {
                [129, 1000, 1023, 1024].map(|d| {
                    let text = deep(d);
                    let fast = scan::scan(text.as_bytes(), &mut Builder::default()).is_ok();
                    (fast, parse(text.as_bytes(), Budget::full()).is_ok())
                })
            })
            .unwrap()
            .join()
            .unwrap();
        // The object's own level counts: 1023 arrays inside it fill 1024.
        assert_eq!(
            verdicts,
            [(false, true), (false, true), (false, true), (false, false)]
        );
    }

    #[test]
    fn the_scanner_builds_what_serde_json_builds_or_gives_up() {
        let sample = r#" {"name": "sg00", "n": [0, 1, 18446744073709551615, 18446744073709551616,
            -0, -7, -9223372036854775808, -9223372036854775809, 1.5, 2e3, 1E-2, 0.1e+5,
            123456789012345678901234567890], "s": ["a\"b\\c\/\u00e9\ud83d\ude00", "é", ""],
            "o": {"b": true, "a": false, "c": null, "z": {}}, "e": [[]],
            "long": ["abcdefghijklmnopqrstuvwxyz", "abcdefghijé klmnopqr", "abcdefghijk\"lmnopq"]} "#
            .as_bytes();
        assert!(agrees(sample), "the sample takes the fast path");
        // Cases serde_json refuses or treats specially, split at `|`.
        let cases = b"| |0|-|01|1.|.5|-01|1e|1e+|[1,]|{\"a\":1,}|{\"a\" 1}|{1:2}|[1 2]|nul|truex\
            |\"\x01\"|\"\xff\"|\"\\ud800\"|\"\\x\"|\xef\xbb\xbf{}|{} x|[\"\x7f\"]";
        for case in cases.split(|&c| c == b'|') {
            agrees(case);
        }
        for depth in [99, 100, 101, 127] {
            agrees(format!("{}{}", "[".repeat(depth), "]".repeat(depth)).as_bytes());
        }
        let mut took = 0;
        for at in 0..sample.len() {
            agrees(&sample[..at]);
            for byte in [
                b'"', b',', b'}', b']', b'\\', b'0', b'-', b'.', b'e', b' ', 0x80,
            ] {
                let mut text = sample.to_vec();
                text[at] = byte;
                took += usize::from(agrees(&text));
            }
        }
        assert!(
            took > sample.len(),
            "most variants take the fast path too: {took}"
        );
    }

    #[test]
    fn repeats_go_to_serde_json_and_limits_count_alike() {
        let text = br#"{"a": [{"x": 1, "x": 2}], "a": 3}"#;
        assert!(!agrees(text), "a repeated key: serde_json reads it");
        assert_eq!(
            parse(text, Budget::full()).unwrap().1.shown,
            vec!["a[0].x", "a"]
        );
        // 40 members: a key table past 16 members counts against the limit.
        let mut text = String::from("{");
        for i in 0..40 {
            text += &format!("\"k{i}\": [{i}], ");
        }
        text += "\"end\": {\"x\": 0}}";
        assert!(agrees(text.as_bytes()));
        let shown = |r: Result<(Doc, Duplicates), ParseError>| format!("{r:?}");
        let mut refused = 0;
        for nodes in 100..200 {
            let tight = Budget { nodes, text: 1000 };
            let fast = parse(text.as_bytes(), tight);
            refused += usize::from(fast.as_ref().is_err_and(|e| e.limit));
            assert_eq!(
                shown(fast),
                shown(parse_serde(text.as_bytes(), tight)),
                "{nodes}"
            );
        }
        assert!(refused > 0 && refused < 100, "{refused}");
    }

    #[test]
    fn nodes_stay_small() {
        assert_eq!(std::mem::size_of::<Node>(), 16);
    }
}
