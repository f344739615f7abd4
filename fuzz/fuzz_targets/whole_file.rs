#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = neff_fuzz::whole_file::run(data);
});
