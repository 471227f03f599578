//! The kernel's memory-map records for every task, as perf records them beside its
//! samples: one "dummy" software perf event per CPU that counts nothing but writes
//! a record for each mmap (code and data), exec, fork and exit into its own ring,
//! timed on CLOCK_MONOTONIC like the eBPF programs' records. rtrace reads these rings
//! itself (aya reads only BPF maps): no wake-ups, read when a record must be named.

use std::{
    io,
    mem::{size_of, zeroed},
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    ptr::NonNull,
    sync::atomic::{Ordering, fence},
};

use aya_obj::generated::{
    PERF_FLAG_FD_CLOEXEC, perf_event_attr, perf_event_mmap_page,
    perf_event_sample_format::{PERF_SAMPLE_TID, PERF_SAMPLE_TIME},
    perf_sw_ids::PERF_COUNT_SW_DUMMY,
    perf_type_id::PERF_TYPE_SOFTWARE,
};

use crate::symbols::records::{self, MapEvent};

/// Data pages per CPU (a power of two): 128 KiB, some thousand records between reads.
const DATA_PAGES: usize = 32;

/// One CPU's event and its ring: a metadata page, then the data pages.
struct CpuRing {
    _fd: OwnedFd,
    base: NonNull<u8>,
    len: usize,
    data_size: u64,
}

impl Drop for CpuRing {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `open_cpu` mapped, once.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

fn open_cpu(cpu: u32, page: usize) -> io::Result<CpuRing> {
    // SAFETY: perf_event_attr is plain integers; all-zero is its default.
    let mut attr: perf_event_attr = unsafe { zeroed() };
    attr.size = size_of::<perf_event_attr>() as u32;
    attr.type_ = PERF_TYPE_SOFTWARE as u32;
    attr.config = PERF_COUNT_SW_DUMMY as u64;
    attr.sample_type = PERF_SAMPLE_TID as u64 | PERF_SAMPLE_TIME as u64;
    attr.set_sample_id_all(1);
    attr.set_mmap(1);
    attr.set_mmap2(1);
    attr.set_mmap_data(1);
    attr.set_comm(1);
    attr.set_comm_exec(1);
    attr.set_task(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    // Wake no one: the ring is read when rtrace needs it, never polled.
    attr.set_watermark(1);
    attr.__bindgen_anon_2.wakeup_watermark = u32::MAX;
    // SAFETY: a valid attr of the size it states; every task (-1) on `cpu`; no group.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const perf_event_attr,
            -1,
            cpu as libc::c_int,
            -1,
            PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a new fd that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(ret as i32) };
    let len = (DATA_PAGES + 1) * page;
    // SAFETY: mapping the event's ring, shared and writable (rtrace moves data_tail).
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(CpuRing {
        _fd: fd,
        base: NonNull::new(base.cast()).ok_or_else(io::Error::last_os_error)?,
        len,
        data_size: (DATA_PAGES * page) as u64,
    })
}

impl CpuRing {
    fn meta(&self) -> *mut perf_event_mmap_page {
        self.base.as_ptr().cast()
    }

    /// Appends every record waiting to `out`, and frees their room.
    fn drain(&self, page: usize, buf: &mut Vec<u8>, out: &mut Vec<MapEvent>) {
        let meta = self.meta();
        // SAFETY: the metadata page stays mapped while self lives; the kernel writes
        // data_head, rtrace data_tail, each read and written whole.
        let head = unsafe { std::ptr::read_volatile(&raw const (*meta).data_head) };
        fence(Ordering::Acquire);
        let mut tail = unsafe { std::ptr::read_volatile(&raw const (*meta).data_tail) };
        // SAFETY: the data pages follow the metadata page.
        let data = unsafe {
            std::slice::from_raw_parts(self.base.as_ptr().add(page), self.data_size as usize)
        };
        while tail + 8 <= head {
            let at = |i: u64| data[((tail + i) % self.data_size) as usize];
            let size = u16::from_ne_bytes([at(6), at(7)]) as u64;
            if size < 8 || tail + size > head {
                break;
            }
            buf.clear();
            buf.extend((0..size).map(at));
            if let Some(ev) = records::parse(buf) {
                out.push(ev);
            }
            tail += size;
        }
        fence(Ordering::Release);
        // SAFETY: as above; the kernel may now reuse what was read.
        unsafe { std::ptr::write_volatile(&raw mut (*meta).data_tail, tail) };
    }
}

/// The memory-map records of every CPU.
pub struct Sideband {
    rings: Vec<CpuRing>,
    page: usize,
    buf: Vec<u8>,
}

impl Sideband {
    /// Opens the events on `cpus`; from now on every mmap, exec, fork and exit is kept.
    pub fn open(cpus: &[u32]) -> io::Result<Self> {
        // SAFETY: no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let rings = cpus
            .iter()
            .map(|&cpu| open_cpu(cpu, page))
            .collect::<io::Result<_>>()?;
        Ok(Self {
            rings,
            page,
            buf: Vec::with_capacity(4096),
        })
    }

    /// Every record waiting on every CPU, oldest first.
    pub fn drain(&mut self, out: &mut Vec<MapEvent>) {
        for ring in &self.rings {
            ring.drain(self.page, &mut self.buf, out);
        }
        out.sort_by_key(MapEvent::time);
    }
}
