//! The two ways a line is written, behind one trait: perf trace's text
//! ([`LineFormatter`]) and `--json`'s objects ([`JsonFormatter`]). The printer decides
//! what is shown; a formatter only writes it, appending to a reused buffer.

use trace_common::{SyscallRecord, record::Augmented};

use crate::{
    decode::SyscallInfo,
    events::TpEvent,
    output::{
        callchain::{self, Frame},
        json::JsonFormatter,
        line::LineFormatter,
    },
    symbols::Location,
};

/// Argument `i`'s bytes read from the task's memory, if any were.
pub type Memory<'a, 'm> = &'a dyn Fn(usize) -> Option<Result<Augmented<'m>, ()>>;
/// What an fd names (a path, `pipe:[…]`), where it is known.
pub type FdPath<'a, 'p> = &'a dyn Fn(i32) -> Option<&'p [u8]>;

/// One call as a line shows it.
pub struct CallLine<'a, 'm, 'p> {
    pub rec: &'a SyscallRecord,
    pub info: &'a SyscallInfo,
    pub mem: Memory<'a, 'm>,
    pub fd_path: FdPath<'a, 'p>,
    /// Its entry was shown unfinished already.
    pub continued: bool,
}

/// Writes lines; each method appends one whole line (with its newline) to `out`.
pub trait Formatter {
    /// A call: finished, or an entry shown unfinished (no exit in `rec`).
    fn call(&mut self, out: &mut Vec<u8>, call: &CallLine<'_, '_, '_>);
    /// A tracepoint event. `names_pids`: the event's pids are rtrace's own, so that a
    /// `pid_t` field can be named.
    fn event(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        ev: &TpEvent,
        data: &[u8],
        names_pids: bool,
    );
    /// A syscall's entry event (`syscalls:sys_enter_openat`), with the call it enters:
    /// shown decoded as the call's entry is. `data`: the event's record as tracefs lays
    /// it out, for a format that shows events' raw fields (the default).
    fn syscall_event(
        &mut self,
        out: &mut Vec<u8>,
        ev: &TpEvent,
        call: &CallLine<'_, '_, '_>,
        data: &[u8],
    ) {
        self.event(out, call.rec, ev, data, false);
    }
    /// A page fault, its code and the memory it touched named.
    fn fault(&mut self, out: &mut Vec<u8>, rec: &SyscallRecord, code: &Location, memory: &Location);
    /// Adds the call chain of the line just written (`--call-graph`).
    fn frames(&mut self, out: &mut Vec<u8>, frames: &[Frame]);
}

/// perf trace's lines (written as text, then appended).
pub struct Text {
    line: LineFormatter,
    buf: String,
    /// Syscalls are traced beside the events: events get perf's blank duration column.
    syscalls: bool,
}

impl Text {
    pub fn new(line: LineFormatter, syscalls: bool) -> Self {
        Self {
            line,
            buf: String::with_capacity(512),
            syscalls,
        }
    }

    fn append(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.buf.as_bytes());
        self.buf.clear();
    }
}

impl Formatter for Text {
    fn call(&mut self, out: &mut Vec<u8>, c: &CallLine<'_, '_, '_>) {
        self.line
            .format_full(&mut self.buf, c.rec, c.info, c.mem, c.fd_path, c.continued);
        self.append(out);
    }

    fn event(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        ev: &TpEvent,
        data: &[u8],
        names_pids: bool,
    ) {
        let syscalls = self.syscalls;
        self.line
            .event_line(&mut self.buf, rec, ev, data, syscalls, names_pids);
        self.append(out);
    }

    fn syscall_event(
        &mut self,
        out: &mut Vec<u8>,
        ev: &TpEvent,
        call: &CallLine<'_, '_, '_>,
        _data: &[u8],
    ) {
        let syscalls = self.syscalls;
        self.line
            .syscall_event_line(&mut self.buf, ev, call, syscalls);
        self.append(out);
    }

    fn fault(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        code: &Location,
        memory: &Location,
    ) {
        self.line.fault_line(&mut self.buf, rec, code, memory);
        self.append(out);
    }

    fn frames(&mut self, out: &mut Vec<u8>, frames: &[Frame]) {
        callchain::write(&mut self.buf, frames);
        self.append(out);
    }
}

impl Formatter for JsonFormatter {
    fn call(&mut self, out: &mut Vec<u8>, c: &CallLine<'_, '_, '_>) {
        self.format(out, c.rec, c.info, c.mem, c.fd_path);
    }

    fn event(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        ev: &TpEvent,
        data: &[u8],
        _names_pids: bool,
    ) {
        self.format_event(out, rec, ev, data);
    }

    fn syscall_event(
        &mut self,
        out: &mut Vec<u8>,
        ev: &TpEvent,
        c: &CallLine<'_, '_, '_>,
        _data: &[u8],
    ) {
        self.format_syscall_event(out, ev, c.rec, c.info, c.mem, c.fd_path);
    }

    fn fault(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        code: &Location,
        memory: &Location,
    ) {
        self.format_fault(out, rec, code, memory);
    }

    fn frames(&mut self, out: &mut Vec<u8>, frames: &[Frame]) {
        callchain::splice_json(out, frames);
    }
}
