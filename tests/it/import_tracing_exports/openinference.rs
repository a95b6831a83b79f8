//! OpenInference spans: messages from attributes or raw values, one call per request whatever
//! the instrumentations, one trace per conversation.

use super::*;

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
    assert_eq!(recorded(t), 10);
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
        contents(t, &t.calls[2].input)[7],
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
    assert_eq!(recorded(quiz), 5);
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
    // The copy is accounted for, not dropped silently.
    assert_eq!(r.warning_count, 1, "{:?}", r.warnings);
    assert!(warnings(&r).contains("duplicate LLM spans: 1 span(s)"));
    let t = &r.traces[0];
    // The overlapping copy is dropped (its usage and model kept); the later retry is a call.
    assert_eq!(t.calls.len(), 2);
    assert_eq!(recorded(t), 2);
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
    // The two calls share no message: two conversations, each its own trace.
    assert_eq!(r.traces.len(), 2);
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 1);
    let kept_as_text = &r.traces[1];
    assert_eq!(kept_as_text.id, format!("{}#2", t.id));
    // Kept as text, not dropped.
    assert!(kept_as_text
        .chunks
        .iter()
        .any(|c| c.content.starts_with("{\"messages\"")));
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

#[test]
fn openinference_a_call_recorded_by_nested_instrumentations_is_one_call() {
    // LangChain's span holds the OpenAI SDK's span for the same request; their messages differ
    // (LangChain re-serializes the tool call's arguments) and only LangChain's carries the
    // session. Both used to be imported, as two traces of two calls each.
    let r = load("openinference", "nested-duplicate.json");
    assert_eq!(r.warning_count, 1, "{}", warnings(&r));
    assert!(warnings(&r).contains("duplicate LLM spans: 2 span(s)"));
    assert_eq!(r.traces.len(), 1);
    let t = &r.traces[0];
    // The provider spans, grouped by the session their LangChain parents carry.
    assert_eq!(t.id, "chat-0517");
    assert_eq!(t.calls.len(), 2);
    assert_history_interned(t);
    assert_paired(t);
    let call = t.chunk(t.calls[0].output[0]);
    assert_eq!(call.content, r#"{"city":"Paris"}"#);
    // Model as answered and usage from the provider's span.
    assert_eq!(t.calls[0].model.as_deref(), Some("gpt-4o-2024-08-06"));
    assert_eq!(usage(t, 1).cache_read_tokens, Some(1152));
    assert!(close(tool_result_latencies(t)[0], 230.0));
}

/// Keep-all on one trace: nothing saved, no invariant broken (a trace that mixes two
/// conversations shows false savings and violations).
fn assert_keep_all_is_neutral(t: &Trace) {
    use memlens_core::cost::PriceTable;
    use memlens_core::policy::PolicyConfig;
    let policy = PolicyConfig::builtin("keep-all").expect("built-in");
    let report = memlens_core::simulate::simulate(
        std::slice::from_ref(t),
        &policy,
        100_000,
        &PriceTable::builtin(),
    )
    .expect("simulates");
    let totals = &report.totals;
    assert_eq!(totals.calls, t.calls.len() as u64, "trace {}", t.id);
    assert_eq!(totals.saved_tokens, 0, "trace {}", t.id);
    assert_eq!(totals.violations, 0, "trace {}", t.id);
}

#[test]
fn openinference_two_agents_in_one_session_are_two_traces() {
    // Two crew agents run concurrently in one session: their calls interleave in time.
    let r = load_clean("openinference", "two-agents.json");
    let ids: Vec<&str> = r.traces.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["crew-run-9/researcher", "crew-run-9/writer"]);
    for t in &r.traces {
        assert_eq!(t.calls.len(), 2, "trace {}", t.id);
        assert_eq!(t.attributes["agent.name"], t.id["crew-run-9/".len()..]);
        assert_history_interned(t);
        assert_paired(t);
        assert_keep_all_is_neutral(t);
    }
    // Each agent's tool span timed its own tool result.
    assert!(close(tool_result_latencies(&r.traces[0])[0], 1190.0));
    assert!(close(tool_result_latencies(&r.traces[1])[0], 50.0));
}

#[test]
fn openinference_unrelated_conversations_in_one_trace_are_split() {
    // No agent spans, one trace: two conversations (different prompts) interleaved in time.
    let span = |id: &str, start: u64, system: &str, user: &str, extra: &str, answer: &str| {
        format!(
            r#"{{"traceId": "t9", "spanId": "{id}", "name": "ChatCompletion",
              "startTimeUnixNano": "{start}", "endTimeUnixNano": "{}", "attributes": [
              {{"key": "openinference.span.kind", "value": {{"stringValue": "LLM"}}}},
              {{"key": "llm.model_name", "value": {{"stringValue": "gpt-4o-2024-08-06"}}}},
              {{"key": "llm.input_messages.0.message.role", "value": {{"stringValue": "system"}}}},
              {{"key": "llm.input_messages.0.message.content", "value": {{"stringValue": "{system}"}}}},
              {{"key": "llm.input_messages.1.message.role", "value": {{"stringValue": "user"}}}},
              {{"key": "llm.input_messages.1.message.content", "value": {{"stringValue": "{user}"}}}}
              {extra},
              {{"key": "llm.output_messages.0.message.role", "value": {{"stringValue": "assistant"}}}},
              {{"key": "llm.output_messages.0.message.content", "value": {{"stringValue": "{answer}"}}}}]}}"#,
            start + 500
        )
    };
    let follow_up = |answer: &str, question: &str| {
        format!(
            r#", {{"key": "llm.input_messages.2.message.role", "value": {{"stringValue": "assistant"}}}},
              {{"key": "llm.input_messages.2.message.content", "value": {{"stringValue": "{answer}"}}}},
              {{"key": "llm.input_messages.3.message.role", "value": {{"stringValue": "user"}}}},
              {{"key": "llm.input_messages.3.message.content", "value": {{"stringValue": "{question}"}}}}"#
        )
    };
    let (sa, ua, sb, ub) = (
        "You translate to French.",
        "Good morning",
        "You write haiku.",
        "Rain",
    );
    let spans = [
        span("a1", 1000, sa, ua, "", "Bonjour"),
        span("b1", 1100, sb, ub, "", "Soft rain on the roof"),
        span(
            "a2",
            2000,
            sa,
            ua,
            &follow_up("Bonjour", "Good night"),
            "Bonne nuit",
        ),
        span(
            "b2",
            2100,
            sb,
            ub,
            &follow_up("Soft rain on the roof", "Snow"),
            "White hush",
        ),
    ];
    let doc = format!(
        r#"{{"resourceSpans": [{{"scopeSpans": [{{"spans": [{}]}}]}}]}}"#,
        spans.join(",")
    );
    let r = inline("two-conversations.json", &doc);
    let ids: Vec<&str> = r.traces.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["t9", "t9#2"]);
    for t in &r.traces {
        assert_eq!(t.calls.len(), 2);
        assert_history_interned(t);
        assert_keep_all_is_neutral(t);
    }
}
