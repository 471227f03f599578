//! SIGINT, SIGTERM, SIGHUP and SIGQUIT end the session cleanly (relayed to the command
//! rtrace started, final drain, summary, detach) instead of killing rtrace with its
//! programs still counting. [`catch_early`], the first thing main does, notes them from
//! then on, even where rtrace inherited them ignored (a background job of a script), as
//! perf's handlers do; once the event loop's runtime exists, tokio's signal driver takes
//! them too: the loop wakes on the first one at once, and the session asks, at any point,
//! whether one came.

use std::{
    future::poll_fn,
    io,
    sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering},
    task::{Context, Poll, Waker},
};

use tokio::signal::unix::{Signal, SignalKind, signal};

const STOPPING: [(libc::c_int, fn() -> SignalKind); 4] = [
    (libc::SIGINT, SignalKind::interrupt),
    (libc::SIGTERM, SignalKind::terminate),
    (libc::SIGHUP, SignalKind::hangup),
    (libc::SIGQUIT, SignalKind::quit),
];

/// The first stopping signal that came since [`catch_early`] (0: none yet).
static EARLY: AtomicI32 = AtomicI32::new(0);
/// The stopping signals rtrace inherited ignored, as bits by number.
static IGNORED_AT_START: AtomicU32 = AtomicU32::new(0);
/// Set once the session's event loop takes the signals over ([`Stops::install`]).
static TAKEN_OVER: AtomicBool = AtomicBool::new(false);

extern "C" fn note_early(sig: libc::c_int) {
    // Async-signal-safe: atomics, signal(2) and raise(3) only. The first signal is
    // kept for the session to act on at its next step; a second one before the event
    // loop takes over (a start-up step that blocks, e.g. opening a FIFO with no
    // reader) ends rtrace as the signal would have.
    if EARLY
        .compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
        && !TAKEN_OVER.load(Ordering::Relaxed)
    {
        // SAFETY: both are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// Gives the stopping signals back what rtrace inherited (the default, or ignored),
/// for the paths that never trace and so never look at [`early`] (`rtrace -i`).
pub fn restore_inherited() {
    for (sig, _) in STOPPING {
        let disposition = if inherited_ignored(sig) {
            libc::SIG_IGN
        } else {
            libc::SIG_DFL
        };
        // SAFETY: signal(2) with a valid signal number and disposition.
        unsafe { libc::signal(sig, disposition) };
    }
}

/// Notes the stopping signals from now on, before rtrace forks or loads anything, so
/// that one sent while rtrace starts (or waits out -D) is honoured as it is later; and
/// remembers which of them were inherited ignored, for the command (see
/// [`inherited_ignored`]). tokio's handlers, installed later, run this one too (they
/// chain to the handler they find).
pub fn catch_early() {
    for (sig, _) in STOPPING {
        // SAFETY: a zeroed sigaction is a valid out-parameter and a valid start for
        // the new action; the handler only stores into an atomic.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = note_early as *const () as libc::sighandler_t;
            new.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut new.sa_mask);
            if libc::sigaction(sig, &new, &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN {
                IGNORED_AT_START.fetch_or(1 << sig, Ordering::Relaxed);
            }
        }
    }
}

/// Whether rtrace inherited `sig` ignored. The command rtrace runs gets it ignored too:
/// it runs as it would have run without rtrace (perf's command would get the default).
pub fn inherited_ignored(sig: libc::c_int) -> bool {
    (0..32).contains(&sig) && IGNORED_AT_START.load(Ordering::Relaxed) & (1 << sig) != 0
}

/// The first stopping signal noted since [`catch_early`], if any.
pub fn early() -> Option<libc::c_int> {
    match EARLY.load(Ordering::Relaxed) {
        0 => None,
        sig => Some(sig),
    }
}

/// The signals that stop a session, and the first of them that came.
pub struct Stops {
    streams: Vec<(libc::c_int, Signal)>,
    first: Option<libc::c_int>,
}

impl Stops {
    /// Takes the signals over; needs the runtime entered (its signal driver).
    pub fn install() -> io::Result<Self> {
        let streams = STOPPING
            .iter()
            .map(|(nr, kind)| Ok((*nr, signal(kind())?)))
            .collect::<io::Result<_>>()?;
        TAKEN_OVER.store(true, Ordering::Relaxed);
        Ok(Self {
            streams,
            first: early(),
        })
    }

    fn poll_any(&mut self, cx: &mut Context<'_>) -> Poll<libc::c_int> {
        for (nr, stream) in &mut self.streams {
            if stream.poll_recv(cx).is_ready() {
                self.first.get_or_insert(*nr);
                return Poll::Ready(*nr);
            }
        }
        Poll::Pending
    }

    /// The signal that asked rtrace to stop, if one came. Yields once first: the
    /// runtime then reads its driver, which is what hands a delivered signal over.
    pub async fn requested(&mut self) -> Option<libc::c_int> {
        tokio::task::yield_now().await;
        // Whatever arrived is taken now; the waker is never needed.
        let _ = self.poll_any(&mut Context::from_waker(Waker::noop()));
        self.first.or_else(early)
    }

    /// Waits for the next stopping signal (a second Ctrl-C included).
    pub async fn next(&mut self) -> libc::c_int {
        poll_fn(|cx| self.poll_any(cx)).await
    }
}
