//! Seeding the pid maps before the syscall programs run: who is left out
//! (`pids_filtered`), who is traced (`pids_to_trace`), then the bounded prune sweep of
//! both, which drops what died before the exit program could see it.

use std::io;

use aya::Ebpf;
use trace_common::maps::{
    FILTER_ALWAYS, FILTER_UNTIL_EXEC, PIDS_FILTERED, PIDS_TO_TRACE, TRACE_ARM_ON_EXEC, TRACE_ON,
};

use crate::{
    config::{Config, Targets},
    decode::fd_table::ProcSeed,
    kernel::{loader, map_ops::PidMapFd},
    pids::{
        proc_stat::{Liveness, process_liveness, task_liveness},
        prune::prune,
        targets,
    },
    workload::Workload,
};

use super::{SessionError, io_err};

/// Writes both pid maps, then sweeps them.
pub(super) fn write_pid_maps(
    bpf: &Ebpf,
    cfg: &Config,
    workload: Option<&Workload>,
    key_by_tid: bool,
) -> Result<(), SessionError> {
    let max_entries = cfg.pid_map_entries;
    let filtered = PidMapFd::new(loader::map_fd(bpf, PIDS_FILTERED)?);
    for (pid, value) in filtered_pids(cfg, workload) {
        filtered
            .insert(pid, value)
            .map_err(map_write_err(PIDS_FILTERED, pid, max_entries))?;
    }
    let to_trace = PidMapFd::new(loader::map_fd(bpf, PIDS_TO_TRACE)?);
    for (key, flags) in keys_to_trace(cfg, workload, key_by_tid) {
        to_trace
            .insert(key, flags)
            .map_err(map_write_err(PIDS_TO_TRACE, key, max_entries))?;
    }
    sweep(cfg, filtered, to_trace, key_by_tid)
}

/// The tasks left out, each with how (`FILTER_*`).
fn filtered_pids(cfg: &Config, workload: Option<&Workload>) -> Vec<(u32, u32)> {
    // pids_filtered is keyed by process: a thread's number stands for its process.
    let mut filter: Vec<u32> = cfg
        .filter_pids
        .iter()
        .map(|&p| targets::process_of(p).unwrap_or(p))
        .collect();
    // perf's rule: without --filter-pids, a system-wide trace leaves out the terminal
    // host rtrace runs under (sshd, gnome-terminal); with it, only what the user named
    // (and rtrace itself, always in the list).
    let user_filters = cfg.filter_pids.iter().any(|&p| p != std::process::id());
    if let (Targets::System { .. }, false) = (&cfg.targets, user_filters) {
        filter.extend(targets::ancestor_to_filter(&targets::ancestors()));
    }
    let mut filter: Vec<(u32, u32)> = filter.into_iter().map(|p| (p, FILTER_ALWAYS)).collect();
    if let (Targets::System { .. }, Some(w)) = (&cfg.targets, workload) {
        // Held before its exec, the workload runs rtrace's code: not worth showing.
        filter.push((w.pid, FILTER_UNTIL_EXEC));
    }
    filter
}

/// The keys of `pids_to_trace`, each with its flags (`TRACE_*`), sorted.
fn keys_to_trace(cfg: &Config, workload: Option<&Workload>, key_by_tid: bool) -> Vec<(u32, u32)> {
    let mut keys: Vec<(u32, u32)> = Vec::new();
    match &cfg.targets {
        Targets::Workload(_) => {
            if let Some(w) = workload {
                keys.push((w.pid, TRACE_ON | TRACE_ARM_ON_EXEC));
            }
        }
        Targets::Pids(pids) => {
            for &pid in pids {
                // As perf does, a thread's number given to -p traces its whole process.
                let process = targets::process_of(pid).unwrap_or(pid);
                if process != pid && cfg.verbose > 0 {
                    say!("rtrace: {pid} is a thread of process {process}: tracing the process");
                }
                if key_by_tid {
                    // A process that exits now simply has no threads left to list.
                    let tids = targets::threads_of(process).unwrap_or_default();
                    keys.extend(tids.into_iter().map(|t| (t, TRACE_ON)));
                } else {
                    keys.push((process, TRACE_ON));
                }
            }
        }
        Targets::Tids(tids) => keys.extend(tids.iter().map(|&t| (t, TRACE_ON))),
        Targets::System { .. } => {}
    }
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// After the last write: drop what died before the exit program could see it. A
/// process key stays while any of its threads lives, a thread key while it does.
fn sweep(
    cfg: &Config,
    filtered: PidMapFd<'_>,
    to_trace: PidMapFd<'_>,
    key_by_tid: bool,
) -> Result<(), SessionError> {
    let by_process = |pid| process_liveness(pid) == Liveness::Alive;
    let by_thread = |tid| task_liveness(tid) == Liveness::Alive;
    let to_trace_alive: &dyn Fn(u32) -> bool = if key_by_tid { &by_thread } else { &by_process };
    for (name, mut fd, alive) in [
        (PIDS_FILTERED, filtered, &by_process as &dyn Fn(u32) -> bool),
        (PIDS_TO_TRACE, to_trace, to_trace_alive),
    ] {
        let stats = prune(&mut fd, cfg.pid_map_entries, alive)
            .map_err(io_err(format!("pruning {name}")))?;
        if cfg.verbose > 0 {
            say!("rtrace: pruned {name}: {stats:?}");
        }
    }
    Ok(())
}

/// A failed write to a pid map; a full map (E2BIG) says which and what to do.
fn map_write_err(
    name: &'static str,
    key: u32,
    entries: u32,
) -> impl FnOnce(io::Error) -> SessionError {
    move |source| match source.raw_os_error() {
        Some(libc::E2BIG) => SessionError::MapFull {
            name,
            entries,
            suggest: entries.saturating_mul(2).max(8192),
        },
        _ => SessionError::Io {
            what: format!("writing {key} to {name}"),
            source,
        },
    }
}

/// Where each target is (its working directory, its fds), read once tracing has begun
/// (the held command has not run).
pub(super) fn read_procs(cfg: &Config, workload: Option<&Workload>) -> Vec<ProcSeed> {
    crate::pids::fd_seed::read(processes_to_seed(cfg, workload), workload.map(|w| w.pid))
}

/// The processes whose working directory is read when tracing starts: the targets
/// (every process, system-wide).
pub(super) fn processes_to_seed(cfg: &Config, workload: Option<&Workload>) -> Vec<u32> {
    let mut pids: Vec<u32> = match &cfg.targets {
        Targets::Workload(_) => Vec::new(),
        Targets::Pids(list) | Targets::Tids(list) => list
            .iter()
            .filter_map(|&p| targets::process_of(p))
            .collect(),
        Targets::System { .. } => procfs::process::all_processes()
            .map(|all| {
                all.filter_map(|p| u32::try_from(p.ok()?.pid).ok())
                    .collect()
            })
            .unwrap_or_default(),
    };
    pids.extend(workload.map(|w| w.pid));
    pids.sort_unstable();
    pids.dedup();
    pids
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::Args;

    fn cfg(flags: &[&str]) -> Config {
        let argv = ["rtrace"].iter().chain(flags);
        crate::config::resolve(Args::try_parse_from(argv).unwrap(), |_| true).unwrap()
    }

    #[test]
    fn threads_are_traced_as_given_once_each() {
        assert_eq!(
            keys_to_trace(&cfg(&["-t", "7,3", "-t", "7"]), None, true),
            [(3, TRACE_ON), (7, TRACE_ON)]
        );
    }

    #[test]
    fn a_process_is_keyed_by_itself_or_by_each_thread() {
        let me = std::process::id();
        let c = cfg(&["-p", &me.to_string()]);
        assert_eq!(keys_to_trace(&c, None, false), [(me, TRACE_ON)]);
        let by_thread = keys_to_trace(&c, None, true);
        assert!(by_thread.contains(&(me, TRACE_ON)), "{by_thread:?}");
        assert!(by_thread.iter().all(|&(_, flags)| flags == TRACE_ON));
    }

    #[test]
    fn rtrace_and_the_named_pids_are_left_out() {
        let me = std::process::id();
        let c = cfg(&["--filter-pids", "4000000", "--", "true"]);
        assert_eq!(
            filtered_pids(&c, None),
            [(4_000_000, FILTER_ALWAYS), (me, FILTER_ALWAYS)]
        );
    }
}
