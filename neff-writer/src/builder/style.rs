//! How the builder writes the content it generates: this project's plain
//! style, or the compilers' (neuronx-cc 2.x, as in every real NEFF from 2.0
//! on). The framing presets choose one ([`crate::NeffBuilder::framing`]);
//! [`crate::NeffBuilder::content_style`] overrides it.

use std::collections::BTreeMap;

use neff_schema::manifest::neff_json::{Metadata, Signature, SignatureTensor};
use neff_schema::manifest::{Engine, Manifest, NeffJson};
use serde::Serialize;

use crate::error::{Error, ErrorKind};
use crate::member::MemberSource;

/// The content style of generated members.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ContentStyle {
    /// This project's: lower-case engine members (`pe.json`, `pe.bin`),
    /// def.json `name` = the subgraph name, input/output vars with `dtype`
    /// and `shape`, no state buffer unless declared, `num_streams` at the
    /// top level, every manifest 2-space indented with sorted keys.
    #[default]
    Plain,
    /// neuronx-cc's: engine members `PE`, `Activation`, `Pool`, `DVE`, `SP`
    /// (`.json`, `.bin`) named in def.json by `<engine>` and
    /// `<engine>_instr`, each manifest's `name` its own member name; def.json
    /// `name` `"definition"` and `version` `"0.6"`; a state-buffer var `SB` at
    /// var_id 0 (unless one is declared) and the inputs after it;
    /// input/output vars with `ops: []` and no `dtype`/`shape` (neff.json
    /// declares them); `cc_streams.num_streams`; neff.json nodes with
    /// `output_names`, outputs listed once per subgraph, and the
    /// `metadata` signature; def.json, KELF descriptor and neff.json 4-space
    /// indented with a final newline (def.json with sorted keys, the others
    /// in the compiler's key order), engine manifests compact.
    Compiler,
    /// neuronx-cc 2.24 and later: as [`ContentStyle::Compiler`], with engine
    /// members numbered by engine instance (`PE0`, `Activation0`, `Pool0`,
    /// `DVE0`, `SP0`).
    Compiler224,
}

/// The compilers' member stem for each engine, in [`Engine::ALL`] order.
const COMPILER_ENGINE_STEMS: [&str; 5] = ["PE", "Activation", "Pool", "DVE", "SP"];

/// neuronx-cc 2.24+'s member stem for each engine, in [`Engine::ALL`] order.
const NUMBERED_ENGINE_STEMS: [&str; 5] = ["PE0", "Activation0", "Pool0", "DVE0", "SP0"];

/// The def.json `version` neuronx-cc writes (every real file from 2.0 to 2.23).
pub const COMPILER_DEF_VERSION: &str = "0.6";

/// The def.json `name` neuronx-cc writes.
pub const COMPILER_DEF_NAME: &str = "definition";

impl ContentStyle {
    /// The content style a framing preset implies: the compilers' for the
    /// compiler presets.
    pub fn of(preset: neff_schema::FramingPreset) -> ContentStyle {
        match preset {
            neff_schema::FramingPreset::Gnu => ContentStyle::Plain,
            neff_schema::FramingPreset::NeuronxCc227 => ContentStyle::Compiler224,
            _ => ContentStyle::Compiler,
        }
    }

    /// True for the compilers' styles.
    pub fn is_compiler(self) -> bool {
        self != ContentStyle::Plain
    }

    /// The stem of an engine's members (`pe`, `PE` or `PE0`).
    pub fn engine_stem(self, engine: Engine) -> &'static str {
        match self {
            ContentStyle::Plain => engine.as_str(),
            ContentStyle::Compiler => COMPILER_ENGINE_STEMS[engine as usize],
            ContentStyle::Compiler224 => NUMBERED_ENGINE_STEMS[engine as usize],
        }
    }

    /// def.json's bytes in this style.
    pub(crate) fn def_json<T: Serialize>(self, value: &T) -> Result<MemberSource, Error> {
        match self {
            ContentStyle::Plain => manifest_bytes_with(value, Layout::Pretty2Sorted),
            ContentStyle::Compiler | ContentStyle::Compiler224 => {
                manifest_bytes_with(value, Layout::Pretty4Sorted)
            }
        }
    }

    /// An engine manifest's bytes in this style.
    pub(crate) fn engine_json<T: Serialize>(self, value: &T) -> Result<MemberSource, Error> {
        match self {
            ContentStyle::Plain => manifest_bytes_with(value, Layout::Pretty2Sorted),
            ContentStyle::Compiler | ContentStyle::Compiler224 => {
                manifest_bytes_with(value, Layout::CompactSorted)
            }
        }
    }

    /// neff.json's or a KELF descriptor's bytes in this style.
    pub(crate) fn graph_json<T: Serialize>(self, value: &T) -> Result<MemberSource, Error> {
        match self {
            ContentStyle::Plain => manifest_bytes_with(value, Layout::Pretty2Sorted),
            ContentStyle::Compiler | ContentStyle::Compiler224 => {
                manifest_bytes_with(value, Layout::Pretty4Ordered)
            }
        }
    }
}

/// neff.json as neuronx-cc writes it, from the graph
/// [`NeffJson::single_kelf`] derives: each input node names its tensor in
/// `output_names`, the KELF node lists its outputs only in `output_names`,
/// and `metadata` holds the `default` signature's inputs (id, dtype, shape;
/// its `outputs` empty, as in every real 2.x file).
pub(crate) fn compiler_graph(graph: &mut NeffJson) {
    let mut inputs = BTreeMap::new();
    for node in &mut graph.nodes {
        node.output = None;
        if node.op == "null" {
            node.output_names = Some(vec![node.name.clone()]);
        }
    }
    for (id, &node) in graph.arg_nodes.iter().enumerate() {
        let Some(node) = usize::try_from(node).ok().and_then(|n| graph.nodes.get(n)) else {
            continue;
        };
        let entry = graph.input_entry(id).and_then(|e| usize::try_from(e).ok());
        let tensor = SignatureTensor {
            id: Some(id as u64),
            dtype: entry
                .and_then(|e| graph.attrs.dltype.1.get(e))
                .map(|d| d.to_string()),
            shape: entry.and_then(|e| graph.attrs.shape.1.get(e)).cloned(),
            extra: Default::default(),
        };
        inputs.insert(node.name.clone(), tensor);
    }
    let signature = Signature {
        inputs: Some(inputs),
        outputs: Some(BTreeMap::new()),
        extra: Default::default(),
    };
    graph.metadata = Some(Metadata {
        signatures: Some(BTreeMap::from([("default".to_string(), signature)])),
        extra: Default::default(),
    });
}

/// A JSON text layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// 2-space indent, keys sorted, no final newline (this project's).
    Pretty2Sorted,
    /// 4-space indent, keys sorted, final newline (neuronx-cc's def.json).
    Pretty4Sorted,
    /// 4-space indent, keys in the model's order, final newline
    /// (neuronx-cc's neff.json and KELF descriptor).
    Pretty4Ordered,
    /// One line, keys sorted (neuronx-cc's engine manifests).
    CompactSorted,
}

impl Layout {
    /// `value` in this layout.
    pub(crate) fn encode<T: Serialize>(self, value: &T) -> Result<Vec<u8>, serde_json::Error> {
        let indent: &[u8] = match self {
            Layout::Pretty2Sorted => b"  ",
            Layout::Pretty4Sorted | Layout::Pretty4Ordered => b"    ",
            Layout::CompactSorted => return serde_json::to_vec(&serde_json::to_value(value)?),
        };
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(indent);
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
        match self {
            // serde_json's Map is sorted: going through a Value sorts the keys.
            Layout::Pretty2Sorted | Layout::Pretty4Sorted => {
                serde_json::to_value(value)?.serialize(&mut serializer)?
            }
            _ => value.serialize(&mut serializer)?,
        }
        if self != Layout::Pretty2Sorted {
            out.push(b'\n');
        }
        Ok(out)
    }
}

/// A generated manifest's bytes: pretty-printed as producers write them, or
/// compact when the pretty form would be longer than the loader parses
/// ([`neff_loader::MANIFEST_MAX`]; a model of about 500,000 variables).
pub(crate) fn manifest_bytes<T: Manifest>(manifest: &T) -> Result<MemberSource, Error> {
    manifest_bytes_with(manifest, Layout::Pretty2Sorted)
}

/// A generated manifest's bytes in `layout`, or compact when that would be
/// longer than the loader parses.
pub(crate) fn manifest_bytes_with<T: serde::Serialize>(
    manifest: &T,
    layout: Layout,
) -> Result<MemberSource, Error> {
    let text = layout.encode(manifest).map_err(|e| {
        let kind = ErrorKind::Schema(neff_schema::ErrorKind::ManifestEncode);
        Error::new(kind, format!("cannot encode as JSON: {e}"))
    })?;
    if text.len() as u64 <= neff_loader::MANIFEST_MAX {
        return Ok(MemberSource::Bytes(text));
    }
    Ok(MemberSource::Bytes(compact(&text)))
}

/// JSON text without the whitespace between tokens (strings kept as they are).
fn compact(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() / 2);
    let (mut in_string, mut escaped) = (false, false);
    for &b in json {
        if in_string {
            in_string = escaped || b != b'"';
            escaped = !escaped && b == b'\\';
        } else if b == b'"' {
            in_string = true;
        } else if b.is_ascii_whitespace() {
            continue;
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_compilers_bytes() {
        #[derive(Serialize)]
        struct Ordered {
            z: u8,
            a: Vec<u8>,
        }
        let v = Ordered { z: 1, a: vec![2] };
        let text = |l: Layout| String::from_utf8(l.encode(&v).unwrap()).unwrap();
        assert_eq!(
            text(Layout::Pretty2Sorted),
            "{\n  \"a\": [\n    2\n  ],\n  \"z\": 1\n}"
        );
        assert_eq!(
            text(Layout::Pretty4Sorted),
            "{\n    \"a\": [\n        2\n    ],\n    \"z\": 1\n}\n"
        );
        assert_eq!(
            text(Layout::Pretty4Ordered),
            "{\n    \"z\": 1,\n    \"a\": [\n        2\n    ]\n}\n"
        );
        assert_eq!(text(Layout::CompactSorted), "{\"a\":[2],\"z\":1}");
    }

    #[test]
    fn engine_stems() {
        assert_eq!(ContentStyle::Plain.engine_stem(Engine::Act), "act");
        assert_eq!(
            ContentStyle::Compiler.engine_stem(Engine::Act),
            "Activation"
        );
        assert_eq!(ContentStyle::Compiler.engine_stem(Engine::Sp), "SP");
    }

    #[test]
    fn compact_drops_whitespace_between_tokens_only() {
        let value = serde_json::json!({
            "a b": [1, {"c": "x \" y \\", "d": []}],
            "e\\": " \n\t ",
        });
        let pretty = serde_json::to_vec_pretty(&value).unwrap();
        let compact = compact(&pretty);
        assert_eq!(compact, serde_json::to_vec(&value).unwrap());
        let back: serde_json::Value = serde_json::from_slice(&compact).unwrap();
        assert_eq!(back, value);
    }
}
