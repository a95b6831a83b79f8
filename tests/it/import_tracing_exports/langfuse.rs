//! Langfuse exports: traces, observation lists, the UI download, and the message layouts
//! frameworks send through OpenTelemetry (pydantic-ai's parts, OpenAI Agents SDK items).

use super::*;

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
    assert_eq!(recorded(t), 6);
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
    assert_eq!(recorded(t), 9);
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

#[test]
fn langfuse_pydantic_ai_parts_messages_import_fully() {
    // pydantic-ai's OpenTelemetry messages: `{role, parts: [...]}`, the tool result a
    // `tool_call_response` with its `result`. They used to import as empty messages.
    let r = load_clean("langfuse", "pydantic-ai-parts.json");
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    assert_history_interned(t);
    assert_paired(t);
    // The tools from `model_request_parameters`, then the messages.
    assert_eq!(
        categories(t, &t.calls[0].input),
        [Category::Other, Category::System, Category::User]
    );
    assert_eq!(
        categories(t, &t.calls[0].output),
        [Category::Reasoning, Category::ToolCall]
    );
    assert_eq!(contents(t, &t.calls[0].output)[1], r#"{"city":"Oslo"}"#);
    let result = t.chunk(*t.calls[1].input.last().expect("input"));
    assert_eq!(result.category, Category::ToolResult);
    assert_eq!(result.content, "Light rain, 9°C, wind 14 km/h");
    assert_eq!(
        contents(t, &t.calls[1].output),
        ["Yes: light rain in Oslo right now, 9°C with a 14 km/h wind."]
    );
    assert!(t.chunks.iter().all(|c| !c.content.is_empty()));
}

#[test]
fn langfuse_openai_agents_items_pair_by_call_id() {
    // The OpenAI Agents SDK (OpenInference into Langfuse): the input is a list of Responses items,
    // the output the `Response` object; the instructions are in `modelParameters`.
    let r = load_clean("langfuse", "openai-agents-items.json");
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    assert_history_interned(t);
    assert_paired(t);
    assert_eq!(
        categories(t, &t.calls[0].input),
        [Category::Other, Category::System, Category::User]
    );
    assert_eq!(
        contents(t, &t.calls[0].input)
            .into_iter()
            .filter(|c| c.as_str() == "You are a helpful agent.")
            .count(),
        1
    );
    // The reasoning item and the function call, resent as the same chunks.
    assert_eq!(
        categories(t, &t.calls[0].output),
        [Category::Reasoning, Category::ToolCall]
    );
    let result = t.chunk(*t.calls[1].input.last().expect("input"));
    assert_eq!(result.category, Category::ToolResult);
    assert_eq!(
        result.meta.tool_call_id.as_deref(),
        Some("call_Kud0j0DxWSmLzv9W5m6qVqXn")
    );
    assert_eq!(categories(t, &t.calls[1].output), [Category::Assistant]);
    // OpenInference's usage keys as Langfuse keeps them.
    assert_eq!(
        (usage(t, 0).reasoning_tokens, usage(t, 1).cache_read_tokens),
        (Some(64), Some(128))
    );
}
