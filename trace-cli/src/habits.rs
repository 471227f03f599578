//! strace's flags that rtrace's perf-shaped command line does not take, or takes with
//! another meaning, answered with rtrace's equivalent in one line instead of clap's
//! puzzle (`-tt`: "invalid tid 't'"; `-s 100`: "cannot run '100'").

use std::ffi::OsString;

use clap::CommandFactory as _;

use crate::cli::Args;

/// strace's flag, and what it is in rtrace.
const STRACE_FLAGS: &[(&str, &str)] = &[
    (
        "-tt",
        "strace's -tt: every line starts with its time already (ms since the first event; -T/--time for the kernel's clock)",
    ),
    (
        "-ttt",
        "strace's -ttt: every line starts with its time already (ms since the first event; -T/--time for the kernel's clock)",
    ),
    (
        "-c",
        "strace's -c is -s/--summary here (-S/--with-summary for the lines and the summary; --time-percent adds its % time column)",
    ),
    (
        "-y",
        "strace's -y is the default here: fds are shown with their paths (fd: 3</etc/hostname>) when the calls that open them are traced too",
    ),
    (
        "-yy",
        "strace's -yy is the default here: fds are shown with their paths (fd: 3</etc/hostname>) when the calls that open them are traced too",
    ),
    ("-k", "strace's -k is --call-graph fp here"),
];

/// The words of rtrace's own options that take a value (`-e`, `--output`…): the word
/// after them is that value, not a flag to look at.
fn takes_value(cmd: &clap::Command, word: &str) -> bool {
    cmd.get_arguments().any(|a| {
        a.get_action().takes_values()
            && !a.is_positional()
            && (a.get_short().is_some_and(|s| word == format!("-{s}"))
                || a.get_long().is_some_and(|l| word == format!("--{l}")))
    })
}

/// The hint for the first strace habit among the options (before `--` or the command),
/// if there is one.
pub fn strace_hint(args: &[OsString]) -> Option<String> {
    let mut words = args.iter().map(|a| a.to_string_lossy()).peekable();
    // clap's definition, built once and only when an option's value must be skipped
    // (this scan runs at every start).
    let cmd = std::cell::OnceCell::new();
    while let Some(w) = words.next() {
        if w == "--" || !w.starts_with('-') {
            // The command: its own flags are its own.
            return None;
        }
        if let Some((_, hint)) = STRACE_FLAGS.iter().find(|(f, _)| *f == w) {
            return Some((*hint).to_string());
        }
        if w == "-s" {
            // perf's -s takes no value: a number after it is strace's string length.
            if let Some(n) = words
                .peek()
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                return Some(format!(
                    "strace's -s {n} is --string-limit {n} here (-s is perf's --summary; run a command named {n} with -s -- {n})"
                ));
            }
        }
        if takes_value(cmd.get_or_init(Args::command), &w) {
            words.next();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint(args: &[&str]) -> Option<String> {
        strace_hint(&args.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn strace_flags_get_rtraces_equivalent() {
        assert!(hint(&["-tt", "ls"]).unwrap().contains("-T/--time"));
        assert!(
            hint(&["-f", "-c", "--", "ls"])
                .unwrap()
                .contains("-s/--summary")
        );
        assert!(hint(&["-yy", "ls"]).unwrap().contains("paths"));
        assert!(hint(&["-k", "ls"]).unwrap().contains("--call-graph fp"));
        let s = hint(&["-s", "100", "ls"]).unwrap();
        assert!(s.contains("--string-limit 100"), "{s}");
    }

    #[test]
    fn rtraces_own_options_and_the_commands_flags_are_left_alone() {
        assert_eq!(hint(&["-s", "--", "ls", "-c"]), None);
        assert_eq!(hint(&["-s", "ls", "-k"]), None);
        assert_eq!(hint(&["ls", "-tt"]), None);
        // A value of rtrace's own option, not a flag.
        assert_eq!(hint(&["-o", "-c", "ls"]), None);
        assert_eq!(hint(&["-e", "openat", "-s", "--", "100"]), None);
        assert_eq!(hint(&["-T", "-s", "-p", "1"]), None);
        assert!(hint(&["-s", "-c", "ls"]).unwrap().contains("-s/--summary"));
    }
}
