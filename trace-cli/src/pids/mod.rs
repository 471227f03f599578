//! Who is traced: target resolution, task liveness and the prune sweep; what the
//! targets' fds were when tracing began.

pub mod fd_seed;
pub mod proc_stat;
pub mod prune;
pub mod targets;
