//! The runtime's 4-step barrier algorithm tables (libnrt `.rodata`, spec §6.5)
//! and the TOP_SP semaphore ids (§6.6). All HIGH·OBSERVED.

use std::fmt;

use serde::Serialize;

/// `barrier_type_t`: the scope a barrier entry synchronises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BarrierType {
    /// `BARRIER_INTRA_CHIP` = 0.
    IntraChip = 0,
    /// `BARRIER_INTRA_POD` = 1.
    IntraPod = 1,
    /// `BARRIER_INTER_CHIP` = 2.
    InterChip = 2,
    /// `BARRIER_INTER_CHIP_RING_LOCAL` = 3.
    InterChipRingLocal = 3,
    /// `BARRIER_INTER_CHIP_RING_REMOTE` = 4.
    InterChipRingRemote = 4,
    /// `BARRIER_INTRA_RACK` = 5.
    IntraRack = 5,
    /// `BARRIER_INTER_RACK` = 6.
    InterRack = 6,
    /// `BARRIER_TYPE_MAX` = 7 (the padding of unused table slots).
    TypeMax = 7,
}

impl BarrierType {
    /// Every value, in order.
    pub const ALL: [BarrierType; 8] = [
        BarrierType::IntraChip,
        BarrierType::IntraPod,
        BarrierType::InterChip,
        BarrierType::InterChipRingLocal,
        BarrierType::InterChipRingRemote,
        BarrierType::IntraRack,
        BarrierType::InterRack,
        BarrierType::TypeMax,
    ];

    /// The value with this number.
    pub fn from_u32(v: u32) -> Option<BarrierType> {
        BarrierType::ALL.get(v as usize).copied()
    }

    /// The runtime's enumerator name, e.g. `BARRIER_INTRA_CHIP`.
    pub fn name(self) -> &'static str {
        match self {
            BarrierType::IntraChip => "BARRIER_INTRA_CHIP",
            BarrierType::IntraPod => "BARRIER_INTRA_POD",
            BarrierType::InterChip => "BARRIER_INTER_CHIP",
            BarrierType::InterChipRingLocal => "BARRIER_INTER_CHIP_RING_LOCAL",
            BarrierType::InterChipRingRemote => "BARRIER_INTER_CHIP_RING_REMOTE",
            BarrierType::IntraRack => "BARRIER_INTRA_RACK",
            BarrierType::InterRack => "BARRIER_INTER_RACK",
            BarrierType::TypeMax => "BARRIER_TYPE_MAX",
        }
    }
}

impl fmt::Display for BarrierType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `barrier_operation_t`: what a step does for a barrier type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BarrierOperation {
    /// `BARRIER_ENTRY` = 0 (arrive; lowered to a semaphore increment, INFERRED·MED-HIGH).
    Entry = 0,
    /// `BARRIER_EXIT` = 1 (release; lowered to wait-`>=`-and-decrement, INFERRED·MED-HIGH).
    Exit = 1,
    /// `BARRIER_OP_TYPE_MAX` = 2 (the padding of unused table slots).
    OpTypeMax = 2,
}

impl BarrierOperation {
    /// The runtime's enumerator name.
    pub fn name(self) -> &'static str {
        match self {
            BarrierOperation::Entry => "BARRIER_ENTRY",
            BarrierOperation::Exit => "BARRIER_EXIT",
            BarrierOperation::OpTypeMax => "BARRIER_OP_TYPE_MAX",
        }
    }
}

/// Which table pair the runtime picks (`nrt_is_neuron_switch_v1_family`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Fabric {
    /// The default fabric: step sizes {1,4,4,1}.
    #[default]
    Default,
    /// The Neuron switch v1 family: step sizes {1,2,2,1}.
    SwitchV1,
}

/// One table slot: `{u32 type, u32 op}`.
pub type Entry = (BarrierType, BarrierOperation);

use BarrierOperation::{Entry as E, Exit as X, OpTypeMax as PAD_OP};
use BarrierType::*;

const PAD: Entry = (TypeMax, PAD_OP);

/// `barrier_step_sizes` (`.rodata 0x857b80`).
pub const BARRIER_STEP_SIZES: [u8; 4] = [1, 4, 4, 1];
/// `barrier_step_sizes_for_switch_family` (`.rodata 0x857af8`).
pub const BARRIER_STEP_SIZES_FOR_SWITCH_FAMILY: [u8; 4] = [1, 2, 2, 1];

/// `barrier_algorithm_steps` (`.rodata 0x857ba0`): \[step\]\[entry\].
pub const BARRIER_ALGORITHM_STEPS: [[Entry; 4]; 4] = [
    [(IntraChip, E), PAD, PAD, PAD],
    [
        (IntraPod, E),
        (InterChip, E),
        (InterChipRingLocal, E),
        (InterChipRingRemote, E),
    ],
    [
        (IntraPod, X),
        (InterChip, X),
        (InterChipRingLocal, X),
        (InterChipRingRemote, X),
    ],
    [(IntraChip, X), PAD, PAD, PAD],
];

/// `barrier_algorithm_steps_for_switch_family` (`.rodata 0x857b00`): \[step\]\[entry\].
pub const BARRIER_ALGORITHM_STEPS_FOR_SWITCH_FAMILY: [[Entry; 4]; 4] = [
    [(IntraChip, E), PAD, PAD, PAD],
    [(IntraRack, E), (InterRack, E), PAD, PAD],
    [(IntraRack, X), (InterRack, X), PAD, PAD],
    [(IntraChip, X), PAD, PAD, PAD],
];

impl Fabric {
    /// The step sizes of this fabric.
    pub fn step_sizes(self) -> [u8; 4] {
        match self {
            Fabric::Default => BARRIER_STEP_SIZES,
            Fabric::SwitchV1 => BARRIER_STEP_SIZES_FOR_SWITCH_FAMILY,
        }
    }

    /// The algorithm table of this fabric.
    pub fn steps(self) -> &'static [[Entry; 4]; 4] {
        match self {
            Fabric::Default => &BARRIER_ALGORITHM_STEPS,
            Fabric::SwitchV1 => &BARRIER_ALGORITHM_STEPS_FOR_SWITCH_FAMILY,
        }
    }

    /// The active entries of `step` (the first `step_sizes[step]` slots).
    pub fn active(self, step: usize) -> &'static [Entry] {
        let size = self.step_sizes().get(step).copied().unwrap_or(0) as usize;
        self.steps().get(step).map_or(&[], |row| &row[..size])
    }
}

/// `search_barr_type_in_step(type, step, &op, &idx)`: scans the active slots of
/// `step` in the fabric's table for `barrier_type`; returns the operation and
/// the slot index, or `None` (the runtime returns false).
pub fn search_barr_type_in_step(
    barrier_type: BarrierType,
    step: usize,
    fabric: Fabric,
) -> Option<(BarrierOperation, usize)> {
    fabric
        .active(step)
        .iter()
        .position(|(t, _)| *t == barrier_type)
        .map(|i| (fabric.active(step)[i].1, i))
}

/// The 128-byte little-endian image of an algorithm table, as in `.rodata`.
pub fn table_image(table: &[[Entry; 4]; 4]) -> [u8; 128] {
    let mut out = [0u8; 128];
    for (s, row) in table.iter().enumerate() {
        for (i, (t, op)) in row.iter().enumerate() {
            let at = s * 0x20 + i * 8;
            out[at..at + 4].copy_from_slice(&(*t as u32).to_le_bytes());
            out[at + 4..at + 8].copy_from_slice(&(*op as u32).to_le_bytes());
        }
    }
    out
}

/// TOP_SP semaphore ids (§6.6).
pub mod sema {
    /// `ENCD_TRIGGER_SEMA_ID`: step 0/3 self trigger.
    pub const TRIGGER: u32 = 0;
    /// `ENCD_COMPLETION_SEMA_ID`.
    pub const COMPLETION: u32 = 1;
    /// `ENCD_BARRIER_SEMA_ID0`: device-mode barrier done (the leader-done id without host-CC).
    pub const BARRIER0: u32 = 2;
    /// `ENCD_BARRIER_SEMA_ID1`.
    pub const BARRIER1: u32 = 3;
    /// `ENCD_BARRIER_DMA_SYNC_SEMA_ID` (= `dma_sync_sema`).
    pub const DMA_SYNC: u32 = 4;
    /// `ENCD_FUNCTION_SWITCH_SEMA_ID`: switch-family rack semaphore.
    pub const FUNCTION_SWITCH: u32 = 5;
    /// `ENCD_HOST_BARRIER_SEMA_ID0`: host `barrier_start`; the leader-done id under host-CC.
    pub const HOST_BARRIER0: u32 = 6;
    /// `ENCD_HOST_BARRIER_SEMA_ID1`: host `barrier_done`.
    pub const HOST_BARRIER1: u32 = 7;

    /// The semaphore the leader SPs increment when done: 6 under host-CC, else 2
    /// (`encd_get_leader_sps_barrier_done_semas_inc_addrs`, HIGH·OBSERVED).
    pub fn leader_done(host_cc: bool) -> u32 {
        if host_cc {
            HOST_BARRIER0
        } else {
            BARRIER0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `.rodata` bytes as §6.5 decodes them, written out by hand: each slot
    /// is `type u32 LE, op u32 LE`; unused slots are (7, 2).
    const DEFAULT_IMAGE: &str = concat!(
        "0000000000000000",
        "0700000002000000",
        "0700000002000000",
        "0700000002000000",
        "0100000000000000",
        "0200000000000000",
        "0300000000000000",
        "0400000000000000",
        "0100000001000000",
        "0200000001000000",
        "0300000001000000",
        "0400000001000000",
        "0000000001000000",
        "0700000002000000",
        "0700000002000000",
        "0700000002000000",
    );
    const SWITCH_IMAGE: &str = concat!(
        "0000000000000000",
        "0700000002000000",
        "0700000002000000",
        "0700000002000000",
        "0500000000000000",
        "0600000000000000",
        "0700000002000000",
        "0700000002000000",
        "0500000001000000",
        "0600000001000000",
        "0700000002000000",
        "0700000002000000",
        "0000000001000000",
        "0700000002000000",
        "0700000002000000",
        "0700000002000000",
    );

    #[test]
    fn table_images_match_the_runtime_rodata() {
        assert_eq!(
            hex::encode(table_image(&BARRIER_ALGORITHM_STEPS)),
            DEFAULT_IMAGE
        );
        assert_eq!(
            hex::encode(table_image(&BARRIER_ALGORITHM_STEPS_FOR_SWITCH_FAMILY)),
            SWITCH_IMAGE
        );
        assert_eq!(BARRIER_STEP_SIZES, [1, 4, 4, 1]);
        assert_eq!(BARRIER_STEP_SIZES_FOR_SWITCH_FAMILY, [1, 2, 2, 1]);
    }

    #[test]
    fn search_follows_the_step_sizes() {
        assert_eq!(
            search_barr_type_in_step(InterChip, 1, Fabric::Default),
            Some((E, 1))
        );
        assert_eq!(
            search_barr_type_in_step(InterChipRingRemote, 2, Fabric::Default),
            Some((X, 3))
        );
        assert_eq!(
            search_barr_type_in_step(IntraChip, 3, Fabric::Default),
            Some((X, 0))
        );
        assert_eq!(
            search_barr_type_in_step(IntraChip, 1, Fabric::Default),
            None
        );
        assert_eq!(
            search_barr_type_in_step(InterRack, 1, Fabric::SwitchV1),
            Some((E, 1))
        );
        assert_eq!(
            search_barr_type_in_step(InterChip, 1, Fabric::SwitchV1),
            None
        );
        // The padding type is never found: it lies past the active slots.
        assert_eq!(search_barr_type_in_step(TypeMax, 0, Fabric::Default), None);
        assert_eq!(
            search_barr_type_in_step(IntraChip, 9, Fabric::Default),
            None
        );
    }

    #[test]
    fn sema_ids() {
        assert_eq!(sema::leader_done(true), 6);
        assert_eq!(sema::leader_done(false), 2);
        assert_eq!(BarrierType::from_u32(4), Some(InterChipRingRemote));
        assert_eq!(BarrierType::from_u32(8), None);
    }
}
