//! G21: DMA queues.

use super::*;

/// Largest number of semaphores per queue set.
const MAX_QUEUE_SEMAPHORES: usize = 32;

/// Most queues in one queue set (`num_queues`) by AWS's def.json documentation.
const MAX_QUEUES_PER_SET: u64 = 16;

/// G21: DMA queues.
pub(super) fn queues(
    ctx: &mut Ctx<'_>,
    def: Json<'_>,
    member: &str,
    summary: &mut GraphSummary,
    act_load_queues: &mut usize,
) -> Result<(), Rejection> {
    let Some(section) = def.get("dma_queue") else {
        return Ok(());
    };
    let Some(entries) = named_entries(ctx, section) else {
        return Err(reject(
            Gate::G21b,
            format!("missing <type> in {member}"),
            format!("{member}: dma_queue is not an object"),
        ));
    };
    for (name, q) in entries {
        // `owner` is optional (absent on neuron-cc 1.15 `pinned` queues, spec
        // §11.4); one that is present must name an engine.
        let owner = match q.get("owner") {
            None => "",
            Some(o) => {
                let text = o.as_str().unwrap_or_default();
                if Engine::parse_runtime(text).is_none() {
                    return Err(reject(
                        Gate::G21a,
                        format!("Invalid owner '{text}' for DMA queue {name}"),
                        format!(
                            "{member}: dma_queue {name:?}: owner {o} must be one of pe, act, pool, dve, sp (or absent)"
                        ),
                    ));
                }
                text
            }
        };
        let Some(kind) = q.get("type").and_then(Json::as_str) else {
            return Err(reject(
                Gate::G21b,
                format!("missing <type> in {name}"),
                format!("{member}: dma_queue {name:?} has no type"),
            ));
        };
        let set_label = match QueueType::parse(kind) {
            Some(QueueType::In) => Some("input"),
            Some(QueueType::Out) => Some("output"),
            Some(QueueType::EmbeddingUpdate) => Some("embedding update"),
            Some(QueueType::Data | QueueType::ActLoad | QueueType::Dynamic) => None,
            None => {
                let known: Vec<&str> = QueueType::ALL.iter().map(|t| t.as_str()).collect();
                return Err(reject(
                    Gate::G21b,
                    format!("Invalid DMA queue type '{kind}' for {name}"),
                    format!(
                        "{member}: dma_queue {name:?}: type must be one of {}",
                        known.join(", ")
                    ),
                ));
            }
        };
        // Queue-set instances are a `queue_instances` list of strings; refused
        // on in/out/embedding_update queues. `num_queues` (the queues of the
        // set, up to 16) is allowed on every type (spec §11.4, §11.5).
        let listed = q
            .get("queue_instances")
            .and_then(Json::as_array)
            .map_or(0, Array::len);
        if let (Some(label), true) = (set_label, listed > 0) {
            return Err(reject(
                Gate::G21c,
                format!("Invalid Neff: Queue set instances are not supported for {label} queues ({name})"),
                format!("{member}: dma_queue {name:?} lists {listed} queue_instances"),
            ));
        }
        let instances = q.get("num_queues").and_then(Json::as_u64).unwrap_or(1);
        if instances > MAX_QUEUES_PER_SET {
            ctx.warnings.push(format!(
                "{member}: dma_queue {name:?}: num_queues {instances} is above {MAX_QUEUES_PER_SET}, the most AWS's def.json documentation allows"
            ));
        }
        let semaphores = match (q.get("semaphore_set"), q.get("semaphore")) {
            (Some(set), _) if set.is_array() => set.items().len(),
            (_, Some(_)) => 1,
            _ => 0,
        };
        if semaphores > MAX_QUEUE_SEMAPHORES {
            return Err(reject(
                Gate::G21d,
                format!("Runtime supports maximum of {MAX_QUEUE_SEMAPHORES} semaphores per queue set, found: {semaphores}"),
                format!("{member}: dma_queue {name:?}"),
            ));
        }
        if kind == "act_load" {
            *act_load_queues += 1;
            if *act_load_queues > 1 || instances != 1 {
                return Err(reject(
                    Gate::G21d,
                    format!("Invalid Neff: only one act_load queue with num_queues 1 is supported ({name})"),
                    format!("{member}: dma_queue {name:?}: a NEFF may have one act_load queue, with one instance"),
                ));
            }
        }
        let queue = QueueSummary {
            name: name.to_string(),
            owner: owner.to_string(),
            kind: kind.to_string(),
            semaphores,
        };
        ctx.load.list(&mut summary.queues, queue);
    }
    Ok(())
}
