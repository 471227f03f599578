//! Whether a BPF ring buffer holds bytes its reader has not taken: the producer's
//! position ahead of the consumer's. aya's reader says only that no record is ready,
//! which it also says when the first record is still being written, and finished
//! records of other writers (other CPUs sharing the ring) wait behind it.
//!
//! The ring's first page holds the consumer's position, its second the producer's; both
//! can be mapped read-only beside aya's own mapping.

use std::{
    io,
    os::fd::{AsRawFd, BorrowedFd},
    ptr::NonNull,
    sync::atomic::{AtomicU64, Ordering},
};

/// The two position pages of one ring, mapped read-only.
pub struct RingPositions {
    consumer: NonNull<AtomicU64>,
    producer: NonNull<AtomicU64>,
    page: usize,
}

impl RingPositions {
    pub fn map(fd: BorrowedFd<'_>) -> io::Result<RingPositions> {
        let page = page_size();
        let consumer = map_page(fd, 0, page)?;
        let producer = match map_page(fd, page, page) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: mapped just above, with this length, and not used after.
                unsafe { libc::munmap(consumer.as_ptr().cast(), page) };
                return Err(e);
            }
        };
        Ok(RingPositions {
            consumer,
            producer,
            page,
        })
    }

    /// True when the ring holds bytes not yet consumed: a record being written, or one
    /// finished since the reader last looked.
    pub fn unread(&self) -> bool {
        // SAFETY: both pages stay mapped while self lives; the kernel and aya write
        // these words whole.
        let (producer, consumer) = unsafe {
            (
                self.producer.as_ref().load(Ordering::Acquire),
                self.consumer.as_ref().load(Ordering::Acquire),
            )
        };
        producer != consumer
    }
}

impl Drop for RingPositions {
    fn drop(&mut self) {
        // SAFETY: each was mapped with this length by `map`, and nothing refers to it.
        unsafe {
            libc::munmap(self.consumer.as_ptr().cast(), self.page);
            libc::munmap(self.producer.as_ptr().cast(), self.page);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

fn map_page(fd: BorrowedFd<'_>, offset: usize, page: usize) -> io::Result<NonNull<AtomicU64>> {
    // SAFETY: a new read-only shared mapping of the ring map's fd; nothing else is
    // touched.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            page,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            offset as libc::off_t,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(base.cast()).ok_or_else(|| io::Error::other("mmap returned null"))
}
