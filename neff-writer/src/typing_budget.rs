//! How much of a NEFF's JSON the lift holds typed at once. Typing a manifest
//! builds its whole tree in memory (serde_json's DOM, some 100 bytes a value,
//! held two or three times while the typed value is checked against it),
//! and a deflated manifest of a few KiB can be a hundred MiB of JSON. So a
//! manifest is typed only while its values and string bytes fit a budget,
//! per manifest and for the whole lift; past it the manifest stays bytes
//! (repacked exactly, edited as text), and the lift says why. Real compiler
//! manifests hold at most some 62,000 values (a neuron-cc 1.15
//! `wavegraph-bin.json`); the budgets are many times that.

/// Most JSON values one typed manifest may hold.
pub const MANIFEST_VALUES: u64 = 512 << 10;
/// Most bytes of keys and strings one typed manifest may hold.
pub const MANIFEST_TEXT: u64 = 16 << 20;
/// Most JSON values all typed manifests of one lift may hold together.
pub const LIFT_VALUES: u64 = 4 << 20;
/// Most bytes of keys and strings all typed manifests of one lift may hold.
pub const LIFT_TEXT: u64 = 64 << 20;

/// What a JSON text holds, counted without building it: values (an upper
/// bound: every scalar, array, object and key) and bytes inside strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JsonSize {
    /// Values, keys included.
    pub values: u64,
    /// Bytes inside strings (keys included), escapes counted as written.
    pub text: u64,
}

impl JsonSize {
    /// Counts `bytes` in one pass. Malformed text is counted too (the parse
    /// that follows reports it).
    pub fn of(bytes: &[u8]) -> JsonSize {
        let mut size = JsonSize::default();
        let mut in_string = false;
        let mut escaped = false;
        let mut in_scalar = false;
        for &b in bytes {
            if in_string {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_string = false;
                    continue;
                }
                size.text += 1;
                continue;
            }
            match b {
                b'"' => {
                    in_string = true;
                    in_scalar = false;
                    size.values += 1;
                }
                b'{' | b'[' => {
                    in_scalar = false;
                    size.values += 1;
                }
                b',' | b':' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' => in_scalar = false,
                _ => {
                    if !in_scalar {
                        size.values += 1;
                    }
                    in_scalar = true;
                }
            }
        }
        size
    }
}

/// What is left of the lift's budget.
#[derive(Debug, Clone, Copy)]
pub struct TypingBudget {
    values: u64,
    text: u64,
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
    /// Takes `size` from the budget, or says why the manifest stays bytes.
    pub fn take(&mut self, size: JsonSize) -> Result<(), String> {
        if size.values > MANIFEST_VALUES || size.text > MANIFEST_TEXT {
            return Err(format!(
                "it holds {} JSON values and {} bytes of strings; lift types a manifest of at most {MANIFEST_VALUES} values and {MANIFEST_TEXT} bytes of strings (its tree in memory would cost some 100 bytes a value)",
                size.values, size.text
            ));
        }
        if size.values > self.values || size.text > self.text {
            return Err(format!(
                "the manifests typed before it hold all but {} of the {LIFT_VALUES} JSON values and {} of the {LIFT_TEXT} string bytes one lift types",
                self.values, self.text
            ));
        }
        self.values -= size.values;
        self.text -= size.text;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_values_keys_and_string_bytes() {
        let size = JsonSize::of(br#"{"a": [1, -2.5e3, true, null, "x\"y"], "b": {}}"#);
        // the object, "a", the array, 1, -2.5e3, true, null, "x\"y", "b", {}
        assert_eq!(size.values, 10);
        // a, x\"y (4 bytes as written), b
        assert_eq!(size.text, 6);
    }

    #[test]
    fn a_manifest_past_its_budget_stays_bytes() {
        let mut budget = TypingBudget::default();
        let big = JsonSize {
            values: MANIFEST_VALUES + 1,
            text: 0,
        };
        let err = budget.take(big).unwrap_err();
        assert!(err.contains("524288 values"), "{err}");
        let fits = JsonSize {
            values: MANIFEST_VALUES,
            text: 1,
        };
        for _ in 0..LIFT_VALUES / MANIFEST_VALUES {
            budget.take(fits).unwrap();
        }
        assert!(budget.take(fits).unwrap_err().contains("typed before it"));
    }
}
