//! The fuzz targets' logic, wasm-tools style: each target in `fuzz_targets/`
//! is a three-line wrapper around one `run` function here. The invariants
//! themselves are in `neff-testkit` ([`checks`]), which has no fuzzing
//! dependency so the root package's regression tests can replay saved inputs
//! through it.

pub mod libarchive;
pub use neff_testkit::{checks, payload_walk, whole_file_check};

use std::collections::BTreeSet;
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Result, Unstructured};
use neff_loader::payload_stream;
use neff_loader::{EntryKind, TarReader};
use neff_schema::{PkgVersion, HEADER_LEN};
use serde_json::Value;

/// `read_verify`: raw bytes straight into the loader.
pub mod read_verify {
    /// Runs [`crate::checks::read_verify`].
    pub fn run(data: &[u8]) {
        crate::checks::read_verify(data);
    }
}

/// `libarchive_walk`: a payload walked by this crate's readers and by the
/// real libarchive 3.8 (loaded from `LIBARCHIVE`); they must agree.
pub mod libarchive_walk {
    use std::io::Write;

    /// The first byte chooses the framing: odd, the rest is a tar stream
    /// gzipped here (so libFuzzer's edits land in tar headers, not in
    /// deflate data); even, the rest is the payload as stored.
    pub fn run(data: &[u8]) {
        let Some((&mode, rest)) = data.split_first() else {
            return;
        };
        let payload = if mode & 1 == 1 {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            if gz.write_all(rest).is_err() {
                return;
            }
            match gz.finish() {
                Ok(bytes) => bytes,
                Err(_) => return,
            }
        } else {
            rest.to_vec()
        };
        let ours = crate::payload_walk::neff_walk(&payload);
        let theirs = crate::libarchive::libarchive_walk(&payload);
        assert!(
            ours.agrees_with(&theirs),
            "the walks differ ({}):\n  neff:       {}\n  libarchive: {}",
            crate::libarchive::version(),
            ours.summary(),
            theirs.summary()
        );
    }
}

/// `whole_file`: a whole NEFF drawn by [`neff_smith::whole_file`] (header,
/// gzip layers, tar entries of every kind) from an example model's members,
/// read by the real libarchive 3.8 and by the entry points behind `verify`,
/// `cat`/`diff` and `unpack` ([`crate::whole_file_check::check`]).
pub mod whole_file {
    use std::sync::OnceLock;

    use arbitrary::{Result, Unstructured};
    use neff_smith::whole_file::{draw, Template};

    fn templates() -> &'static [Template] {
        static TEMPLATES: OnceLock<Vec<Template>> = OnceLock::new();
        TEMPLATES.get_or_init(|| {
            super::EXAMPLES
                .iter()
                .filter_map(|n| Template::of(n))
                .collect()
        })
    }

    /// Draws a file and checks it. With `NEFF_FUZZ_DUMP=FILE`, the drawn
    /// NEFF is written to FILE first (`tests/regressions/whole-file-*.neff`).
    pub fn run(data: &[u8]) -> Result<()> {
        let mut u = Unstructured::new(data);
        let template = u.choose(templates())?;
        let drawn = draw(&mut u, template)?;
        if let Some(path) = std::env::var_os("NEFF_FUZZ_DUMP") {
            std::fs::write(path, &drawn.bytes).expect("writing NEFF_FUZZ_DUMP");
            eprintln!("{}", drawn.recipe.join("\n"));
        }
        let theirs = crate::libarchive::libarchive_walk(drawn.payload());
        crate::whole_file_check::check(&drawn.bytes, &theirs);
        Ok(())
    }
}

/// `repack`: an arbitrary member set through the packager and the loader.
pub mod repack {
    use super::*;

    /// Decodes a [`MemberSet`] and runs [`crate::checks::repack`].
    pub fn run(data: &[u8]) -> Result<()> {
        let u = Unstructured::new(data);
        let set = MemberSet::arbitrary_take_rest(u)?;
        let (members, pkg, level) = set.resolve();
        dump(|| crate::checks::repack_case_to_json(&members, pkg, level));
        crate::checks::repack(&members, pkg, level);
        Ok(())
    }
}

/// `real_mutation`: a seed one structure-aware change away from a real NEFF
/// (`neff corpus --from`'s mutator, `neff_smith::real`), drawn from the
/// input's first 16 bytes: packing it never fails, and the verdict the
/// packer's check gives is the one `neff verify` gives on the bytes.
pub mod real_mutation {
    use std::sync::OnceLock;

    use neff_smith::corpus::SeedVerdict;
    use neff_smith::real::Source;

    /// The NEFFs lifted once: every `*.neff` in `NEFF_FUZZ_SOURCES`, else in
    /// `../../shared/real-neffs`, else the example seeds.
    fn sources() -> &'static [Source] {
        static SOURCES: OnceLock<Vec<Source>> = OnceLock::new();
        SOURCES.get_or_init(|| {
            let dir = std::env::var_os("NEFF_FUZZ_SOURCES")
                .map(std::path::PathBuf::from)
                .or_else(|| {
                    Some("../../shared/real-neffs".into())
                        .filter(|d: &std::path::PathBuf| d.is_dir())
                })
                .unwrap_or_else(|| "seeds/read_verify".into());
            let mut paths: Vec<_> = std::fs::read_dir(&dir)
                .map(|d| d.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            paths.retain(|p: &std::path::PathBuf| p.extension().is_some_and(|e| e == "neff"));
            paths.sort();
            paths.iter().filter_map(|p| Source::lift(p).ok()).collect()
        })
    }

    /// Draws seed `(seed, index)` from the first 16 bytes and checks it.
    pub fn run(data: &[u8]) {
        let mut word = [0u8; 16];
        let n = data.len().min(16);
        word[..n].copy_from_slice(&data[..n]);
        let seed = u64::from_le_bytes(word[..8].try_into().unwrap_or_default());
        let index = u64::from_le_bytes(word[8..].try_into().unwrap_or_default());
        let Ok(mut spool) = tempfile::tempfile() else {
            return;
        };
        let Some(drawn) = neff_smith::real::seed_from(sources(), seed, index, Some(1), &mut spool)
        else {
            return;
        };
        assert_eq!(
            drawn.verdict,
            SeedVerdict::of(&drawn.bytes),
            "{:?}: the packer's verdict is not verify's",
            drawn.mutation
        );
    }
}

/// `roundtrip`: a valid build spec from the structure-aware generator
/// (`neff_smith::generate`), built, loaded, unpacked and packed again.
pub mod roundtrip {
    use super::*;
    use neff_smith::generate::ArbitrarySpec;

    /// Draws an [`ArbitrarySpec`] and runs [`crate::checks::roundtrip`] on its JSON.
    pub fn run(data: &[u8]) -> Result<()> {
        let spec = ArbitrarySpec::arbitrary_take_rest(Unstructured::new(data))?;
        dump(|| spec.json.clone());
        crate::checks::roundtrip(&spec.json);
        Ok(())
    }
}

/// With `NEFF_FUZZ_DUMP=FILE` set, writes the decoded case as JSON to FILE
/// before checking it: replaying a crash that way gives the
/// `tests/regressions/<target>-<n>.json` file.
fn dump(case: impl FnOnce() -> Value) {
    if let Some(path) = std::env::var_os("NEFF_FUZZ_DUMP") {
        let text = serde_json::to_string_pretty(&case()).unwrap_or_default();
        std::fs::write(path, text + "\n").expect("writing NEFF_FUZZ_DUMP");
    }
}

/// The example models, built from `examples/*.json`: their members are the
/// templates a [`MemberSet`] starts from and edits.
const EXAMPLES: [&[u8]; 4] = [
    include_bytes!("../seeds/read_verify/allreduce.neff"),
    include_bytes!("../seeds/read_verify/weights.neff"),
    include_bytes!("../seeds/read_verify/cayman-ucode.neff"),
    include_bytes!("../seeds/read_verify/two-subgraphs.neff"),
];

/// Member names worth trying: the manifest chain, engine files, names the
/// walk treats specially, and names needing GNU long-name records.
const NAMES: &[&str] = &[
    "neff.json",
    "kelp.json",
    "kelf-0.json",
    "kelf-a.json",
    "sg00/def.json",
    "sg00/pe.json",
    "sg00/pe.bin",
    "sg00/act.json",
    "sg00/act.bin",
    "sg00/pool.json",
    "sg00/pool.bin",
    "sg00/dve.json",
    "sg00/sp.json",
    "sg00/weights.npy",
    "sg00/ucode_lib.json",
    "sg00/wavegraph-bin.json",
    "sg01/def.json",
    "sg01/pe.json",
    "barrier_config.json",
    "hlo_stats.json",
    "./x",
    "x",
    "a/b/c",
    "sg00",
    "sg00/",
    "/abs",
    "../up",
    "sg00/../neff.json",
];

/// Path components for composed names.
const COMPONENTS: &[&str] = &[
    "sg00",
    "sg01",
    "neff.json",
    "def.json",
    "pe.json",
    "pe.bin",
    ".",
    "..",
    "",
    "x",
];

/// What the templates teach about manifests: every object key and string
/// value found in the examples' JSON members.
struct Templates {
    /// Every member of every example, in order (example, then tar order).
    members: Vec<(String, Vec<u8>)>,
    /// Each example's members, as index ranges into `members`.
    examples: Vec<std::ops::Range<usize>>,
    keys: Vec<String>,
    strings: Vec<String>,
}

fn templates() -> &'static Templates {
    static T: OnceLock<Templates> = OnceLock::new();
    T.get_or_init(|| {
        let mut members = Vec::new();
        let mut examples = Vec::new();
        for neff in EXAMPLES {
            let start = members.len();
            members.extend(unpack(neff));
            examples.push(start..members.len());
        }
        let mut keys = BTreeSet::new();
        let mut strings = BTreeSet::new();
        for (_, data) in &members {
            if let Ok(v) = serde_json::from_slice::<Value>(data) {
                collect(&v, &mut keys, &mut strings);
            }
        }
        Templates {
            members,
            examples,
            keys: keys.into_iter().collect(),
            strings: strings.into_iter().collect(),
        }
    })
}

fn collect(v: &Value, keys: &mut BTreeSet<String>, strings: &mut BTreeSet<String>) {
    match v {
        Value::String(s) => {
            strings.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|i| collect(i, keys, strings)),
        Value::Object(map) => {
            for (k, v) in map {
                keys.insert(k.clone());
                collect(v, keys, strings);
            }
        }
        _ => {}
    }
}

/// The file members of a well-formed NEFF.
fn unpack(neff: &[u8]) -> Vec<(String, Vec<u8>)> {
    let (_, stream) = payload_stream(&neff[HEADER_LEN..]).expect("an example's payload");
    let mut tar = TarReader::new(stream);
    let mut out = Vec::new();
    while let Some(entry) = tar.next_entry().expect("an example's tar") {
        if entry.kind == EntryKind::File {
            let mut data = Vec::new();
            tar.copy_data(&mut data).expect("an example's member");
            out.push((String::from_utf8(entry.name).expect("UTF-8 names"), data));
        }
    }
    out
}

fn pick<'a, T>(items: &'a [T], i: impl Into<usize>) -> &'a T {
    &items[i.into() % items.len()]
}

/// An arbitrary set of members: optionally an example model's members,
/// then a list of edits.
#[derive(Debug, Arbitrary)]
pub struct MemberSet {
    /// Start from this example's members (index modulo the examples).
    pub base: Option<u8>,
    /// Edits, in order.
    pub ops: Vec<Op>,
    /// Pack as pkg 1 (raw tar + SHA-256) instead of pkg 2.
    pub pkg1: bool,
    /// gzip level, modulo 9, plus 1.
    pub level: u8,
}

/// One edit of the member list. Indexes are taken modulo the list's length.
#[derive(Debug, Arbitrary)]
pub enum Op {
    /// Appends a member.
    Add(Name, Content),
    /// Removes a member.
    Remove(u8),
    /// Renames a member.
    Rename(u8, Name),
    /// Replaces a member's bytes.
    Replace(u8, Content),
    /// Edits a member's bytes.
    Edit(u8, Edit),
}

/// A member name.
#[derive(Debug, Arbitrary)]
pub enum Name {
    /// One of [`NAMES`].
    Known(u8),
    /// Components from [`COMPONENTS`] joined with `/`.
    Path(Vec<u8>),
    /// A name of `len` bytes (100–1123: past ustar's 100-byte field).
    Long {
        /// Extra length over 100.
        len: u16,
        /// Where a `/` goes, if anywhere.
        slash: Option<u8>,
    },
    /// Anything.
    Free(String),
}

/// Member bytes.
#[derive(Debug, Arbitrary)]
pub enum Content {
    /// These bytes.
    Bytes(Vec<u8>),
    /// A template member's bytes.
    Template(u16),
    /// A JSON document.
    Json(Json),
}

/// A change to member bytes.
#[derive(Debug, Arbitrary)]
pub enum Edit {
    /// Overwrites bytes at an offset (modulo the length).
    Overwrite(u16, Vec<u8>),
    /// Inserts bytes at an offset.
    Insert(u16, Vec<u8>),
    /// Cuts the bytes to a length.
    Truncate(u16),
    /// Parses the bytes as JSON, sets the value at a path, writes it back.
    Set(Vec<Step>, Json),
    /// Parses the bytes as JSON and removes the value at a path.
    Delete(Vec<Step>),
}

/// One step of a JSON path.
#[derive(Debug, Arbitrary)]
pub enum Step {
    /// The n-th entry of an object or array (modulo its length).
    Nth(u8),
    /// A key from the templates (created when missing).
    Key(u16),
}

/// A JSON value whose keys and strings mostly come from the templates.
#[derive(Debug, Arbitrary)]
pub enum Json {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A small integer.
    Int(i8),
    /// A wide integer.
    Wide(i64),
    /// A float.
    Float(f64),
    /// A string from the templates.
    Known(u16),
    /// Any string.
    Text(String),
    /// An array.
    Array(Vec<Json>),
    /// An object with template keys.
    Object(Vec<(u16, Json)>),
}

impl Json {
    fn value(&self, depth: u32) -> Value {
        let t = templates();
        if depth > 16 {
            return Value::Null;
        }
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Int(i) => Value::from(*i),
            Json::Wide(i) => Value::from(*i),
            Json::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Json::Known(i) => Value::String(pick(&t.strings, *i).clone()),
            Json::Text(s) => Value::String(s.clone()),
            Json::Array(items) => Value::Array(items.iter().map(|i| i.value(depth + 1)).collect()),
            Json::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (pick(&t.keys, *k).clone(), v.value(depth + 1)))
                    .collect(),
            ),
        }
    }
}

impl Name {
    fn resolve(&self) -> String {
        match self {
            Name::Known(i) => pick(NAMES, *i).to_string(),
            Name::Path(parts) => parts
                .iter()
                .map(|&p| *pick(COMPONENTS, p))
                .collect::<Vec<_>>()
                .join("/"),
            Name::Long { len, slash } => {
                let len = 100 + usize::from(*len % 1024);
                let mut name = "n".repeat(len);
                if let Some(at) = slash {
                    let at = 1 + usize::from(*at) % (len - 2);
                    name.replace_range(at..=at, "/");
                }
                name
            }
            Name::Free(s) => s.clone(),
        }
    }
}

impl Content {
    fn resolve(&self) -> Vec<u8> {
        match self {
            Content::Bytes(b) => b.clone(),
            Content::Template(i) => pick(&templates().members, *i).1.clone(),
            Content::Json(j) => serde_json::to_vec_pretty(&j.value(0)).unwrap_or_default(),
        }
    }
}

impl Edit {
    fn apply(&self, data: &mut Vec<u8>) {
        match self {
            Edit::Overwrite(at, bytes) => {
                let at = usize::from(*at) % (data.len() + 1);
                let end = (at + bytes.len()).min(data.len());
                data.splice(at..end, bytes.iter().copied());
            }
            Edit::Insert(at, bytes) => {
                let at = usize::from(*at) % (data.len() + 1);
                data.splice(at..at, bytes.iter().copied());
            }
            Edit::Truncate(len) => data.truncate(usize::from(*len)),
            Edit::Set(path, value) => edit_json(data, path, Some(value)),
            Edit::Delete(path) => edit_json(data, path, None),
        }
    }
}

/// Sets (or with `None` removes) the value at `path` in a JSON member.
fn edit_json(data: &mut Vec<u8>, path: &[Step], value: Option<&Json>) {
    let Ok(mut doc) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Some((last, parents)) = path.split_last() else {
        if let Some(v) = value {
            doc = v.value(0);
        }
        *data = serde_json::to_vec_pretty(&doc).unwrap_or_default();
        return;
    };
    let keys = &templates().keys;
    let mut node = &mut doc;
    for step in parents {
        match descend(node, step, keys) {
            Some(next) => node = next,
            None => return,
        }
    }
    let new = value.map(|v| v.value(0));
    match (node, last) {
        (Value::Object(map), Step::Key(k)) => {
            let key = pick(keys, *k).clone();
            match new {
                Some(v) => {
                    map.insert(key, v);
                }
                None => {
                    map.remove(&key);
                }
            }
        }
        (Value::Object(map), Step::Nth(i)) if !map.is_empty() => {
            let Some(key) = map.keys().nth(usize::from(*i) % map.len()).cloned() else {
                return;
            };
            match new {
                Some(v) => {
                    map.insert(key, v);
                }
                None => {
                    map.remove(&key);
                }
            }
        }
        (Value::Array(items), Step::Nth(i)) => match new {
            Some(v) if items.is_empty() => items.push(v),
            Some(v) => {
                let n = items.len();
                items[usize::from(*i) % n] = v;
            }
            None if items.is_empty() => {}
            None => {
                let n = items.len();
                items.remove(usize::from(*i) % n);
            }
        },
        _ => return,
    }
    *data = serde_json::to_vec_pretty(&doc).unwrap_or_default();
}

/// One step down a JSON path; `Key` creates a missing key as an empty object.
fn descend<'a>(node: &'a mut Value, step: &Step, keys: &[String]) -> Option<&'a mut Value> {
    match node {
        Value::Object(map) => match step {
            Step::Nth(i) => {
                let n = map.len();
                map.values_mut().nth(usize::from(*i) % n.max(1))
            }
            Step::Key(k) => Some(
                map.entry(pick(keys, *k).clone())
                    .or_insert_with(|| Value::Object(Default::default())),
            ),
        },
        Value::Array(items) => match step {
            Step::Nth(i) => {
                let n = items.len();
                items.get_mut(usize::from(*i) % n.max(1))
            }
            Step::Key(_) => None,
        },
        _ => None,
    }
}

impl MemberSet {
    /// The members (names unvalidated), the packaging and the gzip level.
    pub fn resolve(&self) -> (Vec<(String, Vec<u8>)>, PkgVersion, u32) {
        let t = templates();
        let mut members: Vec<(String, Vec<u8>)> = match self.base {
            Some(i) => t.members[pick(&t.examples, i).clone()].to_vec(),
            None => Vec::new(),
        };
        for op in &self.ops {
            let n = members.len();
            match op {
                Op::Add(name, content) => members.push((name.resolve(), content.resolve())),
                Op::Remove(i) if n > 0 => {
                    members.remove(usize::from(*i) % n);
                }
                Op::Rename(i, name) if n > 0 => members[usize::from(*i) % n].0 = name.resolve(),
                Op::Replace(i, content) if n > 0 => {
                    members[usize::from(*i) % n].1 = content.resolve()
                }
                Op::Edit(i, edit) if n > 0 => edit.apply(&mut members[usize::from(*i) % n].1),
                _ => {}
            }
        }
        let pkg = if self.pkg1 {
            PkgVersion::Sha256Tar
        } else {
            PkgVersion::Md5Gzip
        };
        (members, pkg, 1 + u32::from(self.level % 9))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_reads() {
        for entry in std::fs::read_dir("seeds/read_verify").unwrap() {
            read_verify::run(&std::fs::read(entry.unwrap().path()).unwrap());
        }
    }

    #[test]
    fn every_example_repacks_on_both_packagings() {
        let t = templates();
        assert_eq!(t.examples.len(), EXAMPLES.len());
        for range in &t.examples {
            let members = &t.members[range.clone()];
            assert!(members.iter().any(|(n, _)| n == "neff.json"));
            for pkg in [PkgVersion::Md5Gzip, PkgVersion::Sha256Tar] {
                checks::repack(members, pkg, 1);
            }
        }
    }

    #[test]
    fn every_roundtrip_seed_draws_a_spec() {
        for entry in std::fs::read_dir("seeds/roundtrip").unwrap() {
            let path = entry.unwrap().path();
            roundtrip::run(&std::fs::read(&path).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }

    #[test]
    fn templates_know_manifest_keys() {
        let t = templates();
        for key in ["var", "var_id", "dma_queue", "graphs", "target"] {
            assert!(t.keys.iter().any(|k| k == key), "{key}");
        }
    }

    #[test]
    fn arbitrary_member_sets_never_panic() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200 {
            let data: Vec<u8> = (0..256)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect();
            let _ = repack::run(&data);
        }
    }
}
