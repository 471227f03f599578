//! The whole replay (`rtrace -i FILE`) over arbitrary bytes: reading the file, decoding
//! its header and records, printing them. Nothing may panic, and memory must stay
//! within one header and one record however the lengths lie (`cargo xtask fuzz` runs
//! it with libFuzzer's memory limits).
//!
//! The first byte picks the output options (plain, `-s`, `--json`, `-S --json`), the
//! rest is the file. The seeds in `corpus/record_file` are real recordings (`rtrace
//! record -- true`, `-e openat -- cat`, a faulting command) with a first byte put in
//! front and their headers' syscall formats narrowed to the syscalls they hold, so that
//! each stays small.

#![no_main]

use libfuzzer_sys::fuzz_target;
use trace_cli::{
    cli::Args,
    config,
    env::Env,
    perfconfig::TraceSettings,
    record::{file::Reader, replay::Replay},
};

const OPTIONS: [&[&str]; 4] = [&[], &["-s"], &["--json"], &["-S", "--json"]];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let mut argv = vec!["rtrace", "-i", "fuzz.data"];
    argv.extend_from_slice(OPTIONS[usize::from(pick) % OPTIONS.len()]);
    let args = <Args as clap::Parser>::try_parse_from(argv).expect("fixed arguments parse");
    // No perf config and an empty environment: the same replay on every machine.
    let cfg = config::resolve_with(args, |_| false, &TraceSettings::default(), &Env::default())
        .expect("fixed arguments resolve");
    if let Ok(replay) = Replay::start(&cfg, Reader::new(file, "fuzz.data")) {
        let mut out = Vec::new();
        let _ = replay.run(&mut out);
    }
});
