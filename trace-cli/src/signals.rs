//! SIGINT, SIGTERM, SIGHUP and SIGQUIT end the session cleanly (relayed to the command
//! rtrace started, final drain, summary, detach) instead of killing rtrace with its
//! programs still counting. tokio's signal driver takes them: the event loop wakes on
//! the first one at once, and the session asks, at any point, whether one came.

use std::{
    future::poll_fn,
    io,
    task::{Context, Poll, Waker},
};

use tokio::signal::unix::{Signal, SignalKind, signal};

const STOPPING: [(libc::c_int, fn() -> SignalKind); 4] = [
    (libc::SIGINT, SignalKind::interrupt),
    (libc::SIGTERM, SignalKind::terminate),
    (libc::SIGHUP, SignalKind::hangup),
    (libc::SIGQUIT, SignalKind::quit),
];

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
        Ok(Self {
            streams,
            first: None,
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
        self.first
    }

    /// Waits for the next stopping signal (a second Ctrl-C included).
    pub async fn next(&mut self) -> libc::c_int {
        poll_fn(|cx| self.poll_any(cx)).await
    }
}
