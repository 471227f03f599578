//! When the kernel refuses for want of a resource (a descriptor, memory), the message
//! names that resource and the limit that ran out, whatever layer the refusal passed
//! through: aya's map and program errors keep the errno in their source chain, where a
//! one-line message would otherwise lose it (`failed to create map 'errno_stats'`).

use std::{
    error::Error,
    io,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};

/// The error as one line naming the limit it hit, if its chain holds one: its own
/// message up to any verifier log (which says nothing of a descriptor or memory that
/// ran out), then the limit.
pub fn one_line(err: &(dyn Error + 'static)) -> Option<String> {
    one_line_of(err, explain(err)?)
}

/// As [`one_line`], for descriptors only (EMFILE, ENFILE): the one limit that is
/// rtrace's own whatever step ran out of it (tracefs, /proc, the command's start).
pub fn fd_line(err: &(dyn Error + 'static)) -> Option<String> {
    let why = explain(err)?;
    let fds = first_errno(err).is_some_and(|e| matches!(e, libc::EMFILE | libc::ENFILE));
    fds.then(|| one_line_of(err, why)).flatten()
}

fn one_line_of(err: &(dyn Error + 'static), why: String) -> Option<String> {
    let shown = err.to_string();
    let head = shown.split(" Verifier output").next().unwrap_or_default();
    let head = head
        .lines()
        .next()
        .unwrap_or_default()
        .trim_end_matches('.');
    Some(format!("{head}: {why}"))
}

/// The resource a refusal ran out of, and what to do, if the error's chain holds one
/// whose message does not say so already.
pub fn explain(err: &(dyn Error + 'static)) -> Option<String> {
    let shown = err.to_string();
    let why = why(first_errno(err)?)?;
    (!shown.contains(&why)).then_some(why)
}

/// The first errno in the error's chain: in an io::Error, also one that wraps another
/// error (whose `source` skips the wrapped error itself), and in procfs's, which keeps
/// its io::Error without a `source`.
fn first_errno(err: &(dyn Error + 'static)) -> Option<i32> {
    let mut cause = err.source();
    while let Some(c) = cause {
        if let Some(n) = errno_in(c) {
            return Some(n);
        }
        cause = c.source();
    }
    None
}

fn errno_in(e: &(dyn Error + 'static)) -> Option<i32> {
    if let Some(io) = e.downcast_ref::<io::Error>() {
        return io.raw_os_error().or_else(|| errno_in(io.get_ref()?));
    }
    match e.downcast_ref::<procfs::ProcError>()? {
        procfs::ProcError::Io(io, _) => errno_in(io),
        _ => None,
    }
}

/// The sentence for an errno that means a limit, with the limit read now.
fn why(errno: i32) -> Option<String> {
    Some(match errno {
        // rtrace raised its soft limit to the hard one already: only the hard one can
        // be raised further.
        libc::EMFILE if RAISED.load(Ordering::Relaxed) => format!(
            "too many open files (the hard limit, ulimit -Hn, is {}; rtrace raised its soft limit to it): rtrace needs a descriptor per map, program and CPU — raise the hard limit, e.g. ulimit -Hn 4096",
            nofile_limit().map_or("unknown".into(), |n| n.to_string())
        ),
        libc::EMFILE => format!(
            "too many open files (ulimit -n is {}): rtrace needs a descriptor per map, program and CPU — raise it, e.g. ulimit -n 4096",
            nofile_limit().map_or("unknown".into(), |n| n.to_string())
        ),
        libc::ENFILE => "the system's table of open files is full (fs.file-max)".into(),
        libc::ENOMEM => "the kernel refused the memory (ENOMEM): lower -m/--mmap-pages or RTRACE_SUMMARY_ENTRIES; before Linux 5.11, raise ulimit -l".into(),
        libc::EPERM => "the kernel refused it (EPERM) although rtrace has its capabilities: kernel lockdown, an LSM or seccomp policy, or, before Linux 5.11, ulimit -l".into(),
        _ => return None,
    })
}

/// The open-files limit rtrace was started with, kept for the command it runs (soft,
/// hard), once [`raise_fd_limit`] has raised rtrace's own.
static INHERITED_NOFILE: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
static RAISED: AtomicBool = AtomicBool::new(false);

/// Raises rtrace's soft limit on open files to its hard limit, as perf does: rtrace
/// holds a descriptor per map, program and CPU (per CPU and event with -F or
/// events), and a soft limit of 1024 runs out on a large machine. The command it runs
/// gets the limit rtrace was given ([`restore_fd_limit`]).
pub fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-parameter.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0
        || lim.rlim_cur >= lim.rlim_max
    {
        return;
    }
    INHERITED_NOFILE[0].store(lim.rlim_cur, Ordering::Relaxed);
    INHERITED_NOFILE[1].store(lim.rlim_max, Ordering::Relaxed);
    let raised = libc::rlimit {
        rlim_cur: lim.rlim_max,
        rlim_max: lim.rlim_max,
    };
    // SAFETY: a valid rlimit; raising the soft limit up to the hard one needs no
    // privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        RAISED.store(true, Ordering::Relaxed);
    }
}

/// In a forked child about to exec the user's command: gives it back the open-files
/// limit rtrace was started with. Async-signal-safe (atomic loads and one syscall).
pub fn restore_fd_limit() {
    if !RAISED.load(Ordering::Relaxed) {
        return;
    }
    let lim = libc::rlimit {
        rlim_cur: INHERITED_NOFILE[0].load(Ordering::Relaxed),
        rlim_max: INHERITED_NOFILE[1].load(Ordering::Relaxed),
    };
    // SAFETY: a valid rlimit, lowering the soft limit only; the syscall itself (a libc
    // wrapper may take locks to set it in every thread, as musl's can).
    unsafe {
        libc::syscall(
            libc::SYS_prlimit64,
            0,
            libc::RLIMIT_NOFILE,
            &lim as *const libc::rlimit,
            std::ptr::null_mut::<libc::rlimit>(),
        )
    };
}

/// The soft limit on open files.
fn nofile_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-parameter.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0).then_some(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("failed to create map 'errno_stats'")]
    struct MapFailed(#[source] io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("loading the eBPF programs failed: {0}")]
    struct LoadFailed(#[source] MapFailed);

    #[test]
    fn the_errno_deep_in_the_chain_is_named() {
        let e = LoadFailed(MapFailed(io::Error::from_raw_os_error(libc::EMFILE)));
        let why = explain(&e).unwrap();
        assert!(
            why.starts_with("too many open files (ulimit -n is "),
            "{why}"
        );
        let e = LoadFailed(MapFailed(io::Error::from_raw_os_error(libc::ENOMEM)));
        assert!(explain(&e).unwrap().contains("ENOMEM"));
        // Other errors, and none at all, add nothing.
        let e = LoadFailed(MapFailed(io::Error::from_raw_os_error(libc::EINVAL)));
        assert_eq!(explain(&e), None);
        assert_eq!(explain(&io::Error::other("plain")), None);
    }

    #[derive(Debug, thiserror::Error)]
    #[error("attaching x failed: returned Too many open files. Verifier output: a\nb\nc")]
    struct WithLog(#[source] io::Error);

    #[test]
    fn a_verifier_log_is_left_out() {
        let line = one_line(&WithLog(io::Error::from_raw_os_error(libc::EMFILE))).unwrap();
        assert!(
            line.starts_with("attaching x failed: returned Too many open files: too many open files (ulimit -n is "),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }

    #[derive(Debug, thiserror::Error)]
    #[error("reading /proc/self/ns/pid: {0}")]
    struct ProcFailed(#[source] io::Error);

    #[test]
    fn the_fd_limit_is_found_inside_wrapped_and_procfs_errors() {
        // musl's text for EMFILE says nothing of files: the errno is what counts.
        let emfile = || io::Error::from_raw_os_error(libc::EMFILE);
        let proc = procfs::ProcError::Io(emfile(), Some("/proc/self/ns".into()));
        let e = ProcFailed(io::Error::other(proc));
        let line = fd_line(&e).unwrap();
        assert!(line.starts_with("reading /proc/self/ns/pid: "), "{line}");
        assert!(
            line.contains("too many open files (ulimit -n is "),
            "{line}"
        );
        let e = ProcFailed(io::Error::other(LoadFailed(MapFailed(emfile()))));
        assert!(fd_line(&e).is_some());
        // Only descriptors: memory refused at another step may be the command's.
        let e = ProcFailed(io::Error::from_raw_os_error(libc::ENOMEM));
        assert_eq!(fd_line(&e), None);
        assert!(one_line(&e).is_some());
    }
}
