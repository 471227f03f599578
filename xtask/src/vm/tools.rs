//! Host tools the kernel matrix needs, installed with apt when missing.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Result, bail};

use crate::run::run_step;

/// A command the VM run calls, and the Debian package that brings it.
const COMMANDS: [(&str, &str); 7] = [
    ("qemu-system-x86_64", "qemu-system-x86"),
    ("cpio", "cpio"),
    ("gzip", "gzip"),
    ("depmod", "kmod"),
    ("xz", "xz-utils"),
    ("zstd", "zstd"),
    ("dpkg-deb", "dpkg"),
];

/// The initramfs runs busybox with no libraries beside it: it must be the static build.
pub const BUSYBOX: &str = "/bin/busybox";
const BUSYBOX_PACKAGE: &str = "busybox-static";

/// Finds `cmd` on PATH or in the sbin directories (depmod lives there).
pub fn which(cmd: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(cmd))
        .find(|p| p.is_file())
}

fn package_installed(name: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", name])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).ends_with("install ok installed"))
}

/// `apt-get install` of `packages`; when that fails, `apt-get update` and once more.
pub fn apt_install(packages: &[&str]) -> Result<()> {
    let install = || {
        let mut c = Command::new("apt-get");
        c.args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    if install().status().is_ok_and(|s| s.success()) {
        return Ok(());
    }
    eprintln!("xtask: install failed; updating apt's package lists and trying again");
    run_step(
        "apt-get update",
        Command::new("apt-get")
            .args(["update", "-qq"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    run_step(&format!("install {}", packages.join(" ")), &mut install())
}

/// Installs whatever is missing among the VM run's tools.
pub fn ensure() -> Result<()> {
    let mut missing: Vec<&str> = COMMANDS
        .iter()
        .filter(|(cmd, _)| which(cmd).is_none())
        .map(|&(_, pkg)| pkg)
        .collect();
    if !package_installed(BUSYBOX_PACKAGE) {
        missing.push(BUSYBOX_PACKAGE);
    }
    if !missing.is_empty() {
        eprintln!(
            "xtask: installing {} (for the kernel matrix)",
            missing.join(" ")
        );
        apt_install(&missing)?;
    }
    if !Path::new(BUSYBOX).is_file() {
        bail!("{BUSYBOX} is missing although {BUSYBOX_PACKAGE} is installed");
    }
    Ok(())
}
