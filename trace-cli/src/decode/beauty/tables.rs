//! Value tables for the beautifiers, in perf trace's spelling (no `O_`, `PROT_`… prefix)
//! and perf's order. Values come from the libc crate where it has them.

/// A value table and the prefix perf prints with `show_prefix` (`O_`, `PROT_`…).
/// As flags, an entry is shown when all of its mask's bits are set, and those bits are
/// then consumed (what is left is shown in hex); as names, the entry equal to the value.
#[derive(Debug, PartialEq, Eq)]
pub struct Table {
    pub prefix: &'static str,
    pub entries: &'static [(u64, &'static str)],
}

pub type Flags = &'static Table;
pub type Names = &'static Table;

/// A C constant as the bits it stands for, zero-extended from its own width: libc's
/// `int` flags with the top bit set (SA_RESETHAND, CLONE_IO) are negative, and `as u64`
/// alone would add 32 high bits that are no part of the flag.
macro_rules! c {
    ($e:expr) => {{
        let bits = core::mem::size_of_val(&$e) * 8;
        let v = $e as u64;
        if bits >= 64 { v } else { v & ((1u64 << bits) - 1) }
    }};
}

/// The kernel's O_LARGEFILE, which it sets on every file a 64-bit task opens (fcntl
/// GETFL shows it); 64-bit C libraries define O_LARGEFILE as 0.
#[cfg(target_arch = "aarch64")]
const KERNEL_O_LARGEFILE: u64 = 0o400000;
#[cfg(not(target_arch = "aarch64"))]
const KERNEL_O_LARGEFILE: u64 = 0o100000;

/// Open flags after the access mode (RDONLY is printed when the access mode is 0).
pub const OPEN_FLAGS: Table = Table {
    prefix: "O_",
    entries: &[
        (c!(libc::O_RDWR), "RDWR"),
        (c!(libc::O_APPEND), "APPEND"),
        (c!(libc::O_ASYNC), "ASYNC"),
        (c!(libc::O_CLOEXEC), "CLOEXEC"),
        (c!(libc::O_CREAT), "CREAT"),
        (c!(libc::O_DIRECT), "DIRECT"),
        (c!(libc::O_DIRECTORY), "DIRECTORY"),
        (c!(libc::O_EXCL), "EXCL"),
        (KERNEL_O_LARGEFILE, "LARGEFILE"),
        (c!(libc::O_NOFOLLOW), "NOFOLLOW"),
        (c!(libc::O_TMPFILE), "TMPFILE"),
        (c!(libc::O_NOATIME), "NOATIME"),
        (c!(libc::O_NOCTTY), "NOCTTY"),
        (c!(libc::O_NONBLOCK), "NONBLOCK"),
        (c!(libc::O_PATH), "PATH"),
        (c!(libc::O_SYNC), "SYNC"),
        (c!(libc::O_DSYNC), "DSYNC"),
        (c!(libc::O_TRUNC), "TRUNC"),
        (c!(libc::O_WRONLY), "WRONLY"),
    ],
};

/// perf's mode_t order: the kernel's group names first.
pub const MODE: Table = Table {
    prefix: "S_",
    entries: &[
        (0o7777, "IALLUGO"),
        (0o777, "IRWXUGO"),
        (0o444, "IRUGO"),
        (0o222, "IWUGO"),
        (0o111, "IXUGO"),
        (c!(libc::S_IFMT), "IFMT"),
        (c!(libc::S_IFSOCK), "IFSOCK"),
        (c!(libc::S_IFLNK), "IFLNK"),
        (c!(libc::S_IFREG), "IFREG"),
        (c!(libc::S_IFBLK), "IFBLK"),
        (c!(libc::S_IFDIR), "IFDIR"),
        (c!(libc::S_IFCHR), "IFCHR"),
        (c!(libc::S_IFIFO), "IFIFO"),
        (c!(libc::S_ISUID), "ISUID"),
        (c!(libc::S_ISGID), "ISGID"),
        (c!(libc::S_ISVTX), "ISVTX"),
        (c!(libc::S_IRWXU), "IRWXU"),
        (c!(libc::S_IRUSR), "IRUSR"),
        (c!(libc::S_IWUSR), "IWUSR"),
        (c!(libc::S_IXUSR), "IXUSR"),
        (c!(libc::S_IRWXG), "IRWXG"),
        (c!(libc::S_IRGRP), "IRGRP"),
        (c!(libc::S_IWGRP), "IWGRP"),
        (c!(libc::S_IXGRP), "IXGRP"),
        (c!(libc::S_IRWXO), "IRWXO"),
        (c!(libc::S_IROTH), "IROTH"),
        (c!(libc::S_IWOTH), "IWOTH"),
        (c!(libc::S_IXOTH), "IXOTH"),
    ],
};

pub const ACCESS_MODE: Table = Table {
    prefix: "",
    entries: &[
        (c!(libc::R_OK), "R"),
        (c!(libc::W_OK), "W"),
        (c!(libc::X_OK), "X"),
    ],
};

pub const PROT: Table = Table {
    prefix: "PROT_",
    entries: &[
        (c!(libc::PROT_READ), "READ"),
        (c!(libc::PROT_WRITE), "WRITE"),
        (c!(libc::PROT_EXEC), "EXEC"),
        (0x8, "SEM"),
        (c!(libc::PROT_GROWSDOWN), "GROWSDOWN"),
        (c!(libc::PROT_GROWSUP), "GROWSUP"),
    ],
};

pub const MMAP_FLAGS: Table = Table {
    prefix: "MAP_",
    entries: &[
        (c!(libc::MAP_SHARED_VALIDATE), "SHARED_VALIDATE"),
        (c!(libc::MAP_SHARED), "SHARED"),
        (c!(libc::MAP_PRIVATE), "PRIVATE"),
        (c!(libc::MAP_FIXED), "FIXED"),
        (c!(libc::MAP_ANONYMOUS), "ANONYMOUS"),
        // x86's alone (its uapi mman.h): on arm64 and arm the bit means nothing, and a
        // call that sets it shows it in the hex remainder.
        #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
        (c!(libc::MAP_32BIT), "32BIT"),
        (c!(libc::MAP_GROWSDOWN), "GROWSDOWN"),
        (c!(libc::MAP_DENYWRITE), "DENYWRITE"),
        (c!(libc::MAP_EXECUTABLE), "EXECUTABLE"),
        (c!(libc::MAP_LOCKED), "LOCKED"),
        (c!(libc::MAP_NORESERVE), "NORESERVE"),
        (c!(libc::MAP_POPULATE), "POPULATE"),
        (c!(libc::MAP_NONBLOCK), "NONBLOCK"),
        (c!(libc::MAP_STACK), "STACK"),
        (c!(libc::MAP_HUGETLB), "HUGETLB"),
        (c!(libc::MAP_SYNC), "SYNC"),
        (c!(libc::MAP_FIXED_NOREPLACE), "FIXED_NOREPLACE"),
    ],
};

pub const MREMAP_FLAGS: Table = Table {
    prefix: "MREMAP_",
    entries: &[(1, "MAYMOVE"), (2, "FIXED"), (4, "DONTUNMAP")],
};

/// The flags of the calls that send and receive on sockets (send*, recv*).
pub const MSG_FLAGS: Table = Table {
    prefix: "MSG_",
    entries: &[
        (c!(libc::MSG_OOB), "OOB"),
        (c!(libc::MSG_PEEK), "PEEK"),
        (c!(libc::MSG_DONTROUTE), "DONTROUTE"),
        (c!(libc::MSG_CTRUNC), "CTRUNC"),
        (0x10, "PROBE"),
        (c!(libc::MSG_TRUNC), "TRUNC"),
        (c!(libc::MSG_DONTWAIT), "DONTWAIT"),
        (c!(libc::MSG_EOR), "EOR"),
        (c!(libc::MSG_WAITALL), "WAITALL"),
        (c!(libc::MSG_FIN), "FIN"),
        (c!(libc::MSG_SYN), "SYN"),
        (c!(libc::MSG_CONFIRM), "CONFIRM"),
        (c!(libc::MSG_RST), "RST"),
        (c!(libc::MSG_ERRQUEUE), "ERRQUEUE"),
        (c!(libc::MSG_NOSIGNAL), "NOSIGNAL"),
        (c!(libc::MSG_MORE), "MORE"),
        (c!(libc::MSG_WAITFORONE), "WAITFORONE"),
        (0x40000, "BATCH"),
        (0x0400_0000, "ZEROCOPY"),
        (c!(libc::MSG_FASTOPEN), "FASTOPEN"),
        (c!(libc::MSG_CMSG_CLOEXEC), "CMSG_CLOEXEC"),
    ],
};

/// shutdown's `how`.
pub const SHUTDOWN_HOW: Table = Table {
    prefix: "SHUT_",
    entries: &[
        (c!(libc::SHUT_RD), "RD"),
        (c!(libc::SHUT_WR), "WR"),
        (c!(libc::SHUT_RDWR), "RDWR"),
    ],
};

/// fadvise64's advice (the generic values; s390's differ, and rtrace does not run there).
pub const FADVISE: Table = Table {
    prefix: "POSIX_FADV_",
    entries: &[
        (c!(libc::POSIX_FADV_NORMAL), "NORMAL"),
        (c!(libc::POSIX_FADV_RANDOM), "RANDOM"),
        (c!(libc::POSIX_FADV_SEQUENTIAL), "SEQUENTIAL"),
        (c!(libc::POSIX_FADV_WILLNEED), "WILLNEED"),
        (c!(libc::POSIX_FADV_DONTNEED), "DONTNEED"),
        (c!(libc::POSIX_FADV_NOREUSE), "NOREUSE"),
    ],
};

/// inotify_add_watch's mask: the events, then how the watch behaves.
pub const INOTIFY_MASK: Table = Table {
    prefix: "IN_",
    entries: &[
        (c!(libc::IN_ACCESS), "ACCESS"),
        (c!(libc::IN_MODIFY), "MODIFY"),
        (c!(libc::IN_ATTRIB), "ATTRIB"),
        (c!(libc::IN_CLOSE_WRITE), "CLOSE_WRITE"),
        (c!(libc::IN_CLOSE_NOWRITE), "CLOSE_NOWRITE"),
        (c!(libc::IN_OPEN), "OPEN"),
        (c!(libc::IN_MOVED_FROM), "MOVED_FROM"),
        (c!(libc::IN_MOVED_TO), "MOVED_TO"),
        (c!(libc::IN_CREATE), "CREATE"),
        (c!(libc::IN_DELETE), "DELETE"),
        (c!(libc::IN_DELETE_SELF), "DELETE_SELF"),
        (c!(libc::IN_MOVE_SELF), "MOVE_SELF"),
        (c!(libc::IN_UNMOUNT), "UNMOUNT"),
        (c!(libc::IN_Q_OVERFLOW), "Q_OVERFLOW"),
        (c!(libc::IN_IGNORED), "IGNORED"),
        (c!(libc::IN_ONLYDIR), "ONLYDIR"),
        (c!(libc::IN_DONT_FOLLOW), "DONT_FOLLOW"),
        (c!(libc::IN_EXCL_UNLINK), "EXCL_UNLINK"),
        (0x1000_0000, "MASK_CREATE"),
        (c!(libc::IN_MASK_ADD), "MASK_ADD"),
        (c!(libc::IN_ISDIR), "ISDIR"),
        (c!(libc::IN_ONESHOT), "ONESHOT"),
    ],
};

/// inotify_init1's flags.
pub const INOTIFY_INIT_FLAGS: Table = Table {
    prefix: "IN_",
    entries: &[
        (c!(libc::IN_NONBLOCK), "NONBLOCK"),
        (c!(libc::IN_CLOEXEC), "CLOEXEC"),
    ],
};

pub const MADVISE: Table = Table {
    // perf prints these with their prefix, with or without show_prefix.
    prefix: "",
    entries: &[
        (0, "MADV_NORMAL"),
        (1, "MADV_RANDOM"),
        (2, "MADV_SEQUENTIAL"),
        (3, "MADV_WILLNEED"),
        (4, "MADV_DONTNEED"),
        (8, "MADV_FREE"),
        (9, "MADV_REMOVE"),
        (10, "MADV_DONTFORK"),
        (11, "MADV_DOFORK"),
        (12, "MADV_MERGEABLE"),
        (13, "MADV_UNMERGEABLE"),
        (14, "MADV_HUGEPAGE"),
        (15, "MADV_NOHUGEPAGE"),
        (16, "MADV_DONTDUMP"),
        (17, "MADV_DODUMP"),
        (18, "MADV_WIPEONFORK"),
        (19, "MADV_KEEPONFORK"),
        (20, "MADV_COLD"),
        (21, "MADV_PAGEOUT"),
        (22, "MADV_POPULATE_READ"),
        (23, "MADV_POPULATE_WRITE"),
        (24, "MADV_DONTNEED_LOCKED"),
        (25, "MADV_COLLAPSE"),
        (100, "MADV_HWPOISON"),
        (101, "MADV_SOFT_OFFLINE"),
    ],
};

pub const CLONE_FLAGS: Table = Table {
    prefix: "CLONE_",
    entries: &[
        (c!(libc::CLONE_VM), "VM"),
        (c!(libc::CLONE_FS), "FS"),
        (c!(libc::CLONE_FILES), "FILES"),
        (c!(libc::CLONE_SIGHAND), "SIGHAND"),
        (c!(libc::CLONE_PIDFD), "PIDFD"),
        (c!(libc::CLONE_PTRACE), "PTRACE"),
        (c!(libc::CLONE_VFORK), "VFORK"),
        (c!(libc::CLONE_PARENT), "PARENT"),
        (c!(libc::CLONE_THREAD), "THREAD"),
        (c!(libc::CLONE_NEWNS), "NEWNS"),
        (c!(libc::CLONE_SYSVSEM), "SYSVSEM"),
        (c!(libc::CLONE_SETTLS), "SETTLS"),
        (c!(libc::CLONE_PARENT_SETTID), "PARENT_SETTID"),
        (c!(libc::CLONE_CHILD_CLEARTID), "CHILD_CLEARTID"),
        (c!(libc::CLONE_DETACHED), "DETACHED"),
        (c!(libc::CLONE_UNTRACED), "UNTRACED"),
        (c!(libc::CLONE_CHILD_SETTID), "CHILD_SETTID"),
        (c!(libc::CLONE_NEWCGROUP), "NEWCGROUP"),
        (c!(libc::CLONE_NEWUTS), "NEWUTS"),
        (c!(libc::CLONE_NEWIPC), "NEWIPC"),
        (c!(libc::CLONE_NEWUSER), "NEWUSER"),
        (c!(libc::CLONE_NEWPID), "NEWPID"),
        (c!(libc::CLONE_NEWNET), "NEWNET"),
        (c!(libc::CLONE_IO), "IO"),
    ],
};

pub const SIGNALS: Table = Table {
    prefix: "SIG",
    entries: &[
        (c!(libc::SIGHUP), "HUP"),
        (c!(libc::SIGINT), "INT"),
        (c!(libc::SIGQUIT), "QUIT"),
        (c!(libc::SIGILL), "ILL"),
        (c!(libc::SIGTRAP), "TRAP"),
        (c!(libc::SIGABRT), "ABRT"),
        (c!(libc::SIGBUS), "BUS"),
        (c!(libc::SIGFPE), "FPE"),
        (c!(libc::SIGKILL), "KILL"),
        (c!(libc::SIGUSR1), "USR1"),
        (c!(libc::SIGSEGV), "SEGV"),
        (c!(libc::SIGUSR2), "USR2"),
        (c!(libc::SIGPIPE), "PIPE"),
        (c!(libc::SIGALRM), "ALRM"),
        (c!(libc::SIGTERM), "TERM"),
        (c!(libc::SIGSTKFLT), "STKFLT"),
        (c!(libc::SIGCHLD), "CHLD"),
        (c!(libc::SIGCONT), "CONT"),
        (c!(libc::SIGSTOP), "STOP"),
        (c!(libc::SIGTSTP), "TSTP"),
        (c!(libc::SIGTTIN), "TTIN"),
        (c!(libc::SIGTTOU), "TTOU"),
        (c!(libc::SIGURG), "URG"),
        (c!(libc::SIGXCPU), "XCPU"),
        (c!(libc::SIGXFSZ), "XFSZ"),
        (c!(libc::SIGVTALRM), "VTALRM"),
        (c!(libc::SIGPROF), "PROF"),
        (c!(libc::SIGWINCH), "WINCH"),
        (c!(libc::SIGIO), "IO"),
        (c!(libc::SIGPWR), "PWR"),
        (c!(libc::SIGSYS), "SYS"),
    ],
};

/// struct sigaction's sa_flags.
pub const SA_FLAGS: Table = Table {
    prefix: "SA_",
    entries: &[
        (c!(libc::SA_NOCLDSTOP), "NOCLDSTOP"),
        (c!(libc::SA_NOCLDWAIT), "NOCLDWAIT"),
        (c!(libc::SA_SIGINFO), "SIGINFO"),
        (0x0400_0000, "RESTORER"),
        (c!(libc::SA_ONSTACK), "ONSTACK"),
        (c!(libc::SA_RESTART), "RESTART"),
        (c!(libc::SA_NODEFER), "NODEFER"),
        (c!(libc::SA_RESETHAND), "RESETHAND"),
    ],
};

pub const SIGPROCMASK_HOW: Table = Table {
    prefix: "SIG_",
    entries: &[
        (c!(libc::SIG_BLOCK), "BLOCK"),
        (c!(libc::SIG_UNBLOCK), "UNBLOCK"),
        (c!(libc::SIG_SETMASK), "SETMASK"),
    ],
};

pub const SOCKET_FAMILY: Table = Table {
    prefix: "AF_",
    entries: &[
        (c!(libc::AF_UNSPEC), "UNSPEC"),
        (c!(libc::AF_UNIX), "LOCAL"),
        (c!(libc::AF_INET), "INET"),
        (c!(libc::AF_INET6), "INET6"),
        (c!(libc::AF_NETLINK), "NETLINK"),
        (c!(libc::AF_PACKET), "PACKET"),
        (c!(libc::AF_BLUETOOTH), "BLUETOOTH"),
        (c!(libc::AF_ALG), "ALG"),
        (c!(libc::AF_VSOCK), "VSOCK"),
        (c!(libc::AF_XDP), "XDP"),
    ],
};

/// Socket type: the low nibble is one of SOCKET_TYPE, the rest SOCKET_TYPE_FLAGS.
pub const SOCKET_TYPE: Table = Table {
    prefix: "SOCK_",
    entries: &[
        (c!(libc::SOCK_STREAM), "STREAM"),
        (c!(libc::SOCK_DGRAM), "DGRAM"),
        (c!(libc::SOCK_RAW), "RAW"),
        (c!(libc::SOCK_RDM), "RDM"),
        (c!(libc::SOCK_SEQPACKET), "SEQPACKET"),
        (c!(libc::SOCK_DCCP), "DCCP"),
        (10, "PACKET"),
    ],
};
pub const SOCKET_TYPE_FLAGS: Table = Table {
    prefix: "SOCK_",
    entries: &[
        (c!(libc::SOCK_CLOEXEC), "CLOEXEC"),
        (c!(libc::SOCK_NONBLOCK), "NONBLOCK"),
    ],
};

pub const IP_PROTOCOL: Table = Table {
    prefix: "IPPROTO_",
    entries: &[
        (c!(libc::IPPROTO_ICMP), "ICMP"),
        (c!(libc::IPPROTO_TCP), "TCP"),
        (c!(libc::IPPROTO_UDP), "UDP"),
        (c!(libc::IPPROTO_ICMPV6), "ICMPV6"),
        (c!(libc::IPPROTO_RAW), "RAW"),
    ],
};

/// setsockopt/getsockopt's level: SOL_SOCKET, or the protocol number for the options
/// of a protocol (glibc names those SOL_IP, SOL_TCP…, as strace does), or a SOL_ of
/// bits/socket.h. The values are the same on every architecture rtrace runs on.
pub const SOCKOPT_LEVEL: Table = Table {
    prefix: "SOL_",
    entries: &[
        (c!(libc::SOL_IP), "IP"),
        (c!(libc::SOL_SOCKET), "SOCKET"),
        (c!(libc::SOL_TCP), "TCP"),
        (c!(libc::SOL_UDP), "UDP"),
        (c!(libc::SOL_IPV6), "IPV6"),
        (c!(libc::SOL_ICMPV6), "ICMPV6"),
        (132, "SCTP"),
        (136, "UDPLITE"),
        (c!(libc::SOL_RAW), "RAW"),
        (261, "DECNET"),
        (262, "X25"),
        (c!(libc::SOL_PACKET), "PACKET"),
        (264, "ATM"),
        (265, "AAL"),
        (266, "IRDA"),
        (267, "NETBEUI"),
        (268, "LLC"),
        (269, "DCCP"),
        (c!(libc::SOL_NETLINK), "NETLINK"),
        (271, "TIPC"),
        (272, "RXRPC"),
        (273, "PPPOL2TP"),
        (274, "BLUETOOTH"),
        (275, "PNPIPE"),
        (276, "RDS"),
        (277, "IUCV"),
        (278, "CAIF"),
        (c!(libc::SOL_ALG), "ALG"),
        (280, "NFC"),
        (281, "KCM"),
        (c!(libc::SOL_TLS), "TLS"),
        (c!(libc::SOL_XDP), "XDP"),
        (284, "MPTCP"),
        (285, "MCTP"),
        (286, "SMC"),
    ],
};

/// SOL_SOCKET's options (asm-generic/socket.h, which x86_64 and arm64 both use). The
/// 64-bit time options are the `_OLD` ones, as strace names them; 54 and 58 are
/// control message types, not options.
pub const SO_OPTNAME: Table = Table {
    prefix: "SO_",
    entries: &[
        (1, "DEBUG"),
        (2, "REUSEADDR"),
        (3, "TYPE"),
        (4, "ERROR"),
        (5, "DONTROUTE"),
        (6, "BROADCAST"),
        (7, "SNDBUF"),
        (8, "RCVBUF"),
        (9, "KEEPALIVE"),
        (10, "OOBINLINE"),
        (11, "NO_CHECK"),
        (12, "PRIORITY"),
        (13, "LINGER"),
        (14, "BSDCOMPAT"),
        (15, "REUSEPORT"),
        (16, "PASSCRED"),
        (17, "PEERCRED"),
        (18, "RCVLOWAT"),
        (19, "SNDLOWAT"),
        (20, "RCVTIMEO_OLD"),
        (21, "SNDTIMEO_OLD"),
        (22, "SECURITY_AUTHENTICATION"),
        (23, "SECURITY_ENCRYPTION_TRANSPORT"),
        (24, "SECURITY_ENCRYPTION_NETWORK"),
        (25, "BINDTODEVICE"),
        (26, "ATTACH_FILTER"),
        (27, "DETACH_FILTER"),
        (28, "PEERNAME"),
        (29, "TIMESTAMP_OLD"),
        (30, "ACCEPTCONN"),
        (31, "PEERSEC"),
        (32, "SNDBUFFORCE"),
        (33, "RCVBUFFORCE"),
        (34, "PASSSEC"),
        (35, "TIMESTAMPNS_OLD"),
        (36, "MARK"),
        (37, "TIMESTAMPING_OLD"),
        (38, "PROTOCOL"),
        (39, "DOMAIN"),
        (40, "RXQ_OVFL"),
        (41, "WIFI_STATUS"),
        (42, "PEEK_OFF"),
        (43, "NOFCS"),
        (44, "LOCK_FILTER"),
        (45, "SELECT_ERR_QUEUE"),
        (46, "BUSY_POLL"),
        (47, "MAX_PACING_RATE"),
        (48, "BPF_EXTENSIONS"),
        (49, "INCOMING_CPU"),
        (50, "ATTACH_BPF"),
        (51, "ATTACH_REUSEPORT_CBPF"),
        (52, "ATTACH_REUSEPORT_EBPF"),
        (53, "CNX_ADVICE"),
        (55, "MEMINFO"),
        (56, "INCOMING_NAPI_ID"),
        (57, "COOKIE"),
        (59, "PEERGROUPS"),
        (60, "ZEROCOPY"),
        (61, "TXTIME"),
        (62, "BINDTOIFINDEX"),
        (63, "TIMESTAMP_NEW"),
        (64, "TIMESTAMPNS_NEW"),
        (65, "TIMESTAMPING_NEW"),
        (66, "RCVTIMEO_NEW"),
        (67, "SNDTIMEO_NEW"),
        (68, "DETACH_REUSEPORT_BPF"),
        (69, "PREFER_BUSY_POLL"),
        (70, "BUSY_POLL_BUDGET"),
        (71, "NETNS_COOKIE"),
        (72, "BUF_LOCK"),
        (73, "RESERVE_MEM"),
        (74, "TXREHASH"),
        (75, "RCVMARK"),
        (c!(libc::SO_PASSPIDFD), "PASSPIDFD"),
        (c!(libc::SO_PEERPIDFD), "PEERPIDFD"),
    ],
};

/// SOL_TCP's options (linux/tcp.h); 15 is no longer one.
pub const TCP_OPTNAME: Table = Table {
    prefix: "TCP_",
    entries: &[
        (1, "NODELAY"),
        (2, "MAXSEG"),
        (3, "CORK"),
        (4, "KEEPIDLE"),
        (5, "KEEPINTVL"),
        (6, "KEEPCNT"),
        (7, "SYNCNT"),
        (8, "LINGER2"),
        (9, "DEFER_ACCEPT"),
        (10, "WINDOW_CLAMP"),
        (11, "INFO"),
        (12, "QUICKACK"),
        (13, "CONGESTION"),
        (14, "MD5SIG"),
        (16, "THIN_LINEAR_TIMEOUTS"),
        (17, "THIN_DUPACK"),
        (18, "USER_TIMEOUT"),
        (19, "REPAIR"),
        (20, "REPAIR_QUEUE"),
        (21, "QUEUE_SEQ"),
        (22, "REPAIR_OPTIONS"),
        (23, "FASTOPEN"),
        (24, "TIMESTAMP"),
        (25, "NOTSENT_LOWAT"),
        (26, "CC_INFO"),
        (27, "SAVE_SYN"),
        (28, "SAVED_SYN"),
        (29, "REPAIR_WINDOW"),
        (30, "FASTOPEN_CONNECT"),
        (31, "ULP"),
        (32, "MD5SIG_EXT"),
        (33, "FASTOPEN_KEY"),
        (34, "FASTOPEN_NO_COOKIE"),
        (35, "ZEROCOPY_RECEIVE"),
        (36, "INQ"),
        (37, "TX_DELAY"),
    ],
};

/// SOL_IP's options (linux/in.h). The MCAST_ ones (42 to 48) are left as numbers: their
/// names do not take this table's prefix.
pub const IP_OPTNAME: Table = Table {
    prefix: "IP_",
    entries: &[
        (1, "TOS"),
        (2, "TTL"),
        (3, "HDRINCL"),
        (4, "OPTIONS"),
        (5, "ROUTER_ALERT"),
        (6, "RECVOPTS"),
        (7, "RETOPTS"),
        (8, "PKTINFO"),
        (9, "PKTOPTIONS"),
        (10, "MTU_DISCOVER"),
        (11, "RECVERR"),
        (12, "RECVTTL"),
        (13, "RECVTOS"),
        (14, "MTU"),
        (15, "FREEBIND"),
        (16, "IPSEC_POLICY"),
        (17, "XFRM_POLICY"),
        (18, "PASSSEC"),
        (19, "TRANSPARENT"),
        (20, "ORIGDSTADDR"),
        (21, "MINTTL"),
        (22, "NODEFRAG"),
        (23, "CHECKSUM"),
        (24, "BIND_ADDRESS_NO_PORT"),
        (25, "RECVFRAGSIZE"),
        (26, "RECVERR_RFC4884"),
        (32, "MULTICAST_IF"),
        (33, "MULTICAST_TTL"),
        (34, "MULTICAST_LOOP"),
        (35, "ADD_MEMBERSHIP"),
        (36, "DROP_MEMBERSHIP"),
        (37, "UNBLOCK_SOURCE"),
        (38, "BLOCK_SOURCE"),
        (39, "ADD_SOURCE_MEMBERSHIP"),
        (40, "DROP_SOURCE_MEMBERSHIP"),
        (41, "MSFILTER"),
        (49, "MULTICAST_ALL"),
        (50, "UNICAST_IF"),
        (51, "LOCAL_PORT_RANGE"),
        (52, "PROTOCOL"),
    ],
};

/// SOL_IPV6's options (linux/in6.h), the MCAST_ ones left as numbers as for SOL_IP.
pub const IPV6_OPTNAME: Table = Table {
    prefix: "IPV6_",
    entries: &[
        (1, "ADDRFORM"),
        (2, "2292PKTINFO"),
        (3, "2292HOPOPTS"),
        (4, "2292DSTOPTS"),
        (5, "2292RTHDR"),
        (6, "2292PKTOPTIONS"),
        (7, "CHECKSUM"),
        (8, "2292HOPLIMIT"),
        (9, "NEXTHOP"),
        (10, "AUTHHDR"),
        (11, "FLOWINFO"),
        (16, "UNICAST_HOPS"),
        (17, "MULTICAST_IF"),
        (18, "MULTICAST_HOPS"),
        (19, "MULTICAST_LOOP"),
        (20, "ADD_MEMBERSHIP"),
        (21, "DROP_MEMBERSHIP"),
        (22, "ROUTER_ALERT"),
        (23, "MTU_DISCOVER"),
        (24, "MTU"),
        (25, "RECVERR"),
        (26, "V6ONLY"),
        (27, "JOIN_ANYCAST"),
        (28, "LEAVE_ANYCAST"),
        (29, "MULTICAST_ALL"),
        (30, "ROUTER_ALERT_ISOLATE"),
        (31, "RECVERR_RFC4884"),
        (32, "FLOWLABEL_MGR"),
        (33, "FLOWINFO_SEND"),
        (34, "IPSEC_POLICY"),
        (35, "XFRM_POLICY"),
        (36, "HDRINCL"),
        (49, "RECVPKTINFO"),
        (50, "PKTINFO"),
        (51, "RECVHOPLIMIT"),
        (52, "HOPLIMIT"),
        (53, "RECVHOPOPTS"),
        (54, "HOPOPTS"),
        (55, "RTHDRDSTOPTS"),
        (56, "RECVRTHDR"),
        (57, "RTHDR"),
        (58, "RECVDSTOPTS"),
        (59, "DSTOPTS"),
        (60, "RECVPATHMTU"),
        (61, "PATHMTU"),
        (62, "DONTFRAG"),
        (63, "USE_MIN_MTU"),
        (66, "RECVTCLASS"),
        (67, "TCLASS"),
        (70, "AUTOFLOWLABEL"),
        (72, "ADDR_PREFERENCES"),
        (73, "MINHOPCOUNT"),
        (74, "ORIGDSTADDR"),
        (75, "TRANSPARENT"),
        (76, "UNICAST_IF"),
        (77, "RECVFRAGSIZE"),
        (78, "FREEBIND"),
    ],
};

pub const FCNTL_CMD: Table = Table {
    prefix: "F_",
    entries: &[
        (c!(libc::F_DUPFD), "DUPFD"),
        (c!(libc::F_GETFD), "GETFD"),
        (c!(libc::F_SETFD), "SETFD"),
        (c!(libc::F_GETFL), "GETFL"),
        (c!(libc::F_SETFL), "SETFL"),
        (c!(libc::F_GETLK), "GETLK"),
        (c!(libc::F_SETLK), "SETLK"),
        (c!(libc::F_SETLKW), "SETLKW"),
        (c!(libc::F_SETOWN), "SETOWN"),
        (c!(libc::F_GETOWN), "GETOWN"),
        (10, "SETSIG"),
        (11, "GETSIG"),
        (c!(libc::F_OFD_GETLK), "OFD_GETLK"),
        (c!(libc::F_OFD_SETLK), "OFD_SETLK"),
        (c!(libc::F_OFD_SETLKW), "OFD_SETLKW"),
        (c!(libc::F_SETLEASE), "SETLEASE"),
        (c!(libc::F_GETLEASE), "GETLEASE"),
        (c!(libc::F_NOTIFY), "NOTIFY"),
        (c!(libc::F_DUPFD_CLOEXEC), "DUPFD_CLOEXEC"),
        (c!(libc::F_SETPIPE_SZ), "SETPIPE_SZ"),
        (c!(libc::F_GETPIPE_SZ), "GETPIPE_SZ"),
        (c!(libc::F_ADD_SEALS), "ADD_SEALS"),
        (c!(libc::F_GET_SEALS), "GET_SEALS"),
    ],
};

pub const FUTEX_OP: Table = Table {
    prefix: "FUTEX_",
    entries: &[
        (0, "WAIT"),
        (1, "WAKE"),
        (2, "FD"),
        (3, "REQUEUE"),
        (4, "CMP_REQUEUE"),
        (5, "WAKE_OP"),
        (6, "LOCK_PI"),
        (7, "UNLOCK_PI"),
        (8, "TRYLOCK_PI"),
        (9, "WAIT_BITSET"),
        (10, "WAKE_BITSET"),
        (11, "WAIT_REQUEUE_PI"),
        (12, "CMP_REQUEUE_PI"),
        (13, "LOCK_PI2"),
    ],
};
/// futex's val3 for the BITSET commands.
pub const FUTEX_BITSET: Table = Table {
    prefix: "FUTEX_BITSET_",
    entries: &[(0xffff_ffff, "MATCH_ANY")],
};

/// fcntl F_SETFD's argument and F_GETFD's return.
pub const FD_FLAGS: Table = Table {
    prefix: "FD_",
    entries: &[(c!(libc::FD_CLOEXEC), "CLOEXEC")],
};

pub const FUTEX_OP_FLAGS: Table = Table {
    prefix: "FUTEX_",
    entries: &[(128, "PRIVATE_FLAG"), (256, "CLOCK_REALTIME")],
};

pub const LSEEK_WHENCE: Table = Table {
    prefix: "SEEK_",
    entries: &[
        (c!(libc::SEEK_SET), "SET"),
        (c!(libc::SEEK_CUR), "CUR"),
        (c!(libc::SEEK_END), "END"),
        (c!(libc::SEEK_DATA), "DATA"),
        (c!(libc::SEEK_HOLE), "HOLE"),
    ],
};

pub const PRCTL_OPTION: Table = Table {
    prefix: "PR_",
    entries: &[
        (c!(libc::PR_SET_PDEATHSIG), "SET_PDEATHSIG"),
        (c!(libc::PR_GET_PDEATHSIG), "GET_PDEATHSIG"),
        (c!(libc::PR_GET_DUMPABLE), "GET_DUMPABLE"),
        (c!(libc::PR_SET_DUMPABLE), "SET_DUMPABLE"),
        (c!(libc::PR_GET_KEEPCAPS), "GET_KEEPCAPS"),
        (c!(libc::PR_SET_KEEPCAPS), "SET_KEEPCAPS"),
        (c!(libc::PR_SET_NAME), "SET_NAME"),
        (c!(libc::PR_GET_NAME), "GET_NAME"),
        (c!(libc::PR_GET_SECCOMP), "GET_SECCOMP"),
        (c!(libc::PR_SET_SECCOMP), "SET_SECCOMP"),
        (c!(libc::PR_CAPBSET_READ), "CAPBSET_READ"),
        (c!(libc::PR_CAPBSET_DROP), "CAPBSET_DROP"),
        (c!(libc::PR_GET_TIMERSLACK), "GET_TIMERSLACK"),
        (c!(libc::PR_SET_TIMERSLACK), "SET_TIMERSLACK"),
        (c!(libc::PR_SET_MM), "SET_MM"),
        (c!(libc::PR_SET_CHILD_SUBREAPER), "SET_CHILD_SUBREAPER"),
        (c!(libc::PR_GET_CHILD_SUBREAPER), "GET_CHILD_SUBREAPER"),
        (c!(libc::PR_SET_NO_NEW_PRIVS), "SET_NO_NEW_PRIVS"),
        (c!(libc::PR_GET_NO_NEW_PRIVS), "GET_NO_NEW_PRIVS"),
        (c!(libc::PR_GET_TID_ADDRESS), "GET_TID_ADDRESS"),
        (c!(libc::PR_SET_THP_DISABLE), "SET_THP_DISABLE"),
        (c!(libc::PR_GET_THP_DISABLE), "GET_THP_DISABLE"),
        (c!(libc::PR_CAP_AMBIENT), "CAP_AMBIENT"),
        (0x53564d41, "SET_VMA"),
    ],
};

pub const IOCTL_CMD: Table = Table {
    prefix: "",
    entries: &[
        (0x5401, "TCGETS"),
        (0x5402, "TCSETS"),
        (0x5403, "TCSETSW"),
        (0x5404, "TCSETSF"),
        (0x540B, "TCFLSH"),
        (0x540E, "TIOCSCTTY"),
        (0x540F, "TIOCGPGRP"),
        (0x5410, "TIOCSPGRP"),
        (0x5413, "TIOCGWINSZ"),
        (0x5414, "TIOCSWINSZ"),
        (0x541B, "FIONREAD"),
        (0x5421, "FIONBIO"),
        (0x5450, "FIONCLEX"),
        (0x5451, "FIOCLEX"),
        (0x5452, "FIOASYNC"),
        (0x5429, "TIOCGSID"),
        (0x80045430, "TIOCGPTN"),
        (0x40045431, "TIOCSPTLCK"),
        // linux/fs.h, the same numbers on every architecture rtrace decodes: cp's
        // reflink attempt (strace: `BTRFS_IOC_CLONE or FICLONE`).
        (0x40049409, "FICLONE"),
        (0x4020940d, "FICLONERANGE"),
        (0xc0189436, "FIDEDUPERANGE"),
    ],
};

pub const GETRANDOM_FLAGS: Table = Table {
    prefix: "GRND_",
    entries: &[(1, "NONBLOCK"), (2, "RANDOM"), (4, "INSECURE")],
};

pub const STATX_MASK: Table = Table {
    prefix: "STATX_",
    entries: &[
        (0x1, "TYPE"),
        (0x2, "MODE"),
        (0x4, "NLINK"),
        (0x8, "UID"),
        (0x10, "GID"),
        (0x20, "ATIME"),
        (0x40, "MTIME"),
        (0x80, "CTIME"),
        (0x100, "INO"),
        (0x200, "SIZE"),
        (0x400, "BLOCKS"),
        (0x800, "BTIME"),
        (0x1000, "MNT_ID"),
        (0x2000, "DIOALIGN"),
        (0x4000, "MNT_ID_UNIQUE"),
    ],
};

pub const AT_FLAGS: Table = Table {
    prefix: "AT_",
    entries: &[
        (c!(libc::AT_SYMLINK_NOFOLLOW), "SYMLINK_NOFOLLOW"),
        (c!(libc::AT_REMOVEDIR), "REMOVEDIR"),
        (c!(libc::AT_SYMLINK_FOLLOW), "SYMLINK_FOLLOW"),
        (c!(libc::AT_NO_AUTOMOUNT), "NO_AUTOMOUNT"),
        (c!(libc::AT_EMPTY_PATH), "EMPTY_PATH"),
        (0x2000, "STATX_FORCE_SYNC"),
        (0x4000, "STATX_DONT_SYNC"),
        (0x8000, "RECURSIVE"),
    ],
};

/// flock's operation (sys/file.h; strace: `LOCK_EX|LOCK_NB`).
pub const FLOCK_OP: Table = Table {
    prefix: "LOCK_",
    entries: &[(1, "SH"), (2, "EX"), (4, "NB"), (8, "UN")],
};

/// set_mempolicy's and mbind's mode (linux/mempolicy.h, the same on every
/// architecture); a mode with its MPOL_F_* flags stays a number.
pub const MPOL_MODE: Table = Table {
    prefix: "MPOL_",
    entries: &[
        (0, "DEFAULT"),
        (1, "PREFERRED"),
        (2, "BIND"),
        (3, "INTERLEAVE"),
        (4, "LOCAL"),
        (5, "PREFERRED_MANY"),
        (6, "WEIGHTED_INTERLEAVE"),
    ],
};

pub const WAIT_OPTIONS: Table = Table {
    prefix: "W",
    entries: &[
        (c!(libc::WNOHANG), "NOHANG"),
        (c!(libc::WUNTRACED), "UNTRACED"),
        (c!(libc::WEXITED), "EXITED"),
        (c!(libc::WCONTINUED), "CONTINUED"),
        (c!(libc::WNOWAIT), "NOWAIT"),
        (0x2000_0000, "NOTHREAD"),
        (0x4000_0000, "ALL"),
        (0x8000_0000, "CLONE"),
    ],
};

pub const PIPE_FLAGS: Table = Table {
    prefix: "O_",
    entries: &[
        (c!(libc::O_CLOEXEC), "CLOEXEC"),
        (c!(libc::O_NONBLOCK), "NONBLOCK"),
        (c!(libc::O_DIRECT), "DIRECT"),
    ],
};

/// eventfd2's flags (sys/eventfd.h: O_CLOEXEC, O_NONBLOCK and a counter that counts
/// down by one).
pub const EVENTFD_FLAGS: Table = Table {
    prefix: "EFD_",
    entries: &[
        (c!(libc::EFD_CLOEXEC), "CLOEXEC"),
        (c!(libc::EFD_NONBLOCK), "NONBLOCK"),
        (c!(libc::EFD_SEMAPHORE), "SEMAPHORE"),
    ],
};

/// epoll_create1's flags: O_CLOEXEC is the only one.
pub const EPOLL_CREATE_FLAGS: Table = Table {
    prefix: "EPOLL_",
    entries: &[(c!(libc::EPOLL_CLOEXEC), "CLOEXEC")],
};

/// signalfd4's flags.
pub const SIGNALFD_FLAGS: Table = Table {
    prefix: "SFD_",
    entries: &[
        (c!(libc::SFD_CLOEXEC), "CLOEXEC"),
        (c!(libc::SFD_NONBLOCK), "NONBLOCK"),
    ],
};

/// memfd_create's flags (linux/memfd.h). A huge page size, in the six bits from bit 26,
/// has no name here and is left in the hex remainder.
pub const MEMFD_FLAGS: Table = Table {
    prefix: "MFD_",
    entries: &[
        (c!(libc::MFD_CLOEXEC), "CLOEXEC"),
        (c!(libc::MFD_ALLOW_SEALING), "ALLOW_SEALING"),
        (c!(libc::MFD_HUGETLB), "HUGETLB"),
        (c!(libc::MFD_NOEXEC_SEAL), "NOEXEC_SEAL"),
        (c!(libc::MFD_EXEC), "EXEC"),
    ],
};

/// pidfd_open's flags (linux/pidfd.h): PIDFD_THREAD (Linux 6.9) is O_EXCL.
pub const PIDFD_OPEN_FLAGS: Table = Table {
    prefix: "PIDFD_",
    entries: &[
        (c!(libc::PIDFD_NONBLOCK), "NONBLOCK"),
        (c!(libc::PIDFD_THREAD), "THREAD"),
    ],
};

pub const EPOLL_CTL_OP: Table = Table {
    prefix: "EPOLL_CTL_",
    entries: &[
        (c!(libc::EPOLL_CTL_ADD), "ADD"),
        (c!(libc::EPOLL_CTL_DEL), "DEL"),
        (c!(libc::EPOLL_CTL_MOD), "MOD"),
    ],
};

pub const ARCH_PRCTL: Table = Table {
    prefix: "ARCH_",
    entries: &[
        (0x1001, "SET_GS"),
        (0x1002, "SET_FS"),
        (0x1003, "GET_FS"),
        (0x1004, "GET_GS"),
        (0x1011, "GET_CPUID"),
        (0x1012, "SET_CPUID"),
        (0x2001, "MAP_VDSO_X32"),
        (0x2002, "MAP_VDSO_32"),
        (0x2003, "MAP_VDSO_64"),
        (0x3001, "SHSTK_ENABLE"),
        (0x3002, "SHSTK_DISABLE"),
        (0x3003, "SHSTK_LOCK"),
        (0x3004, "SHSTK_UNLOCK"),
        (0x3005, "SHSTK_STATUS"),
    ],
};

pub const RLIMIT_RESOURCE: Table = Table {
    prefix: "RLIMIT_",
    entries: &[
        (0, "CPU"),
        (1, "FSIZE"),
        (2, "DATA"),
        (3, "STACK"),
        (4, "CORE"),
        (5, "RSS"),
        (6, "NPROC"),
        (7, "NOFILE"),
        (8, "MEMLOCK"),
        (9, "AS"),
        (10, "LOCKS"),
        (11, "SIGPENDING"),
        (12, "MSGQUEUE"),
        (13, "NICE"),
        (14, "RTPRIO"),
        (15, "RTTIME"),
    ],
};

pub const CLOCK_ID: Table = Table {
    prefix: "CLOCK_",
    entries: &[
        (0, "REALTIME"),
        (1, "MONOTONIC"),
        (2, "PROCESS_CPUTIME_ID"),
        (3, "THREAD_CPUTIME_ID"),
        (4, "MONOTONIC_RAW"),
        (5, "REALTIME_COARSE"),
        (6, "MONOTONIC_COARSE"),
        (7, "BOOTTIME"),
        (8, "REALTIME_ALARM"),
        (9, "BOOTTIME_ALARM"),
        (11, "TAI"),
    ],
};

pub const CLOCK_NANOSLEEP_FLAGS: Table = Table {
    prefix: "",
    entries: &[(1, "TIMER_ABSTIME")],
};

pub const RENAME_FLAGS: Table = Table {
    prefix: "RENAME_",
    entries: &[(1, "NOREPLACE"), (2, "EXCHANGE"), (4, "WHITEOUT")],
};

pub const TIMERFD_FLAGS: Table = Table {
    prefix: "TFD_",
    entries: &[
        (c!(libc::TFD_CLOEXEC), "CLOEXEC"),
        (c!(libc::TFD_NONBLOCK), "NONBLOCK"),
    ],
};

pub const TIMERFD_SETTIME_FLAGS: Table = Table {
    prefix: "TFD_",
    entries: &[(1, "TIMER_ABSTIME"), (2, "TIMER_CANCEL_ON_SET")],
};

pub const TIMER_SETTIME_FLAGS: Table = Table {
    prefix: "",
    entries: &[(1, "TIMER_ABSTIME")],
};

pub const ITIMER_WHICH: Table = Table {
    prefix: "ITIMER_",
    entries: &[(0, "REAL"), (1, "VIRTUAL"), (2, "PROF")],
};

pub const POLL_EVENTS: Table = Table {
    prefix: "POLL",
    entries: &[
        (0x1, "IN"),
        (0x2, "PRI"),
        (0x4, "OUT"),
        (0x8, "ERR"),
        (0x10, "HUP"),
        (0x20, "NVAL"),
        (0x40, "RDNORM"),
        (0x80, "RDBAND"),
        (0x100, "WRNORM"),
        (0x200, "WRBAND"),
        (0x400, "MSG"),
        (0x1000, "REMOVE"),
        (0x2000, "RDHUP"),
    ],
};

/// Capabilities (linux/capability.h), for prctl's capability options.
pub const CAPABILITY: Table = Table {
    prefix: "CAP_",
    entries: &[
        (0, "CHOWN"),
        (1, "DAC_OVERRIDE"),
        (2, "DAC_READ_SEARCH"),
        (3, "FOWNER"),
        (4, "FSETID"),
        (5, "KILL"),
        (6, "SETGID"),
        (7, "SETUID"),
        (8, "SETPCAP"),
        (9, "LINUX_IMMUTABLE"),
        (10, "NET_BIND_SERVICE"),
        (11, "NET_BROADCAST"),
        (12, "NET_ADMIN"),
        (13, "NET_RAW"),
        (14, "IPC_LOCK"),
        (15, "IPC_OWNER"),
        (16, "SYS_MODULE"),
        (17, "SYS_RAWIO"),
        (18, "SYS_CHROOT"),
        (19, "SYS_PTRACE"),
        (20, "SYS_PACCT"),
        (21, "SYS_ADMIN"),
        (22, "SYS_BOOT"),
        (23, "SYS_NICE"),
        (24, "SYS_RESOURCE"),
        (25, "SYS_TIME"),
        (26, "SYS_TTY_CONFIG"),
        (27, "MKNOD"),
        (28, "LEASE"),
        (29, "AUDIT_WRITE"),
        (30, "AUDIT_CONTROL"),
        (31, "SETFCAP"),
        (32, "MAC_OVERRIDE"),
        (33, "MAC_ADMIN"),
        (34, "SYSLOG"),
        (35, "WAKE_ALARM"),
        (36, "BLOCK_SUSPEND"),
        (37, "AUDIT_READ"),
        (38, "PERFMON"),
        (39, "BPF"),
        (40, "CHECKPOINT_RESTORE"),
    ],
};

/// PR_CAP_AMBIENT's operations.
pub const CAP_AMBIENT_OP: Table = Table {
    prefix: "PR_CAP_AMBIENT_",
    entries: &[(1, "IS_SET"), (2, "RAISE"), (3, "LOWER"), (4, "CLEAR_ALL")],
};

#[cfg(test)]
mod every_table {
    use super::*;

    /// Every table, by name.
    const ALL: &[(&str, &Table)] = &[
        ("MSG_FLAGS", &MSG_FLAGS),
        ("SHUTDOWN_HOW", &SHUTDOWN_HOW),
        ("FADVISE", &FADVISE),
        ("INOTIFY_MASK", &INOTIFY_MASK),
        ("INOTIFY_INIT_FLAGS", &INOTIFY_INIT_FLAGS),
        ("OPEN_FLAGS", &OPEN_FLAGS),
        ("MODE", &MODE),
        ("ACCESS_MODE", &ACCESS_MODE),
        ("PROT", &PROT),
        ("MMAP_FLAGS", &MMAP_FLAGS),
        ("MREMAP_FLAGS", &MREMAP_FLAGS),
        ("MADVISE", &MADVISE),
        ("CLONE_FLAGS", &CLONE_FLAGS),
        ("SIGNALS", &SIGNALS),
        ("SA_FLAGS", &SA_FLAGS),
        ("SIGPROCMASK_HOW", &SIGPROCMASK_HOW),
        ("SOCKET_FAMILY", &SOCKET_FAMILY),
        ("SOCKET_TYPE", &SOCKET_TYPE),
        ("SOCKET_TYPE_FLAGS", &SOCKET_TYPE_FLAGS),
        ("IP_PROTOCOL", &IP_PROTOCOL),
        ("SOCKOPT_LEVEL", &SOCKOPT_LEVEL),
        ("SO_OPTNAME", &SO_OPTNAME),
        ("TCP_OPTNAME", &TCP_OPTNAME),
        ("IP_OPTNAME", &IP_OPTNAME),
        ("IPV6_OPTNAME", &IPV6_OPTNAME),
        ("FCNTL_CMD", &FCNTL_CMD),
        ("FUTEX_OP", &FUTEX_OP),
        ("FUTEX_BITSET", &FUTEX_BITSET),
        ("FD_FLAGS", &FD_FLAGS),
        ("FUTEX_OP_FLAGS", &FUTEX_OP_FLAGS),
        ("LSEEK_WHENCE", &LSEEK_WHENCE),
        ("PRCTL_OPTION", &PRCTL_OPTION),
        ("IOCTL_CMD", &IOCTL_CMD),
        ("GETRANDOM_FLAGS", &GETRANDOM_FLAGS),
        ("STATX_MASK", &STATX_MASK),
        ("AT_FLAGS", &AT_FLAGS),
        ("WAIT_OPTIONS", &WAIT_OPTIONS),
        ("FLOCK_OP", &FLOCK_OP),
        ("MPOL_MODE", &MPOL_MODE),
        ("PIPE_FLAGS", &PIPE_FLAGS),
        ("EVENTFD_FLAGS", &EVENTFD_FLAGS),
        ("EPOLL_CREATE_FLAGS", &EPOLL_CREATE_FLAGS),
        ("SIGNALFD_FLAGS", &SIGNALFD_FLAGS),
        ("MEMFD_FLAGS", &MEMFD_FLAGS),
        ("PIDFD_OPEN_FLAGS", &PIDFD_OPEN_FLAGS),
        ("EPOLL_CTL_OP", &EPOLL_CTL_OP),
        ("ARCH_PRCTL", &ARCH_PRCTL),
        ("RLIMIT_RESOURCE", &RLIMIT_RESOURCE),
        ("CLOCK_ID", &CLOCK_ID),
        ("CLOCK_NANOSLEEP_FLAGS", &CLOCK_NANOSLEEP_FLAGS),
        ("RENAME_FLAGS", &RENAME_FLAGS),
        ("TIMERFD_FLAGS", &TIMERFD_FLAGS),
        ("TIMERFD_SETTIME_FLAGS", &TIMERFD_SETTIME_FLAGS),
        ("TIMER_SETTIME_FLAGS", &TIMER_SETTIME_FLAGS),
        ("ITIMER_WHICH", &ITIMER_WHICH),
        ("POLL_EVENTS", &POLL_EVENTS),
        ("CAPABILITY", &CAPABILITY),
        ("CAP_AMBIENT_OP", &CAP_AMBIENT_OP),
    ];

    /// Whatever the value, the names and the hex remainder `write_flags` prints give
    /// back every bit of it: no flags field drops bits it has no name for.
    #[test]
    fn flags_printed_give_back_every_bit() {
        let values = [
            u64::MAX,
            0xffff_ffff_0000_0000,
            0x8000_0001,
            0x1234_5678_9abc_def0,
        ];
        for (name, table) in ALL {
            for &v in &values {
                let mut out = String::new();
                crate::decode::beauty::write_flags(&mut out, v, table, false);
                let back = out.split('|').fold(0u64, |acc, part| {
                    let bits = match part.strip_prefix("0x") {
                        Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
                        None => {
                            table
                                .entries
                                .iter()
                                .find(|(_, n)| *n == part)
                                .unwrap_or_else(|| panic!("{name}: {part}?"))
                                .0
                        }
                    };
                    acc | bits
                });
                assert_eq!(back, v, "{name}: {v:#x} printed as {out}");
            }
        }
    }

    /// A C `int` constant with its top bit set (SA_RESETHAND, CLONE_IO) must not be
    /// sign-extended into the 64-bit value it is matched against: the high bits would
    /// then be taken for part of its name, and a value without them would not match.
    #[test]
    fn no_value_is_a_sign_extended_int() {
        let wrong: Vec<String> = ALL
            .iter()
            .flat_map(|(name, table)| {
                table
                    .entries
                    .iter()
                    .filter(|(v, _)| v >> 32 == 0xffff_ffff)
                    .map(move |(v, entry)| format!("{name}: {entry} is {v:#x}"))
            })
            .collect();
        assert!(wrong.is_empty(), "ints sign-extended: {wrong:#?}");
    }
}
