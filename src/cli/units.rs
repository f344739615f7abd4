//! Byte counts for people: `1.5 MiB`, as `ls -h` and `du -h` print them
//! (binary units, one decimal from KiB up).

/// `n` bytes in binary units: `512 B`, `1.0 KiB`, `286.0 KiB`, `4.0 GiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(292_824), "286.0 KiB");
        assert_eq!(human_bytes(4_320_133_120), "4.0 GiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
    }
}
