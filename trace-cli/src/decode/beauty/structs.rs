//! What a call wrote into the caller's memory, read when it returned: stat buffers,
//! pipe fds, a wait status, directory entries. perf 6.1 shows these as pointers; rtrace
//! shows what strace shows, in perf's struct style (`{ .field: value }`). Pure: bytes in,
//! text out; a buffer too short for its struct shows nothing decoded (the caller falls
//! back to the pointer).

use std::fmt::Write as _;

use super::{SignalName, layouts, signal_name, tables};
use crate::decode::escape;

/// File types in `st_mode`, as strace names them.
pub const FILE_TYPES: &[(u32, &str)] = &[
    (libc::S_IFREG, "S_IFREG"),
    (libc::S_IFDIR, "S_IFDIR"),
    (libc::S_IFLNK, "S_IFLNK"),
    (libc::S_IFCHR, "S_IFCHR"),
    (libc::S_IFBLK, "S_IFBLK"),
    (libc::S_IFIFO, "S_IFIFO"),
    (libc::S_IFSOCK, "S_IFSOCK"),
];

/// The set-id and sticky bits in `st_mode`, as strace names them.
const MODE_BITS: [(u32, &str); 3] = [
    (libc::S_ISUID, "S_ISUID"),
    (libc::S_ISGID, "S_ISGID"),
    (libc::S_ISVTX, "S_ISVTX"),
];

/// `S_IFREG|0644`, `S_IFDIR|S_ISVTX|0777`: the type, the special bits by name, then
/// the permissions, as strace writes them.
fn write_mode(out: &mut String, mode: u32) {
    match FILE_TYPES.iter().find(|(t, _)| mode & libc::S_IFMT == *t) {
        Some((_, name)) => out.push_str(name),
        None => {
            let _ = write!(out, "{:#o}", mode & libc::S_IFMT);
        }
    }
    for (bit, name) in MODE_BITS {
        if mode & bit != 0 {
            out.push('|');
            out.push_str(name);
        }
    }
    let _ = write!(out, "|{:04o}", mode & 0o777);
}

/// `struct stat` as this architecture's kernel writes it for a native task (the libc
/// crate's `stat` is that layout): the type and permissions, then the size, or the
/// device numbers of a device; the rest is left out as `...`, as strace does.
pub fn write_stat(out: &mut String, b: &[u8]) -> bool {
    if b.len() < std::mem::size_of::<libc::stat>() {
        return false;
    }
    // SAFETY: the length was checked; libc::stat is plain integers.
    let st: libc::stat = unsafe { std::ptr::read_unaligned(b.as_ptr().cast()) };
    out.push_str("{ .st_mode: ");
    write_mode(out, st.st_mode);
    let kind = st.st_mode & libc::S_IFMT;
    if kind == libc::S_IFCHR || kind == libc::S_IFBLK {
        let rdev = st.st_rdev;
        let _ = write!(
            out,
            ", .st_rdev: makedev({:#x}, {:#x})",
            libc::major(rdev),
            libc::minor(rdev)
        );
    } else {
        let _ = write!(out, ", .st_size: {}", st.st_size);
    }
    out.push_str(", ... }");
    true
}

/// pipe/pipe2's two fds: `[3, 4]`.
pub fn write_fd_pair(out: &mut String, b: &[u8]) -> bool {
    let (Some(r), Some(w)) = (b.get(0..4), b.get(4..8)) else {
        return false;
    };
    let fd = |x: &[u8]| i32::from_ne_bytes([x[0], x[1], x[2], x[3]]);
    let _ = write!(out, "[{}, {}]", fd(r), fd(w));
    true
}

/// A wait status as strace writes it: `[{WIFEXITED(s) && WEXITSTATUS(s) == 0}]`.
pub fn write_wait_status(out: &mut String, b: &[u8]) -> bool {
    let Some(s) = b.get(0..4) else {
        return false;
    };
    let s = i32::from_ne_bytes([s[0], s[1], s[2], s[3]]);
    let sig = |out: &mut String, n: i32| {
        let _ = match signal_name(n as u64) {
            Some(SignalName::Named(name)) => write!(out, "SIG{name}"),
            _ => write!(out, "{n}"),
        };
    };
    out.push_str("[{");
    if libc::WIFEXITED(s) {
        let _ = write!(
            out,
            "WIFEXITED(s) && WEXITSTATUS(s) == {}",
            libc::WEXITSTATUS(s)
        );
    } else if libc::WIFSIGNALED(s) {
        out.push_str("WIFSIGNALED(s) && WTERMSIG(s) == ");
        sig(out, libc::WTERMSIG(s));
        if libc::WCOREDUMP(s) {
            out.push_str(" && WCOREDUMP(s)");
        }
    } else if libc::WIFSTOPPED(s) {
        out.push_str("WIFSTOPPED(s) && WSTOPSIG(s) == ");
        sig(out, libc::WSTOPSIG(s));
    } else if libc::WIFCONTINUED(s) {
        out.push_str("WIFCONTINUED(s)");
    } else {
        let _ = write!(out, "{s:#x}");
    }
    out.push_str("}]");
    true
}

/// getdents64's entries, by name: `[".", "..", "notes.txt"]`; at most `items` of them,
/// and `...` after the last when there were more (or the read stopped inside one).
pub fn write_dirents(out: &mut String, b: &[u8], cut: bool, items: usize) -> bool {
    out.push('[');
    let mut names = layouts::dirents(b);
    for (n, name) in names.by_ref().take(items).enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        escape::quoted(out, name);
    }
    if cut || names.more() {
        out.push_str(if out.ends_with('[') { "..." } else { ", ..." });
    }
    out.push(']');
    true
}

/// A signal set as strace writes it: `[INT TERM]`, or `~[KILL STOP]` when most
/// signals are in it (what is missing, after `~`). Real-time signals are `RT_n`.
pub fn write_sigset(out: &mut String, b: &[u8]) -> bool {
    let Some(set) = b.get(0..8) else {
        return false;
    };
    let set = u64::from_ne_bytes(set.try_into().unwrap_or([0; 8]));
    let (shown, invert) = if set.count_ones() > 32 {
        (!set, true)
    } else {
        (set, false)
    };
    if invert {
        out.push('~');
    }
    out.push('[');
    let mut first = true;
    for sig in 1..=64u64 {
        if shown & (1 << (sig - 1)) == 0 {
            continue;
        }
        if !first {
            out.push(' ');
        }
        first = false;
        let _ = match signal_name(sig) {
            Some(SignalName::Named(name)) => write!(out, "{name}"),
            Some(SignalName::RealTime(n)) => write!(out, "RT_{n}"),
            None => write!(out, "{sig}"),
        };
    }
    out.push(']');
    true
}

/// The kernel's `struct sigaction` (handler, flags, restorer, mask, 8 bytes each on a
/// 64-bit kernel): `{ .sa_handler: SIG_IGN, .sa_flags: RESTORER, .sa_mask: [] }`.
pub fn write_sigaction(out: &mut String, b: &[u8]) -> bool {
    let Some(sa) = layouts::sigaction(b) else {
        return false;
    };
    out.push_str("{ .sa_handler: ");
    match sa.handler {
        0 => out.push_str("SIG_DFL"),
        1 => out.push_str("SIG_IGN"),
        h => {
            let _ = write!(out, "{h:#x}");
        }
    }
    out.push_str(", .sa_flags: ");
    super::write_flags(out, sa.flags, &tables::SA_FLAGS, false);
    out.push_str(", .sa_mask: ");
    write_sigset(out, &sa.mask.to_ne_bytes());
    out.push_str(" }");
    true
}

/// A `struct rlimit64`: `{ .rlim_cur: 8388608, .rlim_max: RLIM_INFINITY }`.
pub fn write_rlimit(out: &mut String, b: &[u8]) -> bool {
    let (Some(cur), Some(max)) = (b.get(0..8), b.get(8..16)) else {
        return false;
    };
    let v = |out: &mut String, x: &[u8]| match u64::from_ne_bytes(x.try_into().unwrap_or([0; 8])) {
        u64::MAX => out.push_str("RLIM_INFINITY"),
        n => {
            let _ = write!(out, "{n}");
        }
    };
    out.push_str("{ .rlim_cur: ");
    v(out, cur);
    out.push_str(", .rlim_max: ");
    v(out, max);
    out.push_str(" }");
    true
}

/// `struct new_utsname` (six fields of 65 bytes): the system and node names, as strace
/// abbreviates it.
pub fn write_utsname(out: &mut String, b: &[u8]) -> bool {
    const FIELD: usize = 65;
    let (Some(sys), Some(node)) = (b.get(0..FIELD), b.get(FIELD..2 * FIELD)) else {
        return false;
    };
    fn cut(f: &[u8]) -> &[u8] {
        &f[..f.iter().position(|&c| c == 0).unwrap_or(f.len())]
    }
    out.push_str("{ .sysname: ");
    escape::quoted(out, cut(sys));
    out.push_str(", .nodename: ");
    escape::quoted(out, cut(node));
    out.push_str(", ... }");
    true
}

/// `struct statx`: what it holds, the type and permissions, and the size (or a
/// device's numbers), as strace abbreviates it.
pub fn write_statx(out: &mut String, b: &[u8]) -> bool {
    let Some(x) = layouts::statx(b) else {
        return false;
    };
    out.push_str("{ .stx_mask: ");
    super::write_flags(out, u64::from(x.mask), &tables::STATX_MASK, false);
    out.push_str(", .stx_mode: ");
    write_mode(out, x.mode);
    let kind = x.mode & libc::S_IFMT;
    if kind == libc::S_IFCHR || kind == libc::S_IFBLK {
        let _ = write!(
            out,
            ", .stx_rdev: makedev({:#x}, {:#x})",
            x.rdev_major, x.rdev_minor
        );
    } else {
        let _ = write!(out, ", .stx_size: {}", x.size);
    }
    out.push_str(", ... }");
    true
}

/// `[{ .fd: 3, .events: IN }, …]`; with `answered`, each fd's non-zero `revents` too.
/// At most `items` entries; `...` when there were more (`cut`: more than was read).
pub fn write_pollfds(out: &mut String, b: &[u8], cut: bool, items: usize, answered: bool) {
    out.push('[');
    let all = layouts::pollfds(b);
    let total = all.len();
    for (i, (fd, events, revents)) in all.take(items).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{{ .fd: {fd}, .events: ");
        super::write_flags(out, u64::from(events), &tables::POLL_EVENTS, false);
        if answered && revents != 0 {
            out.push_str(", .revents: ");
            super::write_flags(out, u64::from(revents), &tables::POLL_EVENTS, false);
        }
        out.push_str(" }");
    }
    if cut || total > items {
        out.push_str(if total > 0 && items > 0 {
            ", ..."
        } else {
            "..."
        });
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pollfds_show_answers_only_once_answered_and_mark_the_rest() {
        let mut b = Vec::new();
        for (fd, events, revents) in [(3i32, 1u16, 1u16), (4, 4, 0)] {
            b.extend_from_slice(&fd.to_ne_bytes());
            b.extend_from_slice(&events.to_ne_bytes());
            b.extend_from_slice(&revents.to_ne_bytes());
        }
        let show = |cut, items, answered| {
            let mut s = String::new();
            write_pollfds(&mut s, &b, cut, items, answered);
            s
        };
        assert_eq!(
            show(false, 32, true),
            "[{ .fd: 3, .events: IN, .revents: IN }, { .fd: 4, .events: OUT }]"
        );
        assert_eq!(
            show(false, 32, false),
            "[{ .fd: 3, .events: IN }, { .fd: 4, .events: OUT }]"
        );
        assert_eq!(show(false, 1, false), "[{ .fd: 3, .events: IN }, ...]");
        assert_eq!(
            show(true, 32, false),
            "[{ .fd: 3, .events: IN }, { .fd: 4, .events: OUT }, ...]"
        );
    }

    fn show(f: impl Fn(&mut String, &[u8]) -> bool, b: &[u8]) -> Option<String> {
        let mut s = String::new();
        f(&mut s, b).then_some(s)
    }

    fn stat_bytes(mode: u32, size: i64, rdev: u64) -> Vec<u8> {
        // SAFETY: an all-zero stat is a valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        st.st_mode = mode;
        st.st_size = size;
        st.st_rdev = rdev;
        // SAFETY: viewing the struct's bytes.
        unsafe {
            std::slice::from_raw_parts(
                (&st as *const libc::stat).cast::<u8>(),
                std::mem::size_of::<libc::stat>(),
            )
        }
        .to_vec()
    }

    #[test]
    fn stat_as_strace_abbreviates_it() {
        assert_eq!(
            show(write_stat, &stat_bytes(libc::S_IFREG | 0o644, 3, 0)).unwrap(),
            "{ .st_mode: S_IFREG|0644, .st_size: 3, ... }"
        );
        assert_eq!(
            show(
                write_stat,
                &stat_bytes(libc::S_IFCHR | 0o666, 0, libc::makedev(1, 3))
            )
            .unwrap(),
            "{ .st_mode: S_IFCHR|0666, .st_rdev: makedev(0x1, 0x3), ... }"
        );
        assert_eq!(
            show(write_stat, &stat_bytes(libc::S_IFDIR | 0o1777, 4096, 0)).unwrap(),
            "{ .st_mode: S_IFDIR|S_ISVTX|0777, .st_size: 4096, ... }"
        );
        assert_eq!(show(write_stat, &[0; 16]), None, "too short: no guess");
    }

    #[test]
    fn pipe_fds_and_wait_status() {
        let mut b = 3i32.to_ne_bytes().to_vec();
        b.extend_from_slice(&4i32.to_ne_bytes());
        assert_eq!(show(write_fd_pair, &b).unwrap(), "[3, 4]");
        assert_eq!(show(write_fd_pair, &b[..4]), None);
        let st = |s: i32| show(write_wait_status, &s.to_ne_bytes()).unwrap();
        assert_eq!(st(0), "[{WIFEXITED(s) && WEXITSTATUS(s) == 0}]");
        assert_eq!(st(3 << 8), "[{WIFEXITED(s) && WEXITSTATUS(s) == 3}]");
        assert_eq!(st(9), "[{WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL}]");
        assert_eq!(
            st(6 | 0x80),
            "[{WIFSIGNALED(s) && WTERMSIG(s) == SIGABRT && WCOREDUMP(s)}]"
        );
        assert_eq!(
            st((19 << 8) | 0x7f),
            "[{WIFSTOPPED(s) && WSTOPSIG(s) == SIGSTOP}]"
        );
        assert_eq!(st(0xffff), "[{WIFCONTINUED(s)}]");
    }

    #[test]
    fn signal_sets_and_actions() {
        let set = |v: u64| show(write_sigset, &v.to_ne_bytes()).unwrap();
        assert_eq!(set(0), "[]");
        assert_eq!(set((1 << 1) | (1 << 14)), "[INT TERM]");
        assert_eq!(set(1 << 33), "[RT_2]");
        assert_eq!(set(!((1 << 8) | (1 << 18))), "~[KILL STOP]");
        let mut act = 1u64.to_ne_bytes().to_vec();
        act.extend((0x0400_0000u64 | libc::SA_RESTART as u64).to_ne_bytes());
        act.extend(0x7f00u64.to_ne_bytes());
        act.extend((1u64 << 16).to_ne_bytes());
        assert_eq!(
            show(write_sigaction, &act).unwrap(),
            "{ .sa_handler: SIG_IGN, .sa_flags: RESTORER|RESTART, .sa_mask: [CHLD] }"
        );
        assert_eq!(show(write_sigaction, &act[..16]), None);
        // Flags built from a negative int: the high bits stay, after the names.
        act[8..16].copy_from_slice(&((libc::SA_NODEFER | libc::SA_RESETHAND) as i64).to_ne_bytes());
        assert_eq!(
            show(write_sigaction, &act).unwrap(),
            "{ .sa_handler: SIG_IGN, .sa_flags: NODEFER|RESETHAND|0xffffffff00000000, .sa_mask: [CHLD] }"
        );
    }

    #[test]
    fn rlimits_names_and_statx() {
        let mut r = 8_388_608u64.to_ne_bytes().to_vec();
        r.extend(u64::MAX.to_ne_bytes());
        assert_eq!(
            show(write_rlimit, &r).unwrap(),
            "{ .rlim_cur: 8388608, .rlim_max: RLIM_INFINITY }"
        );
        let mut u = vec![0u8; 390];
        u[..5].copy_from_slice(b"Linux");
        u[65..67].copy_from_slice(b"vm");
        assert_eq!(
            show(write_utsname, &u).unwrap(),
            r#"{ .sysname: "Linux", .nodename: "vm", ... }"#
        );
        let mut x = vec![0u8; 256];
        x[0..4].copy_from_slice(&0x7ffu32.to_ne_bytes());
        x[28..30].copy_from_slice(&((libc::S_IFREG | 0o644) as u16).to_ne_bytes());
        x[40..48].copy_from_slice(&6u64.to_ne_bytes());
        let shown = show(write_statx, &x).unwrap();
        assert!(
            shown.ends_with(".stx_mode: S_IFREG|0644, .stx_size: 6, ... }"),
            "{shown}"
        );
        assert!(shown.starts_with("{ .stx_mask: TYPE|"), "{shown}");
        assert_eq!(show(write_statx, &x[..100]), None);
    }

    fn dirent(name: &str) -> Vec<u8> {
        let len = (19 + name.len() + 1).div_ceil(8) * 8;
        let mut v = vec![0u8; len];
        v[16..18].copy_from_slice(&(len as u16).to_ne_bytes());
        v[19..19 + name.len()].copy_from_slice(name.as_bytes());
        v
    }

    #[test]
    fn directory_entries_by_name() {
        let mut b = dirent(".");
        b.extend(dirent(".."));
        b.extend(dirent("a\nb"));
        let d = |b: &[u8], cut, items| {
            let mut s = String::new();
            write_dirents(&mut s, b, cut, items);
            s
        };
        assert_eq!(d(&b, false, 32), r#"[".", "..", "a\nb"]"#);
        assert_eq!(d(&b, false, 2), r#"[".", "..", ...]"#);
        assert_eq!(d(&b, true, 32), r#"[".", "..", "a\nb", ...]"#);
        // The read stopped inside an entry.
        assert_eq!(d(&b[..b.len() - 3], false, 32), r#"[".", "..", ...]"#);
        assert_eq!(d(&[], false, 32), "[]");
    }
}
