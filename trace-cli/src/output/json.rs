//! `--json`: one JSON object per syscall (JSON Lines), for scripts: every field always
//! there (null when unknown), each argument as data (json_args.rs); the format is
//! docs/json.md, its schema docs/rtrace-json.schema.json. A call's line is written
//! straight into the reused line buffer; events and faults go through serde.

use std::cell::RefCell;

use serde::{Serialize, Serializer, ser::SerializeMap};
use serde_json::value::RawValue;
use trace_common::{SyscallRecord, TASK_COMM_LEN, record::Augmented};

use crate::decode::{
    RetKind, SyscallInfo, args,
    errno::{ErrnoTable, MAX_ERRNO},
    escape,
};
use crate::output::{formatter::FdPath, json_args, json_write::Obj, line::comm_bytes};

pub struct JsonFormatter {
    absolute_time: bool,
    /// argv entries shown (`--string-limit`).
    items: u16,
    base_ns: Option<u64>,
    /// The thread's name as the lines write it, and the name it is of: a thread's
    /// lines in a row escape it once.
    comm: String,
    comm_of: Option<[u8; TASK_COMM_LEN]>,
    /// Reused text: flag names, an event's field.
    scratch: RefCell<String>,
    ts: String,
    duration: String,
    /// A tracepoint event's `cat:name`.
    event: String,
}

/// Nanoseconds as milliseconds with six decimals: exact, no floating point.
fn write_ms6(out: &mut String, ns: i128) {
    crate::decode::numbers::ms6(out, ns);
}

/// A number written by [`write_ms6`], as JSON takes it (it always is one).
fn ms6(text: &str) -> Option<&RawValue> {
    serde_json::from_str(text).ok()
}

/// A number [`write_ms6`] wrote, or null when there is none.
fn raw_or_null(out: &mut Vec<u8>, ms: &str) {
    match ms {
        "" => out.extend_from_slice(b"null"),
        n => out.extend_from_slice(n.as_bytes()),
    }
}

impl JsonFormatter {
    /// `items`: argv entries shown (`--string-limit`).
    pub fn new(absolute_time: bool, items: u16) -> Self {
        Self {
            absolute_time,
            items,
            base_ns: None,
            comm: String::new(),
            comm_of: None,
            scratch: RefCell::new(String::new()),
            ts: String::new(),
            duration: String::new(),
            event: String::new(),
        }
    }

    /// `rec`'s thread name into `comm`, escaped as the lines escape it.
    fn name(&mut self, rec: &SyscallRecord) {
        if self.comm_of != Some(rec.comm) {
            self.comm.clear();
            escape::bare(&mut self.comm, comm_bytes(&rec.comm));
            self.comm_of = Some(rec.comm);
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

    /// Appends the call's line to `out`: `{"ts", "tid", "pid", "comm", "syscall",
    /// "args", "ret", "ret_fd", "errno", "duration"}`, every field always there;
    /// `"ret_names"` after `ret_fd` where the return is flags (fcntl F_GETFL, F_GETFD).
    pub fn format<'m, 'p>(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        info: &SyscallInfo,
        mem: &dyn Fn(usize) -> Option<Result<Augmented<'m>, ()>>,
        fd_path: FdPath<'_, 'p>,
    ) {
        self.ts.clear();
        if rec.has_entry() && rec.enter_ns != 0 {
            self.stamp(rec.enter_ns);
        }
        self.name(rec);
        let returned = rec.has_exit() && info.ret != RetKind::NoReturn;
        let failed = returned && (-MAX_ERRNO..0).contains(&rec.ret);

        let mut line = Obj::new(out);
        raw_or_null(line.key("ts"), &self.ts);
        line.num("tid", rec.tid);
        line.num("pid", rec.pid);
        line.str("comm", &self.comm);
        line.str("syscall", &info.name);
        self.args(&mut line, rec, info, mem, fd_path);
        match (returned, failed) {
            (false, _) => line.null("ret"),
            (true, true) => line.num("ret", -1),
            (true, false) => line.num("ret", rec.ret),
        }
        let new_fd = (returned && !failed)
            .then(|| json_args::ret_fd(rec, info, mem, fd_path))
            .flatten();
        match new_fd {
            Some(fd) => fd.write(line.key("ret_fd")),
            None => line.null("ret_fd"),
        }
        if returned && !failed && rec.has_entry() {
            json_args::ret_names(&mut line, rec, info, self.scratch.get_mut());
        }
        if failed {
            let errno = (-rec.ret) as i32;
            let mut e = Obj::new(line.key("errno"));
            match ErrnoTable::name(errno) {
                Some(n) => e.str("name", n),
                None => e.str("name", &format!("E{errno}")),
            }
            e.num("num", errno);
            e.end();
        } else {
            line.null("errno");
        }
        self.duration.clear();
        if rec.has_entry() && rec.has_exit() {
            write_ms6(
                &mut self.duration,
                i128::from(rec.exit_ns.saturating_sub(rec.enter_ns)),
            );
        }
        raw_or_null(line.key("duration"), &self.duration);
        line.end();
        out.push(b'\n');
    }

    /// `"args": {name: value}`, each argument as data (`json_args`).
    fn args<'m, 'p>(
        &mut self,
        line: &mut Obj<'_>,
        rec: &SyscallRecord,
        info: &SyscallInfo,
        mem: &dyn Fn(usize) -> Option<Result<Augmented<'m>, ()>>,
        fd_path: FdPath<'_, 'p>,
    ) {
        let mut args = Obj::new(line.key("args"));
        let mut cx = json_args::Ctx {
            fd_path,
            items: usize::from(self.items),
            scratch: self.scratch.get_mut(),
        };
        for arg in args::args(rec, info) {
            let (b, m) = arg.written(rec, mem);
            json_args::write(
                args.key_escaped(arg.name),
                &arg,
                b,
                m,
                arg.beauty.is_some(),
                &mut cx,
            );
        }
        args.end();
    }

    /// Appends a syscall's entry event (`syscalls:sys_enter_openat`): `{"ts", "tid",
    /// "pid", "comm", "event", "args"}`, its arguments as the call's entry has them.
    pub fn format_syscall_event<'m, 'p>(
        &mut self,
        out: &mut Vec<u8>,
        event: &crate::events::TpEvent,
        rec: &SyscallRecord,
        info: &SyscallInfo,
        mem: &dyn Fn(usize) -> Option<Result<Augmented<'m>, ()>>,
        fd_path: FdPath<'_, 'p>,
    ) {
        self.ts.clear();
        self.stamp(rec.enter_ns);
        self.name(rec);
        self.event.clear();
        self.event.push_str(&event.category);
        self.event.push(':');
        self.event.push_str(&event.name);
        let mut line = Obj::new(out);
        raw_or_null(line.key("ts"), &self.ts);
        line.num("tid", rec.tid);
        line.num("pid", rec.pid);
        line.str("comm", &self.comm);
        let name = std::mem::take(&mut self.event);
        line.str("event", &name);
        self.event = name;
        self.args(&mut line, rec, info, mem, fd_path);
        line.end();
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
        self.name(rec);
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
        self.name(rec);
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
        j.format(
            &mut out,
            &rec,
            &info,
            &|i| {
                (i == 1).then_some(Ok(Augmented {
                    bytes: &b"/x\"y"[..],
                    cut: false,
                }))
            },
            &|_| None,
        );
        assert_eq!(
            String::from_utf8_lossy(&out),
            "{\"ts\":0.000000,\"tid\":7,\"pid\":7,\"comm\":\"cat\",\"syscall\":\"openat\",\"args\":{\
             \"dfd\":{\"raw\":-100,\"fd\":-100,\"name\":\"CWD\"},\
             \"filename\":{\"raw\":4096,\"str\":\"/x\\\"y\"},\
             \"flags\":{\"raw\":524288,\"names\":[\"RDONLY\",\"CLOEXEC\"]},\
             \"mode\":{\"raw\":0,\"names\":[]}},\
             \"ret\":-1,\"ret_fd\":null,\"errno\":{\"name\":\"ENOENT\",\"num\":2},\"duration\":0.004000}\n"
        );
        // Opened: the new fd, and its path as the call gave it.
        let mut opened = rec;
        opened.ret = 3;
        out.clear();
        j.format(
            &mut out,
            &opened,
            &info,
            &|i| {
                (i == 1).then_some(Ok(Augmented {
                    bytes: &b"/etc/hostname"[..],
                    cut: false,
                }))
            },
            &|_| None,
        );
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["ret"], 3);
        assert_eq!(
            v["ret_fd"],
            serde_json::json!({"fd": 3, "path": "/etc/hostname"})
        );
        assert!(v["errno"].is_null());
        // fcntl(F_GETFL) returns flags: named beside the number.
        let fcntl = SyscallInfo::new("fcntl", None);
        let mut getfl = rec;
        getfl.args = [3, libc::F_GETFL as u64, 0, 0, 0, 0];
        getfl.ret = i64::from(libc::O_RDWR | libc::O_APPEND);
        out.clear();
        j.format(&mut out, &getfl, &fcntl, &|_| None, &|_| None);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["ret_names"], serde_json::json!(["RDWR", "APPEND"]), "{v}");
        // setsockopt: the level by name, and the option by the name it has there.
        let int = |name: &str| ArgSpec {
            name: name.into(),
            kind: ArgKind::I32,
            ty: "int".into(),
        };
        let setsockopt = SyscallInfo::new(
            "setsockopt",
            Some(vec![
                int("fd"),
                int("level"),
                int("optname"),
                ArgSpec {
                    name: "optval".into(),
                    kind: ArgKind::Pointer,
                    ty: "char *".into(),
                },
                int("optlen"),
            ]),
        );
        let args =
            |v: &serde_json::Value| (v["args"]["level"].clone(), v["args"]["optname"].clone());
        let mut reuse = rec;
        reuse.nr = 54;
        reuse.ret = 0;
        reuse.args = [3, 1, 2, 0x7ffd_0000, 4, 0];
        out.clear();
        j.format(&mut out, &reuse, &setsockopt, &|_| None, &|_| None);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            args(&v),
            (
                serde_json::json!({"raw": 1, "names": ["SOCKET"]}),
                serde_json::json!({"raw": 2, "names": ["REUSEADDR"]})
            ),
            "{v}"
        );
        // At a level without a table of options, the option is its number alone.
        reuse.args[1] = 270;
        out.clear();
        j.format(&mut out, &reuse, &setsockopt, &|_| None, &|_| None);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            args(&v),
            (
                serde_json::json!({"raw": 270, "names": ["NETLINK"]}),
                serde_json::json!({"raw": 2})
            ),
            "{v}"
        );
        // An errno with no name is still a string, as the line spells it.
        let mut unnamed = rec;
        unnamed.ret = -4000;
        out.clear();
        j.format(&mut out, &unnamed, &info, &|_| None, &|_| None);
        let out = String::from_utf8_lossy(&out);
        assert!(
            out.contains("\"errno\":{\"name\":\"E4000\",\"num\":4000}"),
            "{out}"
        );
    }
}
