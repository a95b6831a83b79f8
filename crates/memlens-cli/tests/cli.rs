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
fn inspect_calls_names_each_cache_break() {
    // The table (snapshot) and the JSON: a 10-minute pause before call 3, the tool list changed
    // at call 5, the first user message edited at call 8 (tests/it/diff.rs derives the figures).
    let o = memlens(&[
        "inspect",
        "openai/cache-breaks.jsonl",
        "--calls",
        "--top",
        "1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    insta::assert_snapshot!(stdout(&o));
    let o = memlens(&["inspect", "openai/cache-breaks.jsonl", "--calls", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let calls = v["traces"][0]["call_list"].as_array().expect("call_list");
    let causes: Vec<&str> = calls
        .iter()
        .map(|c| c["cause"].as_str().expect("cause"))
        .collect();
    assert_eq!(
        causes,
        [
            "first_call",
            "intact",
            "intact",
            "idle_gap",
            "intact",
            "tool_definitions",
            "intact",
            "intact",
            "edited",
            "intact"
        ]
    );
    assert_eq!(calls[3]["idle_secs"], 600.0);
    assert_eq!(calls[5]["at"], "m0");
    assert_eq!(calls[5]["edited"][0][0], "m0");
    assert_eq!(calls[8]["at"], "m2");
    let sum: u64 = v["traces"][0]["calls_detail"]
        .as_array()
        .expect("calls_detail")
        .iter()
        .map(|c| c["counted"]["input"].as_u64().expect("counted input"))
        .sum();
    let listed: u64 = calls
        .iter()
        .map(|c| c["counted_input_tokens"].as_u64().expect("tokens"))
        .sum();
    assert_eq!(sum, listed);
    // Without --calls the JSON has no call list.
    let o = memlens(&["inspect", "openai/cache-breaks.jsonl", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert!(v["traces"][0].get("call_list").is_none());
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
    // Written atomically: replaced in one rename, no temporary file left; a target that cannot
    // be replaced (a non-empty directory) is an error that leaves it as it was.
    let again = memlens(&[
        "convert",
        "openai/messages-object.json",
        "-o",
        out.to_str().expect("utf-8 path"),
    ]);
    assert!(again.status.success());
    let busy = dir.join("busy");
    std::fs::create_dir_all(busy.join("inside")).expect("dir");
    let o = memlens(&[
        "convert",
        "openai/messages-object.json",
        "-o",
        busy.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(busy.join("inside").is_dir());
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("listed")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["busy", "t.jsonl"]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn simulate_json_has_the_documented_totals() {
    let o = memlens(&[
        "simulate",
        "openai/messages-object.json",
        "--policy",
        "window",
        "--budget",
        "40",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["policy"], "window");
    assert_eq!(v["budget"], 40);
    for key in [
        "input_tokens",
        "full_input_tokens",
        "saved_tokens",
        "cost_usd",
        "full_cost_usd",
        "misses",
        "violations",
        "over_budget_calls",
    ] {
        assert!(v["totals"].get(key).is_some(), "missing totals.{key}");
    }
    assert_eq!(v["totals"]["violations"], 0);
    assert!(v["totals"]["saved_tokens"].as_i64().is_some_and(|s| s > 0));
    assert_eq!(v["traces"][0]["calls"].as_array().map(Vec::len), Some(2));
}

#[test]
fn simulate_summaries_reports_what_each_summary_kept_and_lost() {
    let dir = std::env::temp_dir().join(format!("memlens-cli-summaries-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let policy = dir.join("window-summary.toml");
    std::fs::write(&policy, "strategy = \"window\"\n[compress.summary]\n").expect("policy");
    let sample =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../web/sample/support-agent.json");
    let (sample, policy) = (sample.to_string_lossy(), policy.to_string_lossy());
    let args = [
        "simulate",
        &sample,
        "--policy",
        &policy,
        "--budget",
        "600",
        "--summaries",
    ];
    let o = memlens(&[&args[..], &["--json"]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let summaries = v["traces"][0]["summaries"].as_array().expect("summaries");
    assert!(summaries.len() >= 2, "the window summarizes what it evicts");
    for s in summaries {
        assert_eq!(s["trigger"], "policy");
        assert!(s["replaced_chunks"].as_u64().is_some_and(|n| n > 0));
        let listed =
            s["kept"].as_array().map_or(0, Vec::len) + s["lost"].as_array().map_or(0, Vec::len);
        let tallied: u64 = ["identifiers", "paths", "commands", "numbers", "urls"]
            .iter()
            .map(|k| s[k]["replaced"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(listed as u64, tallied);
    }
    // Without the flag the JSON has no summaries; the text lists them.
    let o = memlens(&args[..args.len() - 1]);
    assert!(!stdout(&o).contains("summaries the policy made"));
    let o = memlens(&args);
    let text = stdout(&o);
    assert!(
        text.contains(&format!("summaries the policy made: {}", summaries.len())),
        "{text}"
    );
    assert!(text.contains("#1 at call"), "{text}");
}

#[test]
fn policies_come_from_files_in_json_or_toml_and_bad_ones_are_one_line_errors() {
    let dir = std::env::temp_dir().join(format!("memlens-policy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let toml = dir.join("tight.toml");
    std::fs::write(&toml, "strategy = \"window\"\nbudget = 40\n").expect("write");
    let o = memlens(&[
        "simulate",
        "openai/messages-object.json",
        "--policy",
        toml.to_str().expect("utf-8"),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["policy"], "tight");
    assert_eq!(v["budget"], 40);

    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"strategy\": \"nope\"}").expect("write");
    let o = memlens(&[
        "simulate",
        "openai/messages-object.json",
        "--policy",
        bad.to_str().expect("utf-8"),
        "--budget",
        "100",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("invalid policy (json)"), "{err}");

    let o = memlens(&[
        "simulate",
        "openai/messages-object.json",
        "--policy",
        "no-such-policy",
        "--budget",
        "100",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("built-in policies"));
    let o = memlens(&[
        "simulate",
        "openai/messages-object.json",
        "--policy",
        "window",
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--budget"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn compare_and_sweep_give_one_row_per_policy_and_budget() {
    let o = memlens(&[
        "compare",
        "tau-bench/two-trajectories.json",
        "--model",
        "gpt-4o",
        "--budget",
        "150",
        "--json",
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), memlens_core_builtin_count());
    let o = memlens(&[
        "sweep",
        "tau-bench/two-trajectories.json",
        "--policy",
        "value",
        "--budgets",
        "100,200,400",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let budgets: Vec<u64> = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["budget"].as_u64())
        .collect();
    assert_eq!(budgets, vec![100, 200, 400]);
    let o = memlens(&["policies", "value-offload"]);
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).expect("policy JSON");
    assert!(p["offload"].is_object());
}

/// The default `compare` list: every built-in policy.
fn memlens_core_builtin_count() -> usize {
    let o = memlens(&["policies"]);
    String::from_utf8_lossy(&o.stdout).lines().count()
}

#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    // Megabytes of JSON: the reader closes the pipe long before the end.
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/traces/tau-bench-gpt-4o-airline.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_memlens"))
        .args(["inspect", "--json", "--chunks"])
        .arg(&data)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run memlens");
    let mut first = [0u8; 64];
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_exact(&mut first)
        .expect("some output");
    // The read end is dropped here: like `| head -c 64`.
    let out = child.wait_with_output().expect("memlens ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "status {:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn convert_redact_replaces_secrets_and_reports_tokens_before_and_after() {
    let dir = std::env::temp_dir().join(format!("memlens-redact-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("redacted.jsonl");
    let o = memlens(&[
        "convert",
        "openai/secrets-to-redact.json",
        "-o",
        out.to_str().expect("utf-8 path"),
        "--redact",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("redacted 7 occurrence(s) of 5 secret(s)"),
        "{stderr}"
    );
    assert!(stderr.contains("tokens "), "{stderr}");
    let text = std::fs::read_to_string(&out).expect("written");
    for secret in [
        "sk-proj-Xq7LmN2pR8sT4vW9yZ1bC3dE5fG6hJ0k",
        "Tr0ub4dor",
        "ops.lead@example.org",
        "9fK2mQ7xL4pR8vN3tW6yB1cZ5hJ0gD",
        "AKIAIOSFODNN7EXAMPLE",
    ] {
        assert!(!text.contains(secret), "{secret} left in {text}");
    }
    // The same address is the same placeholder in every message.
    assert_eq!(text.matches("[REDACTED_EMAIL_1]").count(), 3);
    // The redacted file is a valid trace, tool pairing intact.
    let o = memlens(&["inspect", out.to_str().expect("utf-8 path"), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["traces"][0]["calls"], 2);
    assert_eq!(v["traces"][0]["orphan_tool_results"], 0);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_document_with_no_records_says_so() {
    let dir = std::env::temp_dir().join(format!("memlens-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let empty = dir.join("empty-array.json");
    std::fs::write(&empty, "[]").expect("write");
    let deep = dir.join("deep.json");
    std::fs::write(&deep, format!("{}{}", "[".repeat(5000), "]".repeat(5000))).expect("write");
    let o = memlens(&[
        "inspect",
        empty.to_str().expect("utf-8"),
        deep.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("no records: the file is an empty array"),
        "{stderr}"
    );
    assert!(
        stderr.contains("its first record (line 1) could not be read"),
        "{stderr}"
    );
    assert!(!stderr.contains("(no value)"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A temporary Claude Code project folder (`~/.claude/projects/<dir>/`): the session fixture and
/// its subagent's file under `<session>/subagents/`; returns the folder and the session id.
fn claude_code_project(name: &str) -> (PathBuf, &'static str) {
    let session = "7d3f6a52-1c9e-4b8a-9f21-5e0c7b4d2a10";
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let subagents = dir.join(session).join("subagents");
    std::fs::create_dir_all(&subagents).expect("temp dir");
    std::fs::copy(
        fixture("claude-code/session.jsonl"),
        dir.join(format!("{session}.jsonl")),
    )
    .expect("copy session");
    std::fs::copy(
        fixture("claude-code/agent-a7c31f2.jsonl"),
        subagents.join("agent-a7c31f2.jsonl"),
    )
    .expect("copy subagent");
    (dir, session)
}

#[test]
fn a_claude_code_project_folder_links_each_subagent_to_its_parent_call() {
    // ~/.claude/projects/<dir>/ as Claude Code lays it out, plus a file that is not a trace.
    let (dir, session) = claude_code_project("memlens-project");
    std::fs::write(dir.join("notes.txt"), "not a trace").expect("write");
    let o = memlens(&["inspect", "--json", dir.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let traces = v["traces"].as_array().expect("traces");
    assert_eq!(
        traces.len(),
        2,
        "the session and its subagent, not notes.txt"
    );
    assert_eq!(traces[0]["id"], session);
    let human = stdout(&memlens(&["inspect", dir.to_str().expect("utf-8")]));
    assert!(
        human.contains(&format!("started by {session} call 1")),
        "{human}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Every command that reads traces reads them one way: a folder with a bad file gives results
/// for the rest, names the bad file and exits 1; subagents are linked; sidecars are skipped.
#[test]
fn one_bad_file_never_stops_a_folder_run() {
    let (dir, session) = claude_code_project("memlens-bad-folder");
    let subagents = dir.join(session).join("subagents");
    // Claude Code's sidecar beside a subagent's transcript: not a trace, never an error.
    std::fs::write(
        subagents.join("agent-a7c31f2.meta.json"),
        r#"{"agentType":"general-purpose"}"#,
    )
    .expect("write sidecar");
    std::fs::write(dir.join("broken.json"), "{\"messages\": [").expect("write bad file");
    let folder = dir.to_str().expect("utf-8");
    let columns = dir.join("columns");
    let columns = columns.to_str().expect("utf-8");
    let runs: [&[&str]; 5] = [
        &[
            "simulate", folder, "--policy", "window", "--budget", "4000", "--json",
        ],
        &[
            "sweep",
            folder,
            "--policy",
            "window",
            "--budgets",
            "2000,4000",
            "--json",
        ],
        &[
            "compare",
            folder,
            "--policies",
            "window,value",
            "--budget",
            "4000",
            "--json",
        ],
        &["export-columns", folder, "-o", columns],
        &["inspect", folder, "--json"],
    ];
    for args in runs {
        let o = memlens(args);
        // Named on standard error, or among the errors of the JSON document (`inspect --json`).
        let err = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("broken.json"), "{args:?}: {err}");
        assert!(!err.contains("meta.json"), "{args:?}: {err}");
        assert!(
            !o.stdout.is_empty(),
            "{args:?} printed nothing for the good files"
        );
    }
    // The two good files were read, and the subagent linked to its parent's call.
    let o = memlens(&[
        "simulate", folder, "--policy", "keep-all", "--budget", "4000", "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["traces"].as_array().map(Vec::len), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn report_writes_one_html_file_and_refuses_bad_arguments() {
    let dir = std::env::temp_dir().join(format!("memlens-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("report.html");
    let out_s = out.display().to_string();
    let o = memlens(&[
        "report",
        "tau-bench/two-trajectories.json",
        "--model",
        "gpt-4o",
        "--policies",
        "window,value",
        "--budgets",
        "1000,2000",
        "-o",
        &out_s,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).expect("written");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script"));
    assert_eq!(html.matches("<tr><td>window</td>").count(), 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("4 replays"));
    // No temporary file left beside it.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("listed")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");

    for (args, message) in [
        (
            vec!["--trace", "no-such-trace"],
            "--trace no-such-trace: no trace with this id",
        ),
        (
            vec!["--budgets", "lots"],
            "--budgets: \"lots\" is not a token count",
        ),
        (vec!["--policies", "no-such-policy"], "no-such-policy"),
    ] {
        let mut all = vec!["report", "tau-bench/two-trajectories.json", "-o", &out_s];
        all.extend(args);
        let o = memlens(&all);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(message), "{err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A Parquet file written by `export-columns`, as one batch (they are small here).
fn read_parquet(path: &std::path::Path) -> arrow_array::RecordBatch {
    let file = std::fs::File::open(path).expect("the file was written");
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a Parquet file")
        .with_batch_size(1 << 20);
    let schema = builder.schema().clone();
    let batches: Vec<_> = builder
        .build()
        .expect("a reader")
        .map(|b| b.expect("a batch"))
        .collect();
    assert!(batches.len() <= 1, "one batch per table at this size");
    batches
        .into_iter()
        .next()
        .unwrap_or_else(|| arrow_array::RecordBatch::new_empty(schema))
}

/// A column as JSON values (null for nulls), whatever its Arrow type.
fn column(batch: &arrow_array::RecordBatch, name: &str) -> Vec<serde_json::Value> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, Int64Type};
    use arrow_array::Array;
    let array = batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"));
    (0..array.len())
        .map(|i| {
            if array.is_null(i) {
                return serde_json::Value::Null;
            }
            match array.data_type() {
                arrow_schema::DataType::Int64 => array.as_primitive::<Int64Type>().value(i).into(),
                arrow_schema::DataType::Float64 => {
                    array.as_primitive::<Float64Type>().value(i).into()
                }
                arrow_schema::DataType::Float32 => {
                    f64::from(array.as_primitive::<Float32Type>().value(i)).into()
                }
                arrow_schema::DataType::Utf8 => array.as_string::<i32>().value(i).into(),
                arrow_schema::DataType::Boolean => array.as_boolean().value(i).into(),
                other => panic!("{name}: unexpected type {other}"),
            }
        })
        .collect()
}

/// Exports `files` (with `extra` options) and checks every table against `memlens inspect --json`
/// on the same input: equal figures, not close ones.
fn check_export_columns(name: &str, files: &[String], extra: &[&str]) {
    let dir = std::env::temp_dir().join(format!("memlens-columns-{name}-{}", std::process::id()));
    let mut args = vec!["export-columns", "-o", dir.to_str().expect("a UTF-8 path")];
    args.extend(extra);
    args.extend(files.iter().map(String::as_str));
    let o = memlens(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut inspect = vec!["inspect", "--json"];
    inspect.extend(extra);
    inspect.extend(files.iter().map(String::as_str));
    let v: serde_json::Value =
        serde_json::from_slice(&memlens(&inspect).stdout).expect("inspect --json");
    let want = v["traces"].as_array().expect("traces");

    let traces = read_parquet(&dir.join("traces.parquet"));
    let calls = read_parquet(&dir.join("calls.parquet"));
    let chunks = read_parquet(&dir.join("chunks.parquet"));
    assert_eq!(traces.num_rows(), want.len());
    // The trace table: inspect's figures, key for key.
    for key in [
        "format",
        "model",
        "encoding",
        "tokens_estimated",
        "calls",
        "chunks",
        "peak_input_tokens",
        "context_window",
        "reported_input_tokens",
        "counted_input_tokens",
        "counted_input_tokens_where_reported",
        "counted_output_tokens",
        "orphan_tool_results",
        "unanswered_tool_calls",
        "priced_as",
        "cost_usd",
    ] {
        let got = column(&traces, key);
        let expected: Vec<_> = want.iter().map(|t| t[key].clone()).collect();
        assert_eq!(got, expected, "traces.{key}");
    }
    assert_eq!(
        column(&traces, "trace_id"),
        want.iter().map(|t| t["id"].clone()).collect::<Vec<_>>()
    );
    assert_eq!(
        column(&traces, "source"),
        want.iter().map(|t| t["file"].clone()).collect::<Vec<_>>()
    );
    for (i, t) in want.iter().enumerate() {
        assert_eq!(column(&traces, "total_tokens")[i], t["tokens"]["total"]);
        for (category, tokens) in t["tokens"]["by_category"].as_object().expect("categories") {
            assert_eq!(
                column(&traces, &format!("tokens_{category}"))[i],
                *tokens,
                "{category}"
            );
        }
    }
    // The call table: one row per call of every trace, inspect's per-call figures.
    let detail: Vec<&serde_json::Value> = want
        .iter()
        .flat_map(|t| t["calls_detail"].as_array().expect("calls_detail"))
        .collect();
    assert_eq!(calls.num_rows(), detail.len());
    let pick = |f: &dyn Fn(&serde_json::Value) -> serde_json::Value| -> Vec<serde_json::Value> {
        detail.iter().map(|c| f(c)).collect()
    };
    assert_eq!(column(&calls, "call"), pick(&|c| c["index"].clone()));
    assert_eq!(
        column(&calls, "input_tokens"),
        pick(&|c| c["counted"]["input"].clone())
    );
    assert_eq!(
        column(&calls, "output_tokens"),
        pick(&|c| c["counted"]["output"].clone())
    );
    assert_eq!(
        column(&calls, "reported_input_tokens"),
        pick(&|c| c["reported_input"].clone())
    );
    assert_eq!(
        column(&calls, "cached_input_tokens"),
        pick(&|c| c["cached_input"].clone())
    );
    assert_eq!(column(&calls, "cost_usd"), pick(&|c| c["cost_usd"].clone()));
    // The chunk table: every chunk once; their tokens add up to each trace's total.
    let n: u64 = want.iter().map(|t| t["chunks"].as_u64().expect("n")).sum();
    assert_eq!(chunks.num_rows() as u64, n);
    let tokens: i64 = column(&chunks, "tokens")
        .iter()
        .map(|x| x.as_i64().expect("int"))
        .sum();
    let total: u64 = want
        .iter()
        .map(|t| t["tokens"]["total"].as_u64().expect("n"))
        .sum();
    assert_eq!(tokens as u64, total);
    let top = &want[0]["top_chunks"][0];
    let keys = column(&chunks, "key");
    let at = keys
        .iter()
        .position(|k| *k == top["key"])
        .expect("the top chunk is a row");
    assert_eq!(column(&chunks, "cost_usd")[at], top["cost_usd"]);
    assert_eq!(column(&chunks, "calls_carried")[at], top["calls_carried"]);
    assert_eq!(column(&chunks, "category")[at], top["category"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// Exports `files` with simulations of `policies` at `budgets`, and checks each row against
/// `memlens simulate --json` for that policy and budget: the same totals, trace by trace.
fn check_export_simulations(name: &str, files: &[String], extra: &[&str]) {
    let (policies, budgets) = ("window,value,oracle", ["2000", "4000"]);
    let dir = std::env::temp_dir().join(format!("memlens-sims-{name}-{}", std::process::id()));
    let joined = budgets.join(",");
    let mut args = vec!["export-columns", "-o", dir.to_str().expect("UTF-8")];
    args.extend(["--policies", policies, "--budgets", &joined]);
    args.extend(extra);
    args.extend(files.iter().map(String::as_str));
    let o = memlens(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sims = read_parquet(&dir.join("simulations.parquet"));
    let mut want: Vec<serde_json::Value> = Vec::new();
    for policy in policies.split(',') {
        for budget in budgets {
            let mut args = vec!["simulate", "--policy", policy, "--budget", budget, "--json"];
            args.extend(extra);
            args.extend(files.iter().map(String::as_str));
            let v: serde_json::Value =
                serde_json::from_slice(&memlens(&args).stdout).expect("simulate --json");
            for t in v["traces"].as_array().expect("traces") {
                want.push(serde_json::json!({
                    "trace_id": t["id"], "policy": v["policy"], "budget": v["budget"],
                    "totals": t["totals"],
                }));
            }
        }
    }
    // simulate lists traces within each policy and budget; the table lists policies and budgets
    // within each trace: compare as sets of rows keyed by (trace, policy, budget).
    let key = |t: &serde_json::Value, p: &serde_json::Value, b: &serde_json::Value| {
        format!("{t}/{p}/{b}")
    };
    let got: std::collections::BTreeMap<String, serde_json::Value> = (0..sims.num_rows())
        .map(|i| {
            let cell = |c: &str| column(&sims, c)[i].clone();
            let totals: serde_json::Map<String, serde_json::Value> = [
                "calls",
                "input_tokens",
                "full_input_tokens",
                "saved_tokens",
                "cost_usd",
                "full_cost_usd",
                "saved_usd",
                "misses",
                "calls_with_misses",
                "violations",
                "over_budget_calls",
                "compressions",
                "retrievals",
                "summary_cost_usd",
            ]
            .into_iter()
            .map(|c| (c.to_string(), cell(c)))
            .collect();
            (
                key(&cell("trace_id"), &cell("policy"), &cell("budget")),
                totals.into(),
            )
        })
        .collect();
    assert_eq!(
        got.len(),
        want.len(),
        "one row per trace, policy and budget"
    );
    for w in &want {
        let k = key(&w["trace_id"], &w["policy"], &w["budget"]);
        assert_eq!(got.get(&k), Some(&w["totals"]), "{k}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn export_columns_writes_what_inspect_reports() {
    let files = [
        fixture("anthropic/log.jsonl"),
        fixture("openai/request-response-log.jsonl"),
        fixture("claude-code/session.jsonl"),
        fixture("tau-bench/two-trajectories.json"),
    ];
    check_export_columns("fixtures", &files, &[]);
    check_export_simulations("fixtures", &files, &[]);
    // The real data beside the repository, when present: tau-bench as gpt-4o, LoCoMo.
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    let tau = shared.join("traces/tau-bench-gpt-4o-airline.json");
    if tau.exists() {
        let tau = [tau.display().to_string()];
        check_export_columns("tau", &tau, &["--model", "gpt-4o"]);
        check_export_simulations("tau", &tau, &["--model", "gpt-4o"]);
        let locomo = [shared.join("locomo/locomo10.json").display().to_string()];
        check_export_columns("locomo", &locomo, &[]);
    }

    // No readable input: an error naming the file, nothing written.
    let bad = std::env::temp_dir().join(format!("memlens-columns-bad-{}", std::process::id()));
    let o = memlens(&[
        "export-columns",
        "-o",
        bad.to_str().expect("UTF-8"),
        "malformed/truncated.json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("truncated.json"));
    assert!(!bad.join("traces.parquet").exists());
}

/// `labels-from-hindsight` on `files`: the CSV and the Parquet file hold the same rows, and per
/// chunk they agree with export-columns' chunk table (one row per call carrying it, from its
/// first to its last call; at its first call, every use the access graph found is still ahead).
fn check_hindsight_labels(name: &str, files: &[String], extra: &[&str]) {
    let dir = std::env::temp_dir().join(format!("memlens-labels-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let parquet = dir.join("labels.parquet");
    let mut args = vec!["labels-from-hindsight"];
    args.extend(extra);
    args.extend(files.iter().map(String::as_str));
    let csv = memlens(&args);
    assert!(
        csv.status.success(),
        "{}",
        String::from_utf8_lossy(&csv.stderr)
    );
    let csv = stdout(&csv);
    args.extend(["-o", parquet.to_str().expect("a UTF-8 path")]);
    let o = memlens(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let labels = read_parquet(&parquet);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "source,trace_id,call,chunk,key,category,tool_name,tokens,used_later,next_use_call,\
             calls_until_use,uses_after"
        )
    );
    assert_eq!(lines.count(), labels.num_rows());

    let mut export = vec!["export-columns", "-o", dir.to_str().expect("a UTF-8 path")];
    export.extend(extra);
    export.extend(files.iter().map(String::as_str));
    assert!(memlens(&export).status.success());
    let chunks = read_parquet(&dir.join("chunks.parquet"));
    type Key = (serde_json::Value, serde_json::Value, serde_json::Value);
    let mut per_chunk: std::collections::HashMap<Key, Vec<(i64, i64, bool, i64)>> =
        Default::default();
    let [source, trace, chunk, call, uses, used, until] = [
        "source",
        "trace_id",
        "chunk",
        "call",
        "uses_after",
        "used_later",
        "calls_until_use",
    ]
    .map(|c| column(&labels, c));
    for i in 0..labels.num_rows() {
        let key = (source[i].clone(), trace[i].clone(), chunk[i].clone());
        let row = (
            call[i].as_i64().expect("int"),
            uses[i].as_i64().expect("int"),
            used[i].as_bool().expect("bool"),
            until[i].as_i64().unwrap_or(-1),
        );
        // used_later exactly when a use lies ahead.
        assert_eq!(row.2, row.1 > 0, "{key:?} {row:?}");
        assert_eq!(row.2, row.3 >= 0, "{key:?} {row:?}");
        per_chunk.entry(key).or_default().push(row);
    }
    let [c_source, c_trace, c_chunk, carried, first, last, refs] = [
        "source",
        "trace_id",
        "chunk",
        "calls_carried",
        "first_call",
        "last_call",
        "references",
    ]
    .map(|c| column(&chunks, c));
    let mut with_rows = 0;
    for i in 0..chunks.num_rows() {
        let key = (c_source[i].clone(), c_trace[i].clone(), c_chunk[i].clone());
        let rows = per_chunk.get(&key).map_or(&[][..], Vec::as_slice);
        assert_eq!(
            rows.len() as i64,
            carried[i].as_i64().expect("int"),
            "{key:?}"
        );
        if let Some(&(first_call, uses_ahead, _, _)) = rows.first() {
            with_rows += 1;
            assert_eq!(Some(first_call), first[i].as_i64(), "{key:?}");
            assert_eq!(rows.last().map(|r| r.0), last[i].as_i64(), "{key:?}");
            assert_eq!(Some(uses_ahead), refs[i].as_i64(), "{key:?}");
            // Uses ahead only fall as the calls go by.
            assert!(rows.windows(2).all(|w| w[0].1 >= w[1].1), "{key:?}");
        }
    }
    assert_eq!(
        with_rows,
        per_chunk.len(),
        "every labelled chunk is in the chunk table"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn labels_from_hindsight_agree_with_the_chunk_table() {
    let files = [
        fixture("anthropic/log.jsonl"),
        fixture("claude-code/session.jsonl"),
        fixture("tau-bench/two-trajectories.json"),
    ];
    check_hindsight_labels("fixtures", &files, &[]);
    let tau = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/traces/tau-bench-gpt-4o-airline.json");
    if tau.exists() {
        let tau = [tau.display().to_string()];
        check_hindsight_labels("tau", &tau, &["--model", "gpt-4o"]);
    }
    // Nothing readable: exit 2 with the file named.
    let o = memlens(&["labels-from-hindsight", "malformed/truncated.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("truncated.json"));
    // A folder that does not exist: the file asked for is named, not a temporary one.
    let o = memlens(&[
        "labels-from-hindsight",
        "tau-bench/two-trajectories.json",
        "-o",
        "/nonexistent-memlens/labels.parquet",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("/nonexistent-memlens/labels.parquet:"),
        "{stderr}"
    );
    assert!(!stderr.contains(".tmp"), "{stderr}");
}

#[test]
fn compare_frontier_marks_the_rows_no_other_row_beats() {
    let o = memlens(&[
        "compare",
        "tau-bench/two-trajectories.json",
        "--policies",
        "window,value,oracle,keep-all",
        "--budgets",
        "300,600,1200",
        "--frontier",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4 * 3);
    let point = |r: &serde_json::Value| {
        let t = &r["totals"];
        let f = |k: &str| t[k].as_f64().expect("a number");
        (
            f("saved_tokens") / f("full_input_tokens").max(1.0),
            f("calls_with_misses") / f("calls").max(1.0),
        )
    };
    for r in rows {
        let (s, m) = point(r);
        let beaten = rows.iter().any(|o| {
            let (os, om) = point(o);
            os >= s && om <= m && (os > s || om < m)
        });
        assert_eq!(r["frontier"], !beaten, "{r}");
    }
    assert!(rows.iter().any(|r| r["frontier"] == true));
    // The table: one line per policy and budget (the default budgets), the frontier marked.
    let text = stdout(&memlens(&[
        "compare",
        "tau-bench/two-trajectories.json",
        "--policies",
        "window,oracle",
        "--frontier",
    ]));
    assert!(text.contains("frontier"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains(" oracle ")).count(),
        3,
        "{text}"
    );
}

#[test]
fn fit_writes_a_policy_that_replays_to_the_figures_it_reports() {
    let dir = std::env::temp_dir().join(format!("memlens-fit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let policy = dir.join("fitted.toml");
    let files = [
        fixture("tau-bench/two-trajectories.json"),
        fixture("claude-code/session.jsonl"),
        fixture("anthropic/log.jsonl"),
    ];
    let mut args = vec![
        "fit",
        "--budget",
        "600",
        "--max-miss-rate",
        "0.2",
        "--folds",
        "2",
        "--json",
        "-o",
        policy.to_str().expect("a UTF-8 path"),
    ];
    args.extend(files.iter().map(String::as_str));
    let o = memlens(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["folds"].as_array().map(Vec::len), Some(2));
    // Each trace is held out once: the folds' validation traces add up to all of them.
    let held: u64 = v["folds"]
        .as_array()
        .expect("folds")
        .iter()
        .map(|f| f["validation"]["traces"].as_u64().expect("traces"))
        .sum();
    assert_eq!(Some(held), v["traces"].as_u64());
    // The written policy replays to the training figures `fit` reported.
    let mut sim = vec![
        "simulate",
        "--policy",
        policy.to_str().expect("a UTF-8 path"),
        "--budget",
        "600",
        "--json",
    ];
    sim.extend(files.iter().map(String::as_str));
    let s: serde_json::Value =
        serde_json::from_slice(&memlens(&sim).stdout).expect("simulate --json");
    for key in [
        "input_tokens",
        "full_input_tokens",
        "misses",
        "calls_with_misses",
    ] {
        assert_eq!(s["totals"][key], v["train"][key], "{key}");
    }
    assert_eq!(s["policy"], "value-fitted");
    // The ceiling applied is the user's, lowered to the base policy's own share of calls with a
    // miss; the chosen policy is within it.
    let share = |o: &serde_json::Value| {
        o["calls_with_misses"].as_f64().expect("count") / o["calls"].as_f64().expect("calls")
    };
    let ceiling = v["ceiling"].as_f64().expect("ceiling");
    assert_eq!(ceiling, share(&v["base_train"]).min(0.2), "{v}");
    if v["within_ceiling"] == true {
        assert!(share(&v["train"]) <= ceiling, "{v}");
    }
    assert_eq!(v["confidence"], 0.9);
    // The human table names the folds and the weights' change.
    args.retain(|a| *a != "--json");
    let text = stdout(&memlens(&args));
    assert!(text.contains("2-fold by trace"), "{text}");
    assert!(text.contains("recency"), "{text}");
    // A ceiling that is not a share is refused.
    let o = memlens(&[
        "fit",
        "--max-miss-rate",
        "5",
        "tau-bench/two-trajectories.json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let o = memlens(&[
        "fit",
        "--confidence",
        "1.5",
        "tau-bench/two-trajectories.json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

/// Every subcommand, its output piped into a reader that is gone: `| head -1`, and a read end
/// closed before the first write (the harshest case: every write fails). Each ends with its
/// normal status, no panic, no broken-pipe error. The list is checked against `memlens --help`, so
/// a new subcommand needs a case here.
#[test]
fn every_subcommand_ends_quietly_on_a_closed_pipe() {
    use std::process::Stdio;
    let scratch = std::env::temp_dir().join(format!("memlens-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch folder");
    let out = |name: &str| scratch.join(name).display().to_string();
    let trace = fixture("tau-bench/two-trajectories.json");
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "inspect",
            vec![trace.clone(), "--chunks".into(), "--calls".into()],
        ),
        ("convert", vec![trace.clone(), "-o".into(), out("t.jsonl")]),
        (
            "export-columns",
            vec![trace.clone(), "-o".into(), out("columns")],
        ),
        ("labels-from-hindsight", vec![trace.clone()]),
        (
            "fit",
            vec![
                trace.clone(),
                "--folds".into(),
                "0".into(),
                "--budget".into(),
                "1000".into(),
            ],
        ),
        ("formats", vec![]),
        (
            "simulate",
            vec![
                trace.clone(),
                "--policy".into(),
                "value".into(),
                "--budget".into(),
                "1000".into(),
            ],
        ),
        (
            "sweep",
            vec![trace.clone(), "--policy".into(), "window".into()],
        ),
        ("compare", vec![trace.clone(), "--frontier".into()]),
        ("report", vec![trace.clone(), "-o".into(), out("r.html")]),
        ("bench-evidence", vec![fixture("locomo/small.json")]),
        ("policies", vec![]),
    ];
    let help = memlens(&["--help"]);
    let listed: Vec<String> = stdout(&help)
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        // A command's line is indented two spaces; its description may wrap onto lines indented
        // further (clap wraps at the terminal's width, or 100 columns without one).
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    let covered: Vec<&str> = cases.iter().map(|(c, _)| *c).collect();
    assert_eq!(listed, covered, "a subcommand without a closed-pipe case");
    let bin = env!("CARGO_BIN_EXE_memlens");
    // Status lines (`convert`'s "wrote ...") go to stderr; a panic or an I/O error must not.
    let ends_quietly = |o: &Output, how: &str| {
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{how}: {:?}: {stderr}", o.status);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{how}: {stderr}"
        );
    };
    for (command, args) in &cases {
        // `memlens ... | head -1`, the exit status of memlens itself (pipefail).
        let quoted: Vec<String> = std::iter::once(bin.to_string())
            .chain(std::iter::once(command.to_string()))
            .chain(args.iter().cloned())
            .map(|a| format!("'{a}'"))
            .collect();
        let o = Command::new("bash")
            .args([
                "-c",
                &format!("set -o pipefail; {} | head -1 >/dev/null", quoted.join(" ")),
            ])
            .output()
            .expect("bash");
        ends_quietly(&o, &format!("{command} | head -1"));
        // The read end closed before memlens writes anything.
        let mut child = Command::new(bin)
            .arg(command)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run memlens");
        drop(child.stdout.take());
        let o = child.wait_with_output().expect("memlens ends");
        ends_quietly(&o, &format!("{command}, pipe closed"));
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// A file larger than the machine can hold is refused with a message naming it and the way
/// around (the limit lowered here so that a fixture is "too large").
#[test]
fn a_file_too_large_to_hold_is_refused_with_a_clear_message() {
    let o = Command::new(env!("CARGO_BIN_EXE_memlens"))
        .args(["inspect", &fixture("tau-bench/two-trajectories.json")])
        .env("MEMLENS_MAX_INPUT_BYTES", "1000")
        .output()
        .expect("run memlens");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("two-trajectories.json")
            && stderr.contains("more than this machine can hold"),
        "{stderr}"
    );
    assert!(stderr.contains("MEMLENS_MAX_INPUT_BYTES"), "{stderr}");
    // Within the limit, the same file reads.
    let o = Command::new(env!("CARGO_BIN_EXE_memlens"))
        .args(["inspect", &fixture("tau-bench/two-trajectories.json")])
        .env("MEMLENS_MAX_INPUT_BYTES", "100000000")
        .output()
        .expect("run memlens");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `bench-evidence --policy FILE` benchmarks a user's policy (a fitted one, say) beside the
/// built-in strategies, under its own name; a policy file that does not parse is an error naming it.
#[test]
fn bench_evidence_takes_the_users_policies() {
    let dir = std::env::temp_dir().join(format!("memlens-bench-evidence-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("mine.toml");
    std::fs::write(
        &file,
        "name = \"mine\"\nstrategy = \"value\"\nsize_exponent = 0.0\n",
    )
    .expect("write");
    let path = file.to_string_lossy().into_owned();
    let small = fixture("locomo/small.json");
    let o = memlens(&[
        "bench-evidence",
        &small,
        "--budgets",
        "200",
        "--policy",
        &path,
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    let mine: Vec<_> = rows.iter().filter(|r| r["policy"] == "mine").collect();
    assert_eq!(mine.len(), 1, "one row per budget for the user's policy");
    assert!(
        rows.iter().any(|r| r["policy"] == "value"),
        "the built-in strategies still run"
    );
    std::fs::write(&file, "strategy = 7\n").expect("write");
    let o = memlens(&["bench-evidence", &small, "--policy", &path]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("mine.toml: invalid policy") && !err.contains("panicked"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
