//! From the ring's records to lines. The [`Assembler`] joins a call's records, the
//! [`Show`] filter says which become lines, the fd table names fds, the locator names
//! addresses, and a [`Formatter`] writes them: perf trace's text or `--json`. Pure: the
//! session (or a replay) hands it the bytes, it writes the lines.

use std::io::Write;

use trace_common::{SyscallRecord, record::Augmented};

use crate::{
    config::{CallGraph, Config},
    decode::{
        Catalog, FormatSource, SyscallInfo,
        assemble::{Assembler, Record},
        beauty::Beauty,
        fd_effect::FdEffect,
        fd_table::FdTable,
    },
    events::EventTable,
    output::{
        callchain::{self, Frame},
        formatter::{CallLine, Formatter, Text},
        json::JsonFormatter,
        line::LineFormatter,
        show::Show,
        timeline::Timeline,
    },
    symbols::{Locate, is_kernel_addr},
};

/// The bytes of a string read whole (a path cut short names nothing).
fn whole(read: Option<Result<Augmented<'_>, ()>>) -> Option<&[u8]> {
    read?.ok().filter(|a| !a.cut).map(|a| a.bytes)
}

/// The two fds a pipe or socketpair wrote, when they were read.
fn fd_pair<'a>(
    info: &SyscallInfo,
    read: &dyn Fn(usize) -> Option<Result<Augmented<'a>, ()>>,
) -> Option<[i32; 2]> {
    let i = info
        .beauties
        .iter()
        .position(|b| matches!(b, Beauty::FdPair))?;
    let b = whole(read(i))?;
    let fd = |at: usize| Some(i32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?));
    Some([fd(0)?, fd(4)?])
}

/// The call's first string argument (an open's or a chdir's path).
fn first_string(info: &SyscallInfo) -> Option<usize> {
    info.beauties.iter().position(|b| matches!(b, Beauty::Str))
}

/// The output failed: the session stops.
#[derive(Debug)]
pub struct OutputFailed;

/// Turns the ring's records into lines: perf trace's, or `--json`'s.
pub struct Printer<'c, S> {
    assembler: Assembler,
    catalog: Catalog<S>,
    fds: FdTable,
    show: Show,
    format: Box<dyn Formatter>,
    /// The line being written (reused: no allocation per line).
    line: Vec<u8>,
    /// Tracepoint events chosen with `-e cat:name`.
    events: EventTable,
    call_graph: Option<CallGraph>,
    /// Names the places of page faults (`-F`) and the frames of call chains.
    locate: Option<Box<dyn Locate + 'c>>,
    /// The frames of the line being printed, named.
    frames: Vec<Frame>,
    /// Which of `frames` the line shows.
    chain_shown: std::ops::Range<usize>,
    /// `--timeline`: the calls, faults and events shown are written there too.
    timeline: Option<Timeline>,
    /// Calls become lines (not with -s alone, where only the timeline takes them).
    call_lines: bool,
}

impl<S: FormatSource> crate::output::Consumer for Printer<'_, S> {
    fn take(&mut self, item: &[u8], out: &mut crate::output::Sink) -> bool {
        Printer::take(self, item, out)
    }

    fn flush_pending(&mut self, except: Option<u32>, out: &mut crate::output::Sink) -> bool {
        Printer::flush_pending(self, except, out)
    }

    fn max_reached(&self) -> bool {
        Printer::max_reached(self)
    }

    fn keep_up(&mut self) {
        Printer::keep_up(self)
    }

    fn locations_lost(&self) -> u64 {
        Printer::locations_lost(self)
    }

    fn end(&mut self, now_ns: Option<u64>) -> Option<String> {
        Printer::end(self, now_ns)
    }
}

/// `--json`'s objects or perf's lines; `syscalls`: perf's blank duration column on
/// events, where syscalls are traced too.
fn formatter(cfg: &Config, syscalls: bool) -> Box<dyn Formatter> {
    if cfg.json {
        Box::new(JsonFormatter::new(cfg.line.absolute_time, cfg.string_limit))
    } else {
        Box::new(Text::new(LineFormatter::new(cfg.line.clone()), syscalls))
    }
}

impl<'c, S: FormatSource> Printer<'c, S> {
    pub fn new(catalog: Catalog<S>, fds: FdTable, cfg: &Config) -> Self {
        let syscalls = cfg.selection.as_ref().is_none_or(|s| !s.is_empty());
        let format = formatter(cfg, syscalls);
        Self {
            assembler: Assembler::default(),
            catalog,
            fds,
            show: Show::new(cfg),
            format,
            line: Vec::with_capacity(1024),
            events: EventTable::default(),
            call_graph: cfg.call_graph,
            locate: None,
            frames: Vec::new(),
            chain_shown: 0..0,
            timeline: None,
            call_lines: cfg.summary.as_ref().is_none_or(|s| !s.only),
        }
    }

    /// Whether syscalls are traced beside the events, where `cfg` alone does not say:
    /// a replay's record may hold none (`rtrace record -e sched:…`).
    pub fn syscalls_traced(mut self, cfg: &Config, syscalls: bool) -> Self {
        self.format = formatter(cfg, syscalls);
        self
    }

    /// `--timeline`: what is shown is written to `timeline` too.
    pub fn with_timeline(mut self, timeline: Option<Timeline>) -> Self {
        self.timeline = timeline;
        self
    }

    /// Tracing is over at `now_ns` (`None`: at the last record's time): the calls still
    /// running go into the timeline as unfinished slices, and it is closed. Why the
    /// timeline failed, if it did.
    pub fn end(&mut self, now_ns: Option<u64>) -> Option<String> {
        let Self {
            assembler,
            catalog,
            fds,
            show,
            timeline,
            ..
        } = self;
        let t = timeline.as_mut()?;
        let end_ns = now_ns.unwrap_or(0).max(t.last_ns());
        for (rec, bytes) in assembler.unreturned() {
            if !show.unreturned(rec, end_ns) {
                continue;
            }
            let info = catalog.get(rec.nr);
            let fd_path = |fd: i32| fds.path(rec.pid, fd);
            let mem = |i| rec.augmented(bytes, i);
            t.put(|f, out| f.unfinished(out, rec, info, &mem, &fd_path, end_ns));
        }
        t.close()
    }

    /// The filter lines pass (a replay's choice of tasks, `-D`'s start).
    pub fn showing(mut self, show: impl FnOnce(Show) -> Show) -> Self {
        self.show = show(self.show);
        self
    }

    /// Page faults' places and call chains' frames are named by `locate`.
    pub fn with_locator(mut self, locate: Box<dyn Locate + 'c>) -> Self {
        self.locate = Some(locate);
        self
    }

    /// The tracepoint events whose records this printer decodes.
    pub fn with_events(mut self, events: EventTable) -> Self {
        self.events = events;
        self
    }

    /// Lets the locator read what it keeps up with (between batches of records).
    pub fn keep_up(&mut self) {
        if let Some(l) = &mut self.locate {
            l.keep_up();
        }
        if let Some(t) = &mut self.timeline {
            t.flush();
        }
    }

    /// Memory-map records the kernel could not keep (see [`Locate::lost`]).
    pub fn locations_lost(&self) -> u64 {
        self.locate.as_ref().map_or(0, |l| l.lost())
    }

    /// `--max-events` lines have been printed: nothing more is.
    pub fn max_reached(&self) -> bool {
        self.show.max_reached()
    }

    /// Takes one record from the ring: prints its line (and, first, the unfinished
    /// lines of other threads' calls it comes after), or keeps it for a later one.
    /// True when the output failed.
    pub fn take(&mut self, item: &[u8], out: &mut impl Write) -> bool {
        let done = match self.assembler.take(item) {
            None => Ok(()),
            Some(Record::Call { rec, continued }) => self.call(item, &rec, continued, out),
            Some(Record::Event(rec)) => self.event(item, &rec, out),
            Some(Record::Fault(rec)) => self.fault(&rec, out),
            Some(Record::VforkChild {
                parent,
                child,
                at_ns,
            }) => {
                self.fds.vfork_child(parent, child, at_ns);
                Ok(())
            }
        };
        done.is_err()
    }

    /// Prints the blocked calls of threads other than `except` as `name(args) ...`,
    /// once each, where the filter shows them; true when the output failed.
    pub fn flush_pending(&mut self, except: Option<u32>, out: &mut impl Write) -> bool {
        self.unfinished(except, out).is_err()
    }

    fn unfinished(
        &mut self,
        except: Option<u32>,
        out: &mut impl Write,
    ) -> Result<(), OutputFailed> {
        if self.show.max_reached() || !self.assembler.has_waiting() {
            return Ok(());
        }
        let Self {
            assembler,
            catalog,
            fds,
            show,
            format,
            line,
            ..
        } = self;
        assembler.settle_waiting(except, |rec, bytes| {
            if !show.unfinished(rec) {
                return Ok(false);
            }
            line.clear();
            let fd_path = |fd: i32| fds.path(rec.pid, fd);
            let call = CallLine {
                rec,
                info: catalog.get(rec.nr),
                mem: &|i| rec.augmented(bytes, i),
                fd_path: &fd_path,
                continued: false,
            };
            format.call(line, &call);
            out.write_all(line).map_err(|_| OutputFailed)?;
            Ok(true)
        })
    }

    /// A call's line, if the filter shows it; what it did to the fds counts either way.
    fn call(
        &mut self,
        item: &[u8],
        rec: &SyscallRecord,
        continued: bool,
        out: &mut impl Write,
    ) -> Result<(), OutputFailed> {
        let listed = self.show.call(rec) && self.chain_for(rec, rec.exit_ns);
        let shown = listed && self.call_lines;
        if listed && let Some(t) = &mut self.timeline {
            let fds = &self.fds;
            let assembler = &self.assembler;
            let fd_path = |fd: i32| fds.path(rec.pid, fd);
            let mem = |i| assembler.memory(rec, item, i);
            let info = self.catalog.get(rec.nr);
            t.put(|f, out| f.call(out, rec, info, &mem, &fd_path));
            if !shown {
                // -s alone: the timeline's slices are what --max-events counts.
                self.show.printed();
            }
        }
        if shown {
            // Another thread's call that has not returned yet is shown as unfinished
            // first.
            self.unfinished(Some(rec.tid), out)?;
            let fds = &self.fds;
            let assembler = &self.assembler;
            let fd_path = |fd: i32| fds.path(rec.pid, fd);
            let call = CallLine {
                rec,
                info: self.catalog.get(rec.nr),
                mem: &|i| assembler.memory(rec, item, i),
                fd_path: &fd_path,
                continued,
            };
            self.line.clear();
            self.format.call(&mut self.line, &call);
        }
        let info = self.catalog.get(rec.nr);
        // Most calls do nothing the fd table follows.
        if info.fd_effect != FdEffect::None {
            let mem = |i: usize| self.assembler.memory(rec, item, i);
            let path = first_string(info).and_then(|i| whole(mem(i)));
            self.fds.update(rec, info, path, fd_pair(info, &mem));
        }
        match shown {
            true => self.write_line(out),
            false => Ok(()),
        }
    }

    /// A tracepoint event's line, if `--filter` and the filter let it through.
    fn event(
        &mut self,
        item: &[u8],
        rec: &SyscallRecord,
        out: &mut impl Write,
    ) -> Result<(), OutputFailed> {
        if let Some(nr) = self.events.get(rec.nr).and_then(|ev| ev.syscall) {
            return self.syscall_event(item, rec, nr, out);
        }
        let Some(Ok(raw)) = rec.augmented(item, 0) else {
            return Ok(());
        };
        let data = raw.bytes;
        let Some(ev) = self.events.get(rec.nr) else {
            return Ok(());
        };
        let passes = ev
            .filter
            .as_ref()
            .is_none_or(|f| f.matches(&ev.fields, data));
        if !passes || !self.show.event(rec) || !self.chain_for(rec, rec.enter_ns) {
            return Ok(());
        }
        // Calls still blocked (this thread's too) are shown unfinished first, as perf
        // does.
        self.unfinished(None, out)?;
        let Some(ev) = self.events.get(rec.nr) else {
            return Ok(());
        };
        if let Some(t) = &mut self.timeline {
            t.put(|f, out| f.event(out, rec, ev, data));
        }
        self.line.clear();
        self.format
            .event(&mut self.line, rec, ev, data, self.events.names_pids);
        self.write_line(out)
    }

    /// A syscall's entry event (`syscalls:sys_enter_<call>`), sent as the call's entry
    /// (its arguments, and the memory they point to): filtered on its tracefs fields,
    /// shown decoded as call `nr`'s entry.
    fn syscall_event(
        &mut self,
        item: &[u8],
        rec: &SyscallRecord,
        nr: u32,
        out: &mut impl Write,
    ) -> Result<(), OutputFailed> {
        let data = crate::events::syscall_entry_record(nr, &rec.args);
        let Some(ev) = self.events.get(rec.nr) else {
            return Ok(());
        };
        let passes = ev
            .filter
            .as_ref()
            .is_none_or(|f| f.matches(&ev.fields, &data));
        if !passes || !self.show.event(rec) || !self.chain_for(rec, rec.enter_ns) {
            return Ok(());
        }
        self.unfinished(None, out)?;
        let Self {
            catalog,
            fds,
            events,
            format,
            line,
            timeline,
            ..
        } = self;
        let Some(ev) = events.get(rec.nr) else {
            return Ok(());
        };
        // The timeline's instant shows the event's own fields.
        if let Some(t) = timeline {
            t.put(|f, out| f.event(out, rec, ev, &data));
        }
        let fd_path = |fd: i32| fds.path(rec.pid, fd);
        let call = CallLine {
            rec,
            info: catalog.get(nr),
            mem: &|i| rec.augmented(item, i),
            fd_path: &fd_path,
            continued: false,
        };
        line.clear();
        format.syscall_event(line, ev, &call, &data);
        self.write_line(out)
    }

    /// A page fault's line: the code that faulted and the memory it touched, named.
    fn fault(&mut self, rec: &SyscallRecord, out: &mut impl Write) -> Result<(), OutputFailed> {
        if !self.show.event(rec) || !self.chain_for(rec, rec.enter_ns) {
            return Ok(());
        }
        self.unfinished(None, out)?;
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
        if let Some(t) = &mut self.timeline {
            t.put(|f, out| f.fault(out, rec, &code, &memory));
        }
        self.line.clear();
        self.format.fault(&mut self.line, rec, &code, &memory);
        self.write_line(out)
    }

    /// `--call-graph`: names the frames `rec`'s thread sent for the record stamped
    /// `stamp` (none without them). False when the line is to be left out: fewer frames
    /// than `--min-stack`.
    fn chain_for(&mut self, rec: &SyscallRecord, stamp: u64) -> bool {
        self.chain_shown = 0..0;
        let Some(graph) = self.call_graph else {
            return true;
        };
        self.frames.clear();
        if let Some(st) = self.assembler.stack(rec.tid, stamp)
            && let Some(l) = &mut self.locate
        {
            let mut named = |addr: u64, kernel: bool| Frame {
                addr,
                kernel,
                loc: l.locate(rec.pid, stamp, addr, kernel),
            };
            for &a in &st.kernel {
                self.frames.push(named(a, true));
            }
            for &a in &st.user {
                self.frames.push(named(a, false));
            }
        }
        let skip = callchain::tracing_frames(&self.frames);
        let depth = self.frames.len() - skip;
        if depth < graph.min_stack {
            return false;
        }
        self.chain_shown = skip..skip + depth.min(graph.max_stack);
        true
    }

    /// Writes the line just formatted with its call chain, and counts it.
    fn write_line(&mut self, out: &mut impl Write) -> Result<(), OutputFailed> {
        if !self.chain_shown.is_empty() {
            let frames = &self.frames[self.chain_shown.clone()];
            self.format.frames(&mut self.line, frames);
        }
        out.write_all(&self.line).map_err(|_| OutputFailed)?;
        self.show.printed();
        Ok(())
    }
}
