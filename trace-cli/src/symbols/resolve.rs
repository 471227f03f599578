//! The [`Locate`] of a live trace: mappings from the kernel's memory-map records
//! (`kernel::sideband`) and from `/proc/PID/maps` for the processes that were there at
//! the start; symbols from each binary's ELF symbols and debug information (blazesym,
//! which keeps each file it parsed) and from `/proc/kallsyms` for the kernel's code.
//! Names found are kept per (file, offset), so that a hot address is looked up once.

use std::sync::Arc;

use blazesym::{
    MaybeDefault,
    symbolize::{
        Input, Symbolized, Symbolizer,
        source::{Elf, Kernel, Source},
    },
};
use rustc_hash::FxHashMap;

use super::{
    Locate, Location,
    records::MapEvent,
    spaces::{AddressSpaces, parse_maps_line},
};
use crate::{decode::fd_table::monotonic_ns, kernel::sideband::Sideband};

type Sym = Option<(Arc<str>, u64)>;

/// Names kept at most before the cache starts over.
const CACHE_MAX: usize = 1 << 16;

pub struct Symbols {
    sideband: Sideband,
    spaces: AddressSpaces,
    /// The records drained, reused.
    events: Vec<MapEvent>,
    /// When the rings were last read: records older than this are in `spaces`.
    synced_at: u64,
    /// Memory-map records the kernel could not write (its ring was full).
    lost: u64,
    symbolizer: Symbolizer,
    kernel: Source<'static>,
    names: FxHashMap<(Arc<str>, u64), Sym>,
    kernel_names: FxHashMap<u64, Sym>,
}

impl Symbols {
    /// Starts keeping every process's mappings (`cpus`: every online CPU), then reads
    /// the current mappings of `pids` (the targets that exist already).
    pub fn start(cpus: &[u32], pids: impl IntoIterator<Item = u32>) -> std::io::Result<Self> {
        let sideband = Sideband::open(cpus)?;
        let mut spaces = AddressSpaces::default();
        for pid in pids {
            if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
                spaces.seed(pid, text.lines().filter_map(parse_maps_line).collect());
            }
        }
        Ok(Self {
            sideband,
            spaces,
            events: Vec::new(),
            synced_at: 0,
            lost: 0,
            symbolizer: Symbolizer::new(),
            kernel: Source::Kernel(Kernel {
                kallsyms: MaybeDefault::Default,
                // No search for a vmlinux image: kallsyms names what perf names.
                vmlinux: MaybeDefault::None,
                kaslr_offset: None,
                debug_syms: false,
                ..Default::default()
            }),
            names: FxHashMap::default(),
            kernel_names: FxHashMap::default(),
        })
    }

    /// Reads every memory-map record waiting into `spaces`.
    pub fn sync(&mut self) {
        self.synced_at = monotonic_ns();
        self.events.clear();
        self.sideband.drain(&mut self.events);
        for ev in self.events.drain(..) {
            match ev {
                MapEvent::Mapped { pid, mapping } => self.spaces.mapped(pid, mapping),
                MapEvent::Exec { pid, time } => self.spaces.exec(pid, time),
                MapEvent::Fork {
                    parent,
                    child,
                    time,
                } => self.spaces.fork(parent, child, time),
                MapEvent::Exit { pid, time } => self.spaces.exit(pid, time),
                MapEvent::Lost(n) => self.lost += n,
            }
        }
        self.spaces.forget_old();
    }

    fn symbol(symbolizer: &Symbolizer, src: &Source<'_>, input: Input<u64>) -> Sym {
        match symbolizer.symbolize_single(src, input) {
            Ok(Symbolized::Sym(s)) => Some((Arc::from(&*s.name), s.offset as u64)),
            _ => None,
        }
    }
}

impl Locate for Symbols {
    fn keep_up(&mut self) {
        self.sync();
    }

    fn lost(&self) -> u64 {
        self.lost
    }

    fn locate(&mut self, pid: u32, time: u64, addr: u64, kernel: bool) -> Location {
        if kernel {
            if self.kernel_names.len() > CACHE_MAX {
                self.kernel_names.clear();
            }
            let (symbolizer, src) = (&self.symbolizer, &self.kernel);
            let sym = self
                .kernel_names
                .entry(addr)
                .or_insert_with(|| Self::symbol(symbolizer, src, Input::AbsAddr(addr)))
                .clone();
            return Location { map: None, sym };
        }
        // A record newer than the last read may follow mappings not read yet.
        if time >= self.synced_at {
            self.sync();
        }
        let Some(m) = self.spaces.find(pid, time, addr) else {
            return Location::default();
        };
        let offset = m.offset_of(addr);
        let name = m.name.clone();
        let sym = if m.has_file() {
            if self.names.len() > CACHE_MAX {
                self.names.clear();
            }
            let symbolizer = &self.symbolizer;
            self.names
                .entry((name.clone(), offset))
                .or_insert_with(|| {
                    let src = Source::Elf(Elf::new(&*name));
                    Self::symbol(symbolizer, &src, Input::FileOffset(offset))
                })
                .clone()
        } else {
            None
        };
        Location {
            map: Some((name, offset)),
            sym,
        }
    }
}
