//! G27: the engines and the members their JSON names.

use super::*;

/// Largest instruction stream the runtime accepts.
const MAX_INSTR: u64 = 0xFFFF_FFFF;

/// The `<eng>.json` file def.json names for each engine of [`Engine::ALL`].
pub(super) type EngineFiles = [Option<String>; 5];

/// G27: the five engines.
pub(super) fn engines(
    ctx: &mut Ctx<'_>,
    files: &EngineFiles,
    member: &str,
    sg_dir: &str,
    summary: &mut GraphSummary,
) -> Result<(), Rejection> {
    for (engine, file) in Engine::ALL.map(Engine::as_str).into_iter().zip(files) {
        let mut info = EngineSummary {
            engine: engine.to_string(),
            json: None,
            instr: None,
            instr_size: None,
            dma_blocks: 0,
        };
        let Some(file) = file else {
            ctx.warnings.push(format!(
                "Engine {engine} not found in NEFF {}, using empty placeholder",
                ctx.neff_name()
            ));
            summary.engines.push(info);
            continue;
        };
        let eng_member = in_dir(sg_dir, file);
        info.json = Some(eng_member.clone());
        let Some(parsed) = ctx.json(&eng_member, Gate::G27)? else {
            return Err(reject(
                Gate::G27,
                format!("Failed to find engine file {eng_member} in NEFF"),
                format!("{member}: {engine} names {eng_member}, which is not in the NEFF"),
            ));
        };
        let doc = parsed.root();
        info.dma_blocks = dma_blocks(ctx, doc.get("dma"), &eng_member, "dma", summary)?;
        let Some(instr) = doc.get("instr").and_then(Json::as_str) else {
            return Err(reject(
                Gate::G27,
                format!("missing <instr> in {eng_member}"),
                format!("{eng_member} has no instr key"),
            ));
        };
        let instr_member = in_dir(sg_dir, instr);
        let Some(size) = ctx.size(&instr_member) else {
            return Err(reject(
                Gate::G27,
                format!("Failed to load instruction file {instr_member}"),
                format!("{eng_member}: instr names {instr_member}, which is not in the NEFF"),
            ));
        };
        if size > MAX_INSTR {
            return Err(reject(
                Gate::G27,
                format!("Instruction size {size} for {instr_member} exceeds maximum supported size {MAX_INSTR}"),
                format!("{instr_member} is {size} bytes"),
            ));
        }
        engine_references(ctx, doc, &eng_member, sg_dir);
        info.instr = Some(instr_member);
        info.instr_size = Some(size);
        summary.engines.push(info);
    }
    Ok(())
}

/// Members an engine JSON names that the loader does not open: the
/// activation tables (`act_info` and the sets of `activation_function_sets`)
/// and the DVE tables. Recorded as referenced; warned about when absent.
pub(super) fn engine_references(ctx: &mut Ctx<'_>, doc: Json<'_>, eng_member: &str, sg_dir: &str) {
    let act_info = doc
        .get("act_info")
        .and_then(Json::as_str)
        .map(|name| in_dir(sg_dir, name));
    if let Some(info) = &act_info {
        ctx.tolerated_reference(eng_member, "act_info", info);
    }
    if let Some(sets) = doc.get("activation_function_sets").and_then(Json::as_array) {
        let info_doc = act_info
            .as_deref()
            .and_then(|m| act_info_doc(ctx, m, Budget::full().less(doc)));
        let info_doc = info_doc.as_ref().map(Doc::root);
        for (i, set) in sets.iter().enumerate() {
            let Some(set_name) = set.as_str() else {
                ctx.warnings.push(format!(
                    "{eng_member}: activation_function_sets[{i}] is not a set name"
                ));
                continue;
            };
            let Some(info_doc) = info_doc else {
                // No act_info.json to resolve through (already warned about):
                // the compilers' naming, `<set>.json`, `<set>_bkt.bin`, `<set>_ctrl.bin`.
                for suffix in [".json", "_bkt.bin", "_ctrl.bin"] {
                    ctx.exists(&in_dir(sg_dir, &format!("{set_name}{suffix}")));
                }
                continue;
            };
            let entry = info_doc
                .get("act_func_sets")
                .and_then(Json::as_array)
                .and_then(|all| {
                    all.iter()
                        .find(|s| s.get("name").and_then(Json::as_str) == Some(set_name))
                });
            let Some(entry) = entry else {
                let info = act_info.as_deref().unwrap_or("act_info");
                ctx.warnings.push(format!(
                    "{eng_member}: activation function set {set_name:?} is not listed in {info}'s act_func_sets"
                ));
                continue;
            };
            // act_info.json names its file keys in `pwp_file_keys`.
            let file_keys: Vec<&str> = match info_doc.get("pwp_file_keys").and_then(Json::as_array)
            {
                Some(keys) => keys.iter().filter_map(Json::as_str).collect(),
                None => ACT_SET_FILE_KEYS.to_vec(),
            };
            for key in file_keys {
                if let Some(file) = entry.get(key).and_then(Json::as_str) {
                    ctx.tolerated_reference(
                        eng_member,
                        format_args!("activation_function_sets[{i}] ({set_name}).{key}"),
                        &in_dir(sg_dir, file),
                    );
                }
            }
        }
    }
    // `dve_tables`: an array of table objects (real compilers), or one object.
    let tables: Vec<Object<'_>> = match doc.get("dve_tables") {
        Some(t) if t.is_array() => t.items().iter().filter_map(Json::as_object).collect(),
        Some(t) => t.as_object().into_iter().collect(),
        None => Vec::new(),
    };
    for (i, table) in tables.iter().enumerate() {
        for (key, name) in table.iter() {
            if let Some(name) = name.as_str() {
                ctx.tolerated_reference(
                    eng_member,
                    format_args!("dve_tables[{i}].{key}"),
                    &in_dir(sg_dir, name),
                );
            }
        }
    }
}

/// The keys of an `act_func_sets` entry of act_info.json that name members,
/// when act_info.json has no `pwp_file_keys`.
const ACT_SET_FILE_KEYS: [&str; 3] = ["bkt_bin", "ctrl_bin", "profile_json"];

/// act_info.json parsed within `budget`, when stored and valid JSON (the
/// loader never reads it, so a bad one is a warning, not a rejection).
pub(super) fn act_info_doc(ctx: &mut Ctx<'_>, member: &str, budget: Budget) -> Option<Doc> {
    match ctx.read_json(member, budget) {
        Ok(parsed) => parsed.map(|(doc, _)| doc),
        Err(JsonError::Parse(e)) => {
            ctx.warnings.push(format!(
                "{member} is not valid JSON ({e}); its activation sets are not resolved"
            ));
            None
        }
        Err(e) => {
            ctx.warnings.push(format!(
                "{member} could not be read ({}); its activation sets are not resolved",
                e.rejection(Gate::G27, member).message
            ));
            None
        }
    }
}
