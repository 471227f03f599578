//! `--hist`: the log2 histogram of a syscall's durations under its summary row, drawn
//! as bpftrace's `hist()` draws one: a row per power of two from the first non-empty
//! bucket to the last, the bars scaled to the fullest.
//!
//! The bounds are powers of two of nanoseconds named with binary steps, as bpftrace's
//! K and M are: `1µs` is 1024 ns, `1ms` 2^20 ns, `1s` 2^30 ns.

use std::fmt::Write as _;

use trace_common::stats::{HIST_BUCKETS, SyscallHist};

/// The width of the fullest bucket's bar (bpftrace's).
const BAR_WIDTH: u64 = 52;

/// 2^`shift` ns in the largest binary unit it makes a whole number of.
fn power_of_two(shift: usize) -> String {
    let (unit, step) = match shift {
        0..=9 => ("ns", 0),
        10..=19 => ("µs", 10),
        20..=29 => ("ms", 20),
        _ => ("s", 30),
    };
    format!("{}{unit}", 1u64 << (shift - step))
}

/// Bucket `i`'s range: `[0]` for calls of 0 ns (returns whose entry was not seen
/// count so), `[2^(i-1), 2^i)` after it, the last open-ended.
pub fn label(i: usize) -> String {
    match i {
        0 => "[0]".to_string(),
        _ if i == HIST_BUCKETS - 1 => format!("[{}, ...)", power_of_two(i - 1)),
        _ => format!("[{}, {})", power_of_two(i - 1), power_of_two(i)),
    }
}

/// The buckets shown: the first non-empty one to the last; none for an empty histogram.
fn shown(hist: &SyscallHist) -> std::ops::Range<usize> {
    let first = hist.buckets.iter().position(|&c| c > 0);
    let last = hist.buckets.iter().rposition(|&c| c > 0);
    match (first, last) {
        (Some(f), Some(l)) => f..l + 1,
        _ => 0..0,
    }
}

/// The histogram's lines, each starting with `indent`.
pub fn render(out: &mut String, hist: &SyscallHist, indent: &str) {
    let range = shown(hist);
    let max = hist.buckets[range.clone()]
        .iter()
        .copied()
        .max()
        .unwrap_or(0);
    for i in range {
        let count = hist.buckets[i];
        let bar = (u128::from(count) * u128::from(BAR_WIDTH) / u128::from(max.max(1))) as usize;
        let _ = writeln!(
            out,
            "{indent}{:<16} {count:>8} |{:<width$}|",
            label(i),
            "@".repeat(bar),
            width = BAR_WIDTH as usize
        );
    }
}

/// The histogram in JSON: the shown buckets as `{"min_ns", "max_ns", "count"}`, the
/// bounds exact (`max_ns` excluded, null for the last bucket).
pub fn json(hist: &SyscallHist) -> serde_json::Value {
    let bound = |i: usize| if i == 0 { 0 } else { 1u64 << (i - 1) };
    shown(hist)
        .map(|i| {
            let max = (i < HIST_BUCKETS - 1).then(|| bound(i + 1));
            serde_json::json!({ "min_ns": bound(i), "max_ns": max, "count": hist.buckets[i] })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use trace_common::stats::hist_bucket;

    use super::*;

    fn hist(durations_ns: &[u64]) -> SyscallHist {
        let mut h = SyscallHist::default();
        for &d in durations_ns {
            h.add(d);
        }
        h
    }

    #[test]
    fn labels_name_binary_units() {
        assert_eq!(label(0), "[0]");
        assert_eq!(label(1), "[1ns, 2ns)");
        assert_eq!(label(10), "[512ns, 1µs)");
        assert_eq!(label(20), "[512µs, 1ms)");
        assert_eq!(label(21), "[1ms, 2ms)");
        assert_eq!(label(31), "[1s, 2s)");
        assert_eq!(label(HIST_BUCKETS - 1), "[256s, ...)");
        // A duration falls in the bucket whose label holds it.
        assert_eq!(label(hist_bucket(1_500_000)), "[1ms, 2ms)");
        assert_eq!(label(hist_bucket(700)), "[512ns, 1µs)");
    }

    #[test]
    fn draws_the_non_empty_range_scaled_to_the_fullest() {
        // 4 calls near 1 µs, none near 2 µs, 2 near 5 µs.
        let h = hist(&[1100, 1200, 1500, 2000, 5000, 6000]);
        let mut out = String::new();
        render(&mut out, &h, "  ");
        let expected =
            "  [1µs, 2µs)              4 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
  [2µs, 4µs)              0 |                                                    |
  [4µs, 8µs)              2 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
";
        assert_eq!(out, expected);
        let mut empty = String::new();
        render(&mut empty, &SyscallHist::default(), "  ");
        assert_eq!(empty, "");
    }

    #[test]
    fn zero_and_the_open_last_bucket() {
        let h = hist(&[0, u64::MAX]);
        let mut out = String::new();
        render(&mut out, &h, "");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), HIST_BUCKETS);
        assert!(lines[0].starts_with("[0]  "), "{out}");
        assert!(lines[HIST_BUCKETS - 1].starts_with("[256s, ...)"), "{out}");
        let v = json(&h);
        let v = v.as_array().unwrap();
        assert_eq!(v.len(), HIST_BUCKETS);
        assert_eq!(
            v[0],
            serde_json::json!({"min_ns": 0, "max_ns": 1, "count": 1})
        );
        assert_eq!(v[HIST_BUCKETS - 1]["max_ns"], serde_json::Value::Null);
        assert_eq!(v[HIST_BUCKETS - 1]["min_ns"], 1u64 << 38);
    }

    /// Under its row in the table, and in the row's JSON; none without --hist.
    #[test]
    fn in_the_summary_under_each_row() {
        use crate::output::summary::{Row, Section, SummaryOptions, Title, render, render_json};
        let mut stats = trace_common::stats::SyscallStats::default();
        for d in [1_100_000, 1_200_000, 600_000] {
            stats.add_call(d, false, true);
        }
        let section = |hist| Section {
            title: Title::Total,
            rows: vec![Row {
                name: "nanosleep".into(),
                stats,
                errnos: vec![],
                hist,
            }],
            faults: [0; 2],
        };
        let h = hist(&[1_100_000, 1_200_000, 600_000]);
        let mut out = String::new();
        render(&mut out, vec![section(Some(h))], &SummaryOptions::default());
        let row = out.find("   nanosleep ").unwrap();
        let first = out.find("\n     [512µs, 1ms)").unwrap();
        let second = out.find("\n     [1ms, 2ms)              2 |").unwrap();
        assert!(row < first && first < second, "{out}");
        let mut plain = String::new();
        render(&mut plain, vec![section(None)], &SummaryOptions::default());
        assert!(!plain.contains('@'), "{plain}");

        let mut j = String::new();
        render_json(&mut j, vec![section(Some(h))], &SummaryOptions::default());
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        let row = &v["summary"][0]["syscalls"][0];
        assert_eq!(row["histogram"], json(&h));
        let mut j = String::new();
        render_json(&mut j, vec![section(None)], &SummaryOptions::default());
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert!(v["summary"][0]["syscalls"][0].get("histogram").is_none());
    }

    #[test]
    fn json_bounds_are_exact_nanoseconds() {
        let v = json(&hist(&[1_000_000, 1_100_000]));
        assert_eq!(
            v,
            serde_json::json!([
                {"min_ns": 524_288, "max_ns": 1_048_576, "count": 1},
                {"min_ns": 1_048_576, "max_ns": 2_097_152, "count": 1},
            ])
        );
    }
}
