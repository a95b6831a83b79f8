//! Every fixture under `tests/fixtures/<format>/` imports to its snapshot; malformed ones to an
//! error or warnings. The directory names the importer the sniffer must pick.

use crate::{import_path, render, root};
use memlens_core::cost::PriceTable;
use memlens_core::report::summarize;

#[test]
fn fixtures_match_snapshots() {
    insta::glob!("../fixtures", "*/*", |path| {
        let dir = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !path.is_file()
            || dir == "web"
            || dir == "real"
            || path.extension().is_some_and(|e| e == "md")
        {
            // The web app's browser-test inputs (tests/web), real files (tests/it/real_files.rs)
            // and notes on sources are not an importer's fixtures.
            return;
        }
        let result = import_path(path);
        let stem = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Fixtures in a format's folder import, except those named for the error they show.
        if dir != "malformed" && !stem.starts_with("no-") && !stem.starts_with("error-") {
            let r = result
                .as_ref()
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let expected = if dir == "memlens" {
                "memlens"
            } else {
                dir.as_str()
            };
            assert_eq!(
                r.format,
                expected,
                "{} sniffed as the wrong format",
                path.display()
            );
        }
        insta::assert_snapshot!(render(&result));
    });
}

#[test]
fn malformed_inputs_give_errors_naming_file_and_position() {
    let dir = root().join("tests/fixtures/malformed");
    let err = |name: &str| {
        crate::import_path(&dir.join(name))
            .err()
            .unwrap_or_else(|| panic!("{name} should not import"))
            .to_string()
    };
    assert!(err("empty.json").starts_with("empty.json: the file is empty"));
    assert!(err("whitespace.json").contains("empty"));
    assert!(
        err("truncated.json").starts_with("truncated.json:7:"),
        "{}",
        err("truncated.json")
    );
    assert!(err("garbage.bin").starts_with("garbage.bin:1:1: invalid JSON"));
    assert!(err("not-a-trace.json").contains("not a trace format"));
    assert!(err("native-bad-reference.jsonl").contains("line 4"));
    assert!(err("native-newer-version.jsonl").contains("version 99"));
}

#[test]
fn recoverable_problems_are_warnings_and_the_rest_loads() {
    let dir = root().join("tests/fixtures/malformed");
    let r = import_path(&dir.join("orphan-tool-result.json")).expect("imports with warnings");
    let t = &r.traces[0];
    assert_eq!(t.orphan_results().count(), 1);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.message.contains("call_missing")));
    assert!(r
        .warnings
        .iter()
        .any(|w| w.message.contains("message 3 skipped")));

    let r = import_path(&dir.join("jsonl-bad-line.jsonl")).expect("good lines load");
    assert_eq!(r.traces.len(), 2);
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings[0].location.line, Some(2));

    let r = import_path(&dir.join("invalid-utf8.json")).expect("lossy decode");
    assert!(
        r.warnings[0].message.contains("byte offset 30"),
        "{}",
        r.warnings[0]
    );
}

#[test]
fn request_logs_intern_resent_history() {
    let r = import_path(&root().join("tests/fixtures/openai/request-response-log.jsonl"))
        .expect("imports");
    // Two conversations: the password reset starts a new one.
    assert_eq!(r.traces.len(), 2);
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 3);
    // The system prompt is one chunk referenced by all three calls.
    assert!(t.calls.iter().all(|c| c.input[0] == t.calls[0].input[0]));
    // Each call's output is the next call's input: the same chunk, not a copy.
    assert!(t.calls[1].input.contains(&t.calls[0].output[0]));
    assert!(t.calls[2].input.contains(&t.calls[1].output[0]));
    assert_eq!(t.tool_pairs.len(), 1);
    assert!(t.tool_pairs[0].call.is_some() && t.tool_pairs[0].result.is_some());
}

#[test]
fn a_logged_request_without_messages_is_a_warning_not_a_silent_skip() {
    let log = concat!(
        r#"{"request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}, "#,
        r#""response": {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}}"#,
        "\n",
        r#"{"request": {"model": "gpt-4o", "prompt": "legacy completion"}, "#,
        r#""response": {"choices": [{"text": "done"}]}}"#,
        "\n"
    );
    let r = memlens_import::import("log.jsonl", log.as_bytes(), &Default::default())
        .expect("the first record imports");
    assert_eq!(r.traces.iter().map(|t| t.calls.len()).sum::<usize>(), 1);
    assert_eq!(r.warning_count, 1, "{:?}", r.warnings);
    assert!(r.warnings[0].message.starts_with("request skipped"));
    assert_eq!(r.warnings[0].location.line, Some(2));
}

#[test]
fn anthropic_usage_adds_cache_to_input_and_prices_it() {
    let r = import_path(&root().join("tests/fixtures/anthropic/log.jsonl")).expect("imports");
    let t = &r.traces[0];
    let u = t.calls[1].usage.expect("usage reported");
    assert_eq!(u.input_tokens, Some(65 + 420));
    assert_eq!(u.cache_read_tokens, Some(420));
    let s = summarize(t, &PriceTable::builtin(), 3);
    assert_eq!(
        s.figures.priced_as.as_deref(),
        Some("claude-3-7-sonnet-20250219")
    );
    // Call 2: 65 uncached at $3/M + 420 cache reads at $0.30/M + 35 output at $15/M.
    let expected = (65.0 * 3.0 + 420.0 * 0.3 + 35.0 * 15.0) / 1e6;
    let got = s.calls_detail[1].cost_usd.expect("priced");
    assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
}

#[test]
fn unknown_models_are_unpriced_not_free() {
    let r = import_path(&root().join("tests/fixtures/openai/reasoning-and-unknown-role.json"))
        .expect("imports");
    let s = summarize(&r.traces[0], &PriceTable::builtin(), 3);
    assert!(s.figures.tokens_estimated);
    assert_eq!(s.figures.cost_usd, None);
    assert!(s.top_chunks.iter().all(|c| c.cost_usd.is_none()));
}

#[test]
fn forced_format_overrides_sniffing() {
    let bytes =
        std::fs::read(root().join("tests/fixtures/openai/messages-object.json")).expect("fixture");
    let opts = memlens_import::ImportOptions {
        format: Some("anthropic".into()),
        model: None,
    };
    let r = memlens_import::import("x.json", &bytes, &opts)
        .expect("anthropic reads plain messages too");
    assert_eq!(r.format, "anthropic");
    let opts = memlens_import::ImportOptions {
        format: Some("nope".into()),
        model: None,
    };
    let e = memlens_import::import("x.json", &bytes, &opts).expect_err("unknown format");
    assert!(e
        .to_string()
        .contains("known formats: memlens, openinference, otel"));
}
