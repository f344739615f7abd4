//! The `neff` crate's integration tests, one binary (as tar-rs and
//! wasm-tools keep theirs): one module per concern, the shared helpers in
//! `common`.

mod common;

mod barrier;
mod bounded;
mod build;
mod cache;
mod carriers;
mod cli;
mod cli_fixes;
mod cli_flags;
mod corpus_from;
mod deflate_engines;
mod diff_cat;
mod durability;
mod filter_chain;
mod fixtures;
mod framing_presets;
mod fuzz_regressions;
mod hostile;
mod hostile_manifests;
mod independent_writer;
mod inspect_memory;
mod interop;
mod interrupts;
mod libarchive_differential;
mod lift;
mod many_members;
mod new_user;
mod partial_models;
mod readme;
mod real_inspect;
mod real_neff_gates;
mod real_neff_list;
mod real_neffs;
mod recover;
mod redact;
mod schemas;
mod shrink;
mod smoke;
mod spec_blobs;
mod stdin_bounds;
mod stream_check;
mod temp_names;
mod unpack_one_pass;
mod verify_many;
mod weights;
mod whole_file_differential;

// The runtime's walk of a payload, listed, and the `whole_file` fuzz
// target's check (shared with the fuzz targets).
use neff_testkit::{payload_walk, whole_file_check};
