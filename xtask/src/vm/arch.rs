//! The architectures the kernel matrix boots, as one table: what differs between an
//! x86_64 guest and an arm64 one is here, not in matches spread over the VM code.

/// Where the guest's root file system comes from.
#[derive(Debug, PartialEq)]
pub enum Root {
    /// The host's own root, shared read-only: its gcc, python and the workspace.
    Host,
    /// A Debian root of the guest's architecture, made once under target/kernels
    /// (see [`super::rootfs`]).
    Debian,
}

/// One guest architecture.
#[derive(Debug, PartialEq)]
pub struct Arch {
    /// The name in messages and paths.
    pub name: &'static str,
    /// Debian's (and apt's) name: the kernel flavour and the packages' architecture.
    pub deb: &'static str,
    /// The Rust target the guest's binaries are built for when they are not the host's.
    pub triple: &'static str,
    pub qemu: &'static str,
    /// The Debian package that brings `qemu`.
    pub qemu_package: &'static str,
    /// Machine and CPU flags.
    pub machine: &'static [&'static str],
    /// The serial console the kernel writes to.
    pub console: &'static str,
    pub root: Root,
    /// zig's target for a 32-bit (compat) program the guest runs, built from
    /// tests/programs/<name>.c, when the guest has no compiler for one.
    pub compat_program: Option<(&'static str, &'static str)>,
}

pub const X86_64: Arch = Arch {
    name: "x86_64",
    deb: "amd64",
    triple: "x86_64-unknown-linux-gnu",
    qemu: "qemu-system-x86_64",
    qemu_package: "qemu-system-x86",
    machine: &["-cpu", "max"],
    console: "ttyS0",
    root: Root::Host,
    compat_program: None,
};

/// arm64 under full emulation: `-cpu max` without pointer authentication, whose
/// emulation makes the boot several times slower (26 s against 4-11 s here).
pub const ARM64: Arch = Arch {
    name: "arm64",
    deb: "arm64",
    triple: "aarch64-unknown-linux-musl",
    qemu: "qemu-system-aarch64",
    qemu_package: "qemu-system-arm",
    machine: &["-M", "virt", "-cpu", "max,pauth=off"],
    console: "ttyAMA0",
    root: Root::Debian,
    compat_program: Some(("arm32", "arm-linux-musleabihf")),
};
