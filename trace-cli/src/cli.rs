//! Command-line flags, as perf trace spells them. Parsing only; `config` resolves and
//! checks them.

use std::{ffi::OsString, path::PathBuf};

use clap::{ArgAction, Parser, ValueEnum};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum SummaryMode {
    #[default]
    Thread,
    Total,
}

#[derive(Parser, Debug, Default)]
#[command(
    name = "rtrace",
    version,
    about = "Trace system calls like `perf trace`, with eBPF",
    override_usage = "rtrace [OPTIONS] [--] [COMMAND [ARGS]...]\n       rtrace -p PID[,PID...] | -t TID[,TID...] | -a | -u USER [OPTIONS]"
)]
pub struct Args {
    /// Trace these processes (comma list) and, unless --no-inherit, what they fork.
    #[arg(short = 'p', long = "pid", value_name = "PID[,PID...]")]
    pub pid: Vec<String>,

    /// Trace these threads only (comma list).
    #[arg(short = 't', long = "tid", value_name = "TID[,TID...]")]
    pub tid: Vec<String>,

    /// Trace every task (the default when there is no command and no target).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,

    /// Trace the tasks of this user (name or number), system-wide.
    #[arg(short = 'u', long = "uid", value_name = "USER|UID")]
    pub uid: Option<String>,

    /// Only the syscalls made on these CPUs (a list like 0,2-3).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub cpu: Option<String>,

    /// Accepted for perf compatibility.
    #[arg(short = 'f', long = "force", hide = true)]
    pub force: bool,

    /// Never report these processes (comma list).
    #[arg(long = "filter-pids", value_name = "PID[,PID...]")]
    pub filter_pids: Vec<String>,

    /// Do not follow forked tasks.
    #[arg(long = "no-inherit")]
    pub no_inherit: bool,

    /// Trace only these syscalls: a comma list of names and globs (`open*`), the groups
    /// `file` and `string`; a leading `!` traces all but these.
    #[arg(
        short = 'e',
        long = "expr",
        visible_alias = "event",
        value_name = "SYSCALLS"
    )]
    pub expr: Vec<String>,

    /// One JSON object per syscall (JSON Lines) instead of perf's lines.
    #[arg(long = "json")]
    pub json: bool,

    /// Write the trace to FILE instead of stderr (an existing FILE becomes FILE.old).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Print the kernel's monotonic time instead of the time since the first event.
    #[arg(short = 'T', long = "time")]
    pub time: bool,

    /// Show the command name (the default).
    #[arg(long = "comm", overrides_with = "no_comm")]
    pub comm: bool,

    /// Show the thread id only.
    #[arg(long = "no-comm", overrides_with = "comm")]
    pub no_comm: bool,

    /// Show only the calls that failed.
    #[arg(long = "failure")]
    pub failure: bool,

    /// Show only the calls that took longer than MS milliseconds.
    #[arg(long = "duration", value_name = "MS")]
    pub duration: Option<f64>,

    /// Stop after printing N events.
    #[arg(long = "max-events", value_name = "N")]
    pub max_events: Option<u64>,

    /// Bytes shown of each buffer (write, sendto…) and argv entries shown of an execve,
    /// as strace's -s: what is left out is marked `...` (default 32; paths are always
    /// shown whole).
    #[arg(long = "string-limit", value_name = "N", value_parser = clap::value_parser!(u16).range(0..=4095))]
    pub string_limit: Option<u16>,

    /// Ring buffer size: pages, or a size with a K/M/G suffix (a power of two).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES")]
    pub mmap_pages: Option<String>,

    /// Show only a summary of the syscalls per thread (counted in the kernel).
    #[arg(short = 's', long = "summary")]
    pub summary: bool,

    /// Show the trace and then the summary.
    #[arg(short = 'S', long = "with-summary")]
    pub with_summary: bool,

    /// Summary per thread (the default) or for all threads together.
    #[arg(long = "summary-mode", value_name = "MODE", value_enum)]
    pub summary_mode: Option<SummaryMode>,

    /// Count the errors of each syscall by errno in the summary (implies -s alone).
    #[arg(long = "errno-summary")]
    pub errno_summary: bool,

    /// Show at most N rows per summary table.
    #[arg(long = "max-summary", value_name = "N")]
    pub max_summary: Option<usize>,

    /// Accepted for perf compatibility: rtrace always counts summaries in BPF.
    #[arg(long = "bpf-summary", overrides_with = "no_bpf_summary")]
    pub bpf_summary: bool,

    /// Accepted for perf compatibility: the numbers are the same either way.
    #[arg(long = "no-bpf-summary", overrides_with = "bpf_summary")]
    pub no_bpf_summary: bool,

    /// Accepted for perf compatibility: rtrace reads struct arguments it knows without BTF.
    #[arg(long = "force-btf", hide = true)]
    pub force_btf: bool,

    /// Accepted for perf compatibility: records already arrive in order per thread.
    #[arg(long = "sort-events", hide = true)]
    pub sort_events: bool,

    /// More detail about what rtrace does.
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    pub verbose: u8,

    /// The command to run and trace.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}
