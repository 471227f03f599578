//! `cargo xtask test --container`: rtrace inside containers, as CI smoke tests run it.
//! Starts a Docker daemon when none answers (and stops it after), builds an image from
//! the just-built binary with no registry, and runs the checks of [`checks`] in
//! containers with the least privilege that works:
//!
//! - Docker with only CAP_SYS_ADMIN (Docker 20.10, Debian 12's, knows no CAP_BPF or
//!   CAP_PERFMON; rtrace mounts tracefs itself), in its own pid namespace, then with
//!   `--pid=host`;
//! - runc, the OCI runtime under Docker, containerd and podman, with only CAP_BPF and
//!   CAP_PERFMON and the host's tracefs bound read-only: what a newer Docker, a
//!   Kubernetes pod or podman asks runc for with docs/containers.md's flags;
//! - the refusals: Docker's default capabilities, and runc's two without tracefs;
//! - what `cargo xtask dist` made: its image (`docker load`, then rtrace as the entry
//!   point), the busybox-only root above (the static binary, no library), and a Debian
//!   11 root (glibc 2.31) where the .deb installs and the tarball's binary runs.

mod checks;
pub mod engine;
mod image;
mod old_root;

use std::{
    path::Path,
    process::{Child, Command, Stdio},
};

use anyhow::{Context as _, Result, bail};

use crate::{dist::Artefacts, run::capture};
use checks::{Check, Outcome, calls, need};
use engine::{Container, Docker, docker};

/// Docker's least privilege on 20.10: CAP_SYS_ADMIN covers loading, attaching and
/// mounting tracefs; every other capability is dropped.
const DOCKER_SYS_ADMIN: [&str; 2] = ["--cap-drop=ALL", "--cap-add=SYS_ADMIN"];
/// On a Docker that knows them: CAP_BPF and CAP_PERFMON, tracefs from the host.
const DOCKER_BPF: [&str; 5] = [
    "--cap-drop=ALL",
    "--cap-add=BPF",
    "--cap-add=PERFMON",
    "-v",
    "/sys/kernel/tracing:/sys/kernel/tracing:ro",
];
const RUNC_CAPS: [&str; 2] = ["CAP_BPF", "CAP_PERFMON"];

/// Removes the image on drop.
struct ImageTag(String);

impl Drop for ImageTag {
    fn drop(&mut self) {
        let _ = docker()
            .args(["rmi", "-f", &self.0])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A host process for `--pid=host`'s `-p`; killed on drop.
struct HostLoop(Child);

impl Drop for HostLoop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `checks` in `container`; returns the names of those that failed.
fn run_checks(setting: &str, container: &Container, checks: Vec<Check>) -> Vec<String> {
    println!("xtask: in {setting}:");
    let mut failed = Vec::new();
    for check in checks {
        let verdict = container
            .exec(&check.script)
            .map_err(|e| format!("{e:#}"))
            .map(Outcome::from)
            .and_then(|o| (check.verify)(&o).map_err(|why| explain(&why, &o)));
        match verdict {
            Ok(()) => println!("  ok    {}", check.name),
            Err(why) => {
                println!("  FAIL  {}: {why}", check.name);
                failed.push(format!("{setting}: {}", check.name));
            }
        }
    }
    failed
}

/// The reason, with what the script printed (the end of a long trace).
fn explain(why: &str, o: &Outcome) -> String {
    let tail = |s: &str| {
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n        ")
    };
    format!(
        "{why}\n      status {:?}\n      stdout:\n        {}\n      stderr:\n        {}",
        o.code,
        tail(&o.stdout),
        tail(&o.stderr)
    )
}

pub fn smoke(root: &Path, dist: &Artefacts) -> Result<()> {
    let scratch = std::env::temp_dir().join(format!("rtrace-container-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let result = smoke_in(root, &scratch, dist);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// The static x86_64 binary `dist` made.
fn static_x86(dist: &Artefacts) -> Result<&Path> {
    dist.of("x86_64")
        .map(|b| b.bin.as_path())
        .context("the container checks need dist's x86_64 build")
}

/// `docker load` of dist's image archive, then rtrace as its entry point: with the
/// least privilege the README (and docs/containers.md) gives, it traces a program bound in from the host.
fn image_checks(dist: &Artefacts, busybox: &Path) -> Result<Vec<String>> {
    let archive = dist.image.as_deref().context("dist made no image")?;
    let tag = crate::dist::image_tag();
    let said = capture("docker load", docker().arg("load").arg("-i").arg(archive))?;
    if !said.contains(&format!("Loaded image: {tag}")) {
        bail!("docker load did not load {tag}: {said}");
    }
    let _loaded = ImageTag(tag.clone());
    println!(
        "xtask: in the image {tag} (docker load of {}):",
        archive.display()
    );
    type Verify = fn(&Outcome) -> Result<(), String>;
    let bind = format!("{}:/bin/busybox:ro", busybox.display());
    let cases: [(&str, Vec<&str>, &[&str], Verify); 2] = [
        (
            "--version says it is the static build",
            vec![],
            &["--version"],
            |o| {
                o.status(0)?;
                need(
                    o.stdout.contains("x86_64-unknown-linux-musl, static;"),
                    "not `x86_64-unknown-linux-musl, static;`",
                )
            },
        ),
        (
            "with CAP_SYS_ADMIN alone it traces a static busybox bound in from the host",
            [DOCKER_SYS_ADMIN.as_slice(), &["-v", &bind]].concat(),
            &["--", "/bin/busybox", "cat", "/proc/self/stat"],
            |o| {
                o.status(0)?;
                need(
                    calls(&o.stderr)
                        .iter()
                        .any(|c| c.name == "openat" && c.line.contains("/proc/self/stat")),
                    "no `openat(… /proc/self/stat …)` line",
                )
            },
        ),
    ];
    let mut failed = Vec::new();
    for (name, flags, args, verify) in cases {
        let out = docker()
            .args(["run", "--rm"])
            .args(&flags)
            .arg(&tag)
            .args(args)
            .stdin(Stdio::null())
            .output()?;
        let o = Outcome::from(out);
        match verify(&o) {
            Ok(()) => println!("  ok    {name}"),
            Err(why) => {
                println!("  FAIL  {name}: {}", explain(&why, &o));
                failed.push(format!("the image: {name}"));
            }
        }
    }
    Ok(failed)
}

/// The Debian 11 root: the .deb and the tarball copied in, then [`old_root::checks`].
fn old_root_checks(root: &Path, scratch: &Path, dist: &Artefacts) -> Result<Vec<String>> {
    let dir = old_root::ensure(root)?;
    let tag = ImageTag(format!("rtrace-old-root:{}", std::process::id()));
    image::import(scratch, &dir, &tag.0)?;
    // Docker's default capabilities (dpkg needs them) and CAP_SYS_ADMIN for rtrace.
    let c = Container::docker(
        &format!("rtrace-smoke-{}-debian11", std::process::id()),
        &tag.0,
        &["--cap-add=SYS_ADMIN"],
    )?;
    let x86 = dist
        .of("x86_64")
        .context("the old-glibc root needs dist's x86_64 build")?;
    c.copy_to_tmp(&x86.deb)?;
    c.copy_to_tmp(&x86.tarball)?;
    Ok(run_checks(
        &format!("Debian 11 (glibc {}), --cap-add=SYS_ADMIN", old_root::GLIBC),
        &c,
        old_root::checks(dist)?,
    ))
}

fn smoke_in(root: &Path, scratch: &Path, dist: &Artefacts) -> Result<()> {
    let _docker = Docker::ensure(scratch)?;
    let busybox = image::static_busybox(scratch)?;
    let mut failed = image_checks(dist, &busybox)?;
    let rootfs = image::rootfs(scratch, static_x86(dist)?, &busybox)?;
    let tag = ImageTag(format!("rtrace-smoke:{}", std::process::id()));
    image::import(scratch, &rootfs, &tag.0)?;
    let name = |n: &str| format!("rtrace-smoke-{}-{n}", std::process::id());

    let c = Container::docker(&name("sysadmin"), &tag.0, &DOCKER_SYS_ADMIN)?;
    failed.extend(run_checks(
        "docker run --cap-drop=ALL --cap-add=SYS_ADMIN",
        &c,
        checks::in_own_pid_namespace(),
    ));
    drop(c);

    let host = HostLoop(
        Command::new("sh")
            .args(["-c", engine::LOOP])
            .stdout(Stdio::null())
            .spawn()?,
    );
    let mut flags = DOCKER_SYS_ADMIN.to_vec();
    flags.push("--pid=host");
    let c = Container::docker(&name("hostpid"), &tag.0, &flags)?;
    failed.extend(run_checks(
        "docker run --cap-drop=ALL --cap-add=SYS_ADMIN --pid=host",
        &c,
        checks::in_host_pid_namespace(host.0.id()),
    ));
    drop((c, host));

    match Container::docker(&name("bpf"), &tag.0, &DOCKER_BPF) {
        Ok(c) => failed.extend(run_checks(
            &format!("docker run {}", DOCKER_BPF.join(" ")),
            &c,
            checks::in_own_pid_namespace(),
        )),
        // Docker 20.10: `invalid CapAdd: unknown capability: "CAP_BPF"`. runc below
        // runs the same set.
        Err(e) if format!("{e}").contains("unknown capability") => println!(
            "xtask: this Docker daemon knows no CAP_BPF (Docker 20.10); runc below runs with those two"
        ),
        Err(e) => return Err(e),
    }

    let bundle = engine::runc_bundle(&scratch.join("bundle"), &rootfs, &RUNC_CAPS, true)?;
    let c = Container::runc(&name("runc"), &bundle)?;
    failed.extend(run_checks(
        "runc, CAP_BPF and CAP_PERFMON only, the host's tracefs bound read-only",
        &c,
        checks::in_own_pid_namespace(),
    ));
    drop(c);

    let c = Container::docker(&name("default"), &tag.0, &[])?;
    failed.extend(run_checks(
        "docker run (Docker's default capabilities)",
        &c,
        vec![checks::refused_without_capabilities()],
    ));
    drop(c);
    let bundle = engine::runc_bundle(&scratch.join("bundle"), &rootfs, &RUNC_CAPS, false)?;
    let c = Container::runc(&name("notracefs"), &bundle)?;
    failed.extend(run_checks(
        "runc, CAP_BPF and CAP_PERFMON only, no tracefs",
        &c,
        vec![checks::refused_without_tracefs()],
    ));
    drop(c);

    failed.extend(old_root_checks(root, scratch, dist)?);

    if !failed.is_empty() {
        bail!(
            "{} container check(s) failed:\n  {}",
            failed.len(),
            failed.join("\n  ")
        );
    }
    println!("xtask: every container check passed");
    Ok(())
}
