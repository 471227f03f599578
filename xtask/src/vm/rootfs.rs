//! The root file system of a guest that cannot use the host's (arm64 cannot run the
//! host's x86_64 gcc, python and strace): Debian 12 of the guest's architecture, made
//! once under target/kernels by mmdebstrap's `extract` variant, which downloads the
//! packages and unpacks them without running their scripts (they would need the guest's
//! CPU). What those scripts or update-alternatives would have made and the tests need
//! (`cc`, `awk`, /etc/passwd) is made here.

use std::{
    fs,
    os::unix::fs::symlink,
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use anyhow::{Context, Result};

use super::arch::Arch;
use crate::run::run_step;

/// What the root tests call (tests/src/lib.rs, tests/tests/root/*.rs): gcc and libc's
/// headers to build their programs, python3, strace (the summary's reference), sh,
/// util-linux (setpriv, unshare, mount), procps (pkill), busybox and coreutils; apt
/// adds their dependencies.
pub const PACKAGES: [&str; 21] = [
    "base-files",
    "base-passwd",
    "bash",
    "binutils",
    "busybox",
    "coreutils",
    "dash",
    "diffutils",
    "findutils",
    "gcc",
    "grep",
    "gzip",
    "libc6-dev",
    "mawk",
    "mount",
    "procps",
    "python3",
    "sed",
    "strace",
    "tar",
    "util-linux",
];

const SUITE: &str = "bookworm";
const MIRROR: &str = "http://deb.debian.org/debian";

/// The links update-alternatives (or a postinst) makes on a running Debian.
const LINKS: [(&str, &str); 2] = [("usr/bin/cc", "gcc"), ("usr/bin/awk", "mawk")];

/// The root for `arch`, made if it is missing or was made from another package list.
pub fn ensure(cache: &Path, arch: &Arch) -> Result<PathBuf> {
    let dir = cache.join("rootfs").join(format!("{SUITE}-{}", arch.deb));
    let stamp = dir.join(".rtrace-rootfs");
    let want = PACKAGES.join(",");
    if fs::read_to_string(&stamp).is_ok_and(|s| s == want) {
        return Ok(dir);
    }
    let started = Instant::now();
    eprintln!(
        "xtask: making the {} Debian {SUITE} root under {} (once)",
        arch.deb,
        dir.display()
    );
    let partial = dir.with_extension("partial");
    let _ = fs::remove_dir_all(&partial);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(partial.parent().unwrap())?;
    run_step(
        &format!("mmdebstrap ({} root)", arch.deb),
        Command::new("mmdebstrap")
            .args(["--variant=extract", "--mode=root", "--format=directory"])
            .arg(format!("--architectures={}", arch.deb))
            .arg(format!("--include={want}"))
            .args(["--quiet", SUITE])
            .arg(&partial)
            .arg(MIRROR)
            .env("LC_ALL", "C"),
    )?;
    fix_up(&partial)?;
    fs::rename(&partial, &dir)
        .with_context(|| format!("rename {} to {}", partial.display(), dir.display()))?;
    fs::write(&stamp, want)?;
    eprintln!(
        "xtask: the {} root took {:.0} s",
        arch.deb,
        started.elapsed().as_secs_f64()
    );
    Ok(dir)
}

/// What the packages' scripts would have made.
fn fix_up(root: &Path) -> Result<()> {
    for (link, target) in LINKS {
        let at = root.join(link);
        if at.symlink_metadata().is_err() {
            symlink(target, &at).with_context(|| format!("link {}", at.display()))?;
        }
    }
    // base-passwd's postinst copies its masters.
    for (file, master) in [("passwd", "passwd.master"), ("group", "group.master")] {
        let at = root.join("etc").join(file);
        if !at.exists() {
            fs::copy(root.join("usr/share/base-passwd").join(master), &at)
                .with_context(|| format!("make {}", at.display()))?;
        }
    }
    fs::write(root.join("etc/hostname"), "rtrace-guest\n")?;
    fs::write(root.join("etc/hosts"), "127.0.0.1 localhost rtrace-guest\n")?;
    // Mount points /init uses, and where the binaries under test are copied.
    for d in [
        "mnt",
        "tmp",
        "var/tmp",
        "run",
        "proc",
        "sys",
        "dev",
        "root",
        "opt/rtrace",
    ] {
        fs::create_dir_all(root.join(d))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_and_has_what_the_tests_call() {
        let mut sorted = PACKAGES.to_vec();
        sorted.sort();
        assert_eq!(sorted, PACKAGES);
        for p in [
            "gcc",
            "libc6-dev",
            "python3",
            "strace",
            "util-linux",
            "procps",
        ] {
            assert!(PACKAGES.contains(&p), "{p}");
        }
    }
}
