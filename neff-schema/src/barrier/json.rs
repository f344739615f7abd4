//! The firmware logger's JSON shape for barrier configs (libncfw
//! `ncfw_log_neff_barrier_config`, spec §6.4), read and written losslessly.
//!
//! * Every address is `{"addr": {"soc_addr": "0x%016X"}}`.
//! * `execute_device_barrier` is `"0x0"` or `"0x1"` (the logger prints the bit with `%p`).
//! * Both views are printed: `host_barrier` and `device_barrier` describe the
//!   same first 16 bytes. On input either may be left out; when both are
//!   given they must agree on those bytes.
//! * The step array's key is not known from the logger; this toolkit uses
//!   `device_barrier.barrier_step_config` (the struct member's name).
//! * `total_desc_n` (which the logger skips) is included under its own name.
//! * The reserved bits and bytes appear as `__reserved0` (7 bits), `__reserved`
//!   (the 3 tail bytes, hex) and `device_barrier.__reserved`, only when non-zero.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{BarrierConfigs, DeviceBarrierConfigs, HostBarrier};
use crate::error::{Error, ErrorKind};

/// An address as the logger prints it: `{"addr": {"soc_addr": "0x…"}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Addr {
    /// `addr_t`.
    pub addr: SocAddr,
}

/// `{"soc_addr": "0x%016X"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SocAddr {
    /// The 64-bit SoC address.
    pub soc_addr: HexU64,
}

impl From<u64> for Addr {
    fn from(v: u64) -> Self {
        Addr {
            addr: SocAddr {
                soc_addr: HexU64(v),
            },
        }
    }
}

impl Addr {
    /// The address value.
    pub fn value(self) -> u64 {
        self.addr.soc_addr.0
    }
}

/// `#[serde(with)]` for an address field: a `u64` as an [`Addr`].
pub(crate) mod addr {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Addr;

    pub fn serialize<S: Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
        Addr::from(*value).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        Addr::deserialize(d).map(Addr::value)
    }
}

/// `#[serde(with)]` for an array of addresses: `[u64; N]` as `[Addr; N]`.
pub(crate) mod addrs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Addr;

    pub fn serialize<S: Serializer, const N: usize>(
        values: &[u64; N],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        values.map(Addr::from).as_slice().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>, const N: usize>(
        d: D,
    ) -> Result<[u64; N], D::Error>
    where
        [Addr; N]: Deserialize<'de>,
    {
        <[Addr; N]>::deserialize(d).map(|addrs| addrs.map(Addr::value))
    }
}

/// A u64 written as `"0x%016X"`; read from any `0x…` hex string of at most 16 digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HexU64(pub u64);

impl Serialize for HexU64 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("0x{:016X}", self.0))
    }
}

impl<'de> Deserialize<'de> for HexU64 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let digits = text
            .strip_prefix("0x")
            .or_else(|| text.strip_prefix("0X"))
            .ok_or_else(|| {
                serde::de::Error::custom(format!("address {text:?} must be 0x-prefixed hex"))
            })?;
        if digits.is_empty() || digits.len() > 16 {
            return Err(serde::de::Error::custom(format!(
                "address {text:?} must have 1 to 16 hex digits"
            )));
        }
        u64::from_str_radix(digits, 16)
            .map(HexU64)
            .map_err(|_| serde::de::Error::custom(format!("address {text:?} is not hex")))
    }
}

impl JsonSchema for HexU64 {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HexU64".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "pattern": "^0[xX][0-9a-fA-F]{1,16}$"})
    }
}

/// `execute_device_barrier` as the logger prints it: `"0x0"` or `"0x1"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateFlag(pub bool);

impl Serialize for GateFlag {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(if self.0 { "0x1" } else { "0x0" })
    }
}

impl<'de> Deserialize<'de> for GateFlag {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)?.as_str() {
            "0x0" | "(nil)" => Ok(GateFlag(false)),
            "0x1" => Ok(GateFlag(true)),
            other => Err(serde::de::Error::custom(format!(
                "execute_device_barrier {other:?} must be \"0x0\" or \"0x1\""
            ))),
        }
    }
}

impl JsonSchema for GateFlag {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GateFlag".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "enum": ["0x0", "0x1"]})
    }
}

/// Whether a reserved byte is 0 (then it is not written).
pub(crate) fn is_zero_u8(v: &u8) -> bool {
    *v == 0
}

fn is_zero_tail(v: &Option<HexU24>) -> bool {
    v.is_none_or(|t| t.0 == [0; 3])
}

/// The 3 reserved tail bytes, as 6 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HexU24(pub [u8; 3]);

impl Serialize for HexU24 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(self.0))
    }
}

impl<'de> Deserialize<'de> for HexU24 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let bytes = hex::decode(&text).map_err(serde::de::Error::custom)?;
        let bytes: [u8; 3] = bytes.try_into().map_err(|_| {
            serde::de::Error::custom(format!(
                "__reserved {text:?} must be 3 bytes (6 hex digits)"
            ))
        })?;
        Ok(HexU24(bytes))
    }
}

impl JsonSchema for HexU24 {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HexU24".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "pattern": "^[0-9a-fA-F]{6}$"})
    }
}

/// `neff_barrier_configs_t` in the logger's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BarrierConfigsJson {
    /// Bit 0 of +0x124.
    pub execute_device_barrier: GateFlag,
    /// The host view of the first 16 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_barrier: Option<HostBarrier>,
    /// The device view of the first 0x124 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_barrier: Option<DeviceBarrierConfigs>,
    /// The 7 bits above the gate bit (0..=127).
    #[serde(rename = "__reserved0", default, skip_serializing_if = "is_zero_u8")]
    pub reserved0: u8,
    /// The 3 tail bytes.
    #[serde(rename = "__reserved", default, skip_serializing_if = "is_zero_tail")]
    pub reserved: Option<HexU24>,
}

impl From<&BarrierConfigs> for BarrierConfigsJson {
    fn from(c: &BarrierConfigs) -> Self {
        BarrierConfigsJson {
            execute_device_barrier: GateFlag(c.execute_device_barrier()),
            host_barrier: Some(c.host_barrier()),
            device_barrier: Some(c.device_barrier()),
            reserved0: c.reserved_bits(),
            reserved: Some(HexU24(c.reserved_tail())),
        }
    }
}

impl BarrierConfigsJson {
    /// The binary config. The device view is written first, then the host
    /// view, which must agree with it where both are given.
    pub fn to_configs(&self) -> Result<BarrierConfigs, Error> {
        let mut c = BarrierConfigs::default();
        if let Some(device) = &self.device_barrier {
            c.set_device_barrier(device);
        }
        if let Some(host) = self.host_barrier {
            if self.device_barrier.is_some() {
                let current = c.host_barrier();
                for (field, offset, mine, theirs) in [
                    (
                        "barrier_start",
                        0x00,
                        host.barrier_start,
                        current.barrier_start,
                    ),
                    (
                        "barrier_done",
                        0x08,
                        host.barrier_done,
                        current.barrier_done,
                    ),
                ] {
                    if mine != theirs {
                        let message = format!("host_barrier.{field} is {mine:#018X} but device_barrier gives {theirs:#018X} for the same bytes (+{offset:#04x}): the two views overlay each other");
                        return Err(Error::new(ErrorKind::BarrierJson, message)
                            .at_key(format!("host_barrier.{field}"))
                            .at_offset(offset));
                    }
                }
            }
            c.set_host_barrier(&host);
        }
        if self.reserved0 > 0x7F {
            let message = format!(
                "__reserved0 is {}; the field has 7 bits (0 to 127)",
                self.reserved0
            );
            return Err(Error::new(ErrorKind::BarrierJson, message).at_key("__reserved0"));
        }
        c.set_execute_device_barrier(self.execute_device_barrier.0);
        c.set_reserved_bits(self.reserved0);
        c.set_reserved_tail(self.reserved.map_or([0; 3], |t| t.0));
        Ok(c)
    }
}

/// Parses the logger-shaped JSON into a binary config.
pub fn from_json(text: &[u8]) -> Result<BarrierConfigs, Error> {
    let parsed: BarrierConfigsJson = serde_json::from_slice(text)
        .map_err(|e| Error::new(ErrorKind::BarrierJson, e.to_string()).with_source(e))?;
    parsed.to_configs()
}

/// Prints a config in the logger's shape (both views), pretty.
pub fn to_json(c: &BarrierConfigs) -> String {
    serde_json::to_string_pretty(&BarrierConfigsJson::from(c)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::barrier::BARRIER_CONFIGS_LEN;

    #[test]
    fn bytes_to_json_to_bytes_is_the_identity() {
        let mut state = 7u64;
        for _ in 0..100 {
            let mut bytes = [0u8; BARRIER_CONFIGS_LEN];
            for b in bytes.iter_mut() {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *b = (state >> 56) as u8;
            }
            let c = BarrierConfigs::from_bytes(bytes);
            let text = to_json(&c);
            assert_eq!(from_json(text.as_bytes()).unwrap(), c, "{text}");
        }
    }

    #[test]
    fn the_logger_shape() {
        let mut c = BarrierConfigs::default();
        c.set_execute_device_barrier(true);
        c.set_host_barrier(&HostBarrier {
            barrier_start: 0xABCD,
            barrier_done: 1,
        });
        let v: serde_json::Value = serde_json::from_str(&to_json(&c)).unwrap();
        assert_eq!(v["execute_device_barrier"], "0x1");
        assert_eq!(
            v["host_barrier"]["barrier_start"]["addr"]["soc_addr"],
            "0x000000000000ABCD"
        );
        assert_eq!(
            v["device_barrier"]["barrier_step_config"]
                .as_array()
                .unwrap()
                .len(),
            4
        );
        assert_eq!(v["device_barrier"]["dma_apb_bcast"]["mask"], 0);
        assert_eq!(v["device_barrier"]["total_desc_n"], 0);
        assert!(v.get("__reserved0").is_none() && v.get("__reserved").is_none());
    }

    #[test]
    fn a_host_only_fixture_and_bad_input() {
        let host_only = br#"{"execute_device_barrier": "0x0",
            "host_barrier": {"barrier_start": {"addr": {"soc_addr": "0x10"}}, "barrier_done": {"addr": {"soc_addr": "0x18"}}}}"#;
        let c = from_json(host_only).unwrap();
        assert_eq!(
            c.host_barrier(),
            HostBarrier {
                barrier_start: 0x10,
                barrier_done: 0x18
            }
        );
        assert!(c.as_bytes()[16..].iter().all(|&b| b == 0));
        let err = |text: &str| from_json(text.as_bytes()).unwrap_err().to_string();
        assert!(
            err(r#"{"execute_device_barrier": "0x0", "oops": 1}"#).contains("unknown field `oops`")
        );
        assert!(err(r#"{"execute_device_barrier": "yes"}"#).contains("must be \"0x0\" or \"0x1\""));
        assert!(err(r#"{"execute_device_barrier": "0x0", "__reserved0": 200}"#).contains("7 bits"));
        let mut c = BarrierConfigs::default();
        c.set_host_barrier(&HostBarrier {
            barrier_start: 5,
            barrier_done: 6,
        });
        let mut v: serde_json::Value = serde_json::from_str(&to_json(&c)).unwrap();
        v["host_barrier"]["barrier_done"]["addr"]["soc_addr"] = "0x7".into();
        assert!(err(&v.to_string()).contains("overlay"));
        v["device_barrier"]["queue_id"] = 300.into();
        assert!(err(&v.to_string()).contains("300"));
    }
}
