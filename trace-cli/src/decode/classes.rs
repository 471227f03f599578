//! Each syscall's class bits for the kernel side (`trace_common::maps::CLASS_*`): which
//! calls `-e` selects, which may block, and the few the programs treat specially.

use trace_common::maps::{
    CLASS_BLOCKING, CLASS_EXEC, CLASS_EXIT, CLASS_FD_INODE_PAIR_ARG0, CLASS_FD_INODE_PAIR_ARG3,
    CLASS_FD_INODE_RET, CLASS_FORK, CLASS_PATH_VIEW, CLASS_SELECTED, CLASS_VFORK,
    CLASS_VFORK_IN_ARG, CLASS_VFORK_IN_STRUCT, SYSCALL_INDEXES,
};

use crate::decode::{fd_effect, syscall_table};

/// Calls that may block for long: their entry is shown as unfinished (`wait4(...) ...`)
/// when other lines come before they return, as perf shows them.
const BLOCKING: &[&str] = &[
    "wait4",
    "waitid",
    "waitpid",
    "poll",
    "ppoll",
    "select",
    "_newselect",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "futex",
    "futex_waitv",
    "nanosleep",
    "clock_nanosleep",
    "pause",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "accept",
    "accept4",
    "connect",
    "msgrcv",
    "semop",
    "semtimedop",
    "flock",
    "mq_timedreceive",
    "io_getevents",
    "io_uring_enter",
    "sigsuspend",
];

const NAMED: &[(&[&str], u32)] = &[
    (&["execve", "execveat"], CLASS_EXEC),
    (&["exit", "exit_group"], CLASS_EXIT),
    (&["clone", "clone3", "fork", "vfork"], CLASS_FORK),
];

/// The fork calls whose parent waits for its child (and names it as it forks,
/// `record::KIND_VFORK_CHILD`): vfork always, the others when their flags ask for
/// CLONE_VFORK, found where the kernel side looks for them. With unfinished entries
/// asked for, they are [`BLOCKING`] too (the others only when their flags ask).
const VFORK: &[(&str, u32)] = &[
    ("vfork", CLASS_VFORK),
    ("clone", CLASS_VFORK_IN_ARG),
    ("clone3", CLASS_VFORK_IN_STRUCT),
];

/// Whether `name` is one of the exec calls (CLASS_EXEC).
pub fn is_exec(name: &str) -> bool {
    NAMED
        .iter()
        .any(|(names, class)| *class == CLASS_EXEC && names.contains(&name))
}

/// Whether `name` is one of the fork calls (CLASS_FORK).
pub fn is_fork(name: &str) -> bool {
    NAMED
        .iter()
        .any(|(names, class)| *class == CLASS_FORK && names.contains(&name))
}

/// The class that has the kernel side read the inodes of the new fds of `name` (see
/// `fd_effect::named_by_inode`), if it makes fds named by inode.
fn fd_inode_class(name: &str) -> u32 {
    match fd_effect::named_by_inode().find(|(n, _)| *n == name) {
        None => 0,
        Some((_, false)) => CLASS_FD_INODE_RET,
        Some((_, true)) => match pair_arg(name) {
            Some(0) => CLASS_FD_INODE_PAIR_ARG0,
            Some(3) => CLASS_FD_INODE_PAIR_ARG3,
            _ => 0,
        },
    }
}

/// Where pipe, pipe2 and socketpair write their fds, on every architecture rtrace
/// knows (their tracefs formats say the same: `fildes` first, socketpair's `usockvec`
/// fourth).
fn pair_arg(name: &str) -> Option<usize> {
    match name {
        "pipe" | "pipe2" => Some(0),
        "socketpair" => Some(3),
        _ => None,
    }
}

/// (syscall index, class bits) for every index with a bit set. `selection` is `-e`'s
/// list of indexes; `unfinished` asks for the blocking calls' entries.
pub fn syscall_classes(selection: Option<&[u32]>, unfinished: bool) -> Vec<(u32, u32)> {
    (0..SYSCALL_INDEXES)
        .filter_map(|idx| {
            let name = syscall_table::name(idx)?;
            let mut bits = 0;
            if selection.is_some_and(|s| s.contains(&idx)) {
                bits |= CLASS_SELECTED;
            }
            if unfinished && BLOCKING.contains(&name) {
                bits |= CLASS_BLOCKING;
            }
            if let Some((_, class)) = VFORK.iter().find(|(n, _)| *n == name) {
                bits |= class;
                if unfinished {
                    bits |= CLASS_BLOCKING;
                }
            }
            for (names, class) in NAMED {
                if names.contains(&name) {
                    bits |= class;
                }
            }
            // Read whenever the call is recorded (a few probe reads, for a few calls):
            // the fd table names the fds only when close is traced, but `--json`'s
            // `ret_fd` names a returned one always, as it does an open's.
            bits |= fd_inode_class(name);
            if fd_effect::resolves_paths(name) {
                bits |= CLASS_PATH_VIEW;
            }
            (bits != 0).then_some((idx, bits))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(classes: &[(u32, u32)], idx: Option<u32>) -> u32 {
        let idx = idx.unwrap();
        classes
            .iter()
            .find(|(i, _)| *i == idx)
            .map_or(0, |(_, b)| *b)
    }

    #[test]
    fn both_tables_get_their_classes() {
        let n = syscall_table::number;
        let c = syscall_table::compat_number;
        let sel = [n("openat").unwrap()];
        let classes = syscall_classes(Some(&sel), true);
        assert_eq!(
            class(&classes, n("openat")),
            CLASS_SELECTED | CLASS_PATH_VIEW
        );
        assert_eq!(class(&classes, c("openat")), CLASS_PATH_VIEW);
        assert_eq!(class(&classes, n("execve")), CLASS_EXEC);
        assert_eq!(class(&classes, c("execve")), CLASS_EXEC);
        assert_eq!(class(&classes, n("exit_group")), CLASS_EXIT);
        assert_eq!(class(&classes, c("exit_group")), CLASS_EXIT);
        // The forks whose parent may wait: blocking (when their flags ask, for clone
        // and clone3) where unfinished entries are shown.
        let waits = CLASS_FORK | CLASS_BLOCKING;
        assert_eq!(class(&classes, n("clone")), waits | CLASS_VFORK_IN_ARG);
        assert_eq!(class(&classes, c("clone")), waits | CLASS_VFORK_IN_ARG);
        assert_eq!(class(&classes, n("clone3")), waits | CLASS_VFORK_IN_STRUCT);
        assert_eq!(class(&classes, n("vfork")), waits | CLASS_VFORK);
        assert_eq!(class(&classes, n("fork")), CLASS_FORK);
        assert_eq!(class(&classes, n("wait4")), CLASS_BLOCKING);
        assert_eq!(class(&classes, n("read")), 0);
        // Elsewhere (--json, -s, --failure…) none blocks, and the kernel side still
        // finds which parents wait (KIND_VFORK_CHILD).
        let quiet = syscall_classes(None, false);
        assert_eq!(class(&quiet, n("wait4")), 0);
        assert_eq!(class(&quiet, n("clone")), CLASS_FORK | CLASS_VFORK_IN_ARG);
        assert_eq!(
            class(&quiet, n("clone3")),
            CLASS_FORK | CLASS_VFORK_IN_STRUCT
        );
        assert_eq!(class(&quiet, n("vfork")), CLASS_FORK | CLASS_VFORK);
    }

    #[test]
    fn the_calls_whose_paths_are_shown_canonical_have_the_kernel_compare_views() {
        let n = syscall_table::number;
        let c = syscall_table::compat_number;
        let classes = syscall_classes(None, false);
        for name in ["openat", "openat2", "chdir"] {
            assert_eq!(class(&classes, n(name)), CLASS_PATH_VIEW, "{name}");
        }
        for name in ["open", "creat", "openat"] {
            assert_eq!(class(&classes, c(name)), CLASS_PATH_VIEW, "{name}");
        }
        for name in ["read", "newfstatat", "fchdir", "close"] {
            assert_eq!(class(&classes, n(name)) & CLASS_PATH_VIEW, 0, "{name}");
        }
    }

    #[test]
    fn the_calls_whose_fds_are_named_by_inode_have_the_kernel_read_them() {
        let n = syscall_table::number;
        let c = syscall_table::compat_number;
        let named = syscall_classes(None, false);
        assert_eq!(class(&named, n("socket")), CLASS_FD_INODE_RET);
        assert_eq!(class(&named, c("socket")), CLASS_FD_INODE_RET);
        assert_eq!(class(&named, n("accept4")), CLASS_FD_INODE_RET);
        assert_eq!(class(&named, n("pipe2")), CLASS_FD_INODE_PAIR_ARG0);
        assert_eq!(class(&named, c("pipe2")), CLASS_FD_INODE_PAIR_ARG0);
        assert_eq!(class(&named, n("socketpair")), CLASS_FD_INODE_PAIR_ARG3);
        // Named without the kernel's help, or not at all.
        assert_eq!(class(&named, n("eventfd2")), 0);
        assert_eq!(class(&named, n("openat")), CLASS_PATH_VIEW);
        // Every pair named by inode has its argument here.
        for (name, pair) in fd_effect::named_by_inode() {
            assert!(!pair || pair_arg(name).is_some(), "{name}");
        }
    }
}
