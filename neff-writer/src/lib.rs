//! Writes NEFF files, the package the AWS Neuron runtime loads.
//!
//! * [`NeffBuilder`]: describe a model (subgraphs, tensors, weights, DMA
//!   queues, engine programs) and it generates the manifest chain and packs
//!   it; [`build_spec`] is the same description as JSON (`neff build`);
//! * [`Packager`]: the deterministic streaming packager (tar → gzip → hash)
//!   under it, for any set of members, with [`PackOptions`] (framing, header
//!   fields) and a [`PackOutcome`] describing what was written.
//!
//! Every output goes through `neff-loader`'s gates before it is handed over
//! (the bytes as they are written, or the whole file read back with
//! [`PackOptions::paranoid_readback`]): a NEFF the runtime would refuse is an error, not a file
//! (unless asked for with [`NeffBuilder::unchecked`]). Test corpora and
//! fuzz inputs live in the `neff-smith` crate.
//!
//! ```
//! use neff_schema::manifest::Dtype;
//! use neff_writer::builder::{Tensor, Weight};
//! use neff_writer::NeffBuilder;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("model.neff");
//! let outcome = NeffBuilder::new()
//!     .subgraph("sg00", |sg| {
//!         sg.input("x", Tensor::new(Dtype::Float32, [4]))
//!             .output("y", Tensor::new(Dtype::Float32, [4]))
//!             .weight("w", Weight::raw(vec![0u8; 16]))
//!     })
//!     .write_to_path(&path)?;
//! assert!(outcome.report.accepted);
//! println!("{} (uuid {})", path.display(), outcome.header.uuid);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

mod atomic;
pub mod barrier;
pub mod base64;
mod blob;
pub mod build_spec;
pub mod builder;
mod chunk_deflate;
mod clobber;
mod deflate_cache;
mod error;
mod folder;
mod gzip_writer;
mod hashing_writer;
mod header_options;
mod labelled;
pub mod lift;
mod member;
mod pack_settings;
mod packager;
#[cfg(target_os = "linux")]
mod page_cache;
mod parallel_gzip;
mod piece_deflate;
mod pretty_json;
mod progress;
mod recover;
mod repeated_keys;
mod small_file;
mod stale;
mod sync_tree;
pub mod tar_writer;
mod tee;
mod tree_walk;
mod typing_budget;
mod unknown_keys;
mod writeback;
mod zlib_gzip;

pub use builder::{Build, Data, NeffBuilder};
pub use deflate_cache::DeflateCache;
pub use error::{Error, ErrorKind};
pub use gzip_writer::{gzip_header, GZIP_HEADER};
pub use hashing_writer::Digests;
pub use header_options::{
    HeaderFile, HeaderPatch, UuidChoice, DEFAULT_BUILD_VERSION, RECORDED_HEADER,
};
pub use member::{MemberName, MemberSource};
pub use pack_settings::{infer_virtual_core, PackSettings};
pub use packager::{PackOptions, PackOutcome, Packager};
pub use progress::{Phase, Progress};
pub use recover::{recover_framing, DeflateProof, DeflateProven, FramingRecorder, Recovered};
pub use zlib_gzip::ZlibGzipWriter;

/// The file-system plumbing the `neff` CLI, the Python package and
/// neff-smith share: atomic writes (a temp file beside the target, renamed on
/// success), signal hygiene for those temp files, the guard against
/// clobbering an input, `sync_tree`, and bounded reads of small input files.
/// Not a supported API: it may change in any release.
#[doc(hidden)]
pub mod fs {
    #[cfg(unix)]
    pub use crate::atomic::TERMINATION_SIGNALS;
    pub use crate::atomic::{
        abandon_temp_files, is_temp_name, note_signal, parent_dir, pending_termination_signal,
        report_stale_temp_files, signal_taken, termination_signalled, watch_signals, write_atomic,
        write_atomic_from, write_atomic_with,
    };
    pub use crate::clobber::OutputGuard;
    pub use crate::small_file::{open_regular, read_small_file, SMALL_MAX, SPEC_MAX};
    pub use crate::sync_tree::sync_tree;
}
