//! `--timeline FILE`: the trace as Chrome's Trace Event Format, which ui.perfetto.dev
//! and chrome://tracing read. The JSON array form, one event a line: a complete event
//! ("X") per call on its thread's track, an instant ("i") per page fault and tracepoint
//! event, and metadata ("M") naming each process and thread as it first shows up (and
//! again when an exec renames it). Times are microseconds with three decimals (exact
//! nanoseconds), since the first event as the lines count them, or the kernel's
//! monotonic clock with -T.
//!
//! The array form because a reader takes it without its closing `]`: a timeline whose
//! writer was killed still opens. rtrace closes it on every end it sees (the command's
//! exit, a stop signal, an error), after a slice for each call still running, cut where
//! tracing ended and marked `"unfinished": true`.
//!
//! [`TimelineFormatter`] is pure (it appends to a buffer); [`Timeline`] writes its
//! events to the file.

use std::{
    io::{self, Write},
    path::{Path, PathBuf},
};

use rustc_hash::{FxHashMap, FxHashSet};
use trace_common::{SyscallRecord, TASK_COMM_LEN, record::FAULT_MAJ};

use crate::{
    config::LineOptions,
    decode::{
        RetKind, SyscallInfo, args,
        beauty::{self, Beauty, Style},
        errno::MAX_ERRNO,
        escape,
        format::ArgKind,
    },
    events::TpEvent,
    output::{
        fault,
        formatter::{FdPath, Memory},
        line::{LineFormatter, comm_bytes},
    },
    symbols::Location,
};

/// Threads whose names are kept at most; past it they are named again as they show
/// up (a repeated name costs a line, not a wrong track).
const MAX_NAMED: usize = 1 << 16;

/// Writes the timeline's events, each one line, into a buffer.
pub struct TimelineFormatter {
    absolute: bool,
    base_ns: Option<u64>,
    /// The latest time seen: where a call still running at the end is cut, when the
    /// end's own time is not known (a replay).
    last_ns: u64,
    /// The name each thread's track was given.
    threads: FxHashMap<u32, [u8; TASK_COMM_LEN]>,
    /// Processes whose track is named.
    processes: FxHashSet<u32>,
    /// Returns are written as the line writes them.
    line: LineFormatter,
    style: Style,
    /// Events written, for the commas between them.
    written: u64,
    /// Reused text (no allocation per event).
    text: String,
}

/// A JSON string, escaped (serde_json's escaping; writing to memory cannot fail).
fn string(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *out, s);
}

/// `ns` as microseconds with three decimals, without going through floating point.
fn micros(out: &mut Vec<u8>, ns: i128) {
    let sign = if ns < 0 { "-" } else { "" };
    let n = ns.unsigned_abs();
    let _ = write!(out, "{sign}{}.{:03}", n / 1000, n % 1000);
}

impl TimelineFormatter {
    pub fn new(opts: &LineOptions) -> Self {
        let opts = LineOptions {
            color: false,
            ..opts.clone()
        };
        Self {
            absolute: opts.absolute_time,
            base_ns: None,
            last_ns: 0,
            threads: FxHashMap::default(),
            processes: FxHashSet::default(),
            style: Style {
                prefix: opts.show_prefix,
                compact: false,
                items: opts.string_limit,
            },
            line: LineFormatter::new(opts),
            written: 0,
            text: String::with_capacity(512),
        }
    }

    /// What the file starts with.
    pub fn header(out: &mut Vec<u8>) {
        out.extend_from_slice(b"[\n");
    }

    /// What closes it.
    pub fn trailer(out: &mut Vec<u8>) {
        out.extend_from_slice(b"\n]\n");
    }

    /// The latest time an event carried (the programs' clock).
    pub fn last_ns(&self) -> u64 {
        self.last_ns
    }

    fn next(&mut self, out: &mut Vec<u8>) {
        if self.written > 0 {
            out.extend_from_slice(b",\n");
        }
        self.written += 1;
    }

    fn seen(&mut self, ns: u64) {
        if ns != 0 {
            self.base_ns.get_or_insert(ns);
            self.last_ns = self.last_ns.max(ns);
        }
    }

    /// `"ts":…` for the programs' time `ns`.
    fn ts(&mut self, out: &mut Vec<u8>, key: &str, ns: u64) {
        let base = if self.absolute {
            0
        } else {
            *self.base_ns.get_or_insert(ns)
        };
        let _ = write!(out, ",\"{key}\":");
        micros(out, i128::from(ns) - i128::from(base));
    }

    /// Names the thread's track (and its process's) the first time it shows up, and
    /// again when its name changed.
    fn names(&mut self, out: &mut Vec<u8>, rec: &SyscallRecord) {
        if self.threads.get(&rec.tid) == Some(&rec.comm) {
            return;
        }
        if self.threads.len() >= MAX_NAMED {
            self.threads.clear();
            self.processes.clear();
        }
        self.threads.insert(rec.tid, rec.comm);
        let new_process = self.processes.insert(rec.pid);
        // A process is named after its main thread, or the first of its threads seen.
        let kinds: &[&str] = if rec.tid == rec.pid || new_process {
            &["process_name", "thread_name"]
        } else {
            &["thread_name"]
        };
        // A name as it is, to label a track; one that is not UTF-8 or holds control
        // bytes as the lines escape it (JSON's `\u` escapes are more than some
        // readers take: Perfetto's older JSON importer refuses them).
        let comm = comm_bytes(&rec.comm);
        self.text.clear();
        match std::str::from_utf8(comm) {
            Ok(name) if !name.chars().any(char::is_control) => self.text.push_str(name),
            _ => escape::bare(&mut self.text, comm),
        }
        for kind in kinds {
            self.next(out);
            let _ = write!(
                out,
                "{{\"name\":\"{kind}\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":",
                rec.pid, rec.tid
            );
            string(out, &self.text);
            out.extend_from_slice(b"}}");
        }
    }

    /// The start of an event, up to its time.
    fn begin(&mut self, out: &mut Vec<u8>, name: &str, cat: &str, ph: &str, rec: &SyscallRecord) {
        self.next(out);
        out.extend_from_slice(b"{\"name\":");
        string(out, name);
        let _ = write!(
            out,
            ",\"cat\":\"{cat}\",\"ph\":\"{ph}\",\"pid\":{},\"tid\":{}",
            rec.pid, rec.tid
        );
    }

    /// `"key":"text"` with its comma, from the reused text.
    fn text_arg(&self, out: &mut Vec<u8>, key: &str, first: &mut bool) {
        if !*first {
            out.push(b',');
        }
        *first = false;
        string(out, key);
        out.push(b':');
        string(out, &self.text);
    }

    /// The call's arguments, each decoded as its line shows it, an fd with its path.
    fn call_args(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        info: &SyscallInfo,
        mem: Memory<'_, '_>,
        fd_path: FdPath<'_, '_>,
        first: &mut bool,
    ) {
        if !rec.has_entry() {
            return;
        }
        match &info.args {
            Some(_) => {
                for arg in args::args(rec, info) {
                    if arg.beauty.is_none() {
                        continue;
                    }
                    let (b, m) = arg.written(rec, mem);
                    self.text.clear();
                    beauty::write_arg(&mut self.text, b, arg.raw, m, self.style);
                    if matches!(b, Beauty::Fd | Beauty::Dfd)
                        && let Some(path) = fd_path(arg.raw as u32 as i32)
                    {
                        self.text.push('<');
                        escape::bare(&mut self.text, path);
                        self.text.push('>');
                    }
                    self.text_arg(out, arg.name, first);
                }
            }
            None => {
                for (i, &raw) in rec.call_args().iter().enumerate() {
                    if raw == 0 {
                        continue;
                    }
                    self.text.clear();
                    let _ = beauty::write_raw(&mut self.text, raw, ArgKind::U64);
                    let key = ["arg0", "arg1", "arg2", "arg3", "arg4", "arg5"][i.min(5)];
                    self.text_arg(out, key, first);
                }
            }
        }
    }

    /// A finished call (or one seen at its exit only, or one that never returns): a
    /// slice from its entry to its exit, its arguments and its return as `args`.
    pub fn call(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        info: &SyscallInfo,
        mem: Memory<'_, '_>,
        fd_path: FdPath<'_, '_>,
    ) {
        let entered = rec.has_entry() && rec.enter_ns != 0;
        if entered {
            self.seen(rec.enter_ns);
        }
        if rec.has_exit() {
            self.seen(rec.exit_ns);
        }
        // A call under way when tracing began starts, as far as the timeline knows,
        // where the timeline does.
        let start = match (entered, rec.has_exit()) {
            (true, _) => rec.enter_ns,
            (false, true) => self.base_ns.unwrap_or(rec.exit_ns).min(rec.exit_ns),
            (false, false) => return,
        };
        let end = if rec.has_exit() { rec.exit_ns } else { start };
        self.names(out, rec);
        let failed = rec.has_exit() && (-MAX_ERRNO..0).contains(&rec.ret);
        let cat = if failed { "syscall,failed" } else { "syscall" };
        self.begin(out, &info.name, cat, "X", rec);
        self.ts(out, "ts", start);
        out.extend_from_slice(b",\"dur\":");
        micros(out, i128::from(end.saturating_sub(start)));
        out.extend_from_slice(b",\"args\":{");
        let mut first = true;
        self.call_args(out, rec, info, mem, fd_path, &mut first);
        if rec.has_exit() && info.ret != RetKind::NoReturn {
            self.text.clear();
            self.line.ret(&mut self.text, rec, info, fd_path);
            self.text_arg(out, "return", &mut first);
        }
        if !entered {
            if !first {
                out.push(b',');
            }
            out.extend_from_slice(b"\"began_before_tracing\":true");
        }
        out.extend_from_slice(b"}}");
    }

    /// A call still running when tracing ended at `end_ns`: a slice up to there, its
    /// arguments, and `"unfinished": true` instead of a return.
    pub fn unfinished(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        info: &SyscallInfo,
        mem: Memory<'_, '_>,
        fd_path: FdPath<'_, '_>,
        end_ns: u64,
    ) {
        if !rec.has_entry() || rec.enter_ns == 0 {
            return;
        }
        self.seen(rec.enter_ns);
        self.names(out, rec);
        self.begin(out, &info.name, "syscall", "X", rec);
        self.ts(out, "ts", rec.enter_ns);
        out.extend_from_slice(b",\"dur\":");
        micros(out, i128::from(end_ns.saturating_sub(rec.enter_ns)));
        out.extend_from_slice(b",\"args\":{");
        let mut first = true;
        self.call_args(out, rec, info, mem, fd_path, &mut first);
        if !first {
            out.push(b',');
        }
        out.extend_from_slice(b"\"unfinished\":true}}");
    }

    /// A tracepoint event: an instant on its thread's track, its fields as the line
    /// prints them.
    pub fn event(&mut self, out: &mut Vec<u8>, rec: &SyscallRecord, ev: &TpEvent, data: &[u8]) {
        self.seen(rec.enter_ns);
        self.names(out, rec);
        self.text.clear();
        self.text.push_str(&ev.category);
        self.text.push(':');
        self.text.push_str(&ev.name);
        self.next(out);
        out.extend_from_slice(b"{\"name\":");
        string(out, &self.text);
        let _ = write!(
            out,
            ",\"cat\":\"event\",\"ph\":\"i\",\"s\":\"t\",\"pid\":{},\"tid\":{}",
            rec.pid, rec.tid
        );
        self.ts(out, "ts", rec.enter_ns);
        self.text.clear();
        crate::events::print::fields(&mut self.text, &ev.fields, data, false, &|_| None);
        out.extend_from_slice(b",\"args\":{\"fields\":");
        string(out, &self.text);
        out.extend_from_slice(b"}}");
    }

    /// A page fault: an instant on its thread's track, the code and the memory named.
    pub fn fault(
        &mut self,
        out: &mut Vec<u8>,
        rec: &SyscallRecord,
        code: &Location,
        memory: &Location,
    ) {
        self.seen(rec.enter_ns);
        self.names(out, rec);
        let name = fault::name(rec.nr == FAULT_MAJ);
        self.next(out);
        let _ = write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"fault\",\"ph\":\"i\",\"s\":\"t\",\"pid\":{},\"tid\":{}",
            rec.pid, rec.tid
        );
        self.ts(out, "ts", rec.enter_ns);
        out.extend_from_slice(b",\"args\":{");
        let mut first = true;
        self.text.clear();
        fault::code(&mut self.text, code, rec.args[0]);
        self.text_arg(out, "code", &mut first);
        self.text.clear();
        fault::target(&mut self.text, memory, rec.args[1]);
        self.text_arg(out, "target", &mut first);
        self.text.clear();
        fault::kinds(&mut self.text, memory, rec.args[2] != 0);
        self.text_arg(out, "kinds", &mut first);
        out.extend_from_slice(b"}}");
    }
}

/// The timeline file: events written as they come (through a 64 KiB buffer, flushed
/// between batches of records), closed on every end, a failed write said once.
pub struct Timeline {
    fmt: TimelineFormatter,
    buf: Vec<u8>,
    out: Box<dyn Write>,
    path: PathBuf,
    failed: Option<io::Error>,
    closed: bool,
}

impl Timeline {
    /// Opens FILE as -o opens its own (an existing file becomes FILE.old) and writes
    /// the start of the array, so that a FILE that cannot be written is refused before
    /// anything is traced.
    pub fn create(path: &Path, opts: &LineOptions) -> io::Result<Self> {
        let out = crate::output::sink(Some(path))?;
        Self::to(Box::new(out), path, opts)
    }

    /// A timeline written to `out` (tests give a buffer).
    pub fn to(mut out: Box<dyn Write>, path: &Path, opts: &LineOptions) -> io::Result<Self> {
        let mut buf = Vec::with_capacity(4096);
        TimelineFormatter::header(&mut buf);
        out.write_all(&buf)?;
        out.flush()?;
        Ok(Self {
            fmt: TimelineFormatter::new(opts),
            buf,
            out,
            path: path.to_owned(),
            failed: None,
            closed: false,
        })
    }

    /// Writes what `f` formats.
    pub fn put(&mut self, f: impl FnOnce(&mut TimelineFormatter, &mut Vec<u8>)) {
        if self.failed.is_some() || self.closed {
            return;
        }
        self.buf.clear();
        f(&mut self.fmt, &mut self.buf);
        if let Err(e) = self.out.write_all(&self.buf) {
            self.failed = Some(e);
        }
    }

    /// Between batches: what was written reaches the file (so that a killed rtrace
    /// leaves a timeline that opens).
    pub fn flush(&mut self) {
        if self.failed.is_none()
            && !self.closed
            && let Err(e) = self.out.flush()
        {
            self.failed = Some(e);
        }
    }

    /// The latest time an event carried.
    pub fn last_ns(&self) -> u64 {
        self.fmt.last_ns()
    }

    /// Closes the array. The error, if writing failed (once, whenever it did).
    pub fn close(&mut self) -> Option<String> {
        if self.closed {
            return None;
        }
        self.buf.clear();
        TimelineFormatter::trailer(&mut self.buf);
        if self.failed.is_none() {
            let done = self
                .out
                .write_all(&self.buf)
                .and_then(|()| self.out.flush());
            if let Err(e) = done {
                self.failed = Some(e);
            }
        }
        self.closed = true;
        self.failed
            .as_ref()
            .map(|e| format!("writing the timeline {}: {e}", self.path.display()))
    }
}

impl Drop for Timeline {
    /// An end that did not close it (an error on the way out) still leaves it whole.
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
mod tests {
    use std::{cell::RefCell, rc::Rc};

    use serde_json::Value;
    use trace_common::record::{KIND_FAULT, KIND_SYSCALL, REC_HAS_ENTRY, REC_HAS_EXIT};

    use super::*;
    use crate::decode::format::ArgKind;

    fn rec(tid: u32, pid: u32, comm: &str, at_us: u64, dur_us: Option<u64>) -> SyscallRecord {
        let mut c = [0u8; TASK_COMM_LEN];
        c[..comm.len()].copy_from_slice(comm.as_bytes());
        SyscallRecord {
            kind: KIND_SYSCALL,
            flags: REC_HAS_ENTRY | if dur_us.is_some() { REC_HAS_EXIT } else { 0 },
            tid,
            pid,
            comm: c,
            enter_ns: at_us * 1000,
            exit_ns: dur_us.map_or(0, |d| (at_us + d) * 1000),
            args: [3, 0, 0, 0, 0, 0],
            ret: 0,
            nr: 3,
            aug_len: [0; 2],
            aug_arg: [0xff; 2],
            aug_cut: [0; 2],
        }
    }

    fn close_info() -> SyscallInfo {
        let fd = crate::decode::format::ArgSpec {
            name: "fd".into(),
            kind: ArgKind::U32,
            ty: "unsigned int".into(),
        };
        SyscallInfo::new("close", Some(vec![fd]))
    }

    /// The events written, as a reader parses the whole file.
    fn parse(buf: &[u8]) -> Vec<Value> {
        match serde_json::from_slice::<Value>(buf).expect("the timeline is JSON") {
            Value::Array(events) => events,
            other => panic!("not an array: {other}"),
        }
    }

    fn whole(f: impl FnOnce(&mut TimelineFormatter, &mut Vec<u8>)) -> Vec<Value> {
        let mut out = Vec::new();
        TimelineFormatter::header(&mut out);
        let mut t = TimelineFormatter::new(&LineOptions::default());
        f(&mut t, &mut out);
        TimelineFormatter::trailer(&mut out);
        parse(&out)
    }

    #[test]
    fn a_slice_per_call_on_named_tracks() {
        let info = close_info();
        let events = whole(|t, out| {
            let path = |fd: i32| (fd == 3).then_some(&b"/etc/hostname"[..]);
            t.call(
                out,
                &rec(10, 10, "cat", 1000, Some(5)),
                &info,
                &|_| None,
                &path,
            );
            let mut failed = rec(11, 10, "worker", 1002, Some(7));
            failed.ret = -9;
            t.call(out, &failed, &info, &|_| None, &|_| None);
            t.call(
                out,
                &rec(10, 10, "cat", 1010, Some(1)),
                &info,
                &|_| None,
                &|_| None,
            );
        });
        let kinds: Vec<(&str, &str)> = events
            .iter()
            .map(|e| (e["ph"].as_str().unwrap(), e["name"].as_str().unwrap()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("M", "process_name"),
                ("M", "thread_name"),
                ("X", "close"),
                ("M", "thread_name"),
                ("X", "close"),
                ("X", "close"),
            ]
        );
        assert_eq!(events[0]["args"]["name"], "cat");
        assert_eq!(events[3]["args"]["name"], "worker");
        assert_eq!(
            (events[3]["pid"].as_u64(), events[3]["tid"].as_u64()),
            (Some(10), Some(11))
        );
        let first = &events[2];
        assert_eq!(first["ts"].as_f64(), Some(0.0));
        assert_eq!(first["dur"].as_f64(), Some(5.0));
        assert_eq!(first["args"]["fd"], "3</etc/hostname>");
        assert_eq!(first["args"]["return"], "0");
        assert_eq!(first["cat"], "syscall");
        let failed = &events[4];
        assert_eq!(failed["ts"].as_f64(), Some(2.0));
        assert_eq!(failed["dur"].as_f64(), Some(7.0));
        assert_eq!(failed["cat"], "syscall,failed");
        assert!(
            failed["args"]["return"]
                .as_str()
                .unwrap()
                .starts_with("-1 EBADF")
        );
        assert_eq!(events[5]["ts"].as_f64(), Some(10.0));
    }

    #[test]
    fn times_are_exact_microseconds() {
        let info = close_info();
        let events = whole(|t, out| {
            let mut r = rec(1, 1, "a", 0, None);
            r.flags |= REC_HAS_EXIT;
            r.enter_ns = 5_000_000_123;
            r.exit_ns = 5_000_001_124;
            t.call(out, &r, &info, &|_| None, &|_| None);
        });
        assert_eq!(events[2]["dur"].as_f64(), Some(1.001));
        let mut abs = TimelineFormatter::new(&LineOptions {
            absolute_time: true,
            ..LineOptions::default()
        });
        let mut out = Vec::new();
        abs.call(
            &mut out,
            &rec(1, 1, "a", 7, Some(1)),
            &info,
            &|_| None,
            &|_| None,
        );
        assert!(
            String::from_utf8(out)
                .unwrap()
                .contains("\"ts\":7.000,\"dur\":1.000")
        );
    }

    #[test]
    fn a_rename_names_the_track_again() {
        let info = close_info();
        let events = whole(|t, out| {
            t.call(out, &rec(5, 5, "sh", 1, Some(1)), &info, &|_| None, &|_| {
                None
            });
            t.call(out, &rec(5, 5, "sh", 3, Some(1)), &info, &|_| None, &|_| {
                None
            });
            t.call(out, &rec(5, 5, "ls", 5, Some(1)), &info, &|_| None, &|_| {
                None
            });
        });
        let names: Vec<_> = events
            .iter()
            .filter(|e| e["ph"] == "M")
            .map(|e| {
                (
                    e["name"].as_str().unwrap(),
                    e["args"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("process_name", "sh"),
                ("thread_name", "sh"),
                ("process_name", "ls"),
                ("thread_name", "ls")
            ]
        );
    }

    #[test]
    fn unfinished_and_unstarted_calls_say_so() {
        let info = close_info();
        let events = whole(|t, out| {
            t.call(
                out,
                &rec(1, 1, "a", 100, Some(1)),
                &info,
                &|_| None,
                &|_| None,
            );
            // Under way when tracing began: only its exit was seen.
            let mut late = rec(2, 1, "b", 0, None);
            late.flags = REC_HAS_EXIT;
            late.exit_ns = 150_000;
            t.call(out, &late, &info, &|_| None, &|_| None);
            let blocked = rec(1, 1, "a", 120, None);
            let end = t.last_ns() + 10_000;
            t.unfinished(out, &blocked, &info, &|_| None, &|_| None, end);
        });
        let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(slices.len(), 3);
        assert_eq!(slices[1]["ts"].as_f64(), Some(0.0));
        assert_eq!(slices[1]["dur"].as_f64(), Some(50.0));
        assert_eq!(slices[1]["args"]["began_before_tracing"], true);
        assert_eq!(slices[2]["ts"].as_f64(), Some(20.0));
        assert_eq!(slices[2]["dur"].as_f64(), Some(40.0));
        assert_eq!(slices[2]["args"]["unfinished"], true);
        assert_eq!(slices[2]["args"]["fd"], "3");
        assert!(slices[2]["args"].get("return").is_none());
    }

    #[test]
    fn faults_are_instants() {
        let events = whole(|t, out| {
            let mut r = rec(4, 4, "x", 1, None);
            r.kind = KIND_FAULT;
            r.args = [0x1000, 0x2000, 1, 0, 0, 0];
            t.fault(out, &r, &Location::default(), &Location::default());
        });
        let f = &events[2];
        assert_eq!((f["ph"].as_str(), f["s"].as_str()), (Some("i"), Some("t")));
        assert_eq!(f["name"], "minfault");
        assert!(f["args"]["code"].is_string() && f["args"]["target"].is_string());
    }

    #[test]
    fn names_are_escaped() {
        let info = close_info();
        let events = whole(|t, out| {
            t.call(
                out,
                &rec(1, 1, "a\"b\\c", 1, Some(1)),
                &info,
                &|_| None,
                &|_| None,
            );
            let tab = rec(2, 2, "tab\there", 1, Some(1));
            t.call(out, &tab, &info, &|_| None, &|_| None);
        });
        assert_eq!(events[0]["args"]["name"], "a\"b\\c");
        // No control byte reaches the file, so no `\u` escape does either.
        assert_eq!(events[4]["args"]["name"], "tab\\there");
    }

    /// A writer that keeps what it was given, shared with the test.
    #[derive(Clone, Default)]
    struct Kept(Rc<RefCell<Vec<u8>>>);

    impl Write for Kept {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_file_is_closed_however_it_ends() {
        let info = close_info();
        let kept = Kept::default();
        {
            let mut t = Timeline::to(
                Box::new(kept.clone()),
                Path::new("t.json"),
                &LineOptions::default(),
            )
            .unwrap();
            t.put(|f, out| {
                f.call(out, &rec(1, 1, "a", 1, Some(1)), &info, &|_| None, &|_| {
                    None
                })
            });
            t.flush();
            // Killed here, the file still opens as the array form allows: no `]`.
            let cut = kept.0.borrow().clone();
            assert!(cut.starts_with(b"[\n{") && !cut.ends_with(b"]\n"));
            // Dropped without close (an error on the way out): closed anyway.
        }
        assert_eq!(parse(&kept.0.borrow()).len(), 3);
        // An empty trace is an empty array.
        let kept = Kept::default();
        let mut t = Timeline::to(
            Box::new(kept.clone()),
            Path::new("t.json"),
            &LineOptions::default(),
        )
        .unwrap();
        assert_eq!(t.close(), None);
        assert!(parse(&kept.0.borrow()).is_empty());
    }

    /// A writer that takes `room` bytes, then fails.
    struct Full {
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if b.len() > self.room {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            self.room -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_is_said_once() {
        let info = close_info();
        let opts = LineOptions::default();
        assert!(Timeline::to(Box::new(Full { room: 0 }), Path::new("t"), &opts).is_err());
        let mut t = Timeline::to(Box::new(Full { room: 2 }), Path::new("t.json"), &opts).unwrap();
        t.put(|f, out| {
            f.call(out, &rec(1, 1, "a", 1, Some(1)), &info, &|_| None, &|_| {
                None
            })
        });
        let said = t.close().expect("the failure is said");
        assert!(said.starts_with("writing the timeline t.json: "), "{said}");
        assert_eq!(t.close(), None);
    }
}
