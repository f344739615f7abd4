//! Test cases for NEFF readers, in the style of `wasm-smith`: everything here
//! exists to produce NEFF files that exercise a loader, none of it to write a
//! model for production (that is `neff-writer`).
//!
//! * [`fixtures`]: the deterministic conformance corpus (`neff fixtures`):
//!   valid, negative (one file per reachable loader gate) and edge-case NEFFs,
//!   with a manifest of the verdict expected for each;
//! * [`generate`]: [`ArbitrarySpec`], a
//!   structure-aware generator of valid build specs from fuzzer bytes;
//! * [`corpus`]: fuzz seed corpora (`neff corpus`): generated valid NEFFs and
//!   hash-consistent mutations of them;
//! * [`check`]: a fixture set or a corpus re-checked against its manifest;
//! * [`shrink`]: a reducer of a NEFF to the smallest that keeps a predicate.
//!
//! ```
//! use neff_smith::corpus::seed_file;
//! use neff_smith::generate::GenConfig;
//!
//! // The first usable draw of seed 7, never mutated: a NEFF (a 1 KiB header,
//! // then the payload) that every loader gate accepts.
//! let seed = (0..16)
//!     .find_map(|draw| seed_file(7, draw, 0.0, &GenConfig::default()))
//!     .expect("some draw builds");
//! assert!(seed.verdict.accepted);
//! assert!(seed.bytes.len() > 1024);
//! ```
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

pub mod check;
pub mod corpus;
pub mod coverage;
pub mod fixtures;
pub mod generate;
pub mod real;
mod seed;
pub mod shrink;
pub mod whole_file;

pub use fixtures::{Error, FixtureManifest};
pub use generate::{ArbitrarySpec, GenConfig};
