//! The OpenTelemetry importer on its fixtures and on inline spans.

use crate::{import, ImportError, ImportOptions};
use memlens_core::{Category, Trace};

fn run(name: &str, bytes: &[u8]) -> crate::Import {
    match import(name, bytes, &ImportOptions::default()) {
        Ok(result) => result,
        Err(e) => panic!("{name}: {e}"),
    }
}

/// The categories of what the log holds (the unrecorded item, which the fixtures' usage
/// figures call for, is tested in memlens-core).
fn categories(trace: &Trace, ids: &[memlens_core::ChunkId]) -> Vec<Category> {
    ids.iter()
        .map(|id| trace.chunk(*id).category)
        .filter(|&c| c != Category::Unrecorded)
        .collect()
}

fn assert_paired(trace: &Trace) {
    assert!(
        !trace.tool_pairs.is_empty(),
        "trace {} has no tool pair",
        trace.id
    );
    for pair in &trace.tool_pairs {
        assert!(
            pair.call.is_some() && pair.result.is_some(),
            "unpaired {pair:?}"
        );
    }
    assert_eq!(trace.orphan_results().count(), 0);
}

#[test]
fn current_conventions() {
    let result = run(
        "semconv-current.json",
        include_bytes!("../../../../tests/fixtures/otel/semconv-current.json"),
    );
    assert_eq!(result.format, "otel");
    assert!(result.warnings.is_empty(), "{:?}", result.warnings);
    // The HTTP and invoke_agent spans are not calls.
    assert_eq!(result.traces.len(), 1);
    let trace = &result.traces[0];
    assert_eq!(trace.id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(trace.format, "otel");
    assert_eq!(trace.model.as_deref(), Some("gpt-4o-2024-08-06"));
    assert_eq!(
        trace.attributes.get("service.name").map(String::as_str),
        Some("travel-assistant")
    );
    assert_eq!(trace.calls.len(), 2);
    let (first, second) = (&trace.calls[0], &trace.calls[1]);
    assert_eq!(
        categories(trace, &first.input),
        [Category::System, Category::User]
    );
    assert_eq!(categories(trace, &first.output), [Category::ToolCall]);
    assert_eq!(
        categories(trace, &second.input),
        [
            Category::System,
            Category::User,
            Category::ToolCall,
            Category::ToolResult
        ]
    );
    assert_eq!(categories(trace, &second.output), [Category::Assistant]);
    // The resent history is the same chunks, not copies: 5 distinct messages.
    // (After the unrecorded item both open with: the fixture's usage exceeds its messages.)
    assert_eq!(
        second.input[..4],
        [
            first.input[0],
            first.input[1],
            first.input[2],
            first.output[0]
        ]
    );
    assert_eq!(trace.chunks.len(), 5 + 1);

    let call = trace.chunk(first.output[0]);
    assert_eq!(call.content, r#"{"city":"Paris","units":"metric"}"#);
    assert_eq!(call.meta.tool_name.as_deref(), Some("get_weather"));
    let tool_result = trace.chunk(second.input[4]);
    assert!(tool_result.content.contains("light rain"));
    // From the execute_tool span: 1747994401.070 - 1747994400.840 s.
    assert!(tool_result
        .meta
        .latency_ms
        .is_some_and(|ms| (ms - 230.0).abs() < 1e-6));
    assert_paired(trace);

    let usage = second.usage.unwrap_or_default();
    assert_eq!(usage.input_tokens, Some(1342));
    assert_eq!(usage.output_tokens, Some(27));
    assert_eq!(usage.cache_read_tokens, Some(1152));
    assert_eq!(first.usage.and_then(|u| u.cache_read_tokens), Some(0));
    assert_eq!(first.started_at.as_deref(), Some("1747994400020000000"));
    assert_eq!(first.ended_at.as_deref(), Some("1747994400832000000"));
    assert!(first.latency_ms.is_some_and(|ms| (ms - 812.0).abs() < 1e-6));
    assert!(trace
        .chunks
        .iter()
        .all(|c| c.tokens > 0 && c.content_tokens > 0));
}

#[test]
fn legacy_attributes_two_interleaved_traces() {
    let result = run(
        "semconv-legacy.json",
        include_bytes!("../../../../tests/fixtures/otel/semconv-legacy.json"),
    );
    assert!(result.warnings.is_empty(), "{:?}", result.warnings);
    assert_eq!(result.traces.len(), 2);
    // Order of first appearance in the file.
    let (a, b) = (&result.traces[0], &result.traces[1]);
    assert_eq!(a.id, "7d2c9e41a0b84f3c9e5f1a2b3c4d5e6f");
    assert_eq!(b.id, "e1f2a3b4c5d60718293a4b5c6d7e8f90");
    assert_eq!(
        a.attributes.get("service.name").map(String::as_str),
        Some("repo-agent")
    );
    for trace in [a, b] {
        assert_eq!(trace.calls.len(), 2, "trace {}", trace.id);
        assert_paired(trace);
        // Sorted by start time, whatever the file order.
        assert!(trace.calls[0].started_at < trace.calls[1].started_at);
        assert!(trace.calls[0].input.len() < trace.calls[1].input.len());
        assert!(trace.chunks.iter().all(|c| c.tokens > 0));
    }
    assert_eq!(
        categories(a, &a.calls[1].input),
        [
            Category::System,
            Category::User,
            Category::Assistant,
            Category::ToolCall,
            Category::ToolResult
        ]
    );
    // The assistant text and tool call resent in call 2 are the chunks call 1 produced.
    // (After the unrecorded item: the fixture's usage exceeds its messages.)
    assert_eq!(a.calls[1].input[3..5], a.calls[0].output[..]);
    assert_eq!(categories(b, &b.calls[0].output), [Category::ToolCall]);
    assert_eq!(categories(b, &b.calls[1].output), [Category::Assistant]);
    let result_chunk = b.chunk(b.calls[1].input[3]);
    assert_eq!(
        result_chunk.meta.tool_call_id.as_deref(),
        Some("call_8fJ2kLmN4pQ6rS0t")
    );

    // Anthropic: reported input excludes the cache, MemLens' includes it.
    let a1 = a.calls[0].usage.unwrap_or_default();
    assert_eq!(
        (a1.input_tokens, a1.cache_write_tokens, a1.output_tokens),
        (Some(24 + 2048), Some(2048), Some(96))
    );
    let a2 = a.calls[1].usage.unwrap_or_default();
    assert_eq!(
        (a2.input_tokens, a2.cache_read_tokens),
        (Some(310 + 2048), Some(2048))
    );
    // OpenAI: as reported.
    let b2 = b.calls[1].usage.unwrap_or_default();
    assert_eq!((b2.input_tokens, b2.output_tokens), (Some(181), Some(21)));
    assert_eq!(b.model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
}

#[test]
fn json_lines_batches_of_one_trace() {
    let result = run(
        "otlp-lines.jsonl",
        include_bytes!("../../../../tests/fixtures/otel/otlp-lines.jsonl"),
    );
    assert!(result.warnings.is_empty(), "{:?}", result.warnings);
    assert_eq!(result.traces.len(), 1);
    let trace = &result.traces[0];
    assert_eq!(trace.calls.len(), 2);
    let lines: Vec<u32> = trace
        .calls
        .iter()
        .filter_map(|c| c.source.map(|s| s.line))
        .collect();
    assert_eq!(lines, [1, 2]);
    assert_eq!(
        categories(trace, &trace.calls[0].output),
        [Category::Reasoning, Category::ToolCall]
    );
    assert_paired(trace);
    let tool_result = trace
        .chunks
        .iter()
        .find(|c| c.category == Category::ToolResult)
        .and_then(|c| c.meta.latency_ms);
    assert!(tool_result.is_some_and(|ms| (ms - 120.0).abs() < 1e-6));
    let reasoning: Vec<_> = trace
        .calls
        .iter()
        .map(|c| c.usage.and_then(|u| u.reasoning_tokens))
        .collect();
    assert_eq!(reasoning, [Some(128), Some(64)]);
    assert_eq!(trace.calls[0].usage.and_then(|u| u.input_tokens), Some(142));
}

#[test]
fn malformed_messages_warn_and_keep_the_span() {
    let result = run(
        "malformed-messages.json",
        include_bytes!("../../../../tests/fixtures/otel/malformed-messages.json"),
    );
    assert_eq!(result.warnings.len(), 1, "{:?}", result.warnings);
    let message = &result.warnings[0].message;
    assert!(message.contains("gen_ai.input.messages"), "{message}");
    assert!(
        message.contains("d0d0d0d0d0d0d002") && message.contains("chat gpt-4.1"),
        "{message}"
    );
    let trace = &result.traces[0];
    assert_eq!(trace.calls.len(), 2);
    // The broken span keeps its output and usage.
    let broken = &trace.calls[1];
    assert!(categories(trace, &broken.input).is_empty());
    assert_eq!(categories(trace, &broken.output), [Category::Assistant]);
    assert_eq!(broken.usage.and_then(|u| u.input_tokens), Some(91));
}

#[test]
fn no_llm_spans_is_an_error() {
    let bytes = include_bytes!("../../../../tests/fixtures/otel/no-llm-spans.json");
    match import("no-llm-spans.json", bytes, &ImportOptions::default()) {
        Err(ImportError::Invalid { message, .. }) => {
            assert!(message.contains("no traces"), "{message}")
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn contentless_call_spans_explain_how_to_capture() {
    let doc = br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t", "spanId": "s",
        "name": "chat gpt-4o", "attributes": [
          {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
          {"key": "gen_ai.usage.input_tokens", "value": {"intValue": 12}}]}]}]}]}"#;
    match import("x.json", doc, &ImportOptions::default()) {
        Err(ImportError::Invalid { message, .. }) => {
            assert!(message.contains("CAPTURE_MESSAGE_CONTENT"), "{message}")
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn prompt_indices_sort_numerically_and_events_are_read() {
    let mut attrs = Vec::new();
    for i in 0..12 {
        attrs.push(format!(
            r#"{{"key": "gen_ai.prompt.{i}.role", "value": {{"stringValue": "user"}}}},
               {{"key": "gen_ai.prompt.{i}.content", "value": {{"stringValue": "message {i}"}}}}"#
        ));
    }
    let doc = format!(
        r#"{{"resourceSpans": [{{"instrumentationLibrarySpans": [{{"spans": [
          {{"traceId": "t1", "spanId": "s1", "name": "chat", "startTimeUnixNano": 5, "endTimeUnixNano": 9,
            "attributes": [{}, {{"key": "gen_ai.completion.0.content", "value": {{"stringValue": "done"}}}}]}},
          {{"traceId": "t2", "spanId": "s2", "name": "chat", "events": [
            {{"name": "gen_ai.system.message", "attributes": [{{"key": "content", "value": {{"stringValue": "Be brief."}}}}]}},
            {{"name": "gen_ai.user.message", "attributes": [{{"key": "content", "value": {{"stringValue": "Hi"}}}}]}},
            {{"name": "gen_ai.choice", "attributes": [{{"key": "message", "value": {{"stringValue": "{{\"role\":\"assistant\",\"content\":\"Hello!\"}}"}}}}]}}]}}
        ]}}]}}]}}"#,
        attrs.join(",")
    );
    let result = run("inline.json", doc.as_bytes());
    assert_eq!(result.traces.len(), 2);
    let t1 = &result.traces[0];
    let contents: Vec<&str> = t1.calls[0]
        .input
        .iter()
        .map(|id| t1.chunk(*id).content.as_str())
        .collect();
    let expected: Vec<String> = (0..12).map(|i| format!("message {i}")).collect();
    assert_eq!(contents, expected);
    assert_eq!(
        t1.chunk(t1.calls[0].output[0]).category,
        Category::Assistant
    );
    let t2 = &result.traces[1];
    assert_eq!(
        categories(t2, &t2.calls[0].input),
        [Category::System, Category::User]
    );
    assert_eq!(t2.chunk(t2.calls[0].output[0]).content, "Hello!");
}

#[test]
fn odd_values_never_panic() {
    for doc in [
        r#"{"resourceSpans": []}"#,
        r#"{"resourceSpans": [1, {"scopeSpans": "x"}, {"scopeSpans": [{"spans": [null, 3]}]}]}"#,
        r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": "gen_ai.input.messages",
            "value": {"stringValue": "[1, {\"role\": 2}, {\"role\": \"user\", \"parts\": [7, {\"type\": \"blob\", \"mime_type\": \"image/png\"}]}]"}},
            {"key": "gen_ai.system_instructions", "value": {"stringValue": "plain text instructions"}},
            {"key": "gen_ai.output.messages", "value": {"intValue": "x"}},
            {"key": "gen_ai.completion.x.content", "value": {}}],
            "startTimeUnixNano": "9", "endTimeUnixNano": "3", "events": [{"name": "gen_ai.choice"}]}]}]}]}"#,
    ] {
        let _ = import("odd.json", doc.as_bytes(), &ImportOptions::default());
    }
    let doc = r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "s", "name": "n", "attributes": [
        {"key": "gen_ai.input.messages", "value": {"stringValue": "[{\"role\": \"user\", \"parts\": [{\"type\": \"uri\", \"uri\": \"https://example.com/a.png\", \"modality\": \"image\"}]}]"}}]}]}]}]}"#;
    let result = run("uri.json", doc.as_bytes());
    let trace = &result.traces[0];
    assert_eq!(trace.chunks[0].category, Category::Other);
    assert_eq!(trace.chunks[0].content, "[uri: https://example.com/a.png]");
}
