//! From flags to a checked configuration: every bad value is reported here, before
//! anything is loaded, attached or forked.

use std::{ffi::OsString, path::PathBuf};

use thiserror::Error;

use crate::{
    cli::{Args, SummaryMode},
    decode::selection::{self, SelectionError},
    env::Env,
    faults::Faults,
};

#[derive(Debug, Error, PartialEq)]
pub enum ConfigError {
    #[error("invalid {what} '{value}' for {flag}: expected a positive number")]
    BadNumber {
        what: &'static str,
        value: String,
        flag: &'static str,
    },
    #[error("no such {what}: {pid} ({flag})")]
    NoSuchTask {
        what: &'static str,
        pid: u32,
        flag: &'static str,
    },
    #[error("-p/--pid and -t/--tid cannot be combined: use one of them")]
    PidsWithTids,
    #[error("unknown user '{0}' for -u/--uid")]
    UnknownUser(String),
    #[error("invalid size '{0}' for -m/--mmap-pages: expected pages or a size like 16M")]
    BadMmapPages(String),
    #[error(
        "invalid delay '{0}' for -D/--delay: expected milliseconds, 0 or more (perf's -1, start disabled, is not supported)"
    )]
    BadDelay(String),
    #[error("invalid value '{0}' for -F/--pf: expected maj, min or all")]
    BadFaults(String),
    #[error(
        "--call-graph {0} is not supported: rtrace's call chains are the kernel's frame-pointer walk, --call-graph fp"
    )]
    BadCallGraph(String),
    #[error("rtrace record: {0}")]
    Record(&'static str),
    #[error("--timeline {0}")]
    Timeline(&'static str),
    #[error("invalid value {0} for --duration: expected milliseconds, 0 or more")]
    BadDuration(f64),
    #[error(transparent)]
    Selection(#[from] SelectionError),
    #[error("invalid CPU list '{0}' for -C/--cpu: expected numbers or ranges like 0,2-3 below {1}")]
    BadCpus(String, u32),
    #[error(
        "invalid RTRACE_PID_MAP_ENTRIES '{0}': expected a number of tasks from 1 to {MAX_PID_MAP_ENTRIES}"
    )]
    BadPidMapEntries(String),
    #[error("invalid RTRACE_RINGS '{0}': expected a number of ring buffers from 1 to {MAX_RINGS}", MAX_RINGS = trace_common::maps::MAX_RINGS)]
    BadRings(String),
    #[error(
        "invalid RTRACE_SUMMARY_ENTRIES '{0}': expected a number of (thread, syscall) pairs from 1 to {MAX_SUMMARY_ENTRIES}"
    )]
    BadSummaryEntries(String),
    #[error(
        "invalid RTRACE_SYSCALL_HOOKS '{0}': expected raw, events or functions (unset: rtrace chooses)"
    )]
    BadSyscallHooks(String),
    #[error(
        "--hist draws its histograms in the summary: add -s (summary only) or -S (trace and summary)"
    )]
    HistWithoutSummary,
    #[error("{0} is not supported yet")]
    Unsupported(&'static str),
}

/// `-F maj|min|all` (perf's words; `-F` alone is `maj`, as in perf).
fn parse_faults(word: &str) -> Result<Faults, ConfigError> {
    match word {
        "maj" => Ok(Faults {
            min: false,
            maj: true,
        }),
        "min" => Ok(Faults {
            min: true,
            maj: false,
        }),
        "all" => Ok(Faults {
            min: true,
            maj: true,
        }),
        _ => Err(ConfigError::BadFaults(word.to_string())),
    }
}

/// No more tasks than this can live at once (the kernel's PID_MAX_LIMIT); bigger pid
/// maps would only cost memory and start-up time.
pub const MAX_PID_MAP_ENTRIES: u32 = 4_194_304;

/// `RTRACE_PID_MAP_ENTRIES`: the default when unset, else a number in range.
pub fn pid_map_entries(var: Option<&str>) -> Result<u32, ConfigError> {
    var.map_or(Ok(trace_common::maps::PID_MAP_ENTRIES), |v| {
        count_from_env(v, MAX_PID_MAP_ENTRIES)
            .ok_or_else(|| ConfigError::BadPidMapEntries(v.into()))
    })
}

/// A count from an environment variable: a number from 1 to `max`, blanks around it allowed.
fn count_from_env(v: &str, max: u32) -> Option<u32> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=max).contains(n))
}

/// `RTRACE_RINGS`: `None` when unset (one ring per CPU), else a count in range.
pub fn ring_count(var: Option<&str>) -> Result<Option<u32>, ConfigError> {
    var.map(|v| {
        count_from_env(v, trace_common::maps::MAX_RINGS as u32)
            .ok_or_else(|| ConfigError::BadRings(v.into()))
    })
    .transpose()
}

/// Whether to colour: `NO_COLOR` (set and not empty) says never; else `CLICOLOR_FORCE`
/// (set and not `0`) says always; else perf's `color.ui` (always / never); else only
/// on a terminal.
pub fn use_color(
    no_color: Option<&std::ffi::OsStr>,
    force: Option<&std::ffi::OsStr>,
    ui: Option<bool>,
    terminal: bool,
) -> bool {
    if no_color.is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if force.is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    ui.unwrap_or(terminal)
}

/// strace's default `-s`: buffer bytes and argv entries shown.
pub const STRING_LIMIT: u16 = 32;

/// Each summary entry takes about 128 bytes of kernel memory, allocated when the maps
/// are made: 4 Mi entries is 512 MiB, more than any summary needs.
pub const MAX_SUMMARY_ENTRIES: u32 = 4_194_304;

/// `RTRACE_SUMMARY_ENTRIES`: how many (thread, syscall) pairs, and (thread, syscall,
/// errno) triples, the summary maps hold.
pub fn summary_entries(var: Option<&str>) -> Result<u32, ConfigError> {
    var.map_or(Ok(trace_common::stats::STATS_ENTRIES), |v| {
        count_from_env(v, MAX_SUMMARY_ENTRIES)
            .ok_or_else(|| ConfigError::BadSummaryEntries(v.into()))
    })
}

#[derive(Clone, Debug, PartialEq)]
pub enum Targets {
    /// Run this command and trace it.
    Workload(Vec<OsString>),
    Pids(Vec<u32>),
    Tids(Vec<u32>),
    /// Every task (`-a`), or every task of a user (`-u`); with a command, while it runs.
    System {
        uid: Option<u32>,
        workload: Option<Vec<OsString>>,
    },
}

#[derive(Clone, Debug)]
pub struct Config {
    pub targets: Targets,
    /// `-p/-t … -- COMMAND`, perf's idiom: the command runs untraced, and the targets
    /// are traced for as long as it runs (its exit status is rtrace's).
    pub timer: Option<Vec<OsString>>,
    pub inherit: bool,
    pub filter_pids: Vec<u32>,
    pub output: Option<PathBuf>,
    /// `--timeline FILE`: the trace also as Chrome Trace Event JSON.
    pub timeline: Option<PathBuf>,
    pub line: LineOptions,
    pub failure_only: bool,
    /// `--json`: JSON Lines instead of perf's lines.
    pub json: bool,
    pub min_duration_ns: Option<u64>,
    /// `-i FILE`: print this record instead of tracing.
    pub input: Option<PathBuf>,
    /// `rtrace record`: write the records to `output` (default `rtrace.data`).
    pub record: bool,
    /// `-G`: only tasks of this cgroup (v2) and below.
    pub cgroup: Option<String>,
    /// `-D`: how long after the command starts tracing begins.
    pub delay: Option<std::time::Duration>,
    /// `-F`: the page faults traced.
    pub faults: Faults,
    /// `--call-graph` and the options that imply it.
    pub call_graph: Option<CallGraph>,
    pub max_events: Option<u64>,
    /// `--string-limit`: buffer bytes and argv entries shown (default 32).
    pub string_limit: u16,
    /// `--envp`: execve's environment is read and shown.
    pub envp: bool,
    /// `-m`: each ring's size; `None`: the default (`kernel::rings`).
    pub ring_bytes: Option<u32>,
    /// `RTRACE_RINGS`: how many rings; `None`: one per CPU (`kernel::rings`).
    pub ring_count: Option<u32>,
    /// Tasks the pid maps hold (`RTRACE_PID_MAP_ENTRIES`, default 8192).
    pub pid_map_entries: u32,
    /// Entries of the summary maps (`RTRACE_SUMMARY_ENTRIES`, default 65536).
    pub summary_entries: u32,
    pub verbose: u8,
    pub summary: Option<Summary>,
    /// `-C`: the CPUs watched; `None` watches all.
    pub cpus: Option<Vec<u32>>,
    /// `-e`: the syscall numbers to trace; `None` traces all.
    pub selection: Option<Vec<u32>>,
    /// `-e cat:name`: tracepoint events (globs), in order.
    pub events: Vec<String>,
    /// `--filter`: on the events of the last of them.
    pub event_filter: Option<String>,
    /// Warnings to print before starting (`rtrace: skipping unknown syscall 'x'`).
    pub warnings: Vec<String>,
    /// `RTRACE_GROUP_EXIT`: how a process's end is told, forced (`leader`, `live`).
    pub group_exit: Option<String>,
    /// `RTRACE_SYSCALL_HOOKS`: where `-e`'s syscall programs run.
    pub syscall_hooks: HooksChoice,
    /// `PATH`, where the command is looked up.
    pub path: Option<OsString>,
}

impl Config {
    /// `-o -`: the trace goes to stdout (and a command's own stdout to stderr).
    pub fn trace_to_stdout(&self) -> bool {
        self.output.as_deref() == Some(std::path::Path::new(crate::output::STDOUT))
    }
}

/// Where `-e`'s syscall programs run (`RTRACE_SYSCALL_HOOKS`; `session::plan` decides).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HooksChoice {
    /// Unset: on the chosen calls' own functions, or else their events, where rtrace
    /// can tell that they show every call of the targets, else on the raw syscall
    /// tracepoints.
    #[default]
    Auto,
    /// `raw`: on the raw syscall tracepoints.
    Raw,
    /// `events`: on the chosen calls' own events wherever they can run, a target that
    /// may run 32-bit code or not.
    Events,
    /// `functions`: on the chosen calls' own functions wherever they can run (else
    /// their events), a target that may run 32-bit code or not.
    Functions,
}

impl HooksChoice {
    fn from_env(value: Option<&str>) -> Result<Self, ConfigError> {
        match value {
            None | Some("") => Ok(Self::Auto),
            Some("raw") => Ok(Self::Raw),
            Some("events") => Ok(Self::Events),
            Some("functions") => Ok(Self::Functions),
            Some(other) => Err(ConfigError::BadSyscallHooks(other.into())),
        }
    }
}

/// How perf trace's line is laid out and decorated.
#[derive(Clone, Debug)]
pub struct LineOptions {
    pub show_timestamp: bool,
    pub show_duration: bool,
    pub show_comm: bool,
    pub show_arg_names: bool,
    /// Show arguments whose value is 0 (perfconfig `show_zeros`).
    pub show_zeros: bool,
    /// Print constants with their prefix: `O_RDONLY` (perfconfig `show_prefix`).
    pub show_prefix: bool,
    /// `-T`: print the kernel's monotonic time instead of time since the first event.
    pub absolute_time: bool,
    pub alignment: usize,
    /// argv entries shown (`--string-limit`).
    pub string_limit: u16,
    /// Colour as perf does on a terminal (never otherwise).
    pub color: bool,
}

impl Default for LineOptions {
    fn default() -> Self {
        Self {
            show_timestamp: true,
            show_duration: true,
            show_comm: true,
            show_arg_names: true,
            show_zeros: false,
            show_prefix: false,
            absolute_time: false,
            alignment: 70,
            string_limit: 32,
            color: false,
        }
    }
}

/// `--call-graph fp`: what each line's call chain shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallGraph {
    /// `--kernel-syscall-graph`: syscalls' kernel frames too (faults' and events'
    /// always have theirs, as in perf).
    pub kernel_syscalls: bool,
    /// `--max-stack`: frames shown at most.
    pub max_stack: usize,
    /// `--min-stack`: lines with fewer frames are left out.
    pub min_stack: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// `-s`: the summary without the trace.
    pub only: bool,
    pub total: bool,
    pub errno: bool,
    pub max_rows: Option<usize>,
    /// `--time-percent`: strace -c's `% time` column after perf's.
    pub time_percent: bool,
    /// `--hist`: a log2 histogram of the durations under each row.
    pub hist: bool,
}

const PAGE: u64 = 4096;

fn parse_pids(
    values: &[String],
    what: &'static str,
    flag: &'static str,
) -> Result<Vec<u32>, ConfigError> {
    let mut out = Vec::new();
    for item in values.iter().flat_map(|v| v.split(',')) {
        let item = item.trim();
        match item.parse::<u32>() {
            Ok(pid) if pid > 0 => out.push(pid),
            _ => {
                return Err(ConfigError::BadNumber {
                    what,
                    value: item.into(),
                    flag,
                });
            }
        }
    }
    Ok(out)
}

/// `-m`: a page count, or a size with a K/M/G suffix; rounded up to a power of two
/// (what a BPF ring buffer requires).
pub fn parse_ring_size(s: &str) -> Result<u32, ConfigError> {
    let bad = || ConfigError::BadMmapPages(s.into());
    let t = s.trim();
    let (digits, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'B' => 1,
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(bad()),
            };
            (&t[..i], m)
        }
        _ => (t, PAGE),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let bytes = n.checked_mul(mult).filter(|&b| b > 0).ok_or_else(bad)?;
    let bytes = bytes
        .max(PAGE)
        .checked_next_power_of_two()
        .ok_or_else(bad)?;
    u32::try_from(bytes).map_err(|_| bad())
}

/// `-C`: `0,2-3` -> [0, 2, 3], each below `ncpus`.
pub fn parse_cpus(list: &str, ncpus: u32) -> Result<Vec<u32>, ConfigError> {
    let bad = || ConfigError::BadCpus(list.into(), ncpus);
    let mut cpus = Vec::new();
    for item in list.split(',').map(str::trim) {
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            ),
            None => {
                let c: u32 = item.parse().map_err(|_| bad())?;
                (c, c)
            }
        };
        if lo > hi || hi >= ncpus {
            return Err(bad());
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn configured_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    u32::try_from(n).unwrap_or(1).max(1)
}

/// Resolves a user name or number.
fn resolve_uid(user: &str) -> Result<u32, ConfigError> {
    // u32::MAX is (uid_t)-1, "no user" to the kernel, and rtrace's own "any user".
    if let Ok(uid) = user.parse::<u32>() {
        return (uid != u32::MAX)
            .then_some(uid)
            .ok_or_else(|| ConfigError::UnknownUser(user.into()));
    }
    match nix::unistd::User::from_name(user) {
        Ok(Some(u)) => Ok(u.uid.as_raw()),
        _ => Err(ConfigError::UnknownUser(user.into())),
    }
}

/// `exists` says whether a pid or tid names a live task (a seam for tests).
#[cfg(test)]
pub fn resolve(args: Args, exists: impl Fn(u32) -> bool) -> Result<Config, ConfigError> {
    resolve_with(
        args,
        exists,
        &crate::perfconfig::TraceSettings::default(),
        &Env::default(),
    )
}

/// As [`resolve`], with perf's `[trace]` settings underneath the flags, and what the
/// environment says (colour, the map sizes, the forced choices of tests).
pub fn resolve_with(
    args: Args,
    exists: impl Fn(u32) -> bool,
    perf: &crate::perfconfig::TraceSettings,
    env: &Env,
) -> Result<Config, ConfigError> {
    if let Some(flag) = args.unsupported() {
        return Err(ConfigError::Unsupported(flag));
    }
    let pids = parse_pids(&args.pid, "pid", "-p/--pid")?;
    let tids = parse_pids(&args.tid, "tid", "-t/--tid")?;
    let mut filter_pids = parse_pids(&args.filter_pids, "pid", "--filter-pids")?;
    let mut warnings = Vec::new();
    let (targets, timer) = targets(&args, pids, tids, exists, &mut warnings)?;
    // rtrace never reports itself.
    filter_pids.push(std::process::id());
    let (min_duration_ns, delay) = timing(&args)?;
    let (faults, call_graph) = faults_and_call_graph(&args)?;
    let ring_bytes = args
        .mmap_pages
        .as_deref()
        .map(parse_ring_size)
        .transpose()?;
    let summary = summary(&args);
    if args.hist && summary.is_none() {
        return Err(ConfigError::HistWithoutSummary);
    }
    let line = line_options(&args, perf, env);
    let (selection, events) = selection(&args, &mut warnings)?;
    let pid_map_entries = pid_map_entries(env.pid_map_entries.as_deref())?;
    let ring_count = ring_count(env.rings.as_deref())?;
    let summary_entries = summary_entries(env.summary_entries.as_deref())?;
    let cpus = args
        .cpu
        .as_deref()
        .map(|l| parse_cpus(l, configured_cpus()))
        .transpose()?;
    Ok(Config {
        cpus,
        pid_map_entries,
        ring_count,
        summary_entries,
        selection,
        events,
        event_filter: args.filter.clone(),
        warnings,
        summary,
        targets,
        timer,
        inherit: !(args.no_inherit || perf.no_inherit == Some(true)),
        filter_pids,
        timeline: timeline(&args)?,
        output: args.output,
        line,
        failure_only: args.failure,
        json: args.json,
        min_duration_ns,
        delay,
        faults,
        call_graph,
        cgroup: args.cgroup.clone(),
        input: args.input.clone(),
        record: false,
        max_events: args.max_events,
        string_limit: args.string_limit.unwrap_or(STRING_LIMIT),
        envp: args.envp,
        ring_bytes,
        verbose: args.verbose,
        group_exit: env.group_exit.clone(),
        syscall_hooks: HooksChoice::from_env(env.syscall_hooks.as_deref())?,
        path: env.path.clone(),
    })
}

/// What is traced: a command, processes, threads or the whole system. Each pid and tid
/// must name a live task, but in a replay: a record's pids are those of its time, not
/// of now.
fn targets(
    args: &Args,
    pids: Vec<u32>,
    tids: Vec<u32>,
    exists: impl Fn(u32) -> bool,
    warnings: &mut Vec<String>,
) -> Result<(Targets, Option<Vec<OsString>>), ConfigError> {
    let replay = args.input.is_some();
    for (list, what, flag) in [
        (&pids, "process", "-p/--pid"),
        (&tids, "thread", "-t/--tid"),
    ] {
        if let Some(&pid) = list.iter().find(|&&p| !replay && !exists(p)) {
            return Err(ConfigError::NoSuchTask { what, pid, flag });
        }
    }
    let uid = args.uid.as_deref().map(resolve_uid).transpose()?;
    let command = (!args.command.is_empty()).then(|| args.command.clone());

    // Contradicting targets: the narrower one wins, with perf's own warnings.
    let tasks_given = !pids.is_empty() || !tids.is_empty();
    for (overrides, warning) in [
        (
            tasks_given && args.all_cpus,
            "PID/TID switch overriding SYSTEM",
        ),
        (
            tasks_given && uid.is_some(),
            "PID/TID switch overriding UID",
        ),
        (
            !tasks_given && uid.is_some() && args.all_cpus,
            "UID switch overriding SYSTEM",
        ),
    ] {
        if overrides {
            warnings.push(warning.to_string());
        }
    }
    if tasks_given {
        if !pids.is_empty() && !tids.is_empty() {
            return Err(ConfigError::PidsWithTids);
        }
        let targets = if pids.is_empty() {
            Targets::Tids(tids)
        } else {
            Targets::Pids(pids)
        };
        // A command beside them only says how long to trace them.
        return Ok((targets, command));
    }
    Ok((
        if args.all_cpus || uid.is_some() {
            Targets::System {
                uid,
                workload: command,
            }
        } else if let Some(cmd) = command {
            Targets::Workload(cmd)
        } else {
            Targets::System {
                uid: None,
                workload: None,
            }
        },
        None,
    ))
}

/// `--duration` (the shortest call shown, in ns) and `-D` (how long before tracing
/// starts).
fn timing(args: &Args) -> Result<(Option<u64>, Option<std::time::Duration>), ConfigError> {
    let min_duration_ns = match args.duration {
        Some(ms) if !ms.is_finite() || ms < 0.0 => {
            return Err(ConfigError::BadDuration(ms));
        }
        Some(ms) => Some((ms * 1e6) as u64),
        None => None,
    };
    let delay = args
        .delay
        .as_deref()
        .map(|d| {
            d.parse::<u64>()
                .map(std::time::Duration::from_millis)
                .map_err(|_| ConfigError::BadDelay(d.to_string()))
        })
        .transpose()?
        // perf's -D 0 is no delay at all.
        .filter(|d| !d.is_zero());
    Ok((min_duration_ns, delay))
}

/// `-F` and `--call-graph` (which `--kernel-syscall-graph`, `--max-stack` and
/// `--min-stack` imply); a replay has neither.
fn faults_and_call_graph(args: &Args) -> Result<(Faults, Option<CallGraph>), ConfigError> {
    let replay = args.input.is_some();
    let faults = args
        .pf
        .as_deref()
        .map(parse_faults)
        .transpose()?
        .unwrap_or_default();
    if replay && faults.any() {
        return Err(ConfigError::Unsupported(
            "-F with -i (a record holds no page faults)",
        ));
    }
    let call_graph = match args.call_graph.as_deref() {
        Some("fp") => true,
        Some(other) => return Err(ConfigError::BadCallGraph(other.to_string())),
        None => args.kernel_syscall_graph || args.max_stack.is_some() || args.min_stack.is_some(),
    }
    .then(|| CallGraph {
        kernel_syscalls: args.kernel_syscall_graph,
        max_stack: args.max_stack.unwrap_or(trace_common::record::STACK_FRAMES),
        min_stack: args.min_stack.unwrap_or(0),
    });
    if replay && call_graph.is_some() {
        return Err(ConfigError::Unsupported(
            "--call-graph with -i (a record holds no call chains)",
        ));
    }
    Ok((faults, call_graph))
}

/// `-s`, `-S`, `--errno-summary`, `--summary-mode`: perf's rule, --errno-summary alone
/// implies -s; --summary-mode alone does not. --time-percent alone implies -s too.
fn summary(args: &Args) -> Option<Summary> {
    (args.summary || args.with_summary || args.errno_summary || args.time_percent).then(|| {
        Summary {
            only: !args.with_summary,
            total: args.summary_mode == Some(SummaryMode::Total),
            errno: args.errno_summary,
            max_rows: args.max_summary,
            time_percent: args.time_percent,
            hist: args.hist,
        }
    })
}

/// `--timeline FILE`: refused where it would share a stream with the trace.
fn timeline(args: &Args) -> Result<Option<PathBuf>, ConfigError> {
    let Some(path) = &args.timeline else {
        return Ok(None);
    };
    if path.as_os_str() == crate::output::STDOUT && !args.command.is_empty() {
        return Err(ConfigError::Timeline(
            "- would mix the timeline with the command's own output: give it a file",
        ));
    }
    if args.output.as_ref() == Some(path) {
        return Err(ConfigError::Timeline(
            "and -o name the same file: give the timeline a file of its own",
        ));
    }
    Ok(Some(path.clone()))
}

/// How each line looks: the flags, over perf's `[trace]` settings, over the defaults.
fn line_options(args: &Args, perf: &crate::perfconfig::TraceSettings, env: &Env) -> LineOptions {
    // perf colours only a terminal: the default stderr, when it is one.
    let terminal = args.output.is_none() && env.stderr_terminal;
    let color = !args.json
        && use_color(
            env.no_color.as_deref(),
            env.clicolor_force.as_deref(),
            perf.color,
            terminal,
        );
    LineOptions {
        show_comm: !args.no_comm,
        absolute_time: args.time,
        show_timestamp: perf.show_timestamp.unwrap_or(true),
        show_duration: perf.show_duration.unwrap_or(true),
        show_arg_names: perf.show_arg_names.unwrap_or(true),
        show_zeros: perf.show_zeros.unwrap_or(false),
        show_prefix: perf.show_prefix.unwrap_or(false),
        alignment: perf.args_alignment.unwrap_or(70),
        string_limit: args.string_limit.unwrap_or(STRING_LIMIT),
        color,
    }
}

/// `-e`: the syscalls chosen (`None`: all of them), and the tracepoint events, in order.
fn selection(
    args: &Args,
    warnings: &mut Vec<String>,
) -> Result<(Option<Vec<u32>>, Vec<String>), ConfigError> {
    let (syscall_words, events) = crate::events::split_expr(&args.expr);
    let selection = if !syscall_words.is_empty() {
        // strace's `trace=` may start each -e value.
        let values = syscall_words
            .iter()
            .map(|w| selection::unqualified(w))
            .collect::<Result<Vec<_>, _>>()?;
        let sel = selection::parse(&values.join(","))?;
        for word in &sel.unknown {
            warnings.push(format!(
                "skipping unknown syscall '{word}'{}",
                selection::nearest(word)
            ));
        }
        Some(sel.nrs)
    } else if (!events.is_empty() && !args.syscalls) || args.no_syscalls {
        if events.is_empty() && args.pf.is_none() {
            // perf prints nothing and says nothing; a word saves a puzzled rerun.
            warnings.push(
                "--no-syscalls with no tracepoint event (-e cat:name) or page faults (-F) traces nothing"
                    .into(),
            );
        }
        // perf: events alone trace no syscall unless --syscalls asks for them all.
        Some(Vec::new())
    } else {
        None
    };
    Ok((selection, events))
}

/// `rtrace record`: what a recording takes, and where it goes (`rtrace.data` unless
/// `-o`). The output options are the replay's.
pub fn for_record(mut cfg: Config, record: bool) -> Result<Config, ConfigError> {
    if !record {
        return Ok(cfg);
    }
    if cfg.input.is_some() {
        return Err(ConfigError::Record(
            "-i replays a record; it cannot record one",
        ));
    }
    if cfg.summary.is_some() {
        return Err(ConfigError::Record(
            "-s is for the replay: rtrace -i FILE -s",
        ));
    }
    if cfg.faults.any() {
        return Err(ConfigError::Record(
            "-F cannot be recorded: a record keeps no memory maps to name the faults with",
        ));
    }
    if cfg.call_graph.is_some() {
        return Err(ConfigError::Record(
            "--call-graph cannot be recorded: a record keeps no memory maps to name the frames with",
        ));
    }
    if cfg.timeline.is_some() {
        return Err(ConfigError::Record(
            "--timeline is for the replay: rtrace -i FILE --timeline OUT.json",
        ));
    }
    cfg.record = true;
    cfg.json = false;
    cfg.output
        .get_or_insert_with(|| PathBuf::from("rtrace.data"));
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn contradicting_targets_keep_the_narrower_with_perfs_warning() {
        let c = resolve(args(&["-p", "1", "-a"]), live).unwrap();
        assert_eq!(c.targets, Targets::Pids(vec![1]));
        assert_eq!(c.warnings, ["PID/TID switch overriding SYSTEM"]);
        let c = resolve(args(&["-t", "7", "-u", "0"]), live).unwrap();
        assert_eq!(c.targets, Targets::Tids(vec![7]));
        assert_eq!(c.warnings, ["PID/TID switch overriding UID"]);
        let c = resolve(args(&["-a", "-u", "0"]), live).unwrap();
        assert_eq!(
            c.targets,
            Targets::System {
                uid: Some(0),
                workload: None
            }
        );
        assert_eq!(c.warnings, ["UID switch overriding SYSTEM"]);
        assert_eq!(
            resolve(args(&["-u", "4294967295"]), live).unwrap_err(),
            ConfigError::UnknownUser("4294967295".into())
        );
    }

    #[test]
    fn faults_and_call_graphs_as_perf_takes_them() {
        let faults = |a: &[&str]| resolve(args(a), live).map(|c| c.faults);
        assert_eq!(
            faults(&["-F", "--", "true"]),
            Ok(Faults {
                min: false,
                maj: true
            })
        );
        assert_eq!(
            faults(&["--pf=min", "--", "true"]),
            Ok(Faults {
                min: true,
                maj: false
            })
        );
        assert_eq!(
            faults(&["-F", "all", "--", "true"]),
            Ok(Faults {
                min: true,
                maj: true
            })
        );
        assert_eq!(faults(&["--", "true"]), Ok(Faults::default()));
        assert_eq!(
            faults(&["-F", "major", "--", "true"]),
            Err(ConfigError::BadFaults("major".into()))
        );
        let graph = |a: &[&str]| resolve(args(a), live).map(|c| c.call_graph);
        assert_eq!(graph(&["--", "true"]), Ok(None));
        let fp = CallGraph {
            kernel_syscalls: false,
            max_stack: 127,
            min_stack: 0,
        };
        assert_eq!(graph(&["--call-graph", "fp", "--", "true"]), Ok(Some(fp)));
        // Each of the others implies fp.
        assert_eq!(
            graph(&["--max-stack", "4", "--", "true"]),
            Ok(Some(CallGraph { max_stack: 4, ..fp }))
        );
        assert_eq!(
            graph(&["--min-stack", "2", "--", "true"]),
            Ok(Some(CallGraph { min_stack: 2, ..fp }))
        );
        assert_eq!(
            graph(&["--kernel-syscall-graph", "--", "true"]),
            Ok(Some(CallGraph {
                kernel_syscalls: true,
                ..fp
            }))
        );
        assert_eq!(
            graph(&["--call-graph", "dwarf", "--", "true"]),
            Err(ConfigError::BadCallGraph("dwarf".into()))
        );
        let record = |a: &[&str]| {
            resolve(args(a), live)
                .and_then(|c| for_record(c, true))
                .err()
        };
        assert!(matches!(
            record(&["-F", "all", "--", "true"]),
            Some(ConfigError::Record(_))
        ));
        assert!(matches!(
            record(&["--call-graph", "fp", "--", "true"]),
            Some(ConfigError::Record(_))
        ));
    }

    #[test]
    fn pid_map_entries_in_range_or_refused() {
        assert_eq!(pid_map_entries(None), Ok(8192));
        assert_eq!(pid_map_entries(Some("3")), Ok(3));
        assert_eq!(pid_map_entries(Some("4194304")), Ok(4_194_304));
        for bad in ["0", "-1", "abc", "", "99999999999", "100000000", "4194305"] {
            assert_eq!(
                pid_map_entries(Some(bad)),
                Err(ConfigError::BadPidMapEntries(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(
            ConfigError::BadPidMapEntries("abc".into()).to_string(),
            "invalid RTRACE_PID_MAP_ENTRIES 'abc': expected a number of tasks from 1 to 4194304"
        );
    }

    #[test]
    fn ring_count_in_range_or_refused() {
        assert_eq!(ring_count(None), Ok(None));
        assert_eq!(ring_count(Some("1")), Ok(Some(1)));
        assert_eq!(ring_count(Some(" 8")), Ok(Some(8)));
        for bad in ["0", "9", "-1", "two", ""] {
            assert_eq!(
                ring_count(Some(bad)),
                Err(ConfigError::BadRings(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(
            ConfigError::BadRings("9".into()).to_string(),
            "invalid RTRACE_RINGS '9': expected a number of ring buffers from 1 to 8"
        );
    }

    #[test]
    fn colour_as_the_environment_and_perf_say() {
        use std::ffi::OsStr;
        let s = |v: &'static str| Some(OsStr::new(v));
        assert!(use_color(None, None, None, true));
        assert!(!use_color(None, None, None, false));
        assert!(
            !use_color(s("1"), s("1"), Some(true), true),
            "NO_COLOR wins"
        );
        assert!(
            use_color(s(""), None, None, true),
            "an empty NO_COLOR is unset"
        );
        assert!(use_color(None, s("1"), Some(false), false));
        assert!(!use_color(None, s("0"), None, false));
        assert!(use_color(None, None, Some(true), false));
        assert!(!use_color(None, None, Some(false), true));
    }

    #[test]
    fn the_environment_handed_in_is_the_one_used() {
        let with = |env: Env| {
            resolve_with(
                args(&["--", "true"]),
                live,
                &crate::perfconfig::TraceSettings::default(),
                &env,
            )
        };
        let terminal = Env {
            stderr_terminal: true,
            ..Env::default()
        };
        assert!(with(terminal.clone()).unwrap().line.color);
        assert!(!with(Env::default()).unwrap().line.color);
        let no_color = Env {
            no_color: Some("1".into()),
            ..terminal
        };
        assert!(!with(no_color).unwrap().line.color);
        let bad = Env {
            pid_map_entries: Some("0".into()),
            ..Env::default()
        };
        assert_eq!(
            with(bad).unwrap_err(),
            ConfigError::BadPidMapEntries("0".into())
        );
        let forced = with(Env {
            group_exit: Some("leader".into()),
            syscall_hooks: Some("events".into()),
            path: Some("/opt/bin".into()),
            ..Env::default()
        })
        .unwrap();
        assert_eq!(forced.group_exit.as_deref(), Some("leader"));
        assert_eq!(forced.syscall_hooks, HooksChoice::Events);
        assert_eq!(forced.path, Some("/opt/bin".into()));
        assert_eq!(
            with(Env::default()).unwrap().syscall_hooks,
            HooksChoice::Auto
        );
        let hooks = |v: &str| {
            with(Env {
                syscall_hooks: Some(v.into()),
                ..Env::default()
            })
            .map(|c| c.syscall_hooks)
        };
        assert_eq!(hooks("raw"), Ok(HooksChoice::Raw));
        assert_eq!(hooks("functions"), Ok(HooksChoice::Functions));
        assert_eq!(
            hooks("fentry"),
            Err(ConfigError::BadSyscallHooks("fentry".into()))
        );
    }

    #[test]
    fn summary_entries_in_range_or_refused() {
        assert_eq!(summary_entries(None), Ok(65536));
        assert_eq!(summary_entries(Some("7")), Ok(7));
        for bad in ["0", "-1", "abc", "4194305", ""] {
            assert_eq!(
                summary_entries(Some(bad)),
                Err(ConfigError::BadSummaryEntries(bad.into())),
                "{bad}"
            );
        }
    }

    fn args(v: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("rtrace").chain(v.iter().copied())).unwrap()
    }

    fn live(pid: u32) -> bool {
        pid < 1000
    }

    #[test]
    fn command_and_targets() {
        let c = resolve(args(&["--", "ls", "-l"]), live).unwrap();
        assert_eq!(c.targets, Targets::Workload(vec!["ls".into(), "-l".into()]));
        let c = resolve(args(&["ls", "-l"]), live).unwrap();
        assert_eq!(c.targets, Targets::Workload(vec!["ls".into(), "-l".into()]));
        let c = resolve(args(&["-p", "1,2", "-p", "3"]), live).unwrap();
        assert_eq!(c.targets, Targets::Pids(vec![1, 2, 3]));
        let c = resolve(args(&["-t", "7"]), live).unwrap();
        assert_eq!(c.targets, Targets::Tids(vec![7]));
        let c = resolve(args(&[]), live).unwrap();
        assert_eq!(
            c.targets,
            Targets::System {
                uid: None,
                workload: None
            }
        );
        let c = resolve(args(&["-a", "--", "true"]), live).unwrap();
        assert_eq!(
            c.targets,
            Targets::System {
                uid: None,
                workload: Some(vec!["true".into()])
            }
        );
        let c = resolve(args(&["-u", "0"]), live).unwrap();
        assert_eq!(
            c.targets,
            Targets::System {
                uid: Some(0),
                workload: None
            }
        );
    }

    #[test]
    fn bad_targets_name_the_value() {
        let e = resolve(args(&["-p", "12x"]), live).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid pid '12x' for -p/--pid: expected a positive number"
        );
        let e = resolve(args(&["-p", "5000"]), live).unwrap_err();
        assert_eq!(e.to_string(), "no such process: 5000 (-p/--pid)");
        let e = resolve(args(&["-t", "4242"]), live).unwrap_err();
        assert_eq!(e.to_string(), "no such thread: 4242 (-t/--tid)");
        // perf's `-p PID -- cmd`: PID is traced while cmd runs.
        let c = resolve(args(&["-p", "1", "--", "sleep", "1"]), live).unwrap();
        assert!(matches!(c.targets, Targets::Pids(ref p) if p == &[1]));
        assert_eq!(c.timer, Some(vec!["sleep".into(), "1".into()]));
        assert!(matches!(
            resolve(args(&["-u", "no-such-user-xyz"]), live).unwrap_err(),
            ConfigError::UnknownUser(_)
        ));
        let e = resolve(args(&["--filter-pids", "1,x"]), live).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid pid 'x' for --filter-pids: expected a positive number"
        );
    }

    #[test]
    fn filter_pids_accept_dead_numbers_and_always_hold_self() {
        let c = resolve(args(&["--filter-pids", "99999,5"]), live).unwrap();
        assert_eq!(c.filter_pids, vec![99999, 5, std::process::id()]);
    }

    #[test]
    fn timeline_a_file_of_its_own() {
        let tl = |a: &[&str]| resolve(args(a), live).map(|c| c.timeline);
        assert_eq!(
            tl(&["--timeline", "t.json", "--", "true"]),
            Ok(Some(PathBuf::from("t.json")))
        );
        assert_eq!(tl(&["--", "true"]), Ok(None));
        assert!(matches!(
            tl(&["--timeline", "t.json", "-o", "t.json", "--", "true"]),
            Err(ConfigError::Timeline(_))
        ));
        assert!(matches!(
            tl(&["--timeline", "-", "--", "true"]),
            Err(ConfigError::Timeline(_))
        ));
        // No command (a replay, -p): `-` is stdout, the lines stay on stderr.
        assert_eq!(
            resolve(args(&["-i", "rec", "--timeline", "-"]), live).map(|c| c.timeline),
            Ok(Some(PathBuf::from("-")))
        );
        let recorded = resolve(args(&["--timeline", "t.json", "--", "true"]), live).unwrap();
        assert!(matches!(
            for_record(recorded, true),
            Err(ConfigError::Record(_))
        ));
    }

    #[test]
    fn time_percent_alone_implies_the_summary() {
        let s = resolve(args(&["--time-percent", "--", "true"]), live)
            .unwrap()
            .summary
            .unwrap();
        assert!(s.only && s.time_percent);
        let s = resolve(args(&["-S", "--time-percent", "--", "true"]), live)
            .unwrap()
            .summary
            .unwrap();
        assert!(!s.only && s.time_percent);
    }

    #[test]
    fn summary_flags() {
        assert_eq!(resolve(args(&["--", "true"]), live).unwrap().summary, None);
        let s = resolve(args(&["-s", "--", "true"]), live)
            .unwrap()
            .summary
            .unwrap();
        assert!(s.only && !s.total && !s.errno);
        let s = resolve(args(&["-S", "--summary-mode=total", "--", "true"]), live)
            .unwrap()
            .summary
            .unwrap();
        assert!(!s.only && s.total);
        let s = resolve(args(&["--errno-summary", "--", "true"]), live)
            .unwrap()
            .summary
            .unwrap();
        assert!(s.only && s.errno);
        let s = resolve(
            args(&["-as", "--summary-mode=thread", "--no-bpf-summary"]),
            live,
        )
        .unwrap()
        .summary
        .unwrap();
        assert!(s.only && !s.total && !s.hist);
        assert!(Args::try_parse_from(["rtrace", "--summary-mode=bogus"]).is_err());
        let s = resolve(args(&["-S", "--hist", "--", "true"]), live)
            .unwrap()
            .summary
            .unwrap();
        assert!(s.hist && !s.only);
        assert!(matches!(
            resolve(args(&["--hist", "--", "true"]), live),
            Err(ConfigError::HistWithoutSummary)
        ));
    }

    #[test]
    fn event_selection() {
        let c = resolve(args(&["-e", "openat,nosuch", "--", "true"]), live).unwrap();
        // openat in the native and in the 32-bit table
        assert_eq!(c.selection.as_ref().map(Vec::len), Some(2));
        assert_eq!(c.warnings, ["skipping unknown syscall 'nosuch'"]);
        let c = resolve(
            args(&["--event", "open*", "-e", "close", "--", "true"]),
            live,
        )
        .unwrap();
        assert!(c.selection.unwrap().len() >= 3);
        let e = resolve(args(&["-e", "nosuch", "--", "true"]), live).unwrap_err();
        assert_eq!(e.to_string(), "-e 'nosuch' selects no syscall");
        // strace's trace= on each -e value, and its other qualifiers refused on any.
        let c = resolve(
            args(&["-e", "trace=openat", "-e", "trace=close", "--", "true"]),
            live,
        )
        .unwrap();
        assert_eq!(c.selection.as_ref().map(Vec::len), Some(4));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let e = resolve(
            args(&["-e", "openat", "-e", "signal=none", "--", "true"]),
            live,
        )
        .unwrap_err();
        assert!(e.to_string().contains("strace's signal= qualifier"), "{e}");
        // --no-syscalls alone traces nothing, and says so; with -F it does not.
        let c = resolve(args(&["--no-syscalls", "--", "true"]), live).unwrap();
        assert_eq!(c.selection, Some(Vec::new()));
        assert!(c.warnings[0].contains("traces nothing"), "{:?}", c.warnings);
        let c = resolve(args(&["--no-syscalls", "-F", "all", "--", "true"]), live).unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("0,2-3", 4).unwrap(), [0, 2, 3]);
        assert_eq!(parse_cpus("1, 1", 2).unwrap(), [1]);
        assert!(parse_cpus("4", 4).is_err());
        assert!(parse_cpus("3-1", 4).is_err());
        assert!(parse_cpus("x", 4).is_err());
        let e = resolve(args(&["-C", "999999", "--", "true"]), live).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("invalid CPU list '999999' for -C/--cpu"),
            "{e}"
        );
    }

    #[test]
    fn ring_sizes() {
        assert_eq!(parse_ring_size("16").unwrap(), 16 * 4096);
        assert_eq!(parse_ring_size("3").unwrap(), 4 * 4096);
        assert_eq!(parse_ring_size("16M").unwrap(), 16 << 20);
        assert_eq!(parse_ring_size("100k").unwrap(), 128 << 10);
        assert!(parse_ring_size("x").is_err());
        assert!(parse_ring_size("0").is_err());
        assert!(parse_ring_size("8G").is_err());
    }
}
