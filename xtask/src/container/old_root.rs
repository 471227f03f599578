//! A Debian 11 root (glibc 2.31, older than any the dynamic build runs on), made with
//! debootstrap from Debian's archive and kept under `target/roots/`: the .deb installs
//! there with `dpkg -i`, and the tarball's binary runs there, as on a host whose libc
//! rtrace's dynamic build would refuse.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Result, bail};

use super::checks::{Check, calls, check, need};
use crate::{
    dist::Artefacts,
    run::run_step,
    vm::{apt_install, which},
};

const SUITE: &str = "bullseye";
const MIRROR: &str = "http://deb.debian.org/debian";
/// The glibc version the checks expect to find, so that the root is what it claims.
pub const GLIBC: &str = "2.31";

/// The root file system, made once (about a minute) and reused; its path.
pub fn ensure(root: &Path) -> Result<PathBuf> {
    let dir = root.join("target/roots").join(format!("debian-{SUITE}"));
    let done = dir.join(".rtrace-complete");
    if done.is_file() {
        return Ok(dir);
    }
    if which("debootstrap").is_none() {
        eprintln!("xtask: installing debootstrap (for the old-glibc root)");
        apt_install(&["debootstrap"])?;
    }
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.parent().expect("a parent"))?;
    run_step(
        &format!("debootstrap Debian {SUITE} (glibc {GLIBC})"),
        Command::new("debootstrap")
            .args(["--variant=minbase", "--include=man-db", SUITE])
            .arg(&dir)
            .arg(MIRROR),
    )?;
    fs::write(&done, "")?;
    Ok(dir)
}

/// The checks, given the artefacts' file names as they are copied into `/tmp`.
pub fn checks(dist: &Artefacts) -> Result<Vec<Check>> {
    let Some(x86) = dist.of("x86_64") else {
        bail!("the old-glibc root needs the x86_64 artefacts");
    };
    let name = |p: &Path| {
        p.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    };
    let deb = name(&x86.deb);
    let tarball = name(&x86.tarball);
    Ok(vec![
        check(
            "the .deb installs: rtrace, its man page and completions",
            &format!(
                "ldd --version | head -1; dpkg -i /tmp/{deb} >/dev/null && \
                 command -v rtrace && man -P cat rtrace | grep -c -- --filter-pids && \
                 ls /usr/share/bash-completion/completions/rtrace \
                 /usr/share/zsh/vendor-completions/_rtrace \
                 /usr/share/fish/vendor_completions.d/rtrace.fish && \
                 dpkg-query -W -f='status=${{Status}} depends=${{Depends}}\\n' rtrace"
            ),
            Box::new(|o| {
                o.status(0)?;
                need(
                    o.stdout.lines().next().is_some_and(|l| l.ends_with(GLIBC)),
                    &format!("the root's glibc is not {GLIBC}"),
                )?;
                need(o.stdout.contains("/usr/bin/rtrace"), "no rtrace on PATH")?;
                need(
                    o.stdout.contains("status=install ok installed depends=\n"),
                    "dpkg does not call it installed with no dependency",
                )
            }),
        ),
        check(
            "the installed rtrace traces a command",
            "rtrace -- cat /etc/hostname",
            Box::new(|o| {
                o.status(0)?;
                need(
                    calls(&o.stderr).iter().any(|c| {
                        c.comm == "cat" && c.name == "openat" && c.line.contains("/etc/hostname")
                    }),
                    "no `cat/… openat(… /etc/hostname …)` line",
                )
            }),
        ),
        check(
            "the tarball's binary runs and sums a command",
            &format!(
                "mkdir -p /opt && tar -xzf /tmp/{tarball} -C /opt && \
                 /opt/{dir}/rtrace --version | head -1 && \
                 /opt/{dir}/rtrace -s -- ls /",
                dir = tarball.trim_end_matches(".tar.gz"),
            ),
            Box::new(|o| {
                o.status(0)?;
                need(
                    o.stdout.contains("x86_64-unknown-linux-musl, static;"),
                    "--version does not say static musl",
                )?;
                need(
                    o.stderr.lines().any(|l| l.trim_start().starts_with("ls (")),
                    "no `ls (…)` in the summary",
                )
            }),
        ),
    ])
}
