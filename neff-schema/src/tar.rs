//! The tar header block: where each field lies, named once for the reader
//! (the loader's libarchive-exact walk), the writer, the framing recovery
//! and the tests (as [`crate::HeaderFields`] names the NEFF header's).

use std::ops::Range;

/// A tar block: headers and data padding are counted in these.
pub const BLOCK: usize = 512;

/// One field of a header block: its offset and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Offset in the block.
    pub at: usize,
    /// Length in bytes.
    pub len: usize,
}

impl Field {
    const fn new(at: usize, len: usize) -> Field {
        Field { at, len }
    }

    /// The field's byte range in the block.
    pub const fn range(self) -> Range<usize> {
        self.at..self.at + self.len
    }
}

/// `name`: the path (ustar: its last part, the prefix holds the rest).
pub const NAME: Field = Field::new(0, 100);
/// `mode`, octal or base-256.
pub const MODE: Field = Field::new(100, 8);
/// `uid`.
pub const UID: Field = Field::new(108, 8);
/// `gid`.
pub const GID: Field = Field::new(116, 8);
/// `size` of the data that follows.
pub const SIZE: Field = Field::new(124, 12);
/// `mtime`, seconds.
pub const MTIME: Field = Field::new(136, 12);
/// `chksum`: the byte sum with this field read as spaces.
pub const CHECKSUM: Field = Field::new(148, 8);
/// `typeflag`.
pub const TYPE_FLAG: Field = Field::new(156, 1);
/// `linkname`.
pub const LINK_NAME: Field = Field::new(157, 100);
/// `magic` (`"ustar\0"` POSIX, `"ustar "` GNU).
pub const MAGIC: Field = Field::new(257, 6);
/// `version` (`"00"` POSIX, `" \0"` GNU).
pub const VERSION: Field = Field::new(263, 2);
/// `magic` and `version` together.
pub const MAGIC_VERSION: Field = Field::new(257, 8);
/// `uname`.
pub const UNAME: Field = Field::new(265, 32);
/// `gname`.
pub const GNAME: Field = Field::new(297, 32);
/// `devmajor`.
pub const DEV_MAJOR: Field = Field::new(329, 8);
/// `devminor`.
pub const DEV_MINOR: Field = Field::new(337, 8);
/// ustar `prefix`: the path's leading folders.
pub const PREFIX: Field = Field::new(345, 155);
/// GNU: the old sparse map (4 entries of a 12-byte offset and a 12-byte
/// size); libarchive reads an entry as sparse when its first byte is not 0.
pub const GNU_SPARSE: Field = Field::new(386, 96);
/// GNU: whether extension blocks of the sparse map follow.
pub const GNU_IS_EXTENDED: Field = Field::new(482, 1);
/// GNU `realsize` (of a sparse file).
pub const GNU_REAL_SIZE: Field = Field::new(483, 12);

/// POSIX ustar's magic and version.
pub const USTAR_MAGIC: &[u8; 8] = b"ustar\x0000";
/// GNU tar's magic and version.
pub const GNU_MAGIC: &[u8; 8] = b"ustar  \0";

/// A header block, read through its fields.
pub trait HeaderBlock {
    /// The block's bytes.
    fn bytes(&self) -> &[u8; BLOCK];

    /// The bytes of `field`.
    fn field(&self, field: Field) -> &[u8] {
        &self.bytes()[field.range()]
    }

    /// The bytes of `field` up to its first NUL (a text field).
    fn text(&self, field: Field) -> &[u8] {
        let raw = self.field(field);
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        &raw[..end]
    }

    /// The type flag byte.
    fn type_flag(&self) -> u8 {
        self.bytes()[TYPE_FLAG.at]
    }

    /// The byte sums libarchive compares the checksum with: unsigned and
    /// signed, the checksum field counted as eight spaces.
    fn checksum_sums(&self) -> (u64, i64) {
        let (mut unsigned, mut signed) = (0u64, 0i64);
        for (i, &b) in self.bytes().iter().enumerate() {
            let b = if CHECKSUM.range().contains(&i) {
                b' '
            } else {
                b
            };
            unsigned += u64::from(b);
            signed += i64::from(b as i8);
        }
        (unsigned, signed)
    }
}

impl HeaderBlock for [u8; BLOCK] {
    fn bytes(&self) -> &[u8; BLOCK] {
        self
    }
}

/// Writes `block`'s checksum as POSIX and libarchive write it: six octal
/// digits of the unsigned sum, a NUL, a space.
pub fn set_checksum(block: &mut [u8; BLOCK]) {
    let (sum, _) = block.checksum_sums();
    let digits = format!("{sum:06o}");
    block[CHECKSUM.range()].copy_from_slice(b"        ");
    block[CHECKSUM.at..CHECKSUM.at + 6].copy_from_slice(&digits.as_bytes()[digits.len() - 6..]);
    block[CHECKSUM.at + 6..CHECKSUM.at + 8].copy_from_slice(b"\0 ");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_tile_the_ustar_header() {
        let fields = [
            NAME, MODE, UID, GID, SIZE, MTIME, CHECKSUM, TYPE_FLAG, LINK_NAME, MAGIC, VERSION,
            UNAME, GNAME, DEV_MAJOR, DEV_MINOR, PREFIX,
        ];
        let mut at = 0;
        for f in fields {
            assert_eq!(f.at, at, "{f:?}");
            at += f.len;
        }
        assert_eq!(at, 500);
        assert_eq!(MAGIC_VERSION.range(), MAGIC.at..VERSION.range().end);
    }

    #[test]
    fn checksum_is_the_sum_with_the_field_as_spaces() {
        let mut block = [0u8; BLOCK];
        block[..4].copy_from_slice(b"name");
        block[MAGIC_VERSION.range()].copy_from_slice(USTAR_MAGIC);
        set_checksum(&mut block);
        let (sum, signed) = block.checksum_sums();
        assert_eq!(block.field(CHECKSUM), format!("{sum:06o}\0 ").as_bytes());
        assert_eq!(sum as i64, signed, "no byte has its top bit set");
        block[0] = 0xE9;
        let (sum, signed) = block.checksum_sums();
        assert_eq!(sum as i64 - 256, signed);
        assert_eq!(block.text(NAME), b"\xe9ame");
    }
}
