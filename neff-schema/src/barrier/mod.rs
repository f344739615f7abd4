//! Barrier configurations for the collectives firmware (spec §6).
//!
//! The runtime composes a `neff_barrier_configs_t` (0x128 bytes) at load time
//! and sends it to the NCFW core; no NEFF member carries one (§6.1). This module
//! is its lossless codec ([`BarrierConfigs`]), the typed device view
//! ([`DeviceBarrierConfigs`]), the firmware logger's JSON shape ([`json`]) and
//! the runtime's 4-step algorithm tables ([`tables`]).
//!
//! Confidence tags follow the spec: layout and tables are HIGH·OBSERVED; the
//! meaning of `m2s_val`/`s2m_val` and of the target values is not known.

pub mod json;
pub mod tables;

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Size of `neff_barrier_configs_t`.
pub const BARRIER_CONFIGS_LEN: usize = 0x128;
/// Size of `neff_device_barrier_configs_t`.
pub const DEVICE_BARRIER_LEN: usize = 0x124;
/// Size of one `neff_device_barrier_per_step_configs_t`.
pub const STEP_LEN: usize = 0x34;
/// `NEFF_DEVICE_BARRIER_MAX_STEPS`.
pub const MAX_STEPS: usize = 4;
/// `NEFF_DEVICE_BARRIER_MAX_LEADERS` (= `NEFF_DEVICE_BARRIER_MAX_SEMA_COUNT`).
pub const MAX_LEADERS: usize = 4;

/// Byte offsets inside `neff_barrier_configs_t` / `neff_device_barrier_configs_t` (§6.3–6.4).
pub mod offset {
    /// `host_barrier.barrier_start` (host view).
    pub const BARRIER_START: usize = 0x000;
    /// `host_barrier.barrier_done` (host view).
    pub const BARRIER_DONE: usize = 0x008;
    /// `barrier_step_config[0]` (device view); steps are 0x34 apart.
    pub const STEPS: usize = 0x000;
    /// Inside a step: `m2s_val` u16.
    pub const STEP_M2S_VAL: usize = 0x00;
    /// Inside a step: `s2m_val` u16.
    pub const STEP_S2M_VAL: usize = 0x02;
    /// Inside a step: `barrier_sema[4]` u64.
    pub const STEP_BARRIER_SEMA: usize = 0x04;
    /// Inside a step: `target_sema_val[4]` u32.
    pub const STEP_TARGET_SEMA_VAL: usize = 0x24;
    /// `dma_sync_sema[4]` u64.
    pub const DMA_SYNC_SEMA: usize = 0x0D0;
    /// `dma_apb_bcast.m2s_tail_ptr` u64.
    pub const APB_M2S_TAIL_PTR: usize = 0x0F0;
    /// `dma_apb_bcast.s2m_tail_ptr` u64.
    pub const APB_S2M_TAIL_PTR: usize = 0x0F8;
    /// `dma_apb_bcast.mask` u32.
    pub const APB_MASK: usize = 0x100;
    /// `start_network_proxy` u64.
    pub const START_NETWORK_PROXY: usize = 0x104;
    /// `dma_sync_sema_value` u32.
    pub const DMA_SYNC_SEMA_VALUE: usize = 0x10C;
    /// `tdrbp_low` u32.
    pub const TDRBP_LOW: usize = 0x110;
    /// `tdrbp_high` u32.
    pub const TDRBP_HIGH: usize = 0x114;
    /// `desc_count` u32.
    pub const DESC_COUNT: usize = 0x118;
    /// `total_desc_n` u32 (not printed by the firmware logger).
    pub const TOTAL_DESC_N: usize = 0x11C;
    /// `dma_engines_bitmap` u16.
    pub const DMA_ENGINES_BITMAP: usize = 0x120;
    /// `queue_id` u8.
    pub const QUEUE_ID: usize = 0x122;
    /// The device struct's `__reserved` u8.
    pub const DEVICE_RESERVED: usize = 0x123;
    /// `execute_device_barrier:1` and `__reserved0:7`.
    pub const GATE: usize = 0x124;
    /// `__reserved[3]`.
    pub const RESERVED_TAIL: usize = 0x125;
}

/// `neff_barrier_configs_t`: 296 bytes, little-endian. The bytes are the only
/// store; the host and device views are decoded from (and written into) the
/// same first 0x124 bytes, as the C union overlays them.
#[derive(Clone, PartialEq, Eq)]
pub struct BarrierConfigs {
    bytes: [u8; BARRIER_CONFIGS_LEN],
}

/// A byte slice that is not 296 bytes long.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a neff_barrier_configs_t is {BARRIER_CONFIGS_LEN} (0x128) bytes; got {0}")]
pub struct WrongLength(pub usize);

impl Default for BarrierConfigs {
    fn default() -> Self {
        BarrierConfigs {
            bytes: [0; BARRIER_CONFIGS_LEN],
        }
    }
}

impl fmt::Debug for BarrierConfigs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BarrierConfigs")
            .field("execute_device_barrier", &self.execute_device_barrier())
            .field("host_barrier", &self.host_barrier())
            .field("device_barrier", &self.device_barrier())
            .finish()
    }
}

fn get<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[off..off + N]);
    out
}

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes(get(b, off))
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(get(b, off))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(get(b, off))
}

fn put(b: &mut [u8], off: usize, value: &[u8]) {
    b[off..off + value.len()].copy_from_slice(value);
}

impl BarrierConfigs {
    /// Wraps 296 bytes.
    pub fn from_bytes(bytes: [u8; BARRIER_CONFIGS_LEN]) -> Self {
        BarrierConfigs { bytes }
    }

    /// Reads exactly 296 bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, WrongLength> {
        let bytes: [u8; BARRIER_CONFIGS_LEN] =
            bytes.try_into().map_err(|_| WrongLength(bytes.len()))?;
        Ok(BarrierConfigs { bytes })
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; BARRIER_CONFIGS_LEN] {
        &self.bytes
    }

    /// Bit 0 of +0x124: when set the on-device 4-step barrier runs (INFERRED·MED);
    /// otherwise only the host-barrier handshake gates the collective.
    pub fn execute_device_barrier(&self) -> bool {
        self.bytes[offset::GATE] & 1 != 0
    }

    /// Sets bit 0 of +0x124, keeping the reserved bits.
    pub fn set_execute_device_barrier(&mut self, on: bool) {
        self.bytes[offset::GATE] = (self.bytes[offset::GATE] & !1) | u8::from(on);
    }

    /// `__reserved0`: the 7 bits above the gate bit (preserved, normally 0).
    pub fn reserved_bits(&self) -> u8 {
        self.bytes[offset::GATE] >> 1
    }

    /// Sets `__reserved0` (values above 0x7F are cut to 7 bits).
    pub fn set_reserved_bits(&mut self, bits: u8) {
        self.bytes[offset::GATE] = (self.bytes[offset::GATE] & 1) | (bits << 1);
    }

    /// `__reserved[3]` at +0x125.
    pub fn reserved_tail(&self) -> [u8; 3] {
        get(&self.bytes, offset::RESERVED_TAIL)
    }

    /// Sets `__reserved[3]`.
    pub fn set_reserved_tail(&mut self, tail: [u8; 3]) {
        put(&mut self.bytes, offset::RESERVED_TAIL, &tail);
    }

    /// The host view (`neff_host_barrier_configs_t`, the first 16 bytes).
    pub fn host_barrier(&self) -> HostBarrier {
        HostBarrier {
            barrier_start: u64_at(&self.bytes, offset::BARRIER_START),
            barrier_done: u64_at(&self.bytes, offset::BARRIER_DONE),
        }
    }

    /// Writes the host view (overwriting the first 16 bytes of the device view).
    pub fn set_host_barrier(&mut self, host: &HostBarrier) {
        for (off, v) in [
            (offset::BARRIER_START, host.barrier_start),
            (offset::BARRIER_DONE, host.barrier_done),
        ] {
            put(&mut self.bytes, off, &v.to_le_bytes());
        }
    }

    /// The device view (`neff_device_barrier_configs_t`, the first 0x124 bytes).
    pub fn device_barrier(&self) -> DeviceBarrierConfigs {
        DeviceBarrierConfigs::decode(&get(&self.bytes, 0))
    }

    /// Writes the device view (all of the first 0x124 bytes).
    pub fn set_device_barrier(&mut self, device: &DeviceBarrierConfigs) {
        put(&mut self.bytes, 0, &device.encode());
    }
}

/// `neff_host_barrier_configs_t` (0x10): two semaphore CSR addresses.
/// In JSON each address is in the logger's shape ([`json::Addr`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostBarrier {
    /// `barrier_start` (soc_addr_t): armed by the host to release the device (INFERRED·MED).
    #[serde(with = "json::addr")]
    #[schemars(with = "json::Addr")]
    pub barrier_start: u64,
    /// `barrier_done` (semaphore_t): incremented by the leader SPs, waited on by the host.
    #[serde(with = "json::addr")]
    #[schemars(with = "json::Addr")]
    pub barrier_done: u64,
}

/// `neff_device_barrier_per_step_configs_t` (0x34).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepConfig {
    /// `m2s_val` (meaning unknown; "memory→semaphore" counter delta is INFERRED·MED).
    pub m2s_val: u16,
    /// `s2m_val` (meaning unknown).
    pub s2m_val: u16,
    /// `barrier_sema[4]`: one semaphore address per leader SP.
    #[serde(with = "json::addrs")]
    #[schemars(with = "[json::Addr; MAX_LEADERS]")]
    pub barrier_sema: [u64; MAX_LEADERS],
    /// `target_sema_val[4]`: the per-leader `>=` threshold of a wait (INFERRED·MED).
    pub target_sema_val: [u32; MAX_LEADERS],
}

/// `dma_channel_apb_bcast_t` (0x14).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApbBcast {
    /// `m2s_tail_ptr`.
    #[serde(with = "json::addr")]
    #[schemars(with = "json::Addr")]
    pub m2s_tail_ptr: u64,
    /// `s2m_tail_ptr`.
    #[serde(with = "json::addr")]
    #[schemars(with = "json::Addr")]
    pub s2m_tail_ptr: u64,
    /// `mask`.
    pub mask: u32,
}

/// `neff_device_barrier_configs_t` (0x124), decoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceBarrierConfigs {
    /// `barrier_step_config[4]` (in JSON under the struct member's name; the
    /// firmware logger does not print it).
    #[serde(rename = "barrier_step_config")]
    pub steps: [StepConfig; MAX_STEPS],
    /// `dma_sync_sema[4]` (TOP_SP sema id 4).
    #[serde(with = "json::addrs")]
    #[schemars(with = "[json::Addr; 4]")]
    pub dma_sync_sema: [u64; 4],
    /// `dma_apb_bcast`.
    pub dma_apb_bcast: ApbBcast,
    /// `start_network_proxy`.
    #[serde(with = "json::addr")]
    #[schemars(with = "json::Addr")]
    pub start_network_proxy: u64,
    /// `dma_sync_sema_value`: what `dma_sync_sema` must reach.
    pub dma_sync_sema_value: u32,
    /// `tdrbp_low`: low half of the descriptor ring base.
    pub tdrbp_low: u32,
    /// `tdrbp_high`: high half of the descriptor ring base.
    pub tdrbp_high: u32,
    /// `desc_count`.
    pub desc_count: u32,
    /// `total_desc_n` (in the IDA struct, not printed by the firmware logger).
    pub total_desc_n: u32,
    /// `dma_engines_bitmap`.
    pub dma_engines_bitmap: u16,
    /// `queue_id`.
    pub queue_id: u8,
    /// `__reserved` (preserved, normally 0; in JSON only when not 0).
    #[serde(
        rename = "__reserved",
        default,
        skip_serializing_if = "json::is_zero_u8"
    )]
    pub reserved: u8,
}

impl DeviceBarrierConfigs {
    /// Decodes 0x124 bytes.
    pub fn decode(b: &[u8; DEVICE_BARRIER_LEN]) -> Self {
        let mut steps = [StepConfig::default(); MAX_STEPS];
        for (i, step) in steps.iter_mut().enumerate() {
            let base = offset::STEPS + i * STEP_LEN;
            step.m2s_val = u16_at(b, base + offset::STEP_M2S_VAL);
            step.s2m_val = u16_at(b, base + offset::STEP_S2M_VAL);
            for l in 0..MAX_LEADERS {
                step.barrier_sema[l] = u64_at(b, base + offset::STEP_BARRIER_SEMA + 8 * l);
                step.target_sema_val[l] = u32_at(b, base + offset::STEP_TARGET_SEMA_VAL + 4 * l);
            }
        }
        let mut dma_sync_sema = [0u64; 4];
        for (i, s) in dma_sync_sema.iter_mut().enumerate() {
            *s = u64_at(b, offset::DMA_SYNC_SEMA + 8 * i);
        }
        DeviceBarrierConfigs {
            steps,
            dma_sync_sema,
            dma_apb_bcast: ApbBcast {
                m2s_tail_ptr: u64_at(b, offset::APB_M2S_TAIL_PTR),
                s2m_tail_ptr: u64_at(b, offset::APB_S2M_TAIL_PTR),
                mask: u32_at(b, offset::APB_MASK),
            },
            start_network_proxy: u64_at(b, offset::START_NETWORK_PROXY),
            dma_sync_sema_value: u32_at(b, offset::DMA_SYNC_SEMA_VALUE),
            tdrbp_low: u32_at(b, offset::TDRBP_LOW),
            tdrbp_high: u32_at(b, offset::TDRBP_HIGH),
            desc_count: u32_at(b, offset::DESC_COUNT),
            total_desc_n: u32_at(b, offset::TOTAL_DESC_N),
            dma_engines_bitmap: u16_at(b, offset::DMA_ENGINES_BITMAP),
            queue_id: b[offset::QUEUE_ID],
            reserved: b[offset::DEVICE_RESERVED],
        }
    }

    /// Encodes to 0x124 bytes.
    pub fn encode(&self) -> [u8; DEVICE_BARRIER_LEN] {
        let mut b = [0u8; DEVICE_BARRIER_LEN];
        let mut le = |off: usize, value: &[u8]| put(&mut b, off, value);
        for (i, step) in self.steps.iter().enumerate() {
            let base = offset::STEPS + i * STEP_LEN;
            le(base + offset::STEP_M2S_VAL, &step.m2s_val.to_le_bytes());
            le(base + offset::STEP_S2M_VAL, &step.s2m_val.to_le_bytes());
            for l in 0..MAX_LEADERS {
                let sema = base + offset::STEP_BARRIER_SEMA + 8 * l;
                le(sema, &step.barrier_sema[l].to_le_bytes());
                let target = base + offset::STEP_TARGET_SEMA_VAL + 4 * l;
                le(target, &step.target_sema_val[l].to_le_bytes());
            }
        }
        for (i, s) in self.dma_sync_sema.iter().enumerate() {
            le(offset::DMA_SYNC_SEMA + 8 * i, &s.to_le_bytes());
        }
        let apb = &self.dma_apb_bcast;
        for (off, v) in [
            (offset::APB_M2S_TAIL_PTR, apb.m2s_tail_ptr),
            (offset::APB_S2M_TAIL_PTR, apb.s2m_tail_ptr),
            (offset::START_NETWORK_PROXY, self.start_network_proxy),
        ] {
            le(off, &v.to_le_bytes());
        }
        for (off, v) in [
            (offset::APB_MASK, apb.mask),
            (offset::DMA_SYNC_SEMA_VALUE, self.dma_sync_sema_value),
            (offset::TDRBP_LOW, self.tdrbp_low),
            (offset::TDRBP_HIGH, self.tdrbp_high),
            (offset::DESC_COUNT, self.desc_count),
            (offset::TOTAL_DESC_N, self.total_desc_n),
        ] {
            le(off, &v.to_le_bytes());
        }
        le(
            offset::DMA_ENGINES_BITMAP,
            &self.dma_engines_bitmap.to_le_bytes(),
        );
        b[offset::QUEUE_ID] = self.queue_id;
        b[offset::DEVICE_RESERVED] = self.reserved;
        b
    }

    /// The descriptor ring base (`tdrbp_high:tdrbp_low`).
    pub fn tdrbp(&self) -> u64 {
        (u64::from(self.tdrbp_high) << 32) | u64::from(self.tdrbp_low)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(seed: u64) -> [u8; BARRIER_CONFIGS_LEN] {
        let mut state = seed | 1;
        let mut out = [0u8; BARRIER_CONFIGS_LEN];
        for b in out.iter_mut() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *b = state as u8;
        }
        out
    }

    #[test]
    fn any_296_bytes_round_trip_through_both_views() {
        for seed in 1..200 {
            let bytes = noise(seed);
            let mut c = BarrierConfigs::from_bytes(bytes);
            let device = c.device_barrier();
            let host = c.host_barrier();
            c.set_device_barrier(&device);
            assert_eq!(c.as_bytes(), &bytes);
            c.set_host_barrier(&host);
            assert_eq!(c.as_bytes(), &bytes);
            let (gate, bits, tail) = (
                c.execute_device_barrier(),
                c.reserved_bits(),
                c.reserved_tail(),
            );
            c.set_execute_device_barrier(gate);
            c.set_reserved_bits(bits);
            c.set_reserved_tail(tail);
            assert_eq!(c.as_bytes(), &bytes);
        }
    }

    /// Sets one field through the typed view and returns the changed byte range.
    fn changed(f: impl Fn(&mut DeviceBarrierConfigs)) -> (usize, usize) {
        let mut d = DeviceBarrierConfigs::default();
        f(&mut d);
        let mut c = BarrierConfigs::default();
        c.set_device_barrier(&d);
        let idx: Vec<usize> = (0..BARRIER_CONFIGS_LEN)
            .filter(|&i| c.as_bytes()[i] != 0)
            .collect();
        (idx[0], idx[idx.len() - 1] + 1)
    }

    #[test]
    fn every_field_sits_at_its_offset() {
        assert_eq!(changed(|d| d.steps[0].m2s_val = u16::MAX), (0x00, 0x02));
        assert_eq!(changed(|d| d.steps[0].s2m_val = u16::MAX), (0x02, 0x04));
        assert_eq!(
            changed(|d| d.steps[0].barrier_sema[0] = u64::MAX),
            (0x04, 0x0C)
        );
        assert_eq!(
            changed(|d| d.steps[0].barrier_sema[3] = u64::MAX),
            (0x1C, 0x24)
        );
        assert_eq!(
            changed(|d| d.steps[0].target_sema_val[0] = u32::MAX),
            (0x24, 0x28)
        );
        assert_eq!(
            changed(|d| d.steps[0].target_sema_val[3] = u32::MAX),
            (0x30, 0x34)
        );
        assert_eq!(changed(|d| d.steps[1].m2s_val = u16::MAX), (0x34, 0x36));
        assert_eq!(
            changed(|d| d.steps[3].target_sema_val[3] = u32::MAX),
            (0xCC, 0xD0)
        );
        assert_eq!(changed(|d| d.dma_sync_sema[0] = u64::MAX), (0xD0, 0xD8));
        assert_eq!(changed(|d| d.dma_sync_sema[3] = u64::MAX), (0xE8, 0xF0));
        assert_eq!(
            changed(|d| d.dma_apb_bcast.m2s_tail_ptr = u64::MAX),
            (0xF0, 0xF8)
        );
        assert_eq!(
            changed(|d| d.dma_apb_bcast.s2m_tail_ptr = u64::MAX),
            (0xF8, 0x100)
        );
        assert_eq!(changed(|d| d.dma_apb_bcast.mask = u32::MAX), (0x100, 0x104));
        assert_eq!(
            changed(|d| d.start_network_proxy = u64::MAX),
            (0x104, 0x10C)
        );
        assert_eq!(
            changed(|d| d.dma_sync_sema_value = u32::MAX),
            (0x10C, 0x110)
        );
        assert_eq!(changed(|d| d.tdrbp_low = u32::MAX), (0x110, 0x114));
        assert_eq!(changed(|d| d.tdrbp_high = u32::MAX), (0x114, 0x118));
        assert_eq!(changed(|d| d.desc_count = u32::MAX), (0x118, 0x11C));
        assert_eq!(changed(|d| d.total_desc_n = u32::MAX), (0x11C, 0x120));
        assert_eq!(changed(|d| d.dma_engines_bitmap = u16::MAX), (0x120, 0x122));
        assert_eq!(changed(|d| d.queue_id = u8::MAX), (0x122, 0x123));
        assert_eq!(changed(|d| d.reserved = u8::MAX), (0x123, 0x124));
    }

    #[test]
    fn the_host_view_overlays_the_first_step() {
        let mut c = BarrierConfigs::default();
        c.set_host_barrier(&HostBarrier {
            barrier_start: 0x1122_3344_5566_7788,
            barrier_done: 0x99AA_BBCC_DDEE_FF00,
        });
        assert_eq!(&c.as_bytes()[0..8], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(
            &c.as_bytes()[8..16],
            &0x99AA_BBCC_DDEE_FF00u64.to_le_bytes()
        );
        assert!(c.as_bytes()[16..].iter().all(|&b| b == 0));
        let step0 = c.device_barrier().steps[0];
        assert_eq!((step0.m2s_val, step0.s2m_val), (0x7788, 0x5566));
        assert_eq!(step0.barrier_sema[0] & 0xFFFF_FFFF, 0x1122_3344);
        let mut gate = BarrierConfigs::default();
        gate.set_execute_device_barrier(true);
        assert_eq!(gate.as_bytes()[0x124], 1);
        gate.set_reserved_bits(0x7F);
        assert_eq!(gate.as_bytes()[0x124], 0xFF);
        assert!(gate.execute_device_barrier());
        assert_eq!(
            BarrierConfigs::from_slice(&[0u8; 295]),
            Err(WrongLength(295))
        );
    }
}
