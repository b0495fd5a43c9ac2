//! libFuzzer entry point for the `replay` target; the logic and its contract live in
//! `schedlab::fuzz::replay` so that `tests/fuzz_regressions.rs` replays the same code.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| schedlab::fuzz::replay(data));
