//! G22 and G23: collectives and the ExtISA override.

use super::*;

/// Largest number of default ExtISA ops.
const MAX_EXT_ISA_OPS: usize = 18;

/// G22: `replica_groups` (nested arrays of ranks) and `src_target_pairs` (pairs).
pub(super) fn collectives(def: Json<'_>, member: &str) -> Result<(), Rejection> {
    fn ranks(v: Json<'_>) -> bool {
        match v.as_array() {
            Some(items) => items.iter().all(ranks),
            None => v.as_u64().is_some(),
        }
    }
    if let Some(groups) = def.get("replica_groups") {
        if !groups.is_array() || !ranks(groups) {
            return Err(reject(
                Gate::G22,
                "Failed to parse replica_groups",
                format!("{member}: replica_groups must be nested arrays of unsigned ranks"),
            ));
        }
    }
    if let Some(pairs) = def.get("src_target_pairs") {
        let ok = pairs.as_array().is_some_and(|p| {
            p.iter().all(|pair| {
                pair.as_array()
                    .is_some_and(|x| x.len() == 2 && x.iter().all(|r| r.as_u64().is_some()))
            })
        });
        if !ok {
            return Err(reject(
                Gate::G22,
                "Failed to parse src_target_pairs",
                format!(
                    "{member}: src_target_pairs must be an array of [source, target] rank pairs"
                ),
            ));
        }
    }
    Ok(())
}

/// G23: the default ExtISA library override holds at most 18 ops.
pub(super) fn ext_isa(def: Json<'_>, member: &str) -> Result<(), Rejection> {
    let n = def
        .get("ext_isa_ucode_lib_def")
        .and_then(|d| d.get("functions"))
        .and_then(Json::as_array)
        .map_or(0, Array::len);
    if n > MAX_EXT_ISA_OPS {
        return Err(reject(
            Gate::G23,
            format!("Number of ExtISA Op trying to load {n} exceeds the maximum {MAX_EXT_ISA_OPS}"),
            format!("{member}: ext_isa_ucode_lib_def.functions"),
        ));
    }
    Ok(())
}
