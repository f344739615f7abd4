//! The runtime a NEFF is checked against (spec §5.5).

use neff_schema::features::{self, SUPPORTED_FEATURES_2_31};
use neff_schema::{Arch, HashLayoutPolicy};
use serde::Serialize;
use std::path::Path;

use crate::report::Report;

/// The Neuron runtime release whose loader the gates model.
pub const RUNTIME_VERSION: &str = "2.31";

/// The GPSIMD ucode ABI version of runtime 2.31 (`.rodata 0x84fe68`).
pub const UCODE_ABI_2_31: &str = "1.21.1.0";

/// The state-buffer offset an EVTACCEL carveout must have (INFERRED, §9 C17):
/// the data model's constant, re-exported.
pub use neff_schema::manifest::def_json::EVTACCEL_OFFSET;

/// What the simulated runtime is and how it was configured for the load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RuntimeProfile {
    /// The live instance's NeuronCore architecture (`al_hal_tpb_get_arch_type()`).
    pub instance_arch: Arch,
    /// `NEURON_RT_ALLOW_LEGACY_NEFF=1`: relaxes the arch check and the Cayman
    /// state-buffer reservation check, and nothing else.
    pub allow_legacy_neff: bool,
    /// The per-load hash verification flag (`neff_parse`'s third argument).
    pub verify_hash: bool,
    /// Which layouts of the payload digest G9 accepts (default: either). Real
    /// compilers write both (spec §11.1); which one a runtime started with
    /// `NEURON_RT_VALIDATE_HASH=true` computes is not known.
    pub hash_layout: HashLayoutPolicy,
    /// Feature bits the runtime understands; others trip the trapdoor (G5).
    #[serde(serialize_with = "serialize_hex")]
    #[schemars(with = "String")]
    pub supported_features: u64,
    /// The runtime's GPSIMD ucode ABI version; a ucode lib's major version must
    /// equal this one's (G24b).
    pub ucode_abi: String,
    /// The offset an EVTACCEL carveout must have on Cayman (G30). Default
    /// 0x37FF8: read from an IDA operand, INFERRED·MED (spec §9 C17).
    #[serde(serialize_with = "serialize_hex")]
    #[schemars(with = "String")]
    pub evtaccel_offset: u64,
    /// Enforce dense var_ids (`max(var_id) + 1 == count`, G20a). The spec cannot
    /// tell whether the runtime always runs this check or only under a def.json
    /// key (§9 C10); on by default.
    pub check_var_ids: bool,
    /// `NEURON_RT_VIRTUAL_CORE_SIZE`: used for the virtual core size (G29) when
    /// the header has feature bit 0x400 (`neff_feature_vnc`); otherwise, and when
    /// unset, the header's `vnc_size` is used. LOW confidence (spec §2.1 notes).
    pub virtual_core_size: Option<u32>,
    /// Also accept a `__kelf` node marked by `op: "__kelf"` (the producer-page
    /// reading, §9 C6). The decompiled runtime does not; off by default.
    pub lenient_kelf_node: bool,
    /// Also accept `var` and `dma_queue` as arrays of objects with a `name`
    /// key (the metadata-schema reading, §9 C8). The fixture uses objects keyed
    /// by name; off by default.
    pub accept_array_sections: bool,
}

impl Default for RuntimeProfile {
    /// Runtime 2.31 on a Cayman (trn2) instance with hash verification on.
    fn default() -> Self {
        RuntimeProfile {
            instance_arch: Arch::Cayman,
            allow_legacy_neff: false,
            verify_hash: true,
            hash_layout: HashLayoutPolicy::Any,
            supported_features: SUPPORTED_FEATURES_2_31,
            ucode_abi: UCODE_ABI_2_31.to_string(),
            evtaccel_offset: EVTACCEL_OFFSET,
            check_var_ids: true,
            virtual_core_size: None,
            lenient_kelf_node: false,
            accept_array_sections: false,
        }
    }
}

impl RuntimeProfile {
    /// The major number of [`RuntimeProfile::ucode_abi`] (the part before the first `.`).
    pub fn ucode_abi_major(&self) -> Option<i64> {
        self.ucode_abi.split('.').next()?.trim().parse().ok()
    }

    /// The default profile on another instance arch.
    pub fn for_arch(instance_arch: Arch) -> Self {
        RuntimeProfile {
            instance_arch,
            ..RuntimeProfile::default()
        }
    }
}

/// The settings of a simulated runtime as `neff verify` takes them on its
/// command line: the one mapping between verify flags and a [`RuntimeProfile`].
/// The CLI maps its parsed flags onto these fields; the fixture corpus records
/// them as arguments with [`ProfileSettings::args`] and reads them back with
/// [`ProfileSettings::from_args`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileSettings {
    /// `--instance-arch`: one arch, or `None` for `all` (every arch, accepted
    /// when it loads on every arch it targets).
    pub instance_arch: Option<Arch>,
    /// `--allow-legacy-neff`.
    pub allow_legacy_neff: bool,
    /// `--no-verify-hash`.
    pub no_verify_hash: bool,
    /// `--hash-layout POLICY` (`None`: the default, `any`).
    pub hash_layout: Option<HashLayoutPolicy>,
    /// `--supported-features MASK`.
    pub supported_features: Option<u64>,
    /// `--evtaccel-offset OFFSET`.
    pub evtaccel_offset: Option<u64>,
    /// `--no-check-var-ids`.
    pub no_check_var_ids: bool,
    /// `--virtual-core-size N`.
    pub virtual_core_size: Option<u32>,
    /// `--ucode-abi VERSION`.
    pub ucode_abi: Option<String>,
}

impl ProfileSettings {
    /// The default runtime on one instance arch.
    pub fn on(arch: Arch) -> ProfileSettings {
        ProfileSettings {
            instance_arch: Some(arch),
            ..ProfileSettings::default()
        }
    }

    /// The default runtime on every arch (`--instance-arch all`).
    pub fn all() -> ProfileSettings {
        ProfileSettings::default()
    }

    /// The `neff verify` arguments, `--instance-arch` always first.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![
            "--instance-arch".to_string(),
            self.instance_arch.map_or("all", Arch::name).to_string(),
        ];
        if self.allow_legacy_neff {
            args.push("--allow-legacy-neff".into());
        }
        if self.no_verify_hash {
            args.push("--no-verify-hash".into());
        }
        if let Some(policy) = self.hash_layout {
            args.extend(["--hash-layout".into(), policy.name().to_string()]);
        }
        if let Some(mask) = self.supported_features {
            args.extend(["--supported-features".into(), format!("{mask:#x}")]);
        }
        if let Some(offset) = self.evtaccel_offset {
            args.extend(["--evtaccel-offset".into(), format!("{offset:#x}")]);
        }
        if self.no_check_var_ids {
            args.push("--no-check-var-ids".into());
        }
        if let Some(n) = self.virtual_core_size {
            args.extend(["--virtual-core-size".into(), n.to_string()]);
        }
        if let Some(abi) = &self.ucode_abi {
            args.extend(["--ucode-abi".into(), abi.clone()]);
        }
        args
    }

    /// Parses `neff verify` profile arguments (those [`ProfileSettings::args`]
    /// writes, as `--flag value` or `--flag=value`). `--json` is ignored;
    /// anything else is an error.
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<ProfileSettings, String> {
        let mut s = ProfileSettings::default();
        let mut it = args.iter().map(AsRef::as_ref);
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v)),
                _ => (arg, None),
            };
            let mut value = |what: &str| -> Result<String, String> {
                inline
                    .map(str::to_string)
                    .or_else(|| it.next().map(str::to_string))
                    .ok_or_else(|| format!("{flag} needs {what}"))
            };
            match flag {
                "--json" => {}
                "--instance-arch" => {
                    let v = value("an arch")?;
                    s.instance_arch = match v.as_str() {
                        "all" => None,
                        other => Some(other.parse().map_err(|e| format!("{flag}: {e}"))?),
                    };
                }
                "--allow-legacy-neff" => s.allow_legacy_neff = true,
                "--no-verify-hash" => s.no_verify_hash = true,
                "--no-check-var-ids" => s.no_check_var_ids = true,
                "--hash-layout" => {
                    let v = value("a layout")?;
                    s.hash_layout = Some(
                        [
                            HashLayoutPolicy::Any,
                            HashLayoutPolicy::Standard,
                            HashLayoutPolicy::WordReversed,
                        ]
                        .into_iter()
                        .find(|p| p.name() == v)
                        .ok_or_else(|| {
                            format!("{flag}: {v:?} is not any, standard or word-reversed")
                        })?,
                    );
                }
                "--supported-features" => {
                    s.supported_features = Some(
                        parse_features(&value("a mask")?).map_err(|e| format!("{flag}: {e}"))?,
                    )
                }
                "--evtaccel-offset" => {
                    s.evtaccel_offset = Some(parse_number(flag, &value("an offset")?)?)
                }
                "--virtual-core-size" => {
                    let v = value("a number")?;
                    s.virtual_core_size = Some(
                        v.parse()
                            .map_err(|_| format!("{flag}: {v:?} is not a u32"))?,
                    );
                }
                "--ucode-abi" => s.ucode_abi = Some(value("a version")?),
                other => return Err(format!("unknown verify argument {other:?}")),
            }
        }
        Ok(s)
    }

    /// The runtime profile these settings describe (`instance_arch` is
    /// Cayman, the profile default, under `all`; [`ProfileSettings::verify`]
    /// replaces it per arch).
    pub fn profile(&self) -> RuntimeProfile {
        let defaults = RuntimeProfile::default();
        RuntimeProfile {
            instance_arch: self.instance_arch.unwrap_or(defaults.instance_arch),
            allow_legacy_neff: self.allow_legacy_neff,
            verify_hash: !self.no_verify_hash,
            hash_layout: self.hash_layout.unwrap_or(defaults.hash_layout),
            supported_features: self
                .supported_features
                .unwrap_or(defaults.supported_features),
            evtaccel_offset: self.evtaccel_offset.unwrap_or(defaults.evtaccel_offset),
            check_var_ids: !self.no_check_var_ids,
            virtual_core_size: self.virtual_core_size,
            ucode_abi: self.ucode_abi.clone().unwrap_or(defaults.ucode_abi),
            ..defaults
        }
    }

    /// Checks a NEFF file as `neff verify FILE` does with these settings and
    /// returns the report whose fields `--json` prints at top level: under one
    /// arch that arch's report; under `all` the deciding report, with
    /// `accepted` the all-arch verdict and `instance_arch` `"all"`.
    pub fn verify(&self, path: impl AsRef<Path>) -> Result<Report, crate::Error> {
        let path = path.as_ref();
        let profile = self.profile();
        Ok(match self.instance_arch {
            Some(_) => crate::load_file(path, &profile)?.report,
            None => crate::verify_file(path, &profile)?.combined_report(),
        })
    }
}

/// A 64-bit number as `verify` reads masks: `0x` hex, `0b` binary or decimal
/// (`_` separators allowed).
pub fn parse_mask(text: &str) -> Result<u64, String> {
    let t = text.trim().replace('_', "");
    let parsed = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else if let Some(bin) = t.strip_prefix("0b") {
        u64::from_str_radix(bin, 2)
    } else {
        t.parse()
    };
    parsed
        .map_err(|_| format!("{text:?} is not a 64-bit number (use decimal, 0x hex or 0b binary)"))
}

/// A feature-bit mask: a comma-separated list of numbers (as [`parse_mask`]
/// reads them, several bits each if wanted) and names from the feature-bit
/// table (`neff_feature_vnc`, or `vnc` without the `neff_feature_` prefix, in
/// any case), OR'ed together: `0x400,custom_ops`. An unknown name is an error
/// listing the known names.
pub fn parse_features(text: &str) -> Result<u64, String> {
    text.split(',')
        .try_fold(0, |mask, item| Ok(mask | feature_item(item.trim())?))
}

/// One item of [`parse_features`]: a number, or a feature name
/// ([`neff_schema::features::bit_of`]).
fn feature_item(item: &str) -> Result<u64, String> {
    if item.starts_with(|c: char| c.is_ascii_digit()) {
        return parse_mask(item);
    }
    features::bit_of(item).ok_or_else(|| features::unknown_feature(item).to_string())
}

fn parse_number(flag: &str, text: &str) -> Result<u64, String> {
    parse_mask(text).map_err(|e| format!("{flag}: {e}"))
}

fn serialize_hex<S: serde::Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{value:#x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_args_round_trip() {
        let s = ProfileSettings {
            instance_arch: Some(Arch::Sunda),
            allow_legacy_neff: true,
            no_verify_hash: true,
            hash_layout: Some(HashLayoutPolicy::WordReversed),
            supported_features: Some(0xFFF_FFFF),
            evtaccel_offset: Some(0x1000),
            no_check_var_ids: true,
            virtual_core_size: Some(2),
            ucode_abi: Some("2.0.0.0".into()),
        };
        assert_eq!(ProfileSettings::from_args(&s.args()), Ok(s));
        assert_eq!(
            ProfileSettings::from_args(&["--instance-arch=all", "--json"]),
            Ok(ProfileSettings::all())
        );
        assert!(ProfileSettings::from_args(&["--bogus"]).is_err());
        assert!(ProfileSettings::from_args(&["--instance-arch"]).is_err());
        assert!(ProfileSettings::from_args(&["--supported-features", "zz"]).is_err());
        assert!(ProfileSettings::from_args(&["--hash-layout", "zz"]).is_err());
        assert_eq!(
            ProfileSettings::from_args(&["--supported-features", "vnc,0x2"])
                .map(|s| s.supported_features),
            Ok(Some(0x402))
        );
    }

    #[test]
    fn features_by_name_number_or_both() {
        assert_eq!(parse_features("neff_feature_vnc,custom_ops"), Ok(0x404));
        assert_eq!(parse_features("0x400,custom_ops"), Ok(0x404));
        assert_eq!(parse_features("NEFF_FEATURE_VNC"), Ok(0x400));
        assert_eq!(parse_features("Neff_Feature_Custom_Ops , dge"), Ok(0x1004));
        assert_eq!(parse_features("neff_feature_dge"), Ok(0x1000));
        assert_eq!(
            parse_features("neff_feature_DMA_desc_higher_dim"),
            Ok(0x200)
        );
        assert_eq!(parse_features("1024"), Ok(0x400));
        assert_eq!(parse_features("0x7FF_FFFF"), Ok(0x7FF_FFFF));
        assert_eq!(parse_features("0b11"), Ok(3));
        let err = parse_features("vnc,bogus").unwrap_err();
        assert!(err.contains("\"bogus\""), "{err}");
        assert!(
            err.contains("neff_feature_vnc") && err.contains("large_tensor_support"),
            "{err}"
        );
        assert!(parse_features("").is_err());
        assert!(parse_features("vnc,").is_err());
        assert!(parse_features("0xZZ").is_err());
    }
}
