//! From the ring's records to lines: the records of one call joined (an exec's reads
//! sent ahead, a blocking call's entry), fd paths kept, unfinished calls shown as perf
//! shows them. Pure: the session hands it the bytes, it writes the lines.

use std::io::Write;

use trace_common::{
    SyscallRecord,
    record::{
        Augmented, KIND_EVENT, KIND_EXEC_ENV, KIND_EXEC_READS, KIND_FAULT, KIND_STACK, REC_PENDING,
        STACK_FRAMES,
    },
};

use crate::{
    config::Config,
    decode::{Catalog, FormatSource, SyscallInfo, beauty::Beauty, fd_table::FdTable},
    events::EventTable,
    output::{
        callchain::{self, Frame},
        json::JsonFormatter,
        line::LineFormatter,
    },
    record::replay::Shown,
    symbols::{Locate, is_kernel_addr},
};

/// The bytes of a string read whole (a path cut short names nothing).
fn whole(read: Option<Result<Augmented<'_>, ()>>) -> Option<&[u8]> {
    read?.ok().filter(|a| !a.cut).map(|a| a.bytes)
}

/// Argument `i` of call `nr` from a record an exec sent ahead of the call's own.
fn sent_ahead<'a>(
    bytes: Option<&'a [u8]>,
    sent: Option<&SyscallRecord>,
    nr: u32,
    i: usize,
) -> Option<Result<Augmented<'a>, ()>> {
    sent.filter(|r| r.nr == nr)?.augmented(bytes?, i)
}

/// The two fds a pipe or socketpair wrote, when they were read.
fn fd_pair<'a>(
    info: &SyscallInfo,
    read: &dyn Fn(usize) -> Option<Result<Augmented<'a>, ()>>,
) -> Option<[i32; 2]> {
    let i = info.beauties.iter().position(|b| *b == Beauty::FdPair)?;
    let b = whole(read(i))?;
    let fd = |at: usize| Some(i32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?));
    Some([fd(0)?, fd(4)?])
}

/// The call's first string argument (an open's or a chdir's path).
fn first_string(info: &SyscallInfo) -> Option<usize> {
    info.beauties.iter().position(|b| *b == Beauty::Str)
}

/// Turns the ring's records into lines: perf trace's, or `--json`'s.
pub struct Printer<'c, S> {
    catalog: Catalog<S>,
    /// What a successful execve ran (path and argv), per tid, until its record comes.
    exec_reads: rustc_hash::FxHashMap<u32, Vec<u8>>,
    /// The environment it gave the new program (`--envp`), per tid, likewise.
    exec_env: rustc_hash::FxHashMap<u32, Vec<u8>>,
    fds: FdTable,
    /// Entries of blocking calls not yet returned, per tid.
    pending: rustc_hash::FxHashMap<u32, Pending>,
    /// Buffers of pending entries gone, for the next ones (no allocation per call).
    spare: Vec<Vec<u8>>,
    fmt: LineFormatter,
    json: Option<JsonFormatter>,
    /// A `--json` line (serde writes bytes).
    json_line: Vec<u8>,
    line: String,
    printed: u64,
    cfg: &'c Config,
    /// Tracepoint events chosen with `-e cat:name`.
    events: EventTable,
    /// Events before this time (ns, the programs' clock) are not shown: `-D`.
    shown_from_ns: u64,
    /// Replaying a record (`-i`): the tasks and calls this command line shows.
    shown: Option<Shown>,
    /// `rtrace record`: each record goes to the output as it came, after its length.
    recording: bool,
    /// Names the places of page faults (`-F`) and the frames of call chains.
    locate: Option<Box<dyn Locate + 'c>>,
    /// `--call-graph`: each thread's last frames, until its record comes.
    stacks: rustc_hash::FxHashMap<u32, Stack>,
    /// The frames of the line being printed, named, and their text.
    frames: Vec<Frame>,
    chain: String,
    /// Which of `frames` the line shows.
    chain_shown: std::ops::Range<usize>,
}

/// A thread's frames as the kernel sent them, for the record stamped `stamp`.
#[derive(Default)]
struct Stack {
    stamp: u64,
    kernel: Vec<u64>,
    user: Vec<u64>,
    used: bool,
}

impl Stack {
    /// Takes a KIND_STACK record's frames (the buffers are kept for the next).
    fn fill(&mut self, rec: &SyscallRecord, item: &[u8]) {
        let frames = |at: usize, n: u64| {
            let n = (n as usize).min(STACK_FRAMES);
            let at = trace_common::record::SYSCALL_RECORD_SIZE + at * 8;
            item.get(at..at + n * 8)
                .unwrap_or_default()
                .chunks_exact(8)
                .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
        };
        self.stamp = rec.enter_ns;
        self.used = false;
        self.kernel.clear();
        self.kernel.extend(frames(0, rec.args[0]));
        self.user.clear();
        let kernel = (rec.args[0] as usize).min(STACK_FRAMES);
        self.user.extend(frames(kernel, rec.args[1]));
    }
}

/// The entry of a call that may block and has not returned: its record as the kernel
/// sent it (with what its plan read at entry), and whether it was shown unfinished.
struct Pending {
    rec: SyscallRecord,
    shown: bool,
    bytes: Vec<u8>,
}

/// Threads whose last frames are kept at most (`--call-graph`).
const MAX_STACKS_KEPT: usize = 4096;

/// Pending entries' buffers kept for reuse (threads blocked at once, at most).
const SPARE_BUFFERS: usize = 64;

impl<'c, S: FormatSource> Printer<'c, S> {
    pub fn new(catalog: Catalog<S>, fds: FdTable, cfg: &'c Config) -> Self {
        Self {
            catalog,
            exec_reads: rustc_hash::FxHashMap::default(),
            exec_env: rustc_hash::FxHashMap::default(),
            fds,
            pending: rustc_hash::FxHashMap::default(),
            spare: Vec::new(),
            fmt: LineFormatter::new(cfg.line.clone()),
            json: cfg
                .json
                .then(|| JsonFormatter::new(cfg.line.absolute_time, cfg.string_limit)),
            line: String::with_capacity(512),
            json_line: Vec::with_capacity(1024),
            printed: 0,
            cfg,
            events: EventTable::default(),
            shown_from_ns: 0,
            shown: None,
            recording: false,
            locate: None,
            stacks: rustc_hash::FxHashMap::default(),
            frames: Vec::new(),
            chain: String::new(),
            chain_shown: 0..0,
        }
    }

    /// `--call-graph`: names the frames of `rec`'s thread sent for the record stamped
    /// `stamp` into `self.chain` (left empty without them). False when the line is to be
    /// left out: fewer frames than `--min-stack`.
    fn chain_for(&mut self, rec: &SyscallRecord, stamp: u64) -> bool {
        self.chain.clear();
        self.chain_shown = 0..0;
        let Some(graph) = self.cfg.call_graph else {
            return true;
        };
        self.frames.clear();
        if let Some(st) = self.stacks.get_mut(&rec.tid)
            && st.stamp == stamp
            && !st.used
            && let Some(l) = &mut self.locate
        {
            st.used = true;
            let named = |l: &mut Box<dyn Locate + 'c>, addr: u64, kernel: bool| Frame {
                addr,
                kernel,
                loc: l.locate(rec.pid, stamp, addr, kernel),
            };
            for &a in &st.kernel {
                self.frames.push(named(l, a, true));
            }
            for &a in &st.user {
                self.frames.push(named(l, a, false));
            }
        }
        let skip = callchain::tracing_frames(&self.frames);
        let depth = self.frames.len() - skip;
        if depth < graph.min_stack {
            return false;
        }
        self.chain_shown = skip..skip + depth.min(graph.max_stack);
        if self.json.is_none() {
            callchain::write(&mut self.chain, &self.frames[self.chain_shown.clone()]);
        }
        true
    }

    /// Page faults' places are named by `locate`.
    pub fn with_locator(mut self, locate: Box<dyn Locate + 'c>) -> Self {
        self.locate = Some(locate);
        self
    }

    /// Lets the locator read what it keeps up with (between batches of records).
    pub fn keep_up(&mut self) {
        if let Some(l) = &mut self.locate {
            l.keep_up();
        }
    }

    /// Memory-map records the kernel could not keep (see [`Locate::lost`]).
    pub fn locations_lost(&self) -> u64 {
        self.locate.as_ref().map_or(0, |l| l.lost())
    }

    /// A page fault's line: the code that faulted and the memory it touched, named.
    fn take_fault(&mut self, rec: &SyscallRecord, out: &mut impl Write) -> bool {
        if !self.event_shown(rec) || !self.chain_for(rec, rec.enter_ns) {
            return false;
        }
        if self.flush_pending(None, out) {
            return true;
        }
        let [ip, addr, _user, ..] = rec.args;
        let (code, memory) = match &mut self.locate {
            Some(l) => (
                l.locate(rec.pid, rec.enter_ns, ip, is_kernel_addr(ip)),
                if is_kernel_addr(addr) {
                    Default::default()
                } else {
                    l.locate(rec.pid, rec.enter_ns, addr, false)
                },
            ),
            None => Default::default(),
        };
        match &mut self.json {
            Some(j) => {
                self.json_line.clear();
                j.format_fault(&mut self.json_line, rec, &code, &memory);
            }
            None => {
                self.line.clear();
                self.fmt.fault_line(&mut self.line, rec, &code, &memory);
            }
        }
        self.write_line(out)
    }

    /// Whether a fault's or a tracepoint event's record is shown: its task (a replay's
    /// filters), `--max-events`, `-D`.
    fn event_shown(&self, rec: &SyscallRecord) -> bool {
        self.shown.as_ref().is_none_or(|s| s.record(rec))
            && !self.max_reached()
            && rec.enter_ns >= self.shown_from_ns
    }

    /// Writes the line just formatted (`line`, or `json_line` with `--json`) with its
    /// call chain, and counts it; true when the output failed.
    fn write_line(&mut self, out: &mut impl Write) -> bool {
        let line = match self.json {
            Some(_) => {
                let frames = &self.frames[self.chain_shown.clone()];
                callchain::splice_json(&mut self.json_line, frames);
                &self.json_line[..]
            }
            None => self.line.as_bytes(),
        };
        if out.write_all(line).is_err() || out.write_all(self.chain.as_bytes()).is_err() {
            return true;
        }
        self.printed += 1;
        false
    }

    /// Replaying: shows only what `shown` lets through.
    pub fn showing(mut self, shown: Shown) -> Self {
        self.shown = Some(shown);
        self
    }

    /// Recording: writes the records themselves (see `record::file`), not lines.
    pub fn recording(mut self) -> Self {
        self.recording = true;
        self
    }

    /// Shows no event from before `ns` (`-D`: the syscall programs attach only then;
    /// the event programs were attached at the start).
    pub fn shown_from(mut self, ns: u64) -> Self {
        self.shown_from_ns = ns;
        self
    }

    /// The tracepoint events whose records this printer decodes.
    pub fn with_events(mut self, events: EventTable) -> Self {
        self.events = events;
        self
    }

    /// A tracepoint event's record: its line, if `--filter` lets it through. Calls
    /// still blocked (this thread's too) are shown unfinished first, as perf does.
    fn take_event(&mut self, item: &[u8], rec: &SyscallRecord, out: &mut impl Write) -> bool {
        let Some(Ok(raw)) = rec.augmented(item, 0) else {
            return false;
        };
        let data = raw.bytes;
        let id = rec.nr;
        let passes = self.events.get(id).is_some_and(|ev| {
            ev.filter
                .as_ref()
                .is_none_or(|f| f.matches(&ev.fields, data))
        });
        if !passes || !self.event_shown(rec) || !self.chain_for(rec, rec.enter_ns) {
            return false;
        }
        if self.flush_pending(None, out) {
            return true;
        }
        let Some(ev) = self.events.get(id) else {
            return false;
        };
        // perf's blank duration column, where syscalls are traced too.
        let syscalls = self.cfg.selection.as_ref().is_none_or(|s| !s.is_empty());
        match &mut self.json {
            Some(j) => {
                self.json_line.clear();
                j.format_event(&mut self.json_line, rec, ev, data);
            }
            None => {
                self.line.clear();
                self.fmt.event_line(
                    &mut self.line,
                    rec,
                    ev,
                    data,
                    syscalls,
                    self.events.names_pids,
                );
            }
        }
        self.write_line(out)
    }

    fn recycle(&mut self, gone: Option<Pending>) {
        if let Some(mut p) = gone
            && self.spare.len() < SPARE_BUFFERS
        {
            p.bytes.clear();
            self.spare.push(p.bytes);
        }
    }

    /// Takes one record from the ring: prints its line (and, first, the unfinished
    /// lines of other threads' calls it comes after), or keeps it for a later one.
    /// True when the output failed.
    pub fn take(&mut self, item: &[u8], out: &mut impl Write) -> bool {
        if self.recording {
            self.printed += 1;
            return crate::record::file::write_item(out, item).is_err();
        }
        let Some(rec) = SyscallRecord::from_bytes(item) else {
            return false;
        };
        if rec.flags & REC_PENDING != 0 && self.shown.as_ref().is_some_and(|s| !s.record(&rec)) {
            return false;
        }
        if rec.kind == KIND_EXEC_READS {
            self.exec_reads.insert(rec.tid, item.to_vec());
            return false;
        }
        if rec.kind == KIND_EXEC_ENV {
            self.exec_env.insert(rec.tid, item.to_vec());
            return false;
        }
        if rec.kind == KIND_EVENT {
            return self.take_event(item, &rec, out);
        }
        if rec.kind == KIND_FAULT {
            return self.take_fault(&rec, out);
        }
        if rec.kind == KIND_STACK {
            // Threads come and go: what is kept for them is bounded.
            if self.stacks.len() >= MAX_STACKS_KEPT && !self.stacks.contains_key(&rec.tid) {
                self.stacks.clear();
            }
            self.stacks.entry(rec.tid).or_default().fill(&rec, item);
            return false;
        }
        if rec.flags & REC_PENDING != 0 {
            let mut bytes = self.spare.pop().unwrap_or_default();
            bytes.extend_from_slice(item);
            let old = self.pending.insert(
                rec.tid,
                Pending {
                    rec,
                    shown: false,
                    bytes,
                },
            );
            self.recycle(old);
            return false;
        }
        let early = self.exec_reads.remove(&rec.tid);
        let env = self.exec_env.remove(&rec.tid);
        if !self.wanted(&rec) || !self.chain_for(&rec, rec.exit_ns) {
            // Not shown, but what it did to the fds still counts.
            let info = self.catalog.get(rec.nr);
            let read = |i: usize| rec.augmented(item, i);
            let path = first_string(info).and_then(|i| whole(read(i)));
            self.fds.update(&rec, info, path, fd_pair(info, &read));
            return false;
        }
        // Another thread's call that has not returned yet is shown as unfinished
        // first; this thread's own pending entry becomes a `[continued]` line.
        if self.flush_pending(Some(rec.tid), out) {
            return true;
        }
        let entry = self.pending.remove(&rec.tid);
        let continued = entry
            .as_ref()
            .is_some_and(|p| p.shown && p.rec.nr == rec.nr);
        self.recycle(entry);
        self.line.clear();
        let info = self.catalog.get(rec.nr);
        let early_rec = early.as_deref().and_then(SyscallRecord::from_bytes);
        let env_rec = env.as_deref().and_then(SyscallRecord::from_bytes);
        let mem = |i: usize| {
            rec.augmented(item, i)
                .or_else(|| sent_ahead(early.as_deref(), early_rec.as_ref(), rec.nr, i))
                .or_else(|| sent_ahead(env.as_deref(), env_rec.as_ref(), rec.nr, i))
        };
        let fds = &self.fds;
        let fd_path = |fd: i32| fds.path(rec.pid, fd);
        self.json_line.clear();
        match &mut self.json {
            Some(j) => j.format(&mut self.json_line, &rec, info, &mem),
            None => self
                .fmt
                .format_full(&mut self.line, &rec, info, &mem, &fd_path, continued),
        }
        let path = first_string(info).and_then(|i| whole(mem(i)));
        self.fds.update(&rec, info, path, fd_pair(info, &mem));
        self.write_line(out)
    }

    /// `--max-events` lines have been printed: nothing more is.
    pub fn max_reached(&self) -> bool {
        self.cfg.max_events.is_some_and(|max| self.printed >= max)
    }

    /// Prints the pending entries (calls still blocked) of threads other than
    /// `except` as `name(args) ...`, once each; true when output failed.
    pub fn flush_pending(&mut self, except: Option<u32>, out: &mut impl Write) -> bool {
        if self.max_reached() || self.pending.values().all(|p| p.shown) {
            return false;
        }
        let mut tids: Vec<u32> = self
            .pending
            .iter()
            .filter(|(tid, p)| !p.shown && Some(**tid) != except)
            .map(|(tid, _)| *tid)
            .collect();
        tids.sort_unstable_by_key(|t| self.pending[t].rec.enter_ns);
        for tid in tids {
            let Some(p) = self.pending.get_mut(&tid) else {
                continue;
            };
            p.shown = true;
            let (rec, bytes) = (p.rec, &p.bytes);
            self.line.clear();
            let info = self.catalog.get(rec.nr);
            let fds = &self.fds;
            let fd_path = |fd: i32| fds.path(rec.pid, fd);
            let mem = |i: usize| rec.augmented(bytes, i);
            self.fmt
                .format_full(&mut self.line, &rec, info, &mem, &fd_path, false);
            if out.write_all(self.line.as_bytes()).is_err() {
                return true;
            }
        }
        false
    }

    fn wanted(&self, rec: &SyscallRecord) -> bool {
        if self.shown.as_ref().is_some_and(|s| !s.record(rec)) {
            return false;
        }
        if self.cfg.failure_only && !(rec.has_exit() && rec.ret < 0 && rec.ret >= -4095) {
            return false;
        }
        match self.cfg.min_duration_ns {
            Some(min) => rec.has_entry() && rec.has_exit() && rec.exit_ns - rec.enter_ns > min,
            None => true,
        }
    }
}
