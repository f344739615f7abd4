//! `neff`: write NEFF files (the package the AWS Neuron runtime loads) and check
//! them with a faithful copy of the runtime loader's acceptance gates.
//!
//! This crate is a facade over the workspace:
//! * [`schema`] (`neff-schema`): the data model, with no I/O;
//! * [`loader`] (`neff-loader`): reads a NEFF the way the runtime does and runs its gates;
//! * [`writer`] (`neff-writer`): the deterministic streaming packager.
//!
//! ```no_run
//! use neff::writer::{Packager, PackOptions};
//! use neff::loader::{load_file, RuntimeProfile};
//!
//! let packager = Packager::from_dir("examples/allreduce".as_ref())?;
//! packager.write_to_path("allreduce.neff".as_ref(), &PackOptions::default())?;
//! let loaded = load_file("allreduce.neff".as_ref(), &RuntimeProfile::default())?;
//! assert!(loaded.report.accepted);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub use neff_loader as loader;
pub use neff_schema as schema;
pub use neff_writer as writer;
