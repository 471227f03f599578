//! Shell completions and the man page, generated from rtrace's own clap definitions
//! (`trace-cli/src/cli.rs`, compiled here as a module so that xtask needs neither the
//! eBPF build nor the binary).

use std::path::Path;

use anyhow::{Context as _, Result};
use clap::CommandFactory as _;
use clap_complete::Shell;

#[allow(dead_code)]
#[path = "../../trace-cli/src/cli.rs"]
mod cli;

const SHELLS: [(Shell, &str); 3] = [
    (Shell::Bash, "rtrace.bash"),
    (Shell::Zsh, "_rtrace"),
    (Shell::Fish, "rtrace.fish"),
];

/// Writes `completions/` (bash, zsh, fish) and `man/rtrace.1` under `out`.
pub fn generate(out: &Path) -> Result<()> {
    let comp = out.join("completions");
    std::fs::create_dir_all(&comp).with_context(|| format!("creating {}", comp.display()))?;
    for (shell, file) in SHELLS {
        let mut cmd = cli::Args::command();
        let mut f = std::fs::File::create(comp.join(file))
            .with_context(|| format!("creating {}", comp.join(file).display()))?;
        clap_complete::generate(shell, &mut cmd, "rtrace", &mut f);
    }
    let man = out.join("man");
    std::fs::create_dir_all(&man).with_context(|| format!("creating {}", man.display()))?;
    let mut page = Vec::new();
    clap_mangen::Man::new(cli::Args::command()).render(&mut page)?;
    std::fs::write(man.join("rtrace.1"), page).context("writing rtrace.1")?;
    for p in [
        comp.join("rtrace.bash"),
        comp.join("_rtrace"),
        comp.join("rtrace.fish"),
        man.join("rtrace.1"),
    ] {
        println!("xtask: wrote {}", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_and_man_page_name_rtraces_options() {
        let dir = std::env::temp_dir().join(format!("rtrace-docs-{}", std::process::id()));
        generate(&dir).unwrap();
        let bash = std::fs::read_to_string(dir.join("completions/rtrace.bash")).unwrap();
        assert!(
            bash.contains("--summary") && bash.contains("--filter-pids"),
            "{bash}"
        );
        let fish = std::fs::read_to_string(dir.join("completions/rtrace.fish")).unwrap();
        assert!(fish.contains("string-limit"), "{fish}");
        let man = std::fs::read_to_string(dir.join("man/rtrace.1")).unwrap();
        assert!(
            man.contains(".TH rtrace") && man.contains("RTRACE_PID_MAP_ENTRIES"),
            "{man}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
