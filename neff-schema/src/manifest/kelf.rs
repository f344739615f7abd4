//! The KELF descriptor, `kelf-<i>.json` (fixture `kelf-a.json`; spec §4.2).

use serde::{Deserialize, Serialize};

use super::{extra_keys, Extra, Manifest};
use crate::target::Target;

/// The descriptor version producers and the fixture write.
pub const KELF_VERSION: &str = "0.5";

/// `kelf-<i>.json`: the subgraphs of one KELF and the target it was built for.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KelfDescriptor {
    /// The subgraphs; names must be unique (the runtime asserts it).
    pub graphs: Vec<GraphRef>,
    /// `"<major>.<minor>"`; must contain a `.` (fixture `"0.5"`).
    pub version: String,
    /// `sunda`/`v2`, `cayman`/`v3`, `mariana`/`v4`, `*` (any instance) or
    /// empty (SUNDA). Kept as written (`KelfDescriptor::target` reads it).
    #[schemars(with = "Option<Target>")]
    pub target: Option<String>,
    /// Every other key (`revision`, …), kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One subgraph of a KELF.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphRef {
    /// The subgraph's `def.json` member, from the archive root (`"sg00/def.json"`);
    /// every other file name of the subgraph resolves against its folder.
    pub definition: String,
    /// The subgraph name (`"sg00"`).
    pub name: String,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(KelfDescriptor, GraphRef);

impl Manifest for KelfDescriptor {
    const SCHEMA_NAME: &'static str = "kelf";
}

impl KelfDescriptor {
    /// An empty descriptor for `target`, version 0.5.
    pub fn new(target: Target) -> KelfDescriptor {
        KelfDescriptor {
            graphs: Vec::new(),
            version: KELF_VERSION.to_string(),
            target: Some(target.as_str().to_string()),
            extra: Extra::new(),
        }
    }

    /// Appends subgraph `name` with its definition at `<name>/def.json`.
    pub fn graph(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.graphs.push(GraphRef {
            definition: format!("{name}/def.json"),
            name,
            extra: Extra::new(),
        });
        self
    }

    /// The target as the runtime reads it; `None` when the key is absent
    /// (the kbin target then stays 0, which G28 refuses) or names a string the
    /// runtime refuses (G16).
    pub fn target(&self) -> Option<Target> {
        self.target.as_deref().and_then(Target::parse_runtime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::to_vec_pretty;

    #[test]
    fn fixture_descriptor_is_129_bytes_with_a_newline() {
        let k = KelfDescriptor::new(Target::Any).graph("sg00");
        let mut bytes = to_vec_pretty(&k).unwrap();
        bytes.push(b'\n');
        assert_eq!(bytes.len(), 129, "spec §4.2");
        assert_eq!(k.target(), Some(Target::Any));
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["graphs"][0]["definition"], "sg00/def.json");
    }
}
