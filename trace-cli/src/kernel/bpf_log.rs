//! What the eBPF programs say on their rare paths (a full map, a child that could not be
//! handed off or adopted, a pid namespace out of sight, a thread that took its leader's
//! number), through aya-log. Off unless asked: the level is a load-time constant, so
//! with `-v` absent the verifier removes every log statement from the programs. `-v`
//! prints their warnings, `-vv` their debug lines too, each as one `rtrace:` line.

use aya::Ebpf;
use aya_log::EbpfLogger;
use log::{Level, Log, Metadata, Record};

/// The value of aya-log's `AYA_LOG_LEVEL` global for rtrace's `-v` count: the most
/// detailed level the programs keep (`aya_log_common::Level` numbers; 0 keeps none).
pub fn level_for(verbose: u8) -> u8 {
    match verbose {
        0 => 0,
        1 => aya_log::Level::Warn as u8,
        _ => aya_log::Level::Debug as u8,
    }
}

/// Writes each record the programs sent as one line on stderr.
pub struct StderrLines;

impl Log for StderrLines {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        // The programs only send what the level at load time keeps.
        true
    }

    fn log(&self, record: &Record<'_>) {
        let level = match record.level() {
            Level::Error => "error",
            Level::Warn => "warning",
            Level::Info => "info",
            Level::Debug | Level::Trace => "debug",
        };
        say!("rtrace: bpf {level}: {}", record.args());
    }

    fn flush(&self) {}
}

/// The programs' log, read when they wrote to it; none when it was not asked for.
pub fn open(
    bpf: &mut Ebpf,
    verbose: u8,
) -> Result<Option<EbpfLogger<StderrLines>>, aya_log::Error> {
    if level_for(verbose) == 0 {
        return Ok(None);
    }
    EbpfLogger::init_with_logger(bpf, StderrLines).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_picks_the_programs_log_level() {
        assert_eq!(level_for(0), 0);
        assert_eq!(level_for(1), 2, "warnings and errors");
        assert_eq!(level_for(2), 4, "debug, info, warnings and errors");
        assert_eq!(level_for(5), 4);
    }
}
