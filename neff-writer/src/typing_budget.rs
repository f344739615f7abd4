//! How much of a NEFF's JSON the lift holds typed at once. Typing a manifest
//! builds its whole tree in memory (serde_json's DOM, some 100 bytes a value,
//! held two or three times while the typed value is checked against it),
//! and a deflated manifest of a few KiB can be a hundred MiB of JSON. So a
//! manifest is typed only while its values and string bytes fit a budget,
//! per manifest and for the whole lift, counted by the loader's own JSON
//! reader (`neff_loader::walk::parse`); past it the manifest stays bytes
//! (repacked exactly, edited as text), and the lift says why. Real compiler
//! manifests hold at most some 62,000 values (a neuron-cc 1.15
//! `wavegraph-bin.json`); the budgets are many times that.

use neff_loader::walk::{parse, Budget};

/// Most JSON values one typed manifest may hold.
pub const MANIFEST_VALUES: usize = 512 << 10;
/// Most bytes of keys and strings one typed manifest may hold.
pub const MANIFEST_TEXT: usize = 16 << 20;
/// Most JSON values all typed manifests of one lift may hold together.
pub const LIFT_VALUES: usize = 4 << 20;
/// Most bytes of keys and strings all typed manifests of one lift may hold.
pub const LIFT_TEXT: usize = 64 << 20;

/// What is left of the lift's budget.
#[derive(Debug, Clone, Copy)]
pub struct TypingBudget {
    values: usize,
    text: usize,
}

impl Default for TypingBudget {
    fn default() -> Self {
        TypingBudget {
            values: LIFT_VALUES,
            text: LIFT_TEXT,
        }
    }
}

impl TypingBudget {
    /// Takes the manifest `json` from the budget, or says why it stays
    /// bytes (over a budget, not JSON the loader reads, or a key repeated in
    /// an object: the runtime reads the first, the typed model cannot hold
    /// both, and a tree of a million repeats would cost a million tokens to
    /// restyle).
    pub fn take(&mut self, json: &[u8]) -> Result<(), String> {
        let values = self.values.min(MANIFEST_VALUES);
        let text = self.text.min(MANIFEST_TEXT);
        let (doc, repeats) = parse(json, Budget::new(values, text)).map_err(|e| match e.limit {
            true if values < MANIFEST_VALUES || text < MANIFEST_TEXT => format!(
                "the manifests typed before it hold all but {values} of the {LIFT_VALUES} JSON values and {text} of the {LIFT_TEXT} string bytes one lift types"
            ),
            true => format!(
                "it holds more than {MANIFEST_VALUES} JSON values or {MANIFEST_TEXT} bytes of strings, the most lift types in one manifest (its tree in memory would cost some 100 bytes a value)"
            ),
            false => e.to_string(),
        })?;
        if let Some(path) = repeats.shown.first() {
            return Err(format!(
                "a key is repeated in an object ({path}; the runtime reads the first)"
            ));
        }
        let (values, text) = doc.size();
        self.values -= values.min(self.values);
        self.text -= text.min(self.text);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JSON array of `n` zeros.
    fn zeros(n: usize) -> Vec<u8> {
        let mut json = b"[0".to_vec();
        json.extend(b",0".repeat(n - 1));
        json.push(b']');
        json
    }

    #[test]
    fn a_manifest_past_its_budget_stays_bytes() {
        let mut budget = TypingBudget::default();
        let err = budget.take(&zeros(MANIFEST_VALUES)).unwrap_err();
        assert!(err.contains("524288 JSON values"), "{err}");
        let n = MANIFEST_VALUES / 2;
        let fits = zeros(n);
        let mut taken = 0;
        while budget.take(&fits).is_ok() {
            taken += 1;
        }
        // Each takes the array and its n elements, and a quarter value per
        // element link (`Doc::size`).
        assert_eq!(taken, LIFT_VALUES / (1 + n + n / 4));
        assert!(budget.take(&fits).unwrap_err().contains("typed before it"));
        assert!(budget.take(b"{").unwrap_err().contains("EOF"));
    }

    #[test]
    fn a_repeated_key_stays_bytes_and_costs_nothing() {
        let mut budget = TypingBudget::default();
        let err = budget.take(br#"{"a": {"b": 0, "b": 1}}"#).unwrap_err();
        assert!(err.contains("repeated") && err.contains("a.b"), "{err}");
        assert_eq!(budget.values, LIFT_VALUES);
    }
}
