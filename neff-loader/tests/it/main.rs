//! neff-loader's integration tests, one binary: a negative test per gate
//! (the gate, the runtime's status code and its log line) over NEFFs built by
//! hand (`bytes`).

mod bytes;

mod gates;
mod manifest_gates;
