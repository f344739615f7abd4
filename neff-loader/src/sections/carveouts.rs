//! G25: state-buffer carveouts.

use super::*;
use neff_schema::manifest::def_json::Carveout;

/// G25: state-buffer carveouts.
pub(super) fn carveouts(
    ctx: &mut Ctx<'_>,
    def: Json<'_>,
    member: &str,
    resolved: Arch,
    summary: &mut GraphSummary,
    staging: &mut GraphStaging,
) -> Result<(), Rejection> {
    const FATAL: &str = "Missing or corrupted runtime_statebuffer_reservation field in def.json and NEURON_RT_ALLOW_LEGACY_NEFF=1 is not set. Potentially a legacy neff without proper compiler support";
    let entries = def
        .get("runtime_statebuffer_reservation")
        .and_then(Json::as_array);
    let parsed: Option<Vec<Carveout>> = entries
        .map(|e| e.iter().map(carveout).collect())
        .and_then(|v: Vec<_>| v.into_iter().collect());
    // A wrong type is checked before the other fields, as the parser reads `type` first.
    if let Some(list) = entries {
        for (i, e) in list.iter().enumerate() {
            if let Some(kind) = e.get("type").and_then(Json::as_str) {
                if kind != "evtaccel" {
                    return Err(reject(
                        Gate::G25a,
                        format!("Invalid runtime_statebuffer_reservation type {kind}"),
                        format!("{member}: runtime_statebuffer_reservation[{i}].type must be \"evtaccel\""),
                    ));
                }
            }
        }
    }
    let Some(list) = parsed else {
        let what = if entries.is_none() {
            "missing or not an array"
        } else {
            "an entry lacks type, offset, size, base_partition or partitions"
        };
        // Only here does the outcome depend on the arch the target resolved to.
        ctx.arch_dependent = true;
        if resolved != Arch::Cayman {
            if def.get("runtime_statebuffer_reservation").is_some() {
                ctx.warnings.push(format!(
                    "{member}: runtime_statebuffer_reservation is {what}; ignored off Cayman"
                ));
            }
            return Ok(());
        }
        if ctx.profile.allow_legacy_neff {
            ctx.warnings.push(format!("{member}: runtime_statebuffer_reservation is {what}; loading anyway because NEURON_RT_ALLOW_LEGACY_NEFF=1"));
            return Ok(());
        }
        return Err(reject(Gate::G25b, FATAL, format!("{member}: runtime_statebuffer_reservation is {what}, and the target resolves to cayman")));
    };
    for c in list {
        let carveout = (c.offset, c.size, c.base_partition, c.partitions);
        if staging.evtaccel.is_none()
            && evtaccel_problem(carveout, ctx.profile.evtaccel_offset).is_some()
        {
            staging.evtaccel = Some(carveout);
        }
        ctx.load.list(&mut summary.carveouts, c);
    }
    Ok(())
}

pub(super) fn carveout(e: Json<'_>) -> Option<Carveout> {
    let num = |k: &str| e.get(k).and_then(Json::as_u64);
    Some(Carveout {
        kind: e.get("type")?.as_str()?.to_string(),
        offset: num("offset")?,
        size: num("size")?,
        base_partition: num("base_partition")?,
        partitions: num("partitions")?,
        extra: Default::default(),
    })
}
