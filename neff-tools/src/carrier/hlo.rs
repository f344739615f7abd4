//! The NEFFs of an XLA HLO module (`wrapped_neff.hlo`, as neuronx-cc 2.21+
//! leaves it in compile caches): each custom call whose target is
//! `AwsNeuronNeff` carries one NEFF as its `backend_config`.
//!
//! The messages below are the fields this reading needs of the published
//! schema, `xla/service/hlo.proto` of openxla/xla (pinned at commit
//! 0b8fa9f2834ac7c177e5684dcfa587c6bec08b29), written as prost derives so
//! that no `protoc` is needed to build: prost skips every other field. The
//! `backend_config` bytes are decoded as slices of the file's buffer, so the
//! NEFF's offset in the file is where its slice lies.

use bytes::Bytes;
use prost::Message;

/// The custom-call target that carries a NEFF.
pub const NEFF_TARGET: &str = "AwsNeuronNeff";

/// `xla.HloModuleProto`: the module and its computations.
#[derive(Clone, PartialEq, Message)]
struct HloModuleProto {
    /// `string name = 1`.
    #[prost(string, tag = "1")]
    name: String,
    /// `repeated HloComputationProto computations = 3`.
    #[prost(message, repeated, tag = "3")]
    computations: Vec<HloComputationProto>,
}

/// `xla.HloComputationProto`.
#[derive(Clone, PartialEq, Message)]
struct HloComputationProto {
    /// `string name = 1`.
    #[prost(string, tag = "1")]
    name: String,
    /// `repeated HloInstructionProto instructions = 2`.
    #[prost(message, repeated, tag = "2")]
    instructions: Vec<HloInstructionProto>,
}

/// `xla.HloInstructionProto`: the fields a custom call's NEFF needs.
#[derive(Clone, PartialEq, Message)]
struct HloInstructionProto {
    /// `string name = 1`.
    #[prost(string, tag = "1")]
    name: String,
    /// `string opcode = 2`.
    #[prost(string, tag = "2")]
    opcode: String,
    /// `string custom_call_target = 28`.
    #[prost(string, tag = "28")]
    custom_call_target: String,
    /// `bytes backend_config = 43`.
    #[prost(bytes = "bytes", tag = "43")]
    backend_config: Bytes,
    /// `ShapeProto shape = 3`.
    #[prost(message, optional, tag = "3")]
    shape: Option<ShapeProto>,
}

/// `xla.ShapeProto`: the element type, dimensions and tuple elements.
#[derive(Clone, PartialEq, Message)]
struct ShapeProto {
    /// `PrimitiveType element_type = 2` (an enum's number).
    #[prost(int32, tag = "2")]
    element_type: i32,
    /// `repeated int64 dimensions = 3`.
    #[prost(int64, repeated, tag = "3")]
    dimensions: Vec<i64>,
    /// `repeated ShapeProto tuple_shapes = 4`.
    #[prost(message, repeated, tag = "4")]
    tuple_shapes: Vec<ShapeProto>,
}

impl ShapeProto {
    /// `t<type>[d0,d1]`, or a tuple's `(…)`.
    fn text(&self) -> String {
        if !self.tuple_shapes.is_empty() {
            let parts: Vec<String> = self.tuple_shapes.iter().map(ShapeProto::text).collect();
            return format!("({})", parts.join(", "));
        }
        let dims: Vec<String> = self.dimensions.iter().map(i64::to_string).collect();
        format!("t{}[{}]", self.element_type, dims.join(","))
    }
}

/// The first structural difference between the HLO modules `a` and `b`
/// (computations, then each one's instructions: opcode, shape, custom-call
/// target), names, ids, metadata and backend configs aside; `None` when
/// there is none.
pub(crate) fn first_difference(a: Bytes, b: Bytes) -> Result<Option<String>, String> {
    let decode = |data: Bytes| {
        HloModuleProto::decode(data)
            .map_err(|e| format!("not an HLO module (xla.HloModuleProto): {e}"))
    };
    let (a, b) = (decode(a)?, decode(b)?);
    if a.computations.len() != b.computations.len() {
        return Ok(Some(format!(
            "{} computations against {}",
            a.computations.len(),
            b.computations.len()
        )));
    }
    for (ca, cb) in a.computations.iter().zip(&b.computations) {
        if ca.instructions.len() != cb.instructions.len() {
            return Ok(Some(format!(
                "computation {:?}: {} instructions against {} in {:?}",
                ca.name,
                ca.instructions.len(),
                cb.instructions.len(),
                cb.name
            )));
        }
        for (ia, ib) in ca.instructions.iter().zip(&cb.instructions) {
            let shape = |i: &HloInstructionProto| {
                i.shape.as_ref().map(ShapeProto::text).unwrap_or_default()
            };
            let view = |i: &HloInstructionProto| {
                (i.opcode.clone(), shape(i), i.custom_call_target.clone())
            };
            if view(ia) != view(ib) {
                return Ok(Some(format!(
                    "computation {:?}, instruction {:?}: {} {} against {} {} ({:?})",
                    ca.name,
                    ia.name,
                    ia.opcode,
                    shape(ia),
                    ib.opcode,
                    shape(ib),
                    ib.name
                )));
            }
        }
    }
    Ok(None)
}

/// One NEFF of an HLO module: its byte range in the module and where the
/// module holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HloNeff {
    /// Offset of the `backend_config` bytes in the module.
    pub offset: usize,
    /// Their length.
    pub len: usize,
    /// The module, computation and instruction names.
    pub location: String,
}

/// The NEFFs of the HLO module `data` (the whole file), in the module's
/// order; an error when `data` is not a module.
pub(crate) fn neffs(data: Bytes) -> Result<Vec<HloNeff>, String> {
    let base = data.as_ptr() as usize;
    let module = HloModuleProto::decode(data.clone())
        .map_err(|e| format!("not an HLO module (xla.HloModuleProto): {e}"))?;
    let mut out = Vec::new();
    for computation in &module.computations {
        for instruction in &computation.instructions {
            if instruction.custom_call_target != NEFF_TARGET {
                continue;
            }
            let config = &instruction.backend_config;
            // A slice of `data` (prost decodes a `Bytes` buffer's bytes
            // fields without copying): its offset is where it lies.
            let offset = (config.as_ptr() as usize).wrapping_sub(base);
            if config.is_empty() || offset > data.len() || data.len() - offset < config.len() {
                return Err(format!(
                    "HLO module {:?}: computation {:?}: {} {:?} has no backend_config bytes in the file",
                    module.name, computation.name, instruction.opcode, instruction.name
                ));
            }
            out.push(HloNeff {
                offset,
                len: config.len(),
                location: format!(
                    "HLO module {:?}, computation {:?}, {} {:?} ({NEFF_TARGET}) backend_config",
                    module.name, computation.name, instruction.opcode, instruction.name
                ),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(config: &[u8]) -> Vec<u8> {
        HloModuleProto {
            name: "m".into(),
            computations: vec![HloComputationProto {
                name: "main".into(),
                instructions: vec![
                    HloInstructionProto {
                        name: "p0".into(),
                        opcode: "parameter".into(),
                        ..Default::default()
                    },
                    HloInstructionProto {
                        name: "cc".into(),
                        opcode: "custom-call".into(),
                        custom_call_target: NEFF_TARGET.into(),
                        backend_config: Bytes::copy_from_slice(config),
                        shape: None,
                    },
                ],
            }],
        }
        .encode_to_vec()
    }

    #[test]
    fn the_backend_config_is_found_where_it_lies() {
        let bytes = module(b"the neff bytes");
        let found = neffs(Bytes::from(bytes.clone())).unwrap();
        assert_eq!(found.len(), 1);
        let n = &found[0];
        assert_eq!(&bytes[n.offset..n.offset + n.len], b"the neff bytes");
        assert!(n.location.contains("custom-call \"cc\""), "{}", n.location);
    }

    #[test]
    fn damaged_modules_are_errors() {
        let bytes = module(b"the neff bytes");
        let cut = Bytes::copy_from_slice(&bytes[..bytes.len() - 3]);
        assert!(neffs(cut).unwrap_err().contains("not an HLO module"));
        // A custom call without its config.
        assert!(neffs(Bytes::from(module(b""))).is_err());
    }
}
