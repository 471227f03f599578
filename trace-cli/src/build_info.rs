//! What `rtrace --version` says of the build itself: the version, the git commit it was
//! built from, the target, and whether the binary is the static one (a bug report needs
//! all four; the kernel's side follows from `kernel::features`).

/// The commit the build script read (`unknown` outside a git checkout, e.g. a crate
/// unpacked from a tarball).
pub const COMMIT: &str = env!("RTRACE_GIT_COMMIT");
/// The target triple rtrace was built for, e.g. `x86_64-unknown-linux-musl`.
pub const TARGET: &str = env!("RTRACE_TARGET");
/// Linked statically (the musl build `cargo xtask dist` makes): needs no libc at run time.
pub const STATIC: bool = cfg!(target_feature = "crt-static");

/// `rtrace 0.1.0 (22eab0a1b2c3, x86_64-unknown-linux-musl, static; aya 0.14.0)`.
pub fn line() -> String {
    format_line(
        env!("CARGO_PKG_VERSION"),
        COMMIT,
        TARGET,
        STATIC,
        env!("RTRACE_AYA_VERSION"),
    )
}

fn format_line(version: &str, commit: &str, target: &str, static_: bool, aya: &str) -> String {
    let linking = if static_ { "static" } else { "dynamic" };
    format!("rtrace {version} ({commit}, {target}, {linking}; aya {aya})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_version_commit_target_and_linking() {
        assert_eq!(
            format_line(
                "0.1.0",
                "22eab0a1b2c3",
                "aarch64-unknown-linux-musl",
                true,
                "0.14.0"
            ),
            "rtrace 0.1.0 (22eab0a1b2c3, aarch64-unknown-linux-musl, static; aya 0.14.0)"
        );
        assert!(
            format_line(
                "0.1.0",
                "unknown",
                "x86_64-unknown-linux-gnu",
                false,
                "0.14.0"
            )
            .contains("x86_64-unknown-linux-gnu, dynamic;")
        );
    }

    #[test]
    fn this_build_names_its_own_target() {
        let l = line();
        assert!(
            l.contains(TARGET) && l.contains(std::env::consts::ARCH),
            "{l}"
        );
        assert_eq!(STATIC, cfg!(target_env = "musl"), "{l}");
    }
}
