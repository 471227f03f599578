//! Finding the integration-test executable in cargo's JSON messages.

/// The `executable` of the `compiler-artifact` message for the test target `target`,
/// from `cargo test --no-run --message-format=json` output.
pub fn test_executable(json_lines: &str, target: &str) -> Option<String> {
    json_lines
        .lines()
        .filter(|l| l.contains(r#""reason":"compiler-artifact""#))
        .filter(|l| l.contains(r#""kind":["test"]"#))
        .filter(|l| l.contains(&format!(r#""name":"{target}""#)))
        .find_map(|l| string_field(l, "executable"))
}

/// The value of `"key":"…"` in a JSON line, unescaped (enough for paths).
fn string_field(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!(r#""{key}":""#))? + key.len() + 4;
    let mut out = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                c => out.push(c),
            },
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_root_test_executable() {
        let out = r#"{"reason":"compiler-artifact","package_id":"path+file:///w/tests#rtrace-tests@0.1.0","target":{"kind":["lib"],"crate_types":["lib"],"name":"rtrace_tests","src_path":"/w/tests/src/lib.rs","test":true},"executable":null,"fresh":true}
{"reason":"compiler-artifact","package_id":"path+file:///w/tests#rtrace-tests@0.1.0","target":{"kind":["test"],"crate_types":["bin"],"name":"root","src_path":"/w/tests/tests/root/main.rs","test":true},"executable":"/w/target/debug/deps/root-666f\"x","fresh":true}
{"reason":"build-finished","success":true}"#;
        assert_eq!(
            test_executable(out, "root").as_deref(),
            Some("/w/target/debug/deps/root-666f\"x")
        );
        assert_eq!(test_executable(out, "other"), None);
    }
}
