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

/// What a reader of the page tries first, and where to look next: roff, after clap's
/// sections.
const EXAMPLES: [(&str, &str); 10] = [
    (
        "rtrace -- ls /",
        "Trace a command and the children it starts.",
    ),
    (
        "rtrace -p 1234",
        "Trace a running process (all its threads) until Ctrl-C or its exit.",
    ),
    (
        "rtrace -p 1234 -- sleep 10",
        "Trace process 1234 for ten seconds.",
    ),
    (
        "rtrace -e openat --failure -- make",
        "Only the openat calls that failed.",
    ),
    (
        "rtrace -e trace=%file -- make",
        "strace's class of calls that take a file name.",
    ),
    (
        "rtrace -s -- make test",
        "perf trace's summary: calls, errors and times per thread.",
    ),
    (
        "rtrace -s --timeline make.json -- make",
        "The summary, and a timeline (a track per thread, a slice per call) for ui.perfetto.dev.",
    ),
    (
        "rtrace --json -o - -- ls / | jq .syscall",
        "JSON Lines on stdout, for scripts.",
    ),
    (
        "rtrace -a -e sched:sched_process_exec",
        "Every exec on the system, as tracepoint events.",
    ),
    (
        "rtrace record -- make; rtrace -i rtrace.data",
        "Record now, print later.",
    ),
];

fn examples_and_see_also() -> String {
    // roff: `-` is a hyphen only as `\-`.
    let esc = |s: &str| s.replace('-', "\\-");
    let mut t = String::from(".SH EXAMPLES\n");
    for (cmd, what) in EXAMPLES {
        t.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", esc(cmd), esc(what)));
    }
    t.push_str(
        ".SH \"SEE ALSO\"\n\\fBperf\\-trace\\fR(1), \\fBstrace\\fR(1), \\fBbpftrace\\fR(8)\n",
    );
    t
}

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
    page.extend_from_slice(examples_and_see_also().as_bytes());
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
        // A description, examples, where to look next, and `rtrace record`.
        for section in [
            ".SH DESCRIPTION",
            ".SH EXAMPLES",
            ".SH \"SEE ALSO\"",
            "rtrace record",
        ] {
            assert!(man.contains(section), "{section} in:\n{man}");
        }
        assert!(
            man.contains("\\fBrtrace \\-p 1234 \\-\\- sleep 10\\fR"),
            "{man}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
