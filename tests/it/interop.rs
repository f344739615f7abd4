//! Interoperability with independent NEFF readers and writers.
//!
//! * NEFFs written by `neff pack` are read by Python (`struct`, `hashlib`,
//!   `gzip`, `zlib`, `tarfile`), by GNU tar and by bsdtar (libarchive, the
//!   library family the Neuron runtime reads NEFFs with).
//! * NEFFs written by a small Python script (header via `struct`, tar via
//!   `tarfile` in GNU, pax and ustar formats, gzip via `gzip.compress`) are read
//!   by `neff verify`, `neff inspect` and `neff unpack`.
//!
//! The external tools are required: a missing one fails the test and names
//! the Debian package that provides it.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io::ErrorKind;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};
use tempfile::TempDir;

use crate::common;

/// Size of the NEFF header; the payload starts right after it.
const HEADER_LEN: usize = 1024;

/// A path of more than 100 bytes (so the tar needs a GNU `L` record, a pax
/// `path` record or the ustar prefix field), whose last component and parent
/// still fit ustar's 100-byte name and 155-byte prefix fields.
const LONG_PATH: &str = "a_directory_name_that_is_quite_long_0123456789/\
                         another_directory_name_also_long_0123456789/\
                         file_with_a_long_name.bin";

/// A non-ASCII member name, used in the pax-format archive.
const NON_ASCII_PATH: &str = "données/模型-größe.bin";

/// Builds a `Command` for an external tool, failing the test (not skipping
/// it) when the tool is not installed, with the Debian package to install.
fn tool(program: &str) -> Command {
    let package = match program {
        "bsdtar" => "libarchive-tools",
        other => other,
    };
    match Command::new(program).arg("--version").output() {
        Ok(_) => Command::new(program),
        Err(e) if e.kind() == ErrorKind::NotFound => panic!(
            "`{program}` is required by this test but was not found on PATH: \
             install it with `apt-get install -y {package}` (Debian package `{package}`)"
        ),
        Err(e) => panic!("cannot run `{program}`: {e}"),
    }
}

/// Runs a command and returns its output, failing the test with both
/// streams shown when it exits non-zero.
fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `python3 -c SCRIPT ARGS...` and returns its stdout; the script
/// signals failure by raising (non-zero exit), which fails the test.
fn run_python(script: &str, args: &[&OsStr]) -> String {
    let out = run_ok(tool("python3").arg("-c").arg(script).args(args));
    String::from_utf8(out.stdout).expect("python printed non-UTF-8")
}

/// Runs the `neff` binary and returns its output, whatever the exit status.
fn neff(args: &[&OsStr]) -> Output {
    crate::common::neff_command()
        .args(args)
        .output()
        .expect("cannot run the neff binary")
}

/// Runs `neff <args> --json`, returning the exit code and the parsed JSON.
fn neff_json(args: &[&OsStr]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push(OsStr::new("--json"));
    let out = neff(&all);
    let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "neff {all:?} printed no JSON ({e})\n--- stdout\n{}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().expect("neff killed by a signal"), value)
}

/// A tree as a map from member name to contents: files map to `Some(bytes)`,
/// folders to `None` with a trailing `/` on their name, so the map's order is
/// the byte-sorted member order our writer uses.
type Tree = BTreeMap<String, Option<Vec<u8>>>;

/// Reads the tree under `root` (not including `root` itself).
fn read_tree(root: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, tree: &mut Tree) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_str().unwrap();
            let kind = entry.file_type().unwrap();
            if rel == neff::writer::RECORDED_HEADER {
                // The header an unpack records beside the members.
                continue;
            }
            if kind.is_dir() {
                tree.insert(format!("{rel}/"), None);
                walk(root, &path, tree);
            } else if kind.is_file() {
                tree.insert(rel.to_string(), Some(fs::read(&path).unwrap()));
            } else {
                panic!("{} is neither a file nor a folder", path.display());
            }
        }
    }
    let mut tree = Tree::new();
    walk(root, root, &mut tree);
    tree
}

/// Asserts that two trees hold the same names, kinds and bytes.
fn assert_same_tree(expected: &Tree, actual_root: &Path, what: &str) {
    let actual = read_tree(actual_root);
    let names = |t: &Tree| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&actual),
        names(expected),
        "{what}: member names differ"
    );
    for (name, want) in expected {
        assert!(actual[name] == *want, "{what}: contents of {name} differ");
    }
}

/// Deterministic pseudo-random bytes (xorshift), after one of each byte value.
fn binary_data(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x1234_5678;
    let mut data: Vec<u8> = (0..=255).collect();
    while data.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data.push(x as u8);
    }
    data
}

/// The test tree: nested folders, an empty folder, a 0-byte file, a path of
/// more than 100 bytes and a few KiB of binary data. `a-b.bin` sorts before
/// the folder `a/` in byte order ('-' < '/').
fn sample_tree() -> Tree {
    // A minimal model that passes every gate, so `neff pack` writes it.
    let model = common::model_files(&[]);
    let mut files: Vec<(&str, Vec<u8>)> = vec![
        ("a-b.bin", b"sorts before a/".to_vec()),
        ("a/def.json", br#"{"name": "interop"}"#.to_vec()),
        ("a/nested/deeper/weights.bin", binary_data(5000)),
        ("empty.txt", Vec::new()),
        // Over two compression chunks: the parallel deflate's sync-flushed
        // chunk boundaries must read back as one gzip member everywhere.
        ("big/weights.bin", binary_data(2_600_000)),
        (LONG_PATH, binary_data(700)),
    ];
    files.extend(model.iter().map(|(n, d)| (n.as_str(), d.clone())));
    assert!(LONG_PATH.len() > 100);
    let mut tree = Tree::new();
    for (name, data) in files {
        let mut parent = name;
        while let Some((p, _)) = parent.rsplit_once('/') {
            tree.insert(format!("{p}/"), None);
            parent = p;
        }
        tree.insert(name.to_string(), Some(data));
    }
    tree.insert("empty_dir/".to_string(), None);
    tree
}

/// Writes `tree` to disk under `root`.
fn write_tree(tree: &Tree, root: &Path) {
    for (name, data) in tree {
        let path = root.join(name.trim_end_matches('/'));
        match data {
            None => fs::create_dir_all(&path).unwrap(),
            Some(bytes) => {
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(&path, bytes).unwrap();
            }
        }
    }
}

/// Writes the sample tree to `tmp/src` and packs it with `neff pack`,
/// returning the source tree and the NEFF path.
fn pack_sample(tmp: &TempDir, pkg: u32) -> (Tree, std::path::PathBuf) {
    let tree = sample_tree();
    let src = tmp.path().join("src");
    write_tree(&tree, &src);
    assert_eq!(
        read_tree(&src),
        tree,
        "sample tree did not round-trip on disk"
    );
    let out = tmp.path().join(format!("pkg{pkg}.neff"));
    let pkg = pkg.to_string();
    let result = neff(&[
        "pack".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--pkg-version".as_ref(),
        pkg.as_ref(),
        "--name".as_ref(),
        "interop-model".as_ref(),
        "-q".as_ref(),
    ]);
    assert!(
        result.status.success(),
        "neff pack failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    (tree, out)
}

/// Writes the NEFF's payload (the bytes after the header) to `tmp/NAME`.
fn write_payload(neff_path: &Path, tmp: &TempDir, name: &str) -> std::path::PathBuf {
    let bytes = fs::read(neff_path).unwrap();
    let path = tmp.path().join(name);
    fs::write(&path, &bytes[HEADER_LEN..]).unwrap();
    path
}

/// Python check of a NEFF written by `neff pack`. Arguments: NEFF path, source
/// folder, pkg version, expected model name. Raises on any mismatch.
const PY_CHECK_PACKED: &str = r#"
import sys, os, io, struct, hashlib, gzip, zlib, tarfile
path, src, pkg, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].encode()
raw = open(path, 'rb').read()
hdr, payload = raw[:1024], raw[1024:]
pkg_version, header_size, data_size, major = struct.unpack_from('<QQQQ', hdr, 0)
assert pkg_version == pkg, pkg_version
assert header_size == 0x400, header_size
assert data_size == len(raw) - 1024, (data_size, len(raw))
assert major == 2, major
assert struct.unpack_from('<I', hdr, 0xA8)[0] == 1, 'unused_0'
stored_hash = hdr[0xAC:0xAC + 32]
model_name = hdr[0xDC:0xDC + 256]
assert model_name == name + bytes(256 - len(name)), model_name
if pkg == 2:
    assert stored_hash[:16] == hashlib.md5(payload).digest(), 'md5'
    assert stored_hash[16:] == b'0' * 16, stored_hash[16:]
    assert payload[:10] == bytes.fromhex('1f8b0800000000000003'), payload[:10].hex()
    d = zlib.decompressobj(31)
    tar = d.decompress(payload) + d.flush()
    assert d.eof, 'gzip stream not finished'
    assert d.unused_data == b'', 'more than one gzip member or trailing bytes'
    assert gzip.decompress(payload) == tar
else:
    assert stored_hash == hashlib.sha256(payload).digest(), 'sha256'
    assert payload[:2] != b'\x1f\x8b', 'pkg 1 payload is gzip'
    tar = payload

# Raw framing: GNU magic, a GNU 'L' record for the long name, end blocks.
off, long_links = 0, 0
while True:
    blk = tar[off:off + 512]
    assert len(blk) == 512, 'tar ends without an end marker'
    if blk == bytes(512):
        break
    assert blk[257:265] == b'ustar  \x00', blk[257:265]
    size = int(blk[124:136].strip(b' \x00') or b'0', 8)
    if blk[156:157] == b'L':
        assert blk[:100].rstrip(b'\x00') == b'././@LongLink'
        long_links += 1
    off += 512 + (size + 511) // 512 * 512
assert long_links >= 1, 'no GNU L record'
assert len(tar) - off >= 1024 and tar[off:] == bytes(len(tar) - off), 'end blocks'
assert len(tar) % 10240 == 0, len(tar)

# Members via tarfile, against the source tree.
want = {}
for dirpath, dirnames, filenames in os.walk(src):
    rel = os.path.relpath(dirpath, src)
    for d in dirnames:
        want[os.path.normpath(os.path.join(rel, d)) + '/'] = None
    for f in filenames:
        want[os.path.normpath(os.path.join(rel, f))] = open(os.path.join(dirpath, f), 'rb').read()
got, order = {}, []
with tarfile.open(fileobj=io.BytesIO(tar), mode='r:') as tf:
    for m in tf.getmembers():
        assert m.mtime == 0 and m.uid == 0 and m.gid == 0, (m.name, m.mtime, m.uid, m.gid)
        assert m.uname == 'nobody' and m.gname == 'nobody', (m.name, m.uname, m.gname)
        if m.isdir():
            assert m.mode == 0o755, (m.name, oct(m.mode))
            key = m.name + '/'
            got[key] = None
        else:
            assert m.isreg(), (m.name, m.type)
            assert m.mode == 0o644, (m.name, oct(m.mode))
            key = m.name
            got[key] = tf.extractfile(m).read()
            assert len(got[key]) == m.size
        parts = key.rstrip('/').split('/')
        for i in range(1, len(parts)):
            assert '/'.join(parts[:i]) + '/' in order, ('parent folder missing or late', key)
        order.append(key)
assert sorted(got) == sorted(want), (sorted(got), sorted(want))
for k in want:
    assert got[k] == want[k], ('contents differ', k)
assert order == sorted(order, key=lambda s: s.encode()), ('not byte-sorted', order)
print(len(order))
"#;

/// Python reads a NEFF from `neff pack` and checks header, hash, framing and
/// members against the source tree.
fn check_with_python(pkg: u32) {
    let tmp = TempDir::new().unwrap();
    let (tree, out) = pack_sample(&tmp, pkg);
    let src = tmp.path().join("src");
    let pkg = pkg.to_string();
    let printed = run_python(
        PY_CHECK_PACKED,
        &[
            out.as_os_str(),
            src.as_os_str(),
            pkg.as_ref(),
            "interop-model".as_ref(),
        ],
    );
    assert_eq!(printed.trim(), tree.len().to_string(), "member count");
}

#[test]
fn python_reads_packed_pkg2() {
    check_with_python(2);
}

#[test]
fn python_reads_packed_pkg1() {
    check_with_python(1);
}

/// Extracts and lists the payload of a NEFF from `neff pack` with `program`
/// (GNU `tar` or `bsdtar`), comparing the extracted tree byte for byte with
/// the source and the listing with the expected member order.
fn check_with_tar(program: &str, pkg: u32) {
    let tmp = TempDir::new().unwrap();
    let (tree, out) = pack_sample(&tmp, pkg);
    let (payload_name, x_flags) = if pkg == 2 {
        ("payload.tar.gz", "-xzf")
    } else {
        ("payload.tar", "-xf")
    };
    if program == "tar" && pkg == 2 {
        tool("gzip"); // GNU tar -z runs the gzip program
    }
    let payload = write_payload(&out, &tmp, payload_name);
    let dest = tmp.path().join(format!("extracted-{program}"));
    fs::create_dir(&dest).unwrap();
    let extracted = run_ok(
        tool(program)
            .arg("--no-same-owner")
            .arg(x_flags)
            .arg(&payload)
            .arg("-C")
            .arg(&dest),
    );
    assert!(
        extracted.stderr.is_empty(),
        "{program} warned while extracting: {}",
        String::from_utf8_lossy(&extracted.stderr)
    );
    assert_same_tree(&tree, &dest, &format!("{program} extraction of pkg {pkg}"));

    let listed = run_ok(tool(program).arg("-tf").arg(&payload));
    assert!(listed.stderr.is_empty(), "{program} warned while listing");
    let names: Vec<&str> = std::str::from_utf8(&listed.stdout)
        .unwrap()
        .lines()
        .collect();
    let expected: Vec<&str> = tree.keys().map(String::as_str).collect();
    assert_eq!(names, expected, "{program} -tf listing");

    let verbose = run_ok(tool(program).env("TZ", "UTC").arg("-tvf").arg(&payload));
    let text = String::from_utf8(verbose.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), tree.len(), "{program} -tvf:\n{text}");
    for (line, (name, data)) in lines.iter().zip(&tree) {
        assert!(
            line.ends_with(name.as_str()),
            "{program} -tvf line {line:?} for {name}"
        );
        assert!(line.contains("nobody"), "{program} -tvf owner in {line:?}");
        assert!(line.contains("1970"), "{program} -tvf mtime in {line:?}");
        let mode = if data.is_some() {
            "-rw-r--r--"
        } else {
            "drwxr-xr-x"
        };
        assert!(line.starts_with(mode), "{program} -tvf mode in {line:?}");
    }
}

#[test]
fn gnu_tar_reads_packed_pkg2() {
    check_with_tar("tar", 2);
}

#[test]
fn gnu_tar_reads_packed_pkg1() {
    check_with_tar("tar", 1);
}

#[test]
fn bsdtar_reads_packed_pkg2() {
    check_with_tar("bsdtar", 2);
}

#[test]
fn bsdtar_reads_packed_pkg1() {
    check_with_tar("bsdtar", 1);
}

/// Python NEFF writer. Arguments: spec JSON path (`{"entries": [{"name",
/// "type": "dir"|"file", "data": hex}]}` in archive order), output path, tar
/// format (`gnu`, `pax`, `ustar`), pkg version, `1` to corrupt the MD5.
const PY_BUILD_NEFF: &str = r#"
import sys, io, json, struct, hashlib, gzip, tarfile
spec_path, out, fmt, pkg, corrupt = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == '1'
spec = json.load(open(spec_path, encoding='utf-8'))
formats = {'gnu': tarfile.GNU_FORMAT, 'pax': tarfile.PAX_FORMAT, 'ustar': tarfile.USTAR_FORMAT}
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode='w', format=formats[fmt], encoding='utf-8') as tf:
    for e in spec['entries']:
        ti = tarfile.TarInfo(e['name'])
        ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = 0, 0, 0, 'root', 'root'
        if e['type'] == 'dir':
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            tf.addfile(ti)
        else:
            data = bytes.fromhex(e['data'])
            ti.size, ti.mode = len(data), 0o644
            tf.addfile(ti, io.BytesIO(data))
tar = buf.getvalue()
# Check the long name really took the format's own path: GNU 'L' record,
# pax 'x' header, or ustar's prefix field.
kinds, off = set(), 0
while tar[off:off + 512] != bytes(512):
    blk = tar[off:off + 512]
    kinds.add(blk[156:157])
    if fmt == 'ustar' and blk[345:500].strip(b'\x00'):
        kinds.add(b'prefix')
    off += 512 + (int(blk[124:136].strip(b' \x00') or b'0', 8) + 511) // 512 * 512
mechanism = {'gnu': b'L', 'pax': b'x', 'ustar': b'prefix'}[fmt]
assert mechanism in kinds, (fmt, kinds)
assert not ({b'L', b'x'} - {mechanism}) & kinds, (fmt, kinds)
if pkg == 2:
    payload = gzip.compress(tar, compresslevel=6, mtime=0)
    digest = hashlib.md5(payload).digest()
    if corrupt:
        digest = bytes([digest[0] ^ 0xFF]) + digest[1:]
    hash_field = digest + b'0' * 16
else:
    payload = tar
    hash_field = hashlib.sha256(payload).digest()
hdr = bytearray(1024)
struct.pack_into('<QQQQQ', hdr, 0x000, pkg, 0x400, len(payload), 2, 0)
struct.pack_into('128s', hdr, 0x028, b'python-interop')
struct.pack_into('<I', hdr, 0x0A8, 1)
struct.pack_into('32s', hdr, 0x0AC, hash_field)
struct.pack_into('16s', hdr, 0x0CC, bytes(range(0x11, 0x21)))
struct.pack_into('256s', hdr, 0x0DC, b'python-built')
struct.pack_into('<I', hdr, 0x1DC, 1)
struct.pack_into('<Q', hdr, 0x220, 0)
struct.pack_into('<I', hdr, 0x228, 1)
with open(out, 'wb') as f:
    f.write(bytes(hdr) + payload)
print(len(tar))
"#;

/// The members the Python writer puts in its archives, in archive order
/// (folders end in `/`): the sample tree.
fn python_entries() -> Vec<(String, Option<Vec<u8>>)> {
    sample_tree().into_iter().collect()
}

/// Builds a NEFF with the Python writer in `tmp` and returns its path.
fn build_with_python(
    tmp: &TempDir,
    entries: &[(String, Option<Vec<u8>>)],
    format: &str,
    pkg: u32,
    corrupt_md5: bool,
) -> std::path::PathBuf {
    let spec: Vec<Value> = entries
        .iter()
        .map(|(name, data)| match data {
            None => json!({"name": name, "type": "dir"}),
            Some(bytes) => {
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                json!({"name": name, "type": "file", "data": hex})
            }
        })
        .collect();
    let spec_path = tmp.path().join(format!("spec-{format}-{pkg}.json"));
    fs::write(&spec_path, json!({ "entries": spec }).to_string()).unwrap();
    let out = tmp
        .path()
        .join(format!("python-{format}-pkg{pkg}-{corrupt_md5}.neff"));
    let pkg = pkg.to_string();
    let corrupt = if corrupt_md5 { "1" } else { "0" };
    run_python(
        PY_BUILD_NEFF,
        &[
            spec_path.as_os_str(),
            out.as_os_str(),
            format.as_ref(),
            pkg.as_ref(),
            corrupt.as_ref(),
        ],
    );
    out
}

/// Builds a NEFF with Python's tarfile in `format` and checks that `neff
/// verify` accepts it, `neff inspect` lists exactly the expected entries
/// (stored keys and sizes, folders as directories) and `neff unpack`
/// reproduces the tree byte for byte.
fn check_python_built(format: &str, pkg: u32) {
    let tmp = TempDir::new().unwrap();
    let entries = python_entries();
    let path = build_with_python(&tmp, &entries, format, pkg, false);
    let what = format!("python {format} pkg {pkg}");

    let (code, verdict) = neff_json(&["verify".as_ref(), path.as_os_str()]);
    assert_eq!(verdict["accepted"], true, "{what}: verify: {verdict:#}");
    assert_eq!(code, 0, "{what}: verify exit code");
    assert_eq!(verdict["status"], 0, "{what}: verify status");
    assert_eq!(verdict["warnings"], json!([]), "{what}: verify warnings");

    let (code, report) = neff_json(&["inspect".as_ref(), path.as_os_str()]);
    assert_eq!(code, 0, "{what}: inspect exit code: {report:#}");
    let compression = if pkg == 2 { "gzip" } else { "none" };
    assert_eq!(report["compression"], compression, "{what}: compression");
    assert_eq!(report["header"]["pkg_version"], pkg, "{what}: pkg_version");
    assert_eq!(report["header"]["name"], "python-built", "{what}: name");
    let listed: Vec<(String, u64, String, String)> = report["members"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no members array: {report:#}"))
        .iter()
        .map(|m| {
            (
                m["key"].as_str().unwrap().to_string(),
                m["size"].as_u64().unwrap(),
                m["type"].as_str().unwrap().to_string(),
                m["fate"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, u64, String, String)> = entries
        .iter()
        .map(|(name, data)| match data {
            None => (name.clone(), 0, "directory".into(), "directory".into()),
            Some(d) => (name.clone(), d.len() as u64, "file".into(), "stored".into()),
        })
        .collect();
    assert_eq!(listed, expected, "{what}: inspect members");

    let dest = tmp.path().join("unpacked");
    let out = neff(&[
        "unpack".as_ref(),
        path.as_os_str(),
        "-o".as_ref(),
        dest.as_os_str(),
    ]);
    assert!(
        out.status.success(),
        "{what}: unpack failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree: Tree = entries.into_iter().collect();
    assert_same_tree(&tree, &dest, &format!("{what}: neff unpack"));
}

#[test]
fn reads_python_gnu_format_pkg2() {
    check_python_built("gnu", 2);
}

#[test]
fn reads_python_pax_format_pkg2() {
    check_python_built("pax", 2);
}

/// A pax `path` that is not ASCII: libarchive converts it from UTF-8 to the
/// runtime process's locale (and fails in the C locale), so it is refused
/// by name rather than read one way.
#[test]
fn a_non_ascii_pax_path_is_refused_by_name() {
    let tmp = TempDir::new().unwrap();
    let mut entries = python_entries();
    let dir = NON_ASCII_PATH.rsplit_once('/').unwrap().0;
    entries.push((format!("{dir}/"), None));
    entries.push((NON_ASCII_PATH.to_string(), Some(b"non-ascii".to_vec())));
    let path = build_with_python(&tmp, &entries, "pax", 2, false);
    let (code, verdict) = neff_json(&["verify".as_ref(), path.as_os_str()]);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["gate"], "G11", "{verdict:#}");
    let detail = verdict["detail"].as_str().unwrap();
    assert!(detail.contains("pax path is not ASCII"), "{detail}");
}

#[test]
fn reads_python_ustar_format_pkg2() {
    check_python_built("ustar", 2);
}

#[test]
fn reads_python_gnu_format_pkg1_sha256() {
    check_python_built("gnu", 1);
}

#[test]
fn refuses_python_neff_with_wrong_md5() {
    let tmp = TempDir::new().unwrap();
    let path = build_with_python(&tmp, &python_entries(), "gnu", 2, true);

    let (code, verdict) = neff_json(&["verify".as_ref(), path.as_os_str()]);
    assert_eq!(verdict["accepted"], false, "{verdict:#}");
    assert_eq!(verdict["gate"], "G9", "{verdict:#}");
    assert_eq!(verdict["status"], 2, "{verdict:#}");
    assert_eq!(verdict["message"], "MD5 mismatch!", "{verdict:#}");
    assert_eq!(code, 1, "verify exit code for a refused NEFF");

    // Only the hash is wrong: with the check off the same file is accepted.
    let (code, verdict) = neff_json(&[
        "verify".as_ref(),
        path.as_os_str(),
        "--no-verify-hash".as_ref(),
    ]);
    assert_eq!(verdict["accepted"], true, "--no-verify-hash: {verdict:#}");
    assert_eq!(code, 0, "--no-verify-hash exit code");
}
