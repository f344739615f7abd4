//! `.npy` version 1 headers: what the runtime's `numpy_load` needs (spec
//! §4.3.1: u16 0x4e93 at +0, header length u16 at +8, data at `+10+hlen`) and
//! what the header dict says (dtype, shape). Pure: the writer reads headers
//! from files, the loader parses the prefix it keeps of each `.npy` member.

use crate::manifest::Dtype;
use crate::{Error, ErrorKind};

/// The six magic bytes every `.npy` file starts with (`\x93NUMPY`; the
/// runtime checks only the first two, as u16 0x4e93).
pub const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Bytes before the header dict in a version 1 file: magic, version, u16 length.
pub const NPY_V1_PREAMBLE: usize = 10;

/// What a `.npy` v1 header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// The minor format version (major is always 1 here).
    pub minor: u8,
    /// The header dict's length (u16 at +8).
    pub header_len: u16,
    /// The `descr` string (`"<f4"`), when it is a plain string.
    pub descr: Option<String>,
    /// `fortran_order`.
    pub fortran_order: Option<bool>,
    /// `shape`.
    pub shape: Option<Vec<u64>>,
}

impl NpyHeader {
    /// Where the array data starts: `10 + header_len`.
    pub fn data_offset(&self) -> u64 {
        NPY_V1_PREAMBLE as u64 + u64::from(self.header_len)
    }

    /// The element type `descr` names, if it is one a manifest can spell:
    /// little-endian (or single-byte) ints, uints and floats, and `V2`, the
    /// 2-byte void neuronx-cc writes for bfloat16 weights (numpy has no
    /// bfloat16; `ml_dtypes.bfloat16` saves as `<V2` too).
    pub fn dtype(&self) -> Option<Dtype> {
        let descr = self.descr.as_deref()?;
        let (order, code) = match descr.as_bytes().first()? {
            b'<' | b'|' | b'=' | b'>' => descr.split_at(1),
            _ => ("", descr),
        };
        let dtype = match code {
            "f4" => Dtype::Float32,
            "f2" => Dtype::Float16,
            "i1" => Dtype::Int8,
            "i2" => Dtype::Int16,
            "i4" => Dtype::Int32,
            "i8" => Dtype::Int64,
            "u1" => Dtype::Uint8,
            "u2" => Dtype::Uint16,
            "u4" => Dtype::Uint32,
            "u8" => Dtype::Uint64,
            "f8" => Dtype::Other("float64".to_string()),
            "V2" => Dtype::Bfloat16,
            "b1" => Dtype::Other("bool".to_string()),
            _ => return None,
        };
        if order == ">" && self.item_size().unwrap_or(0) > 1 {
            return None;
        }
        Some(dtype)
    }

    /// Bytes per element for `descr` (`<f4` → 4), when it is a plain code.
    pub fn item_size(&self) -> Option<u64> {
        let descr = self.descr.as_deref()?;
        let digits = descr.trim_start_matches(['<', '>', '|', '=']);
        let digits = digits.get(1..)?;
        digits.parse().ok()
    }

    /// The data length the header implies (elements × item size), when known.
    pub fn expected_data_len(&self) -> Option<u64> {
        let elements = self
            .shape
            .as_ref()?
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))?;
        elements.checked_mul(self.item_size()?)
    }
}

/// The bytes are not a `.npy` v1 file, or the header is malformed.
fn bad<T>(why: impl Into<String>) -> Result<T, Error> {
    Err(Error::new(ErrorKind::Npy, why))
}

/// Checks the first 10 bytes: the magic and format version 1.
pub fn check_preamble(prefix: &[u8]) -> Result<(), Error> {
    if prefix.len() < NPY_V1_PREAMBLE {
        return bad(format!(
            "{} bytes is too short for an npy file (at least 10)",
            prefix.len()
        ));
    }
    if &prefix[..6] != NPY_MAGIC {
        return bad(format!(
            "bad magic {:02x?}: an .npy file starts with \\x93NUMPY (the runtime checks u16 0x4e93 at offset 0)",
            &prefix[..6]
        ));
    }
    if prefix[6] != 1 {
        return bad(format!(
            "npy format version {}.{} is not supported: the runtime reads version 1 only (u16 header length at +8)",
            prefix[6], prefix[7]
        ));
    }
    Ok(())
}

/// Parses a whole `.npy` v1 header held in `bytes` (at least 10 + header_len).
pub fn parse_header(bytes: &[u8]) -> Result<NpyHeader, Error> {
    check_preamble(bytes)?;
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]);
    let end = NPY_V1_PREAMBLE + usize::from(header_len);
    let Some(dict) = bytes.get(NPY_V1_PREAMBLE..end) else {
        return bad(format!(
            "the header length {header_len} at +8 runs past the end of the {}-byte file",
            bytes.len()
        ));
    };
    let Ok(dict) = std::str::from_utf8(dict) else {
        return bad("the header dict is not ASCII");
    };
    let mut header = NpyHeader {
        minor: bytes[7],
        header_len,
        descr: None,
        fortran_order: None,
        shape: None,
    };
    let entries = DictParser::new(dict)
        .parse()
        .map_err(|why| Error::new(ErrorKind::Npy, why))?;
    for (key, value) in entries {
        match (key.as_str(), value) {
            ("descr", PyValue::Str(s)) => header.descr = Some(s),
            ("fortran_order", PyValue::Bool(b)) => header.fortran_order = Some(b),
            ("shape", PyValue::Ints(dims)) => header.shape = Some(dims),
            // A structured dtype (a list of fields): no manifest spelling.
            ("descr", PyValue::Other) => {}
            ("descr" | "fortran_order" | "shape", _) => {
                return bad(format!("header key {key:?} has an unexpected value"))
            }
            _ => {}
        }
    }
    Ok(header)
}

/// A value in the header dict.
enum PyValue {
    Str(String),
    Bool(bool),
    Ints(Vec<u64>),
    Other,
}

/// The tiny subset of Python literal syntax `.npy` headers use.
struct DictParser<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> DictParser<'a> {
    fn new(text: &'a str) -> Self {
        DictParser {
            text: text.as_bytes(),
            at: 0,
        }
    }

    fn peek(&mut self) -> Option<u8> {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
        self.text.get(self.at).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!(
                "header dict: expected {:?} at offset {}",
                c as char, self.at
            ))
        }
    }

    fn parse(mut self) -> Result<Vec<(String, PyValue)>, String> {
        self.expect(b'{')?;
        let mut out = Vec::new();
        loop {
            if self.peek() == Some(b'}') {
                self.at += 1;
                break;
            }
            let key = self.string()?;
            self.expect(b':')?;
            let value = self.value()?;
            out.push((key, value));
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {}
                _ => {
                    return Err(format!(
                        "header dict: expected , or }} at offset {}",
                        self.at
                    ))
                }
            }
        }
        Ok(out)
    }

    fn string(&mut self) -> Result<String, String> {
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => {
                return Err(format!(
                    "header dict: expected a string at offset {}",
                    self.at
                ))
            }
        };
        let start = self.at + 1;
        let len = self.text[start..]
            .iter()
            .position(|&c| c == quote)
            .ok_or("header dict: unterminated string")?;
        self.at = start + len + 1;
        Ok(String::from_utf8_lossy(&self.text[start..start + len]).into_owned())
    }

    fn value(&mut self) -> Result<PyValue, String> {
        match self.peek() {
            Some(b'\'' | b'"') => Ok(PyValue::Str(self.string()?)),
            Some(b'(') => self.ints(),
            Some(b'[' | b'{') => {
                self.skip_nested()?;
                Ok(PyValue::Other)
            }
            _ => {
                let rest = &self.text[self.at..];
                for (word, value) in [("True", Some(true)), ("False", Some(false)), ("None", None)]
                {
                    if rest.starts_with(word.as_bytes()) {
                        self.at += word.len();
                        return Ok(value.map_or(PyValue::Other, PyValue::Bool));
                    }
                }
                Err(format!(
                    "header dict: unexpected value at offset {}",
                    self.at
                ))
            }
        }
    }

    fn ints(&mut self) -> Result<PyValue, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            match self.peek() {
                Some(b')') => {
                    self.at += 1;
                    return Ok(PyValue::Ints(dims));
                }
                Some(b',') => self.at += 1,
                Some(c) if c.is_ascii_digit() => {
                    let start = self.at;
                    while self.text.get(self.at).is_some_and(u8::is_ascii_digit) {
                        self.at += 1;
                    }
                    let digits = std::str::from_utf8(&self.text[start..self.at]).unwrap_or("");
                    let dim = digits.parse().map_err(|_| {
                        format!("header dict: shape dimension {digits} is too large")
                    })?;
                    // Python 2 files may write `3L`.
                    if self.text.get(self.at) == Some(&b'L') {
                        self.at += 1;
                    }
                    dims.push(dim);
                }
                _ => {
                    return Err(format!(
                        "header dict: bad shape tuple at offset {}",
                        self.at
                    ))
                }
            }
        }
    }

    fn skip_nested(&mut self) -> Result<(), String> {
        let mut depth = 0usize;
        while let Some(&c) = self.text.get(self.at) {
            match c {
                b'\'' | b'"' => {
                    self.string()?;
                    continue;
                }
                b'[' | b'(' | b'{' => depth += 1,
                b']' | b')' | b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.at += 1;
                        return Ok(());
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
        Err("header dict: unbalanced brackets".to_string())
    }
}

/// Builds a `.npy` v1 file's bytes around little-endian `data` (for tests
/// and examples): the header is padded with spaces to a 64-byte boundary
/// and ends with `\n`, as numpy writes it.
pub fn encode_v1(descr: &str, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    let total = NPY_V1_PREAMBLE + dict.len() + 1;
    dict.push_str(&" ".repeat(total.next_multiple_of(64) - total));
    dict.push('\n');
    let mut out = NPY_MAGIC.to_vec();
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_numpy_writes() {
        let bytes = encode_v1("<f4", &[2, 3], &[0u8; 24]);
        assert_eq!(bytes.len() % 64, 24, "the header is padded to 64 bytes");
        assert_eq!(u16::from_le_bytes([bytes[0], bytes[1]]), 0x4e93);
        let h = parse_header(&bytes).unwrap();
        assert_eq!(h.data_offset(), 128);
        assert_eq!(h.dtype(), Some(Dtype::Float32));
        assert_eq!(h.shape, Some(vec![2, 3]));
        assert_eq!(h.fortran_order, Some(false));
        assert_eq!(h.expected_data_len(), Some(24));

        let scalar = parse_header(&encode_v1("|u1", &[], &[7])).unwrap();
        assert_eq!(scalar.shape, Some(vec![]));
        assert_eq!(scalar.expected_data_len(), Some(1));
        assert_eq!(scalar.dtype(), Some(Dtype::Uint8));
        let one = parse_header(&encode_v1("<i8", &[5], &[0; 40])).unwrap();
        assert_eq!(one.shape, Some(vec![5]));
    }

    #[test]
    fn refusals_say_why() {
        let good = encode_v1("<f4", &[1], &[0; 4]);
        let mut bad_magic = good.clone();
        bad_magic[0] = 0x92;
        let err = parse_header(&bad_magic).unwrap_err().to_string();
        assert!(err.contains("0x4e93"), "{err}");
        let mut v2 = good.clone();
        v2[6] = 2;
        assert!(parse_header(&v2)
            .unwrap_err()
            .to_string()
            .contains("version 2.0"));
        let mut long = good.clone();
        long[8] = 0xff;
        assert!(parse_header(&long)
            .unwrap_err()
            .to_string()
            .contains("runs past"));
        assert!(parse_header(b"\x93NUMPY\x01").is_err());
        assert!(parse_header(&with_dict("{'descr': '<f4', 'shape': (2, x)}")).is_err());
        assert!(parse_header(&with_dict("{'descr': '<f4'")).is_err());
        assert!(parse_header(&with_dict("{'shape': '<f4'}")).is_err());
    }

    fn with_dict(dict: &str) -> Vec<u8> {
        let mut out = NPY_MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out
    }

    #[test]
    fn structured_descrs_and_python2_longs_parse() {
        let h = parse_header(&with_dict(
            "{'descr': [('a', '<f4'), ('b', '<i2')], 'fortran_order': True, 'shape': (3L, 2L), }\n",
        ))
        .unwrap();
        assert_eq!(h.descr, None);
        assert_eq!(h.shape, Some(vec![3, 2]));
        assert_eq!(h.fortran_order, Some(true));
        assert_eq!(h.dtype(), None);
    }

    #[test]
    fn big_endian_and_odd_descrs_have_no_manifest_dtype() {
        let h = |descr: &str| parse_header(&encode_v1(descr, &[1], &[])).unwrap();
        assert_eq!(h(">f4").dtype(), None);
        assert_eq!(h(">i1").dtype(), Some(Dtype::Int8));
        assert_eq!(h("<V2").dtype(), Some(Dtype::Bfloat16));
        assert_eq!(h("|V4").dtype(), None);
        assert_eq!(h("<f8").dtype(), Some(Dtype::Other("float64".into())));
        assert_eq!(h("<V2").item_size(), Some(2));
    }
}
