//! The modules that touch the kernel: loading and attaching, bpf(2) map calls, tracefs,
//! privileges and the pid namespace.

pub mod bpf_log;
pub mod btf;
pub mod cgroup;
pub mod cookie_link;
pub mod event_release;
pub mod features;
pub mod function_hooks;
pub mod loader;
pub mod map_ops;
pub mod pidns;
pub mod privilege;
pub mod resources;
pub mod ring_positions;
pub mod rings;
pub mod sideband;
pub mod stats_maps;
pub mod tracefs;
pub mod view;
