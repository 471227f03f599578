//! rtrace's eBPF programs.
//!
//! - `sys_enter` / `sys_exit` (the raw tracepoints, BTF-typed: `tp_btf`): record the
//!   syscalls of the target tasks, joining entry and exit in the kernel so that one
//!   record carries the arguments, the return value and both timestamps (`syscalls.rs`).
//! - `sched_process_fork` / `sched_process_exit` / `sched_process_exec` (raw tracepoints): keep
//!   `pids_to_trace` and `pids_filtered` in step with live tasks (`lifecycle.rs`).
//! - `tp_event` (classic tracepoint, attached to each event chosen with `-e cat:name`):
//!   sends a target task's raw event record (`events.rs`).
//! - `pf_min` / `pf_maj` (perf_event, on the software page-fault events, `-F`): send a
//!   target task's page faults (`faults.rs`).
//!
//! Filtering happens first and costs one or two hash lookups; nothing here can panic.

#![no_std]
#![no_main]
#![feature(asm_experimental_arch)]

mod augment;
mod events;
mod faults;
mod fd_inode;
mod floors;
mod lifecycle;
mod maps;
mod regs;
mod rings;
mod stacks;
mod summary;
mod syscalls;
mod task;
mod task_storage;
mod view;
mod wakeup;

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    // The verifier rejects any path that reaches here; the loop is never run.
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
