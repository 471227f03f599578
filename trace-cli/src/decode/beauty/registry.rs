//! Which beautifier each (syscall, argument) gets: first the table of specific cases,
//! then perf's heuristics on the argument's name and C type from tracefs.

use trace_common::augment::{
    AUG_ARGV, AUG_BUF, AUG_FIXED, AUG_KEEP_MAX, AUG_LENPTR, AUG_NONE, AUG_RETBUF, AUG_SLOTS,
    AUG_STR, AugPlan, AugSlot,
};

use super::{Beauty, shapes, tables as t};
use crate::decode::format::ArgSpec;

/// (syscalls, argument, beautifier): `*` as the syscall means any.
const SPECIFIC: &[(&[&str], &str, Beauty)] = &[
    (
        &["open", "openat", "openat2", "creat"],
        "flags",
        Beauty::OpenFlags,
    ),
    (
        &[
            "open",
            "openat",
            "creat",
            "mkdir",
            "mkdirat",
            "chmod",
            "fchmod",
            "fchmodat",
            "mknod",
            "mknodat",
            "fchmodat2",
        ],
        "mode",
        Beauty::Flags(&t::MODE),
    ),
    (
        &["access", "faccessat", "faccessat2"],
        "mode",
        Beauty::Flags(&t::ACCESS_MODE),
    ),
    (
        &["mmap", "mprotect", "pkey_mprotect"],
        "prot",
        Beauty::Flags(&t::PROT),
    ),
    (&["mmap"], "flags", Beauty::Flags(&t::MMAP_FLAGS)),
    (&["mremap"], "flags", Beauty::Flags(&t::MREMAP_FLAGS)),
    (&["flock"], "cmd", Beauty::Flags(&t::FLOCK_OP)),
    (
        &["set_mempolicy", "mbind"],
        "mode",
        Beauty::Enum(&t::MPOL_MODE),
    ),
    (
        &[
            "send", "sendto", "sendmsg", "sendmmsg", "recv", "recvfrom", "recvmsg", "recvmmsg",
        ],
        "flags",
        Beauty::Flags(&t::MSG_FLAGS),
    ),
    (&["shutdown"], "how", Beauty::Enum(&t::SHUTDOWN_HOW)),
    (
        &["fadvise64", "fadvise64_64", "arm_fadvise64_64"],
        "advice",
        Beauty::Enum(&t::FADVISE),
    ),
    (
        &["inotify_add_watch"],
        "mask",
        Beauty::Flags(&t::INOTIFY_MASK),
    ),
    (
        &["inotify_init1"],
        "flags",
        Beauty::Flags(&t::INOTIFY_INIT_FLAGS),
    ),
    (
        &["madvise", "process_madvise"],
        "behavior",
        Beauty::Enum(&t::MADVISE),
    ),
    (&["clone"], "clone_flags", Beauty::CloneFlags),
    (
        &["unshare"],
        "unshare_flags",
        Beauty::Flags(&t::CLONE_FLAGS),
    ),
    (
        &["rt_sigprocmask", "sigprocmask"],
        "how",
        Beauty::Enum(&t::SIGPROCMASK_HOW),
    ),
    (
        &["socket", "socketpair"],
        "family",
        Beauty::Enum(&t::SOCKET_FAMILY),
    ),
    (&["socket", "socketpair"], "type", Beauty::SocketType),
    (
        &["socket", "socketpair"],
        "protocol",
        Beauty::Enum(&t::IP_PROTOCOL),
    ),
    // Its optname depends on it (`context.rs`).
    (
        &["setsockopt", "getsockopt"],
        "level",
        Beauty::Enum(&t::SOCKOPT_LEVEL),
    ),
    (&["fcntl", "fcntl64"], "cmd", Beauty::Enum(&t::FCNTL_CMD)),
    (&["futex"], "op", Beauty::FutexOp),
    (
        &["lseek", "llseek"],
        "whence",
        Beauty::Enum(&t::LSEEK_WHENCE),
    ),
    (&["prctl"], "option", Beauty::Enum(&t::PRCTL_OPTION)),
    (&["ioctl"], "cmd", Beauty::Enum(&t::IOCTL_CMD)),
    (&["getrandom"], "flags", Beauty::Flags(&t::GETRANDOM_FLAGS)),
    (&["statx"], "mask", Beauty::Flags(&t::STATX_MASK)),
    (
        &[
            "statx",
            "newfstatat",
            "fstatat64",
            "unlinkat",
            "linkat",
            "fchownat",
            "utimensat",
            "faccessat2",
            "execveat",
            "name_to_handle_at",
            "open_tree",
            "fchmodat2",
            "fspick",
        ],
        "flags",
        Beauty::Flags(&t::AT_FLAGS),
    ),
    (
        &["newfstatat", "fstatat64", "fchownat", "faccessat2"],
        "flag",
        Beauty::Flags(&t::AT_FLAGS),
    ),
    (
        &["wait4", "waitid"],
        "options",
        Beauty::Flags(&t::WAIT_OPTIONS),
    ),
    (&["pipe2"], "flags", Beauty::Flags(&t::PIPE_FLAGS)),
    (&["eventfd2"], "flags", Beauty::Flags(&t::EVENTFD_FLAGS)),
    (
        &["epoll_create1"],
        "flags",
        Beauty::Flags(&t::EPOLL_CREATE_FLAGS),
    ),
    (&["signalfd4"], "flags", Beauty::Flags(&t::SIGNALFD_FLAGS)),
    (&["memfd_create"], "flags", Beauty::Flags(&t::MEMFD_FLAGS)),
    (
        &["pidfd_open"],
        "flags",
        Beauty::Flags(&t::PIDFD_OPEN_FLAGS),
    ),
    (&["renameat2"], "flags", Beauty::Flags(&t::RENAME_FLAGS)),
    (&["epoll_ctl"], "op", Beauty::Enum(&t::EPOLL_CTL_OP)),
    (&["arch_prctl"], "option", Beauty::Enum(&t::ARCH_PRCTL)),
    (&["arch_prctl"], "arg2", Beauty::Hex),
    (
        &["prlimit64", "getrlimit", "setrlimit", "ugetrlimit"],
        "resource",
        Beauty::Enum(&t::RLIMIT_RESOURCE),
    ),
    (
        &["clock_nanosleep"],
        "flags",
        Beauty::Flags(&t::CLOCK_NANOSLEEP_FLAGS),
    ),
    (&["execve", "execveat"], "argv", Beauty::Argv),
    // No plan: the kernel side sends it after a successful exec, with --envp.
    (&["execve", "execveat"], "envp", Beauty::Envp),
    (
        &["write", "pwrite64", "sendto", "send"],
        "buf",
        Beauty::Buffer,
    ),
    (
        &["write", "pwrite64", "sendto", "send"],
        "buff",
        Beauty::Buffer,
    ),
    (
        &[
            "mmap",
            "munmap",
            "mprotect",
            "madvise",
            "mremap",
            "brk",
            "msync",
            "mlock",
            "munlock",
            "pkey_mprotect",
        ],
        "addr",
        Beauty::Hex,
    ),
    (
        &[
            "mprotect",
            "mlock",
            "munlock",
            "madvise",
            "pkey_mprotect",
            "mincore",
        ],
        "start",
        Beauty::Hex,
    ),
    (&["brk"], "brk", Beauty::Hex),
    // Paths tracefs declares without `const`.
    (&["mount"], "dev_name", Beauty::Str),
    (&["mount"], "dir_name", Beauty::Str),
    (&["umount", "umount2"], "name", Beauty::Str),
    (&["pivot_root"], "new_root", Beauty::Str),
    (&["pivot_root"], "put_old", Beauty::Str),
    // A name, not a path, that /proc shows as the memfd's (`/memfd:NAME (deleted)`).
    (&["memfd_create"], "uname", Beauty::Str),
    (&["mremap"], "new_addr", Beauty::Hex),
    // What the call writes, read when it returns (strace shows these; perf 6.1 does not).
    (&["read", "pread64"], "buf", Beauty::ReadBuffer),
    (&["getrandom"], "ubuf", Beauty::ReadBuffer),
    (
        &["getcwd", "readlink", "readlinkat"],
        "buf",
        Beauty::ReadPath,
    ),
    (
        &[
            "newfstatat",
            "fstat",
            "newfstat",
            "stat",
            "newstat",
            "lstat",
            "newlstat",
        ],
        "statbuf",
        Beauty::Stat,
    ),
    (&["pipe", "pipe2"], "fildes", Beauty::FdPair),
    (&["socketpair"], "usockvec", Beauty::FdPair),
    (&["wait4"], "stat_addr", Beauty::WaitStatus),
    (
        &["getsockname", "getpeername"],
        "usockaddr",
        Beauty::SockaddrOut,
    ),
    (
        &["accept", "accept4"],
        "upeer_sockaddr",
        Beauty::SockaddrOut,
    ),
    (&["accept4"], "flags", Beauty::Flags(&t::SOCKET_TYPE_FLAGS)),
    (&["recvfrom"], "addr", Beauty::SockaddrOut),
    (&["recvfrom"], "ubuf", Beauty::ReadBuffer),
    (&["prlimit64"], "new_rlim", Beauty::Rlimit),
    (&["prlimit64"], "old_rlim", Beauty::RlimitOut),
    (&["setrlimit"], "rlim", Beauty::Rlimit),
    (&["getrlimit"], "rlim", Beauty::RlimitOut),
    (&["uname", "newuname"], "name", Beauty::Utsname),
    (&["statx"], "buffer", Beauty::Statx),
    (&["rt_sigaction"], "act", Beauty::SigAction),
    (&["rt_sigaction"], "oact", Beauty::SigActionOut),
    (&["rt_sigprocmask"], "nset", Beauty::SigSet),
    (&["rt_sigreturn"], "mask", Beauty::SigSet),
    (&["rt_sigprocmask"], "oset", Beauty::SigSetOut),
    (&["getdents64"], "dirent", Beauty::Dirents),
    (&["poll", "ppoll"], "ufds", Beauty::PollFds),
    // A name for PR_SET_NAME/PR_GET_NAME (read as a string); the other options show it
    // otherwise (`context.rs`).
    (&["prctl"], "arg2", Beauty::Str),
    (
        &["timer_settime", "timerfd_settime"],
        "new_setting",
        Beauty::Struct(&shapes::ITIMERSPEC),
    ),
    (
        &["timerfd_settime"],
        "utmr",
        Beauty::Struct(&shapes::ITIMERSPEC),
    ),
    (
        &["timer_settime"],
        "old_setting",
        Beauty::StructOut(&shapes::ITIMERSPEC),
    ),
    (
        &["timerfd_settime", "timerfd_gettime"],
        "otmr",
        Beauty::StructOut(&shapes::ITIMERSPEC),
    ),
    (
        &["timer_gettime"],
        "setting",
        Beauty::StructOut(&shapes::ITIMERSPEC),
    ),
    (&["setitimer"], "value", Beauty::Struct(&shapes::ITIMERVAL)),
    (
        &["setitimer"],
        "ovalue",
        Beauty::StructOut(&shapes::ITIMERVAL),
    ),
    (
        &["getitimer"],
        "value",
        Beauty::StructOut(&shapes::ITIMERVAL),
    ),
    (&["sysinfo"], "info", Beauty::StructOut(&shapes::SYSINFO)),
    (
        &["statfs", "fstatfs"],
        "buf",
        Beauty::StructOut(&shapes::STATFS),
    ),
    (&["clone3"], "uargs", Beauty::Struct(&shapes::CLONE_ARGS)),
    (&["timerfd_create"], "clockid", Beauty::Enum(&t::CLOCK_ID)),
    (
        &["timerfd_create"],
        "flags",
        Beauty::Flags(&t::TIMERFD_FLAGS),
    ),
    (
        &["timerfd_settime"],
        "flags",
        Beauty::Flags(&t::TIMERFD_SETTIME_FLAGS),
    ),
    (
        &["timer_settime"],
        "flags",
        Beauty::Flags(&t::TIMER_SETTIME_FLAGS),
    ),
    (
        &["setitimer", "getitimer"],
        "which",
        Beauty::Enum(&t::ITIMER_WHICH),
    ),
    // perf: the file offset in hex, the ioctl argument as the pointer it mostly is.
    (&["mmap"], "off", Beauty::Hex),
    (&["mmap2"], "pgoff", Beauty::Hex),
    (&["ioctl"], "arg", Beauty::Hex),
];

const PATH_NAMES: &[&str] = &[
    "filename",
    "pathname",
    "path",
    "oldname",
    "newname",
    "oldpath",
    "newpath",
    "name",
    "specialfile",
    "library",
    "dev_name",
    "dir_name",
    "type",
    "linkpath",
    "target",
    "old",
    "new",
];
const CLOCK_NAMES: &[&str] = &["which_clock", "clockid", "clk_id", "which"];
const SIGNAL_SYSCALLS: &[&str] = &[
    "kill",
    "tkill",
    "tgkill",
    "rt_sigaction",
    "rt_sigqueueinfo",
    "rt_tgsigqueueinfo",
    "pidfd_send_signal",
    "sigaction",
    "signal",
];

/// Fd arguments whose names do not end in `fd` (pointers to fds aside: pipe's `fildes`).
const FD_NAMES: &[&str] = &["fildes", "fd_in", "fd_out", "fdin", "fdout"];

pub fn beauty_for(syscall: &str, arg: &ArgSpec) -> Beauty {
    let name = arg.name.as_str();
    if let Some((_, _, b)) = SPECIFIC
        .iter()
        .find(|(calls, a, _)| *a == name && (calls.contains(&syscall) || calls.contains(&"*")))
    {
        return *b;
    }
    let ty = arg.ty.trim();
    let pointer = ty.contains('*');
    if pointer && ty.contains("char") && ty.starts_with("const") && PATH_NAMES.contains(&name) {
        return Beauty::Str;
    }
    if pointer && ty.contains("struct sockaddr") {
        return Beauty::Sockaddr;
    }
    if pointer && ty.contains("timespec") && ty.starts_with("const") {
        return Beauty::Timespec;
    }
    if pointer {
        return Beauty::Hex;
    }
    if matches!(name, "dfd" | "olddfd" | "newdfd" | "fromfd" | "todfd") {
        return Beauty::Dfd;
    }
    // perf's rule (a name ending in fd), and the fds it leaves as numbers where strace
    // names them: dup's `fildes`, copy_file_range's and splice's `fd_in`/`fd_out`,
    // tee's `fdin`/`fdout`.
    if name == "fd"
        || name.ends_with("_fd")
        || (name.ends_with("fd") && ty.contains("int"))
        || FD_NAMES.contains(&name)
    {
        return Beauty::Fd;
    }
    if name == "sig" && SIGNAL_SYSCALLS.contains(&syscall) {
        return Beauty::Signal;
    }
    if CLOCK_NAMES.contains(&name) && syscall.starts_with("clock_")
        || syscall.starts_with("timer_create") && name == "which_clock"
    {
        return Beauty::Enum(&t::CLOCK_ID);
    }
    if ty == "umode_t" {
        return Beauty::Flags(&t::MODE);
    }
    if ty == "pid_t" {
        return Beauty::Pid;
    }
    if matches!(ty, "uid_t" | "gid_t" | "old_uid_t" | "old_gid_t") {
        return Beauty::Id;
    }
    Beauty::Raw(arg.kind)
}

/// The bytes of poll's fds read: 32 `struct pollfd`s, the rest marked `...`.
const POLLFDS_MAX: u16 = 32 * 8;

/// The length argument of a buffer or sockaddr argument, when the call has one.
fn length_arg(specs: &[ArgSpec], i: usize) -> Option<usize> {
    const LEN_NAMES: &[&str] = &["count", "len", "addrlen", "size"];
    specs
        .iter()
        .enumerate()
        .skip(i + 1)
        .find(|(_, a)| LEN_NAMES.contains(&a.name.as_str()) && !a.ty.contains('*'))
        .map(|(j, _)| j)
}

/// The argument pointing to an output sockaddr's length (value-result).
fn length_ptr_arg(specs: &[ArgSpec], i: usize) -> Option<usize> {
    const LEN_NAMES: &[&str] = &["usockaddr_len", "upeer_addrlen", "addr_len"];
    specs
        .iter()
        .enumerate()
        .skip(i + 1)
        .find(|(_, a)| LEN_NAMES.contains(&a.name.as_str()) && a.ty.contains('*'))
        .map(|(j, _)| j)
}

/// What the kernel side copies for this syscall, when it returns: at most two
/// arguments, in order. (An execve that succeeds has no old memory left to read: the
/// kernel side sends what the new program received instead.)
pub fn plan_for(_syscall: &str, specs: &[ArgSpec], beauties: &[Beauty]) -> AugPlan {
    let mut plan = AugPlan::default();
    let mut n = 0;
    for (i, b) in beauties.iter().enumerate() {
        if n == AUG_SLOTS {
            break;
        }
        let slot = match b {
            Beauty::Str => Some((AUG_STR, 0, 256)),
            Beauty::Argv => Some((AUG_ARGV, 0, 256)),
            Beauty::Timespec => Some((AUG_FIXED, 0, 16)),
            Beauty::Timespec32 => Some((AUG_FIXED, 0, 8)),
            Beauty::Buffer => length_arg(specs, i).map(|l| (AUG_BUF, l, 32)),
            Beauty::ReadBuffer => Some((AUG_RETBUF, 0, 32)),
            Beauty::ReadPath => Some((AUG_RETBUF, 0, AUG_KEEP_MAX as u16)),
            Beauty::Dirents => Some((AUG_RETBUF, 0, AUG_KEEP_MAX as u16)),
            Beauty::Stat => Some((AUG_FIXED, 0, std::mem::size_of::<libc::stat>() as u16)),
            Beauty::FdPair => Some((AUG_FIXED, 0, 8)),
            Beauty::WaitStatus => Some((AUG_FIXED, 0, 4)),
            Beauty::SigSet | Beauty::SigSetOut => Some((AUG_FIXED, 0, 8)),
            Beauty::SigAction | Beauty::SigActionOut => Some((AUG_FIXED, 0, 32)),
            Beauty::SockaddrOut => length_ptr_arg(specs, i).map(|l| (AUG_LENPTR, l, 128)),
            Beauty::Rlimit | Beauty::RlimitOut => Some((AUG_FIXED, 0, 16)),
            Beauty::Utsname => Some((AUG_FIXED, 0, 390)),
            Beauty::Statx => Some((AUG_FIXED, 0, 256)),
            Beauty::Struct(shape) | Beauty::StructOut(shape) => Some((AUG_FIXED, 0, shape.size)),
            Beauty::Sockaddr => length_arg(specs, i).map(|l| (AUG_BUF, l, 128)),
            Beauty::PollFds | Beauty::PollFdsAsked => specs
                .iter()
                .position(|a| a.name == "nfds")
                .map(|l| (AUG_BUF, l, POLLFDS_MAX)),
            _ => None,
        };
        if let Some((kind, len_arg, max)) = slot {
            // poll's nfds counts 8-byte struct pollfds.
            let len_shift = if matches!(b, Beauty::PollFds) { 3 } else { 0 };
            plan.slots[n] = AugSlot {
                kind,
                arg: i as u8,
                len_arg: len_arg as u8,
                len_shift,
                max,
                _pad: 0,
            };
            n += 1;
        }
    }
    for s in plan.slots.iter_mut().skip(n) {
        s.kind = AUG_NONE;
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::format::ArgKind;

    fn spec(name: &str, ty: &str) -> ArgSpec {
        ArgSpec {
            name: name.into(),
            kind: crate::decode::format::kind_of(ty),
            ty: ty.into(),
        }
    }

    #[test]
    fn specific_and_heuristic_choices() {
        assert_eq!(
            beauty_for("openat", &spec("flags", "int")),
            Beauty::OpenFlags
        );
        assert_eq!(beauty_for("openat", &spec("dfd", "int")), Beauty::Dfd);
        assert_eq!(
            beauty_for("openat", &spec("filename", "const char *")),
            Beauty::Str
        );
        assert_eq!(beauty_for("read", &spec("fd", "unsigned int")), Beauty::Fd);
        for (call, arg) in [
            ("dup", "fildes"),
            ("copy_file_range", "fd_in"),
            ("copy_file_range", "fd_out"),
            ("splice", "fd_in"),
            ("tee", "fdin"),
            ("tee", "fdout"),
        ] {
            assert_eq!(
                beauty_for(call, &spec(arg, "int")),
                Beauty::Fd,
                "{call}.{arg}"
            );
        }
        assert_eq!(beauty_for("pipe", &spec("fildes", "int *")), Beauty::FdPair);
        assert_eq!(
            beauty_for("read", &spec("buf", "char *")),
            Beauty::ReadBuffer
        );
        assert_eq!(
            beauty_for("readv", &spec("vec", "const struct iovec *")),
            Beauty::Hex
        );
        assert_eq!(beauty_for("kill", &spec("sig", "int")), Beauty::Signal);
        assert_eq!(
            beauty_for("connect", &spec("uservaddr", "struct sockaddr *")),
            Beauty::Sockaddr
        );
        assert_eq!(
            beauty_for("clock_nanosleep", &spec("which_clock", "clockid_t")),
            Beauty::Enum(&t::CLOCK_ID)
        );
        assert_eq!(
            beauty_for(
                "clock_nanosleep",
                &spec("rqtp", "const struct __kernel_timespec *")
            ),
            Beauty::Timespec
        );
        assert_eq!(
            beauty_for(
                "clock_nanosleep",
                &spec("rmtp", "struct __kernel_timespec *")
            ),
            Beauty::Hex
        );
        assert_eq!(
            beauty_for("fchmod", &spec("mode", "umode_t")),
            Beauty::Flags(&t::MODE)
        );
        assert_eq!(
            beauty_for("read", &spec("count", "size_t")),
            Beauty::Raw(ArgKind::U64)
        );
    }

    /// An argument of `syscall` as the line shows it, chosen as for a traced call.
    fn shown(syscall: &str, arg: &str, ty: &str, raw: u64, prefix: bool) -> String {
        let mut out = String::new();
        let style = super::super::Style {
            prefix,
            ..Default::default()
        };
        super::super::write_arg(
            &mut out,
            beauty_for(syscall, &spec(arg, ty)),
            raw,
            None,
            style,
        );
        out
    }

    /// The calls that make a new fd name their flags as pipe2 and inotify_init1 do,
    /// with the prefix of their own header under show_prefix.
    #[test]
    fn new_fd_calls_name_their_flags() {
        let cloexec = libc::O_CLOEXEC as u64;
        let nonblock = libc::O_NONBLOCK as u64;
        let cases: &[(&str, &str, &str, u64, &str, &str)] = &[
            (
                "eventfd2",
                "flags",
                "int",
                cloexec,
                "CLOEXEC",
                "EFD_CLOEXEC",
            ),
            (
                "eventfd2",
                "flags",
                "int",
                cloexec | nonblock | 1,
                "CLOEXEC|NONBLOCK|SEMAPHORE",
                "EFD_CLOEXEC|EFD_NONBLOCK|EFD_SEMAPHORE",
            ),
            (
                "epoll_create1",
                "flags",
                "int",
                cloexec,
                "CLOEXEC",
                "EPOLL_CLOEXEC",
            ),
            (
                "signalfd4",
                "flags",
                "int",
                cloexec | nonblock,
                "CLOEXEC|NONBLOCK",
                "SFD_CLOEXEC|SFD_NONBLOCK",
            ),
            (
                "timerfd_create",
                "flags",
                "int",
                cloexec | nonblock,
                "CLOEXEC|NONBLOCK",
                "TFD_CLOEXEC|TFD_NONBLOCK",
            ),
            (
                "timerfd_create",
                "clockid",
                "int",
                1,
                "MONOTONIC",
                "CLOCK_MONOTONIC",
            ),
            (
                "timerfd_settime",
                "flags",
                "int",
                3,
                "TIMER_ABSTIME|TIMER_CANCEL_ON_SET",
                "TFD_TIMER_ABSTIME|TFD_TIMER_CANCEL_ON_SET",
            ),
            (
                "memfd_create",
                "flags",
                "unsigned int",
                0x1f,
                "CLOEXEC|ALLOW_SEALING|HUGETLB|NOEXEC_SEAL|EXEC",
                "MFD_CLOEXEC|MFD_ALLOW_SEALING|MFD_HUGETLB|MFD_NOEXEC_SEAL|MFD_EXEC",
            ),
            // A huge page size (MFD_HUGE_2MB) has no flag name: its bits stay in hex.
            (
                "memfd_create",
                "flags",
                "unsigned int",
                4 | 21 << 26,
                "HUGETLB|0x54000000",
                "MFD_HUGETLB|0x54000000",
            ),
            (
                "pidfd_open",
                "flags",
                "unsigned int",
                nonblock,
                "NONBLOCK",
                "PIDFD_NONBLOCK",
            ),
        ];
        for &(call, arg, ty, raw, plain, prefixed) in cases {
            assert_eq!(
                shown(call, arg, ty, raw, false),
                plain,
                "{call} {arg} {raw:#x}"
            );
            assert_eq!(
                shown(call, arg, ty, raw, true),
                prefixed,
                "{call} {arg} {raw:#x}"
            );
        }
    }

    #[test]
    fn plans_copy_what_is_shown() {
        let specs = [
            spec("fd", "unsigned int"),
            spec("buf", "const char *"),
            spec("count", "size_t"),
        ];
        let b: Vec<Beauty> = specs.iter().map(|s| beauty_for("write", s)).collect();
        let p = plan_for("write", &specs, &b);
        assert_eq!(
            p.slots[0],
            AugSlot {
                kind: AUG_BUF,
                arg: 1,
                len_arg: 2,
                len_shift: 0,
                max: 32,
                _pad: 0
            }
        );
        assert_eq!(p.slots[1].kind, AUG_NONE);

        let specs = [
            spec("oldname", "const char *"),
            spec("newname", "const char *"),
        ];
        let b: Vec<Beauty> = specs.iter().map(|s| beauty_for("rename", s)).collect();
        let p = plan_for("rename", &specs, &b);
        assert_eq!(
            (
                p.slots[0].kind,
                p.slots[0].arg,
                p.slots[1].kind,
                p.slots[1].arg
            ),
            (AUG_STR, 0, AUG_STR, 1)
        );

        let specs = [
            spec("filename", "const char *"),
            spec("argv", "const char *const *"),
            spec("envp", "const char *const *"),
        ];
        let b: Vec<Beauty> = specs.iter().map(|s| beauty_for("execve", s)).collect();
        let p = plan_for("execve", &specs, &b);
        assert_eq!((p.slots[0].kind, p.slots[1].kind), (AUG_STR, AUG_ARGV));
    }
}
