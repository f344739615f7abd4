//! Loader gates, status codes and rejections (spec §5).

use serde::Serialize;

/// The runtime's `NRT_STATUS` values that gates return, plus the process abort
/// that an assert-type gate causes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// Serializes as `{"status": <code>, "status_name": <name>}` (flattened
/// into a report).
impl Serialize for NrtStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("status", &self.code())?;
        map.serialize_entry("status_name", self.name())?;
        map.end()
    }
}

impl schemars::JsonSchema for NrtStatus {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NrtStatus".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {
                "status": {"description": "The runtime's status code (0 when accepted; 134 for an assert's abort).", "type": "integer"},
                "status_name": {"description": "The status code's name, e.g. `NRT_INVALID`.", "type": "string"}
            },
            "required": ["status", "status_name"]
        })
    }
}

macro_rules! gates {
    ($($gate:ident => $status:ident, $doc:literal;)*) => {
        /// A loader acceptance gate, numbered as in spec §5 (letters split a
        /// gate whose checks return different codes or messages).
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
        )]
        pub enum Gate {
            $(#[doc = $doc] $gate,)*
        }

        impl Gate {
            /// Every gate, in load order.
            pub const ALL: &'static [Gate] = &[$(Gate::$gate,)*];

            /// The gate id, e.g. `"G9"` or `"G24b"`.
            pub fn id(self) -> &'static str {
                match self {
                    $(Gate::$gate => stringify!($gate),)*
                }
            }

            /// The status the runtime returns when this gate fails. Where the
            /// spec gives no code, `NRT_INVALID` (spec §9 C29); assert-type
            /// gates abort the process.
            pub fn status(self) -> NrtStatus {
                match self {
                    $(Gate::$gate => NrtStatus::$status,)*
                }
            }
        }
    };
}

gates! {
    G1 => Invalid, "Buffer non-NULL.";
    G2 => Invalid, "At least 1024 bytes.";
    G3 => Invalid, "`header_size < file_size`.";
    G4 => UnsupportedNeffVersion, "`neff_version_major <= 2`.";
    G5 => UnsupportedNeffVersion, "Feature trapdoor when major == 2.";
    G6 => Invalid, "`file_size - 1024 >= data_size`.";
    G7 => UnsupportedNeffVersion, "`pkg_version` is 1 or 2.";
    G8 => Abort, "`data_size > 0` when verifying (an assert).";
    G9 => Invalid, "Digest matches when verifying.";
    G10 => Invalid, "libarchive opens the payload (no code in the spec).";
    G11 => Invalid, "Every tar header reads cleanly (no code in the spec).";
    G12 => Invalid, "Every member's size and data read cleanly (no code in the spec).";
    G13 => Invalid, "`neff.json` (or `kelp.json`) exists (no code in the spec).";
    G14 => Invalid, "neff.json has the required fields, in-range indices and a `__kelf` node (no code in the spec).";
    G15 => Invalid, "The KELF descriptor parses and its `version` has a `.`.";
    G16 => Invalid, "The target string is known.";
    G17 => Invalid, "The target matches the instance arch (overridable).";
    G18 => Abort, "Graph names are unique (an assert).";
    G19 => Invalid, "Every variable parses (no code in the spec).";
    G20a => Invalid, "var_ids are dense 0..N-1 (no code in the spec).";
    G20b => Invalid, "At least one output variable (no code in the spec).";
    G21a => Invalid, "A DMA queue's `owner`, when present, is an engine.";
    G21b => Invalid, "Each DMA queue has a known `type` (in, out, data, act_load, embedding_update, dynamic).";
    G21c => Invalid, "No `queue_instances` list on in/out/embedding_update queues (`num_queues` is allowed).";
    G21d => Invalid, "Semaphore and act_load queue limits.";
    G22 => Invalid, "replica_groups and src_target_pairs parse (no code in the spec).";
    G23 => Invalid, "At most 18 default ExtISA ops (no code in the spec).";
    G24a => Invalid, "Each ucode lib has `ulib_to_ucode_version`.";
    G24b => Invalid, "The ucode lib's major version matches the runtime's.";
    G24c => Invalid, "`total_cpus` is 0, 1 or 8.";
    G24d => Abort, "`cpu_id == 0` (an assert).";
    G24e => Invalid, "Ucode lib names are unique.";
    G24f => Invalid, "The ucode library member exists (no code in the spec).";
    G25a => Invalid, "Every carveout's type is `evtaccel` (no code in the spec).";
    G25b => Invalid, "`runtime_statebuffer_reservation` present on Cayman (overridable; FATAL).";
    G26 => Invalid, "DMA blocks are well formed (no code in the spec).";
    G27 => Invalid, "Engine files and instruction members exist and fit (no code in the spec).";
    G28 => Invalid, "The resolved target is not 0.";
    G29a => Invalid, "Enough physical cores for the graphs.";
    G29b => Abort, "One graph, or as many as the virtual core size (an assert).";
    G30 => Invalid, "The EVTACCEL carveout has the required values (Cayman instances).";
    G31 => Invalid, "Ucode staging caps: 97 functions, 64-character names, 28 per core (no code in the spec).";
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
