//! Closing tracepoint perf events without waiting for them.
//!
//! The last close of a tracepoint's perf event unregisters the kernel's probe and then
//! waits for its grace periods, under one lock for all such events (`perf_trace_destroy`
//! holds `event_mutex` across `tracepoint_synchronize_unregister`): tens of milliseconds
//! an event, one after the other, and a process's exit waits for the closes of its fds.
//! Newer kernels (6.18 here) wait as long again at the last close of each BPF link
//! (`perf_event_detach_bpf_prog` waits for a tasks-trace grace period).
//! So rtrace first stops its programs from recording (the loader unchooses the calls)
//! and hands the links and the events to a short-lived process of its own, which
//! closes them while rtrace goes on and exits.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Closes `events` in a detached process, once this one has closed its own copies; in
/// this process, waiting, when no process can be made.
pub fn close_in_background(events: Vec<OwnedFd>) {
    if events.is_empty() {
        return;
    }
    let mut keep: Vec<RawFd> = events.iter().map(AsRawFd::as_raw_fd).collect();
    keep.sort_unstable();
    // The closer waits for this pipe's end of file: until then this process may hold
    // the events, and the last close, the slow one, must be the closer's.
    let mut pipe = [0; 2];
    // SAFETY: pipe2 writes two fds into the array it is given.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let [read_end, write_end] = pipe;
    // SAFETY: the child makes only async-signal-safe calls (fork, setsid, signal,
    // close, close_range, read, _exit) on memory made before the fork, and never
    // returns.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: as above.
        unsafe { closer(&keep, read_end, write_end) }
    }
    drop(events);
    // SAFETY: fds this function made and owns.
    unsafe {
        libc::close(write_end);
        libc::close(read_end);
    }
    if pid > 0 {
        let mut status = 0;
        // The first child only starts the closer, and ends at once.
        // SAFETY: our own child, waited for once.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
}

/// The forked child: leaves the session (a terminal's ^C is not for it), keeps nothing
/// but `keep` and the pipe (so that, once rtrace's wait for it returns, no process of
/// rtrace's but rtrace holds its output), and starts the closer. It then drops its own
/// copies before it ends, so that its exit makes no slow close. The closer takes the
/// default action of the signals rtrace handles, waits for the pipe's end of file,
/// closes `keep` and ends.
unsafe fn closer(keep: &[RawFd], read_end: RawFd, write_end: RawFd) -> ! {
    // SAFETY: async-signal-safe calls on fds this process holds.
    unsafe {
        libc::setsid();
        let mut from: RawFd = 0;
        for &fd in keep {
            close_range(from, fd - 1, read_end, write_end);
            from = fd + 1;
        }
        close_range(from, RawFd::MAX, read_end, write_end);
        if libc::fork() != 0 {
            for &fd in keep {
                libc::close(fd);
            }
            libc::close(write_end);
            libc::_exit(0);
        }
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(signal, libc::SIG_DFL);
        }
        libc::close(write_end);
        let mut byte = 0u8;
        while libc::read(read_end, (&raw mut byte).cast(), 1) < 0
            && *libc::__errno_location() == libc::EINTR
        {}
        for &fd in keep {
            libc::close(fd);
        }
        libc::_exit(0);
    }
}

/// Closes the fds `first..=last`, but the two `spare`s.
unsafe fn close_range(first: RawFd, last: RawFd, spare: RawFd, spare2: RawFd) {
    let span = |a: RawFd, b: RawFd| {
        if a <= b {
            // SAFETY: close_range on fds of this process; a failure leaves them open,
            // which costs nothing but the fds.
            unsafe { libc::syscall(libc::SYS_close_range, a as u32, b as u32, 0u32) };
        }
    };
    let (lo, hi) = (spare.min(spare2), spare.max(spare2));
    let mut from = first;
    for s in [lo, hi] {
        if (from..=last).contains(&s) {
            span(from, s - 1);
            from = s + 1;
        }
    }
    if from <= last {
        span(from, last);
    }
}
