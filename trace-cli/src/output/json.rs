//! `--json`: one JSON object per syscall (JSON Lines), for scripts. The schema is in
//! the README; every field is always present (null when unknown).

use std::fmt::Write as _;

use trace_common::{SyscallRecord, record::Augmented};

use crate::decode::{
    RetKind, SyscallInfo,
    beauty::{
        self, Beauty, Style,
        context::{self, Shown},
    },
    errno::{ErrnoTable, MAX_ERRNO},
    escape,
    format::ArgKind,
};
use crate::output::line::comm_bytes;

pub struct JsonFormatter {
    absolute_time: bool,
    style: Style,
    base_ns: Option<u64>,
    decoded: String,
}

/// Appends `s` as a JSON string.
pub fn write_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Nanoseconds as milliseconds with six decimals: exact, no floating point.
fn write_ms6(out: &mut String, ns: i128) {
    let sign = if ns < 0 { "-" } else { "" };
    let n = ns.unsigned_abs();
    let _ = write!(out, "{sign}{}.{:06}", n / 1_000_000, n % 1_000_000);
}

fn raw_as_c(raw: u64, kind: ArgKind) -> i128 {
    match kind {
        ArgKind::I32 => i128::from(raw as u32 as i32),
        ArgKind::U32 => i128::from(raw as u32),
        ArgKind::I64 => i128::from(raw as i64),
        ArgKind::Pointer | ArgKind::U64 => i128::from(raw),
    }
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
            decoded: String::new(),
        }
    }

    pub fn format<'m>(
        &mut self,
        out: &mut String,
        rec: &SyscallRecord,
        info: &SyscallInfo,
        mem: &dyn Fn(usize) -> Option<Result<Augmented<'m>, ()>>,
    ) {
        out.push_str("{\"ts\":");
        if rec.has_entry() && rec.enter_ns != 0 {
            let ns = if self.absolute_time {
                i128::from(rec.enter_ns)
            } else {
                let base = *self.base_ns.get_or_insert(rec.enter_ns);
                i128::from(rec.enter_ns) - i128::from(base)
            };
            write_ms6(out, ns);
        } else {
            out.push_str("null");
        }
        let _ = write!(out, ",\"tid\":{},\"pid\":{},\"comm\":", rec.tid, rec.pid);
        // The name as the lines show it (escaped), so that a name that is not UTF-8
        // keeps its bytes.
        self.decoded.clear();
        escape::bare(&mut self.decoded, comm_bytes(&rec.comm));
        write_json_str(out, &self.decoded);
        out.push_str(",\"syscall\":");
        write_json_str(out, &info.name);
        out.push_str(",\"args\":{");
        if rec.has_entry() {
            let mut first = true;
            let specs = info.args.as_deref().unwrap_or(&[]);
            for (i, (spec, &raw)) in specs.iter().zip(rec.args.iter()).enumerate() {
                if !first {
                    out.push(',');
                }
                first = false;
                write_json_str(out, &spec.name);
                let _ = write!(out, ":{{\"raw\":{},\"decoded\":", raw_as_c(raw, spec.kind));
                // An argument the call does not use is decoded as its raw value.
                let b = match context::shown(&info.name, &spec.name, &rec.args) {
                    Some(Shown::As(b)) => b,
                    Some(Shown::Hidden) => Beauty::Raw(spec.kind),
                    None => info
                        .beauties
                        .get(i)
                        .copied()
                        .unwrap_or(Beauty::Raw(spec.kind)),
                };
                self.decoded.clear();
                let written = !b.is_output() || (rec.has_exit() && b.output_written(rec.ret));
                let m = if b.reads_memory() && written {
                    mem(i)
                } else {
                    None
                };
                beauty::write_arg(&mut self.decoded, b, raw, m, self.style);
                write_json_str(out, &self.decoded);
                out.push('}');
            }
        }
        out.push_str("},\"ret\":");
        let returned = rec.has_exit() && info.ret != RetKind::NoReturn;
        let failed = returned && (-MAX_ERRNO..0).contains(&rec.ret);
        // As the line says it: -1, and the error by name.
        match (returned, failed) {
            (false, _) => out.push_str("null"),
            (true, true) => out.push_str("-1"),
            (true, false) => {
                let _ = write!(out, "{}", rec.ret);
            }
        }
        out.push_str(",\"errno\":");
        if failed {
            let errno = (-rec.ret) as i32;
            match ErrnoTable::name(errno) {
                Some(n) => write_json_str(out, n),
                None => {
                    let _ = write!(out, "\"E{errno}\"");
                }
            }
        } else {
            out.push_str("null");
        }
        out.push_str(",\"duration\":");
        if rec.has_entry() && rec.has_exit() {
            write_ms6(out, i128::from(rec.exit_ns.saturating_sub(rec.enter_ns)));
        } else {
            out.push_str("null");
        }
        out.push_str("}\n");
    }
}

#[cfg(test)]
mod tests {
    use trace_common::record::{KIND_SYSCALL, REC_HAS_ENTRY, REC_HAS_EXIT};

    use super::*;
    use crate::decode::format::ArgSpec;

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
        let mut out = String::new();
        let mut j = JsonFormatter::new(false, 32);
        j.format(&mut out, &rec, &info, &|i| {
            (i == 1).then_some(Ok(Augmented {
                bytes: &b"/x\"y"[..],
                cut: false,
            }))
        });
        assert_eq!(
            out,
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
        assert!(out.contains("\"ret\":-1,\"errno\":\"E4000\","), "{out}");
    }
}
