//! When the kernel refuses for want of a resource (a descriptor, memory), the message
//! names that resource and the limit that ran out, whatever layer the refusal passed
//! through: aya's map and program errors keep the errno in their source chain, where a
//! one-line message would otherwise lose it (`failed to create map 'errno_stats'`).

use std::{error::Error, io};

/// The error as one line naming the limit it hit, if its chain holds one: its own
/// message up to any verifier log (which says nothing of a descriptor or memory that
/// ran out), then the limit.
pub fn one_line(err: &(dyn Error + 'static)) -> Option<String> {
    let why = explain(err)?;
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
    let mut cause = err.source();
    while let Some(c) = cause {
        if let Some(why) = c.downcast_ref::<io::Error>().and_then(why) {
            return (!shown.contains(&why)).then_some(why);
        }
        cause = c.source();
    }
    None
}

/// The sentence for an errno that means a limit, with the limit read now.
fn why(e: &io::Error) -> Option<String> {
    Some(match e.raw_os_error()? {
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
}
