//! OpenInference spans, Langfuse and LangSmith exports: interning of resent history, usage with
//! cache fields, grouping by session, tool pairs and latency, the raw value fallback, LangChain
//! serialized messages, malformed variants.

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

fn categories(t: &Trace, ids: &[ChunkId]) -> Vec<Category> {
    ids.iter().map(|&i| t.chunk(i).category).collect()
}

fn contents(t: &Trace, ids: &[ChunkId]) -> Vec<String> {
    ids.iter().map(|&i| t.chunk(i).content.clone()).collect()
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

// ----------------------------------------------------------------------------- OpenInference

#[test]
fn openinference_session_interns_history_across_traces() {
    let r = load_clean("openinference", "agent-session.json");
    // Two traces of one session are one conversation; the embedding and agent spans are not calls.
    assert_eq!(r.traces.len(), 1);
    let t = &r.traces[0];
    assert_eq!(t.id, "sess-7f3a");
    assert_eq!(t.format, "openinference");
    assert_eq!(t.attributes["service.name"], "travel-assistant");
    assert_eq!(t.attributes["user.id"], "user-42");
    assert_eq!(t.calls.len(), 3);
    assert_history_interned(t);
    // One chunk per message part across the three calls: tools, system, user, tool call, tool
    // result, answer, user text + image, reasoning + answer.
    assert_eq!(t.chunks.len(), 10);
    assert_eq!(
        categories(t, &t.calls[0].input),
        [Category::Other, Category::System, Category::User]
    );
    assert_eq!(t.chunks[0].meta.kind.as_deref(), Some("tool_definitions"));
    assert_eq!(categories(t, &t.calls[0].output), [Category::ToolCall]);
    assert_eq!(
        categories(t, &t.calls[1].input)[3..],
        [Category::ToolCall, Category::ToolResult]
    );
    // Two `contents` text parts read as the one text the next call resends as `content`.
    assert_eq!(
        contents(t, &t.calls[1].output),
        ["Yes: light rain in Paris, 14°C. Take an umbrella."]
    );
    assert_eq!(
        categories(t, &t.calls[2].input)[5..],
        [Category::Assistant, Category::User, Category::Other]
    );
    assert_eq!(
        t.chunk(t.calls[2].input[7]).content,
        "[image: https://example.com/maps/paris-tomorrow.png]"
    );
    assert_eq!(
        categories(t, &t.calls[2].output),
        [Category::Reasoning, Category::Assistant]
    );
    assert_paired(t);
    // The TOOL span (no id: matched by tool name) measured 840 ms → 1070 ms.
    assert_eq!(tool_result_latencies(t).len(), 1);
    assert!(close(tool_result_latencies(t)[0], 230.0));

    // OpenAI counts the cache in the prompt; this Anthropic instrumentation does not, which the
    // total shows: 48 + 1280 + 100 + 41 = 1469.
    assert_eq!(usage(t, 0).input_tokens, Some(1207));
    assert_eq!(
        (usage(t, 1).input_tokens, usage(t, 1).cache_read_tokens),
        (Some(1262), Some(1152))
    );
    let third = usage(t, 2);
    assert_eq!(third.input_tokens, Some(48 + 1280 + 100));
    assert_eq!(
        (third.cache_read_tokens, third.cache_write_tokens),
        (Some(1280), Some(100))
    );
    assert_eq!(third.reasoning_tokens, Some(12));
    assert_eq!(
        t.calls[2].model.as_deref(),
        Some("claude-sonnet-4-20250514")
    );
    assert!(close(t.calls[0].latency_ms, 810.0));
    assert!(t.chunks.iter().all(|c| c.tokens > 0));
}

#[test]
fn openinference_falls_back_to_input_and_output_values() {
    let r = load_clean("openinference", "raw-values.jsonl");
    assert_eq!(r.traces.len(), 2);
    let quiz = &r.traces[0];
    assert_eq!(quiz.calls.len(), 2);
    // The raw request and response (OpenAI JSON) are the messages; the second request resends the
    // first answer, which is the same chunk.
    assert_eq!(
        categories(quiz, &quiz.calls[0].input),
        [Category::System, Category::User]
    );
    assert_history_interned(quiz);
    assert_eq!(quiz.chunks.len(), 5);
    let lines: Vec<u32> = quiz
        .calls
        .iter()
        .filter_map(|c| c.source.map(|s| s.line))
        .collect();
    assert_eq!(lines, [1, 2]);
    // text/plain values: one user message in, one assistant message out.
    let plain = &r.traces[1];
    assert_eq!(
        contents(plain, &plain.calls[0].input),
        ["Summarize: Canberra and Wellington are capitals."]
    );
    assert_eq!(
        categories(plain, &plain.calls[0].output),
        [Category::Assistant]
    );
}

#[test]
fn openinference_reads_langchain_values_and_drops_the_copy_of_a_call() {
    // LangChain's instrumentation and the OpenAI SDK's both record the one call, as siblings.
    let lc_input = r#"{\"messages\": [[{\"lc\": 1, \"type\": \"constructor\", \"id\": [\"langchain_core\", \"messages\", \"HumanMessage\"], \"kwargs\": {\"content\": \"Classify: latest news\"}}]]}"#;
    let lc_output = r#"{\"generations\": [[{\"text\": \"news\", \"message\": {\"lc\": 1, \"type\": \"constructor\", \"id\": [\"langchain_core\", \"messages\", \"AIMessage\"], \"kwargs\": {\"content\": \"news\", \"tool_calls\": []}}}]]}"#;
    let doc = format!(
        r#"{{"resourceSpans": [{{"scopeSpans": [{{"spans": [
          {{"traceId": "t1", "spanId": "lc", "name": "ChatOpenAI",
            "startTimeUnixNano": "1000", "endTimeUnixNano": "9000", "attributes": [
            {{"key": "openinference.span.kind", "value": {{"stringValue": "LLM"}}}},
            {{"key": "input.value", "value": {{"stringValue": "{lc_input}"}}}},
            {{"key": "input.mime_type", "value": {{"stringValue": "application/json"}}}},
            {{"key": "output.value", "value": {{"stringValue": "{lc_output}"}}}},
            {{"key": "output.mime_type", "value": {{"stringValue": "application/json"}}}}]}},
          {{"traceId": "t1", "spanId": "oa", "name": "OpenAI Chat Completions",
            "startTimeUnixNano": "1200", "endTimeUnixNano": "8800", "attributes": [
            {{"key": "openinference.span.kind", "value": {{"stringValue": "LLM"}}}},
            {{"key": "llm.model_name", "value": {{"stringValue": "gpt-4o-mini-2024-07-18"}}}},
            {{"key": "llm.input_messages.0.message.role", "value": {{"stringValue": "user"}}}},
            {{"key": "llm.input_messages.0.message.content", "value": {{"stringValue": "Classify: latest news"}}}},
            {{"key": "llm.output_messages.0.message.role", "value": {{"stringValue": "assistant"}}}},
            {{"key": "llm.output_messages.0.message.content", "value": {{"stringValue": "news"}}}},
            {{"key": "llm.token_count.prompt", "value": {{"intValue": 24}}}},
            {{"key": "llm.token_count.completion", "value": {{"intValue": 1}}}}]}},
          {{"traceId": "t1", "spanId": "again", "name": "ChatOpenAI",
            "startTimeUnixNano": "20000", "endTimeUnixNano": "29000", "attributes": [
            {{"key": "openinference.span.kind", "value": {{"stringValue": "LLM"}}}},
            {{"key": "llm.input_messages.0.message.role", "value": {{"stringValue": "user"}}}},
            {{"key": "llm.input_messages.0.message.content", "value": {{"stringValue": "Classify: latest news"}}}},
            {{"key": "llm.output_messages.0.message.role", "value": {{"stringValue": "assistant"}}}},
            {{"key": "llm.output_messages.0.message.content", "value": {{"stringValue": "news"}}}}]}}
        ]}}]}}]}}"#
    );
    let r = inline("dup.json", &doc);
    assert_eq!(r.format, "openinference");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let t = &r.traces[0];
    // The overlapping copy is dropped (its usage and model kept); the later retry is a call.
    assert_eq!(t.calls.len(), 2);
    assert_eq!(t.chunks.len(), 2);
    assert_eq!(usage(t, 0).input_tokens, Some(24));
    assert_eq!(t.calls[0].model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    assert_eq!(contents(t, &t.calls[0].input), ["Classify: latest news"]);
    assert_eq!(t.calls[1].input, t.calls[0].input);
}

#[test]
fn openinference_malformed_variants_warn_and_the_rest_loads() {
    let r = load("openinference", "malformed.json");
    let all = warnings(&r);
    for expected in [
        "span 1 skipped: expected an object",
        "unknown role \"critic\"",
        "tool message without message.tool_call_id",
        "unknown role \"7\"",
        "input.value is not valid JSON",
        "unknown span kind \"MYSTERY\"",
        "1 LLM span(s) without messages",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in\n{all}");
    }
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    // Kept as text, not dropped.
    assert!(t
        .chunk(t.calls[1].input[0])
        .content
        .starts_with("{\"messages\""));
    // A count of the wrong type is no count.
    assert_eq!(usage(t, 0).input_tokens, None);
    assert_eq!(usage(t, 0).output_tokens, Some(6));

    let r = load("openinference", "truncated.jsonl");
    assert_eq!(r.warning_count, 1);
    assert!(warnings(&r).contains("line 2"));
    assert_eq!(r.traces[0].calls.len(), 1);

    let path = root().join("tests/fixtures/openinference/error-no-content.json");
    match import_path(&path) {
        Err(ImportError::Invalid { message, .. }) => {
            assert!(message.contains("OPENINFERENCE_HIDE_INPUTS"), "{message}")
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn openinference_does_not_claim_plain_genai_spans() {
    let dir = root().join("tests/fixtures/otel");
    for entry in std::fs::read_dir(&dir).expect("otel fixtures") {
        let path = entry.expect("entry").path();
        if let Ok(r) = import_path(&path) {
            assert_eq!(r.format, "otel", "{}", path.display());
        }
    }
}

// ---------------------------------------------------------------------------------- Langfuse

#[test]
fn langfuse_trace_orders_generations_and_counts_cached_input() {
    let r = load_clean("langfuse", "trace.json");
    let t = &r.traces[0];
    assert_eq!(t.id, "chat-1187");
    assert_eq!(t.attributes["trace.name"], "order-support");
    assert_eq!(t.attributes["user.id"], "customer-551");
    // By startTime, whatever the file order.
    assert_eq!(t.calls.len(), 2);
    assert!(t.calls[0].started_at < t.calls[1].started_at);
    assert_history_interned(t);
    assert_eq!(
        categories(t, &t.calls[1].input),
        [
            Category::Other,
            Category::System,
            Category::User,
            Category::ToolCall,
            Category::ToolResult
        ]
    );
    assert_eq!(t.chunks.len(), 6);
    assert_paired(t);
    // The TOOL observation ran 01.900 → 02.540.
    assert!(close(tool_result_latencies(t)[0], 640.0));
    assert!(close(t.calls[1].latency_ms, 1500.0));
    // usageDetails: input excludes input_cached_tokens; MemLens' includes them.
    let second = usage(t, 1);
    assert_eq!(second.input_tokens, Some(182 + 1024));
    assert_eq!(second.cache_read_tokens, Some(1024));
    assert_eq!(second.output_tokens, Some(14));
    assert_eq!(usage(t, 0).reasoning_tokens, Some(0));
}

#[test]
fn langfuse_groups_a_session_and_reads_langchain_shaped_tool_calls() {
    let r = load_clean("langfuse", "session-traces.jsonl");
    assert_eq!(r.traces.len(), 1);
    let t = &r.traces[0];
    assert_eq!(t.id, "sess-2210");
    assert_eq!(t.calls.len(), 4);
    assert_history_interned(t);
    // 2 + tool call + result + answer + question + tool call + result + answer.
    assert_eq!(t.chunks.len(), 9);
    assert_paired(t);
    let call = t.chunk(t.calls[0].output[0]);
    assert_eq!(call.category, Category::ToolCall);
    assert_eq!(
        call.content,
        r#"{"command":"find src -name '*.py' | wc -l"}"#
    );
    // Tool observations matched by name, in order.
    let latencies = tool_result_latencies(t);
    assert!(
        close(latencies[0], 80.0) && close(latencies[1], 310.0),
        "{latencies:?}"
    );
    // Anthropic keys: cache reads and writes added to input.
    let first = usage(t, 0);
    assert_eq!(
        (first.input_tokens, first.cache_write_tokens),
        (Some(12 + 2048), Some(2048))
    );
    let third = usage(t, 2);
    assert_eq!(third.input_tokens, Some(25 + 2048 + 102));
    assert_eq!(
        (third.cache_read_tokens, third.cache_write_tokens),
        (Some(2048), Some(102))
    );
}

#[test]
fn langfuse_observation_lists_and_the_ui_download() {
    let r = load_clean("langfuse", "observations-api.json");
    assert_eq!(r.traces.len(), 2);
    let (a, b) = (&r.traces[0], &r.traces[1]);
    assert_eq!((a.id.as_str(), b.id.as_str()), ("t-a", "t-b"));
    assert_eq!(a.calls.len(), 2);
    // The input given as a JSON string is parsed; the next call resends it.
    assert_history_interned(a);
    assert_eq!(
        contents(a, &a.calls[1].output),
        ["La réunion est désormais jeudi à 15h."]
    );
    assert_eq!(
        (usage(a, 0).input_tokens, usage(a, 0).output_tokens),
        (Some(19), Some(9))
    );
    assert_eq!(contents(b, &b.calls[0].output), ["positive"]);
    assert_eq!(usage(b, 0).input_tokens, Some(15));

    let r = load_clean("langfuse", "ui-download.json");
    let t = &r.traces[0];
    assert_eq!(t.id, "ui-trace-1");
    assert_eq!(t.attributes["user.id"], "visitor-3");
    assert_eq!(categories(t, &t.calls[0].output), [Category::Assistant]);
}

#[test]
fn langfuse_usage_details_already_including_the_cache_are_not_counted_twice() {
    let doc = r#"{"id": "t", "observations": [{"id": "g", "traceId": "t", "type": "GENERATION",
        "startTime": "2025-01-01T00:00:00Z", "input": "hi", "output": "hello",
        "usageDetails": {"input": 1500, "input_cached_tokens": 1000, "output": 20, "total": 1520}}]}"#;
    let r = inline("lf.json", doc);
    assert_eq!(r.format, "langfuse");
    let u = usage(&r.traces[0], 0);
    assert_eq!(
        (u.input_tokens, u.cache_read_tokens),
        (Some(1500), Some(1000))
    );
}

#[test]
fn langfuse_malformed_variants_warn_and_the_rest_loads() {
    let r = load("langfuse", "malformed.jsonl");
    let all = warnings(&r);
    for expected in [
        "observation skipped: expected an object, found a number",
        "listed by id only",
        "line 3 (record 2): skipped: invalid JSON",
        "message skipped: expected a chat message",
        "usage in CHARACTERS, not tokens: ignored",
        "unknown type \"SCORE_CARD\"",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in\n{all}");
    }
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    // Numeric strings and integral floats are counts.
    let counted = t.calls.iter().find_map(|c| c.usage).unwrap_or_default();
    assert_eq!(
        (counted.input_tokens, counted.output_tokens),
        (Some(11), Some(2))
    );

    let path = root().join("tests/fixtures/langfuse/error-ids-only.json");
    let err = import_path(&path).expect_err("observation ids only make no trace");
    assert!(err.to_string().contains("no traces"), "{err}");
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
    assert_eq!(t.chunks.len(), 6);
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
    assert_eq!(t.chunks.len(), 7);
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
