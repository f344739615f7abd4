//! What the `neff` CLI and the Python package show about a NEFF, over
//! `neff-loader`'s reading of it (so nothing here can read a payload any
//! other way than the runtime does):
//!
//! * [`InspectReport`]: the container, every entry's fate and the model a
//!   [`Verdict`](neff_loader::Verdict) read, as `neff inspect` prints it;
//! * [`MemoryReport`]: the device memory a model asks for, per core;
//! * [`weights`]: a NEFF's weights to and from safetensors; [`redact`]: a NEFF safe to share;
//! * [`diff`]: what differs between two NEFFs (header, members, keys);
//! * [`extract`]: `neff unpack`, writing each member as the walk reads it,
//!   through directory descriptors, refusing what the limits refuse;
//!   [`extract_recovering`] also recovers the framing on the same walk;
//! * [`ntff_neff_uuid`]: the NEFF UUID an NTFF profile names;
//! * [`carrier`]: NEFFs carried inside HLO modules and TorchScript zips.
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

pub mod cache;
pub mod carrier;
mod device_memory;
pub mod diff;
mod extract;
mod inspect;
mod ntff;
pub mod parallel;
mod recovering;
pub mod redact;
pub mod weights;

pub use device_memory::{CoreMemory, MemoryCategories, MemoryReport, SharedMemoryReport};
pub use extract::{
    abandon_unpack_dirs, extract, extract_observed, extract_refused, ExtractLimits, ExtractSummary,
};
pub use inspect::{InspectReport, ModelReadPast};
pub use ntff::ntff_neff_uuid;
pub use recovering::{extract_recovering, refusal_after_unpack, Recovering, UnpackReport};
