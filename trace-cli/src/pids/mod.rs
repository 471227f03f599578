//! Who is traced: target resolution, task liveness and the prune sweep.

pub mod proc_stat;
pub mod prune;
pub mod targets;
