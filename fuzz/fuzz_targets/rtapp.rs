//! libFuzzer entry point for the `rtapp` target; the logic and its contract live in
//! `schedlab::fuzz::rtapp` so that `tests/fuzz_regressions.rs` replays the same code.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| schedlab::fuzz::rtapp(data));
