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
    /// A new fd of something without a path rtrace can name (a socket, an eventfd…):
    /// what was known of its number is gone.
    NewFd,
    /// pipe, pipe2, socketpair: two new fds written to the caller's memory.
    NewFdPair,
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

/// The calls whose effect is theirs alone (the open and new-fd calls are below).
const BY_NAME: &[(&str, FdEffect)] = &[
    ("close", FdEffect::Close),
    ("close_range", FdEffect::CloseRange),
    ("pipe", FdEffect::NewFdPair),
    ("pipe2", FdEffect::NewFdPair),
    ("socketpair", FdEffect::NewFdPair),
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
];

const OPENS: &[&str] = &["open", "openat", "openat2", "creat"];

/// Calls that return a new fd of something without a path rtrace can name (a socket, an
/// eventfd, a pidfd…): the number is reused, so what rtrace knew of it is gone.
const NEW_FDS: &[&str] = &[
    "socket",
    "accept",
    "accept4",
    "eventfd",
    "eventfd2",
    "epoll_create",
    "epoll_create1",
    "signalfd",
    "signalfd4",
    "timerfd_create",
    "inotify_init",
    "inotify_init1",
    "fanotify_init",
    "memfd_create",
    "memfd_secret",
    "pidfd_open",
    "pidfd_getfd",
    "userfaultfd",
    "perf_event_open",
    "io_uring_setup",
    "open_by_handle_at",
    "open_tree",
    "fsopen",
    "fsmount",
    "fspick",
    "mq_open",
    "landlock_create_ruleset",
];

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
        if NEW_FDS.contains(&name) {
            return FdEffect::NewFd;
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
        assert_eq!(effect("socket"), FdEffect::NewFd);
        assert_eq!(effect("pipe2"), FdEffect::NewFdPair);
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
        for name in names.chain(NEW_FDS.iter().copied()) {
            assert!(
                syscall_table::number(name).is_some()
                    || syscall_table::compat_number(name).is_some(),
                "{name}"
            );
        }
    }
}
