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

const AFTER_HELP: &str = "\
Environment:
  PERF_CONFIG             perf's config file; unset: /etc/perfconfig, then ~/.perfconfig
  RTRACE_PID_MAP_ENTRIES  tasks traced at once (default 8192)
  RTRACE_SUMMARY_ENTRIES  (thread, syscall) pairs a summary holds (default 65536)
  RTRACE_RINGS            ring buffers the programs write, 1 to 8 (default: one per CPU)
  RTRACE_SYSCALL_HOOKS=raw|events|functions  where -e's programs run, forced: the raw
                          syscall tracepoints, or the chosen calls' own events or kernel
                          functions (for 64-bit targets the default: the functions where
                          the kernel attaches to them, else the events; 32-bit calls
                          pass neither)
  NO_COLOR, CLICOLOR_FORCE  never, or always, colour the trace

Exit status:
  the command's, with or without -p/-t/-a (128+N when signal N killed it; 126 when
  it cannot be run, 127 when it is not there); 0 for -p/-t/-a alone; 2 for bad usage;
  141 when the reader of the trace went away; 1 for any other failure, said in one
  line `rtrace: ...`";

/// The man page's DESCRIPTION (and `--help`'s head).
const LONG_ABOUT: &str = "\
Trace system calls like `perf trace`, with eBPF.

rtrace runs COMMAND, or attaches to processes (-p), threads (-t), a user's tasks (-u) or
every task (-a), and prints each system call with its decoded arguments, its result and
its duration, in the lines perf trace prints; with -s, perf trace's summary table
instead. The kernel side filters by task and by call, joins each call's entry and exit,
copies the strings and structs a line shows and counts the summaries. Beside -p or -t,
a COMMAND runs untraced and the trace lasts as long as it does; beside -a, it is traced
with everything else until it ends.

`rtrace record` writes the records to a file (rtrace.data unless -o) instead of lines;
`rtrace -i FILE` prints such a file as the live trace would have.";

#[derive(Parser, Debug, Default)]
#[command(
    name = "rtrace",
    infer_long_args = true,
    // As perf: a flag given twice is taken (the last value wins), so that wrappers
    // and aliases that add one the user also typed keep working.
    args_override_self = true,
    disable_version_flag = true,
    after_help = AFTER_HELP,
    version,
    about = "Trace system calls like `perf trace`, with eBPF",
    long_about = LONG_ABOUT,
    override_usage = "rtrace [OPTIONS] [--] [COMMAND [ARGS]...]\n       rtrace -p PID[,PID...] | -t TID[,TID...] | -a | -u USER [OPTIONS] [-- COMMAND...]\n       rtrace record [OPTIONS] [-o FILE] [--] [COMMAND [ARGS]...]\n       rtrace -i FILE [OPTIONS]"
)]
pub struct Args {
    /// Trace these processes (comma list) and, unless --no-inherit, what they fork.
    #[arg(
        short = 'p',
        long = "pid",
        help_heading = "Targets",
        value_name = "PID[,PID...]"
    )]
    pub pid: Vec<String>,

    /// Trace these threads only (comma list).
    #[arg(
        short = 't',
        long = "tid",
        help_heading = "Targets",
        value_name = "TID[,TID...]"
    )]
    pub tid: Vec<String>,

    /// Trace every task (the default when there is no command and no target).
    #[arg(
        short = 'a',
        long = "all-cpus",
        help_heading = "Targets",
        overrides_with = "no_all_cpus"
    )]
    pub all_cpus: bool,
    #[arg(long = "no-all-cpus", overrides_with = "all_cpus", hide = true)]
    pub no_all_cpus: bool,

    /// Trace the tasks of this user (name or number), system-wide.
    #[arg(
        short = 'u',
        long = "uid",
        help_heading = "Targets",
        value_name = "USER|UID"
    )]
    pub uid: Option<String>,

    /// Only the syscalls made on these CPUs (a list like 0,2-3).
    #[arg(
        short = 'C',
        long = "cpu",
        help_heading = "Targets",
        value_name = "CPUS"
    )]
    pub cpu: Option<String>,

    /// Never report these processes (comma list).
    #[arg(
        long = "filter-pids",
        help_heading = "Targets",
        value_name = "PID[,PID...]"
    )]
    pub filter_pids: Vec<String>,

    /// Only tasks in this cgroup (v2, a path below its root) or the cgroups below it.
    #[arg(
        short = 'G',
        long = "cgroup",
        help_heading = "Targets",
        value_name = "NAME"
    )]
    pub cgroup: Option<String>,

    /// Do not follow forked tasks.
    #[arg(long = "no-inherit", help_heading = "Targets")]
    pub no_inherit: bool,

    /// Trace only these syscalls: a comma list of names and globs (`open*`), perf's group
    /// `string` and strace's classes (`%file`, `%net`…; `trace=` before the list is
    /// taken); a leading `!` traces all but these. Tracepoint events
    /// (`sched:sched_switch`, `'sched:*'`) go in the same list; alone, they trace no
    /// syscall.
    #[arg(
        short = 'e',
        long = "expr",
        visible_alias = "event",
        help_heading = "Events",
        value_name = "SYSCALLS,EVENTS"
    )]
    pub expr: Vec<String>,

    /// Start tracing MS milliseconds after the command starts (or after rtrace
    /// starts, with -p/-t/-a).
    #[arg(
        short = 'D',
        long = "delay",
        help_heading = "Events",
        value_name = "MS",
        allow_negative_numbers = true
    )]
    pub delay: Option<String>,

    /// Trace page faults: major (maj), minor (min) or both (all), each line naming the
    /// code that faulted and the mapping it touched.
    #[arg(
        short = 'F',
        long = "pf",
        help_heading = "Events",
        value_name = "maj|min|all",
        num_args = 0..=1,
        default_missing_value = "maj"
    )]
    pub pf: Option<String>,

    /// Show each syscall's, fault's and event's call chain below its line: `fp`
    /// (frame pointers, walked by the kernel; perf's `dwarf` and `lbr` are not offered).
    #[arg(long = "call-graph", help_heading = "Call graphs", value_name = "fp")]
    pub call_graph: Option<String>,

    /// Show the kernel's frames of syscalls' call chains too (implies --call-graph fp).
    #[arg(long = "kernel-syscall-graph", help_heading = "Call graphs")]
    pub kernel_syscall_graph: bool,

    /// Show at most N frames of each call chain (implies --call-graph fp) [default: 127].
    #[arg(long = "max-stack", help_heading = "Call graphs", value_name = "N")]
    pub max_stack: Option<usize>,

    /// Leave out the lines whose call chain has fewer than N frames (implies
    /// --call-graph fp).
    #[arg(long = "min-stack", help_heading = "Call graphs", value_name = "N")]
    pub min_stack: Option<usize>,

    /// Show only the tracepoint events of the last -e whose fields pass EXPR, in the
    /// kernel's filter language (`prev_pid == 1 && next_comm ~ "kworker*"`).
    #[arg(long = "filter", help_heading = "Events", value_name = "EXPR")]
    pub filter: Option<String>,

    /// With tracepoint events, trace every syscall too.
    #[arg(
        long = "syscalls",
        help_heading = "Events",
        overrides_with = "no_syscalls"
    )]
    pub syscalls: bool,

    /// Trace no syscall but those named with -e.
    #[arg(
        long = "no-syscalls",
        help_heading = "Events",
        overrides_with = "syscalls"
    )]
    pub no_syscalls: bool,

    /// Print the record FILE that `rtrace record` wrote, with these output options and
    /// filters (no BPF, no root).
    #[arg(
        short = 'i',
        long = "input",
        help_heading = "Output",
        value_name = "FILE"
    )]
    pub input: Option<PathBuf>,

    /// One JSON object per syscall (JSON Lines) instead of perf's lines.
    #[arg(long = "json", help_heading = "Output", overrides_with = "no_json")]
    pub json: bool,
    #[arg(long = "no-json", overrides_with = "json", hide = true)]
    pub no_json: bool,

    /// Write the trace to FILE instead of stderr (an existing FILE becomes FILE.old); `-`
    /// is stdout, and a command's own stdout then goes to stderr.
    #[arg(
        short = 'o',
        long = "output",
        help_heading = "Output",
        value_name = "FILE"
    )]
    pub output: Option<PathBuf>,

    /// Also write a timeline to FILE: Chrome's Trace Event JSON, one track per thread
    /// and a slice per call, that ui.perfetto.dev and chrome://tracing read (beside the
    /// lines, or -s).
    #[arg(long = "timeline", help_heading = "Output", value_name = "FILE")]
    pub timeline: Option<PathBuf>,

    /// Print the kernel's monotonic time instead of the time since the first event.
    #[arg(
        short = 'T',
        long = "time",
        help_heading = "Output",
        overrides_with = "no_time"
    )]
    pub time: bool,
    #[arg(long = "no-time", overrides_with = "time", hide = true)]
    pub no_time: bool,

    /// Show the command name (the default).
    #[arg(long = "comm", help_heading = "Output", overrides_with = "no_comm")]
    pub comm: bool,

    /// Show the thread id only.
    #[arg(long = "no-comm", help_heading = "Output", overrides_with = "comm")]
    pub no_comm: bool,

    /// Show only the calls that failed.
    #[arg(
        long = "failure",
        help_heading = "Events",
        overrides_with = "no_failure"
    )]
    pub failure: bool,
    #[arg(long = "no-failure", overrides_with = "failure", hide = true)]
    pub no_failure: bool,

    /// Show only the calls that took longer than MS milliseconds.
    #[arg(long = "duration", help_heading = "Events", value_name = "MS")]
    pub duration: Option<f64>,

    /// Stop after printing N events.
    #[arg(long = "max-events", help_heading = "Events", value_name = "N")]
    pub max_events: Option<u64>,

    /// Bytes shown of each buffer (write, sendto…) and argv entries shown of an execve,
    /// as strace's -s: what is left out is marked `...` (default 32; paths are always
    /// shown whole).
    #[arg(long = "string-limit", help_heading = "Output", value_name = "N", value_parser = clap::value_parser!(u16).range(0..=4095))]
    pub string_limit: Option<u16>,

    /// Show execve's environment as the new program received it (strace's -v shows it;
    /// perf does not): up to 4 KiB and --string-limit entries of it, the rest marked `...`.
    #[arg(long = "envp", help_heading = "Output", overrides_with = "no_envp")]
    pub envp: bool,
    #[arg(long = "no-envp", overrides_with = "envp", hide = true)]
    pub no_envp: bool,

    /// Each ring buffer's size (one ring per CPU, up to 8): pages, or a size with a K/M/G
    /// suffix (a power of two).
    #[arg(
        short = 'm',
        long = "mmap-pages",
        help_heading = "Output",
        value_name = "PAGES"
    )]
    pub mmap_pages: Option<String>,

    /// Show only a summary of the syscalls per thread (counted in the kernel).
    #[arg(
        short = 's',
        long = "summary",
        help_heading = "Summary",
        overrides_with = "no_summary"
    )]
    pub summary: bool,
    #[arg(long = "no-summary", overrides_with = "summary", hide = true)]
    pub no_summary: bool,

    /// Show the trace and then the summary.
    #[arg(
        short = 'S',
        long = "with-summary",
        help_heading = "Summary",
        overrides_with = "no_with_summary"
    )]
    pub with_summary: bool,
    #[arg(long = "no-with-summary", overrides_with = "with_summary", hide = true)]
    pub no_with_summary: bool,

    /// Summary per thread (the default) or for all threads together.
    #[arg(
        long = "summary-mode",
        help_heading = "Summary",
        value_name = "MODE",
        value_enum
    )]
    pub summary_mode: Option<SummaryMode>,

    /// Count the errors of each syscall by errno in the summary (implies -s alone).
    #[arg(
        long = "errno-summary",
        help_heading = "Summary",
        overrides_with = "no_errno_summary"
    )]
    pub errno_summary: bool,
    #[arg(
        long = "no-errno-summary",
        overrides_with = "errno_summary",
        hide = true
    )]
    pub no_errno_summary: bool,

    /// Add strace -c's `% time` column: each syscall's share of its section's syscall
    /// time (implies -s alone).
    #[arg(
        long = "time-percent",
        help_heading = "Summary",
        overrides_with = "no_time_percent"
    )]
    pub time_percent: bool,
    #[arg(long = "no-time-percent", overrides_with = "time_percent", hide = true)]
    pub no_time_percent: bool,
    /// Under each summary row, a log2 histogram of the calls' durations (with -s or -S).
    #[arg(long = "hist", help_heading = "Summary")]
    pub hist: bool,

    /// Show at most N rows per summary table.
    #[arg(long = "max-summary", help_heading = "Summary", value_name = "N")]
    pub max_summary: Option<usize>,

    /// perf: do not complain.
    #[arg(
        short = 'f',
        long = "force",
        help_heading = "Accepted for perf compatibility (no effect)",
        overrides_with = "no_force"
    )]
    pub force: bool,
    #[arg(long = "no-force", overrides_with = "force", hide = true)]
    pub no_force: bool,

    /// perf: count in BPF (rtrace always does).
    #[arg(
        long = "bpf-summary",
        help_heading = "Accepted for perf compatibility (no effect)",
        overrides_with = "no_bpf_summary"
    )]
    pub bpf_summary: bool,

    /// perf: count in user space (the numbers are the same).
    #[arg(
        long = "no-bpf-summary",
        help_heading = "Accepted for perf compatibility (no effect)",
        overrides_with = "bpf_summary"
    )]
    pub no_bpf_summary: bool,

    /// perf: use BTF for struct arguments (rtrace reads those it knows without).
    #[arg(
        long = "force-btf",
        help_heading = "Accepted for perf compatibility (no effect)",
        overrides_with = "no_force_btf"
    )]
    pub force_btf: bool,
    #[arg(long = "no-force-btf", overrides_with = "force_btf", hide = true)]
    pub no_force_btf: bool,

    /// perf: sort events (they already arrive in order per thread).
    #[arg(
        long = "sort-events",
        help_heading = "Accepted for perf compatibility (no effect)",
        overrides_with = "no_sort_events"
    )]
    pub sort_events: bool,
    #[arg(long = "no-sort-events", overrides_with = "sort_events", hide = true)]
    pub no_sort_events: bool,

    // perf trace's options that rtrace does not have yet: parsed so that the user is
    // told so in one line (see `Args::unsupported`), not "unexpected argument".
    #[arg(long = "map-dump", hide = true)]
    pub map_dump: Option<String>,
    #[arg(long = "proc-map-timeout", hide = true)]
    pub proc_map_timeout: Option<String>,
    #[arg(long = "print-sample", hide = true)]
    pub print_sample: bool,
    #[arg(long = "sched", hide = true)]
    pub sched: bool,
    #[arg(long = "show-on-off-events", hide = true)]
    pub show_on_off_events: bool,
    #[arg(long = "switch-on", hide = true)]
    pub switch_on: Option<String>,
    #[arg(long = "switch-off", hide = true)]
    pub switch_off: Option<String>,
    #[arg(long = "tool_stats", hide = true)]
    pub tool_stats: bool,
    #[arg(long = "libtraceevent_print", hide = true)]
    pub libtraceevent_print: bool,

    /// Print the version, the aya it is built on and what this kernel offers.
    #[arg(short = 'V', long = "version")]
    pub version: bool,

    /// More detail about what rtrace does.
    #[arg(short = 'v', long = "verbose", help_heading = "Output", action = ArgAction::Count)]
    pub verbose: u8,

    /// The command to run and trace.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

impl Args {
    /// The first perf option given that rtrace does not have yet.
    pub fn unsupported(&self) -> Option<&'static str> {
        let given: [(bool, &'static str); 9] = [
            (self.map_dump.is_some(), "--map-dump"),
            (self.proc_map_timeout.is_some(), "--proc-map-timeout"),
            (self.print_sample, "--print-sample"),
            (self.sched, "--sched"),
            (self.show_on_off_events, "--show-on-off-events"),
            (self.switch_on.is_some(), "--switch-on"),
            (self.switch_off.is_some(), "--switch-off"),
            (self.tool_stats, "--tool_stats"),
            (self.libtraceevent_print, "--libtraceevent_print"),
        ];
        given.iter().find(|(on, _)| *on).map(|(_, flag)| *flag)
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn help_is_grouped_as_perfs_and_says_environment_and_exit_status() {
        let help = Args::command().render_help().to_string();
        let at = |s: &str| help.find(s).unwrap_or_else(|| panic!("{s} in:\n{help}"));
        assert!(at("Targets:") < at("Events:"));
        assert!(at("Events:") < at("Output:"));
        assert!(at("Output:") < at("Summary:"));
        assert!(at("Summary:") < at("Accepted for perf compatibility"));
        at("RTRACE_PID_MAP_ENTRIES");
        at("RTRACE_SUMMARY_ENTRIES");
        at("RTRACE_RINGS");
        at("RTRACE_SYSCALL_HOOKS");
        at("PERF_CONFIG");
        at("Exit status:");
        // Hidden: the --no- forms and perf's options that are not here yet.
        assert!(
            !help.contains("--no-summary") && !help.contains("--switch-on"),
            "{help}"
        );
    }

    #[test]
    fn a_flag_given_twice_is_taken_as_perf_takes_it() {
        let a = Args::try_parse_from(["rtrace", "-s", "-s", "--", "true"]).unwrap();
        assert!(a.summary);
        let a = Args::try_parse_from(["rtrace", "--max-events", "5", "--max-events", "9", "true"])
            .unwrap();
        assert_eq!(a.max_events, Some(9));
        // Lists still add up.
        let a = Args::try_parse_from(["rtrace", "-e", "read", "-e", "write", "true"]).unwrap();
        assert_eq!(a.expr, ["read", "write"]);
    }

    #[test]
    fn unsupported_perf_options_are_named() {
        let a = Args::try_parse_from(["rtrace", "--sched", "--", "true"]).unwrap();
        assert_eq!(a.unsupported(), Some("--sched"));
        let a = Args::try_parse_from(["rtrace", "--syscalls", "--", "true"]).unwrap();
        assert_eq!(a.unsupported(), None);
        // Each by the name given, not a pair's.
        let a = Args::try_parse_from(["rtrace", "--libtraceevent_print", "--", "true"]).unwrap();
        assert_eq!(a.unsupported(), Some("--libtraceevent_print"));
        let a = Args::try_parse_from(["rtrace", "--tool_stats", "--", "true"]).unwrap();
        assert_eq!(a.unsupported(), Some("--tool_stats"));
    }
}
