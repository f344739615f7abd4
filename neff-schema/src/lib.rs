//! The NEFF data model, with no I/O.
//!
//! * [`header`]: the 1024-byte `neff_header_t` codec (a lossless byte view with
//!   typed accessors, plus a plain [`HeaderFields`] record for JSON).
//! * [`Uuid`]: the header UUID, including the content-derived v4 UUID.
//! * [`Arch`] and [`Target`]: the runtime's `al_hal_tpb_arch_type` (SUNDA 2,
//!   CAYMAN 3, MARIANA 4) and the KELF descriptor's target.
//! * [`features`]: the feature-bit mask constants the loader's trapdoor uses.
//! * [`framing`]: how a payload is framed (tar, gzip, hash layout) and the
//!   named framing presets.
//! * [`hex`]: the `hex` crate, re-exported for the hex text of digests and blobs.
//! * [`manifest`]: typed, lossless views of the JSON manifests (`neff.json`,
//!   the KELF descriptor, `def.json`, engine JSON, DMA blocks, ucode libraries).
//!
//! Every fact here comes from `shared/spec/neff-format.md`; section numbers in the
//! doc comments point into it.
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

/// Implements `schemars::JsonSchema` for a type written as one JSON string:
/// the schema is named after the type, described by `$description`, and
/// narrowed by the keywords that follow (`"enum"`, `"pattern"`).
macro_rules! string_schema {
    ($ty:ident, $description:expr, $($keyword:literal: $value:expr),+ $(,)?) => {
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let mut schema = schemars::json_schema!({
                    "description": $description,
                    "type": "string",
                });
                $(schema.insert($keyword.into(), serde_json::json!($value));)+
                schema
            }
        }
    };
}

mod arch;
pub mod barrier;
mod error;
pub mod features;
pub mod framing;
pub mod header;
pub use hex;
pub mod manifest;
pub mod npy;
pub mod tar;
mod target;
mod uuid;

pub use arch::Arch;
pub use error::{write_prefix, Error, ErrorKind, Location};
pub use framing::{Framing, FramingPreset, HashLayout, HashLayoutPolicy};
pub use header::{HeaderFields, NeffHeader, PkgVersion, HEADER_LEN};
pub use target::Target;
pub use uuid::Uuid;
