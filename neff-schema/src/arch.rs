//! The runtime's `al_hal_tpb_arch_type` (spec §4.2).

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind};

/// A NeuronCore architecture as the runtime numbers it (`al_hal_tpb_arch_type`).
///
/// The loader prints these ordinals as `v%u` (spec §5.2, G17).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arch {
    /// SUNDA = 2 (`"sunda"`, `"v2"`; also what an empty target string resolves to).
    Sunda = 2,
    /// CAYMAN = 3 (`"cayman"`, `"v3"`).
    Cayman = 3,
    /// MARIANA = 4 (`"mariana"`, `"v4"`).
    Mariana = 4,
}

impl Arch {
    /// Every architecture the runtime knows, in ordinal order.
    pub const ALL: [Arch; 3] = [Arch::Sunda, Arch::Cayman, Arch::Mariana];

    /// The runtime ordinal (2, 3 or 4).
    pub fn ordinal(self) -> u32 {
        self as u32
    }

    /// The canonical lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Sunda => "sunda",
            Arch::Cayman => "cayman",
            Arch::Mariana => "mariana",
        }
    }

    /// The architecture with this runtime ordinal, if any.
    pub fn from_ordinal(ordinal: u32) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.ordinal() == ordinal)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Arch {
    type Err = Error;

    /// Accepts the canonical names and the `v2`/`v3`/`v4` aliases, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "sunda" | "v2" => Ok(Arch::Sunda),
            "cayman" | "v3" => Ok(Arch::Cayman),
            "mariana" | "v4" => Ok(Arch::Mariana),
            _ => Err(Error::new(
                ErrorKind::UnknownArch,
                format!(
                    "unknown architecture {s:?}: expected sunda (v2), cayman (v3) or mariana (v4)"
                ),
            )),
        }
    }
}

impl serde::Serialize for Arch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Arch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

string_schema!(
    Arch,
    "NeuronCore architecture: sunda (v2), cayman (v3) or mariana (v4).",
    "enum": ["sunda", "cayman", "mariana"],
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ordinals() {
        for arch in Arch::ALL {
            assert_eq!(arch.name().parse::<Arch>().unwrap(), arch);
            assert_eq!(
                format!("v{}", arch.ordinal()).parse::<Arch>().unwrap(),
                arch
            );
            assert_eq!(Arch::from_ordinal(arch.ordinal()), Some(arch));
        }
        assert_eq!(Arch::Cayman.ordinal(), 3);
        assert!("trn9".parse::<Arch>().is_err());
        assert_eq!(Arch::from_ordinal(5), None);
    }
}
