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

/// The `[trace]` section of a git-config-style file.
pub fn parse(text: &str) -> TraceSettings {
    let mut s = TraceSettings::default();
    let mut in_trace = false;
    for line in text.lines() {
        let line = line.split(['#', ';']).next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_trace = section.trim() == "trace";
            continue;
        }
        if !in_trace {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
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
    s
}

/// The settings from `$PERF_CONFIG`, if it names a readable file.
pub fn from_env() -> TraceSettings {
    std::env::var_os("PERF_CONFIG")
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| parse(&t))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_trace_section() {
        let text = "[core]\n\tshow_timestamp = true\n[trace]\n\tshow_timestamp = false\n\
                    \tshow_duration = no\n\targs_alignment = 0\n\tshow_arg_names=false\n\
                    \tshow_prefix = true ; comment\n\tunknown = 3\n[other]\nshow_zeros = true\n";
        let s = parse(text);
        assert_eq!(s.show_timestamp, Some(false));
        assert_eq!(s.show_duration, Some(false));
        assert_eq!(s.args_alignment, Some(0));
        assert_eq!(s.show_arg_names, Some(false));
        assert_eq!(s.show_prefix, Some(true));
        assert_eq!(s.show_zeros, None);
        assert_eq!(s.no_inherit, None);
        assert_eq!(parse(""), TraceSettings::default());
    }
}
