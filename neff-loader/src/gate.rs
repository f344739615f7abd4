//! Loader gates, status codes and rejections (spec §5).

use serde::Serialize;

/// The runtime's `NRT_STATUS` values that gates return, plus the process abort
/// that an assert-type gate causes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NrtStatus {
    /// `NRT_SUCCESS` (0).
    Success,
    /// `NRT_INVALID` (2).
    Invalid,
    /// `NRT_UNSUPPORTED_NEFF_VERSION` (10).
    UnsupportedNeffVersion,
    /// `__assert_fail`: the runtime process aborts with SIGABRT. Reported as 134,
    /// the status a shell gives a process killed by SIGABRT (128 + 6).
    Abort,
}

impl NrtStatus {
    /// The numeric code.
    pub fn code(self) -> i64 {
        match self {
            NrtStatus::Success => 0,
            NrtStatus::Invalid => 2,
            NrtStatus::UnsupportedNeffVersion => 10,
            NrtStatus::Abort => 134,
        }
    }

    /// The runtime's name for the code.
    pub fn name(self) -> &'static str {
        match self {
            NrtStatus::Success => "NRT_SUCCESS",
            NrtStatus::Invalid => "NRT_INVALID",
            NrtStatus::UnsupportedNeffVersion => "NRT_UNSUPPORTED_NEFF_VERSION",
            NrtStatus::Abort => "ABORT",
        }
    }
}

/// A loader acceptance gate, numbered as in spec §5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Gate {
    /// Buffer non-NULL.
    G1,
    /// At least 1024 bytes.
    G2,
    /// `header_size < file_size`.
    G3,
    /// `neff_version_major <= 2`.
    G4,
    /// Feature trapdoor when major == 2.
    G5,
    /// `file_size - 1024 >= data_size`.
    G6,
    /// `pkg_version` is 1 or 2.
    G7,
    /// `data_size > 0` when verifying (an assert).
    G8,
    /// Digest matches when verifying.
    G9,
    /// libarchive opens the payload.
    G10,
    /// Every tar header reads cleanly.
    G11,
    /// Every member's size and data read cleanly.
    G12,
}

impl Gate {
    /// The gate id, e.g. `"G9"`.
    pub fn id(self) -> &'static str {
        match self {
            Gate::G1 => "G1",
            Gate::G2 => "G2",
            Gate::G3 => "G3",
            Gate::G4 => "G4",
            Gate::G5 => "G5",
            Gate::G6 => "G6",
            Gate::G7 => "G7",
            Gate::G8 => "G8",
            Gate::G9 => "G9",
            Gate::G10 => "G10",
            Gate::G11 => "G11",
            Gate::G12 => "G12",
        }
    }

    /// The status the runtime returns when this gate fails. G10–G12 have no
    /// code in the spec; they use `NRT_INVALID` (spec §9 C29).
    pub fn status(self) -> NrtStatus {
        match self {
            Gate::G4 | Gate::G5 | Gate::G7 => NrtStatus::UnsupportedNeffVersion,
            Gate::G8 => NrtStatus::Abort,
            _ => NrtStatus::Invalid,
        }
    }
}

/// A gate that refused the NEFF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Which gate.
    pub gate: Gate,
    /// The runtime's log line, printf arguments filled in.
    pub message: String,
    /// The runtime's `NLOG_ERR_CAUSE`, when it sets one.
    pub error_cause: Option<String>,
    /// This tool's explanation: what exactly was wrong and where.
    pub detail: Option<String>,
}

impl Rejection {
    /// A rejection by `gate` with the runtime's `message`.
    pub fn new(gate: Gate, message: impl Into<String>) -> Self {
        Rejection {
            gate,
            message: message.into(),
            error_cause: None,
            detail: None,
        }
    }

    /// Adds this tool's explanation.
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}
