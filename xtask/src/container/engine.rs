//! The container engines the smoke test runs under: a Docker daemon (Debian's docker.io,
//! installed and started here when none answers, and stopped again afterwards) and
//! runc, the OCI runtime beneath Docker, containerd (Kubernetes) and podman, driven
//! directly where Docker cannot say what is needed.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use crate::vm::{apt_install, which};

/// The client that came with the daemon where there is one (a newer client elsewhere on
/// PATH also works, but this one is known to speak the daemon's API).
pub fn docker() -> Command {
    let packaged = Path::new("/usr/bin/docker");
    Command::new(if packaged.is_file() {
        packaged
    } else {
        Path::new("docker")
    })
}

fn answers() -> bool {
    docker()
        .args(["info", "--format", "{{.ServerVersion}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A Docker daemon that answers; stopped on drop if this process started it.
pub struct Docker {
    started: Option<Child>,
}

/// The daemon's flags for this kind of host: the cgroupfs driver (no systemd here), and
/// no iptables rules or bridge (the smoke test needs no network).
const DOCKERD_FLAGS: [&str; 4] = [
    "--exec-opt",
    "native.cgroupdriver=cgroupfs",
    "--iptables=false",
    "--bridge=none",
];

impl Docker {
    pub fn ensure(scratch: &Path) -> Result<Self> {
        // A daemon that answers is used as it is (rootless, remote, Desktop): nothing
        // is installed then.
        if answers() {
            println!("xtask: using the Docker daemon that is running");
            return Ok(Self { started: None });
        }
        if which("dockerd").is_none() {
            eprintln!("xtask: installing docker.io (the Docker daemon and runc)");
            apt_install(&["docker.io"])?;
        }
        let log_path = scratch.join("dockerd.log");
        let log = fs::File::create(&log_path)?;
        let child = Command::new(which("dockerd").context("dockerd is not installed")?)
            .args(DOCKERD_FLAGS)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting dockerd")?;
        let mut docker = Self {
            started: Some(child),
        };
        println!("xtask: started dockerd {}", DOCKERD_FLAGS.join(" "));
        let deadline = Instant::now() + Duration::from_secs(60);
        while !answers() {
            let exited = docker
                .started
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || Instant::now() > deadline {
                let tail = fs::read_to_string(&log_path).unwrap_or_default();
                let tail: Vec<&str> = tail.lines().rev().take(15).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                bail!(
                    "dockerd did not come up ({}); its log ends:\n{}",
                    match exited {
                        Some(s) => format!("it exited: {s}"),
                        None => "no answer in 60 s".into(),
                    },
                    tail.join("\n")
                );
            }
            thread::sleep(Duration::from_millis(200));
        }
        Ok(docker)
    }
}

impl Drop for Docker {
    fn drop(&mut self) {
        let Some(child) = self.started.as_mut() else {
            return;
        };
        // SIGTERM lets dockerd stop the containerd it started; then wait for it.
        // SAFETY: kill(2) on the pid of a child this process has not yet reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() > deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                Ok(None) => thread::sleep(Duration::from_millis(100)),
            }
        }
        println!("xtask: stopped dockerd");
    }
}

/// Where a check's commands run: a long-lived container whose first process (pid 1 in
/// its own pid namespace) is a shell loop that starts a `cat` every 0.1 s.
pub enum Container {
    Docker { name: String },
    Runc { id: String },
}

/// The containers' first process.
pub const LOOP: &str = "while :; do cat /etc/hostname >/dev/null; sleep 0.1; done";

impl Container {
    /// `docker run -d` of `image` with `flags`.
    pub fn docker(name: &str, image: &str, flags: &[&str]) -> Result<Self> {
        let out = docker()
            .args(["run", "-d", "--rm", "--name", name])
            .args(flags)
            .args([image, "/bin/sh", "-c", LOOP])
            .output()?;
        if !out.status.success() {
            bail!(
                "docker run {} failed: {}",
                flags.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(Self::Docker { name: name.into() })
    }

    /// `runc run -d` of the bundle in `bundle` (its config.json written beforehand).
    pub fn runc(id: &str, bundle: &Path) -> Result<Self> {
        // The detached container keeps runc's stdio: a file, not a pipe that would
        // never reach its end.
        let log_path = bundle.join(format!("{id}.log"));
        let log = fs::File::create(&log_path)?;
        let status = Command::new("runc")
            .args(["run", "-d", "--bundle"])
            .arg(bundle)
            .arg(id)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .status()?;
        if !status.success() {
            bail!(
                "runc run failed: {}",
                fs::read_to_string(&log_path).unwrap_or_default().trim()
            );
        }
        Ok(Self::Runc { id: id.into() })
    }

    /// `docker cp` of the host file `from` into the container's `/tmp`.
    pub fn copy_to_tmp(&self, from: &Path) -> Result<()> {
        let Self::Docker { name } = self else {
            bail!("copying into a runc container is not done here");
        };
        let status = docker()
            .arg("cp")
            .arg(from)
            .arg(format!("{name}:/tmp/"))
            .status()?;
        if !status.success() {
            bail!("docker cp {} failed", from.display());
        }
        Ok(())
    }

    /// Runs `script` with the container's sh; its output and exit status.
    pub fn exec(&self, script: &str) -> Result<Output> {
        let mut cmd = match self {
            Self::Docker { name } => {
                let mut c = docker();
                c.args(["exec", name]);
                c
            }
            Self::Runc { id } => {
                let mut c = Command::new("runc");
                c.args(["exec", id]);
                c
            }
        };
        cmd.args(["/bin/sh", "-c", script])
            .stdin(Stdio::null())
            .output()
            .context("exec in the container")
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = match self {
            Self::Docker { name } => docker()
                .args(["rm", "-f", name.as_str()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status(),
            Self::Runc { id } => Command::new("runc")
                .args(["delete", "-f", id.as_str()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status(),
        };
    }
}

/// The bundle's directory with `runc spec`'s config.json, edited: the loop as the
/// first process, exactly `caps` in every capability set, the rootfs at `rootfs`,
/// and the host's tracefs bound read-only when `tracefs` is set.
pub fn runc_bundle(dir: &Path, rootfs: &Path, caps: &[&str], tracefs: bool) -> Result<PathBuf> {
    if which("runc").is_none() {
        eprintln!("xtask: installing runc (the OCI runtime the checks drive directly)");
        apt_install(&["runc"])?;
    }
    fs::create_dir_all(dir)?;
    let _ = fs::remove_file(dir.join("config.json"));
    crate::run::run_step(
        "runc spec",
        Command::new("runc").arg("spec").current_dir(dir),
    )?;
    let path = dir.join("config.json");
    let mut spec: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path)?)?;
    spec["root"]["path"] = rootfs.to_string_lossy().into_owned().into();
    spec["hostname"] = "rtrace-smoke".into();
    let process = &mut spec["process"];
    process["terminal"] = false.into();
    process["args"] = serde_json::json!(["/bin/sh", "-c", LOOP]);
    for set in [
        "bounding",
        "effective",
        "permitted",
        "inheritable",
        "ambient",
    ] {
        process["capabilities"][set] = serde_json::json!(caps);
    }
    if tracefs {
        spec["mounts"]
            .as_array_mut()
            .context("runc spec wrote no mounts")?
            .push(serde_json::json!({
                "destination": "/sys/kernel/tracing",
                "type": "bind",
                "source": "/sys/kernel/tracing",
                "options": ["rbind", "ro"],
            }));
    }
    fs::write(&path, serde_json::to_string_pretty(&spec)?)?;
    Ok(dir.to_path_buf())
}
