//! `sgNN/act_info.json`: the activation table sets an ACT engine manifest
//! names in `activation_function_sets` (its `act_info` key names this
//! member). Each set is three members beside it: the profile
//! (`<set>.json`), the bucket table (`<set>_bkt.bin`) and the control table
//! (`<set>_ctrl.bin`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{extra_keys, Extra, Manifest};

/// `act_info.json`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ActInfo {
    /// The activation table sets.
    #[serde(default)]
    pub act_func_sets: Vec<ActFuncSet>,
    /// Which keys of a set name members (real output:
    /// `["bkt_bin", "ctrl_bin", "profile_json"]`, also the default).
    pub pwp_file_keys: Option<Vec<String>>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One activation table set.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ActFuncSet {
    /// The set's name, as `activation_function_sets` lists it.
    pub name: String,
    /// The functions the set holds, each with the compiler's number for it.
    pub act: Option<BTreeMap<String, u64>>,
    /// The bucket table member (`<set>_bkt.bin`).
    pub bkt_bin: Option<String>,
    /// The control table member (`<set>_ctrl.bin`).
    pub ctrl_bin: Option<String>,
    /// The profile member (`<set>.json`).
    pub profile_json: Option<String>,
    /// Every other key, kept as it is.
    #[serde(flatten)]
    pub extra: Extra,
}

extra_keys!(ActInfo, ActFuncSet);

impl Manifest for ActInfo {
    const SCHEMA_NAME: &'static str = "act-info";
}

impl ActFuncSet {
    /// The members this set names, with their keys.
    pub fn members(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("bkt_bin", &self.bkt_bin),
            ("ctrl_bin", &self.ctrl_bin),
            ("profile_json", &self.profile_json),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
    }
}
