//! The runtime's walk of a payload, listed: every entry (name, directory or
//! not, size, SHA-256 of the data read) and how the walk ended. Made by this
//! crate's readers ([`neff_walk`]) and compared with libarchive's
//! ([`Walk::agrees_with`]) by the `libarchive_walk` fuzz target and by
//! `tests/it/libarchive_differential.rs`. No
//! fuzzing dependency.

use std::io::Write;

use sha2::{Digest, Sha256};

/// One walk's outcome: the entries, then `None` for a clean end or the failure.
#[derive(Debug, PartialEq, Eq)]
pub struct Walk {
    /// The entries, in order.
    pub entries: Vec<Listed>,
    /// `None` for a clean end, else the failure.
    pub failure: Option<String>,
}

/// One entry as the runtime sees it.
#[derive(Debug, PartialEq, Eq)]
pub struct Listed {
    /// The name, as lowercase hex.
    pub name: String,
    /// Whether it is a directory (the runtime skips those).
    pub dir: bool,
    /// The size the reader reports.
    pub size: i64,
    /// SHA-256 of the data read (None for directories, negative sizes and a
    /// read that failed).
    pub sha256: Option<String>,
}

impl Listed {
    /// The same entry as the runtime sees it: directories by name alone.
    fn same_as(&self, other: &Listed) -> bool {
        if self.dir || other.dir {
            return self.dir == other.dir && self.name == other.name;
        }
        self == other
    }
}

impl Walk {
    /// Whether `self` (this crate's walk) and `theirs` (libarchive's) agree:
    /// the same entries and both clean or both failed. Where this crate
    /// refuses a construct by design (the README's limits), libarchive may
    /// read on; the entries before the refusal must still agree.
    pub fn agrees_with(&self, theirs: &Walk) -> bool {
        let agree = |a: &[Listed], b: &[Listed]| {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.same_as(b))
        };
        let refused = self
            .failure
            .as_deref()
            .is_some_and(|f| f.contains("Unsupported tar construct"));
        if refused {
            theirs.entries.len() >= self.entries.len()
                && agree(&self.entries, &theirs.entries[..self.entries.len()])
        } else {
            agree(&self.entries, &theirs.entries)
                && self.failure.is_some() == theirs.failure.is_some()
        }
    }

    /// One line: each entry as `name[/]:size:sha-prefix`, then the end.
    pub fn summary(&self) -> String {
        let entries: Vec<String> = self
            .entries
            .iter()
            .map(|e| {
                let bytes = unhex(&e.name);
                let name = String::from_utf8_lossy(&bytes);
                let name: String = name.chars().take(40).collect();
                let sha = e.sha256.as_deref().map_or("-", |s| &s[..6]);
                format!("{name}{}:{}:{sha}", if e.dir { "/" } else { "" }, e.size)
            })
            .collect();
        let end = self.failure.as_deref().unwrap_or("ok");
        let end: String = end.chars().take(110).collect();
        format!("[{}] {end}", entries.join(", "))
    }
}

/// This crate's walk of `payload`, making the runtime's calls.
pub fn neff_walk(payload: &[u8]) -> Walk {
    let mut entries = Vec::new();
    let fail = |entries, why: String| Walk {
        entries,
        failure: Some(why),
    };
    let (_, stream) = match neff_loader::payload_stream(payload) {
        Ok(s) => s,
        Err(e) => return fail(entries, format!("open: {e}")),
    };
    let mut tar = neff_loader::TarReader::new(stream);
    let mut first = true;
    loop {
        let entry = match tar.next_entry() {
            Ok(Some(entry)) => entry,
            // libarchive cannot even bid on a stream with no tar block.
            Ok(None) if first && tar.offset() == 0 => return fail(entries, "open: empty".into()),
            Ok(None) => {
                return Walk {
                    entries,
                    failure: None,
                }
            }
            Err(e) => return fail(entries, format!("header: {e}")),
        };
        first = false;
        let dir = entry.kind == neff_loader::EntryKind::Directory;
        let mut listed = Listed {
            name: hex(&entry.name),
            dir,
            size: entry.size,
            sha256: None,
        };
        if dir || entry.size < 0 {
            entries.push(listed);
            continue;
        }
        let mut hasher = HashSink(Sha256::new());
        let copied = tar.copy_data(&mut hasher);
        listed.sha256 = Some(hex(&hasher.0.finalize()));
        entries.push(listed);
        if let Err(e) = copied {
            // The data read before the failure is not compared.
            if let Some(last) = entries.last_mut() {
                last.sha256 = None;
            }
            return fail(entries, format!("data: {e}"));
        }
    }
}

struct HashSink(Sha256);

impl Write for HashSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of [`hex`] text (`?` for a pair that is not hex).
pub fn unhex(text: &str) -> Vec<u8> {
    (0..text.len() / 2)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap_or(b'?'))
        .collect()
}
