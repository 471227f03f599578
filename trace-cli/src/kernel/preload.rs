//! The two parses of the kernel's BTF (~25 ms and ~10 MiB each), made on a thread of
//! their own while the session settles its plan and forks its command, one after the
//! other so that only one copy is held at a time:
//!
//! 1. aya's loader parses it when it is made, for CO-RE relocations, which rtrace's
//!    object has none of (the programs take their offsets as globals): that copy goes
//!    at once.
//! 2. The BTF-typed syscall programs (`tp_btf`) are loaded against it, to name the
//!    tracepoint they attach to: parsed, when the plan says they are used, from the
//!    bytes the plan read for its own offsets (`kernel::btf`).

use std::{
    sync::mpsc,
    thread::{self, JoinHandle},
};

use aya::{Btf, EbpfLoader, Endianness};

use super::loader::LoadError;

pub struct Preload {
    loader: mpsc::Receiver<EbpfLoader<'static>>,
    want_btf: mpsc::Sender<Option<Vec<u8>>>,
    btf: JoinHandle<Option<Result<Btf, aya::BtfError>>>,
}

impl Preload {
    /// Starts the thread. It ends on its own when the `Preload` is dropped unused.
    pub fn start() -> std::io::Result<Preload> {
        let (loader_tx, loader) = mpsc::channel();
        let (want_btf, want_rx) = mpsc::channel();
        let btf = thread::Builder::new()
            .name("rtrace-btf".into())
            .spawn(move || {
                let mut made = EbpfLoader::new();
                made.btf(None);
                let _ = loader_tx.send(made);
                let bytes: Option<Vec<u8>> = want_rx.recv().ok().flatten();
                bytes.map(|b| Btf::parse(&b, Endianness::default()))
            })?;
        Ok(Preload {
            loader,
            want_btf,
            btf,
        })
    }

    /// The kernel's BTF as read for the offsets, when the syscall programs want it
    /// parsed (`None`: they do not); said once the plan is known.
    pub fn want_btf(&self, bytes: Option<Vec<u8>>) {
        let _ = self.want_btf.send(bytes);
    }

    /// The loader, once made.
    pub fn loader(&self) -> Result<EbpfLoader<'static>, LoadError> {
        self.loader.recv().map_err(|_| LoadError::LoaderThread)
    }

    /// The kernel's BTF, once parsed (`want_btf(Some(…))` must have been said).
    pub fn btf(self) -> Result<Btf, LoadError> {
        match self.btf.join() {
            Ok(Some(parsed)) => parsed.map_err(|e| LoadError::BtfParse(e.to_string())),
            Ok(None) | Err(_) => Err(LoadError::LoaderThread),
        }
    }
}
