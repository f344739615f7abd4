//! The byte strings of a Python pickle, found by walking its opcodes (every
//! opcode of protocols 0 to 5 and the length of its argument), never by
//! scanning the bytes: torch-neuron(x) pickles a NEFF as one string in a
//! traced model's `data.pkl`. Hand-written, since no maintained crate walks
//! a pickle without building its objects (a torch pickle's classes and
//! persistent ids) or keeps the strings' offsets; linear in the input.

/// One string or bytes argument of the pickle: its bytes' offset and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PickledString {
    /// Offset of the first byte of the string's content in the pickle.
    pub offset: usize,
    /// Its length in bytes.
    pub len: usize,
}

/// How an opcode's argument is laid out.
enum Arg {
    /// None.
    Nothing,
    /// Exactly this many bytes.
    Fixed(usize),
    /// A little-endian length of this many bytes, then that many bytes (a
    /// string, bytes or long).
    Counted(usize),
    /// Text up to a newline.
    Line,
    /// Two newline-ended lines (`GLOBAL`, `INST`).
    TwoLines,
}

/// The argument of `op`, and whether a counted argument is a string or
/// bytes (as opposed to a `LONG1`/`LONG4` integer); `None` for an unknown
/// opcode.
fn argument(op: u8) -> Option<(Arg, bool)> {
    use Arg::*;
    Some(match op {
        // MARK STOP POP POP_MARK DUP BINPERSID REDUCE APPEND BUILD DICT
        // EMPTY_DICT APPENDS LIST EMPTY_LIST OBJ SETITEM TUPLE EMPTY_TUPLE
        // SETITEMS NONE
        b'(' | b'.' | b'0' | b'1' | b'2' | b'Q' | b'R' | b'a' | b'b' | b'd' | b'}' | b'e'
        | b'l' | b']' | b'o' | b's' | b't' | b')' | b'u' | b'N' => (Nothing, false),
        // NEWOBJ TUPLE1-3 NEWTRUE NEWFALSE EMPTY_SET ADDITEMS FROZENSET
        // NEWOBJ_EX STACK_GLOBAL MEMOIZE NEXT_BUFFER READONLY_BUFFER
        0x81 | 0x85..=0x89 | 0x8f..=0x94 | 0x97 | 0x98 => (Nothing, false),
        // FLOAT INT LONG PERSID STRING UNICODE GET PUT
        b'F' | b'I' | b'L' | b'P' | b'S' | b'V' | b'g' | b'p' => (Line, false),
        // GLOBAL INST
        b'c' | b'i' => (TwoLines, false),
        // BININT BININT1 BININT2 BINGET LONG_BINGET BINPUT LONG_BINPUT BINFLOAT
        b'J' | b'j' | b'r' => (Fixed(4), false),
        b'K' | b'h' | b'q' => (Fixed(1), false),
        b'M' => (Fixed(2), false),
        b'G' => (Fixed(8), false),
        // PROTO EXT1 EXT2 EXT4 FRAME
        0x80 | 0x82 => (Fixed(1), false),
        0x83 => (Fixed(2), false),
        0x84 => (Fixed(4), false),
        0x95 => (Fixed(8), false),
        // LONG1 LONG4
        0x8a => (Counted(1), false),
        0x8b => (Counted(4), false),
        // SHORT_BINSTRING SHORT_BINBYTES SHORT_BINUNICODE
        b'U' | b'C' | 0x8c => (Counted(1), true),
        // BINSTRING BINUNICODE BINBYTES
        b'T' | b'X' | b'B' => (Counted(4), true),
        // BINUNICODE8 BINBYTES8 BYTEARRAY8
        0x8d | 0x8e | 0x96 => (Counted(8), true),
        _ => return None,
    })
}

/// Every string and bytes argument of the pickle `data`, in order, up to
/// its `STOP`; an error names the offset of what does not parse.
pub(crate) fn strings(data: &[u8]) -> Result<Vec<PickledString>, String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let short = |what: &str, at: usize| format!("pickle truncated in {what} at offset {at}");
    loop {
        let Some(&op) = data.get(at) else {
            return Err(short("the opcode stream (no STOP)", at));
        };
        let (arg, is_string) = argument(op)
            .ok_or_else(|| format!("unknown pickle opcode {op:#04x} at offset {at}"))?;
        at += 1;
        match arg {
            Arg::Nothing => {}
            Arg::Fixed(n) => {
                if data.len() - at < n {
                    return Err(short("an argument", at));
                }
                at += n;
            }
            Arg::Counted(width) => {
                let field = data
                    .get(at..at + width)
                    .ok_or_else(|| short("a length", at))?;
                let mut len = 0u64;
                for (i, &b) in field.iter().enumerate() {
                    len |= u64::from(b) << (8 * i);
                }
                at += width;
                let len = usize::try_from(len)
                    .ok()
                    .filter(|&n| n <= data.len() - at)
                    .ok_or_else(|| short("a string", at))?;
                if is_string {
                    out.push(PickledString { offset: at, len });
                }
                at += len;
            }
            Arg::Line | Arg::TwoLines => {
                let lines = if matches!(arg, Arg::Line) { 1 } else { 2 };
                for _ in 0..lines {
                    let end = data[at..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .ok_or_else(|| short("a text argument", at))?;
                    at += end + 1;
                }
            }
        }
        if op == b'.' {
            return Ok(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_of_every_counted_width_are_found_where_they_are() {
        // PROTO 2, BINUNICODE "neff", SHORT_BINBYTES "ab", BININT1 7,
        // BINBYTES8 "xyz", GLOBAL "a\nb\n", STOP
        let mut p = vec![0x80, 2, b'X', 4, 0, 0, 0];
        p.extend_from_slice(b"neff");
        p.extend_from_slice(&[b'C', 2, b'a', b'b', b'K', 7, 0x8e]);
        p.extend_from_slice(&3u64.to_le_bytes());
        p.extend_from_slice(b"xyz");
        p.extend_from_slice(b"ca\nb\n.");
        let found = strings(&p).unwrap();
        let texts: Vec<&[u8]> = found
            .iter()
            .map(|s| &p[s.offset..s.offset + s.len])
            .collect();
        assert_eq!(texts, [&b"neff"[..], b"ab", b"xyz"]);
    }

    #[test]
    fn damaged_pickles_name_the_offset() {
        assert!(strings(&[b'X', 9, 0, 0, 0, b'a'])
            .unwrap_err()
            .contains("truncated in a string at offset 5"));
        assert!(strings(&[0xff]).unwrap_err().contains("0xff at offset 0"));
        assert!(strings(b"N").unwrap_err().contains("no STOP"));
        // A length that would overflow is refused, not trusted.
        let mut p = vec![0x8e];
        p.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(strings(&p).is_err());
    }
}
