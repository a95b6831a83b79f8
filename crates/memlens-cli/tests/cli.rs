//! The `memlens` binary end to end: report snapshots, JSON shape, exit codes.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
        .display()
        .to_string()
}

fn memlens(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memlens"))
        .args(args)
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures"))
        .output()
        .expect("run memlens")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn inspect_report_of_a_priced_log_with_usage() {
    let o = memlens(&["inspect", "anthropic/log.jsonl"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn inspect_report_of_a_multi_trace_file() {
    let o = memlens(&[
        "inspect",
        "tau-bench/two-trajectories.json",
        "--model",
        "gpt-4o",
        "--top",
        "3",
    ]);
    assert!(o.status.success());
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn inspect_json_has_the_documented_shape() {
    let o = memlens(&[
        "inspect",
        &fixture("openai/request-response-log.jsonl"),
        "--json",
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let traces = v["traces"].as_array().expect("traces");
    assert_eq!(traces.len(), 2);
    for key in [
        "id",
        "format",
        "calls",
        "chunks",
        "tokens",
        "reported_input_tokens",
        "counted_input_tokens",
        "cost_usd",
        "top_chunks",
    ] {
        assert!(traces[0].get(key).is_some(), "missing {key}");
    }
    assert!(traces[0]["tokens"]["by_category"]["tool_result"]
        .as_u64()
        .is_some());
    assert_eq!(traces[0]["reported_input_tokens"], 41 + 97 + 128);
    assert!(traces[0]["cost_usd"].as_f64().is_some_and(|c| c > 0.0));
    assert!(v["warnings"].as_array().is_some());
}

#[test]
fn unusable_input_exits_non_zero_with_a_one_line_error() {
    let o = memlens(&["inspect", "malformed/truncated.json"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("memlens: error: malformed/truncated.json:7:"),
        "{err}"
    );

    let o = memlens(&["inspect", "no/such/file.json"]);
    assert_eq!(o.status.code(), Some(1));

    let o = memlens(&[
        "inspect",
        "openai/conversations.jsonl",
        "--prices",
        "malformed/truncated.json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("invalid price table"));
}

#[test]
fn user_prices_override_and_unknown_models_stay_unpriced() {
    let dir = std::env::temp_dir().join(format!("memlens-prices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let prices = dir.join("prices.json");
    std::fs::write(
        &prices,
        r#"{"source": "test", "models": {"my-model": {"input": 1000000.0, "output": 0.0}}}"#,
    )
    .expect("write");
    let run = |model: &str| {
        let o = memlens(&[
            "inspect",
            "openai/conversations.jsonl",
            "--json",
            "--model",
            model,
            "--prices",
            prices.to_str().expect("utf-8 path"),
        ]);
        assert!(o.status.success());
        serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("json")
    };
    let v = run("my-model");
    // $1 per input token: the cost is exactly the counted input tokens.
    let t = &v["traces"][0];
    assert_eq!(t["cost_usd"].as_f64(), t["counted_input_tokens"].as_f64());
    let v = run("nobody-knows-this-model");
    assert!(v["traces"][0]["cost_usd"].is_null());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn convert_writes_the_native_format() {
    let dir = std::env::temp_dir().join(format!("memlens-convert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("t.jsonl");
    let o = memlens(&[
        "convert",
        "openai/messages-object.json",
        "-o",
        out.to_str().expect("utf-8 path"),
    ]);
    assert!(o.status.success());
    let text = std::fs::read_to_string(&out).expect("written");
    assert!(text.starts_with("{\"type\":\"memlens\""));
    let o = memlens(&["inspect", out.to_str().expect("utf-8 path"), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["traces"][0]["format"], "openai");
    let _ = std::fs::remove_dir_all(dir);
}
