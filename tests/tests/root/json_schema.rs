//! `--json` against its schema (docs/rtrace-json.schema.json): every line of real
//! traces validates, and the values a script reads are data, not C text.

use std::time::Duration;

use rtrace_tests::{bpf_ready, rtrace, run};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(60);

const SCHEMA: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../docs/rtrace-json.schema.json"
));

/// Every line of `out` as JSON, each checked against the schema.
fn validated(out: &str) -> Vec<Value> {
    let schema: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    let validator = jsonschema::draft202012::new(&schema).expect("the schema is a schema");
    out.lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
            let errors: Vec<String> = validator
                .iter_errors(&v)
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{l}\ndoes not fit the schema: {errors:#?}"
            );
            v
        })
        .collect()
}

fn call<'v>(lines: &'v [Value], what: &str, f: impl Fn(&Value) -> bool) -> &'v Value {
    lines
        .iter()
        .find(|v| f(v))
        .unwrap_or_else(|| panic!("no line with {what}"))
}

/// cat of a file, a failed open (its name not UTF-8), execve's argv, a pipe, and the
/// summary: on stdout (`-o -`), as `rtrace --json -o - -- cmd | jq` reads it.
#[test]
fn json_lines_of_a_real_trace_fit_the_schema() {
    if !bpf_ready("json_lines_of_a_real_trace_fit_the_schema") {
        return;
    }
    let script = "cat /etc/hostname; cat \"$(printf '/nonexistent/rtrace-\\377')\"; \
                  echo piped | cat; exit 0";
    let r = run(
        rtrace().args(["--json", "-S", "-o", "-", "--", "sh", "-c", script]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines = validated(&r.stdout);
    assert!(
        r.stderr.contains("piped\n"),
        "the command's stdout went to stderr{r}"
    );

    let exec = call(&lines, "execve of cat /etc/hostname", |v| {
        v["syscall"] == "execve" && v["args"]["argv"]["items"] == json!(["cat", "/etc/hostname"])
    });
    assert!(
        exec["args"]["filename"]["str"]
            .as_str()
            .is_some_and(|f| f.ends_with("/cat")),
        "{exec}"
    );

    let open = call(&lines, "the open of /etc/hostname", |v| {
        v["syscall"] == "openat" && v["args"]["filename"]["str"] == "/etc/hostname"
    });
    let fd = open["ret"].as_i64().expect("an fd");
    assert_eq!(
        open["ret_fd"],
        json!({"fd": fd, "path": "/etc/hostname"}),
        "{open}"
    );
    assert!(
        open["args"]["flags"]["names"]
            .as_array()
            .is_some_and(|n| n.contains(&json!("RDONLY"))),
        "{open}"
    );
    let close = call(&lines, "the close of /etc/hostname", |v| {
        v["syscall"] == "close" && v["args"]["fd"]["path"] == "/etc/hostname"
    });
    assert_eq!(close["args"]["fd"]["fd"], fd, "{close}");

    let failed = call(&lines, "the failed open", |v| {
        v["syscall"] == "openat"
            && v["args"]["filename"]["hex"]
                .as_str()
                .is_some_and(|h| h.ends_with("2dff"))
    });
    assert_eq!(failed["ret"], -1, "{failed}");
    assert_eq!(failed["errno"], json!({"name": "ENOENT", "num": 2}));
    assert_eq!(
        failed["args"]["filename"]["str"], "/nonexistent/rtrace-\u{fffd}",
        "{failed}"
    );

    let pipe = call(&lines, "a pipe", |v| {
        v["syscall"].as_str().is_some_and(|s| s.starts_with("pipe"))
    });
    assert!(
        pipe["args"]["fildes"]["fds"]
            .as_array()
            .is_some_and(|f| f.len() == 2),
        "{pipe}"
    );
    assert!(
        lines.last().is_some_and(|v| v.get("summary").is_some()),
        "the summary is the last line"
    );
}

/// Tracepoint events and page faults: their lines fit the schema too.
#[test]
fn json_events_and_faults_fit_the_schema() {
    if !bpf_ready("json_events_and_faults_fit_the_schema") {
        return;
    }
    let r = run(
        rtrace().args([
            "--json",
            "-o",
            "-",
            "-F",
            "all",
            "-e",
            "sched:sched_process_exit,syscalls:sys_enter_openat",
            "--",
            "cat",
            "/etc/hostname",
        ]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines = validated(&r.stdout);
    assert!(lines.iter().any(|v| v.get("fields").is_some()), "{r}");
    assert!(lines.iter().any(|v| v.get("fault").is_some()), "{r}");
    // A syscall's entry event has the call's arguments as data.
    assert!(
        lines
            .iter()
            .any(|v| v["event"] == "syscalls:sys_enter_openat"
                && v["args"]["filename"]["str"] == "/etc/hostname"),
        "{r}"
    );
}

/// The schema can fail: the old form (an argument as C text) and a line missing a
/// field do not fit it.
#[test]
fn json_schema_refuses_c_text_and_missing_fields() {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let line = json!({"ts": 0.0, "tid": 1, "pid": 1, "comm": "cat", "syscall": "close",
        "args": {"fd": {"raw": 3, "fd": 3, "path": "/etc/hostname"}},
        "ret": 0, "ret_fd": null, "errno": null, "duration": 0.001});
    assert!(validator.is_valid(&line));
    let mut old = line.clone();
    old["args"]["fd"] = json!({"raw": 3, "decoded": "3"});
    assert!(!validator.is_valid(&old));
    let mut old = line.clone();
    old["errno"] = json!("ENOENT");
    assert!(!validator.is_valid(&old));
    let mut missing = line;
    missing.as_object_mut().unwrap().remove("ret_fd");
    assert!(!validator.is_valid(&missing));
}
