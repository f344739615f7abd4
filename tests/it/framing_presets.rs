//! The named framings (`--framing gnu|neuronx-cc|neuronx-cc-2.16`): each
//! writes what spec §11 says the compiler writes, Python's
//! tarfile/gzip/zlib/hashlib, GNU tar and bsdtar read every preset's output,
//! and the default is unchanged.

use std::ffi::OsStr;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

use crate::common;

/// A member path over 100 bytes: ustar stores it split into prefix and name.
const LONG_PATH: &str = "a_directory_name_that_is_quite_long_0123456789/\
                         another_directory_name_also_long_0123456789/\
                         file_with_a_long_name.bin";

fn tool(program: &str) -> Command {
    let package = if program == "bsdtar" {
        "libarchive-tools"
    } else {
        program
    };
    match Command::new(program).arg("--version").output() {
        Ok(_) => Command::new(program),
        Err(e) if e.kind() == ErrorKind::NotFound => panic!(
            "`{program}` is required by this test: install it with `apt-get install -y {package}`"
        ),
        Err(e) => panic!("cannot run `{program}`: {e}"),
    }
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn neff(args: &[&OsStr]) -> Output {
    run_ok(crate::common::neff_command().args(args))
}

/// A valid model tree plus a long-named member; returns its root.
fn sample(tmp: &TempDir) -> PathBuf {
    let src = tmp.path().join("src");
    common::write_model_tree(&src);
    let long = src.join(LONG_PATH);
    fs::create_dir_all(long.parent().unwrap()).unwrap();
    fs::write(
        &long,
        (0..5000u32).map(|i| (i % 253) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    src
}

fn pack(src: &Path, out: &Path, extra: &[&str]) {
    let mut args: Vec<&OsStr> = vec![
        "pack".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "-q".as_ref(),
    ];
    args.extend(extra.iter().map(|a| OsStr::new(*a)));
    neff(&args);
}

/// Checks a NEFF against the compiler framing of spec §11.1–§11.3.
/// Arguments: NEFF path, source folder, preset name.
const PY_CHECK: &str = r#"
import sys, os, io, struct, hashlib, gzip, zlib, tarfile
path, src, preset = sys.argv[1], sys.argv[2], sys.argv[3]
raw = open(path, 'rb').read()
hdr, payload = raw[:1024], raw[1024:]
pkg, header_size, data_size, major, minor = struct.unpack_from('<QQQQQ', hdr, 0)
assert (pkg, header_size, major, minor) == (2, 0x400, 1, 0), (pkg, header_size, major, minor)
assert data_size == len(payload) and data_size % 10240 == 0, data_size
assert hdr[0x28:0xA8] == bytes(128), 'build_version is empty'
assert struct.unpack_from('<I', hdr, 0xA8)[0] == 1, 'num_tpb'
assert struct.unpack_from('<I', hdr, 0x1DC)[0] == 1, 'requested_tpb_count'
assert hdr[0x1E0:0x220] == b'\x01' + bytes(63), 'tpb_per_node'
name = os.path.basename(path).encode()
assert hdr[0xDC:0xDC + 256] == name + bytes(256 - len(name)), 'name is the file name'
md5 = hashlib.md5(payload).digest()
reversed_md5 = b''.join(md5[i:i + 4][::-1] for i in range(0, 16, 4))
want = reversed_md5 if preset == 'neuronx-cc' else md5
assert hdr[0xAC:0xBC] == want, ('hash layout', hdr[0xAC:0xBC].hex(), md5.hex())
assert hdr[0xBC:0xCC] == bytes(16), 'zeros after the MD5'
assert payload[:10] == bytes.fromhex('1f8b0800000000000403'), payload[:10].hex()
d = zlib.decompressobj(-15)
tar = d.decompress(payload[10:])
assert d.eof
rest = d.unused_data
deflate = payload[10:len(payload) - len(rest)]
crc, isize = struct.unpack_from('<II', rest, 0)
assert crc == zlib.crc32(tar) and isize == len(tar) % 2**32, 'trailer'
assert rest[8:] == bytes(len(rest) - 8) and len(rest) - 8 < 10240, 'zero padding'
assert gzip.decompress(payload[:len(payload) - len(rest) + 8]) == tar
c = zlib.compressobj(1, zlib.DEFLATED, -15, 8)
assert c.compress(tar) + c.flush() == deflate, 'not classic zlib level 1'
# Raw tar: POSIX ustar in libarchive's encodings, no directories, 2 end blocks.
off, names = 0, []
while True:
    blk = tar[off:off + 512]
    if blk == bytes(512):
        break
    assert blk[257:265] == b'ustar\x0000', blk[257:265]
    assert blk[100:108] == b'000664 \x00', blk[100:108]
    assert blk[108:116] == blk[116:124] == b'001750 \x00'
    assert blk[124:136].endswith(b' ') and blk[136:148] == b'00000000000 '
    assert blk[148:156][6:] == b'\x00 '
    assert blk[156:157] == b'0', 'regular files only'
    assert blk[265:297].rstrip(b'\x00') == b'nobody' == blk[297:329].rstrip(b'\x00')
    assert blk[329:337] == blk[337:345] == b'000000 \x00'
    prefix = blk[345:500].rstrip(b'\x00')
    short = blk[:100].rstrip(b'\x00')
    names.append((prefix + b'/' + short if prefix else short).decode())
    size = int(blk[124:136].strip(b' \x00'), 8)
    off += 512 + (size + 511) // 512 * 512
assert len(tar) == off + 1024 and tar[off:] == bytes(1024), 'exactly two end blocks'
expect = sorted(names, key=lambda s: s.encode())
if preset == 'neuronx-cc':
    expect.remove('neff.json'); expect.append('neff.json')
assert names == expect, names
want = {}
for dirpath, _, filenames in os.walk(src):
    for f in filenames:
        p = os.path.join(dirpath, f)
        want[os.path.relpath(p, src)] = open(p, 'rb').read()
with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
    got = {m.name: tf.extractfile(m).read() for m in tf.getmembers()}
    assert all(m.uid == 1000 and m.mode == 0o664 and m.mtime == 0 for m in tf.getmembers())
assert got == want, sorted(set(got) ^ set(want))
info = __import__('json').loads(got['info.json'])
assert info['num_tpb'] == 1 and info['num_tpb_requested'] == 1, info
assert info['num_tpb_per_node'] == [1] + [0] * 63, info
print(len(names))
"#;

fn check_preset(preset: &str) {
    let tmp = TempDir::new().unwrap();
    let src = sample(&tmp);
    // info.json as the builder writes it for compiler-like presets.
    fs::write(
        src.join("info.json"),
        serde_json::to_vec(&serde_json::json!({
            "num_tpb": 1, "num_tpb_requested": 1,
            "num_tpb_per_node": std::iter::once(1).chain(std::iter::repeat_n(0, 63)).collect::<Vec<_>>()
        }))
        .unwrap(),
    )
    .unwrap();
    let out = tmp.path().join("model.neff");
    pack(&src, &out, &["--framing", preset]);
    let printed = run_ok(
        tool("python3")
            .arg("-c")
            .arg(PY_CHECK)
            .arg(&out)
            .arg(&src)
            .arg(preset),
    );
    assert!(!printed.stdout.is_empty());
    // GNU tar and bsdtar extract the same tree.
    let bytes = fs::read(&out).unwrap();
    let payload = tmp.path().join("payload.tar.gz");
    fs::write(&payload, &bytes[1024..]).unwrap();
    tool("gzip");
    for program in ["tar", "bsdtar"] {
        let dest = tmp.path().join(program);
        fs::create_dir(&dest).unwrap();
        let x = run_ok(
            tool(program)
                .arg("--no-same-owner")
                .arg("-xzf")
                .arg(&payload)
                .arg("-C")
                .arg(&dest),
        );
        // GNU tar notes the zero padding after the gzip member ("trailing garbage ignored").
        if program == "bsdtar" {
            assert!(
                x.stderr.is_empty(),
                "{}",
                String::from_utf8_lossy(&x.stderr)
            );
        }
        assert_eq!(
            fs::read(dest.join(LONG_PATH)).unwrap(),
            fs::read(src.join(LONG_PATH)).unwrap(),
            "{program}"
        );
        assert_eq!(
            fs::read(dest.join("neff.json")).unwrap(),
            fs::read(src.join("neff.json")).unwrap(),
            "{program}"
        );
    }
}

#[test]
fn neuronx_cc_preset_writes_as_the_compiler() {
    check_preset("neuronx-cc");
}

#[test]
fn neuronx_cc_2_16_preset_writes_as_that_compiler() {
    check_preset("neuronx-cc-2.16");
}

#[test]
fn gnu_is_the_default_and_unchanged() {
    let tmp = TempDir::new().unwrap();
    let src = sample(&tmp);
    let a = tmp.path().join("a.neff");
    let b = tmp.path().join("b.neff");
    pack(&src, &a, &[]);
    pack(&src, &b, &["--framing", "gnu"]);
    let a = fs::read(a).unwrap();
    assert_eq!(a, fs::read(b).unwrap());
    assert_eq!(&a[1024..1034], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    assert_eq!(&a[0xBC..0xCC], &[b'0'; 16], "'0' x 16 after the MD5");
}

#[test]
fn overrides_change_only_their_field() {
    let tmp = TempDir::new().unwrap();
    let src = sample(&tmp);
    let a = tmp.path().join("a.neff");
    let b = tmp.path().join("b.neff");
    pack(&src, &a, &["--framing", "neuronx-cc"]);
    pack(
        &src,
        &b,
        &["--framing", "neuronx-cc", "--hash-layout", "standard"],
    );
    let (a, b) = (fs::read(a).unwrap(), fs::read(b).unwrap());
    assert_eq!(a[1024..], b[1024..], "same payload");
    let mut reversed = b[0xAC..0xBC].to_vec();
    for w in reversed.chunks_mut(4) {
        w.reverse();
    }
    assert_eq!(a[0xAC..0xBC], reversed[..]);
    // --deflate parallel keeps the tar but changes the deflate stream.
    let c = tmp.path().join("c.neff");
    pack(
        &src,
        &c,
        &["--framing", "neuronx-cc", "--deflate", "parallel"],
    );
    assert_ne!(fs::read(c).unwrap()[1024..], a[1024..]);
}
