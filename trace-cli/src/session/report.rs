//! What a session says at its end: its exit status, the summary, and what could not be
//! traced or counted. A failed output ends the session as a signal would.

use std::io::{self, Write};

use aya::Ebpf;
use trace_common::maps::{FORK_HANDOFF, PIDS_TO_TRACE};

use crate::{
    config::Config,
    kernel::{loader::Settings, stats_maps},
    output::{self, Sink, summary::SummaryOptions},
};

use super::{
    SessionError,
    event_loop::{Ended, output_stop},
};

/// How a session whose output failed ends: as SIGPIPE would have ended it for a broken
/// pipe (as perf's does), with the error otherwise.
pub(super) fn failed_output(out: &Sink) -> Option<Result<i32, SessionError>> {
    let e = out.failure()?;
    Some(match e.raw_os_error() {
        Some(libc::EPIPE) => Ok(128 + libc::SIGPIPE),
        code => Err(SessionError::Io {
            what: "writing the trace".into(),
            source: io::Error::from_raw_os_error(code.unwrap_or(libc::EIO)),
        }),
    })
}

/// rtrace's exit status: the command's, else that of the stop that ended it (a signal,
/// or a failed output; with a command to stop), else 0.
pub(super) fn exit_status(
    command_exit: Option<i32>,
    signal: Option<i32>,
    out: &Sink,
    command: bool,
) -> i32 {
    match (command_exit, signal.or_else(|| output_stop(out))) {
        (Some(code), _) => code,
        (None, Some(sig)) if command => 128 + sig,
        _ => 0,
    }
}

/// A per-thread summary moves exited threads' numbers out of the kernel as it goes,
/// where /proc tells rtrace's own truth about them (see `stats_maps::sweep_allowed`).
pub(super) fn thread_stats(
    cfg: &Config,
    bpf: &Ebpf,
) -> Result<Option<stats_maps::ThreadStats>, SessionError> {
    Ok(match &cfg.summary {
        Some(s) if !s.total => Some(stats_maps::ThreadStats::open(bpf, s.hist)?),
        _ => None,
    })
}

/// Writes the summary, if asked for; how many threads it shows together.
pub(super) fn summary(
    cfg: &Config,
    thread_stats: Option<stats_maps::ThreadStats>,
    bpf: &Ebpf,
    out: &mut Sink,
) -> Result<u64, SessionError> {
    let Some(summary) = &cfg.summary else {
        return Ok(0);
    };
    let mut folded_threads = 0;
    let sections = match thread_stats {
        Some(t) => {
            let (sections, folded) = t.finish();
            folded_threads = folded;
            sections
        }
        None => stats_maps::total_sections(bpf, summary.hist)?,
    };
    let mut text = String::new();
    let opts = SummaryOptions {
        max_rows: summary.max_rows,
        errno: summary.errno,
        time_percent: summary.time_percent,
    };
    if cfg.json {
        output::summary::render_json(&mut text, sections, &opts);
    } else {
        output::summary::render(&mut text, sections, &opts);
    }
    let _ = out.write_all(text.as_bytes());
    Ok(folded_threads)
}

/// Says what the summary shows together or lacks, and which child tasks could not be
/// traced, and why.
pub(super) fn losses(folded_threads: u64, ended: &Ended, settings: &Settings) {
    if folded_threads > 0 {
        say!(
            "rtrace: the summary shows {folded_threads} threads together, in one section (\"{folded_threads} more threads, together\"): it keeps {} (thread, syscall) rows apart",
            stats_maps::KEPT_ROWS_MAX
        );
    }
    if ended.stats_lost > 0 {
        say!(
            "rtrace: {} syscalls are missing from the summary: its maps were full (they hold {} thread and syscall pairs; raise RTRACE_SUMMARY_ENTRIES)",
            ended.stats_lost,
            settings.summary_entries
        );
    }
    // The kernel sends the per-syscall events for 64-bit calls only, and 32-bit calls
    // run other functions: a traced task that went on to run a 32-bit program (rtrace
    // chose the calls' own hooks for a 64-bit command) made calls that no line shows.
    if ended.compat_execs > 0 && settings.hooks.own_hooks() {
        let n = ended.compat_execs;
        say!(
            "rtrace: {n} exec{} of a 32-bit program by traced tasks: {} calls are not shown, as -e ran on the chosen calls' own events or functions, which only 64-bit calls pass (RTRACE_SYSCALL_HOOKS=raw shows them)",
            if n == 1 { "" } else { "s" },
            if n == 1 { "its" } else { "their" },
        );
    }
    for (count, why) in [
        (
            ended.lost.full_map,
            format!(
                "the map {PIDS_TO_TRACE} was full (it holds {} tasks; raise RTRACE_PID_MAP_ENTRIES)",
                settings.pid_map_entries
            ),
        ),
        (
            ended.lost.full_handoff,
            format!(
                "the map {FORK_HANDOFF} of children on their way in was full (it holds {} tasks; raise RTRACE_PID_MAP_ENTRIES)",
                settings.pid_map_entries
            ),
        ),
        (
            ended.lost.unseen,
            "they run in a pid namespace that rtrace's own cannot see into (run rtrace in the host's pid namespace)".to_string(),
        ),
    ] {
        if count > 0 {
            say!("rtrace: {count} child tasks could not be traced: {why}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_exit_status_is_the_commands_then_the_stops() {
        let fine = output::sink(Some(Path::new("/dev/null"))).unwrap();
        assert_eq!(exit_status(Some(3), Some(libc::SIGINT), &fine, true), 3);
        assert_eq!(exit_status(None, Some(libc::SIGINT), &fine, true), 130);
        assert_eq!(
            exit_status(None, Some(libc::SIGINT), &fine, false),
            0,
            "a stop ends -p and -a traces without failing"
        );
        assert_eq!(exit_status(None, None, &fine, true), 0);
        assert!(failed_output(&fine).is_none());
        let mut full = output::sink(Some(Path::new("/dev/full"))).unwrap();
        let _ = full.write_all(b"a line\n");
        let _ = full.flush();
        assert_eq!(
            exit_status(None, None, &full, true),
            128 + libc::SIGTERM,
            "a full disk stops the command as SIGTERM would"
        );
        assert!(matches!(
            failed_output(&full),
            Some(Err(SessionError::Io { .. }))
        ));
    }
}
