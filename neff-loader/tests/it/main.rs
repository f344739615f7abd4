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
    assert_no_debug_text(r);
}

/// No message or detail of `r` holds Rust's `Debug` text of an `Option` or
/// a `Result` (`Some(2)`, `None`, `Ok(..)`).
#[track_caller]
pub fn assert_no_debug_text(r: &Report) {
    let texts = [r.message.as_deref(), r.detail.as_deref()];
    for text in texts
        .into_iter()
        .flatten()
        .chain(r.warnings.iter().map(String::as_str))
    {
        let words: Vec<&str> = text
            .split(|c: char| !c.is_alphanumeric() && c != '(')
            .collect();
        let debug = words.iter().any(|w| {
            w.starts_with("Some(") || w.starts_with("Ok(") || w.starts_with("Err(") || *w == "None"
        });
        assert!(!debug, "Rust Debug text in {text:?}");
    }
}
