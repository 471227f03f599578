//! Arguments and returns whose meaning depends on another argument of the same call:
//! what fcntl's `arg` and return are depends on `cmd`, whether mmap's `fd` means
//! anything on `flags`, which futex arguments are used on `op`, what a socket option's
//! number names on its `level`. perf's beautifiers do the same (its `arg->mask` of
//! arguments to leave out). Pure: the call's name, the argument's name and the raw
//! arguments in; what to show out.

use super::{Beauty, tables as t};
use crate::decode::format::ArgKind;

/// How an argument is shown once the other arguments are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    As(Beauty),
    /// Not used by this call: left out, as perf does.
    Hidden,
}

/// How a successful return is shown, where it depends on the arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetShown {
    /// The file status flags (fcntl GETFL): `RDONLY|LARGEFILE`.
    OpenFlags,
    /// The fd flags (fcntl GETFD): `CLOEXEC`, or 0.
    FdFlags,
    /// A new fd that refers to what this fd does (fcntl DUPFD): `N<path>`.
    DupOf(i32),
}

/// Linux's F_SETSIG and F_GETSIG (the libc crate does not name them).
const F_SETSIG: i32 = 10;
const F_GETSIG: i32 = 11;

/// fcntl commands whose `arg` is not used.
const FCNTL_NO_ARG: &[i32] = &[
    libc::F_GETFD,
    libc::F_GETFL,
    libc::F_GETOWN,
    F_GETSIG,
    libc::F_GETLEASE,
    libc::F_GETPIPE_SZ,
    libc::F_GET_SEALS,
];

/// fcntl commands whose `arg` points to a struct flock.
const FCNTL_LOCKS: &[i32] = &[
    libc::F_GETLK,
    libc::F_SETLK,
    libc::F_SETLKW,
    libc::F_OFD_GETLK,
    libc::F_OFD_SETLK,
    libc::F_OFD_SETLKW,
];

/// (futex command, arguments it does not use).
const FUTEX_UNUSED: &[(u64, &[&str])] = &[
    (0, &["uaddr2", "val3"]),          // WAIT
    (1, &["utime", "uaddr2", "val3"]), // WAKE
    (9, &["uaddr2"]),                  // WAIT_BITSET
    (10, &["utime", "uaddr2"]),        // WAKE_BITSET
];

/// (setsockopt/getsockopt level, the names of its options): the levels whose options
/// rtrace names; at another level an option is the number it is.
const SOCKOPT_NAMES: &[(u32, t::Names)] = &[
    (libc::SOL_SOCKET as u32, &t::SO_OPTNAME),
    (libc::SOL_TCP as u32, &t::TCP_OPTNAME),
    (libc::SOL_IP as u32, &t::IP_OPTNAME),
    (libc::SOL_IPV6 as u32, &t::IPV6_OPTNAME),
];

/// The calls [`shown`] knows: for any other, it keeps every argument's own beautifier.
/// Checked once per call's description (`SyscallInfo::contextual`), not per argument.
const CONTEXTUAL: [&str; 7] = [
    "fcntl",
    "fcntl64",
    "mmap",
    "futex",
    "prctl",
    "setsockopt",
    "getsockopt",
];

/// Whether [`shown`] can show an argument of `syscall` otherwise than its beautifier.
pub fn contextual(syscall: &str) -> bool {
    CONTEXTUAL.contains(&syscall)
}

/// `arg` of `syscall`, given all raw arguments (in tracefs order), when its own
/// beautifier is not the whole story; `None` keeps that one.
pub fn shown(syscall: &str, arg: &str, args: &[u64; 6]) -> Option<Shown> {
    match (syscall, arg) {
        ("fcntl" | "fcntl64", "arg") => {
            let cmd = args[1] as i32;
            Some(match cmd {
                c if FCNTL_NO_ARG.contains(&c) => Shown::Hidden,
                c if FCNTL_LOCKS.contains(&c) => Shown::As(Beauty::Hex),
                libc::F_SETFD => Shown::As(Beauty::Flags(&t::FD_FLAGS)),
                libc::F_SETFL => Shown::As(Beauty::OpenFlags),
                F_SETSIG => Shown::As(Beauty::Signal),
                libc::F_SETOWN => Shown::As(Beauty::Pid),
                _ => return None,
            })
        }
        ("mmap", "fd") if args[3] & libc::MAP_ANONYMOUS as u64 != 0 => Some(Shown::Hidden),
        // perf shows mmap's fd as a number, without its path.
        ("mmap", "fd") => Some(Shown::As(Beauty::Raw(ArgKind::I32))),
        ("futex", _) => {
            let cmd = args[1] & 0x7f;
            let unused = FUTEX_UNUSED
                .iter()
                .find(|(c, _)| *c == cmd)
                .is_some_and(|(_, names)| names.contains(&arg));
            if unused {
                Some(Shown::Hidden)
            } else if arg == "val3" && matches!(cmd, 9 | 10) {
                Some(Shown::As(Beauty::Enum(&t::FUTEX_BITSET)))
            } else {
                None
            }
        }
        ("prctl", "arg2" | "arg3" | "arg4" | "arg5") => prctl_arg(args, arg),
        ("setsockopt" | "getsockopt", "optname") => SOCKOPT_NAMES
            .iter()
            .find(|(level, _)| *level == args[1] as u32)
            .map(|(_, names)| Shown::As(Beauty::Enum(names))),
        _ => None,
    }
}

/// prctl's arguments after `option`: a name (read as a string; the registry plans the
/// read), a capability, PR_CAP_AMBIENT's operation, a signal; the rest as the numbers
/// they are.
fn prctl_arg(args: &[u64; 6], arg: &str) -> Option<Shown> {
    const AMBIENT_CLEAR_ALL: u64 = 4;
    Some(match (args[0] as i32, arg) {
        (libc::PR_SET_NAME | libc::PR_GET_NAME, "arg2") => return None,
        (libc::PR_CAPBSET_READ | libc::PR_CAPBSET_DROP, "arg2") => {
            Shown::As(Beauty::Enum(&t::CAPABILITY))
        }
        (libc::PR_CAP_AMBIENT, "arg2") => Shown::As(Beauty::Enum(&t::CAP_AMBIENT_OP)),
        (libc::PR_SET_PDEATHSIG, "arg2") => Shown::As(Beauty::Signal),
        (libc::PR_GET_PDEATHSIG, "arg2") => Shown::As(Beauty::Hex),
        (libc::PR_CAP_AMBIENT, "arg3") if args[1] == AMBIENT_CLEAR_ALL => Shown::Hidden,
        (libc::PR_CAP_AMBIENT, "arg3") => Shown::As(Beauty::Enum(&t::CAPABILITY)),
        _ => Shown::As(Beauty::Raw(ArgKind::U64)),
    })
}

/// How a successful return of `syscall` is shown, when its arguments decide.
pub fn ret_shown(syscall: &str, args: &[u64; 6]) -> Option<RetShown> {
    if !matches!(syscall, "fcntl" | "fcntl64") {
        return None;
    }
    match args[1] as i32 {
        libc::F_GETFL => Some(RetShown::OpenFlags),
        libc::F_GETFD => Some(RetShown::FdFlags),
        libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => Some(RetShown::DupOf(args[0] as u32 as i32)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list of calls with context and the match of [`shown`] agree: no other call
    /// of the table has an argument shown otherwise, and each listed one has one.
    #[test]
    fn only_the_listed_calls_have_context() {
        let names = [
            "fd", "arg", "arg1", "arg2", "arg3", "arg4", "arg5", "cmd", "val", "val2", "val3",
            "uaddr", "uaddr2", "utime", "timeout", "optname", "level", "flags", "addr",
        ];
        let values: [[u64; 6]; 6] = [
            [0; 6],
            [u64::MAX; 6],
            fcntl(libc::F_SETFD),
            [0, 9, 0, 0x20, 0, 0],
            [libc::SOL_SOCKET as u64, libc::SOL_SOCKET as u64, 0, 0, 0, 0],
            [libc::PR_SET_PDEATHSIG as u64, 0, 0, 0, 0, 0],
        ];
        let any = |call: &str| {
            names
                .iter()
                .any(|arg| values.iter().any(|v| shown(call, arg, v).is_some()))
        };
        let table = (0..crate::decode::syscall_table::MAX_NR)
            .filter_map(crate::decode::syscall_table::name);
        for call in table.chain(CONTEXTUAL) {
            assert_eq!(any(call), contextual(call), "{call}");
        }
    }

    fn fcntl(cmd: i32) -> [u64; 6] {
        [3, cmd as u64, 0x7ffd_0000, 0, 0, 0]
    }

    #[test]
    fn prctl_names_capabilities_and_keeps_names_as_strings() {
        let prctl = |option: i32, arg2: u64, arg3: u64| [option as u64, arg2, arg3, 0, 0, 0];
        assert_eq!(
            shown("prctl", "arg2", &prctl(libc::PR_CAPBSET_READ, 21, 0)),
            Some(Shown::As(Beauty::Enum(&t::CAPABILITY)))
        );
        assert_eq!(
            shown("prctl", "arg3", &prctl(libc::PR_CAP_AMBIENT, 2, 12)),
            Some(Shown::As(Beauty::Enum(&t::CAPABILITY)))
        );
        assert_eq!(
            shown("prctl", "arg3", &prctl(libc::PR_CAP_AMBIENT, 4, 0)),
            Some(Shown::Hidden)
        );
        assert_eq!(
            shown("prctl", "arg2", &prctl(libc::PR_SET_NAME, 0x7ff0, 0)),
            None
        );
        assert_eq!(
            shown("prctl", "arg2", &prctl(libc::PR_SET_PDEATHSIG, 9, 0)),
            Some(Shown::As(Beauty::Signal))
        );
        assert_eq!(
            shown("prctl", "arg2", &prctl(libc::PR_SET_DUMPABLE, 1, 0)),
            Some(Shown::As(Beauty::Raw(ArgKind::U64)))
        );
    }

    #[test]
    fn fcntl_arg_follows_cmd() {
        assert_eq!(
            shown("fcntl", "arg", &fcntl(libc::F_GETFL)),
            Some(Shown::Hidden)
        );
        assert_eq!(
            shown("fcntl", "arg", &fcntl(libc::F_SETFD)),
            Some(Shown::As(Beauty::Flags(&t::FD_FLAGS)))
        );
        assert_eq!(
            shown("fcntl", "arg", &fcntl(libc::F_SETLKW)),
            Some(Shown::As(Beauty::Hex))
        );
        assert_eq!(shown("fcntl", "arg", &fcntl(libc::F_DUPFD)), None);
        assert_eq!(shown("fcntl", "cmd", &fcntl(libc::F_GETFL)), None);
        assert_eq!(
            ret_shown("fcntl", &fcntl(libc::F_DUPFD_CLOEXEC)),
            Some(RetShown::DupOf(3))
        );
        assert_eq!(
            ret_shown("fcntl", &fcntl(libc::F_GETFL)),
            Some(RetShown::OpenFlags)
        );
        assert_eq!(ret_shown("fcntl", &fcntl(libc::F_SETFL)), None);
        assert_eq!(ret_shown("dup", &fcntl(0)), None);
    }

    /// The argument at `index` of a call as the line shows it: its dependent beauty
    /// where the other arguments decide, else the registry's.
    fn line_value(call: &str, index: usize, arg: &str, args: &[u64; 6], prefix: bool) -> String {
        let b = match shown(call, arg, args) {
            Some(Shown::Hidden) => return "(hidden)".into(),
            Some(Shown::As(b)) => b,
            None => {
                let spec = crate::decode::format::ArgSpec {
                    name: arg.into(),
                    kind: ArgKind::I32,
                    ty: "int".into(),
                };
                super::super::registry::beauty_for(call, &spec)
            }
        };
        let mut out = String::new();
        let style = super::super::Style {
            prefix,
            ..Default::default()
        };
        super::super::write_arg(&mut out, b, args[index], None, style);
        out
    }

    /// setsockopt/getsockopt: the level by name, and the option by the name it has at
    /// that level; a level without a table, or an option without a name, as its number.
    #[test]
    fn sockopt_names_follow_the_level() {
        let cases: &[(u64, u64, &str, &str, &str, &str)] = &[
            (1, 2, "SOCKET", "REUSEADDR", "SOL_SOCKET", "SO_REUSEADDR"),
            (1, 8, "SOCKET", "RCVBUF", "SOL_SOCKET", "SO_RCVBUF"),
            (
                1,
                20,
                "SOCKET",
                "RCVTIMEO_OLD",
                "SOL_SOCKET",
                "SO_RCVTIMEO_OLD",
            ),
            (6, 1, "TCP", "NODELAY", "SOL_TCP", "TCP_NODELAY"),
            (6, 4, "TCP", "KEEPIDLE", "SOL_TCP", "TCP_KEEPIDLE"),
            (0, 1, "IP", "TOS", "SOL_IP", "IP_TOS"),
            (41, 26, "IPV6", "V6ONLY", "SOL_IPV6", "IPV6_V6ONLY"),
            (270, 1, "NETLINK", "1", "SOL_NETLINK", "1"),
            (17, 1, "UDP", "1", "SOL_UDP", "1"),
            (1, 9999, "SOCKET", "9999", "SOL_SOCKET", "9999"),
            // TCP's 15 has no name (it was taken out of the kernel).
            (6, 15, "TCP", "15", "SOL_TCP", "15"),
            (12345, 2, "12345", "2", "12345", "2"),
        ];
        for call in ["setsockopt", "getsockopt"] {
            for &(level, optname, l, o, l_prefixed, o_prefixed) in cases {
                let args = [3, level, optname, 0x7ffd_0000, 4, 0];
                let seen = |prefix| {
                    (
                        line_value(call, 1, "level", &args, prefix),
                        line_value(call, 2, "optname", &args, prefix),
                    )
                };
                assert_eq!(
                    seen(false),
                    (l.into(), o.into()),
                    "{call} {level} {optname}"
                );
                assert_eq!(
                    seen(true),
                    (l_prefixed.into(), o_prefixed.into()),
                    "{call} {level} {optname}"
                );
            }
        }
    }

    #[test]
    fn anonymous_mappings_have_no_fd() {
        let anon = [
            0,
            8192,
            3,
            (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64,
            u64::MAX,
            0,
        ];
        assert_eq!(shown("mmap", "fd", &anon), Some(Shown::Hidden));
        let file = [0, 8192, 1, libc::MAP_PRIVATE as u64, 4, 4096];
        assert_eq!(
            shown("mmap", "fd", &file),
            Some(Shown::As(Beauty::Raw(ArgKind::I32)))
        );
    }

    #[test]
    fn futex_leaves_out_what_its_op_does_not_use() {
        let wake = [0x1000, 1 | 128, 1, 0xdead, 0xbeef, 7];
        for unused in ["utime", "uaddr2", "val3"] {
            assert_eq!(shown("futex", unused, &wake), Some(Shown::Hidden));
        }
        assert_eq!(shown("futex", "val", &wake), None);
        let wait_bitset = [0x1000, 9 | 128, 0, 0x7000, 0, 0xffff_ffff];
        assert_eq!(
            shown("futex", "val3", &wait_bitset),
            Some(Shown::As(Beauty::Enum(&t::FUTEX_BITSET)))
        );
        assert_eq!(shown("futex", "utime", &wait_bitset), None);
    }
}
