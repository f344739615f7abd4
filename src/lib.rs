//! `neff`: write NEFF files (the package the AWS Neuron runtime loads) and check
//! them with a faithful copy of the runtime loader's acceptance gates.
//!
//! This crate is a facade over the workspace:
//! * [`schema`] (`neff-schema`): the data model, with no I/O;
//! * [`loader`] (`neff-loader`): reads a NEFF the way the runtime does and runs its gates;
//! * [`tools`] (`neff-tools`): inspect, diff, unpack, device memory and NTFF over a loaded NEFF;
//! * [`writer`] (`neff-writer`): [`NeffBuilder`](writer::NeffBuilder) and the
//!   deterministic streaming [`Packager`](writer::Packager);
//! * `smith` (`neff-smith`, feature `smith`): fixture corpora and fuzz inputs.
//!
//! [`prelude`] brings the everyday names into scope. Features: `cli` (default)
//! builds the `neff` binary and its dependencies; `smith` (default, implied by
//! `cli`) adds `neff::smith`. With `default-features = false` the library
//! needs neither clap nor arbitrary.
//!
//! ```
//! use neff::prelude::*;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("model.neff");
//! NeffBuilder::new()
//!     .target(Target::CAYMAN)
//!     .subgraph("sg00", |sg| {
//!         sg.input("x", Tensor::new(Dtype::Float32, [4]))
//!             .output("y", Tensor::new(Dtype::Float32, [4]))
//!     })
//!     .write_to_path(&path)?;
//! let verdict = verify_file(&path, &RuntimeProfile::default())?;
//! assert!(verdict.accepted);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

pub use neff_loader as loader;
pub use neff_schema as schema;
#[cfg(feature = "smith")]
pub use neff_smith as smith;
pub use neff_tools as tools;
pub use neff_writer as writer;

/// The names most programs need: `use neff::prelude::*;`.
pub mod prelude {
    pub use neff_loader::{
        load_file, verify_file, Checked, Loaded, Report, Runtime, RuntimeProfile, Verdict,
    };
    pub use neff_schema::manifest::Dtype;
    pub use neff_schema::{Arch, FramingPreset, PkgVersion, Target};
    pub use neff_writer::builder::{Subgraph, Tensor, Weight};
    pub use neff_writer::{Build, NeffBuilder, PackOptions, PackOutcome, Packager};
}
