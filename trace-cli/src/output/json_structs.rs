//! What a call read or wrote in the program's memory, as `--json` objects: the structs
//! the line shows as `{ .field: value }` (beauty/structs.rs, beauty/shapes.rs) with
//! every field a number, a name or a nested object, read from the same layouts and
//! named from the same tables. Pure: bytes in, JSON out; false when the bytes are too
//! short for the struct (the caller then gives the pointer, as the line does).

use trace_common::record::Augmented;

use crate::decode::beauty::{
    Beauty, SignalName,
    layouts::{self, SockAddr, Time},
    shapes, signal_name,
    structs::FILE_TYPES,
    tables, write_flags,
};
use crate::output::json_write::{Arr, Obj, number, string, text_item};

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

/// The names in a value the line writes as `A|B|0x40`: each name, and the bits left
/// without one as one hex string; a number the line writes for a value without a name
/// is left out (it is the raw value).
pub fn names_of(out: &mut Vec<u8>, text: &str) {
    let mut a = Arr::new(out);
    for piece in text.split('|') {
        if piece.is_empty() || piece.parse::<i64>().is_ok() {
            continue;
        }
        string(a.item(), piece);
    }
    a.end();
}

/// `{"raw": n, "names": [...]}` from a flags table.
fn flags(out: &mut Vec<u8>, raw: u64, table: tables::Flags, scratch: &mut String) {
    scratch.clear();
    write_flags(scratch, raw, table, false);
    let mut o = Obj::new(out);
    o.num("raw", raw);
    names_of(o.key("names"), scratch);
    o.end();
}

/// A signal as the structs name it: `SIGKILL`, `SIGRT_2`, or its number.
fn signal(out: &mut Vec<u8>, sig: u64) {
    match signal_name(sig) {
        Some(SignalName::Named(n)) => {
            out.extend_from_slice(b"\"SIG");
            out.extend_from_slice(n.as_bytes());
            out.push(b'"');
        }
        Some(SignalName::RealTime(n)) => string(out, &format!("SIGRT_{n}")),
        None => number(out, sig),
    }
}

/// The signals in a set, by name (`INT`, `RT_2`), lowest first.
fn sigset(out: &mut Vec<u8>, set: u64) {
    let mut a = Arr::new(out);
    for sig in (1..=64u64).filter(|s| set & (1 << (s - 1)) != 0) {
        match signal_name(sig) {
            Some(SignalName::Named(n)) => string(a.item(), n),
            Some(SignalName::RealTime(n)) => string(a.item(), &format!("RT_{n}")),
            None => number(a.item(), sig),
        }
    }
    a.end();
}

fn time(out: &mut Vec<u8>, sec: i64, frac_name: &'static str, frac: i64) {
    let mut o = Obj::new(out);
    o.num("tv_sec", sec);
    o.num(frac_name, frac);
    o.end();
}

/// A file's type from its mode, as strace names it (`S_IFREG`), or null.
fn file_type(o: &mut Obj<'_>, mode: u32) {
    match FILE_TYPES.iter().find(|(t, _)| mode & libc::S_IFMT == *t) {
        Some((_, name)) => o.str("type", name),
        None => o.null("type"),
    }
}

/// Writes the struct `b` reads or writes as an object; false when `bytes` cannot hold it.
pub fn write(out: &mut Vec<u8>, b: Beauty, bytes: &[u8], scratch: &mut String) -> bool {
    match b {
        Beauty::Stat => stat(out, bytes),
        Beauty::Statx => statx(out, bytes, scratch),
        Beauty::SigAction | Beauty::SigActionOut => sigaction(out, bytes, scratch),
        Beauty::Rlimit | Beauty::RlimitOut => rlimit(out, bytes),
        Beauty::Utsname => utsname(out, bytes),
        Beauty::WaitStatus => wait_status(out, bytes),
        Beauty::Sockaddr | Beauty::SockaddrOut => sockaddr(out, bytes),
        Beauty::Timespec if bytes.len() >= 16 => {
            time(
                out,
                u64_at(bytes, 0) as i64,
                "tv_nsec",
                u64_at(bytes, 8) as i64,
            );
            true
        }
        Beauty::Timespec32 if bytes.len() >= 8 => {
            let (s, ns) = (u32_at(bytes, 0) as i32, u32_at(bytes, 4) as i32);
            time(out, s.into(), "tv_nsec", ns.into());
            true
        }
        Beauty::Struct(shape) | Beauty::StructOut(shape) => self::shape(out, shape, bytes, scratch),
        _ => false,
    }
}

/// `struct stat` as this architecture's kernel writes it for a native task.
fn stat(out: &mut Vec<u8>, b: &[u8]) -> bool {
    if b.len() < std::mem::size_of::<libc::stat>() {
        return false;
    }
    // SAFETY: the length was checked; libc::stat is plain integers.
    let st: libc::stat = unsafe { std::ptr::read_unaligned(b.as_ptr().cast()) };
    let mut o = Obj::new(out);
    o.num("st_dev", st.st_dev);
    o.num("st_ino", st.st_ino);
    o.num("st_mode", st.st_mode);
    file_type(&mut o, st.st_mode);
    o.num("st_nlink", st.st_nlink);
    o.num("st_uid", st.st_uid);
    o.num("st_gid", st.st_gid);
    o.num("st_rdev", st.st_rdev);
    o.num("st_size", st.st_size);
    o.num("st_blksize", st.st_blksize);
    o.num("st_blocks", st.st_blocks);
    time(o.key("st_atime"), st.st_atime, "tv_nsec", st.st_atime_nsec);
    time(o.key("st_mtime"), st.st_mtime, "tv_nsec", st.st_mtime_nsec);
    time(o.key("st_ctime"), st.st_ctime, "tv_nsec", st.st_ctime_nsec);
    o.end();
    true
}

/// `struct statx`, every field.
fn statx(out: &mut Vec<u8>, b: &[u8], scratch: &mut String) -> bool {
    let Some(x) = layouts::statx(b) else {
        return false;
    };
    let ts = |out: &mut Vec<u8>, t: Time| time(out, t.sec, "tv_nsec", t.nsec);
    let mut o = Obj::new(out);
    flags(
        o.key("stx_mask"),
        u64::from(x.mask),
        &tables::STATX_MASK,
        scratch,
    );
    o.num("stx_blksize", x.blksize);
    o.num("stx_attributes", x.attributes);
    o.num("stx_nlink", x.nlink);
    o.num("stx_uid", x.uid);
    o.num("stx_gid", x.gid);
    o.num("stx_mode", x.mode);
    file_type(&mut o, x.mode);
    o.num("stx_ino", x.ino);
    o.num("stx_size", x.size);
    o.num("stx_blocks", x.blocks);
    o.num("stx_attributes_mask", x.attributes_mask);
    ts(o.key("stx_atime"), x.atime);
    ts(o.key("stx_btime"), x.btime);
    ts(o.key("stx_ctime"), x.ctime);
    ts(o.key("stx_mtime"), x.mtime);
    o.num("stx_rdev_major", x.rdev_major);
    o.num("stx_rdev_minor", x.rdev_minor);
    o.num("stx_dev_major", x.dev_major);
    o.num("stx_dev_minor", x.dev_minor);
    o.end();
    true
}

/// The kernel's `struct sigaction`.
fn sigaction(out: &mut Vec<u8>, b: &[u8], scratch: &mut String) -> bool {
    let Some(sa) = layouts::sigaction(b) else {
        return false;
    };
    let mut o = Obj::new(out);
    match sa.handler {
        0 => o.str("sa_handler", "SIG_DFL"),
        1 => o.str("sa_handler", "SIG_IGN"),
        h => o.num("sa_handler", h),
    }
    flags(o.key("sa_flags"), sa.flags, &tables::SA_FLAGS, scratch);
    o.num("sa_restorer", sa.restorer);
    sigset(o.key("sa_mask"), sa.mask);
    o.end();
    true
}

/// `struct rlimit64`: each limit a number, or `"RLIM_INFINITY"`.
fn rlimit(out: &mut Vec<u8>, b: &[u8]) -> bool {
    if b.len() < 16 {
        return false;
    }
    let mut o = Obj::new(out);
    for (name, at) in [("rlim_cur", 0), ("rlim_max", 8)] {
        match u64_at(b, at) {
            u64::MAX => o.str(name, "RLIM_INFINITY"),
            n => o.num(name, n),
        }
    }
    o.end();
    true
}

/// `struct new_utsname`: six NUL-ended fields of 65 bytes.
fn utsname(out: &mut Vec<u8>, b: &[u8]) -> bool {
    const FIELD: usize = 65;
    const NAMES: [&str; 6] = [
        "sysname",
        "nodename",
        "release",
        "version",
        "machine",
        "domainname",
    ];
    if b.len() < 2 * FIELD {
        return false;
    }
    let mut o = Obj::new(out);
    for (i, name) in NAMES.iter().enumerate() {
        let Some(f) = b.get(i * FIELD..(i + 1) * FIELD) else {
            break;
        };
        o.text(
            name,
            &f[..f.iter().position(|&c| c == 0).unwrap_or(f.len())],
        );
    }
    o.end();
    true
}

/// A wait status: `{"raw", "kind": "exited"|"signaled"|"stopped"|"continued"|"unknown",
/// "status" or "signal" (and "core_dumped")}`.
fn wait_status(out: &mut Vec<u8>, b: &[u8]) -> bool {
    if b.len() < 4 {
        return false;
    }
    let s = u32_at(b, 0) as i32;
    let mut o = Obj::new(out);
    o.num("raw", s);
    if libc::WIFEXITED(s) {
        o.str("kind", "exited");
        o.num("status", libc::WEXITSTATUS(s));
    } else if libc::WIFSIGNALED(s) {
        o.str("kind", "signaled");
        signal(o.key("signal"), libc::WTERMSIG(s) as u64);
        o.bool("core_dumped", libc::WCOREDUMP(s));
    } else if libc::WIFSTOPPED(s) {
        o.str("kind", "stopped");
        signal(o.key("signal"), libc::WSTOPSIG(s) as u64);
    } else if libc::WIFCONTINUED(s) {
        o.str("kind", "continued");
    } else {
        o.str("kind", "unknown");
    }
    o.end();
    true
}

/// A socket address: `{"family": "INET", "port", "addr"}`, a local socket's `"path"`
/// (`@name` for an abstract one), or the family alone.
fn sockaddr(out: &mut Vec<u8>, b: &[u8]) -> bool {
    let Some(addr) = layouts::sockaddr(b) else {
        return false;
    };
    let mut o = Obj::new(out);
    let family = match addr {
        SockAddr::Inet { .. } => libc::AF_INET,
        SockAddr::Inet6 { .. } => libc::AF_INET6,
        SockAddr::Unnamed | SockAddr::Local(_) | SockAddr::Abstract(_) => libc::AF_UNIX,
        SockAddr::Family(f) => f,
    };
    match tables::SOCKET_FAMILY
        .entries
        .iter()
        .find(|(v, _)| *v == family as u64)
    {
        Some((_, n)) => o.str("family", n),
        None => o.num("family", family),
    }
    match addr {
        SockAddr::Inet { port, addr } => {
            o.num("port", port);
            o.str("addr", &addr.to_string());
        }
        SockAddr::Inet6 { port, addr } => {
            o.num("port", port);
            o.str("addr", &addr.to_string());
        }
        SockAddr::Local(path) => o.text("path", path),
        SockAddr::Abstract(name) => {
            let mut named = Vec::with_capacity(name.len() + 1);
            named.push(b'@');
            named.extend_from_slice(name);
            o.text("path", &named);
        }
        SockAddr::Unnamed | SockAddr::Family(_) => {}
    }
    o.end();
    true
}

/// A struct from its table of fields: every field, zeros too.
fn shape(out: &mut Vec<u8>, shape: &shapes::Shape, b: &[u8], scratch: &mut String) -> bool {
    if b.len() < usize::from(shape.size)
        || shape
            .fields
            .iter()
            .any(|(_, at, f)| at + f.size() > b.len())
    {
        return false;
    }
    use shapes::Field;
    let mut o = Obj::new(out);
    for &(name, at, field) in shape.fields {
        let v = o.key(name);
        match field {
            Field::I64 => number(v, u64_at(b, at) as i64),
            Field::U64 | Field::Hex => number(v, u64_at(b, at)),
            Field::U32 => number(v, u32_at(b, at)),
            Field::U16 => number(v, u16_at(b, at)),
            Field::Timespec => time(v, u64_at(b, at) as i64, "tv_nsec", u64_at(b, at + 8) as i64),
            Field::Timeval => time(v, u64_at(b, at) as i64, "tv_usec", u64_at(b, at + 8) as i64),
            Field::U64x3 => {
                let mut a = Arr::new(v);
                for k in 0..3 {
                    number(a.item(), u64_at(b, at + 8 * k));
                }
                a.end();
            }
            Field::Fsid => {
                let mut a = Arr::new(v);
                number(a.item(), u32_at(b, at));
                number(a.item(), u32_at(b, at + 4));
                a.end();
            }
            Field::Flags(table) => flags(v, u64_at(b, at), table, scratch),
            Field::Named(table) => {
                let raw = u64_at(b, at);
                match table.entries.iter().find(|(k, _)| *k == raw) {
                    Some((_, n)) => string(v, n),
                    None => number(v, raw),
                }
            }
            Field::Signal => signal(v, u64_at(b, at)),
        }
    }
    o.end();
    true
}

/// getdents64's entries by name, at most `items`; true when there were more.
pub fn dirents(out: &mut Vec<u8>, b: &[u8], items: usize) -> bool {
    let mut a = Arr::new(out);
    let mut names = layouts::dirents(b);
    for name in names.by_ref().take(items) {
        text_item(a.item(), name);
    }
    a.end();
    names.more()
}

/// poll's fds: `[{"fd", "events", "revents"}]` (revents once `answered`), at most
/// `items`; true when there were more.
pub fn pollfds(
    out: &mut Vec<u8>,
    b: &[u8],
    items: usize,
    answered: bool,
    scratch: &mut String,
) -> bool {
    let mut a = Arr::new(out);
    let all = layouts::pollfds(b);
    let total = all.len();
    for (fd, events, revents) in all.take(items) {
        let mut o = Obj::new(a.item());
        o.num("fd", fd);
        let table = &tables::POLL_EVENTS;
        flags(o.key("events"), u64::from(events), table, scratch);
        if answered {
            flags(o.key("revents"), u64::from(revents), table, scratch);
        }
        o.end();
    }
    a.end();
    total > items
}

/// argv or envp: each string (ending with its NUL; an empty one is one too), at most
/// `items`; true when there were more than shown.
pub fn strings(out: &mut Vec<u8>, aug: &Augmented<'_>, items: usize) -> bool {
    let mut a = Arr::new(out);
    let mut more = aug.cut;
    for (n, s) in layouts::strings(aug.bytes).enumerate() {
        if n == items {
            more = true;
            break;
        }
        text_item(a.item(), s);
    }
    a.end();
    more
}

/// A signal set's 8 bytes: `"mask"` and `"names"`.
pub fn sigset_fields(o: &mut Obj<'_>, b: &[u8]) -> bool {
    if b.len() < 8 {
        return false;
    }
    let set = u64_at(b, 0);
    o.num("mask", set);
    sigset(o.key("names"), set);
    true
}

/// pipe's two fds.
pub fn fd_pair(out: &mut Vec<u8>, b: &[u8]) -> bool {
    if b.len() < 8 {
        return false;
    }
    let mut a = Arr::new(out);
    number(a.item(), u32_at(b, 0) as i32);
    number(a.item(), u32_at(b, 4) as i32);
    a.end();
    true
}

/// An address the tool did not read, as a hex string (exact at any width).
pub fn pointer(out: &mut Vec<u8>, raw: u64) {
    use std::io::Write as _;
    let _ = write!(out, "\"{raw:#x}\"");
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn value(f: impl FnOnce(&mut Vec<u8>) -> bool) -> Option<Value> {
        let mut out = Vec::new();
        f(&mut out).then(|| serde_json::from_slice(&out).unwrap())
    }

    fn dirent(name: &[u8]) -> Vec<u8> {
        let len = (19 + name.len() + 1).div_ceil(8) * 8;
        let mut v = vec![0u8; len];
        v[16..18].copy_from_slice(&(len as u16).to_ne_bytes());
        v[19..19 + name.len()].copy_from_slice(name);
        v
    }

    #[test]
    fn directory_entries_and_poll_fds_are_lists_that_say_when_more_were_left() {
        let mut b = dirent(b".");
        b.extend(dirent(b"a\xffb"));
        let mut out = Vec::new();
        assert!(!dirents(&mut out, &b, 32));
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v, json!([".", {"str": "a\u{fffd}b", "hex": "61ff62"}]));
        out.clear();
        assert!(dirents(&mut out, &b, 1), "one shown of two");
        // The read stopped inside the second entry.
        out.clear();
        assert!(dirents(&mut out, &b[..b.len() - 3], 32));

        let mut p = 3i32.to_ne_bytes().to_vec();
        p.extend(1u16.to_ne_bytes());
        p.extend(1u16.to_ne_bytes());
        let mut out = Vec::new();
        let mut scratch = String::new();
        assert!(!pollfds(&mut out, &p, 32, true, &mut scratch));
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v,
            json!([{"fd": 3, "events": {"raw": 1, "names": ["IN"]}, "revents": {"raw": 1, "names": ["IN"]}}])
        );
    }

    #[test]
    fn sigaction_and_local_sockets_as_objects() {
        let mut act = 1u64.to_ne_bytes().to_vec();
        act.extend((libc::SA_RESTART as u64).to_ne_bytes());
        act.extend(0x7f00u64.to_ne_bytes());
        act.extend(((1u64 << 1) | (1 << 14)).to_ne_bytes());
        let mut s = String::new();
        let v = value(|o| write(o, Beauty::SigAction, &act, &mut s)).unwrap();
        assert_eq!(
            v,
            json!({"sa_handler": "SIG_IGN", "sa_flags": {"raw": libc::SA_RESTART, "names": ["RESTART"]},
                   "sa_restorer": 0x7f00, "sa_mask": ["INT", "TERM"]})
        );
        assert_eq!(
            value(|o| write(o, Beauty::SigAction, &act[..16], &mut s)),
            None
        );
        let mut sun = vec![1u8, 0, 0];
        sun.extend_from_slice(b"name");
        let v = value(|o| write(o, Beauty::Sockaddr, &sun, &mut s)).unwrap();
        assert_eq!(v, json!({"family": "LOCAL", "path": "@name"}));
    }
}
