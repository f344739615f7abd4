//! Reading the small files a command takes whole (a build spec, a
//! `--header` file, barrier inputs, an NTFF profile): each must be a regular
//! file of bounded size. A FIFO, socket or device is refused before a byte
//! is read (it is opened without blocking), and a file that grows past the
//! bound while it is read is refused too, so no input reads without end.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::error::{Error, ErrorKind};

/// The bound on a build spec (its inline base64 blobs included).
pub const SPEC_MAX: u64 = 1 << 30;
/// The bound on a `--header` file, a barrier input or an NTFF profile.
pub const SMALL_MAX: u64 = 64 << 20;

/// The bytes of the regular file at `path`, at most `max` of them; `what`
/// names the file's role in errors ("build spec").
pub fn read_small_file(path: &Path, max: u64, what: &str) -> Result<Vec<u8>, Error> {
    let file = open_regular(path, what)?;
    let len = file
        .metadata()
        .map_err(|e| Error::io(&format!("cannot read the {what}"), path, e))?
        .len();
    let too_big = |len: u64| {
        Error::new(
            ErrorKind::BadOption,
            format!(
                "the {what} {} is {len} bytes, more than the {max}-byte limit",
                path.display()
            ),
        )
        .at_path(path)
    };
    if len > max {
        return Err(too_big(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(&format!("cannot read the {what}"), path, e))?;
    if bytes.len() as u64 > max {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Opens `path` for reading, refusing anything but a regular file (without
/// blocking on a FIFO).
pub fn open_regular(path: &Path, what: &str) -> Result<File, Error> {
    let mut options = File::options();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| Error::io(&format!("cannot open the {what}"), path, e))?;
    let kind = file
        .metadata()
        .map_err(|e| Error::io(&format!("cannot read the {what}"), path, e))?
        .file_type();
    if !kind.is_file() {
        let is = if kind.is_dir() {
            "a folder"
        } else {
            "a FIFO, socket or device"
        };
        return Err(Error::new(
            ErrorKind::BadOption,
            format!("the {what} {} is {is}, not a regular file", path.display()),
        )
        .at_path(path));
    }
    #[cfg(unix)]
    {
        // Back to blocking reads for the regular file.
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl on a descriptor `file` owns.
        unsafe {
            let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_and_others_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("spec.json");
        std::fs::write(&file, b"{}").unwrap();
        assert_eq!(read_small_file(&file, 10, "spec").unwrap(), b"{}");
        let e = read_small_file(&file, 1, "spec").unwrap_err().to_string();
        assert!(e.contains("2 bytes, more than the 1-byte limit"), "{e}");
        let e = read_small_file(dir.path(), 10, "spec")
            .unwrap_err()
            .to_string();
        assert!(e.contains("a folder"), "{e}");
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: mkfifo with a valid C string.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let e = read_small_file(&fifo, 10, "spec").unwrap_err().to_string();
            assert!(e.contains("FIFO"), "{e}");
            let e = read_small_file(Path::new("/dev/zero"), 10, "spec")
                .unwrap_err()
                .to_string();
            assert!(e.contains("device"), "{e}");
        }
    }
}
