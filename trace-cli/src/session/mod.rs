//! One tracing session, start to end, as `run` lists its steps:
//! settle the settings (`plan`) → fork the held command → load (`probes`) → attach the
//! fork/exit upkeep, write pids_filtered and the targets and prune both maps (`seed`),
//! write the syscall tables (`tables`), attach the syscall programs → release the
//! command (`release`) → read the ring buffer in batches until the command exits, the
//! targets are gone or a signal comes (`event_loop`) → detach the programs that write
//! records → read what the ring still holds → the summary, what was lost and the exit
//! status (`report`).

mod event_loop;
mod hooks;
mod merge;
mod plan;
mod probes;
mod reader_priority;
mod record_header;
mod release;
mod report;
mod seed;
mod symbols;
mod tables;

use std::io::{self, Write};

use thiserror::Error;

use crate::{
    config::Config,
    kernel::{
        btf::BtfError,
        features::Missing,
        loader::{LoadError, Settings},
        privilege::NotPrivileged,
        stats_maps,
        tracefs::TracefsError,
    },
    output,
    signals::Stops,
    symbols::resolve::Symbols,
    workload::{Workload, WorkloadError},
};

use event_loop::{EventLoop, PrinterParts};
use plan::Plan;
use probes::Probes;

#[derive(Debug, Error)]
pub enum SessionError {
    #[error(transparent)]
    Privilege(#[from] NotPrivileged),
    #[error(transparent)]
    Tracefs(#[from] TracefsError),
    #[error(transparent)]
    Events(#[from] crate::events::EventsError),
    #[error(transparent)]
    Cgroup(#[from] crate::kernel::cgroup::CgroupError),
    #[error(transparent)]
    Kernel(#[from] Missing),
    #[error("reading the kernel's BTF: {0}")]
    Btf(#[from] BtfError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[error(
        "the map {name} is full: it holds {entries} tasks — raise RTRACE_PID_MAP_ENTRIES (e.g. RTRACE_PID_MAP_ENTRIES={suggest})"
    )]
    MapFull {
        name: &'static str,
        entries: u32,
        suggest: u32,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
}

impl SessionError {
    pub fn exit_code(&self) -> i32 {
        match self {
            SessionError::Workload(w) => w.exit_code(),
            _ => 1,
        }
    }
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> SessionError {
    let what = what.into();
    move |source| SessionError::Io { what, source }
}

/// Runs the session; returns rtrace's exit status.
pub fn run(cfg: Config) -> Result<i32, SessionError> {
    // Start-up takes a while (seconds in an emulated kernel): a stop asked for meanwhile
    // ends it between its steps, before the command runs.
    let ended_by = |sig: i32, workload: bool| if workload { 128 + sig } else { 0 };
    let pending = crate::kernel::loader::PendingLoader::start();
    let plan = match Plan::settle(&cfg) {
        Ok(plan) => plan,
        // The feature probes load tiny programs, which the verifier gives up on when a
        // signal is pending: a stop asked for then is the stop, not a missing feature.
        Err(e) => {
            return match crate::signals::early() {
                Some(sig) => Ok(ended_by(sig, plan::command(&cfg).is_some())),
                None => Err(e),
            };
        }
    };
    let mut out = open_output(&cfg)?;
    let timeline = open_timeline(&cfg)?;
    if let Some(sig) = crate::signals::early() {
        return Ok(ended_by(sig, plan.argv.is_some()));
    }
    // The command is forked first, as perf does, while rtrace holds no BPF object (and
    // the child puts the stopping signals back as rtrace found them).
    let spawn =
        |argv: &Vec<_>| Workload::spawn_held(argv, cfg.path.as_deref(), cfg.trace_to_stdout());
    let mut workload = plan.argv.map(spawn).transpose()?;
    // A stop asked for while the verifier runs makes the load fail (the kernel gives up
    // on a program when a signal is pending): that is the stop, not an error.
    // The formats are read while the verifier checks the programs.
    let (loaded, tables) = std::thread::scope(|s| {
        let tables = s.spawn(|| tables::read(&cfg, &plan.settings, plan.tracefs.clone()));
        let loaded = Probes::load(&plan.settings, pending);
        let tables = tables
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (loaded, tables)
    });
    if let Some(sig) = crate::signals::early() {
        // Dropping the held command makes it exit without running.
        return Ok(ended_by(sig, workload.is_some()));
    }
    let mut probes = loaded?;
    let bpf_log = probes.open_log(cfg.verbose)?;
    let mut events = EventRuntime::start()?;
    let symbols = arm(&mut probes, &cfg, &plan.settings, &tables, &workload)?;
    let proc_seeds = seed::read_procs(&cfg, workload.as_ref());
    if let Some(formats) = plan.record_formats {
        let names_pids = plan.ns.is_initial();
        record_header::write(&mut out, &cfg, formats, &proc_seeds, names_pids)?;
    }
    if let (Some(sig), Some(_)) = (events.stop_requested(), &workload) {
        // Asked to stop before the command ran: it never runs (dropping it makes the
        // held child exit), and rtrace ends as the signal asked.
        return Ok(128 + sig);
    }
    let hooks = &plan.settings.hooks;
    let (pidfd, shown_from_ns) =
        release::start(workload.as_mut(), &mut events, &mut probes, hooks, &cfg)?;
    let mut thread_stats = report::thread_stats(&cfg, &probes.bpf)?;
    let sweep = plan.ns.is_initial() && stats_maps::sweep_allowed();
    let printer = PrinterParts {
        catalog: tables.catalog,
        proc_seeds,
        event_table: plan.event_table,
        shown_from_ns,
        symbols,
        timeline,
    };
    let event_loop = EventLoop {
        bpf: &mut probes.bpf,
        rings: plan.settings.rings.count,
        cfg: &cfg,
        printer,
        out: &mut out,
        pidfd: pidfd.as_ref(),
        workload: workload.as_ref(),
        stops: &mut events.stops,
        bpf_log,
        thread_stats: thread_stats.as_mut().filter(|_| sweep),
    };
    let (reader, exit_code) = events.runtime.block_on(event_loop.run())?;
    // Nothing writes records from here on (and the summary's numbers no longer move):
    // what the ring holds is all that is left, a bounded final read.
    probes.stop_records();
    let ended = reader.finish(&probes.bpf, &cfg, &mut out)?;
    let stop = events.stop_requested();
    let exit_code = report::exit_status(exit_code, stop, &out, workload.is_some());
    let folded_threads = report::summary(&cfg, thread_stats, &probes.bpf, &mut out)?;
    let _ = out.flush();
    if let Some(end) = report::failed_output(&out) {
        return end;
    }
    // Every program detached at once, before the last words.
    drop(probes);
    report::losses(folded_threads, &ended, &plan.settings);
    Ok(exit_code)
}

/// The trace's destination: `-o FILE`, or stderr.
fn open_output(cfg: &Config) -> Result<output::Sink, SessionError> {
    output::sink(cfg.output.as_deref()).map_err(io_err(format!(
        "opening {:?}",
        cfg.output.as_deref().unwrap_or("".as_ref())
    )))
}

/// `--timeline FILE`, opened before anything is attached (a FILE that cannot be
/// written ends rtrace there).
fn open_timeline(cfg: &Config) -> Result<Option<output::timeline::Timeline>, SessionError> {
    let Some(path) = &cfg.timeline else {
        return Ok(None);
    };
    output::timeline::Timeline::create(path, &cfg.line)
        .map(Some)
        .map_err(io_err(format!("opening the timeline {path:?}")))
}

/// Attaches the fork/exit upkeep and the events, seeds the pid maps, writes the
/// syscall tables, starts naming addresses, and attaches the syscall programs last
/// (with -D, once the delay has passed): the order the kernel side needs. What names
/// addresses.
fn arm(
    probes: &mut Probes,
    cfg: &Config,
    settings: &Settings,
    tables: &tables::Tables,
    workload: &Option<Workload>,
) -> Result<Option<Symbols>, SessionError> {
    probes.attach_upkeep(&settings.events)?;
    seed::write_pid_maps(&probes.bpf, cfg, workload.as_ref(), settings.key_by_tid)?;
    tables::write(probes, cfg, tables)?;
    let symbols = symbols::start(cfg, settings, workload.as_ref())?;
    if cfg.delay.is_none() {
        probes.attach_syscalls(&settings.hooks, cfg)?;
    }
    Ok(symbols)
}

/// The event loop's runtime, one thread, made only once the command is forked; and
/// the stop signals' handlers, on it.
struct EventRuntime {
    runtime: tokio::runtime::Runtime,
    stops: Stops,
}

impl EventRuntime {
    fn start() -> Result<EventRuntime, SessionError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(io_err("starting the event loop"))?;
        let stops = {
            let _entered = runtime.enter();
            Stops::install().map_err(io_err("installing signal handlers"))?
        };
        Ok(EventRuntime { runtime, stops })
    }

    /// The stop signal that came, if one did.
    fn stop_requested(&mut self) -> Option<i32> {
        self.runtime.block_on(self.stops.requested())
    }
}
