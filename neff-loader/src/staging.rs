//! Tier 3b: staging checks, G30–G31 (`kbl_model_add`, `ucode_stage_libs`;
//! spec §4.6, §4.7, §5.4).

use neff_schema::Arch;

use crate::access::Ctx;
use crate::gate::{Gate, Rejection};

/// Functions the device's global ucode table holds.
const MAX_TABLE_FUNCTIONS: usize = 97;
/// Longest ucode function name.
pub const MAX_FUNCTION_NAME: usize = 64;
/// Functions one core may load.
const MAX_FUNCTIONS_PER_CORE: usize = 28;

/// What staging needs from one graph (a few numbers, whatever its size).
#[derive(Debug, Clone, Default)]
pub struct GraphStaging {
    /// The first EVTACCEL carveout G30 refuses on Cayman (see
    /// [`evtaccel_problem`]): (offset, size, base_partition,
    /// partitions).
    pub evtaccel: Option<(u64, u64, u64, u64)>,
    /// Number of ucode functions of all the graph's libraries.
    pub ucode_functions: usize,
    /// The first function name G31 finds too long.
    pub long_function: Option<String>,
}

/// Runs G30 then G31.
pub fn run(ctx: &mut Ctx<'_>, graphs: &[GraphStaging]) -> Result<(), Rejection> {
    evtaccel(ctx, graphs)?;
    ucode(graphs)
}

/// G30: on a Cayman instance, an EVTACCEL carveout must be exactly
/// partitions 0..128 at the fixed offset, 8 bytes.
fn evtaccel(ctx: &mut Ctx<'_>, graphs: &[GraphStaging]) -> Result<(), Rejection> {
    if ctx.profile.instance_arch != Arch::Cayman {
        return Ok(());
    }
    let fixed = ctx.profile.evtaccel_offset;
    for carveout in graphs.iter().filter_map(|g| g.evtaccel) {
        let (offset, size, start, count) = carveout;
        if let Some(message) = evtaccel_problem(carveout, fixed) {
            return Err(Rejection::new(Gate::G30, message).detail(format!(
                "then: Failed to verify Event Accel State Buffer carveout (carveout offset {offset:#x}, size {size}, base_partition {start}, partitions {count}; the required offset {fixed:#x} is INFERRED)"
            )));
        }
    }
    Ok(())
}

/// Why G30 refuses an EVTACCEL carveout (offset, size, base_partition,
/// partitions) on a Cayman instance whose fixed offset is `fixed`, if it does.
pub fn evtaccel_problem(carveout: (u64, u64, u64, u64), fixed: u64) -> Option<String> {
    let (offset, size, start, count) = carveout;
    if start != 0 {
        Some(format!(
            "Event Accel carveout SB partition must start at 0. Got {start}"
        ))
    } else if count != 128 {
        Some(format!(
            "Event Accel carveout SB partition count must be 128. Got {count}"
        ))
    } else if offset != fixed {
        Some(format!(
            "Event Accel carveout SB partition offset must start at {fixed:#x}. Got {offset:#x}"
        ))
    } else if size != 8 {
        Some(format!(
            "Event Accel carveout SB size must be 8. Got {size}"
        ))
    } else {
        None
    }
}

/// G31: the ucode staging caps. Each graph is staged on its own core; the
/// device table holds every graph's functions.
fn ucode(graphs: &[GraphStaging]) -> Result<(), Rejection> {
    let mut table = 0usize;
    for (core, graph) in graphs.iter().enumerate() {
        if let Some(name) = &graph.long_function {
            return Err(Rejection::new(
                Gate::G31,
                format!(
                    "ucode function name ({name}) is too long.  Max length = {MAX_FUNCTION_NAME}"
                ),
            )
            .detail(format!("the name has {} characters", name.chars().count())));
        }
        table += graph.ucode_functions;
        if table > MAX_TABLE_FUNCTIONS {
            return Err(Rejection::new(
                Gate::G31,
                format!("too many ucode functions in this table.  Max is {MAX_TABLE_FUNCTIONS}. Add support for mid-neff reload?"),
            )
            .detail(format!("{table} functions across the first {} graphs", core + 1)));
        }
        let per_core = graph.ucode_functions;
        if per_core > MAX_FUNCTIONS_PER_CORE {
            return Err(Rejection::new(
                Gate::G31,
                format!("Number of ucode functions: {per_core} per core exceeded the maximum allowed {MAX_FUNCTIONS_PER_CORE}"),
            )
            .detail(format!("graph {core} has {per_core} ucode functions")));
        }
    }
    Ok(())
}
