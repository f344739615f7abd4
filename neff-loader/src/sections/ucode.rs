//! G24: GPSIMD ucode libraries.

use super::*;

/// G24: GPSIMD ucode libraries (`parse_one_ucode_lib`).
pub(super) fn ucode_libs(
    ctx: &mut Ctx<'_>,
    def: Json<'_>,
    member: &str,
    sg_dir: &str,
    summary: &mut GraphSummary,
    staging: &mut GraphStaging,
) -> Result<(), Rejection> {
    let Some(libs) = def.get("ucode_lib").and_then(Json::as_array) else {
        return Ok(());
    };
    if !libs.is_empty() {
        ctx.warnings.push(
            "Loading ucode libs specified in ucode_lib.json from the NEFF. This interface is not yet entirely stable - FUTURE API CHANGES ARE POSSIBLE!".to_string(),
        );
    }
    let abi_major = ctx.profile.ucode_abi_major();
    let mut names = BTreeSet::new();
    for (i, lib) in libs.iter().enumerate() {
        let at = format!("{member}: ucode_lib[{i}]");
        let Some(library) = lib.get("library").and_then(Json::as_str) else {
            return Err(reject(
                Gate::G24f,
                "Failed to parse, key: library",
                format!("{at}: library missing"),
            ));
        };
        let Some(version) = lib.get("ulib_to_ucode_version").and_then(Json::as_str) else {
            return Err(reject(
                Gate::G24a,
                "Missing GPSIMD lib version!",
                format!("{at} ({library}): no ulib_to_ucode_version"),
            ));
        };
        let major = leading_int(version.split('.').next().unwrap_or_default());
        if major.is_none() {
            ctx.warnings.push(format!(
                "GPSIMD lib: Failed to parse GPSIMD lib version string! Version: {version}"
            ));
        }
        if major.is_none() || major != abi_major {
            return Err(reject(
                Gate::G24b,
                "Mismatch between GPSIMD lib version and NRT version!",
                format!(
                    "{at} ({library}): version {version} has {}; runtime ucode ABI {} (then: invalid GPSIMD lib)",
                    major.map_or_else(|| "no numeric major".to_string(), |m| format!("major {m}")),
                    ctx.profile.ucode_abi
                ),
            ));
        }
        let cpu_id = lib.get("cpu_id").and_then(Json::as_u64).unwrap_or(0);
        if cpu_id as u8 != 0 {
            return Err(reject(
                Gate::G24d,
                "/opt/workspace/KaenaRuntime/kelf/kelf2kbin.cpp:1681: NRT_STATUS parse_one_ucode_lib(const neff_t*, mla_resources&, const std::string&, simdjson::dom::element&): Assertion `cpu_id == 0' failed.",
                format!("{at} ({library}): cpu_id {cpu_id}; the runtime asserts and aborts"),
            ));
        }
        let total_cpus = lib.get("total_cpus").and_then(Json::as_u64).unwrap_or(0);
        let narrowed = total_cpus as u8;
        if narrowed > 1 && narrowed != 8 {
            return Err(reject(
                Gate::G24c,
                format!("UCode Library {library} has invalid number of total cpus {narrowed}"),
                format!("{at}: total_cpus must be 0, 1 or 8"),
            ));
        }
        if !names.insert(library.to_string()) {
            return Err(reject(
                Gate::G24e,
                format!("UCode Library {library} has already been added"),
                format!("{at}: the library name repeats"),
            ));
        }
        let path = in_dir(sg_dir, library);
        if !ctx.exists(&path) {
            return Err(reject(
                Gate::G24f,
                format!("Failed to load ucode library {path}"),
                format!("{at} names {path}, which is not in the NEFF"),
            ));
        }
        let mut functions = Vec::new();
        for f in lib
            .get("functions")
            .map(Json::items)
            .unwrap_or_default()
            .iter()
        {
            let name = f.get("name").and_then(Json::as_str).unwrap_or_default();
            staging.ucode_functions += 1;
            if staging.long_function.is_none() && name.chars().count() > MAX_FUNCTION_NAME {
                staging.long_function = Some(name.to_string());
            }
            ctx.load.list(&mut functions, name.to_string());
        }
        let summary_lib = UcodeLibSummary {
            library: library.to_string(),
            version: Some(version.to_string()),
            cpu_id,
            total_cpus,
            functions,
        };
        ctx.load.list(&mut summary.ucode_libs, summary_lib);
    }
    Ok(())
}

/// `std::stoi` on the text: optional spaces and sign, then digits.
pub(super) fn leading_int(text: &str) -> Option<i64> {
    let t = text.trim_start();
    let (sign, digits) = match t.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, t.strip_prefix('+').unwrap_or(t)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse::<i64>().ok().map(|v| sign * v)
}
