//! What the corpus writers share: a seed and its verdict, the seeded
//! generator every draw comes from, and the values a mutation puts in.

use neff_loader::Report;
use serde_json::Value;

/// One corpus file.
#[derive(Debug, Clone)]
pub struct Seed {
    /// The NEFF bytes.
    pub bytes: Vec<u8>,
    /// The loader's verdict on it (default profile, every targeted arch), as
    /// `neff verify` gives it.
    pub verdict: SeedVerdict,
    /// What was mutated, for a mutated seed (which may still be accepted).
    pub mutation: Option<String>,
}

/// The loader's verdict on a seed: the `accepted`, `gate`, `status` and
/// `status_name` keys of `neff verify --json`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct SeedVerdict {
    /// Accepted on every arch it targets.
    pub accepted: bool,
    /// The refusing gate.
    pub gate: Option<&'static str>,
    /// The runtime status code.
    pub status: i64,
    /// Its name.
    pub status_name: &'static str,
}

impl SeedVerdict {
    /// The loader's verdict on `bytes`.
    pub fn of(bytes: &[u8]) -> SeedVerdict {
        let verdict = neff_loader::Loader::new(&neff_loader::RuntimeProfile::default())
            .verify(Some(std::io::Cursor::new(bytes)));
        match verdict {
            Ok(v) => SeedVerdict::from_report(&v.combined_report()),
            // In memory no read fails; refuse rather than claim acceptance.
            Err(_) => SeedVerdict {
                accepted: false,
                gate: None,
                status: neff_loader::NrtStatus::Invalid.code(),
                status_name: neff_loader::NrtStatus::Invalid.name(),
            },
        }
    }

    /// The verdict a combined report (every targeted arch) gives.
    pub fn from_report(r: &Report) -> SeedVerdict {
        SeedVerdict {
            accepted: r.accepted,
            gate: r.gate_id(),
            status: r.status.code(),
            status_name: r.status.name(),
        }
    }
}

/// SplitMix64: a small, well-mixed deterministic generator (also handy for
/// seeded tests).
#[derive(Debug, Clone)]
pub struct Mix(pub u64);

impl Mix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// A value chosen to break a reader: null, a bool, small, huge and negative
/// numbers, empty and overlong strings, nested and empty containers.
pub(crate) fn adversarial(mix: &mut Mix) -> Value {
    match mix.below(10) {
        0 => Value::Null,
        1 => Value::Bool(mix.below(2) == 0),
        2 => (mix.next_u64() % 64).into(),
        3 => u64::MAX.into(),
        4 => (-(mix.below(9) as i64)).into(),
        5 => 1.5e300.into(),
        6 => "".into(),
        7 => "x".repeat(70).into(),
        8 => serde_json::json!([[]]),
        _ => serde_json::json!({}),
    }
}
