//! What the fd table learns from the system, which the table itself never reads: each
//! target's fds and working directory from /proc when tracing starts, the fds rtrace
//! was started with, and the real file system behind [`Canon`].

use procfs::process::{FDTarget, Process};

use crate::{
    clock::monotonic_ns,
    decode::fd_table::{Canon, ProcSeed},
};

/// Reads the working directory and the fds of each process in `pids` from `/proc`;
/// `command`'s fds are the ones rtrace was started with (left `None`: the command
/// rtrace runs, read while it is held, still has rtrace's close-on-exec pipes open).
pub fn read(pids: impl IntoIterator<Item = u32>, command: Option<u32>) -> Vec<ProcSeed> {
    pids.into_iter()
        .map(|pid| {
            let before_ns = monotonic_ns();
            let process = i32::try_from(pid).ok().and_then(|p| Process::new(p).ok());
            let path = process
                .as_ref()
                .and_then(|p| p.cwd().ok())
                .map(|p| p.into_os_string().into_encoded_bytes().into_boxed_slice());
            let fds = (Some(pid) != command)
                .then(|| process.as_ref().map(|p| fds_of(pid, p)).unwrap_or_default());
            ProcSeed {
                pid,
                path,
                before_ns,
                after_ns: monotonic_ns(),
                fds,
                same_view: same_view(pid),
            }
        })
        .collect()
}

/// The fds /proc lists for `process` and what each refers to.
fn fds_of(pid: u32, process: &Process) -> Vec<(i32, Box<[u8]>)> {
    let Ok(fds) = process.fd() else {
        return Vec::new();
    };
    fds.filter_map(|f| {
        let fd = f.ok()?.fd;
        Some((fd, fd_link(pid, fd)?))
    })
    .collect()
}

/// What /proc/<pid>/fd/<fd> links to, as the kernel spells it (`/etc/hostname`,
/// `socket:[123]`, `pipe:[45]`, `anon_inode:[eventfd]`).
fn fd_link(pid: u32, fd: i32) -> Option<Box<[u8]>> {
    let info = Process::new(i32::try_from(pid).ok()?)
        .ok()?
        .fd_from_fd(fd)
        .ok()?;
    let text = match info.target {
        FDTarget::Path(p) => return Some(p.into_os_string().into_encoded_bytes().into()),
        FDTarget::Socket(i) => format!("socket:[{i}]"),
        FDTarget::Net(i) => format!("net:[{i}]"),
        FDTarget::Pipe(i) => format!("pipe:[{i}]"),
        FDTarget::AnonInode(k) => format!("anon_inode:{k}"),
        FDTarget::MemFD(name) => format!("/memfd:{name}"),
        FDTarget::Other(kind, i) => format!("{kind}:[{i}]"),
        FDTarget::Unknown(kind, rest) => format!("{kind}:{rest}"),
    };
    Some(text.into_bytes().into_boxed_slice())
}

/// The fds rtrace itself was started with, and what they refer to: the ones a command it
/// runs keeps after its exec (rtrace opens everything of its own close-on-exec). Taken
/// once, first thing in `main`, before rtrace opens anything.
static INHERITED: std::sync::OnceLock<Vec<(i32, Box<[u8]>)>> = std::sync::OnceLock::new();

/// The fds rtrace was started with (those a command it runs inherits).
pub fn inherited_fds() -> &'static [(i32, Box<[u8]>)] {
    INHERITED.get().map_or(&[][..], Vec::as_slice)
}

pub fn snapshot_inherited_fds() {
    let _ = INHERITED.set(open_fds());
}

/// This process's open fds and what they refer to. The numbers are listed first and the
/// listing closed: the /proc directories it held open are not fds of the process
/// (they were taken as inherited fds named `/proc/<pid>/fd`), and their numbers no longer
/// read. Each link is read by path, which holds no fd.
fn open_fds() -> Vec<(i32, Box<[u8]>)> {
    let numbers: Vec<i32> = Process::myself()
        .and_then(|p| p.fd())
        .map(|fds| fds.filter_map(|f| Some(f.ok()?.fd)).collect())
        .unwrap_or_default();
    numbers
        .into_iter()
        .filter_map(|fd| {
            let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
            Some((fd, link.into_os_string().into_encoded_bytes().into()))
        })
        .collect()
}

/// Whether `pid` has rtrace's root directory and mount namespace.
fn same_view(pid: u32) -> bool {
    fn mnt_ns(p: &Process) -> Option<u64> {
        let all = p.namespaces().ok()?;
        Some(all.0.get(std::ffi::OsStr::new("mnt"))?.identifier)
    }
    // rtrace's own, read once.
    static MINE: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let mine = *MINE.get_or_init(|| Process::myself().ok().as_ref().and_then(mnt_ns));
    let Some(other) = i32::try_from(pid).ok().and_then(|p| Process::new(p).ok()) else {
        return false;
    };
    let root_is_slash = other.root().is_ok_and(|r| r == std::path::Path::new("/"));
    root_is_slash && mine.is_some() && mine == mnt_ns(&other)
}

/// The file system as rtrace sees it.
pub struct ProcCanon;

impl Canon for ProcCanon {
    fn same_view(&self, pid: u32) -> bool {
        same_view(pid)
    }

    fn canonical(&self, path: &[u8]) -> Option<Box<[u8]>> {
        use std::os::unix::ffi::OsStrExt as _;
        let real = std::fs::canonicalize(std::ffi::OsStr::from_bytes(path)).ok()?;
        Some(
            real.into_os_string()
                .into_encoded_bytes()
                .into_boxed_slice(),
        )
    }
}

#[cfg(test)]
mod tests {
    use trace_common::{
        SyscallRecord,
        record::{KIND_SYSCALL, REC_HAS_ENTRY, REC_HAS_EXIT},
    };

    use super::*;
    use crate::decode::{SyscallInfo, fd_table::FdTable};

    /// Run alone by the test below (other tests of this process open files meanwhile).
    #[test]
    #[ignore = "run by the_fds_listed_are_the_process_own_not_the_listing, in a process of its own"]
    fn open_fds_alone() {
        let me = std::process::id();
        let fds = open_fds();
        assert!(!fds.is_empty());
        for (fd, path) in &fds {
            assert!(
                !path.starts_with(format!("/proc/{me}").as_bytes()),
                "fd {fd}: {}",
                String::from_utf8_lossy(path)
            );
        }
    }

    #[test]
    fn the_fds_listed_are_the_process_own_not_the_listing() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "pids::fd_seed::tests::open_fds_alone"])
            .args(["--ignored", "--test-threads=1", "--nocapture"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
    }

    #[test]
    fn fd_links_read_as_the_kernel_spells_them() {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        let (r, w) = std::io::pipe().unwrap();
        let sock = std::os::unix::net::UnixDatagram::unbound().unwrap();
        // SAFETY: eventfd with valid flags; the fd is closed below.
        let ev = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        let me = std::process::id();
        for fd in [
            file.as_raw_fd(),
            r.as_raw_fd(),
            w.as_raw_fd(),
            sock.as_raw_fd(),
            ev,
        ] {
            let want = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
            let got = fd_link(me, fd).unwrap();
            assert_eq!(&*got, want.as_os_str().as_encoded_bytes(), "fd {fd}");
        }
        // SAFETY: closing the eventfd made above.
        unsafe { libc::close(ev) };
        assert_eq!(fd_link(me, 1_000_000), None);
    }

    #[test]
    fn seeds_from_proc() {
        let mut t = FdTable::new(true, true, ProcCanon);
        let f = std::fs::File::open("/proc/self/stat").unwrap();
        use std::os::fd::AsRawFd;
        let me = std::process::id();
        t.seed_procs(read([me], None), &[]);
        assert!(t.path(me, f.as_raw_fd()).unwrap().ends_with(b"/stat"));
        assert!(t.cwd(me).is_some());
        // A child forked after: the parent's fds are its own.
        let clone = SyscallInfo::new("clone", None);
        let r = SyscallRecord {
            kind: KIND_SYSCALL,
            flags: REC_HAS_ENTRY | REC_HAS_EXIT,
            nr: 0,
            tid: me,
            pid: me,
            enter_ns: 1,
            exit_ns: 2,
            args: [0x11, 0, 0, 0, 0, 0],
            ret: 4_000_001,
            comm: [0; 16],
            aug_len: [0; 2],
            aug_arg: [0xff; 2],
            aug_cut: [0; 2],
        };
        t.update(&r, &clone, None, None);
        assert!(
            t.path(4_000_001, f.as_raw_fd())
                .unwrap()
                .ends_with(b"/stat")
        );
        // The command rtrace runs: the fds rtrace was started with, not the held
        // child's pipes.
        let seed = &read([me], Some(me))[0];
        assert!(seed.fds.is_none());
        // Asked when read (a command may be gone by the time the reader starts).
        assert!(seed.same_view);
        assert!(!read([4_000_000], None)[0].same_view);
    }

    #[test]
    fn canonical_resolves_links_and_leaves_what_is_gone() {
        let dir = std::env::temp_dir().join(format!("rtrace-canon-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("real")).unwrap();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(dir.join("real"), &link).unwrap();
        let through = link.join("..").join("link");
        let got = ProcCanon.canonical(through.as_os_str().as_encoded_bytes());
        let want = std::fs::canonicalize(dir.join("real")).unwrap();
        assert_eq!(got.as_deref(), Some(want.as_os_str().as_encoded_bytes()));
        assert_eq!(ProcCanon.canonical(b"/no/such/rtrace/path"), None);
        assert!(ProcCanon.same_view(std::process::id()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
