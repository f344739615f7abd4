//! Writes NEFF files: a deterministic streaming packager (tar → gzip → hash)
//! whose every output is read back through `neff-loader` before it is handed
//! over.
//!
//! ```no_run
//! use neff_writer::{Packager, PackOptions};
//! let mut p = Packager::new();
//! p.add_bytes("neff.json", b"{}".to_vec())?;
//! p.add_file("sg00/weights.bin", "weights.bin")?;
//! let outcome = p.write_to_path("model.neff".as_ref(), &PackOptions::default())?;
//! println!("{}", outcome.header.uuid);
//! # Ok::<(), neff_writer::PackError>(())
//! ```
//!
//! Two layers: [`Packager`] writes any set of members; [`NeffBuilder`]
//! (module [`builder`]) generates the manifest chain for a model described as
//! subgraphs, tensors, weights, queues and engine programs, then packs it.
//! [`build_spec`] is the same description as JSON (`neff build`).
#![deny(missing_docs)]

pub mod atomic;
pub mod barrier;
pub mod base64;
pub mod build_spec;
pub mod builder;
#[cfg(feature = "arbitrary")]
pub mod corpus;
pub mod fixtures;
#[cfg(feature = "arbitrary")]
pub mod generate;
pub mod gzip_writer;
pub mod hashing_writer;
pub mod header_options;
pub mod member;
pub mod packager;
pub mod parallel_gzip;
pub mod recover;
pub mod tar_writer;
pub mod zlib_gzip;

pub use builder::{Build, BuildError, Data, NeffBuilder};
pub use header_options::{HeaderFile, HeaderPatch, UuidChoice, DEFAULT_BUILD_VERSION};
pub use member::{MemberName, MemberSource};
pub use packager::{PackError, PackOptions, PackOutcome, Packager};
