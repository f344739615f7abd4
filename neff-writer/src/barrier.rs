//! The barrier composer: builds a `neff_barrier_configs_t` from explicit
//! inputs, following the rules the spec documents (§6.5–6.6). Where the spec
//! marks a meaning as INFERRED or unknown, the value is an input with a
//! documented default; nothing is invented.

use neff_schema::barrier::tables::{sema, BarrierOperation, BarrierType, Fabric};
use neff_schema::barrier::{
    ApbBcast, BarrierConfigs, DeviceBarrierConfigs, HostBarrier, MAX_LEADERS, MAX_STEPS,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};

/// Everything the composer takes. JSON form: `neff barrier compose --spec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComposeInputs {
    /// Which algorithm tables apply (`default`, or `switch-v1` for the Neuron
    /// switch v1 family). HIGH·OBSERVED.
    #[serde(default)]
    pub fabric: Fabric,
    /// Host collectives mode (`encd_is_host_cc`): the leader-done semaphore is
    /// id 6 instead of 2. HIGH·OBSERVED.
    #[serde(default)]
    pub host_cc: bool,
    /// Whether the on-device 4-step barrier runs (bit 0 of +0x124). When off,
    /// only the host view (`barrier_start`, `barrier_done`) is written into the
    /// overlaid first 16 bytes; when on, the device steps are.
    #[serde(default)]
    pub execute_device_barrier: bool,
    /// The leader SPs' semaphore base addresses, 1 to 4 (`[sp+0x6820]`).
    pub leader_sema_bases: Vec<u64>,
    /// Address distance between consecutive semaphore ids of one SP (4 on
    /// Cayman's EVT_SEM windows, HIGH·OBSERVED for Cayman only).
    #[serde(default = "default_sema_stride")]
    pub sema_stride: u64,
    /// The semaphore id each step's `barrier_sema` slots point at, per step.
    /// The per-arch `get_barrier_sem_mapping` that picks it is not decoded, so
    /// this is an input; default: the leader-done id (6 under host-CC, else 2)
    /// for every step, the only id the spec ties to leader SPs (INFERRED).
    #[serde(default)]
    pub step_sema_ids: Option<[u32; MAX_STEPS]>,
    /// `m2s_val` per step (meaning unknown). Default 0.
    #[serde(default)]
    pub m2s_val: [u16; MAX_STEPS],
    /// `s2m_val` per step (meaning unknown). Default 0.
    #[serde(default)]
    pub s2m_val: [u16; MAX_STEPS],
    /// `target_sema_val` per step, for every leader slot in use. Default: the
    /// number of active table entries in the step for BARRIER_EXIT steps (a
    /// wait for every scope's arrival, INFERRED·MED) and 0 for BARRIER_ENTRY steps.
    #[serde(default)]
    pub target_sema_val: Option<[u32; MAX_STEPS]>,
    /// `host_barrier.barrier_start`. Default: leader 0's base + 6 × stride
    /// (ENCD_HOST_BARRIER_SEMA_ID0).
    #[serde(default)]
    pub host_barrier_start: Option<u64>,
    /// `host_barrier.barrier_done`. Default: leader 0's base + 7 × stride
    /// (ENCD_HOST_BARRIER_SEMA_ID1).
    #[serde(default)]
    pub host_barrier_done: Option<u64>,
    /// `dma_sync_sema[4]` addresses (at most 4; the rest are 0).
    #[serde(default)]
    pub dma_sync_semas: Vec<u64>,
    /// `dma_sync_sema_value`: what the DMA sync semaphores must reach.
    #[serde(default)]
    pub dma_sync_sema_value: u32,
    /// `dma_engines_bitmap`.
    #[serde(default)]
    pub dma_engines_bitmap: u16,
    /// `queue_id`.
    #[serde(default)]
    pub queue_id: u8,
    /// The descriptor ring base, split into `tdrbp_low`/`tdrbp_high`.
    #[serde(default)]
    pub tdrbp: u64,
    /// `desc_count`.
    #[serde(default)]
    pub desc_count: u32,
    /// `total_desc_n`.
    #[serde(default)]
    pub total_desc_n: u32,
    /// `dma_apb_bcast.m2s_tail_ptr`.
    #[serde(default)]
    pub apb_m2s_tail_ptr: u64,
    /// `dma_apb_bcast.s2m_tail_ptr`.
    #[serde(default)]
    pub apb_s2m_tail_ptr: u64,
    /// `dma_apb_bcast.mask`.
    #[serde(default)]
    pub apb_mask: u32,
    /// `start_network_proxy`.
    #[serde(default)]
    pub start_network_proxy: u64,
}

fn default_sema_stride() -> u64 {
    4
}

impl Default for ComposeInputs {
    fn default() -> Self {
        ComposeInputs {
            fabric: Fabric::Default,
            host_cc: false,
            execute_device_barrier: false,
            leader_sema_bases: Vec::new(),
            sema_stride: default_sema_stride(),
            step_sema_ids: None,
            m2s_val: [0; MAX_STEPS],
            s2m_val: [0; MAX_STEPS],
            target_sema_val: None,
            host_barrier_start: None,
            host_barrier_done: None,
            dma_sync_semas: Vec::new(),
            dma_sync_sema_value: 0,
            dma_engines_bitmap: 0,
            queue_id: 0,
            tdrbp: 0,
            desc_count: 0,
            total_desc_n: 0,
            apb_m2s_tail_ptr: 0,
            apb_s2m_tail_ptr: 0,
            apb_mask: 0,
            start_network_proxy: 0,
        }
    }
}

/// What one step does, from the fabric's table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepPlan {
    /// The step (0–3).
    pub step: usize,
    /// The barrier types active in the step, in table order.
    pub types: Vec<BarrierType>,
    /// Their operation (every entry of a step shares it).
    pub operation: BarrierOperation,
    /// The semaphore id the step's slots point at.
    pub sema_id: u32,
    /// The `target_sema_val` written for each leader in use.
    pub target: u32,
}

/// The composed config and how it was derived.
#[derive(Debug, Clone)]
pub struct Composed {
    /// The 296-byte config.
    pub configs: BarrierConfigs,
    /// The step plan (present whether or not the device barrier runs).
    pub plan: Vec<StepPlan>,
    /// The leader-done semaphore id (6 under host-CC, else 2).
    pub leader_done_sema_id: u32,
}

fn address(base: u64, leader: usize, id: u32, stride: u64) -> Result<u64, Error> {
    stride
        .checked_mul(u64::from(id))
        .and_then(|off| base.checked_add(off))
        .ok_or_else(|| {
            let message = format!("semaphore address of leader {leader} (base {base:#x} + {id} × {stride:#x}) overflows 64 bits");
            Error::new(ErrorKind::Barrier, message).at_key(format!("leader_sema_bases[{leader}]"))
        })
}

/// Composes a barrier config.
///
/// Rules (HIGH·OBSERVED unless noted): each step's acting barrier types and
/// whether they ENTER or EXIT come from the fabric's algorithm table and step
/// sizes; the leader-done semaphore is id 6 under host-CC, else 2; the host
/// barrier uses ids 6 (`barrier_start`) and 7 (`barrier_done`) of leader 0
/// (INFERRED·MED: which SP hosts them). Device step slot `l` points at leader
/// `l`'s semaphore `step_sema_ids[step]`; slots past the last leader stay 0.
pub fn compose(inputs: &ComposeInputs) -> Result<Composed, Error> {
    let leaders = &inputs.leader_sema_bases;
    if leaders.is_empty() || leaders.len() > MAX_LEADERS {
        let message = format!(
            "leader_sema_bases has {} entries; a barrier has 1 to {MAX_LEADERS} leader SPs",
            leaders.len()
        );
        return Err(Error::new(ErrorKind::Barrier, message).at_key("leader_sema_bases"));
    }
    if inputs.dma_sync_semas.len() > 4 {
        let message = format!(
            "dma_sync_semas has {} entries; the struct holds 4",
            inputs.dma_sync_semas.len()
        );
        return Err(Error::new(ErrorKind::Barrier, message).at_key("dma_sync_semas"));
    }
    let stride = inputs.sema_stride;
    let leader_done = sema::leader_done(inputs.host_cc);
    let sema_ids = inputs.step_sema_ids.unwrap_or([leader_done; MAX_STEPS]);
    let mut plan = Vec::new();
    let mut device = DeviceBarrierConfigs::default();
    for (step, config) in device.steps.iter_mut().enumerate() {
        let active = inputs.fabric.active(step);
        let operation = active.first().map_or(BarrierOperation::OpTypeMax, |e| e.1);
        let target = match (inputs.target_sema_val, operation) {
            (Some(t), _) => t[step],
            (None, BarrierOperation::Exit) => active.len() as u32,
            (None, _) => 0,
        };
        config.m2s_val = inputs.m2s_val[step];
        config.s2m_val = inputs.s2m_val[step];
        for (l, &base) in leaders.iter().enumerate() {
            config.barrier_sema[l] = address(base, l, sema_ids[step], stride)?;
            config.target_sema_val[l] = target;
        }
        plan.push(StepPlan {
            step,
            types: active.iter().map(|e| e.0).collect(),
            operation,
            sema_id: sema_ids[step],
            target,
        });
    }
    for (slot, &addr) in device.dma_sync_sema.iter_mut().zip(&inputs.dma_sync_semas) {
        *slot = addr;
    }
    device.dma_apb_bcast = ApbBcast {
        m2s_tail_ptr: inputs.apb_m2s_tail_ptr,
        s2m_tail_ptr: inputs.apb_s2m_tail_ptr,
        mask: inputs.apb_mask,
    };
    device.start_network_proxy = inputs.start_network_proxy;
    device.dma_sync_sema_value = inputs.dma_sync_sema_value;
    device.tdrbp_low = inputs.tdrbp as u32;
    device.tdrbp_high = (inputs.tdrbp >> 32) as u32;
    device.desc_count = inputs.desc_count;
    device.total_desc_n = inputs.total_desc_n;
    device.dma_engines_bitmap = inputs.dma_engines_bitmap;
    device.queue_id = inputs.queue_id;

    let mut configs = BarrierConfigs::default();
    if !inputs.execute_device_barrier {
        // The steps are not run; the overlaid first bytes carry the host view.
        device.steps = Default::default();
    }
    configs.set_device_barrier(&device);
    if !inputs.execute_device_barrier {
        let base = leaders[0];
        let start = match inputs.host_barrier_start {
            Some(a) => a,
            None => address(base, 0, sema::HOST_BARRIER0, stride)?,
        };
        let done = match inputs.host_barrier_done {
            Some(a) => a,
            None => address(base, 0, sema::HOST_BARRIER1, stride)?,
        };
        configs.set_host_barrier(&HostBarrier {
            barrier_start: start,
            barrier_done: done,
        });
    }
    configs.set_execute_device_barrier(inputs.execute_device_barrier);
    Ok(Composed {
        configs,
        plan,
        leader_done_sema_id: leader_done,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use BarrierType::*;

    fn inputs(fabric: Fabric, host_cc: bool, leaders: usize, device: bool) -> ComposeInputs {
        ComposeInputs {
            fabric,
            host_cc,
            execute_device_barrier: device,
            leader_sema_bases: (0..leaders as u64)
                .map(|l| 0x0082_8000_0000 + l * 0x0001_0000)
                .collect(),
            ..ComposeInputs::default()
        }
    }

    #[test]
    fn device_barrier_default_fabric_by_hand() {
        for leaders in 1..=4 {
            for host_cc in [false, true] {
                let c = compose(&inputs(Fabric::Default, host_cc, leaders, true)).unwrap();
                let id = if host_cc { 6 } else { 2 };
                assert_eq!(c.leader_done_sema_id, id);
                let d = c.configs.device_barrier();
                assert!(c.configs.execute_device_barrier());
                let expected_types = [
                    vec![IntraChip],
                    vec![IntraPod, InterChip, InterChipRingLocal, InterChipRingRemote],
                    vec![IntraPod, InterChip, InterChipRingLocal, InterChipRingRemote],
                    vec![IntraChip],
                ];
                let expected_ops = [
                    BarrierOperation::Entry,
                    BarrierOperation::Entry,
                    BarrierOperation::Exit,
                    BarrierOperation::Exit,
                ];
                let expected_targets = [0, 0, 4, 1];
                for s in 0..4 {
                    assert_eq!(c.plan[s].types, expected_types[s]);
                    assert_eq!(c.plan[s].operation, expected_ops[s]);
                    for l in 0..4 {
                        let want_addr = if l < leaders {
                            0x0082_8000_0000 + l as u64 * 0x0001_0000 + 4 * id as u64
                        } else {
                            0
                        };
                        let want_target = if l < leaders { expected_targets[s] } else { 0 };
                        assert_eq!(d.steps[s].barrier_sema[l], want_addr, "step {s} leader {l}");
                        assert_eq!(
                            d.steps[s].target_sema_val[l], want_target,
                            "step {s} leader {l}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn switch_family_uses_rack_scopes() {
        let c = compose(&inputs(Fabric::SwitchV1, false, 2, true)).unwrap();
        assert_eq!(c.plan[1].types, vec![IntraRack, InterRack]);
        assert_eq!(c.plan[2].target, 2);
        assert_eq!(
            c.configs.device_barrier().steps[2].target_sema_val,
            [2, 2, 0, 0]
        );
    }

    #[test]
    fn host_only_writes_the_host_view() {
        for host_cc in [false, true] {
            let c = compose(&inputs(Fabric::Default, host_cc, 3, false)).unwrap();
            assert!(!c.configs.execute_device_barrier());
            let h = c.configs.host_barrier();
            assert_eq!(h.barrier_start, 0x0082_8000_0000 + 4 * 6);
            assert_eq!(h.barrier_done, 0x0082_8000_0000 + 4 * 7);
            assert!(
                c.configs.as_bytes()[16..0xD0].iter().all(|&b| b == 0),
                "steps not run"
            );
        }
    }

    #[test]
    fn the_other_fields_and_limits() {
        let mut i = inputs(Fabric::Default, false, 1, true);
        i.tdrbp = 0x1234_5678_9ABC_DEF0;
        i.dma_sync_semas = vec![1, 2];
        i.dma_sync_sema_value = 9;
        i.queue_id = 3;
        i.dma_engines_bitmap = 0xF0;
        i.m2s_val = [1, 2, 3, 4];
        i.target_sema_val = Some([5, 6, 7, 8]);
        i.step_sema_ids = Some([0, 2, 3, 1]);
        let c = compose(&i).unwrap();
        let d = c.configs.device_barrier();
        assert_eq!((d.tdrbp_low, d.tdrbp_high), (0x9ABC_DEF0, 0x1234_5678));
        assert_eq!(d.tdrbp(), 0x1234_5678_9ABC_DEF0);
        assert_eq!(d.dma_sync_sema, [1, 2, 0, 0]);
        assert_eq!(
            (d.dma_sync_sema_value, d.queue_id, d.dma_engines_bitmap),
            (9, 3, 0xF0)
        );
        assert_eq!(d.steps.map(|s| s.m2s_val), [1, 2, 3, 4]);
        assert_eq!(d.steps.map(|s| s.target_sema_val[0]), [5, 6, 7, 8]);
        assert_eq!(d.steps[3].barrier_sema[0], 0x0082_8000_0000 + 4);
        let five = compose(&inputs(Fabric::Default, false, 5, true)).unwrap_err();
        assert_eq!(
            five.to_string(),
            "leader_sema_bases has 5 entries; a barrier has 1 to 4 leader SPs"
        );
        let none = compose(&inputs(Fabric::Default, false, 0, true)).unwrap_err();
        assert_eq!(none.location().key.as_deref(), Some("leader_sema_bases"));
        let mut big = inputs(Fabric::Default, false, 1, true);
        big.leader_sema_bases = vec![u64::MAX];
        let overflow = compose(&big).unwrap_err();
        assert_eq!(overflow.kind(), ErrorKind::Barrier);
        assert!(
            overflow.to_string().contains("overflows 64 bits"),
            "{overflow}"
        );
    }
}
