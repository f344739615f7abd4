//! neff-loader's integration tests, one binary: a negative test per gate
//! (the gate, the runtime's status code and its log line) over NEFFs built by
//! hand (`neff_testkit::bytes`).

mod gates;
mod manifest_gates;

use neff_loader::Report;

/// Asserts that `r` is a refusal by `gate`, with the runtime's `status` code
/// and log line `message`.
#[track_caller]
pub fn assert_refused(r: &Report, gate: &str, status: i64, message: &str) {
    assert!(!r.accepted, "{r:#?}");
    assert_eq!(r.gate_id(), Some(gate), "{r:#?}");
    assert_eq!(r.status.code(), status, "{r:#?}");
    assert_eq!(r.message.as_deref(), Some(message), "{r:#?}");
}
