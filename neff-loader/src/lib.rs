//! Reads a NEFF the way the Neuron runtime (`libnrt` 2.31) does and runs its
//! acceptance gates in the runtime's order.
//!
//! Gates G1–G12 (the container tier, spec §5.1) are implemented; each refusal
//! carries the runtime's status code and log line. The walk streams the
//! payload: memory stays bounded whatever the input (see [`Limits`]).
//!
//! ```no_run
//! use neff_loader::{load_file, RuntimeProfile};
//! let loaded = load_file("model.neff".as_ref(), &RuntimeProfile::default())?;
//! println!("{}", loaded.report.summary());
//! # Ok::<(), std::io::Error>(())
//! ```
#![deny(missing_docs)]

pub mod container;
pub mod digest;
pub mod extract;
pub mod gate;
pub mod gzip_reader;
pub mod profile;
pub mod report;
pub mod tar_reader;

use std::fs::File;
use std::io::{self, Cursor, Read, Seek};
use std::path::Path;

pub use container::{Compression, Container, EntryFate, EntryRecord, Limits, StoredMember};
pub use gate::{Gate, NrtStatus, Rejection};
pub use profile::RuntimeProfile;
pub use report::Report;

/// A NEFF as loaded under one profile.
pub struct Loaded {
    /// The verdict.
    pub report: Report,
    /// The first refusal, if any.
    pub rejection: Option<Rejection>,
    /// What was read; absent when the header itself could not be read.
    pub container: Option<Container>,
}

/// Loads a NEFF from a seekable source under `profile`. `None` stands for a
/// NULL buffer. `Err` means the source could not be read (an I/O failure),
/// never that the NEFF is bad: refusals are in the report.
pub fn load_reader<R: Read + Seek>(
    source: Option<R>,
    profile: &RuntimeProfile,
    limits: &Limits,
) -> io::Result<Loaded> {
    let tier1 = container::run(source, profile, limits)?;
    let report = Report::new(
        profile,
        tier1.rejection.as_ref(),
        tier1.warnings,
        &["container"],
    );
    Ok(Loaded {
        report,
        rejection: tier1.rejection,
        container: tier1.container,
    })
}

/// Loads a NEFF held in memory (`None` = a NULL buffer, refused by G1).
pub fn load_buffer(buffer: Option<&[u8]>, profile: &RuntimeProfile) -> Loaded {
    match load_reader(buffer.map(Cursor::new), profile, &Limits::default()) {
        Ok(loaded) => loaded,
        // Reading from memory cannot fail; keep the signature total anyway.
        Err(e) => {
            let rejection = Rejection::new(Gate::G1, "Invalid NEFF buffer").detail(e.to_string());
            Loaded {
                report: Report::new(profile, Some(&rejection), Vec::new(), &["container"]),
                rejection: Some(rejection),
                container: None,
            }
        }
    }
}

/// Loads a NEFF file. The report's `file` field is set to `path`.
pub fn load_file(path: &Path, profile: &RuntimeProfile) -> io::Result<Loaded> {
    let file = File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display())))?;
    let mut loaded = load_reader(Some(io::BufReader::new(file)), profile, &Limits::default())
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display())))?;
    loaded.report.file = Some(path.display().to_string());
    Ok(loaded)
}
