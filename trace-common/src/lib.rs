//! What rtrace's eBPF programs and its user side both need to agree on: the record
//! layouts written to the ring buffer, the names of maps and load-time globals, and the
//! flag bits stored in the pid maps. Every record is `#[repr(C)]` with explicit padding
//! and its size is checked at compile time, so both sides read the same bytes.

#![no_std]

pub mod augment;
pub mod maps;
pub mod record;
pub mod stats;

pub use record::{SyscallRecord, TASK_COMM_LEN};
