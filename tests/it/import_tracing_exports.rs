//! OpenInference spans, Langfuse and LangSmith exports: interning of resent history, usage with
//! cache fields, grouping by session, tool pairs and latency, the raw value fallback, LangChain
//! serialized messages, malformed variants. OpenInference and Langfuse tests are in the
//! submodules; the helpers here are shared.

mod langfuse;
mod openinference;

use crate::{import_path, root};
use memlens_core::{Category, ChunkId, Trace, Usage};
use memlens_import::{import, Import, ImportError, ImportOptions};

fn load(format: &str, name: &str) -> Import {
    let path = root().join("tests/fixtures").join(format).join(name);
    let r = import_path(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(r.format, format, "{name}");
    r
}

fn load_clean(format: &str, name: &str) -> Import {
    let r = load(format, name);
    assert_eq!(r.warning_count, 0, "{name}: {:?}", r.warnings);
    r
}

fn inline(name: &str, doc: &str) -> Import {
    import(name, doc.as_bytes(), &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// The categories of what the file records: not the unrecorded-context item, MemLens'
/// estimate of what the reported usage counts beyond it (tested in memlens-core and
/// tests/it/accounting.rs).
fn categories(t: &Trace, ids: &[ChunkId]) -> Vec<Category> {
    ids.iter()
        .map(|&i| t.chunk(i).category)
        .filter(|&c| c != Category::Unrecorded)
        .collect()
}

/// The chunks the file records (the unrecorded item left out, as in [`categories`]).
fn recorded(t: &Trace) -> usize {
    t.chunks
        .iter()
        .filter(|c| c.category != Category::Unrecorded)
        .count()
}

/// The texts the file records (as [`categories`]).
fn contents(t: &Trace, ids: &[ChunkId]) -> Vec<String> {
    ids.iter()
        .map(|&i| t.chunk(i))
        .filter(|c| c.category != Category::Unrecorded)
        .map(|c| c.content.clone())
        .collect()
}

fn usage(t: &Trace, call: usize) -> Usage {
    t.calls[call].usage.unwrap_or_default()
}

/// Every call's input starts with the previous call's input and output, as the same chunks.
fn assert_history_interned(t: &Trace) {
    for pair in t.calls.windows(2) {
        let mut carried = pair[0].input.clone();
        carried.extend(&pair[0].output);
        assert_eq!(
            pair[1].input[..carried.len()],
            carried[..],
            "trace {}: call {} does not resend call {} as the same chunks",
            t.id,
            pair[1].index,
            pair[0].index
        );
    }
}

fn assert_paired(t: &Trace) {
    assert!(!t.tool_pairs.is_empty(), "trace {} has no tool pair", t.id);
    for pair in &t.tool_pairs {
        assert!(pair.call.is_some() && pair.result.is_some(), "{pair:?}");
    }
}

fn tool_result_latencies(t: &Trace) -> Vec<Option<f64>> {
    t.chunks
        .iter()
        .filter(|c| c.category == Category::ToolResult)
        .map(|c| c.meta.latency_ms)
        .collect()
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-6)
}

fn warnings(r: &Import) -> String {
    r.warnings
        .iter()
        .map(|w| w.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

// --------------------------------------------------------------------------------- LangSmith

#[test]
fn langsmith_runs_follow_dotted_order_and_the_thread() {
    let r = load_clean("langsmith", "runs.json");
    assert_eq!(r.traces.len(), 1);
    let t = &r.traces[0];
    assert_eq!(t.id, "thread-42");
    assert_eq!(t.calls.len(), 2);
    assert_history_interned(t);
    // Tools bound to the model (invocation params), system, user, tool call, result, answer.
    assert_eq!(recorded(t), 6);
    assert_eq!(
        categories(t, &t.calls[0].input),
        [Category::Other, Category::System, Category::User]
    );
    // The arguments as the model wrote them (the raw OpenAI tool call).
    assert_eq!(
        contents(t, &t.calls[0].output),
        [r#"{"query":"2022 Fields Medal winners"}"#]
    );
    assert_paired(t);
    // The tool run's ToolMessage names its call: 02.000 → 03.050.
    assert!(close(tool_result_latencies(t)[0], 1050.0));
    let second = usage(t, 1);
    assert_eq!(
        (second.input_tokens, second.cache_read_tokens),
        (Some(1370), Some(1280))
    );
    assert_eq!(t.calls[0].model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    assert!(close(t.calls[1].latency_ms, 1300.0));
}

#[test]
fn langsmith_openai_shaped_runs_and_prompt_runs() {
    let r = load_clean("langsmith", "runs-object.json");
    assert_eq!(r.traces.len(), 2);
    let haiku = &r.traces[0];
    assert_eq!(haiku.id, "3b000000-0000-4000-8000-00000000000a");
    assert_eq!(
        categories(haiku, &haiku.calls[0].input),
        [Category::System, Category::User]
    );
    let u = usage(haiku, 0);
    assert_eq!(
        (u.input_tokens, u.cache_read_tokens),
        (Some(2071), Some(2048))
    );
    assert_eq!(
        haiku.calls[0].model.as_deref(),
        Some("gpt-4.1-mini-2025-04-14")
    );
    let prompt = &r.traces[1];
    assert_eq!(
        contents(prompt, &prompt.calls[0].input),
        ["Translate to German: good morning"]
    );
    assert_eq!(contents(prompt, &prompt.calls[0].output), ["Guten Morgen"]);
    assert_eq!(usage(prompt, 0).input_tokens, Some(7));
}

#[test]
fn langsmith_child_runs_with_message_dicts_and_anthropic_content() {
    let r = load_clean("langsmith", "child-runs.jsonl");
    let t = &r.traces[0];
    assert_eq!(t.id, "conv-9");
    assert_eq!(t.calls.len(), 2);
    assert_history_interned(t);
    // The tool_use block and the standard tool call are one tool call.
    assert_eq!(
        categories(t, &t.calls[0].output),
        [Category::Reasoning, Category::Assistant, Category::ToolCall]
    );
    assert_eq!(recorded(t), 7);
    assert_paired(t);
    // No tool call id on the tool run (a plain string output): matched by name.
    assert!(close(tool_result_latencies(t)[0], 40.0));
    // usage_metadata already counts cache writes in input_tokens.
    let first = usage(t, 0);
    assert_eq!(
        (first.input_tokens, first.cache_write_tokens),
        (Some(3170), Some(3072))
    );
    // The run's own counts when the message has no usage_metadata.
    let second = usage(t, 1);
    assert_eq!(
        (second.input_tokens, second.cache_read_tokens),
        (Some(3261), Some(3072))
    );
}

#[test]
fn langchain_messages_in_every_serialized_shape() {
    let doc = r#"[{"id": "r", "run_type": "llm", "trace_id": "t", "inputs": {"messages": [[
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "SystemMessage"],
         "kwargs": {"content": "Be terse."}},
        {"type": "human", "data": {"content": "Weather?", "additional_kwargs": {}}},
        ["ai", "Which city?"],
        {"type": "human", "content": [{"type": "text", "text": "Oslo"}]},
        {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "AIMessageChunk"],
         "kwargs": {"content": "", "additional_kwargs": {"function_call": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}}},
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "FunctionMessage"],
         "kwargs": {"content": "-3C, snow", "name": "weather"}},
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ChatMessage"],
         "kwargs": {"content": "Looks cold.", "role": "critic"}}]]},
      "outputs": {"generations": [[{"text": "Snow, -3C.", "message": {"type": "AIMessageChunk", "content": "Snow, -3C."}}]]}}]"#;
    let r = inline("shapes.json", doc);
    assert_eq!(r.format, "langsmith");
    let t = &r.traces[0];
    assert_eq!(
        categories(t, &t.calls[0].input),
        [
            Category::System,
            Category::User,
            Category::Assistant,
            Category::User,
            Category::ToolCall,
            Category::ToolResult,
            Category::Other
        ]
    );
    // A legacy function call pairs with its function message by name.
    assert_paired(t);
    assert_eq!(contents(t, &t.calls[0].output), ["Snow, -3C."]);
    // The ChatMessage's role is kept, and unknown.
    assert!(warnings(&r).contains("unknown role \"critic\""));
}

#[test]
fn langsmith_malformed_variants_warn_and_the_rest_loads() {
    let r = load("langsmith", "malformed.jsonl");
    let all = warnings(&r);
    for expected in [
        "line 5 (record 4): skipped: invalid JSON",
        "found an object with keys kind",
        "unknown run_type \"agent_step\"",
        "a run without a string \"run_type\"",
        "a batch of 2 message lists: only the first is read",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in\n{all}");
    }
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    assert_history_interned(t);
    assert_eq!(usage(t, 0).input_tokens, Some(5));
}

#[test]
fn langchain_invalid_tool_calls_are_kept() {
    // A tool call whose arguments did not parse is in `invalid_tool_calls`; LangChain still sends
    // it back as a tool call. It used to be dropped.
    let doc = r#"[{"id": "r1", "trace_id": "t1", "run_type": "llm", "dotted_order": "1",
      "inputs": {"messages": [[{"lc": 1, "type": "constructor",
        "id": ["langchain", "schema", "messages", "HumanMessage"], "kwargs": {"content": "Look up A1 and B2."}}]]},
      "outputs": {"generations": [[{"text": "", "message": {"lc": 1, "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"], "kwargs": {"content": "",
        "tool_calls": [{"name": "lookup", "args": {"id": "A1"}, "id": "call_1", "type": "tool_call"}],
        "invalid_tool_calls": [{"name": "lookup", "args": "{\"id\": \"B2\"", "id": "call_2",
          "error": "Function lookup arguments are not valid JSON", "type": "invalid_tool_call"}]}}}]]}}]"#;
    let r = inline("runs.json", doc);
    let t = &r.traces[0];
    let calls = contents(t, &t.calls[0].output);
    assert_eq!(calls, [r#"{"id":"A1"}"#, r#"{"id": "B2""#]);
}

#[test]
fn langsmith_batch_lists_of_the_wrong_type_are_warnings() {
    let doc = r#"{"post": [{"id": "r1", "trace_id": "t1", "run_type": "llm", "dotted_order": "1",
      "inputs": {"messages": [{"role": "user", "content": "Hi"}]}}], "patch": {"id": "r1"}}"#;
    let r = inline("batch.json", doc);
    assert!(
        warnings(&r)
            .contains("run batch \"patch\" skipped: expected a list of runs, found an object"),
        "{}",
        warnings(&r)
    );
    assert_eq!(r.traces[0].calls.len(), 1);
}

#[test]
fn otel_malformed_containers_and_attribute_indices_are_warnings() {
    let doc = r#"{"resourceSpans": [7, {"scopeSpans": ["x", {"spans": [{"traceId": "t", "spanId": "s",
      "name": "chat", "attributes": [
        {"key": "gen_ai.prompt.0.role", "value": {"stringValue": "user"}},
        {"key": "gen_ai.prompt.0.content", "value": {"stringValue": "Hi"}},
        {"key": "gen_ai.prompt.x.content", "value": {"stringValue": "lost"}},
        {"key": "gen_ai.completion.0.content", "value": {"stringValue": "Hello"}}]}]}]}]}"#;
    let r = inline("spans.json", doc);
    assert_eq!(r.format, "otel");
    let all = warnings(&r);
    for expected in [
        "resource spans skipped: expected an object, found a number",
        "scope spans skipped: expected an object, found a string",
        "attribute gen_ai.prompt.x.content skipped: its message index is not a number",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in\n{all}");
    }
    assert_eq!(r.traces[0].calls.len(), 1);
}

#[test]
fn odd_values_never_panic() {
    for doc in [
        r#"{"runs": [1, {"run_type": 3, "inputs": []}, {"run_type": "llm", "inputs": {"messages": [[[[]]]]}, "outputs": {"generations": 5}, "start_time": "2025-99-99T99:99:99Z", "end_time": "x"}]}"#,
        r#"[{"run_type": "llm", "inputs": {"messages": [{"lc": 1, "type": "constructor", "id": [], "kwargs": 7}]}, "outputs": {"choices": []}, "child_runs": [null]}]"#,
        r#"{"id": "t", "observations": [{"type": "GENERATION", "input": {"messages": "x"}, "output": [[]], "usageDetails": {"input": -1}, "startTime": "2025-01-01T00:00:00+0x:00"}]}"#,
        r#"{"data": [{"type": "TOOL", "traceId": 5, "startTime": 3}], "meta": {}}"#,
        r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
            {"key": "llm.input_messages", "value": {"stringValue": "[1, {\"message\": {\"contents\": [{\"message_content\": {\"type\": \"image\"}}]}}]"}},
            {"key": "llm.output_messages.x.message.role", "value": {"intValue": "1"}},
            {"key": "llm.tools.0.tool.json_schema", "value": {"stringValue": "{broken"}},
            {"key": "llm.token_count.total", "value": {"intValue": "18446744073709551615"}},
            {"key": "llm.token_count.prompt", "value": {"intValue": "18446744073709551615"}},
            {"key": "llm.token_count.prompt_details.cache_read", "value": {"intValue": "5"}}]}]}]}]}"#,
    ] {
        let _ = import("odd.json", doc.as_bytes(), &ImportOptions::default());
    }
}

// ------------------------------------------------------------------------------ Real files

#[test]
fn real_exports_match_their_reported_usage() {
    let dir = root().join("tests/fixtures/real");
    // A LangSmith JS SDK run batch ({post, patch}, epoch-millisecond times).
    let r = import_path(&dir.join("langsmith/langsmith_js_wrap_openai_default.json"))
        .expect("langsmith real file");
    assert_eq!(r.format, "langsmith");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 1);
    assert_eq!(contents(t, &t.calls[0].input), ["howdy"]);
    assert_eq!(t.calls[0].model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    assert!(close(t.calls[0].latency_ms, 1115.0));
    // The provider's count is MemLens' (chunks with their framing, plus 3 tokens priming the reply).
    let counted: u32 = t.calls[0].input.iter().map(|&i| t.chunk(i).tokens).sum();
    assert_eq!(usage(t, 0).input_tokens, Some(u64::from(counted) + 3));

    // A Langfuse UI download of a Pydantic AI trace: input and output as JSON strings.
    let r = import_path(&dir.join("langfuse/pydantic-ai-tools-2025-06-06.json"))
        .expect("langfuse real file");
    assert_eq!(r.format, "langfuse");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.id, "session_abc");
    assert_eq!(
        categories(t, &t.calls[0].input),
        [Category::System, Category::User]
    );
    assert_eq!(categories(t, &t.calls[0].output), [Category::Assistant]);
    // The provider's count is MemLens' (chunks with their framing, plus 3 tokens priming the reply).
    let counted: u32 = t.calls[0].input.iter().map(|&i| t.chunk(i).tokens).sum();
    assert_eq!(usage(t, 0).input_tokens, Some(u64::from(counted) + 3));
}

#[test]
fn langsmith_run_batches_merge_updates_into_their_runs() {
    let doc = r#"{"post": [
        {"id": "a", "run_type": "llm", "trace_id": "t", "start_time": 1000,
         "inputs": {"messages": [{"role": "user", "content": "Hi"}]}},
        {"id": "b", "run_type": "llm", "trace_id": "t", "start_time": 3000,
         "inputs": {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]}}],
      "patch": [
        {"id": "b", "end_time": 3500, "outputs": {"choices": [{"message": {"role": "assistant", "content": "Goodbye"}}]}},
        {"id": "a", "end_time": 2000, "outputs": {"choices": [{"message": {"role": "assistant", "content": "Hello"}}]}},
        {"id": "zzz", "end_time": 9},
        "not an update"]}"#;
    let r = inline("batch.json", doc);
    assert_eq!(r.format, "langsmith");
    let all = warnings(&r);
    assert!(all.contains("no run of the batch has its id"), "{all}");
    assert!(
        all.contains("run update skipped: expected an object"),
        "{all}"
    );
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    assert_history_interned(t);
    assert!(close(t.calls[0].latency_ms, 1000.0));
    assert!(close(t.calls[1].latency_ms, 500.0));
}
