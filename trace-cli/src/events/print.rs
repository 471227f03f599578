//! An event's fields as perf trace prints them: `name: value`, in record order, zero
//! values left out, each shown by its type's rule (perf's choice by type and name):
//! strings quoted, pointers and `addr` fields in hex, a `pid_t` with the task's name
//! when rtrace knows it. Unlike perf 6.1, a signed field is shown signed (perf shows a
//! `code` of -6 as 4294967290).

use std::fmt::Write as _;

use super::format::{Field, Layout};
use crate::decode::escape;

/// How a field is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Text,
    Hex,
    Pid,
    Int,
    /// An in-place array of numbers: `[1, 2]`.
    List,
}

pub fn shape(f: &Field) -> Shape {
    let char_array = f.ty.contains("char");
    match f.layout {
        Layout::Array | Layout::DataLoc | Layout::RelLoc if char_array => Shape::Text,
        Layout::Array => Shape::List,
        // A dynamic array of numbers: its bytes' place, as perf shows the pointer.
        Layout::DataLoc | Layout::RelLoc => Shape::Hex,
        Layout::Scalar if f.ty.contains('*') || f.name.contains("addr") => Shape::Hex,
        Layout::Scalar if f.ty == "pid_t" => Shape::Pid,
        Layout::Scalar => Shape::Int,
    }
}

/// Appends `field: value, …` for the record `data`. `comm_of` names a task by pid (or
/// not). A field past the bytes the kernel sent is shown as `...`.
pub fn fields<'c>(
    out: &mut String,
    fields: &[Field],
    data: &[u8],
    show_zeros: bool,
    comm_of: &dyn Fn(i128) -> Option<&'c [u8]>,
) {
    let mut first = true;
    for f in fields {
        let start = out.len();
        if !first {
            out.push_str(", ");
        }
        out.push_str(&f.name);
        out.push_str(": ");
        if value(out, f, data, show_zeros, comm_of) {
            first = false;
        } else {
            out.truncate(start);
        }
    }
}

/// Appends one field's value; false when perf would leave it out (a zero).
pub fn value<'c>(
    out: &mut String,
    f: &Field,
    data: &[u8],
    show_zeros: bool,
    comm_of: &dyn Fn(i128) -> Option<&'c [u8]>,
) -> bool {
    match shape(f) {
        Shape::Text => {
            match f.text(data) {
                Some(t) => escape::quoted(out, t),
                None => out.push_str("..."),
            }
            true
        }
        Shape::List => list(out, f, data) || show_zeros,
        Shape::Hex if f.layout != Layout::Scalar => match f.bytes(data) {
            Some(b) => {
                let _ = write!(out, "{} bytes", b.len());
                !b.is_empty() || show_zeros
            }
            None => {
                out.push_str("...");
                true
            }
        },
        shape => match f.int(data) {
            None => {
                out.push_str("...");
                true
            }
            Some(0) if !show_zeros => false,
            Some(v) => {
                if shape == Shape::Hex {
                    let _ = write!(out, "{:#x}", v as u64);
                } else {
                    let _ = write!(out, "{v}");
                }
                if shape == Shape::Pid
                    && let Some(comm) = comm_of(v)
                {
                    out.push_str(" (");
                    escape::bare(out, comm);
                    out.push(')');
                }
                true
            }
        },
    }
}

/// `[a, b, …]` of an in-place array of numbers; false when every element is 0.
fn list(out: &mut String, f: &Field, data: &[u8]) -> bool {
    let Some(bytes) = f.bytes(data) else {
        out.push_str("...");
        return true;
    };
    let width = match f.count {
        0 => 1,
        n => (f.size / n).max(1),
    };
    out.push('[');
    let mut any = false;
    for (i, chunk) in bytes.chunks(width).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let mut v = 0u64;
        for (k, b) in chunk.iter().enumerate().take(8) {
            v |= u64::from(*b) << (8 * k);
        }
        any |= v != 0;
        let _ = write!(out, "{v}");
    }
    out.push(']');
    any
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::format;

    #[test]
    fn perfs_shape_for_sched_process_exec() {
        let (_, f) = format::parse(super::super::format::tests_support::EXEC);
        let mut rec = vec![0u8; 20];
        rec[8..12].copy_from_slice(&(20u32 | (10 << 16)).to_ne_bytes());
        rec[12..16].copy_from_slice(&4242i32.to_ne_bytes());
        rec[16..20].copy_from_slice(&4242i32.to_ne_bytes());
        rec.extend_from_slice(b"/bin/true\0");
        let mut out = String::new();
        fields(&mut out, &f, &rec, false, &|pid| {
            (pid == 4242).then_some(&b"true"[..])
        });
        assert_eq!(
            out,
            "filename: \"/bin/true\", pid: 4242 (true), old_pid: 4242 (true)"
        );
    }

    #[test]
    fn zeros_are_left_out_and_signed_values_stay_signed() {
        let text = "\tfield:int sig;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:int errno;\toffset:12;\tsize:4;\tsigned:1;\n\tfield:int code;\toffset:16;\tsize:4;\tsigned:1;\n\tfield:void * addr;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:u8 saddr[4];\toffset:32;\tsize:4;\tsigned:0;\n";
        let (_, f) = format::parse(text);
        let mut rec = vec![0u8; 36];
        rec[8..12].copy_from_slice(&10i32.to_ne_bytes());
        rec[16..20].copy_from_slice(&(-6i32).to_ne_bytes());
        rec[24..32].copy_from_slice(&0xdead_beefu64.to_ne_bytes());
        rec[32..36].copy_from_slice(&[127, 0, 0, 1]);
        let mut out = String::new();
        fields(&mut out, &f, &rec, false, &|_| None);
        assert_eq!(
            out,
            "sig: 10, code: -6, addr: 0xdeadbeef, saddr: [127, 0, 0, 1]"
        );
        // What the kernel did not send is not made up.
        out.clear();
        fields(&mut out, &f, &rec[..20], false, &|_| None);
        assert_eq!(out, "sig: 10, code: -6, addr: ..., saddr: ...");
    }
}
