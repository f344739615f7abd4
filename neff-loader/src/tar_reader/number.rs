//! Numbers as libarchive 3.8's tar reader reads them: header fields octal
//! or GNU base-256, pax values decimal, all lenient and saturating.

/// A numeric header field (`size`, `mtime`, the checksum): base-256 when
/// the first byte has its top bit set, else octal (lenient: leading blanks
/// skipped, stopping at the first non-digit; saturating).
pub fn header_field(field: &[u8]) -> i64 {
    match field.first() {
        Some(&first) if first & 0x80 != 0 => base256(field),
        _ => parse_base(field, 8),
    }
}

/// libarchive's `tar_atol_base_n`: leading spaces and tabs skipped, an
/// optional `-`, then digits of `base` up to the first other byte (a `+`
/// or junk ends the number, `"15x"` is 15, `""` is 0); a value past the
/// range saturates at `i64::MAX` (or `i64::MIN`).
pub(super) fn parse_base(field: &[u8], base: u8) -> i64 {
    let mut bytes = field
        .iter()
        .copied()
        .skip_while(|&b| b == b' ' || b == b'\t')
        .peekable();
    let negative = bytes.next_if_eq(&b'-').is_some();
    let mut value: i64 = 0;
    for b in bytes {
        let digit = b.wrapping_sub(b'0');
        if digit >= base {
            break;
        }
        let next = value.checked_mul(i64::from(base)).and_then(|v| {
            if negative {
                v.checked_sub(i64::from(digit))
            } else {
                v.checked_add(i64::from(digit))
            }
        });
        match next {
            Some(v) => value = v,
            None if negative => return i64::MIN,
            None => return i64::MAX,
        }
    }
    value
}

/// GNU base-256: two's complement big-endian, the top bit of the first byte
/// a marker (bit 6 the sign). A value that does not fit saturates, as
/// libarchive's `tar_atol256` does.
fn base256(field: &[u8]) -> i64 {
    let negative = field[0] & 0x40 != 0;
    let sign_fill: u8 = if negative { 0xFF } else { 0 };
    let first = if negative {
        field[0] | 0x80
    } else {
        field[0] & 0x7F
    };
    let bytes: Vec<u8> = std::iter::once(first)
        .chain(field[1..].iter().copied())
        .collect();
    let extra = bytes.len().saturating_sub(8);
    let saturated = if negative { i64::MIN } else { i64::MAX };
    if bytes[..extra].iter().any(|&b| b != sign_fill) {
        return saturated;
    }
    let tail = &bytes[extra..];
    if (tail[0] ^ sign_fill) & 0x80 != 0 {
        return saturated;
    }
    let mut value: u64 = if negative { u64::MAX } else { 0 };
    for &b in tail {
        value = (value << 8) | u64::from(b);
    }
    value as i64
}

/// A pax time (`mtime`, `atime`, `ctime`, `LIBARCHIVE.creationtime`):
/// `-?[0-9]*(\.[0-9]*)?` with a whole part that fits in an `i64`; the whole
/// seconds, or `None` where libarchive warns "Ignoring malformed pax …".
pub(super) fn pax_time(value: &[u8]) -> Option<i64> {
    let (negative, rest) = match value.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, value),
    };
    let (whole, fraction) = match rest.iter().position(|&b| b == b'.') {
        Some(dot) => (&rest[..dot], &rest[dot + 1..]),
        None => (rest, &[][..]),
    };
    if !whole.iter().chain(fraction).all(u8::is_ascii_digit) {
        return None;
    }
    let mut seconds: i64 = 0;
    for &d in whole {
        seconds = seconds.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(if negative { -seconds } else { seconds })
}

/// A pax number (`size`, `uid`, `gid`, `SCHILY.dev`, …): `None` where
/// libarchive fails the header: a value over 64 bytes, a negative one, or
/// one that saturates (`i64::MAX`: "Tar size attribute overflow").
pub(super) fn pax_number(value: &[u8]) -> Option<i64> {
    if value.len() > 64 {
        return None;
    }
    let n = parse_base(value, 10);
    (0..i64::MAX).contains(&n).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octal_fields_are_read_leniently() {
        assert_eq!(parse_base(b"\t0000000015\0", 8), 13);
        assert_eq!(parse_base(b"00000000015x", 8), 13);
        assert_eq!(parse_base(b"15zzzzzzzzzz", 8), 13);
        assert_eq!(parse_base(b"00000000089\0", 8), 0);
        assert_eq!(parse_base(b"0000 000015\0", 8), 0);
        assert_eq!(parse_base(b"-0000000015\0", 8), -13);
        assert_eq!(parse_base(b"            ", 8), 0);
        assert_eq!(parse_base(b"+13", 10), 0);
        assert_eq!(parse_base(b" 13", 10), 13);
        assert_eq!(parse_base(&[b'9'; 40], 10), i64::MAX);
        assert_eq!(parse_base(b"-99999999999999999999", 10), i64::MIN);
    }

    #[test]
    fn base256_saturates() {
        let mut f = [0u8; 12];
        f[0] = 0x80;
        f[11] = 13;
        assert_eq!(header_field(&f), 13);
        assert_eq!(header_field(&[0xFF; 12]), -1);
        let mut big = [0u8; 12];
        big[0] = 0x80;
        big[3] = 1;
        assert_eq!(header_field(&big), i64::MAX);
        let mut top = [0u8; 12];
        top[0] = 0x80;
        top[4] = 0x80;
        assert_eq!(
            header_field(&top),
            i64::MAX,
            "the sign bit of the low 8 bytes"
        );
    }

    #[test]
    fn pax_values() {
        assert_eq!(pax_time(b"1.5"), Some(1));
        assert_eq!(pax_time(b"-1.5"), Some(-1));
        assert_eq!(pax_time(b""), Some(0));
        assert_eq!(pax_time(b"."), Some(0));
        assert_eq!(pax_time(b"-"), Some(0));
        assert_eq!(pax_time(b"1e5"), None);
        assert_eq!(pax_time(b" 1"), None);
        assert_eq!(pax_time(b"+1"), None);
        assert_eq!(pax_time(b"1.5.5"), None);
        assert_eq!(pax_time(&[b'9'; 18]), Some(999_999_999_999_999_999));
        assert_eq!(pax_time(&[b'9'; 19]), None);
        assert_eq!(pax_number(b"13x"), Some(13));
        assert_eq!(pax_number(b""), Some(0));
        assert_eq!(pax_number(b"-1"), None);
        assert_eq!(pax_number(b"-0"), Some(0));
        assert_eq!(pax_number(b"9223372036854775807"), None);
        assert_eq!(pax_number(&[b'0'; 64]), Some(0));
        assert_eq!(pax_number(&[b'0'; 65]), None);
    }
}
