//! A page fault's two places as perf 6.1 prints them (`trace__pgfault`): the code that
//! faulted, `[sym+0xoff]` (the offset into its mapping when no symbol names it, the
//! address when no mapping holds it), and the memory it touched, `dso@0xoffset`
//! (absolute for memory with no file), then the mapping's kind (`d` found, `?` not)
//! and where the fault was taken (`.` user mode, `k` kernel).
//!
//! Where perf differs, rtrace prints what is true: perf looks a fault taken in the
//! kernel (a `read` into a fresh buffer) up in the kernel's maps and prints `(?k)` and
//! the bare address; rtrace names the process's mapping, `(dk)`. perf prints the
//! faulting address in place of the code's when no mapping holds the code; rtrace the
//! code's address.

use std::fmt::Write;

use crate::symbols::Location;

/// `0` as perf's `%#lx` prints it, other values with `0x`.
fn hex(out: &mut String, v: u64) {
    if v == 0 {
        out.push('0');
    } else {
        let _ = write!(out, "{v:#x}");
    }
}

/// The code: `sym+0xoff`, or its offset in the mapping, or its address.
pub fn code(out: &mut String, loc: &Location, addr: u64) {
    match (&loc.sym, &loc.map) {
        (Some((name, off)), _) => {
            let _ = write!(out, "{name}+{off:#x}");
        }
        (None, Some((_, off))) => hex(out, *off),
        (None, None) => hex(out, addr),
    }
}

/// The memory touched: `dso@0xoffset`, or the address.
pub fn target(out: &mut String, loc: &Location, addr: u64) {
    match &loc.map {
        Some((name, off)) => {
            let _ = write!(out, "{name}@");
            hex(out, *off);
        }
        None => hex(out, addr),
    }
}

/// `(MT)`: `d` when a mapping holds the address, else `?`; `.` user mode, `k` kernel.
pub fn kinds(out: &mut String, loc: &Location, user_mode: bool) {
    out.push('(');
    out.push(if loc.map.is_some() { 'd' } else { '?' });
    out.push(if user_mode { '.' } else { 'k' });
    out.push(')');
}

/// `minfault` or `majfault`.
pub fn name(major: bool) -> &'static str {
    if major { "majfault" } else { "minfault" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(map: Option<(&str, u64)>, sym: Option<(&str, u64)>) -> Location {
        Location {
            map: map.map(|(n, o)| (n.into(), o)),
            sym: sym.map(|(n, o)| (n.into(), o)),
        }
    }

    #[test]
    fn places_as_perf_prints_them() {
        let mut s = String::new();
        let ld = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
        code(
            &mut s,
            &loc(Some((ld, 0x1ab70)), Some(("_start", 0))),
            0x7f00,
        );
        s.push_str(" => ");
        let t = loc(Some((ld, 0x1ab70)), None);
        target(&mut s, &t, 0x7f00);
        s.push(' ');
        kinds(&mut s, &t, true);
        assert_eq!(s, format!("_start+0x0 => {ld}@0x1ab70 (d.)"));

        let mut s = String::new();
        code(
            &mut s,
            &loc(Some(("[vdso]", 0x9b0)), None),
            0x7fff_0000_09b0,
        );
        s.push(' ');
        let none = loc(None, None);
        target(&mut s, &none, 0x55720d7e81e0);
        s.push(' ');
        kinds(&mut s, &none, false);
        code(&mut s, &none, 0);
        assert_eq!(s, "0x9b0 0x55720d7e81e0 (?k)0");
    }
}
