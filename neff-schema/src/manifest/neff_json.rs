//! `neff.json`: the TVM/NNVM graph-runtime JSON that names the model's inputs
//! and outputs and, through its `__kelf` node, the KELF descriptor (spec §4.1).

use serde::{Deserialize, Serialize};

use super::dtype::Dtype;
use super::{extra_keys, Extra, Manifest};

/// The `attrs.func_name` that marks the KELF node.
pub const KELF_FUNC_NAME: &str = "__kelf";

/// `neff.json`. All five modelled top-level keys are required by the runtime.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NeffJson {
    /// The graph nodes: one `null` node per input, then the `__kelf` node.
    pub nodes: Vec<Node>,
    /// Node indices of the inputs; input i's tensor is entry `node_row_ptr[arg_nodes[i]]`.
    pub arg_nodes: Vec<u64>,
    /// The outputs, as `[node_id, output_index, version]`.
    pub heads: Vec<NodeEntry>,
    /// Per-entry tensor attributes.
    pub attrs: GraphAttrs,
    /// Node i's first entry id (TVM's running output count; one more than nodes).
    pub node_row_ptr: Vec<u64>,
    /// The framework's signature (neuronx-cc): tensor names with their id,
    /// dtype and shape. Shown by `inspect`; not read by the runtime.
    pub metadata: Option<Metadata>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Manifest for NeffJson {
    const SCHEMA_NAME: &'static str = "neff-json";
}

/// A graph node.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Node {
    /// `"null"` for an input, `"tvm_op"` for the KELF node (fixture).
    pub op: String,
    /// The tensor name (inputs) or the subgraph node name (fixture `"sg_tonga0"`).
    pub name: String,
    /// Node attributes; every value a string.
    pub attrs: Option<NodeAttrs>,
    /// Entries this node consumes.
    pub inputs: Option<Vec<NodeEntry>>,
    /// The tensors' names: an input node's own, the KELF node's outputs
    /// (the compilers' spelling).
    pub output_names: Option<Vec<String>>,
    /// Input nodes: `"0"` (fixture).
    pub is_param: Option<String>,
    /// The output tensor's name on the KELF node (fixture, one output).
    pub output: Option<String>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A node's `attrs`. As in the fixture and the producer, values are strings.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeAttrs {
    /// `"__kelf"` marks the KELF node.
    pub func_name: Option<String>,
    /// `"0"`.
    pub flatten_data: Option<String>,
    /// The input count, as a decimal string.
    pub num_inputs: Option<String>,
    /// The KELF descriptor member (`"kelf-0.json"`); must be a string.
    pub kelf: Option<String>,
    /// The output count, as a decimal string.
    pub num_outputs: Option<String>,
    /// The node name again (producer).
    pub tvm_op: Option<String>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A TVM node entry `[node_id, index, version]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeEntry(pub u64, pub u64, pub u64);

/// TVM's typed list attribute: `["list_str", [...]]`, `["list_shape", [...]]`,
/// `["list_int", [...]]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaggedList<T>(pub String, pub Vec<T>);

/// The graph's `attrs`: one value per entry id.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphAttrs {
    /// `["list_shape", [[dims] per entry]]`; at most 32 dims each.
    pub shape: TaggedList<Vec<u64>>,
    /// `["list_int", [storage id per entry]]`.
    pub storage_id: Option<TaggedList<u64>>,
    /// `["list_str", [dtype per entry]]`.
    pub dltype: TaggedList<Dtype>,
    /// Every other key (`output_names`, …), kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(
    NeffJson,
    Node,
    NodeAttrs,
    GraphAttrs,
    Metadata,
    Signature,
    SignatureTensor
);

/// neff.json `metadata`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Metadata {
    /// Signatures by name (real output: `default`).
    pub signatures: Option<std::collections::BTreeMap<String, Signature>>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One signature: the model's inputs and outputs by framework name.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Signature {
    /// The inputs.
    pub inputs: Option<std::collections::BTreeMap<String, SignatureTensor>>,
    /// The outputs.
    pub outputs: Option<std::collections::BTreeMap<String, SignatureTensor>>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One tensor of a signature.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SignatureTensor {
    /// The tensor's position among the signature's tensors.
    pub id: Option<u64>,
    /// The element type (`"float32"`).
    pub dtype: Option<String>,
    /// The shape.
    pub shape: Option<Vec<u64>>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tensor as `neff.json` declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoTensor {
    /// The name.
    pub name: String,
    /// The element type.
    pub dtype: Dtype,
    /// The shape (at most 32 dims).
    pub shape: Vec<u64>,
}

impl NeffJson {
    /// The graph the fixture and this crate's writers use: one `null` node
    /// per input, then one `tvm_op` node named `kelf_node_name` with
    /// `attrs.func_name "__kelf"` and `attrs.kelf = kelf_member` that
    /// consumes every input and produces every output. Entry ids: inputs
    /// 0..k, outputs k..k+m; `storage_id` = entry id.
    pub fn single_kelf(
        kelf_node_name: &str,
        kelf_member: &str,
        inputs: &[IoTensor],
        outputs: &[IoTensor],
    ) -> NeffJson {
        let k = inputs.len() as u64;
        let m = outputs.len() as u64;
        let mut nodes: Vec<Node> = inputs
            .iter()
            .map(|t| Node {
                op: "null".to_string(),
                name: t.name.clone(),
                inputs: Some(Vec::new()),
                attrs: None,
                is_param: Some("0".to_string()),
                output: None,
                output_names: None,
                extra: Extra::new(),
            })
            .collect();
        nodes.push(Node {
            op: "tvm_op".to_string(),
            name: kelf_node_name.to_string(),
            inputs: Some((0..k).map(|i| NodeEntry(i, 0, 0)).collect()),
            attrs: Some(NodeAttrs {
                func_name: Some(KELF_FUNC_NAME.to_string()),
                kelf: Some(kelf_member.to_string()),
                num_inputs: Some(k.to_string()),
                num_outputs: Some(m.to_string()),
                flatten_data: Some("0".to_string()),
                tvm_op: None,
                extra: Extra::new(),
            }),
            is_param: None,
            output: match outputs {
                [only] => Some(only.name.clone()),
                _ => None,
            },
            output_names: Some(outputs.iter().map(|t| t.name.clone()).collect()),
            extra: Extra::new(),
        });
        let all = || inputs.iter().chain(outputs);
        NeffJson {
            nodes,
            arg_nodes: (0..k).collect(),
            heads: (0..m).map(|j| NodeEntry(k, j, 0)).collect(),
            node_row_ptr: (0..=k).chain(std::iter::once(k + m)).collect(),
            attrs: GraphAttrs {
                dltype: TaggedList("list_str".into(), all().map(|t| t.dtype.clone()).collect()),
                shape: TaggedList(
                    "list_shape".into(),
                    all().map(|t| t.shape.clone()).collect(),
                ),
                storage_id: Some(TaggedList("list_int".into(), (0..k + m).collect())),
                extra: Extra::new(),
            },
            metadata: None,
            extra: Extra::new(),
        }
    }

    /// The index of the node the runtime takes as the KELF node
    /// (`attrs.func_name == "__kelf"`), if any.
    pub fn kelf_node(&self) -> Option<usize> {
        self.nodes.iter().position(|n| {
            n.attrs
                .as_ref()
                .and_then(|a| a.func_name.as_deref())
                .is_some_and(|f| f == KELF_FUNC_NAME)
        })
    }

    /// The entry id of input `i` (`node_row_ptr[arg_nodes[i]]`), if in range.
    pub fn input_entry(&self, i: usize) -> Option<u64> {
        let node = usize::try_from(*self.arg_nodes.get(i)?).ok()?;
        self.node_row_ptr.get(node).copied()
    }

    /// The entry id of output `j` (`node_row_ptr[node_id] + index`), if in range.
    pub fn output_entry(&self, j: usize) -> Option<u64> {
        let head = self.heads.get(j)?;
        let node = usize::try_from(head.0).ok()?;
        self.node_row_ptr.get(node)?.checked_add(head.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{from_slice, to_vec_pretty};

    fn t(name: &str, shape: &[u64]) -> IoTensor {
        IoTensor {
            name: name.into(),
            dtype: Dtype::Float32,
            shape: shape.to_vec(),
        }
    }

    #[test]
    fn single_kelf_matches_the_fixture_graph() {
        let g = NeffJson::single_kelf(
            "sg_tonga0",
            "kelf-a.json",
            &[t("input", &[32])],
            &[t("output", &[32])],
        );
        let v = serde_json::to_value(&g).unwrap();
        assert_eq!(v["arg_nodes"], serde_json::json!([0]));
        assert_eq!(v["heads"], serde_json::json!([[1, 0, 0]]));
        assert_eq!(v["node_row_ptr"], serde_json::json!([0, 1, 2]));
        assert_eq!(
            v["attrs"]["shape"],
            serde_json::json!(["list_shape", [[32], [32]]])
        );
        assert_eq!(
            v["attrs"]["storage_id"],
            serde_json::json!(["list_int", [0, 1]])
        );
        assert_eq!(
            v["attrs"]["dltype"],
            serde_json::json!(["list_str", ["float32", "float32"]])
        );
        assert_eq!(
            v["nodes"][0],
            serde_json::json!({"inputs": [], "is_param": "0", "name": "input", "op": "null"})
        );
        let kelf = &v["nodes"][1];
        assert_eq!(kelf["op"], "tvm_op");
        assert_eq!(kelf["attrs"]["func_name"], "__kelf");
        assert_eq!(kelf["attrs"]["kelf"], "kelf-a.json");
        assert_eq!(kelf["attrs"]["num_inputs"], "1");
        assert_eq!(kelf["output"], "output");
        assert_eq!(g.kelf_node(), Some(1));
        assert_eq!(g.input_entry(0), Some(0));
        assert_eq!(g.output_entry(0), Some(1));
    }

    #[test]
    fn entries_for_several_inputs_and_outputs() {
        let g = NeffJson::single_kelf(
            "k",
            "kelf-0.json",
            &[t("a", &[2]), t("b", &[3])],
            &[t("x", &[4]), t("y", &[5]), t("z", &[])],
        );
        assert_eq!(g.node_row_ptr, vec![0, 1, 2, 5]);
        assert_eq!(g.arg_nodes, vec![0, 1]);
        for j in 0..3 {
            assert_eq!(g.output_entry(j), Some(2 + j as u64));
        }
        assert_eq!(g.input_entry(1), Some(1));
        assert_eq!(g.attrs.shape.1[4], Vec::<u64>::new());
        assert!(g.nodes[2].output.is_none(), "output only with one output");
    }

    #[test]
    fn fixture_neff_json_round_trips() {
        let text = br#"{"arg_nodes":[0],"attrs":{"dltype":["list_str",["float32","float32"]],
            "shape":["list_shape",[[32],[32]]],"storage_id":["list_int",[0,1]]},
            "heads":[[1,0,0]],"node_row_ptr":[0,1,2],
            "nodes":[{"inputs":[],"is_param":"0","name":"input","op":"null"},
            {"attrs":{"flatten_data":"0","func_name":"__kelf","kelf":"kelf-a.json","num_inputs":"1","num_outputs":"1"},
             "inputs":[[0,0,0]],"name":"sg_tonga0","op":"tvm_op","output":"output"}]}"#;
        let g: NeffJson = from_slice("neff.json", text).unwrap();
        let back: serde_json::Value = serde_json::from_slice(&to_vec_pretty(&g).unwrap()).unwrap();
        assert_eq!(
            back,
            serde_json::from_slice::<serde_json::Value>(text).unwrap()
        );
    }
}
