//! The [`Locate`] of a live trace: mappings from the kernel's memory-map records
//! (`kernel::sideband`) and from `/proc/PID/maps` for the processes that were there at
//! the start; symbols from each binary's ELF symbols and debug information (blazesym,
//! whose files `files` bounds) and from `/proc/kallsyms` for the kernel's code. Names
//! found are kept per (file, offset), so that a hot address is looked up once; only
//! executable mappings are looked up, data has no symbol perf would print.

use std::{os::unix::fs::MetadataExt, sync::Arc};

use blazesym::{
    MaybeDefault,
    symbolize::{
        Input, Symbolized, Symbolizer,
        evict::{self, Evict},
        source::{Elf, Kernel, Source},
    },
};
use rustc_hash::FxHashMap;

use super::{
    Locate, Location,
    files::{FileKey, HeldFiles},
    followed::Followed,
    records::MapEvent,
    spaces::{AddressSpaces, FileId, Mapping, parse_maps_line},
};
use crate::{
    clock::monotonic_ns,
    kernel::sideband::{Scope, Sideband},
};

type Sym = Option<(Arc<str>, u64)>;

/// Names kept at most before the cache starts over.
const CACHE_MAX: usize = 1 << 16;

pub struct Symbols {
    sideband: Sideband,
    /// The targets' records, when the kernel writes every task's but not all are traced.
    followed: Option<Followed>,
    spaces: AddressSpaces,
    /// The records drained, reused.
    events: Vec<MapEvent>,
    /// When the rings were last read: records older than this are in `spaces`.
    synced_at: u64,
    /// Memory-map records the kernel could not write (its ring was full).
    lost: u64,
    /// Never reloads a file by itself: `files` says when (see [`HeldFiles`]).
    symbolizer: Symbolizer,
    files: HeldFiles,
    kernel: Source<'static>,
    names: FxHashMap<(FileId, u64), Sym>,
    kernel_names: FxHashMap<u64, Sym>,
}

impl Symbols {
    /// Starts keeping the mappings of `pids` (the targets that exist already, a held
    /// command's included) and of the processes they start, or of every process
    /// (`every_task`: `-a`), on `cpus` (every online CPU); then reads the current
    /// mappings of `pids`.
    pub fn start(cpus: &[u32], pids: Vec<u32>, every_task: bool) -> std::io::Result<Self> {
        let scope = if every_task {
            Scope::EveryTask
        } else {
            Scope::Processes(&pids)
        };
        let sideband = Sideband::open(cpus, scope)?;
        let followed =
            (sideband.every_task() && !every_task).then(|| Followed::new(pids.iter().copied()));
        let mut spaces = AddressSpaces::default();
        for pid in pids {
            if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
                spaces.seed(pid, text.lines().filter_map(parse_maps_line).collect());
            }
        }
        Ok(Self {
            sideband,
            followed,
            spaces,
            events: Vec::new(),
            synced_at: 0,
            lost: 0,
            symbolizer: Symbolizer::builder().enable_auto_reload(false).build(),
            files: HeldFiles::default(),
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
            if let Some(f) = &mut self.followed
                && !f.keep(&ev)
            {
                continue;
            }
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

    /// The symbol at `offset` of the file `m` maps, if the path still names that file.
    fn file_symbol(&mut self, m: &Mapping, file: FileId, offset: u64) -> Sym {
        let meta = std::fs::metadata(&*m.name).ok()?;
        if (meta.dev(), meta.ino()) != (file.dev, file.ino) {
            // Deleted or replaced since it was mapped: its path reads another file.
            return None;
        }
        let key = FileKey {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        };
        for path in self.files.admit(&m.name, key, monotonic_ns()).drop {
            // Closes the file and unmaps what was parsed of it.
            let _ = self.symbolizer.evict(&Evict::Elf(evict::Elf::new(&*path)));
        }
        let src = Source::Elf(Elf::new(&*m.name));
        Self::symbol(&self.symbolizer, &src, Input::FileOffset(offset))
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
        let sym = match m.file {
            Some(file) if m.exec && m.has_file() => {
                if self.names.len() > CACHE_MAX {
                    self.names.clear();
                }
                match self.names.get(&(file, offset)) {
                    Some(sym) => sym.clone(),
                    None => {
                        let m = m.clone();
                        let sym = self.file_symbol(&m, file, offset);
                        self.names.insert((file, offset), sym.clone());
                        sym
                    }
                }
            }
            _ => None,
        };
        Location {
            map: Some((name, offset)),
            sym,
        }
    }
}
