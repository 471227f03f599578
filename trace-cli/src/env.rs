//! What rtrace takes from the environment it was started in: read once, by `main`,
//! and handed down, so that nothing below reads a variable or asks whether stderr is a
//! terminal. Tests build one by hand.

use std::ffi::OsString;

/// The variables rtrace reads, and whether stderr is a terminal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Env {
    /// `NO_COLOR`: set and not empty, never colour.
    pub no_color: Option<OsString>,
    /// `CLICOLOR_FORCE`: set and not `0`, always colour.
    pub clicolor_force: Option<OsString>,
    /// Whether stderr, the default output, is a terminal.
    pub stderr_terminal: bool,
    /// `RTRACE_PID_MAP_ENTRIES`: tasks the pid maps hold.
    pub pid_map_entries: Option<String>,
    /// `RTRACE_SUMMARY_ENTRIES`: entries of the summary maps.
    pub summary_entries: Option<String>,
    /// `RTRACE_RINGS`: how many ring buffers the programs write, forced (one per CPU
    /// by default).
    pub rings: Option<String>,
    /// `RTRACE_GROUP_EXIT` (`leader` or `live`): how a process's end is told, forced
    /// (for tests of each way).
    pub group_exit: Option<String>,
    /// `RTRACE_SYSCALL_HOOKS` (`raw`, `events` or `functions`): where `-e`'s syscall programs run,
    /// forced.
    pub syscall_hooks: Option<String>,
    /// `PATH`: where the command is looked up.
    pub path: Option<OsString>,
    /// `PERF_CONFIG`: perf's config file, alone.
    pub perf_config: Option<OsString>,
    /// `HOME`: where `~/.perfconfig` is.
    pub home: Option<OsString>,
}

impl Env {
    /// The process's own environment, now.
    pub fn read() -> Env {
        use std::env::{var, var_os};
        Env {
            no_color: var_os("NO_COLOR"),
            clicolor_force: var_os("CLICOLOR_FORCE"),
            stderr_terminal: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            // A value that is not Unicode counts as unset, as it always has.
            pid_map_entries: var("RTRACE_PID_MAP_ENTRIES").ok(),
            summary_entries: var("RTRACE_SUMMARY_ENTRIES").ok(),
            rings: var("RTRACE_RINGS").ok(),
            group_exit: var("RTRACE_GROUP_EXIT").ok(),
            syscall_hooks: var("RTRACE_SYSCALL_HOOKS").ok(),
            path: var_os("PATH"),
            perf_config: var_os("PERF_CONFIG"),
            home: var_os("HOME"),
        }
    }
}
