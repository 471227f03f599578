//! A call chain under its line (`--call-graph`), as perf 6.1 prints it: one frame per
//! line, indented 39 columns, `sym (dso)`: `[kernel.kallsyms]` for the kernel's
//! frames, the mapping's path for the user's; `[0x<offset>]` for a frame no symbol
//! names and `([unknown])` for one no mapping holds. The kernel's first frames are
//! those of the tracing itself (the BPF program and what called it), which perf's
//! own sampling does not show: they are left out.

use std::fmt::Write;

use crate::symbols::Location;

/// One frame: its address, named.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    pub addr: u64,
    pub kernel: bool,
    pub loc: Location,
}

/// The tracing's own frames, by their names' starts: the program and what runs it.
/// A tracepoint's `__traceiter_*` stays, as in perf's chains of the same event.
const TRACING: [&str; 4] = ["bpf_", "__bpf_", "perf_trace", "trace_call_bpf"];

/// How many of the first frames are the tracing's own.
pub fn tracing_frames(frames: &[Frame]) -> usize {
    frames
        .iter()
        .take_while(|f| {
            f.kernel
                && f.loc
                    .sym
                    .as_ref()
                    .is_some_and(|(name, _)| TRACING.iter().any(|p| name.starts_with(p)))
        })
        .count()
}

/// Perf's left margin of a call chain's frames.
const INDENT: usize = 39;

/// Writes the frames, one line each.
pub fn write(out: &mut String, frames: &[Frame]) {
    for f in frames {
        out.extend(std::iter::repeat_n(' ', INDENT));
        match (&f.loc.sym, &f.loc.map) {
            (Some((name, _)), _) => out.push_str(name),
            (None, Some((_, off))) => brackets(out, *off),
            (None, None) => brackets(out, f.addr),
        }
        out.push_str(" (");
        match &f.loc.map {
            _ if f.kernel => out.push_str("[kernel.kallsyms]"),
            Some((name, _)) => out.push_str(name),
            None => out.push_str("[unknown]"),
        }
        out.push_str(")\n");
    }
}

/// One frame in `--json`.
#[derive(serde::Serialize)]
struct JsonFrame<'a> {
    addr: u64,
    sym: Option<&'a str>,
    /// `[kernel.kallsyms]`, the mapping's path, or null when no mapping holds it.
    dso: Option<&'a str>,
}

/// `--json`: adds the frames to a line's object (which ends with `}` and a newline)
/// as its `callchain` array.
pub fn splice_json(line: &mut Vec<u8>, frames: &[Frame]) {
    if frames.is_empty() || !line.ends_with(b"}\n") {
        return;
    }
    line.truncate(line.len() - 2);
    line.extend_from_slice(b",\"callchain\":[");
    for (i, f) in frames.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        let frame = JsonFrame {
            addr: f.addr,
            sym: f.loc.sym.as_ref().map(|(n, _)| &**n),
            dso: if f.kernel {
                Some("[kernel.kallsyms]")
            } else {
                f.loc.map.as_ref().map(|(n, _)| &**n)
            },
        };
        let _ = serde_json::to_writer(&mut *line, &frame);
    }
    line.extend_from_slice(b"]}\n");
}

/// `[0x…]`, `[0]` for zero (perf's `%#lx`).
fn brackets(out: &mut String, v: u64) {
    if v == 0 {
        out.push_str("[0]");
    } else {
        let _ = write!(out, "[{v:#x}]");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(addr: u64, kernel: bool, map: Option<&str>, sym: Option<&str>) -> Frame {
        Frame {
            addr,
            kernel,
            loc: Location {
                map: map.map(|m| (m.into(), addr & 0xfff)),
                sym: sym.map(|s| (s.into(), 4)),
            },
        }
    }

    #[test]
    fn json_lines_get_a_callchain_array() {
        let mut line = b"{\"tid\":1}\n".to_vec();
        splice_json(
            &mut line,
            &[
                frame(0x10, true, None, Some("do_syscall_64")),
                frame(0, false, None, None),
            ],
        );
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "{\"tid\":1,\"callchain\":[{\"addr\":16,\"sym\":\"do_syscall_64\",\"dso\":\"[kernel.kallsyms]\"},{\"addr\":0,\"sym\":null,\"dso\":null}]}\n"
        );
    }

    #[test]
    fn frames_as_perf_prints_them_without_the_tracings_own() {
        let frames = [
            frame(
                0xffff_ffff_8100_0000,
                true,
                None,
                Some("bpf_prog_1234_sys_exit"),
            ),
            frame(
                0xffff_ffff_8100_0010,
                true,
                None,
                Some("__bpf_trace_sys_exit"),
            ),
            frame(0xffff_ffff_8100_0020, true, None, Some("syscall_exit_work")),
            frame(
                0x7f00_0000_1234,
                false,
                Some("/usr/lib/libc.so.6"),
                Some("__open64_nocancel"),
            ),
            frame(0x7f00_0000_1abc, false, Some("/usr/lib/libc.so.6"), None),
            frame(0, false, None, None),
        ];
        let skip = tracing_frames(&frames);
        assert_eq!(skip, 2);
        let mut out = String::new();
        write(&mut out, &frames[skip..]);
        let pad = " ".repeat(39);
        assert_eq!(
            out,
            format!(
                "{pad}syscall_exit_work ([kernel.kallsyms])\n\
                 {pad}__open64_nocancel (/usr/lib/libc.so.6)\n\
                 {pad}[0xabc] (/usr/lib/libc.so.6)\n\
                 {pad}[0] ([unknown])\n"
            )
        );
    }
}
