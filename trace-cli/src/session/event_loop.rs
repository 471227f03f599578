//! The event loop: reads the ring buffer in batches until the command exits, the
//! targets are gone or a stop comes, then hands the reader to the final read. The
//! printer is made, fed and finished here.

use std::{
    io::{self, Write},
    os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd},
    task::Poll,
    time::{Duration, Instant},
};

use aya::{
    Ebpf,
    maps::{Array, MapData, PerCpuArray, RingBuf},
};
use aya_log::EbpfLogger;
use tokio::{
    io::{Interest, unix::AsyncFd},
    time::{Interval, MissedTickBehavior},
};
use trace_common::maps::{
    COUNTER_COMPAT_EXECS, COUNTER_DROPPED, COUNTER_LOST_HANDOFF, COUNTER_LOST_TASKS,
    COUNTER_LOST_UNSEEN, COUNTER_STATS_LOST, COUNTERS, HANDOFFS, HANDOFFS_GIVEN, HANDOFFS_SETTLED,
    PIDS_TO_TRACE, READER_ASLEEP, RINGS,
};

use crate::{
    config::{Config, Targets},
    decode::{
        Catalog,
        fd_table::{self, FdTable, ProcSeed},
    },
    events::EventTable,
    kernel::{
        bpf_log::StderrLines,
        loader::{self, LoadError},
        map_ops::PidMapFd,
        ring_positions::RingPositions,
        stats_maps,
        tracefs::Tracefs,
    },
    output::{
        Consumer, Sink,
        line::{RED, RESET},
        printer::Printer,
        timeline::Timeline,
    },
    pids::fd_seed,
    record::Recorder,
    signals::Stops,
    symbols::resolve::Symbols,
    workload::Workload,
};

use super::{
    SessionError, io_err,
    merge::{Merge, Ring, Taker},
    release::reap,
};

/// What the loop reads from, writes to and watches.
pub(super) struct EventLoop<'s, 'c> {
    pub bpf: &'s mut Ebpf,
    /// How many rings the programs write.
    pub rings: u32,
    pub cfg: &'c Config,
    pub printer: PrinterParts,
    pub out: &'s mut Sink,
    pub pidfd: Option<&'s OwnedFd>,
    pub workload: Option<&'s Workload>,
    pub stops: &'s mut Stops,
    pub bpf_log: Option<EbpfLogger<StderrLines>>,
    /// A per-thread summary's numbers, swept as threads exit.
    pub thread_stats: Option<&'s mut stats_maps::ThreadStats>,
}

/// What the printer is made of.
pub(super) struct PrinterParts {
    pub catalog: Catalog<Tracefs>,
    /// Where each target was when tracing began.
    pub proc_seeds: Vec<ProcSeed>,
    pub event_table: EventTable,
    /// Events before this time are not shown (`-D`).
    pub shown_from_ns: u64,
    pub symbols: Option<Symbols>,
    /// `--timeline`, opened.
    pub timeline: Option<Timeline>,
}

/// The records read in one go before the loop looks again at signals, the command's
/// exit and the output: a reader that falls behind (a debug build, a busy machine
/// under -a) would otherwise never leave its drain to see that tracing is over.
const BATCH_RECORDS: usize = 8192;

/// How often the reader drains when no wake-up came (a sleeping reader is woken only when
/// the ring fills past a quarter).
const DRAIN_EVERY: Duration = Duration::from_millis(100);

/// How long a command sent rtrace's stop signal has to end before rtrace ends anyway.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// How often a per-thread summary moves the numbers of exited threads out of the
/// kernel's maps: they then hold the live threads and those of the last second, not
/// every thread of the session.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a system-wide trace goes on reading once its end has come.
const FINAL_READ_SYSTEM_WIDE: Duration = Duration::from_millis(500);

impl<'c> EventLoop<'_, 'c> {
    /// Runs until tracing is over; the reader, and the command's exit status if it
    /// ended.
    pub async fn run(mut self) -> Result<(Reader<'c>, Option<i32>), SessionError> {
        let _raised = match super::reader_priority::raise() {
            Ok(raised) => Some(raised),
            Err(kept) => {
                if self.cfg.verbose > 0 {
                    say!("rtrace: the reader keeps its scheduling level: {kept}");
                }
                None
            }
        };
        let mut watched = Watched::open(self.bpf, self.rings, self.pidfd, self.bpf_log)?;
        let counts = KernelCounts::open(self.bpf)?;
        // With a command beside them (`-p PID -- cmd`), the command's end ends it.
        let follow_targets = matches!(self.cfg.targets, Targets::Pids(_) | Targets::Tids(_))
            && self.cfg.timer.is_none();
        let mut printer = self.printer.build(self.cfg);
        let mut state = State {
            reported_lost: 0,
            exit_code: None,
            stop_at: None,
            swept_at: Instant::now(),
            // SAFETY: sysconf has no preconditions.
            ticks_per_sec: u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
                .unwrap_or(100),
        };
        let mut behind = false;
        loop {
            // Whichever comes first: a signal, the programs' wake-up (the ring is a
            // quarter full), the workload's exit, or the periodic drain. A reader still
            // behind reads on at once.
            if !behind {
                watched.wait(self.stops).await;
            }
            if let Some(log) = &mut watched.bpf_log {
                log.get_mut().flush();
            }

            let batch = watched.rings.drain(&mut *printer, self.out, BATCH_RECORDS);
            behind = batch == Drained::Behind;
            let mut done = batch == Drained::Stop;
            report_lost(
                &counts.counters,
                &mut state.reported_lost,
                self.cfg,
                self.out,
            );
            let _ = self.out.flush();
            state.sweep(self.thread_stats.as_deref_mut());
            done |= state.reaped(self.workload);
            done |= follow_targets && counts.targets_gone();
            done |= state.stopped(self.stops, self.out, self.workload).await;
            if done {
                break;
            }
        }
        let reader = Reader {
            printer,
            rings: watched.rings,
            bpf_log: watched.bpf_log,
            reported_lost: state.reported_lost,
        };
        Ok((reader, state.exit_code))
    }
}

impl PrinterParts {
    /// The printer, or for `rtrace record` the recorder (records are decoded only
    /// when replayed).
    fn build(self, cfg: &Config) -> Box<dyn Consumer + '_> {
        if cfg.record {
            return Box::new(Recorder::new(cfg.max_events));
        }
        let mut fds = FdTable::new(
            close_traced(cfg),
            all_traced(cfg, fd_table::CWD_CALLS),
            fd_seed::ProcCanon,
        );
        fds.seed_procs(self.proc_seeds, fd_seed::inherited_fds());
        let mut printer = Printer::new(self.catalog, fds, cfg)
            .with_events(self.event_table)
            .with_timeline(self.timeline)
            .showing(|s| s.from(self.shown_from_ns));
        if let Some(symbols) = self.symbols {
            printer = printer.with_locator(Box::new(symbols));
        }
        Box::new(printer)
    }
}

/// What the loop waits on: the rings, the command's exit, the programs' log and the
/// periodic drain.
struct Watched<'s> {
    rings: Rings,
    /// Where the loop tells the programs it sleeps (`READER_ASLEEP`).
    asleep: Array<MapData, u32>,
    pidfd: Option<AsyncFd<BorrowedFd<'s>>>,
    bpf_log: Option<AsyncFd<EbpfLogger<StderrLines>>>,
    tick: Interval,
}

impl<'s> Watched<'s> {
    fn open(
        bpf: &mut Ebpf,
        ring_count: u32,
        pidfd: Option<&'s OwnedFd>,
        bpf_log: Option<EbpfLogger<StderrLines>>,
    ) -> Result<Watched<'s>, SessionError> {
        let rings = Rings::open(bpf, ring_count)?;
        let asleep = bpf
            .take_map(READER_ASLEEP)
            .ok_or(LoadError::MissingMap(READER_ASLEEP))?;
        let asleep = Array::try_from(asleep).map_err(|e| SessionError::Io {
            what: "opening the reader's wake-up word".into(),
            source: io::Error::other(e),
        })?;
        let pidfd = pidfd
            .map(|fd| watch(fd.as_fd()))
            .transpose()
            .map_err(io_err("watching the workload's pidfd"))?;
        let bpf_log = bpf_log
            .map(watch)
            .transpose()
            .map_err(io_err("watching the programs' log"))?;
        let mut tick = tokio::time::interval(DRAIN_EVERY);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Ok(Watched {
            rings,
            asleep,
            pidfd,
            bpf_log,
            tick,
        })
    }

    /// Waits for whichever comes first. The programs are told first that the loop
    /// sleeps, so that a ring filling past the threshold wakes it (once); a word that
    /// cannot be set leaves the timer to drain.
    async fn wait(&mut self, stops: &mut Stops) {
        let _ = self.asleep.set(0, 1, 0);
        tokio::select! {
            biased;
            _ = stops.next() => {}
            _ = self.rings.readable() => {}
            _ = exited(self.pidfd.as_ref()) => {}
            _ = readable(self.bpf_log.as_mut()) => {}
            _ = self.tick.tick() => {}
        }
    }
}

/// What the loop reads of the kernel's maps after each batch.
struct KernelCounts<'b> {
    counters: PerCpuArray<&'b MapData, u64>,
    to_trace: PidMapFd<'b>,
    handoffs: Array<&'b MapData, u64>,
}

impl<'b> KernelCounts<'b> {
    fn open(bpf: &'b Ebpf) -> Result<KernelCounts<'b>, SessionError> {
        let counters = open_counters(bpf)?;
        let to_trace = PidMapFd::new(loader::map_fd(bpf, PIDS_TO_TRACE)?);
        let handoffs: Array<&MapData, u64> = Array::try_from(
            bpf.map(HANDOFFS).ok_or(LoadError::MissingMap(HANDOFFS))?,
        )
        .map_err(|e| SessionError::Io {
            what: "opening the fork hand-off counts".into(),
            source: io::Error::other(e),
        })?;
        Ok(KernelCounts {
            counters,
            to_trace,
            handoffs,
        })
    }

    /// Every target has exited, and no child of theirs is still on its way in
    /// (forked, not yet returned to user space where it is adopted). The order of the
    /// reads matters: see `trace_common::maps::HANDOFFS`.
    fn targets_gone(&self) -> bool {
        let settled = self.handoffs.get(&HANDOFFS_SETTLED, 0).unwrap_or(0);
        self.to_trace.is_empty().unwrap_or(false)
            && self.handoffs.get(&HANDOFFS_GIVEN, 0).unwrap_or(0) == settled
    }
}

/// What the loop keeps from one batch to the next.
struct State {
    reported_lost: u64,
    exit_code: Option<i32>,
    /// When a command sent the stop signal is given up on.
    stop_at: Option<Instant>,
    swept_at: Instant,
    ticks_per_sec: u64,
}

impl State {
    /// A per-thread summary's sweep, once a second.
    fn sweep(&mut self, thread_stats: Option<&mut stats_maps::ThreadStats>) {
        if let Some(t) = thread_stats
            && self.swept_at.elapsed() >= SWEEP_EVERY
        {
            t.sweep(|task| stats_maps::still_running(task, self.ticks_per_sec));
            self.swept_at = Instant::now();
        }
    }

    /// Whether the command has ended. Looked at after every batch, not only when the
    /// pidfd woke the loop: a reader that is behind does not wait for it.
    fn reaped(&mut self, workload: Option<&Workload>) -> bool {
        if let Some(w) = workload
            && self.exit_code.is_none()
            && let Some(code) = reap(w.pid)
        {
            self.exit_code = Some(code);
        }
        self.exit_code.is_some()
    }

    /// Whether a stop (a signal, or a failed output) ends the session now.
    async fn stopped(
        &mut self,
        stops: &mut Stops,
        out: &Sink,
        workload: Option<&Workload>,
    ) -> bool {
        let Some(sig) = stops.requested().await.or_else(|| output_stop(out)) else {
            return false;
        };
        // The command rtrace started gets the signal too (a terminal's Ctrl-C has
        // sent it already; a `kill` or a CI runner's cancel sent it to rtrace
        // alone), once, and a moment to end; -p/-t/-a targets are never signalled.
        let exit_code = self.exit_code;
        let deadline = *self.stop_at.get_or_insert_with(|| {
            if let (Some(w), None) = (workload, exit_code) {
                // SAFETY: signalling our own child, not yet reaped.
                unsafe { libc::kill(w.pid as libc::pid_t, sig) };
            }
            Instant::now() + STOP_GRACE
        });
        workload.is_none() || self.exit_code.is_some() || Instant::now() >= deadline
    }
}

/// A failed output stops the session as a signal would, and the command rtrace started
/// is told as on SIGINT for a broken pipe (a reader that went away, like `| head`), as
/// on SIGTERM for any other error (a full disk).
pub(super) fn output_stop(out: &Sink) -> Option<i32> {
    let e = out.failure()?;
    Some(if e.raw_os_error() == Some(libc::EPIPE) {
        libc::SIGINT
    } else {
        libc::SIGTERM
    })
}

/// fd paths are kept only when close is traced, so that a reused fd never shows a
/// stale path.
fn close_traced(cfg: &Config) -> bool {
    all_traced(cfg, &["close"])
}

/// Whether every call in `names` is traced.
fn all_traced(cfg: &Config, names: &[&str]) -> bool {
    fd_table::all_traced(cfg.selection.as_deref(), names)
}

/// Registers a descriptor with the event loop, for reading.
fn watch<T: AsRawFd>(inner: T) -> io::Result<AsyncFd<T>> {
    // SAFETY: every T given here owns or borrows its descriptor for at least as long as
    // the AsyncFd lives (the ring buffer's map, the pidfd that `run` holds), and always
    // answers the same one.
    unsafe { AsyncFd::register_with_interest(inner, Interest::READABLE) }.map_err(|e| e.into())
}

/// Resolves once the descriptor is readable, and takes the readiness (what made it so is
/// read next); never without one.
async fn readable<T: AsRawFd>(fd: Option<&mut AsyncFd<T>>) {
    match fd {
        Some(fd) => {
            if let Ok(mut ready) = fd.readable_mut().await {
                ready.clear_ready();
            }
        }
        None => std::future::pending().await,
    }
}

/// Resolves once the workload has exited (its pidfd turns readable); never without one.
async fn exited(pidfd: Option<&AsyncFd<BorrowedFd<'_>>>) {
    match pidfd {
        Some(fd) => {
            let _ = fd.readable().await;
        }
        None => std::future::pending().await,
    }
}

/// What reads the ring, handed from the event loop to the final read once the
/// programs are detached.
pub(super) struct Reader<'c> {
    printer: Box<dyn Consumer + 'c>,
    rings: Rings,
    bpf_log: Option<AsyncFd<EbpfLogger<StderrLines>>>,
    reported_lost: u64,
}

impl Reader<'_> {
    /// Reads what the ring still holds (the programs are detached: it only shrinks,
    /// but for a program run already under way when its hook went, whose record may
    /// come after this read), shows what is still blocked as unfinished, and says what
    /// was lost.
    pub fn finish(
        mut self,
        bpf: &Ebpf,
        cfg: &Config,
        out: &mut Sink,
    ) -> Result<Ended, SessionError> {
        // A system-wide trace whose reader fell behind would spend seconds on other
        // processes' records after its command ended: it reads for a while, then
        // counts what it leaves, as a loss. A command's or -p's trace is read whole.
        let system_wide = matches!(cfg.targets, Targets::System { .. });
        if system_wide {
            let until = Instant::now() + FINAL_READ_SYSTEM_WIDE;
            let mut last = Drained::Behind;
            while Instant::now() < until && last == Drained::Behind {
                last = self.rings.drain(&mut *self.printer, out, 1024);
            }
            let unread = self.rings.discard();
            // Past --max-events, or with the output gone, the rest is not wanted.
            if unread > 0 && last == Drained::Behind {
                say!(
                    "rtrace: {unread} records were left unread when tracing ended (the reader was behind the system-wide trace)"
                );
            }
        } else {
            self.rings.drain(&mut *self.printer, out, usize::MAX);
        }
        if let Some(log) = &mut self.bpf_log {
            log.get_mut().flush();
        }
        // What is still blocked when tracing ends is shown as unfinished.
        self.printer.flush_pending(None, out);
        if let Some(failed) = self.printer.end(Some(crate::clock::monotonic_ns())) {
            say!("rtrace: {failed}");
        }
        let counters = open_counters(bpf)?;
        report_lost(&counters, &mut self.reported_lost, cfg, out);
        let maps_lost = self.printer.locations_lost();
        if maps_lost > 0 {
            say!(
                "rtrace: {maps_lost} memory-map records were lost (their ring was full): some addresses may be unnamed, or named by an older mapping at the same address"
            );
        }
        let _ = out.flush();
        Ok(Ended {
            lost: LostTasks {
                full_map: counter_sum(&counters, COUNTER_LOST_TASKS),
                full_handoff: counter_sum(&counters, COUNTER_LOST_HANDOFF),
                unseen: counter_sum(&counters, COUNTER_LOST_UNSEEN),
            },
            stats_lost: counter_sum(&counters, COUNTER_STATS_LOST),
            compat_execs: counter_sum(&counters, COUNTER_COMPAT_EXECS),
        })
    }
}

/// Says how many records the programs could not write (the ring was full) since the
/// last time, as perf says it: in the trace, where they are missing.
fn report_lost(
    counters: &PerCpuArray<&MapData, u64>,
    reported: &mut u64,
    cfg: &Config,
    out: &mut Sink,
) {
    let dropped = counter_sum(counters, COUNTER_DROPPED);
    if dropped <= *reported {
        return;
    }
    let lost = dropped - *reported;
    *reported = dropped;
    let (on, off) = if cfg.line.color {
        (RED, RESET)
    } else {
        ("", "")
    };
    // In JSON every line is an object, the loss too.
    let _ = if cfg.record {
        // The record file holds records only.
        say!("rtrace: LOST {lost} events!");
        Ok(())
    } else if cfg.json {
        writeln!(out, "{{\"lost\":{lost}}}")
    } else {
        writeln!(out, "{on}LOST {lost} events!{off}")
    };
}

/// How a batch of reading ended.
#[derive(Debug, PartialEq)]
pub(super) enum Drained {
    /// The ring is empty.
    Empty,
    /// The batch is over and records are waiting.
    Behind,
    /// --max-events is reached or the output failed.
    Stop,
}

/// The rings the programs write, read as one (`merge`).
struct Rings {
    fds: Vec<WatchedRing>,
    merge: Merge,
}

/// A ring, watched for the programs' wake-ups, and its positions.
struct WatchedRing {
    fd: AsyncFd<RingBuf<MapData>>,
    positions: RingPositions,
}

impl Ring for WatchedRing {
    fn with_next<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let item = self.fd.get_mut().next()?;
        Some(f(&item))
    }

    fn unread(&self) -> bool {
        self.positions.unread()
    }
}

/// The printer and its output, as the merge hands records on.
struct Feed<'a, 'p> {
    printer: &'a mut (dyn Consumer + 'p),
    out: &'a mut Sink,
}

impl Taker for Feed<'_, '_> {
    fn done(&self) -> bool {
        self.printer.max_reached()
    }

    fn take(&mut self, item: &[u8]) -> bool {
        self.printer.take(item, self.out)
    }
}

impl Rings {
    /// The first `count` of `RINGS`, the ones the programs write.
    fn open(bpf: &mut Ebpf, count: u32) -> Result<Rings, SessionError> {
        let mut fds = Vec::new();
        for name in RINGS.into_iter().take(count as usize) {
            let map = bpf.take_map(name).ok_or(LoadError::MissingMap(name))?;
            let ring = RingBuf::try_from(map).map_err(|e| SessionError::Io {
                what: "opening a ring buffer".into(),
                source: io::Error::other(e),
            })?;
            let positions = RingPositions::map(ring.as_fd())
                .map_err(io_err("mapping a ring buffer's positions"))?;
            let fd = watch(ring).map_err(io_err("watching a ring buffer"))?;
            fds.push(WatchedRing { fd, positions });
        }
        let merge = Merge::new(fds.len());
        Ok(Rings { fds, merge })
    }

    /// Prints up to `budget` records of what the rings hold, oldest first.
    fn drain(&mut self, printer: &mut dyn Consumer, out: &mut Sink, budget: usize) -> Drained {
        printer.keep_up();
        let mut feed = Feed { printer, out };
        self.merge
            .drain(&mut self.fds, budget, &mut feed, crate::clock::monotonic_ns)
    }

    /// Throws away what is left; how many records.
    fn discard(&mut self) -> u64 {
        self.merge.discard(&mut self.fds)
    }

    /// Resolves once a ring is readable (the programs woke the reader), and takes the
    /// readiness of every ring that is.
    async fn readable(&mut self) {
        std::future::poll_fn(|cx| {
            let mut any = false;
            for ring in &mut self.fds {
                if let Poll::Ready(Ok(mut ready)) = ring.fd.poll_read_ready_mut(cx) {
                    ready.clear_ready();
                    any = true;
                }
            }
            if any { Poll::Ready(()) } else { Poll::Pending }
        })
        .await
    }
}

/// Children of targets that could not be followed, by cause.
pub(super) struct LostTasks {
    pub full_map: u64,
    pub full_handoff: u64,
    pub unseen: u64,
}

/// What the final read found lost.
pub(super) struct Ended {
    pub lost: LostTasks,
    pub stats_lost: u64,
    /// Execs of a 32-bit program by traced tasks.
    pub compat_execs: u64,
}

/// The programs' per-CPU counters (`COUNTER_*`: records dropped, tasks lost…).
fn open_counters(bpf: &Ebpf) -> Result<PerCpuArray<&MapData, u64>, SessionError> {
    PerCpuArray::try_from(bpf.map(COUNTERS).ok_or(LoadError::MissingMap(COUNTERS))?).map_err(|e| {
        SessionError::Io {
            what: "opening the counters".into(),
            source: io::Error::other(e),
        }
    })
}

fn counter_sum(counters: &PerCpuArray<&MapData, u64>, slot: u32) -> u64 {
    counters.get(&slot, 0).map(|v| v.iter().sum()).unwrap_or(0)
}
