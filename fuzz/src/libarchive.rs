//! The real libarchive, loaded at run time from the path in `LIBARCHIVE`
//! (the `archi` wheel bundles libarchive 3.8), walking a payload with the
//! runtime's calls: the tar format and gzip filter over the bytes in memory;
//! for each header stop at EOF, fail on anything but OK (a warning too),
//! skip directories and read exactly `size` bytes of every other entry.
//! The same walk as `tests/support/libarchive_walk.py`.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use crate::payload_walk::{hex, Listed, Walk};

const ARCHIVE_OK: c_int = 0;
const ARCHIVE_EOF: c_int = 1;
const AE_IFDIR: u32 = 0o040000;

type Archive = *mut c_void;

/// The libarchive functions the walk calls.
struct Lib {
    read_new: unsafe extern "C" fn() -> Archive,
    support_filter_gzip: unsafe extern "C" fn(Archive) -> c_int,
    support_format_tar: unsafe extern "C" fn(Archive) -> c_int,
    open_memory: unsafe extern "C" fn(Archive, *const c_void, usize) -> c_int,
    next_header: unsafe extern "C" fn(Archive, *mut *mut c_void) -> c_int,
    read_data: unsafe extern "C" fn(Archive, *mut c_void, usize) -> isize,
    read_free: unsafe extern "C" fn(Archive) -> c_int,
    error_string: unsafe extern "C" fn(Archive) -> *const c_char,
    entry_pathname: unsafe extern "C" fn(*mut c_void) -> *const c_char,
    entry_size: unsafe extern "C" fn(*mut c_void) -> i64,
    entry_filetype: unsafe extern "C" fn(*mut c_void) -> u32,
    /// `archive_version_string()`.
    version: String,
}

/// Looks `name` up in `handle` as a function pointer of type `T`.
///
/// # Safety
/// `T` must be the symbol's true function type.
unsafe fn symbol<T: Copy>(handle: *mut c_void, name: &str) -> T {
    let c = CString::new(name).expect("symbol name");
    let p = libc::dlsym(handle, c.as_ptr());
    assert!(!p.is_null(), "libarchive has no {name}");
    std::mem::transmute_copy(&p)
}

/// The library named by `LIBARCHIVE`, loaded once; its version must be 3.8.x.
fn lib() -> &'static Lib {
    static LIB: OnceLock<Lib> = OnceLock::new();
    LIB.get_or_init(|| {
        let path = std::env::var("LIBARCHIVE")
            .expect("set LIBARCHIVE to libarchive.so.13 (3.8.x), e.g. the archi wheel's");
        let c = CString::new(path.clone()).expect("path");
        // SAFETY: dlopen/dlsym of libarchive's documented C API with the
        // signatures of archive.h and archive_entry.h.
        unsafe {
            let handle = libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            assert!(!handle.is_null(), "cannot load {path}");
            let version: unsafe extern "C" fn() -> *const c_char =
                symbol(handle, "archive_version_string");
            let version = CStr::from_ptr(version()).to_string_lossy().into_owned();
            assert!(
                version.starts_with("libarchive 3.8."),
                "{path} is {version}"
            );
            Lib {
                read_new: symbol(handle, "archive_read_new"),
                support_filter_gzip: symbol(handle, "archive_read_support_filter_gzip"),
                support_format_tar: symbol(handle, "archive_read_support_format_tar"),
                open_memory: symbol(handle, "archive_read_open_memory"),
                next_header: symbol(handle, "archive_read_next_header"),
                read_data: symbol(handle, "archive_read_data"),
                read_free: symbol(handle, "archive_read_free"),
                error_string: symbol(handle, "archive_error_string"),
                entry_pathname: symbol(handle, "archive_entry_pathname"),
                entry_size: symbol(handle, "archive_entry_size"),
                entry_filetype: symbol(handle, "archive_entry_filetype"),
                version,
            }
        }
    })
}

/// The loaded library's version string.
pub fn version() -> &'static str {
    &lib().version
}

/// libarchive's walk of `payload`.
pub fn libarchive_walk(payload: &[u8]) -> Walk {
    let lib = lib();
    let mut entries = Vec::new();
    // SAFETY: one archive object, used and freed here; the payload outlives
    // it; every pointer libarchive returns is read before the next call.
    unsafe {
        let a = (lib.read_new)();
        (lib.support_filter_gzip)(a);
        (lib.support_format_tar)(a);
        let error = |stage: &str, code: isize| {
            let text = (lib.error_string)(a);
            let text = if text.is_null() {
                "(null)".into()
            } else {
                CStr::from_ptr(text).to_string_lossy().into_owned()
            };
            Some(format!("{stage} {code}: {text}"))
        };
        let failure = 'walk: {
            let r = (lib.open_memory)(a, payload.as_ptr().cast(), payload.len());
            if r != ARCHIVE_OK {
                break 'walk error("open", r as isize);
            }
            let mut chunk = vec![0u8; 1 << 16];
            loop {
                let mut entry: *mut c_void = std::ptr::null_mut();
                let r = (lib.next_header)(a, &mut entry);
                if r == ARCHIVE_EOF {
                    break 'walk None;
                }
                if r != ARCHIVE_OK {
                    break 'walk error("header", r as isize);
                }
                let name = (lib.entry_pathname)(entry);
                let name = if name.is_null() {
                    Vec::new()
                } else {
                    CStr::from_ptr(name).to_bytes().to_vec()
                };
                let dir = (lib.entry_filetype)(entry) == AE_IFDIR;
                let size = (lib.entry_size)(entry);
                entries.push(Listed {
                    name: hex(&name),
                    dir,
                    size,
                    sha256: None,
                });
                if dir || size < 0 {
                    continue;
                }
                let (mut digest, mut got) = (Sha256::new(), 0i64);
                let mut n = 0;
                while got < size {
                    let want = chunk.len().min((size - got) as usize);
                    n = (lib.read_data)(a, chunk.as_mut_ptr().cast(), want);
                    if n <= 0 {
                        break;
                    }
                    digest.update(&chunk[..n as usize]);
                    got += n as i64;
                }
                if got < size {
                    // The data read before the failure is not compared.
                    break 'walk error("data", n);
                }
                if let Some(last) = entries.last_mut() {
                    last.sha256 = Some(hex(&digest.finalize()));
                }
            }
        };
        (lib.read_free)(a);
        Walk { entries, failure }
    }
}
