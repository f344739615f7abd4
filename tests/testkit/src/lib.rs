//! Test support shared by the workspace's tests and the fuzz targets
//! (`fuzz/`), so that a saved crash replays through exactly the code that
//! found it and no source file is shared by `#[path]`:
//! * [`bytes`]: NEFFs built by hand, byte by byte, for inputs the packager
//!   deliberately refuses to write;
//! * [`checks`]: the invariants the fuzz targets check;
//! * [`payload_walk`]: the runtime's walk of a payload, listed, to compare
//!   with libarchive's;
//! * [`whole_file_check`]: the `whole_file` target's check of a whole NEFF
//!   through the entry points behind each command.
//!
//! No fuzzing dependency: the root package's tests use it on stable.

pub mod bytes;
pub mod checks;
pub mod payload_walk;
pub mod whole_file_check;
