//! The numbers of a bench run and how BENCHMARKS.md shows them: medians and spread of
//! repeated runs, ratios to the untraced run, with and without the tracer's start-up.

use std::{fmt::Write as _, time::Duration};

/// The runs of one command.
#[derive(Clone, Debug, Default)]
pub struct Runs {
    pub walls: Vec<Duration>,
    /// Peak RSS of the tracer's process tree, KiB, the largest seen.
    pub max_rss_kib: u64,
    /// Events the tracer reported (lines written, or what a floor counted), last run.
    pub events: Option<u64>,
    /// Events the tracer said it lost, last run.
    pub lost: Option<u64>,
    /// What a workload that times itself said each run: ns per call, as it felt them.
    pub per_call_ns: Vec<f64>,
}

impl Runs {
    pub fn median(&self) -> Duration {
        let mut w = self.walls.clone();
        w.sort();
        w.get(w.len() / 2).copied().unwrap_or_default()
    }

    /// The median of the workload's own ns per call, when it said them.
    pub fn per_call(&self) -> Option<f64> {
        let mut v = self.per_call_ns.clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    }

    pub fn spread(&self) -> (Duration, Duration) {
        let min = self.walls.iter().min().copied().unwrap_or_default();
        let max = self.walls.iter().max().copied().unwrap_or_default();
        (min, max)
    }
}

/// One row: a tracer on a workload.
pub struct Row {
    pub workload: String,
    pub tracer: String,
    pub runs: Runs,
    /// The same workload untraced (at the same size).
    pub untraced: Duration,
    /// The tracer's start-up and exit (`TRACER -- true`), when known.
    pub startup: Option<Duration>,
    /// The same workload's own ns per call untraced, when it times itself.
    pub untraced_per_call: Option<f64>,
}

impl Row {
    /// The cost per call as the traced program felt it: its own clock, traced over
    /// untraced (no start-up or exit can be in it).
    pub fn per_call_ratio(&self) -> Option<f64> {
        let untraced = self.untraced_per_call.filter(|v| *v > 0.0)?;
        Some(self.runs.per_call()? / untraced)
    }

    pub fn ratio(&self) -> Option<f64> {
        (!self.untraced.is_zero()).then(|| ratio(self.runs.median(), self.untraced))
    }

    /// The cost per syscall: start-up and exit taken out of the traced run.
    pub fn net_ratio(&self) -> Option<f64> {
        let startup = self.startup?;
        (!self.untraced.is_zero())
            .then(|| ratio(self.runs.median().saturating_sub(startup), self.untraced))
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn times(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_string(), |v| format!("{v:.2}"))
}

fn secs(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}

fn count(v: Option<u64>) -> String {
    v.map_or_else(|| "—".to_string(), |n| n.to_string())
}

/// The markdown table of the rows, in their order.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| workload | tracer | median s | min–max s | × untraced | × untraced, start-up out | per call × untraced, its own clock | events | lost | peak RSS MiB |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let (min, max) = r.runs.spread();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {}–{} | {} | {} | {} | {} | {} | {:.1} |",
            r.workload,
            r.tracer,
            secs(r.runs.median()),
            secs(min),
            secs(max),
            times(r.ratio()),
            times(r.net_ratio()),
            times(r.per_call_ratio()),
            count(r.runs.events),
            count(r.runs.lost),
            r.runs.max_rss_kib as f64 / 1024.0,
        );
    }
    out
}

/// The first number after `LOST ` in perf-style `LOST N events!` lines, summed.
pub fn lost_events(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.split("LOST ").nth(1))
        .filter_map(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// What a workload that times itself said: `loop_ns_per_call N` (`storm_threads.c`).
pub fn loop_ns_per_call(stderr: &str) -> Option<f64> {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("loop_ns_per_call "))?
        .trim()
        .parse()
        .ok()
}

/// The records `rtrace-floor ring` could not send (its ring was full).
pub fn floor_not_sent(stderr: &str) -> Option<u64> {
    let line = stderr
        .lines()
        .find(|l| l.ends_with("(the ring was full)"))?;
    let (before, _) = line.rsplit_once(" not sent")?;
    before.rsplit(' ').next()?.parse().ok()
}

/// What `rtrace-floor` said it counted.
pub fn floor_events(stderr: &str) -> Option<u64> {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("rtrace-floor: "))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn median_and_spread_of_runs() {
        let runs = Runs {
            walls: vec![ms(30), ms(10), ms(20)],
            ..Runs::default()
        };
        assert_eq!(runs.median(), ms(20));
        assert_eq!(runs.spread(), (ms(10), ms(30)));
    }

    #[test]
    fn ratios_take_the_start_up_out() {
        let row = Row {
            workload: "storm".into(),
            tracer: "t".into(),
            runs: Runs {
                walls: vec![ms(1250)],
                ..Runs::default()
            },
            untraced: ms(500),
            startup: Some(ms(250)),
            untraced_per_call: None,
        };
        assert_eq!(row.ratio(), Some(2.5));
        assert_eq!(row.net_ratio(), Some(2.0));
        assert_eq!(row.per_call_ratio(), None);
        let t = table(&[row]);
        assert!(
            t.contains("| storm | t | 1.250 | 1.250–1.250 | 2.50 | 2.00 | — | — | — | 0.0 |"),
            "{t}"
        );
    }

    #[test]
    fn the_per_call_ratio_is_the_workloads_own_clock() {
        let row = Row {
            workload: "getppid".into(),
            tracer: "t".into(),
            runs: Runs {
                walls: vec![ms(900)],
                per_call_ns: vec![400.0, 300.0, 1000.0],
                ..Runs::default()
            },
            untraced: ms(300),
            startup: Some(ms(200)),
            untraced_per_call: Some(100.0),
        };
        // The median of the three, over the untraced 100 ns; the wall clock's 3× and
        // its start-up do not enter.
        assert_eq!(row.per_call_ratio(), Some(4.0));
        assert!(table(&[row]).contains("| 3.00 | 2.33 | 4.00 |"));
        assert_eq!(
            loop_ns_per_call("x\nloop_ns_per_call 85.5\npeak_rss_kib 3\n"),
            Some(85.5)
        );
        assert_eq!(loop_ns_per_call("peak_rss_kib 3\n"), None);
    }

    #[test]
    fn lost_and_floor_counts_are_read_from_the_tools_words() {
        assert_eq!(lost_events("a\nLOST 12 events!\nb\nLOST 3 events!\n"), 15);
        assert_eq!(lost_events("no loss\n"), 0);
        assert_eq!(
            floor_events("rtrace-floor: 4000123 events, 0 ns inside calls\n"),
            Some(4000123)
        );
        assert_eq!(floor_events("other\n"), None);
        assert_eq!(
            floor_not_sent(
                "rtrace-floor: 4000968 events, 18 ns inside calls\n\
                 rtrace-floor: 2001273 records taken from 2 ring(s), 17 not sent (the ring was full)\n"
            ),
            Some(17)
        );
        assert_eq!(
            floor_not_sent("rtrace-floor: 4000968 events, 18 ns inside calls\n"),
            None
        );
    }
}
