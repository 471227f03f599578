//! `cargo xtask test`: lint, unit tests, a minute of fuzzing the record reader, then the
//! integration tests that run the real `rtrace` binary as root, one at a time (they
//! share kernel state: maps, tracepoints).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result};

use crate::{
    paths::{debug_rtrace, workspace_root},
    run::{capture, run_step},
    vm,
};

/// The crates built for the host (trace-ebpf only builds for BPF, through aya-build).
const USER_SIDE: [&str; 4] = ["trace-cli", "trace-common", "xtask", "rtrace-tests"];
/// The crates with unit tests; rtrace-tests holds the root tests, run on their own.
const UNIT_TESTED: [&str; 3] = ["trace-cli", "trace-common", "xtask"];

/// `-p a -p b …`
fn packages<'a>(names: &'a [&'a str]) -> impl Iterator<Item = &'a str> {
    names.iter().flat_map(|n| ["-p", n])
}

pub fn test(lint: bool, filter: &[String]) -> Result<()> {
    let root = workspace_root();
    let cargo = || {
        let mut c = Command::new("cargo");
        c.current_dir(&root);
        c
    };
    if lint {
        run_step(
            "check formatting",
            cargo().args(["fmt", "--all", "--check"]),
        )?;
        run_step(
            "clippy",
            cargo().arg("clippy").args(packages(&USER_SIDE)).args([
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]),
        )?;
    }
    ensure_gcc_m32()?;
    run_step(
        "build rtrace",
        cargo().args(["build", "--package", "trace-cli"]),
    )?;
    run_step(
        "unit tests",
        cargo().arg("test").args(packages(&UNIT_TESTED)),
    )?;
    if filter.is_empty() {
        // A minute of fuzzing the record reader: no kernel needed, so it runs here.
        crate::fuzz::fuzz(60)?;
    }
    run_step(
        "integration tests (root, one at a time)",
        cargo()
            .args(["test", "-p", "rtrace-tests", "--", "--test-threads=1"])
            .args(filter)
            .env("RTRACE_BIN", debug_rtrace(&root)),
    )?;
    if filter.is_empty() {
        // The fidelity tool on a few programs, so that it keeps working.
        println!("xtask: fidelity (a few programs)");
        crate::fidelity::fidelity_with(&debug_rtrace(&root), true, &[], false)?;
    }
    Ok(())
}

/// `cargo xtask test --container`: builds what users install (`cargo xtask dist`, every
/// architecture, so that the aarch64 build keeps building) and runs it inside
/// containers (see [`crate::container`]).
pub fn test_container() -> Result<()> {
    let dist = crate::dist::dist(&crate::dist::choose(&[])?, true)?;
    crate::container::smoke(&workspace_root(), &dist)
}

/// Builds rtrace (debug, as the tests use it); its path.
fn build_rtrace(root: &Path) -> Result<PathBuf> {
    run_step(
        "build rtrace",
        Command::new("cargo")
            .current_dir(root)
            .args(["build", "--package", "trace-cli"]),
    )?;
    Ok(debug_rtrace(root))
}

/// `cargo xtask test --kernel …`: builds rtrace and the root test executable on the
/// host for each architecture of `targets`, then runs that executable in a VM per
/// target (see [`vm`]).
pub fn test_kernels(targets: &[&'static vm::Target], filter: &[String]) -> Result<()> {
    let root = workspace_root();
    let mut arches: Vec<&'static vm::arch::Arch> = Vec::new();
    for t in targets {
        if !arches.contains(&t.arch) {
            arches.push(t.arch);
        }
    }
    vm::ensure_tools(&arches)?;
    let mut bins = Vec::new();
    for arch in arches {
        bins.push(if *arch == vm::arch::X86_64 {
            x86_64_binaries(&root, filter)?
        } else {
            cross_binaries(&root, arch, filter)?
        });
    }
    vm::run_matrix(&root, targets, &bins)
}

/// The x86_64 guests run the host's debug rtrace and root tests, the whole suite.
fn x86_64_binaries(root: &Path, filter: &[String]) -> Result<vm::Binaries> {
    // The guest compiles with the host's gcc, -m32 included.
    ensure_gcc_m32()?;
    let rtrace = build_rtrace(root)?;
    let json = capture(
        "build the root integration tests",
        Command::new("cargo").current_dir(root).args([
            "test",
            "-p",
            "rtrace-tests",
            "--no-run",
            "--message-format=json",
        ]),
    )?;
    let tests = vm::test_executable(&json, "root")
        .context("cargo named no executable for the test target 'root'")?;
    Ok(vm::Binaries {
        arch: &vm::arch::X86_64,
        rtrace,
        tests: tests.into(),
        filter: filter.to_vec(),
        expected: None,
        compat_program: None,
    })
}

/// The binary as a user installs it: unpacked from the tarball and from the .deb under
/// `dir/shipped`, the two copies checked to be the same bytes; the tarball's path.
fn shipped_binary(built: &crate::dist::Built, dir: &Path) -> Result<PathBuf> {
    let out = dir.join("shipped");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("deb"))?;
    run_step(
        "unpack the tarball",
        Command::new("tar")
            .arg("-xzf")
            .arg(&built.tarball)
            .arg("-C")
            .arg(&out),
    )?;
    run_step(
        "unpack the .deb",
        Command::new("dpkg-deb")
            .arg("-x")
            .arg(&built.deb)
            .arg(out.join("deb")),
    )?;
    let stem = crate::dist::tarball::stem(built.arch);
    let from_tar = out.join(&stem).join("rtrace");
    let from_deb = out.join("deb/usr/bin/rtrace");
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    if read(&from_tar)? != read(&from_deb)? {
        anyhow::bail!(
            "the tarball's rtrace and the .deb's differ: {} and {}",
            built.tarball.display(),
            built.deb.display()
        );
    }
    println!(
        "xtask: {} tests the rtrace of {} (the same bytes as in {})",
        built.arch.name,
        built.tarball.display(),
        built.deb.display()
    );
    Ok(from_tar)
}

/// Another architecture's guest runs what `cargo xtask dist` ships for it (the static
/// binary in its tarball and .deb) and the root tests cross-built the same way; without
/// a filter, the named subset ([`vm::ARM64_SUBSET`]).
fn cross_binaries(
    root: &Path,
    arch: &'static vm::arch::Arch,
    filter: &[String],
) -> Result<vm::Binaries> {
    let dist_arch = crate::dist::ARCHES
        .iter()
        .find(|a| a.triple == arch.triple)
        .with_context(|| format!("dist builds nothing for {}", arch.triple))?;
    let made = crate::dist::dist(&[dist_arch], false)?;
    let built = made.of(dist_arch.name).context("dist made no binary")?;
    let rtrace = shipped_binary(built, &root.join("target/kernels").join(arch.name))?;
    let cross = crate::dist::toolchain::ensure(&[arch.triple])?;
    let json = crate::dist::toolchain::build_tests(&cross, root, arch.triple, "rtrace-tests")?;
    let tests = vm::test_executable(&json, "root").with_context(|| {
        format!(
            "cargo named no {} executable for the test target 'root'",
            arch.triple
        )
    })?;
    let compat_program = match arch.compat_program {
        Some((name, zig_target)) => Some(crate::dist::toolchain::build_c(
            &cross,
            &root.join("tests/programs").join(format!("{name}.c")),
            zig_target,
            &root.join("target/kernels").join(format!("{name}-program")),
        )?),
        None => None,
    };
    let (filter, expected) = if filter.is_empty() {
        println!(
            "xtask: on {} the root tests run a named subset of {} (the whole suite under \
             emulation would take about 5 more minutes of CI):",
            arch.name,
            vm::ARM64_SUBSET.len()
        );
        for name in vm::ARM64_SUBSET {
            println!("xtask:   {name}");
        }
        (vm::arm64_subset_filter(), Some(vm::ARM64_SUBSET.len()))
    } else {
        (filter.to_vec(), None)
    };
    Ok(vm::Binaries {
        arch,
        rtrace,
        tests: tests.into(),
        filter,
        expected,
        compat_program,
    })
}

/// The 32-bit decoding test builds an i386 program: gcc -m32 needs Debian's
/// gcc-multilib, installed here when missing.
fn ensure_gcc_m32() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("xtask-m32-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let src = dir.join("t.c");
    std::fs::write(&src, "int main(void) { return 0; }\n")?;
    let works = || {
        Command::new("gcc")
            .args(["-m32", "-o"])
            .arg(dir.join("t"))
            .arg(&src)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !works() {
        eprintln!("xtask: installing gcc-multilib (for the 32-bit test)");
        vm::apt_install(&["gcc-multilib"])?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
