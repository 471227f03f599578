//! `--json`: one JSON object per syscall (JSON Lines), for scripts. [`CallLine`] is the
//! schema the README gives; every field is always there (null when unknown). serde
//! writes it into a line buffer that is reused: nothing is allocated per line.

use std::cell::RefCell;

use serde::{Serialize, Serializer, ser::SerializeMap};
use serde_json::value::RawValue;
use trace_common::{SyscallRecord, record::Augmented};

use crate::decode::{
    RetKind, SyscallInfo, args,
    beauty::{self, Style},
    errno::{ErrnoTable, MAX_ERRNO},
    escape,
};
use crate::output::line::comm_bytes;

/// One call, as `--json` prints it.
#[derive(Serialize)]
struct CallLine<'a, 'm> {
    /// ms since the first event (or the kernel's monotonic ms with -T), six decimals.
    ts: Option<&'a RawValue>,
    tid: u32,
    pid: u32,
    /// The task's name, escaped as the lines show it (so a name that is not UTF-8 keeps
    /// its bytes).
    comm: &'a str,
    syscall: &'a str,
    args: Args<'a, 'm>,
    /// -1 when the call failed, as the line says it; null when the call never returns.
    ret: Option<i64>,
    errno: Option<&'a str>,
    /// ms from entry to exit, six decimals.
    duration: Option<&'a RawValue>,
}

/// One argument: its value as its C type reads, and as the line shows it.
#[derive(Serialize)]
struct Arg<'a> {
    raw: i128,
    decoded: &'a str,
}

/// The arguments by name, decoded as they are written out.
struct Args<'a, 'm> {
    rec: &'a SyscallRecord,
    info: &'a SyscallInfo,
    mem: &'a dyn Fn(usize) -> Option<Result<Augmented<'m>, ()>>,
    style: Style,
    scratch: &'a RefCell<String>,
}

impl Serialize for Args<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (rec, info) = (self.rec, self.info);
        let n = if rec.has_entry() {
            info.args.as_ref().map_or(0, Vec::len)
        } else {
            0
        };
        let mut map = serializer.serialize_map(Some(n))?;
        // Every argument, one the call does not use as its raw value.
        for arg in args::args(rec, info) {
            let (b, m) = arg.written(rec, self.mem);
            let mut decoded = self.scratch.borrow_mut();
            decoded.clear();
            beauty::write_arg(&mut decoded, b, arg.raw, m, self.style);
            map.serialize_entry(
                arg.name,
                &Arg {
                    raw: arg.as_c(),
                    decoded: &decoded,
                },
            )?;
        }
        map.end()
    }
}

pub struct JsonFormatter {
    absolute_time: bool,
    style: Style,
    base_ns: Option<u64>,
    /// Reused text: the name, each argument, the numbers, the errno.
    comm: String,
    scratch: RefCell<String>,
    ts: String,
    duration: String,
    errno: String,
    /// A tracepoint event's `cat:name`.
    event: String,
}

/// Nanoseconds as milliseconds with six decimals: exact, no floating point.
fn write_ms6(out: &mut String, ns: i128) {
    use std::fmt::Write as _;
    let sign = if ns < 0 { "-" } else { "" };
    let n = ns.unsigned_abs();
    let _ = write!(out, "{sign}{}.{:06}", n / 1_000_000, n % 1_000_000);
}

/// A number written by [`write_ms6`], as JSON takes it (it always is one).
fn ms6(text: &str) -> Option<&RawValue> {
    serde_json::from_str(text).ok()
}

impl JsonFormatter {
    /// `items`: argv entries shown (`--string-limit`).
    pub fn new(absolute_time: bool, items: u16) -> Self {
        Self {
            absolute_time,
            style: Style {
                items,
                ..Style::default()
            },
            base_ns: None,
            comm: String::new(),
            scratch: RefCell::new(String::new()),
            ts: String::new(),
            duration: String::new(),
            errno: String::new(),
            event: String::new(),
        }
    }

    /// `ns` (the programs' clock) into `ts`: since the first line, or as it is (`-T`).
    fn stamp(&mut self, ns: u64) {
        let shown = if self.absolute_time {
            i128::from(ns)
        } else {
            let base = *self.base_ns.get_or_insert(ns);
            i128::from(ns) - i128::from(base)
        };
        write_ms6(&mut self.ts, shown);
    }

    /// Appends the call's line to `out`.
    pub fn format<'m>(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        info: &SyscallInfo,
        mem: &dyn Fn(usize) -> Option<Result<Augmented<'m>, ()>>,
    ) {
        self.ts.clear();
        if rec.has_entry() && rec.enter_ns != 0 {
            self.stamp(rec.enter_ns);
        }
        self.duration.clear();
        if rec.has_entry() && rec.has_exit() {
            write_ms6(
                &mut self.duration,
                i128::from(rec.exit_ns.saturating_sub(rec.enter_ns)),
            );
        }
        self.comm.clear();
        escape::bare(&mut self.comm, comm_bytes(&rec.comm));
        let returned = rec.has_exit() && info.ret != RetKind::NoReturn;
        let failed = returned && (-MAX_ERRNO..0).contains(&rec.ret);
        self.errno.clear();
        if failed {
            let errno = (-rec.ret) as i32;
            match ErrnoTable::name(errno) {
                Some(n) => self.errno.push_str(n),
                None => {
                    use std::fmt::Write as _;
                    let _ = write!(self.errno, "E{errno}");
                }
            }
        }
        let line = CallLine {
            ts: ms6(&self.ts),
            tid: rec.tid,
            pid: rec.pid,
            comm: &self.comm,
            syscall: &info.name,
            args: Args {
                rec,
                info,
                mem,
                style: self.style,
                scratch: &self.scratch,
            },
            ret: match (returned, failed) {
                (false, _) => None,
                (true, true) => Some(-1),
                (true, false) => Some(rec.ret),
            },
            errno: failed.then_some(self.errno.as_str()),
            duration: ms6(&self.duration),
        };
        // Writing to memory cannot fail, nor can these types refuse to serialize.
        let _ = serde_json::to_writer(&mut *out, &line);
        out.push(b'\n');
    }

    /// Appends a tracepoint event's line: `{"ts", "tid", "pid", "comm", "event":
    /// "cat:name", "fields": {name: {"raw", "decoded"}}}`, every field (zeros too),
    /// `raw` null for strings and arrays.
    pub fn format_event(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        event: &crate::events::TpEvent,
        data: &[u8],
    ) {
        self.ts.clear();
        self.stamp(rec.enter_ns);
        self.comm.clear();
        escape::bare(&mut self.comm, comm_bytes(&rec.comm));
        self.event.clear();
        self.event.push_str(&event.category);
        self.event.push(':');
        self.event.push_str(&event.name);
        let line = EventLine {
            ts: ms6(&self.ts),
            tid: rec.tid,
            pid: rec.pid,
            comm: &self.comm,
            event: &self.event,
            fields: EventFields {
                event,
                data,
                scratch: &self.scratch,
            },
        };
        let _ = serde_json::to_writer(&mut *out, &line);
        out.push(b'\n');
    }

    /// A page fault, its places named as the line names them.
    pub fn format_fault(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        code: &crate::symbols::Location,
        memory: &crate::symbols::Location,
    ) {
        use crate::output::fault;
        self.ts.clear();
        self.stamp(rec.enter_ns);
        self.comm.clear();
        escape::bare(&mut self.comm, comm_bytes(&rec.comm));
        self.event.clear();
        fault::code(&mut self.event, code, rec.args[0]);
        let split = self.event.len();
        fault::target(&mut self.event, memory, rec.args[1]);
        let line = FaultLine {
            ts: ms6(&self.ts),
            tid: rec.tid,
            pid: rec.pid,
            comm: &self.comm,
            fault: fault::name(rec.nr == trace_common::record::FAULT_MAJ),
            ip: rec.args[0],
            code: &self.event[..split],
            addr: rec.args[1],
            target: &self.event[split..],
            mapped: memory.map.is_some(),
            user: rec.args[2] != 0,
        };
        let _ = serde_json::to_writer(&mut *out, &line);
        out.push(b'\n');
    }
}

/// A page fault (`-F`).
#[derive(Serialize)]
struct FaultLine<'a> {
    ts: Option<&'a RawValue>,
    tid: u32,
    pid: u32,
    comm: &'a str,
    /// `minfault` or `majfault`.
    fault: &'static str,
    /// The faulting code: its address, and `sym+0xoff` as the line prints it.
    ip: u64,
    code: &'a str,
    /// The memory touched: its address, and `dso@0xoffset` as the line prints it.
    addr: u64,
    target: &'a str,
    /// Whether a mapping held `addr`.
    mapped: bool,
    /// Taken in user mode (false: in the kernel, touching user memory for the task).
    user: bool,
}

#[derive(Serialize)]
struct EventLine<'a> {
    ts: Option<&'a RawValue>,
    tid: u32,
    pid: u32,
    comm: &'a str,
    event: &'a str,
    fields: EventFields<'a>,
}

struct EventFields<'a> {
    event: &'a crate::events::TpEvent,
    data: &'a [u8],
    scratch: &'a RefCell<String>,
}

#[derive(Serialize)]
struct EventField<'a> {
    raw: Option<i128>,
    decoded: &'a str,
}

impl Serialize for EventFields<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = &self.event.fields;
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for f in fields {
            let mut decoded = self.scratch.borrow_mut();
            decoded.clear();
            crate::events::print::value(&mut decoded, f, self.data, true, &|_| None);
            map.serialize_entry(
                &f.name,
                &EventField {
                    raw: f.int(self.data),
                    decoded: &decoded,
                },
            )?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use trace_common::record::{KIND_SYSCALL, REC_HAS_ENTRY, REC_HAS_EXIT};

    use super::*;
    use crate::decode::format::{ArgKind, ArgSpec};

    #[test]
    fn one_object_per_call() {
        let info = SyscallInfo::new(
            "openat",
            Some(vec![
                ArgSpec {
                    name: "dfd".into(),
                    kind: ArgKind::I32,
                    ty: "int".into(),
                },
                ArgSpec {
                    name: "filename".into(),
                    kind: ArgKind::Pointer,
                    ty: "const char *".into(),
                },
                ArgSpec {
                    name: "flags".into(),
                    kind: ArgKind::I32,
                    ty: "int".into(),
                },
                ArgSpec {
                    name: "mode".into(),
                    kind: ArgKind::U32,
                    ty: "umode_t".into(),
                },
            ]),
        );
        let mut comm = [0u8; 16];
        comm[..3].copy_from_slice(b"cat");
        let rec = SyscallRecord {
            kind: KIND_SYSCALL,
            flags: REC_HAS_ENTRY | REC_HAS_EXIT,
            nr: 257,
            tid: 7,
            pid: 7,
            enter_ns: 1_000_000,
            exit_ns: 1_004_000,
            args: [(-100i64) as u64, 0x1000, libc::O_CLOEXEC as u64, 0, 0, 0],
            ret: -2,
            comm,
            aug_len: [0; 2],
            aug_arg: [0xff; 2],
            aug_cut: [0; 2],
        };
        let mut out = Vec::new();
        let mut j = JsonFormatter::new(false, 32);
        j.format(&mut out, &rec, &info, &|i| {
            (i == 1).then_some(Ok(Augmented {
                bytes: &b"/x\"y"[..],
                cut: false,
            }))
        });
        assert_eq!(
            String::from_utf8_lossy(&out),
            "{\"ts\":0.000000,\"tid\":7,\"pid\":7,\"comm\":\"cat\",\"syscall\":\"openat\",\"args\":{\
             \"dfd\":{\"raw\":-100,\"decoded\":\"CWD\"},\
             \"filename\":{\"raw\":4096,\"decoded\":\"\\\"/x\\\\\\\"y\\\"\"},\
             \"flags\":{\"raw\":524288,\"decoded\":\"RDONLY|CLOEXEC\"},\
             \"mode\":{\"raw\":0,\"decoded\":\"0\"}},\
             \"ret\":-1,\"errno\":\"ENOENT\",\"duration\":0.004000}\n"
        );
        // An errno with no name is still a string, as the line spells it.
        let mut unnamed = rec;
        unnamed.ret = -4000;
        out.clear();
        j.format(&mut out, &unnamed, &info, &|_| None);
        let out = String::from_utf8_lossy(&out);
        assert!(out.contains("\"ret\":-1,\"errno\":\"E4000\","), "{out}");
    }
}
