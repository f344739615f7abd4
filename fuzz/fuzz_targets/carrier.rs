#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::checks::carrier(data));
