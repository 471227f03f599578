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
//!   Kubernetes pod or podman asks runc for with the README's flags;
//! - the refusals: Docker's default capabilities, and runc's two without tracefs.

mod checks;
pub mod engine;
mod image;

use std::{
    path::Path,
    process::{Child, Command, Stdio},
};

use anyhow::{Result, bail};

use checks::{Check, Outcome};
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

pub fn smoke(rtrace: &Path) -> Result<()> {
    let scratch = std::env::temp_dir().join(format!("rtrace-container-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let result = smoke_in(&scratch, rtrace);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn smoke_in(scratch: &Path, rtrace: &Path) -> Result<()> {
    let _docker = Docker::ensure(scratch)?;
    let rootfs = image::rootfs(scratch, rtrace)?;
    let tag = ImageTag(format!("rtrace-smoke:{}", std::process::id()));
    image::import(scratch, &rootfs, &tag.0)?;
    let name = |n: &str| format!("rtrace-smoke-{}-{n}", std::process::id());
    let mut failed = Vec::new();

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
