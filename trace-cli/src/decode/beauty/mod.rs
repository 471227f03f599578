//! Argument beautifiers: how perf trace shows each kind of argument. The registry
//! (`registry.rs`) picks one per (syscall, argument) from tables and from the argument's
//! name and type in tracefs, as perf's heuristics do; this file prints the values.

pub mod context;
pub mod layouts;
pub mod registry;
pub mod shapes;
pub mod structs;
pub mod tables;

use std::fmt::Write as _;

use tables::{Flags, Names};

use trace_common::record::Augmented;

use crate::decode::{escape, format::ArgKind, numbers};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Beauty {
    /// The raw value, as its C type reads.
    Raw(ArgKind),
    /// An address: hex.
    Hex,
    Fd,
    /// A directory fd: AT_FDCWD is `CWD`.
    Dfd,
    /// A NUL-terminated string read from user memory, quoted.
    Str,
    /// execve's argv: `["ls", "-l"]`.
    Argv,
    /// execve's environment, in argv's form; read only with `--envp` (else the pointer).
    Envp,
    /// The start of a buffer the call reads from (write, sendto), quoted.
    Buffer,
    Sockaddr,
    Timespec,
    /// A 32-bit task's `struct old_timespec32` (the calls not named `…_time64`).
    Timespec32,
    Flags(Flags),
    /// One of a set; a named zero is shown (e.g. `whence: SET`).
    Enum(Names),
    OpenFlags,
    /// socket(2)'s type: a kind in the low nibble and flags above.
    SocketType,
    /// futex op: a command in the low bits and flags above.
    FutexOp,
    Signal,
    /// A pid: the number, and `(comm)` after it when the task's name is known (added
    /// by the line, which knows the names).
    Pid,
    /// A uid or gid: `-1` ("leave it as it is") as strace writes it, not 4294967295.
    Id,
    /// clone's flags: the flags, and the exit signal in the low byte by name.
    CloneFlags,
    /// What a call read into a buffer (read, pread64, getrandom), quoted: written by the
    /// call.
    ReadBuffer,
    /// A path the call wrote (getcwd, readlink), whole, up to its NUL if it has one.
    ReadPath,
    /// A `struct stat` the call filled.
    Stat,
    /// pipe/pipe2's two fds.
    FdPair,
    /// wait4's status.
    WaitStatus,
    /// A signal set (rt_sigprocmask's new set, read as given).
    SigSet,
    /// The signal set the call wrote (rt_sigprocmask's old set).
    SigSetOut,
    /// A struct sigaction (rt_sigaction's new action).
    SigAction,
    /// The struct sigaction the call wrote (rt_sigaction's old action).
    SigActionOut,
    /// A socket address the call wrote (getsockname, accept, recvfrom).
    SockaddrOut,
    /// A resource limit (prlimit64's new one, setrlimit's).
    Rlimit,
    /// The resource limit the call wrote (prlimit64's old one, getrlimit's).
    RlimitOut,
    /// uname's answer.
    Utsname,
    /// statx's answer.
    Statx,
    /// getdents64's entries.
    Dirents,
    /// poll's fds: what was asked of each (`events`) and, once the call returned, what
    /// the kernel answered (`revents`).
    PollFds,
    /// poll's fds before the call returned: what was asked only.
    PollFdsAsked,
    /// A struct the call reads, printed from its table of fields.
    Struct(&'static shapes::Shape),
    /// A struct the call writes, printed from its table of fields.
    StructOut(&'static shapes::Shape),
}

impl Beauty {
    /// Whether a zero value is still shown (perf leaves zero arguments out, except
    /// where zero has a name).
    pub fn shows_zero(&self) -> bool {
        match self {
            Beauty::Enum(names) => names.entries.iter().any(|(v, _)| *v == 0),
            Beauty::FutexOp => true,
            _ => false,
        }
    }

    /// Whether the value is read from user memory (an augmentation slot).
    pub fn reads_memory(&self) -> bool {
        self.is_output()
            || matches!(
                self,
                Beauty::Str
                    | Beauty::Argv
                    | Beauty::Envp
                    | Beauty::Buffer
                    | Beauty::Sockaddr
                    | Beauty::Timespec
                    | Beauty::Timespec32
                    | Beauty::SigSet
                    | Beauty::SigAction
                    | Beauty::Rlimit
                    | Beauty::Struct(_)
                    | Beauty::PollFds
                    | Beauty::PollFdsAsked
            )
    }

    /// Memory the call writes: it means something only once the call succeeded.
    pub fn is_output(&self) -> bool {
        matches!(
            self,
            Beauty::ReadBuffer
                | Beauty::ReadPath
                | Beauty::Stat
                | Beauty::FdPair
                | Beauty::WaitStatus
                | Beauty::Dirents
                | Beauty::SigSetOut
                | Beauty::SigActionOut
                | Beauty::SockaddrOut
                | Beauty::RlimitOut
                | Beauty::Utsname
                | Beauty::Statx
                | Beauty::StructOut(_)
        )
    }

    /// This argument as a call in this state shows it: poll's answers (`revents`) only
    /// once it returned successfully.
    pub fn settled(self, returned_ok: bool) -> Beauty {
        match self {
            Beauty::PollFds if !returned_ok => Beauty::PollFdsAsked,
            b => b,
        }
    }

    /// Whether the output was written, given the call's return: wait4 writes a status
    /// only when it returns a pid; the others on success.
    pub fn output_written(&self, ret: i64) -> bool {
        match self {
            Beauty::WaitStatus => ret > 0,
            _ => ret >= 0,
        }
    }
}

const AT_FDCWD: i32 = -100;

/// How values are spelled: perfconfig's `show_prefix` (`O_RDONLY`), and the compact
/// struct form perf's BTF printer uses when argument names are off (`{1,}`).
/// `items`: how many argv entries are shown (`--string-limit`).
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub prefix: bool,
    pub compact: bool,
    pub items: u16,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            prefix: false,
            compact: false,
            items: 32,
        }
    }
}

/// Writes `raw` as `b` shows it. `mem` is what was copied from user memory for this
/// argument: `Some(Ok(read))`, `Some(Err(()))` for a failed read, `None` when nothing
/// was copied; a value that needs memory and has none is shown as the pointer.
pub fn write_arg(
    out: &mut String,
    b: Beauty,
    raw: u64,
    mem: Option<Result<Augmented<'_>, ()>>,
    style: Style,
) {
    let _ = match b {
        Beauty::Raw(kind) => write_raw(out, raw, kind),
        Beauty::Hex => {
            numbers::hex(out, raw);
            Ok(())
        }
        Beauty::Fd => {
            numbers::dec(out, raw as u32 as i32);
            Ok(())
        }
        Beauty::Dfd => {
            let fd = raw as u32 as i32;
            if fd == AT_FDCWD {
                out.push_str("CWD");
            } else {
                numbers::dec(out, fd);
            }
            Ok(())
        }
        Beauty::Str
        | Beauty::Argv
        | Beauty::Envp
        | Beauty::Buffer
        | Beauty::Sockaddr
        | Beauty::Timespec
        | Beauty::Timespec32
        | Beauty::ReadBuffer
        | Beauty::ReadPath
        | Beauty::Stat
        | Beauty::FdPair
        | Beauty::WaitStatus
        | Beauty::SigSet
        | Beauty::SigSetOut
        | Beauty::SigAction
        | Beauty::SigActionOut
        | Beauty::SockaddrOut
        | Beauty::Rlimit
        | Beauty::RlimitOut
        | Beauty::Utsname
        | Beauty::Statx
        | Beauty::Struct(_)
        | Beauty::StructOut(_)
        | Beauty::PollFds
        | Beauty::PollFdsAsked
        | Beauty::Dirents => match mem {
            Some(Ok(aug)) => {
                write_memory(out, b, aug, style);
                Ok(())
            }
            _ => {
                numbers::hex(out, raw);
                Ok(())
            }
        },
        Beauty::Flags(table) => {
            write_flags(out, raw, table, style.prefix);
            Ok(())
        }
        Beauty::Enum(names) => {
            write_name(out, raw, names, style.prefix);
            Ok(())
        }
        Beauty::OpenFlags => {
            write_open_flags(out, raw, style.prefix);
            Ok(())
        }
        Beauty::SocketType => {
            write_name(out, raw & 0xf, &tables::SOCKET_TYPE, style.prefix);
            if raw & !0xf != 0 {
                out.push('|');
                write_flags(out, raw & !0xf, &tables::SOCKET_TYPE_FLAGS, style.prefix);
            }
            Ok(())
        }
        Beauty::FutexOp => {
            write_name(out, raw & 0x7f, &tables::FUTEX_OP, style.prefix);
            if raw & !0x7f != 0 {
                out.push('|');
                write_flags(out, raw & !0x7f, &tables::FUTEX_OP_FLAGS, style.prefix);
            }
            Ok(())
        }
        Beauty::Signal => {
            write_signal(out, raw as u32, style.prefix);
            Ok(())
        }
        Beauty::Pid => {
            numbers::dec(out, raw as u32 as i32);
            Ok(())
        }
        Beauty::Id => {
            match raw as u32 {
                u32::MAX => out.push_str("-1"),
                id => numbers::dec(out, id),
            }
            Ok(())
        }
        Beauty::CloneFlags => {
            write_clone_flags(out, raw, style.prefix);
            Ok(())
        }
    };
}

pub fn write_raw(out: &mut String, raw: u64, kind: ArgKind) -> std::fmt::Result {
    match kind {
        ArgKind::Pointer => numbers::hex(out, raw),
        ArgKind::I32 => numbers::dec(out, raw as u32 as i32),
        ArgKind::U32 => numbers::dec(out, raw as u32),
        ArgKind::I64 => numbers::dec(out, raw as i64),
        ArgKind::U64 => numbers::dec(out, raw),
    }
    Ok(())
}

/// The entry's name, or the number (signed, as C prints an int) when there is none.
fn write_name(out: &mut String, raw: u64, table: &tables::Table, prefix: bool) {
    match table.entries.iter().find(|(v, _)| *v == raw) {
        Some((_, n)) => {
            if prefix {
                out.push_str(table.prefix);
            }
            out.push_str(n);
        }
        None => numbers::dec(out, raw as i64),
    }
}

/// clone's flags, with the exit signal of the low byte by name (`…|SIGCHLD`), as strace
/// shows it (perf 6.1 leaves it as `0x11`).
fn write_clone_flags(out: &mut String, raw: u64, prefix: bool) {
    let sig = raw & 0xff;
    let flags = raw & !0xff;
    if flags != 0 || sig == 0 {
        write_flags(out, flags, &tables::CLONE_FLAGS, prefix);
    }
    if sig != 0 {
        if flags != 0 {
            out.push('|');
        }
        let _ = match signal_name(sig) {
            Some(SignalName::Named(name)) => write!(out, "SIG{name}"),
            Some(SignalName::RealTime(n)) => write!(out, "SIGRT_{n}"),
            None => write!(out, "{sig:#x}"),
        };
    }
}

/// A signal's name: perf's, without `SIG` (`KILL`), or for a real-time one without a
/// name its number above the kernel's SIGRTMIN (32), which strace writes `SIGRT_n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalName {
    Named(&'static str),
    RealTime(u64),
}

pub fn signal_name(sig: u64) -> Option<SignalName> {
    const SIGRTMIN: u64 = 32;
    const SIGRTMAX: u64 = 64;
    match tables::SIGNALS.entries.iter().find(|(v, _)| *v == sig) {
        Some((_, name)) => Some(SignalName::Named(name)),
        None if (SIGRTMIN..=SIGRTMAX).contains(&sig) => Some(SignalName::RealTime(sig - SIGRTMIN)),
        None => None,
    }
}

/// A signal by name; a real-time one as strace names it (`SIGRT_2` is SIGRTMIN+2, the
/// kernel's SIGRTMIN being 32), where perf 6.1 prints hex.
fn write_signal(out: &mut String, sig: u32, prefix: bool) {
    match signal_name(u64::from(sig)) {
        Some(SignalName::RealTime(n)) => {
            let _ = write!(out, "SIGRT_{n}");
        }
        _ => write_name(out, u64::from(sig), &tables::SIGNALS, prefix),
    }
}

/// `A|B|0x40`: names of the masks fully present, in table order, then what is left.
pub fn write_flags(out: &mut String, raw: u64, table: Flags, prefix: bool) {
    if raw == 0 {
        out.push('0');
        return;
    }
    let start = out.len();
    let mut left = raw;
    for &(mask, name) in table.entries {
        if mask != 0 && left & mask == mask {
            if out.len() > start {
                out.push('|');
            }
            if prefix {
                out.push_str(table.prefix);
            }
            out.push_str(name);
            left &= !mask;
        }
    }
    if left != 0 {
        if out.len() > start {
            out.push('|');
        }
        numbers::hex(out, left);
    }
}

fn write_open_flags(out: &mut String, raw: u64, prefix: bool) {
    let accmode = raw & libc::O_ACCMODE as u64;
    if accmode == 0 {
        if prefix {
            out.push_str(tables::OPEN_FLAGS.prefix);
        }
        out.push_str("RDONLY");
        if raw != 0 {
            out.push('|');
        }
    }
    if raw != 0 {
        write_flags(out, raw, &tables::OPEN_FLAGS, prefix);
    }
}

/// What was read from user memory; `...` after it when there was more (strace's
/// mark: after the closing quote, or as the last argv entry).
fn write_memory(out: &mut String, b: Beauty, aug: Augmented<'_>, style: Style) {
    let bytes = aug.bytes;
    match b {
        Beauty::Str | Beauty::Buffer | Beauty::ReadBuffer => {
            escape::quoted(out, bytes);
            if aug.cut {
                out.push_str("...");
            }
        }
        Beauty::ReadPath => {
            let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
            escape::quoted(out, &bytes[..end]);
            if aug.cut {
                out.push_str("...");
            }
        }
        Beauty::Stat
        | Beauty::FdPair
        | Beauty::WaitStatus
        | Beauty::SigSet
        | Beauty::SigSetOut
        | Beauty::SigAction
        | Beauty::SigActionOut
        | Beauty::Rlimit
        | Beauty::RlimitOut
        | Beauty::Utsname
        | Beauty::Statx => {
            let start = out.len();
            let done = match b {
                Beauty::Stat => structs::write_stat(out, bytes),
                Beauty::FdPair => structs::write_fd_pair(out, bytes),
                Beauty::SigSet | Beauty::SigSetOut => structs::write_sigset(out, bytes),
                Beauty::SigAction | Beauty::SigActionOut => structs::write_sigaction(out, bytes),
                Beauty::Rlimit | Beauty::RlimitOut => structs::write_rlimit(out, bytes),
                Beauty::Utsname => structs::write_utsname(out, bytes),
                Beauty::Statx => structs::write_statx(out, bytes),
                _ => structs::write_wait_status(out, bytes),
            };
            if !done {
                // Too short to be the struct: shown as not known.
                out.truncate(start);
                out.push_str("{...}");
            }
        }
        Beauty::Dirents => {
            structs::write_dirents(out, bytes, aug.cut, usize::from(style.items));
        }
        Beauty::PollFds | Beauty::PollFdsAsked => {
            let answered = matches!(b, Beauty::PollFds);
            structs::write_pollfds(out, bytes, aug.cut, usize::from(style.items), answered);
        }
        Beauty::Struct(shape) | Beauty::StructOut(shape) => {
            let start = out.len();
            if !shapes::write_shape(out, shape, bytes) {
                out.truncate(start);
                out.push_str("{...}");
            }
        }
        Beauty::Argv | Beauty::Envp => {
            out.push('[');
            let mut n = 0;
            let mut more = aug.cut;
            for arg in layouts::strings(bytes) {
                if n == usize::from(style.items) {
                    more = true;
                    break;
                }
                if n > 0 {
                    out.push_str(", ");
                }
                escape::quoted(out, arg);
                n += 1;
            }
            if more {
                out.push_str(if n > 0 { ", ..." } else { "..." });
            }
            out.push(']');
        }
        Beauty::Sockaddr | Beauty::SockaddrOut => write_sockaddr(out, bytes),
        Beauty::Timespec => write_timespec(out, bytes, style.compact),
        Beauty::Timespec32 => write_timespec32(out, bytes, style.compact),
        _ => {}
    }
}

fn write_sockaddr(out: &mut String, b: &[u8]) {
    use layouts::SockAddr;
    let Some(addr) = layouts::sockaddr(b) else {
        out.push_str("{}");
        return;
    };
    let _ = match addr {
        SockAddr::Inet { port, addr } => {
            write!(out, "{{ .family: PF_INET, port: {port}, addr: {addr} }}")
        }
        SockAddr::Inet6 { port, addr } => {
            write!(out, "{{ .family: PF_INET6, port: {port}, addr: {addr} }}")
        }
        SockAddr::Unnamed => write!(out, "{{ .family: PF_LOCAL }}"),
        SockAddr::Local(path) => {
            out.push_str("{ .family: PF_LOCAL, path: ");
            escape::bare(out, path);
            write!(out, " }}")
        }
        // An abstract name: `@name`, as ss shows it.
        SockAddr::Abstract(name) => {
            out.push_str("{ .family: PF_LOCAL, path: @");
            escape::bare(out, name);
            write!(out, " }}")
        }
        SockAddr::Family(f) => {
            let name = tables::SOCKET_FAMILY
                .entries
                .iter()
                .find(|(v, _)| *v == f as u64);
            match name {
                Some((_, n)) => write!(out, "{{ .family: PF_{n} }}"),
                None => write!(out, "{{ .family: {f} }}"),
            }
        }
    };
}

fn write_timespec(out: &mut String, b: &[u8], compact: bool) {
    if b.len() < 16 {
        out.push_str("{}");
        return;
    }
    let sec = i64::from_ne_bytes(b[..8].try_into().unwrap_or([0; 8]));
    let nsec = i64::from_ne_bytes(b[8..16].try_into().unwrap_or([0; 8]));
    write_sec_nsec(out, sec, nsec, compact);
}

/// Two 32-bit fields: a 32-bit task's seconds and nanoseconds.
fn write_timespec32(out: &mut String, b: &[u8], compact: bool) {
    if b.len() < 8 {
        out.push_str("{}");
        return;
    }
    let sec = i32::from_ne_bytes(b[..4].try_into().unwrap_or([0; 4]));
    let nsec = i32::from_ne_bytes(b[4..8].try_into().unwrap_or([0; 4]));
    write_sec_nsec(out, sec.into(), nsec.into(), compact);
}

fn write_sec_nsec(out: &mut String, sec: i64, nsec: i64, compact: bool) {
    if compact {
        // perf's BTF printer without names: the non-zero members, each with a comma.
        out.push('{');
        for v in [sec, nsec].into_iter().filter(|&v| v != 0) {
            let _ = write!(out, "{v},");
        }
        out.push('}');
    } else {
        let _ = write!(out, "{{ .tv_sec: {sec}, .tv_nsec: {nsec} }}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(b: Beauty, raw: u64) -> String {
        let mut s = String::new();
        write_arg(&mut s, b, raw, None, Style::default());
        s
    }

    fn show_mem(b: Beauty, bytes: &[u8]) -> String {
        show_read(b, bytes, false)
    }

    fn show_read(b: Beauty, bytes: &[u8], cut: bool) -> String {
        let mut s = String::new();
        let aug = Augmented { bytes, cut };
        write_arg(&mut s, b, 0x1234, Some(Ok(aug)), Style::default());
        s
    }

    #[test]
    fn open_flags_like_perf() {
        let f = |v: i32| show(Beauty::OpenFlags, v as u64);
        assert_eq!(f(libc::O_RDONLY | libc::O_CLOEXEC), "RDONLY|CLOEXEC");
        assert_eq!(
            f(libc::O_CREAT | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_WRONLY),
            "CREAT|NOCTTY|NONBLOCK|WRONLY"
        );
        assert_eq!(f(libc::O_RDWR | libc::O_TRUNC), "RDWR|TRUNC");
        assert_eq!(f(libc::O_SYNC), "RDONLY|SYNC");
        assert_eq!(f(libc::O_DSYNC), "RDONLY|DSYNC");
        assert_eq!(f(0), "RDONLY");
    }

    #[test]
    fn modes_and_access() {
        assert_eq!(show(Beauty::Flags(&tables::MODE), 0o666), "IRUGO|IWUGO");
        // perf's order: the group names first, then what is left.
        assert_eq!(
            show(Beauty::Flags(&tables::MODE), 0o755),
            "IRUGO|IXUGO|IWUSR"
        );
        assert_eq!(show(Beauty::Flags(&tables::MODE), 0o40777), "IRWXUGO|IFDIR");
        assert_eq!(show(Beauty::Flags(&tables::ACCESS_MODE), 4), "R");
        assert_eq!(show(Beauty::Flags(&tables::ACCESS_MODE), 7), "R|W|X");
        assert_eq!(show(Beauty::Flags(&tables::ACCESS_MODE), 0), "0");
    }

    #[test]
    fn mmap_and_friends() {
        assert_eq!(show(Beauty::Flags(&tables::PROT), 3), "READ|WRITE");
        assert_eq!(show(Beauty::Flags(&tables::PROT), 5), "READ|EXEC");
        assert_eq!(
            show(Beauty::Flags(&tables::MMAP_FLAGS), 0x22),
            "PRIVATE|ANONYMOUS"
        );
        assert_eq!(
            show(Beauty::Flags(&tables::MMAP_FLAGS), 0x812),
            "PRIVATE|FIXED|DENYWRITE"
        );
        assert_eq!(
            show(Beauty::Flags(&tables::MMAP_FLAGS), 3),
            "SHARED_VALIDATE"
        );
        // MAP_32BIT is x86's alone: elsewhere its bit is left over, in hex.
        let low_2g = if cfg!(target_arch = "x86_64") {
            "PRIVATE|ANONYMOUS|32BIT"
        } else {
            "PRIVATE|ANONYMOUS|0x40"
        };
        assert_eq!(show(Beauty::Flags(&tables::MMAP_FLAGS), 0x62), low_2g);
        assert_eq!(show(Beauty::Enum(&tables::MADVISE), 4), "MADV_DONTNEED");
        assert_eq!(show(Beauty::Flags(&tables::MREMAP_FLAGS), 1), "MAYMOVE");
    }

    #[test]
    fn processes_and_signals() {
        let clone = (libc::CLONE_CHILD_CLEARTID | libc::CLONE_CHILD_SETTID | libc::SIGCHLD) as u64;
        assert_eq!(
            show(Beauty::Flags(&tables::CLONE_FLAGS), clone),
            "CHILD_CLEARTID|CHILD_SETTID|0x11"
        );
        assert_eq!(
            show(Beauty::Flags(&tables::MSG_FLAGS), 0x4040),
            "DONTWAIT|NOSIGNAL"
        );
        assert_eq!(show(Beauty::Enum(&tables::SHUTDOWN_HOW), 1), "WR");
        assert_eq!(show(Beauty::Enum(&tables::FADVISE), 0), "NORMAL");
        assert_eq!(show(Beauty::Enum(&tables::FADVISE), 2), "SEQUENTIAL");
        assert_eq!(
            show(Beauty::Flags(&tables::INOTIFY_MASK), 0x102),
            "MODIFY|CREATE"
        );
        assert_eq!(show(Beauty::Id, u64::from(u32::MAX)), "-1");
        assert_eq!(show(Beauty::Id, 1000), "1000");
        // CLONE_IO is an int with its top bit set: its name, not a sign-extended mask.
        assert_eq!(show(Beauty::Flags(&tables::CLONE_FLAGS), 0x8000_0000), "IO");
        assert_eq!(show(Beauty::Signal, 9), "KILL");
        assert_eq!(show(Beauty::Signal, 64), "SIGRT_32");
        assert_eq!(show(Beauty::Enum(&tables::SIGPROCMASK_HOW), 2), "SETMASK");
        assert_eq!(show(Beauty::Flags(&tables::WAIT_OPTIONS), 1), "NOHANG");
        assert_eq!(
            show(Beauty::Flags(&tables::WAIT_OPTIONS), 0x4000_0001),
            "NOHANG|ALL"
        );
        assert_eq!(show(Beauty::Enum(&tables::PRCTL_OPTION), 15), "SET_NAME");
        assert_eq!(show(Beauty::Enum(&tables::ARCH_PRCTL), 0x1002), "SET_FS");
        assert_eq!(show(Beauty::Enum(&tables::RLIMIT_RESOURCE), 3), "STACK");
    }

    #[test]
    fn files_and_io() {
        assert_eq!(show(Beauty::Dfd, (-100i64) as u64), "CWD");
        assert_eq!(show(Beauty::Dfd, 3), "3");
        assert_eq!(show(Beauty::Fd, u64::from(u32::MAX)), "-1");
        assert_eq!(
            show(Beauty::Enum(&tables::FCNTL_CMD), 1030),
            "DUPFD_CLOEXEC"
        );
        assert_eq!(show(Beauty::Enum(&tables::LSEEK_WHENCE), 0), "SET");
        assert_eq!(show(Beauty::Enum(&tables::IOCTL_CMD), 0x5413), "TIOCGWINSZ");
        assert_eq!(show(Beauty::Enum(&tables::IOCTL_CMD), 0x1234), "4660");
        assert_eq!(
            show(Beauty::Enum(&tables::IOCTL_CMD), 0x4004_9409),
            "FICLONE"
        );
        assert_eq!(
            show(Beauty::Enum(&tables::IOCTL_CMD), 0xc018_9436),
            "FIDEDUPERANGE"
        );
        assert_eq!(show(Beauty::Flags(&tables::GETRANDOM_FLAGS), 1), "NONBLOCK");
        assert_eq!(
            show(Beauty::Flags(&tables::STATX_MASK), 0x7ff),
            "TYPE|MODE|NLINK|UID|GID|ATIME|MTIME|CTIME|INO|SIZE|BLOCKS"
        );
        assert_eq!(
            show(Beauty::Flags(&tables::AT_FLAGS), 0x1100),
            "SYMLINK_NOFOLLOW|EMPTY_PATH"
        );
        assert_eq!(
            show(Beauty::Flags(&tables::PIPE_FLAGS), libc::O_CLOEXEC as u64),
            "CLOEXEC"
        );
        assert_eq!(show(Beauty::Enum(&tables::EPOLL_CTL_OP), 1), "ADD");
        assert_eq!(show(Beauty::Enum(&tables::CLOCK_ID), 1), "MONOTONIC");
        assert_eq!(show(Beauty::FutexOp, 129), "WAKE|PRIVATE_FLAG");
        assert_eq!(show(Beauty::FutexOp, 0), "WAIT");
    }

    #[test]
    fn sockets() {
        let t = (libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) as u64;
        assert_eq!(show(Beauty::SocketType, t), "STREAM|CLOEXEC|NONBLOCK");
        assert_eq!(show(Beauty::Enum(&tables::SOCKET_FAMILY), 2), "INET");
        assert_eq!(show(Beauty::Enum(&tables::IP_PROTOCOL), 6), "TCP");
        let mut sin = vec![2u8, 0, 0, 22, 127, 0, 0, 1];
        sin.extend_from_slice(&[0; 8]);
        assert_eq!(
            show_mem(Beauty::Sockaddr, &sin),
            "{ .family: PF_INET, port: 22, addr: 127.0.0.1 }"
        );
        let mut sun = vec![1u8, 0];
        sun.extend_from_slice(b"/run/x\0");
        assert_eq!(
            show_mem(Beauty::Sockaddr, &sun),
            "{ .family: PF_LOCAL, path: /run/x }"
        );
        let mut sin6 = vec![10u8, 0, 1, 187, 0, 0, 0, 0];
        sin6.extend_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
        assert_eq!(
            show_mem(Beauty::Sockaddr, &sin6),
            "{ .family: PF_INET6, port: 443, addr: ::1 }"
        );
    }

    #[test]
    fn prefixes_and_compact_structs() {
        let p = Style {
            prefix: true,
            ..Style::default()
        };
        let mut s = String::new();
        write_arg(&mut s, Beauty::OpenFlags, (libc::O_CLOEXEC) as u64, None, p);
        assert_eq!(s, "O_RDONLY|O_CLOEXEC");
        s.clear();
        write_arg(&mut s, Beauty::Flags(&tables::PROT), 3, None, p);
        assert_eq!(s, "PROT_READ|PROT_WRITE");
        s.clear();
        write_arg(&mut s, Beauty::Signal, 9, None, p);
        assert_eq!(s, "SIGKILL");
        s.clear();
        let mut ts = 1i64.to_ne_bytes().to_vec();
        ts.extend_from_slice(&0i64.to_ne_bytes());
        write_arg(
            &mut s,
            Beauty::Timespec,
            1,
            Some(Ok(Augmented {
                bytes: &ts,
                cut: false,
            })),
            Style {
                compact: true,
                ..Style::default()
            },
        );
        assert_eq!(s, "{1,}");
    }

    #[test]
    fn real_time_signals_are_named_as_strace_names_them() {
        assert_eq!(show(Beauty::Signal, 34), "SIGRT_2");
        assert_eq!(show(Beauty::Signal, 64), "SIGRT_32");
        assert_eq!(show(Beauty::Signal, 9), "KILL");
        assert_eq!(show(Beauty::Signal, 65), "65");
        assert_eq!(show(Beauty::Flags(&tables::FD_FLAGS), 1), "CLOEXEC");
        assert_eq!(show(Beauty::Enum(&tables::MADVISE), 4), "MADV_DONTNEED");
    }

    #[test]
    fn memory_values() {
        assert_eq!(show_mem(Beauty::Str, b"/etc/hostname"), "\"/etc/hostname\"");
        assert_eq!(show_mem(Beauty::Buffer, b"text\n"), "\"text\\n\"");
        assert_eq!(show_mem(Beauty::Argv, b"ls\0-l\0"), "[\"ls\", \"-l\"]");
        assert_eq!(
            show_mem(Beauty::Argv, b"true\0\0x\0"),
            "[\"true\", \"\", \"x\"]"
        );
        assert_eq!(show_mem(Beauty::Argv, b""), "[]");
        // What was left out is marked, as strace does.
        assert_eq!(
            show_read(Beauty::Str, b"/very/long", true),
            "\"/very/long\"..."
        );
        assert_eq!(show_read(Beauty::Buffer, b"abc", true), "\"abc\"...");
        assert_eq!(
            show_read(Beauty::Argv, b"true\0a1\0", true),
            "[\"true\", \"a1\", ...]"
        );
        assert_eq!(show_read(Beauty::Argv, b"", true), "[...]");
        let mut s = String::new();
        let two = Style {
            items: 2,
            ..Style::default()
        };
        let aug = Augmented {
            bytes: b"a\0b\0c\0",
            cut: false,
        };
        write_arg(&mut s, Beauty::Argv, 1, Some(Ok(aug)), two);
        assert_eq!(s, "[\"a\", \"b\", ...]");
        let mut ts = 1i64.to_ne_bytes().to_vec();
        ts.extend_from_slice(&0i64.to_ne_bytes());
        assert_eq!(
            show_mem(Beauty::Timespec, &ts),
            "{ .tv_sec: 1, .tv_nsec: 0 }"
        );
        // A failed read shows the pointer, never an empty string.
        let mut s = String::new();
        write_arg(&mut s, Beauty::Str, 0x7f00, Some(Err(())), Style::default());
        assert_eq!(s, "0x7f00");
        assert_eq!(show(Beauty::Str, 0x55), "0x55");
    }
}
