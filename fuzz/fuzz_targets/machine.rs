//! libFuzzer entry point for the `machine` target; the logic and its contract live in
//! `schedlab::fuzz::machine` so that `tests/fuzz_regressions.rs` replays the same code.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| schedlab::fuzz::machine(data));
