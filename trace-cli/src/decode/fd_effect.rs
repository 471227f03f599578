//! What a syscall does to its process's fds and working directory, worked out once
//! per syscall when its description is built (as perf's syscall table marks the calls
//! that open an fd), so that following a record is a match, not a search by name.

use super::beauty::Beauty;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdEffect {
    /// Nothing the fd table follows.
    None,
    /// open, openat, openat2, creat: a new fd for the path given, which is taken from
    /// the directory fd (argument `dfd`) when it is relative; `flags`: the argument
    /// holding the open flags (O_CLOEXEC).
    Open {
        dfd: Option<usize>,
        flags: Option<usize>,
    },
    /// A new fd (a socket, an eventfd, a memfd…): what /proc calls it, and whether it is
    /// closed on exec.
    NewFd(NewFd),
    /// pipe, pipe2, socketpair: two new fds written to the caller's memory.
    NewFdPair(NewFd),
    /// signalfd, signalfd4: a new signalfd when the first argument is -1; else the fd
    /// given, which keeps what it was, with a new mask.
    Signalfd(OnExec),
    Close,
    CloseRange,
    /// dup, dup2: the new fd refers to what the first argument does.
    Dup,
    /// dup3: as dup, closed on exec when its flags say so.
    Dup3,
    /// fcntl: dups (F_DUPFD, F_DUPFD_CLOEXEC) and the close-on-exec flag (F_SETFD).
    Fcntl,
    /// ioctl: the close-on-exec flag (FIOCLEX, FIONCLEX).
    Ioctl,
    /// execve, execveat: the close-on-exec fds are closed.
    Exec,
    Chdir,
    Fchdir,
    /// clone: a new process or thread, as its flags (the first argument) say.
    Clone,
    /// clone3, fork, vfork: a new process (clone3's flags are in a struct rtrace does
    /// not read).
    Fork,
    /// The end of the process.
    ExitGroup,
}

/// What a new fd is, as /proc names it (`readlink /proc/PID/fd/N`), which is what perf
/// and `strace -y` show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdName {
    /// Nothing rtrace can know without asking /proc, where the number may already be
    /// another file's by the time the record is read.
    Unknown,
    /// The same for every fd of its call: an anonymous inode's name.
    Fixed(&'static str),
    /// `KIND:[INODE]` (`pipe:[4711]`), with the inode number the kernel side read at
    /// the call's exit (`record::REC_FD_INODES`).
    ByInode(&'static str),
    /// memfd_create: `/memfd:NAME (deleted)`, NAME its first argument.
    Memfd,
}

/// Whether a new fd is closed on exec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnExec {
    Never,
    Always,
    /// When argument `.0` has the bit `.1`.
    Flag(usize, u64),
}

impl OnExec {
    pub fn of(self, args: &[u64; 6]) -> bool {
        match self {
            OnExec::Never => false,
            OnExec::Always => true,
            OnExec::Flag(arg, bit) => args[arg] & bit != 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewFd {
    pub name: FdName,
    pub on_exec: OnExec,
}

/// The calls whose effect is theirs alone (the open and new-fd calls are below).
const BY_NAME: &[(&str, FdEffect)] = &[
    ("close", FdEffect::Close),
    ("close_range", FdEffect::CloseRange),
    ("dup", FdEffect::Dup),
    ("dup2", FdEffect::Dup),
    ("dup3", FdEffect::Dup3),
    ("fcntl", FdEffect::Fcntl),
    ("ioctl", FdEffect::Ioctl),
    ("execve", FdEffect::Exec),
    ("execveat", FdEffect::Exec),
    ("chdir", FdEffect::Chdir),
    ("fchdir", FdEffect::Fchdir),
    ("clone", FdEffect::Clone),
    ("clone3", FdEffect::Fork),
    ("fork", FdEffect::Fork),
    ("vfork", FdEffect::Fork),
    ("exit_group", FdEffect::ExitGroup),
    ("signalfd", FdEffect::Signalfd(OnExec::Never)),
    ("signalfd4", FdEffect::Signalfd(OnExec::Flag(3, O_CLOEXEC))),
];

const OPENS: &[&str] = &["open", "openat", "openat2", "creat"];

/// O_CLOEXEC, which SOCK_CLOEXEC, EFD_CLOEXEC, EPOLL_CLOEXEC, TFD_CLOEXEC, IN_CLOEXEC
/// and SFD_CLOEXEC equal, on x86_64, arm64 and their 32-bit modes alike.
const O_CLOEXEC: u64 = 0o2000000;

/// The anonymous inodes' names: the same from 6.1 to today (pidfds moved to a file
/// system of their own in 6.9, which kept the name).
const EVENTFD: FdName = FdName::Fixed("anon_inode:[eventfd]");
const EVENTPOLL: FdName = FdName::Fixed("anon_inode:[eventpoll]");
const INOTIFY: FdName = FdName::Fixed("anon_inode:inotify");
const SOCKET: FdName = FdName::ByInode("socket");
const PIPE: FdName = FdName::ByInode("pipe");

/// The signalfd's name, for a new one.
pub const SIGNALFD: FdName = FdName::Fixed("anon_inode:[signalfd]");

/// Calls that return one new fd: what it is, and where its close-on-exec flag is. The
/// flag matters only for a named fd (an exec must not leave its name behind).
const NEW_FDS: &[(&str, FdName, OnExec)] = &[
    ("socket", SOCKET, OnExec::Flag(1, O_CLOEXEC)),
    ("accept", SOCKET, OnExec::Never),
    ("accept4", SOCKET, OnExec::Flag(3, O_CLOEXEC)),
    ("eventfd", EVENTFD, OnExec::Never),
    ("eventfd2", EVENTFD, OnExec::Flag(1, O_CLOEXEC)),
    ("epoll_create", EVENTPOLL, OnExec::Never),
    ("epoll_create1", EVENTPOLL, OnExec::Flag(0, O_CLOEXEC)),
    (
        "timerfd_create",
        FdName::Fixed("anon_inode:[timerfd]"),
        OnExec::Flag(1, O_CLOEXEC),
    ),
    ("inotify_init", INOTIFY, OnExec::Never),
    ("inotify_init1", INOTIFY, OnExec::Flag(0, O_CLOEXEC)),
    // FAN_CLOEXEC is 1.
    (
        "fanotify_init",
        FdName::Fixed("anon_inode:[fanotify]"),
        OnExec::Flag(0, 1),
    ),
    (
        "userfaultfd",
        FdName::Fixed("anon_inode:[userfaultfd]"),
        OnExec::Flag(0, O_CLOEXEC),
    ),
    // PERF_FLAG_FD_CLOEXEC is 8, in the fifth argument.
    (
        "perf_event_open",
        FdName::Fixed("anon_inode:[perf_event]"),
        OnExec::Flag(4, 8),
    ),
    (
        "io_uring_setup",
        FdName::Fixed("anon_inode:[io_uring]"),
        OnExec::Always,
    ),
    (
        "pidfd_open",
        FdName::Fixed("anon_inode:[pidfd]"),
        OnExec::Always,
    ),
    // MFD_CLOEXEC is 1.
    ("memfd_create", FdName::Memfd, OnExec::Flag(1, 1)),
    // Not named (yet): a memfd_secret's name differs between kernels, pidfd_getfd's
    // and open_by_handle_at's fd is another file's, and the rest are not followed.
    ("memfd_secret", FdName::Unknown, OnExec::Never),
    ("pidfd_getfd", FdName::Unknown, OnExec::Never),
    ("open_by_handle_at", FdName::Unknown, OnExec::Never),
    ("open_tree", FdName::Unknown, OnExec::Never),
    ("fsopen", FdName::Unknown, OnExec::Never),
    ("fsmount", FdName::Unknown, OnExec::Never),
    ("fspick", FdName::Unknown, OnExec::Never),
    ("mq_open", FdName::Unknown, OnExec::Never),
    ("landlock_create_ruleset", FdName::Unknown, OnExec::Never),
];

/// Calls that write two new fds to the caller's memory.
const NEW_FD_PAIRS: &[(&str, FdName, OnExec)] = &[
    ("pipe", PIPE, OnExec::Never),
    ("pipe2", PIPE, OnExec::Flag(1, O_CLOEXEC)),
    ("socketpair", SOCKET, OnExec::Flag(1, O_CLOEXEC)),
];

/// Whether the call resolves a path that the fd table keeps canonical (an open's new
/// fd, chdir's directory): the kernel side then says whether the task sees the file
/// system as rtrace does (`CLASS_PATH_VIEW`).
pub fn resolves_paths(name: &str) -> bool {
    OPENS.contains(&name)
        || BY_NAME
            .iter()
            .any(|(n, e)| *n == name && *e == FdEffect::Chdir)
}

/// The calls whose new fds are named by inode, and so need it from the kernel side.
pub fn named_by_inode() -> impl Iterator<Item = (&'static str, bool)> {
    let single = NEW_FDS.iter().map(|r| (r, false));
    let pairs = NEW_FD_PAIRS.iter().map(|r| (r, true));
    single
        .chain(pairs)
        .filter(|((_, name, _), _)| matches!(name, FdName::ByInode(_)))
        .map(|((call, _, _), pair)| (*call, pair))
}

impl FdEffect {
    /// The effect of the syscall `name`, whose arguments are shown as `beauties`.
    pub fn of(name: &str, beauties: &[Beauty]) -> Self {
        if OPENS.contains(&name) {
            let at = |want: Beauty| beauties.iter().position(|b| *b == want);
            return FdEffect::Open {
                dfd: at(Beauty::Dfd),
                flags: at(Beauty::OpenFlags),
            };
        }
        let new_fd = |table: &[(&str, FdName, OnExec)]| {
            table
                .iter()
                .find(|(n, _, _)| *n == name)
                .map(|&(_, name, on_exec)| NewFd { name, on_exec })
        };
        if let Some(fd) = new_fd(NEW_FDS) {
            return FdEffect::NewFd(fd);
        }
        if let Some(fd) = new_fd(NEW_FD_PAIRS) {
            return FdEffect::NewFdPair(fd);
        }
        BY_NAME
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(FdEffect::None, |(_, e)| *e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Catalog, FormatSource, syscall_table};

    /// openat's and close's formats, as tracefs gives them; none for the others.
    struct Formats;
    impl FormatSource for Formats {
        fn sys_enter_format(&mut self, event: &str) -> Option<String> {
            let field = |ty: &str, name: &str, at: u32| {
                format!("\tfield:{ty} {name};\toffset:{at};\tsize:8;\tsigned:0;\n")
            };
            match event {
                "openat" => Some(
                    field("int", "dfd", 16)
                        + &field("const char *", "filename", 24)
                        + &field("int", "flags", 32)
                        + &field("umode_t", "mode", 40),
                ),
                "close" => Some(field("unsigned int", "fd", 16)),
                _ => None,
            }
        }
    }

    #[test]
    fn each_syscall_of_this_arch_has_its_effect() {
        let mut c = Catalog::new(Formats);
        let mut effect = |name| c.get(syscall_table::number(name).unwrap()).fd_effect;
        assert_eq!(
            effect("openat"),
            FdEffect::Open {
                dfd: Some(0),
                flags: Some(2)
            }
        );
        assert_eq!(effect("close"), FdEffect::Close);
        assert_eq!(effect("dup3"), FdEffect::Dup3);
        assert_eq!(
            effect("socket"),
            FdEffect::NewFd(NewFd {
                name: FdName::ByInode("socket"),
                on_exec: OnExec::Flag(1, O_CLOEXEC)
            })
        );
        assert_eq!(
            effect("pipe2"),
            FdEffect::NewFdPair(NewFd {
                name: FdName::ByInode("pipe"),
                on_exec: OnExec::Flag(1, O_CLOEXEC)
            })
        );
        assert_eq!(effect("execve"), FdEffect::Exec);
        assert_eq!(effect("clone"), FdEffect::Clone);
        assert_eq!(effect("clone3"), FdEffect::Fork);
        assert_eq!(effect("exit_group"), FdEffect::ExitGroup);
        assert_eq!(effect("read"), FdEffect::None);
        // Without a format, an open still opens; where its path starts is not known.
        assert_eq!(
            FdEffect::of("openat2", &[]),
            FdEffect::Open {
                dfd: None,
                flags: None
            }
        );
    }

    #[test]
    fn every_name_in_the_tables_is_a_syscall_somewhere() {
        // A misspelt name would silently never match.
        let names = BY_NAME.iter().map(|(n, _)| *n).chain(OPENS.iter().copied());
        let new_fds = NEW_FDS.iter().chain(NEW_FD_PAIRS).map(|(n, _, _)| *n);
        for name in names.chain(new_fds) {
            assert!(
                syscall_table::number(name).is_some()
                    || syscall_table::compat_number(name).is_some(),
                "{name}"
            );
        }
    }
}
