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

#[cfg(test)]
mod tests {
    use super::*;

    fn vmlinux() -> Vec<u8> {
        std::fs::read(crate::kernel::btf::VMLINUX).expect("the kernel's BTF (the tests need it)")
    }

    #[test]
    fn the_btf_the_plan_read_names_the_syscall_tracepoints() {
        let preload = Preload::start().unwrap();
        preload.want_btf(Some(vmlinux()));
        assert!(preload.loader().is_ok());
        let btf = preload.btf().unwrap();
        for name in ["btf_trace_sys_enter", "btf_trace_sys_exit"] {
            assert!(
                btf.id_by_type_name_kind(name, aya_obj::btf::BtfKind::Typedef)
                    .is_ok(),
                "{name}"
            );
        }
    }

    #[test]
    fn without_the_raw_hooks_nothing_is_parsed() {
        let preload = Preload::start().unwrap();
        preload.want_btf(None);
        assert!(preload.loader().is_ok());
        assert!(matches!(preload.btf(), Err(LoadError::LoaderThread)));
    }

    #[test]
    fn bytes_that_are_not_btf_are_one_error() {
        let preload = Preload::start().unwrap();
        preload.want_btf(Some(b"not btf".to_vec()));
        let e = preload.btf().err().expect("an error");
        assert!(
            e.to_string()
                .starts_with("reading the kernel's BTF (/sys/kernel/btf/vmlinux) failed: "),
            "{e}"
        );
    }
}
