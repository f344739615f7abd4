//! G19 and G20: variables and weights.

use super::*;

/// G19 and G20: variables.
pub(super) fn vars(
    ctx: &mut Ctx<'_>,
    def: Json<'_>,
    member: &str,
    sg_dir: &str,
    summary: &mut GraphSummary,
) -> Result<(), Rejection> {
    let Some(entries) = def.get("var").and_then(|v| named_entries(ctx, v)) else {
        return Err(reject(
            Gate::G19,
            "Failed to parse, key: var",
            format!("{member} has no var object"),
        ));
    };
    let mut max_id: u64 = 0;
    let mut outputs = 0usize;
    for (name, var) in &entries {
        summary.var_names.insert(name.to_string());
        let at = |key: &str| format!("{member}: var {name:?}: {key}");
        let Some(kind) = var.get("type").and_then(Json::as_str) else {
            return Err(reject(
                Gate::G19,
                "Failed to parse, key: type",
                at("type missing or not a string"),
            ));
        };
        let Some(var_id) = var.get("var_id").and_then(Json::as_u64) else {
            return Err(reject(
                Gate::G19,
                "missing <var_id>",
                at("var_id missing or not an unsigned integer"),
            ));
        };
        max_id = max_id.max(var_id);
        if let Some(alignment) = var.get("alignment") {
            let a = alignment.as_u64().unwrap_or(0);
            if !a.is_power_of_two() {
                return Err(reject(
                    Gate::G19,
                    format!("alignment provided not power of 2. alignment={a}"),
                    at("alignment"),
                ));
            }
        }
        let size = var.get("size").and_then(Json::as_u64);
        let dtype = var.get("dtype").and_then(Json::as_str).map(str::to_string);
        let shape: Option<Vec<u64>> = var
            .get("shape")
            .or_else(|| var.get("internal_shape"))
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(Json::as_u64).collect());
        let Some(var_type) = VarType::parse(kind) else {
            return Err(reject(
                Gate::G19,
                format!("Unknown variable type {kind}"),
                at("type"),
            ));
        };
        match var_type {
            VarType::Input
            | VarType::Output
            | VarType::TmpBuf
            | VarType::Virtual
            | VarType::Pointer => {
                let Some(size) = size else {
                    return Err(reject(
                        Gate::G19,
                        "Failed to parse, key: size",
                        at("size missing for a sized variable"),
                    ));
                };
                if var_type == VarType::Virtual {
                    let offset = var.get("backing_variable_off").and_then(Json::as_u64);
                    summary.scratchpad.add(offset.unwrap_or(0), size);
                }
                if var_type == VarType::Pointer && size != 8 {
                    return Err(reject(
                        Gate::G19,
                        format!("Invalid pointer size {size} for {name}, must be 8"),
                        at("size"),
                    ));
                }
            }
            VarType::List => {
                let ok = var
                    .get("list")
                    .and_then(Json::as_array)
                    .is_some_and(|l| l.iter().all(|v| v.as_u64().is_some()));
                if !ok {
                    return Err(reject(
                        Gate::G19,
                        "Failed to parse, key: list",
                        at("list is not an array of unsigned integers"),
                    ));
                }
            }
            VarType::File => {
                let path = weights(ctx, *var, name, member, sg_dir)?;
                let member_size = ctx.size(&path);
                let npy = npy_header(ctx.prefix(&path), &path);
                if let Some(npy) = &npy {
                    let stated = var
                        .get("shape")
                        .and_then(Json::as_array)
                        .map(|a| a.iter().filter_map(Json::as_u64).collect::<Vec<u64>>());
                    let mut differ = Vec::new();
                    if let (Some(def), Some(file)) = (&dtype, npy_dtype(npy)) {
                        if *def != file {
                            differ.push(format!("dtype {def} but its .npy header says {file}"));
                        }
                    }
                    if let (Some(def), Some(file)) = (&stated, &npy.shape) {
                        if def != file {
                            differ.push(format!("shape {def:?} but its .npy header says {file:?}"));
                        }
                    }
                    if !differ.is_empty() {
                        ctx.warnings.push(format!(
                            "{member}: var {name:?} ({path}) has {} (the runtime reads the data as it is; what it makes of the difference is not modelled)",
                            differ.join(", ")
                        ));
                    }
                }
                let weight = WeightSummary {
                    name: name.to_string(),
                    var_id,
                    data_size: weight_data_size(ctx.prefix(&path), member_size, &path),
                    member_size,
                    size,
                    dtype: dtype.clone().or_else(|| npy_dtype(npy.as_ref()?)),
                    shape: shape.clone().or_else(|| npy?.shape),
                    member: path,
                };
                ctx.load.list(&mut summary.weights, weight);
            }
            VarType::StateBuffer
            | VarType::Remote
            | VarType::Shared
            | VarType::Sharded
            | VarType::Main
            | VarType::DgeTable => {}
        }
        let info = VarSummary {
            name: name.to_string(),
            var_id,
            size,
            dtype,
            shape,
        };
        match var_type {
            VarType::Input => ctx.load.list(&mut summary.inputs, info),
            VarType::Output => {
                outputs += 1;
                ctx.load.list(&mut summary.outputs, info);
            }
            _ => {}
        }
    }
    summary.inputs.sort_by_key(|v| v.var_id);
    summary.outputs.sort_by_key(|v| v.var_id);
    summary.weights.sort_by_key(|v| v.var_id);
    summary.vars = entries.len();
    if ctx.profile.check_var_ids && max_id.checked_add(1) != Some(entries.len() as u64) {
        return Err(reject(
            Gate::G20a,
            format!(
                "Unexpected var_ids set! max={max_id}, size={}",
                entries.len()
            ),
            format!(
                "{member}: var_ids must be dense 0..{}",
                entries.len().saturating_sub(1)
            ),
        ));
    }
    if outputs == 0 {
        return Err(reject(
            Gate::G20b,
            format!("Invalid NEFF: graph {member} has no Outputs"),
            format!("{member}: no variable has type \"output\""),
        ));
    }
    Ok(())
}

/// The `.npy` header of a weight member, from the prefix the walk keeps
/// (for display: the runtime reads only the magic and the length).
fn npy_header(prefix: Option<&[u8]>, path: &str) -> Option<neff_schema::npy::NpyHeader> {
    path.ends_with(".npy")
        .then(|| neff_schema::npy::parse_header(prefix?).ok())
        .flatten()
}

/// The header's dtype as a manifest spells it, else its raw `descr`.
fn npy_dtype(header: &neff_schema::npy::NpyHeader) -> Option<String> {
    match header.dtype() {
        Some(dtype) => Some(dtype.to_string()),
        None => header.descr.clone(),
    }
}

/// The data bytes of a weight member of `size` bytes: what follows the
/// `.npy` header (magic, version at +6, header length at +8: u16 in v1, u32
/// in v2/v3), or all of it for a raw file.
fn weight_data_size(prefix: Option<&[u8]>, size: Option<u64>, path: &str) -> Option<u64> {
    let size = size?;
    if !path.ends_with(".npy") {
        return Some(size);
    }
    let header = match prefix? {
        [_, _, _, _, _, _, 1, _, a, b, ..] => u64::from(u16::from_le_bytes([*a, *b])) + 10,
        [_, _, _, _, _, _, _, _, a, b, c, d, ..] => {
            u64::from(u32::from_le_bytes([*a, *b, *c, *d])) + 12
        }
        _ => return None,
    };
    size.checked_sub(header)
}

/// Weights (`type: "file"`): the member must exist; `.npy` must start with
/// the numpy magic. Returns the member's name.
pub(super) fn weights(
    ctx: &mut Ctx<'_>,
    var: Json<'_>,
    name: &str,
    member: &str,
    sg_dir: &str,
) -> Result<String, Rejection> {
    let Some(file) = var.get("file_name").and_then(Json::as_str) else {
        return Err(reject(
            Gate::G19,
            "Failed to parse, key: file_name",
            format!("{member}: var {name:?}: file_name missing"),
        ));
    };
    let path = in_dir(sg_dir, file);
    let Some(prefix) = ctx.prefix(&path) else {
        return Err(reject(
            Gate::G19,
            format!("Failed to load weights file {path}"),
            format!("{member}: var {name:?} names {path}, which is not in the NEFF"),
        ));
    };
    if file.ends_with(".npy") {
        let magic = match prefix {
            [a, b, ..] => u16::from_le_bytes([*a, *b]),
            _ => 0,
        };
        if magic != 0x4e93 {
            return Err(reject(
                Gate::G19,
                format!("NUMPY {path} bad header {magic:x} != 0x4e93"),
                format!("{path} does not start with the .npy magic \\x93NUMPY"),
            ));
        }
    }
    Ok(path)
}
