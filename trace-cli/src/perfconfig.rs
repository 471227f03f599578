//! perf's `[trace]` settings from the perfconfig file named by `PERF_CONFIG` (perf's own
//! tests set it): show_timestamp, show_duration, show_arg_names, show_zeros,
//! show_prefix, args_alignment, no_inherit. Parsing is pure; unknown keys are ignored,
//! as perf ignores what it does not know.

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceSettings {
    pub show_timestamp: Option<bool>,
    pub show_duration: Option<bool>,
    pub show_arg_names: Option<bool>,
    pub show_zeros: Option<bool>,
    pub show_prefix: Option<bool>,
    pub args_alignment: Option<usize>,
    pub no_inherit: Option<bool>,
}

fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// The `[trace]` section of a git-config-style file, or the number of the first line
/// that is neither a section, a `key = value`, a comment nor blank (perf refuses the
/// file there).
pub fn parse(text: &str) -> Result<TraceSettings, usize> {
    let mut s = TraceSettings::default();
    let mut in_trace = false;
    for (n, line) in text.lines().enumerate() {
        let line = line.split(['#', ';']).next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_trace = section.trim() == "trace";
            continue;
        }
        // `key = value`, or a bare `key` meaning true (as git config has it).
        let bare_key = line
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let Some((key, value)) = line.split_once('=').or(bare_key.then_some((line, "true"))) else {
            return Err(n + 1);
        };
        if !in_trace {
            continue;
        }
        let (key, value) = (key.trim(), value.trim());
        match key {
            "show_timestamp" => s.show_timestamp = boolean(value),
            "show_duration" => s.show_duration = boolean(value),
            "show_arg_names" => s.show_arg_names = boolean(value),
            "show_zeros" => s.show_zeros = boolean(value),
            "show_prefix" => s.show_prefix = boolean(value),
            "args_alignment" => s.args_alignment = value.parse().ok(),
            "no_inherit" => s.no_inherit = boolean(value),
            _ => {}
        }
    }
    Ok(s)
}

/// Config files are read up to this size: past it (`PERF_CONFIG=/dev/zero`) the file is
/// bad where the bound cut it.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads and parses a config file: its settings, or perf's warning and none.
pub fn from_file(path: &std::path::Path) -> Result<TraceSettings, String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read the config file {}: {e}", path.display()))?;
    let bad = |n: usize| format!("bad config file line {n} in {}", path.display());
    let cut = bytes.len() as u64 > MAX_CONFIG_BYTES;
    bytes.truncate(MAX_CONFIG_BYTES as usize);
    let text = String::from_utf8_lossy(&bytes);
    let settings = parse(&text).map_err(bad)?;
    if cut {
        return Err(bad(text.lines().count().max(1)));
    }
    Ok(settings)
}

/// The settings from `$PERF_CONFIG` when it is set, and a warning when it cannot be used.
pub fn from_env() -> (TraceSettings, Option<String>) {
    match std::env::var_os("PERF_CONFIG") {
        None => (TraceSettings::default(), None),
        Some(p) => match from_file(std::path::Path::new(&p)) {
            Ok(s) => (s, None),
            Err(w) => (TraceSettings::default(), Some(w)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_trace_section() {
        let text = "[core]\n\tshow_timestamp = true\n[trace]\n\tshow_timestamp = false\n\
                    \tshow_duration = no\n\targs_alignment = 0\n\tshow_arg_names=false\n\
                    \tshow_prefix = true ; comment\n\tunknown = 3\n[other]\nshow_zeros = true\n";
        let s = parse(text).unwrap();
        assert_eq!(s.show_timestamp, Some(false));
        assert_eq!(s.show_duration, Some(false));
        assert_eq!(s.args_alignment, Some(0));
        assert_eq!(s.show_arg_names, Some(false));
        assert_eq!(s.show_prefix, Some(true));
        assert_eq!(s.show_zeros, None);
        assert_eq!(s.no_inherit, None);
        assert_eq!(parse(""), Ok(TraceSettings::default()));
    }

    #[test]
    fn bad_and_endless_files_are_refused_with_perfs_words() {
        assert_eq!(parse("[trace]\nshow_zeros = true\nwhat is this\n"), Err(3));
        assert_eq!(
            parse("[trace]\n\tshow_zeros\n").unwrap().show_zeros,
            Some(true)
        );
        let e = from_file(std::path::Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e, "bad config file line 1 in /dev/zero");
        let e = from_file(std::path::Path::new("/nonexistent/perfconfig")).unwrap_err();
        assert!(
            e.starts_with("cannot read the config file /nonexistent/perfconfig: "),
            "{e}"
        );
    }
}
