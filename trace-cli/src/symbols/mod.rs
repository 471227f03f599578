//! Naming addresses as perf does: the mapping an address fell in (`dso@offset`) and the
//! symbol it is in (`sym+0xoff`), for page faults (`-F`). `spaces` keeps each process's
//! mappings over time, `records` decodes the kernel's memory-map records, `resolve`
//! ties them to the kernel (the records' rings, `/proc`, kallsyms) and to blazesym.

pub mod files;
pub mod followed;
pub mod records;
pub mod resolve;
pub mod spaces;

use std::sync::Arc;

/// Where an address is, as far as rtrace could tell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// The mapping's name and where the address falls in it ([`spaces::Mapping::offset_of`]).
    pub map: Option<(Arc<str>, u64)>,
    /// The symbol's name and the address's offset from its start.
    pub sym: Option<(Arc<str>, u64)>,
}

/// Names addresses of processes at a given time.
pub trait Locate {
    /// `addr` of process `pid` at `time` (the programs' clock); `kernel` for an
    /// address of the kernel's own code.
    fn locate(&mut self, pid: u32, time: u64, addr: u64, kernel: bool) -> Location;

    /// Reads what came since the last call (called between batches of records, so
    /// that what the kernel keeps for it does not overflow).
    fn keep_up(&mut self) {}

    /// Records of mappings the kernel could not keep: addresses of their processes
    /// may be left unnamed.
    fn lost(&self) -> u64 {
        0
    }
}

/// On 64-bit machines the kernel's addresses are the upper half.
pub fn is_kernel_addr(addr: u64) -> bool {
    addr >> 63 == 1
}
