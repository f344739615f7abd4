//! The KELF descriptor's `target` string (spec §4.2, `parse_target`).

use std::fmt;
use std::str::FromStr;

use crate::arch::Arch;
use crate::error::{Error, ErrorKind};

/// What a NEFF was compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// One architecture.
    Arch(Arch),
    /// `"*"`: whatever the instance is (always matches).
    Any,
}

impl Target {
    /// SUNDA (`"sunda"`, `"v2"`).
    pub const SUNDA: Target = Target::Arch(Arch::Sunda);
    /// CAYMAN (`"cayman"`, `"v3"`).
    pub const CAYMAN: Target = Target::Arch(Arch::Cayman);
    /// MARIANA (`"mariana"`, `"v4"`).
    pub const MARIANA: Target = Target::Arch(Arch::Mariana);

    /// Every target string the runtime's `parse_target` knows, exactly as it
    /// compares them (case-sensitive): the one list G16, [`Target::parse_runtime`]
    /// and the JSON Schemas' enum use.
    pub const RUNTIME_NAMES: [(&'static str, Target); 8] = [
        ("sunda", Target::SUNDA),
        ("cayman", Target::CAYMAN),
        ("mariana", Target::MARIANA),
        ("*", Target::Any),
        ("v2", Target::SUNDA),
        ("v3", Target::CAYMAN),
        ("v4", Target::MARIANA),
        ("", Target::SUNDA),
    ];

    /// The runtime's reading of a target string: one of [`Target::RUNTIME_NAMES`]
    /// (canonical names, `v2`/`v3`/`v4`, `"*"`, and the empty string, which means
    /// SUNDA). Anything else is `None` (G16, "Invalid target").
    pub fn parse_runtime(text: &str) -> Option<Target> {
        Target::RUNTIME_NAMES
            .iter()
            .find(|(name, _)| *name == text)
            .map(|&(_, target)| target)
    }

    /// The canonical string a writer emits (`"sunda"`, `"cayman"`, `"mariana"`, `"*"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Arch(a) => a.name(),
            Target::Any => "*",
        }
    }

    /// The architecture this target resolves to on an instance of `instance`.
    pub fn resolve(self, instance: Arch) -> Arch {
        match self {
            Target::Arch(a) => a,
            Target::Any => instance,
        }
    }

    /// The instance architectures this target is meant to load on.
    pub fn arches(self) -> Vec<Arch> {
        match self {
            Target::Arch(a) => vec![a],
            Target::Any => Arch::ALL.to_vec(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Target {
    type Err = Error;

    /// Like [`Target::parse_runtime`], but also accepts any letter case
    /// (for command lines; JSON reads a target exactly, as the runtime does).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Target::parse_runtime(&s.to_ascii_lowercase()).ok_or_else(|| {
            Error::new(
                ErrorKind::BadTarget,
                format!("invalid target {s:?}: expected sunda (v2), cayman (v3), mariana (v4), * or an empty string"),
            )
        })
    }
}

impl serde::Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Target {
    /// As the runtime reads it ([`Target::parse_runtime`], exact letter case).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Target::parse_runtime(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "invalid target {text:?} (the runtime refuses it, G16): expected one of {:?}",
                Target::RUNTIME_NAMES.map(|(name, _)| name)
            ))
        })
    }
}

string_schema!(
    Target,
    "Target architecture: sunda (v2), cayman (v3), mariana (v4), or * for any.",
    "enum": Target::RUNTIME_NAMES.map(|(name, _)| name),
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_spellings() {
        assert_eq!(Target::parse_runtime("v3"), Some(Target::CAYMAN));
        assert_eq!(Target::parse_runtime(""), Some(Target::SUNDA));
        assert_eq!(Target::parse_runtime("*"), Some(Target::Any));
        assert_eq!(
            Target::parse_runtime("Cayman"),
            None,
            "the runtime compares exactly"
        );
        assert_eq!("Cayman".parse::<Target>().unwrap(), Target::CAYMAN);
        assert!("trn2".parse::<Target>().is_err());
        assert_eq!(Target::Any.resolve(Arch::Mariana), Arch::Mariana);
        assert_eq!(Target::SUNDA.arches(), vec![Arch::Sunda]);
        assert_eq!(Target::Any.arches().len(), 3);
        assert_eq!(
            serde_json::to_string(&Target::MARIANA).unwrap(),
            "\"mariana\""
        );
    }
}
