//! OpenAI Codex CLI rollouts and Gemini CLI chat recordings.

use crate::{import_path, root};
use memlens_core::{Category, ChunkId, Trace, Usage};
use memlens_import::Import;

fn fixture(format: &str, name: &str) -> Import {
    let path = root().join("tests/fixtures").join(format).join(name);
    import_path(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn text(t: &Trace, id: ChunkId) -> &str {
    &t.chunk(id).content
}

fn category(t: &Trace, id: ChunkId) -> Category {
    t.chunk(id).category
}

/// `ids` without the stand-in for what the log does not record (system prompt, tools).
fn recorded(t: &Trace, ids: &[ChunkId]) -> Vec<ChunkId> {
    ids.iter()
        .copied()
        .filter(|&id| category(t, id) != Category::Unrecorded)
        .collect()
}

fn usage(t: &Trace, call: usize) -> Usage {
    t.calls[call]
        .usage
        .unwrap_or_else(|| panic!("call {call} has usage"))
}

#[test]
fn codex_calls_follow_token_counts_and_usage_keeps_cached_inside_input() {
    let r = fixture("codex", "session.jsonl");
    assert_eq!(r.format, "codex");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.id, "0199b8a2-4c1d-7e30-9f1a-2b6c8d0e4f51");
    assert_eq!(t.model.as_deref(), Some("gpt-5-codex"));
    assert_eq!(t.calls.len(), 8);

    // Base instructions as system, then developer message, environment context, the prompt.
    let first = &t.calls[0];
    let cats: Vec<Category> = recorded(t, &first.input)
        .iter()
        .map(|&id| category(t, id))
        .collect();
    assert_eq!(
        cats,
        [
            Category::System,
            Category::System,
            Category::User,
            Category::User
        ]
    );
    assert!(text(t, recorded(t, &first.input)[0]).starts_with("You are Codex"));
    // One sampling request: reasoning and the shell call; the output comes after its token_count.
    assert_eq!(
        first
            .output
            .iter()
            .map(|&id| category(t, id))
            .collect::<Vec<_>>(),
        [Category::Reasoning, Category::ToolCall]
    );
    assert!(text(t, first.output[0]).contains("Reading the failing test"));

    // Usage: Codex's input_tokens already include cached_input_tokens; output includes reasoning.
    let u = usage(t, 0);
    assert_eq!(u.input_tokens, Some(4210));
    assert_eq!(u.cache_read_tokens, Some(3072));
    assert_eq!(u.output_tokens, Some(96));
    assert_eq!(u.reasoning_tokens, Some(64));
    // The repeated token_count (same cumulative total) is not a call of its own.
    assert_eq!(usage(t, 1).input_tokens, Some(4440));
    assert_eq!(usage(t, 2).input_tokens, Some(4550));

    // Tool calls (function and custom) paired with their outputs; the next call carries them.
    assert_eq!(t.tool_pairs.len(), 4);
    assert!(t
        .tool_pairs
        .iter()
        .all(|p| p.call.is_some() && p.result.is_some()));
    let patch = t
        .tool_pairs
        .iter()
        .find(|p| p.id == "call_A2")
        .expect("apply_patch pair");
    let result = patch.result.expect("answered");
    assert_eq!(
        t.chunk(result).meta.tool_name.as_deref(),
        Some("apply_patch")
    );
    assert!(t.calls[2].input.contains(&result));

    // event_msg user_message / agent_message repeat response items: not chunks of their own.
    let prompts = t
        .chunks
        .iter()
        .filter(|c| c.content == "The pagination test fails. Fix it.")
        .count();
    assert_eq!(prompts, 1);
    let answers = t
        .chunks
        .iter()
        .filter(|c| c.content.starts_with("Fixed the off-by-one"))
        .count();
    assert_eq!(answers, 1);
}

#[test]
fn codex_compaction_keeps_initial_context_and_user_messages_then_the_summary() {
    let r = fixture("codex", "session.jsonl");
    let t = &r.traces[0];
    assert_eq!(t.compactions.len(), 1);
    let c = &t.compactions[0];
    // Call 5 is the summarization request (its token_count precedes `compacted`).
    let summarization = &t.calls[5];
    assert_eq!(usage(t, 5).input_tokens, Some(5100));
    let summary = c.summary.expect("summary chunk");
    assert_eq!(summarization.output, [summary]);
    assert_eq!(category(t, summary), Category::Summary);
    assert!(text(t, summary).contains("Fixed the off-by-one"));
    assert_eq!(c.first_call, 6);

    let after = &t.calls[6];
    let user_texts: Vec<&str> = after
        .input
        .iter()
        .filter(|&&id| category(t, id) == Category::User)
        .map(|&id| text(t, id))
        .collect();
    assert_eq!(
        user_texts,
        [
            "<environment_context>\n  <cwd>/home/dev/shop</cwd>\n  <shell>bash</shell>\n</environment_context>",
            "The pagination test fails. Fix it.",
            "Also add a test for an empty list.",
            "Run the whole suite once more."
        ]
    );
    // The summary comes after the kept messages, the new prompt after it.
    let at = |id| after.input.iter().position(|&x| x == id).expect("in input");
    assert_eq!(at(summary) + 1, after.input.len() - 1);
    // Everything the model produced before, and the tool outputs, were replaced.
    assert_eq!(c.replaced.len(), 9);
    for id in &c.replaced {
        assert!(!after.input.contains(id));
        assert!(t.calls[4].input.contains(id) || t.calls[4].output.contains(id));
    }
    assert!(c
        .replaced
        .iter()
        .all(|&id| category(t, id) != Category::User && category(t, id) != Category::System));
}

#[test]
fn codex_replacement_history_reuses_the_chunks_it_keeps() {
    let r = fixture("codex", "replacement-history.jsonl");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 3);
    let c = &t.compactions[0];
    assert_eq!(c.first_call, 2);
    // The `compaction` item is the (encrypted) summary.
    let summary = c.summary.expect("summary");
    assert_eq!(category(t, summary), Category::Summary);
    let before = recorded(t, &t.calls[1].input);
    let after = recorded(t, &t.calls[2].input);
    // System, environment context and the first prompt are the very same chunks.
    assert_eq!(after[..3], before[..3]);
    assert_eq!(after[3], summary);
    assert_eq!(text(t, after[4]), "Now list its sections.");
    let replaced: Vec<ChunkId> = before[3..]
        .iter()
        .chain(&t.calls[1].output)
        .copied()
        .collect();
    assert_eq!(recorded(t, &c.replaced), replaced);
}

#[test]
fn codex_older_order_puts_interleaved_tool_outputs_inside_one_call() {
    let r = fixture("codex", "older-order.jsonl");
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    let cats: Vec<Category> = t.calls[0]
        .output
        .iter()
        .map(|&id| category(t, id))
        .collect();
    assert_eq!(
        cats,
        [Category::Reasoning, Category::ToolCall, Category::ToolCall]
    );
    // The token_count before a request's items is that request's.
    assert_eq!(usage(t, 0).input_tokens, Some(2000));
    assert_eq!(usage(t, 1).input_tokens, Some(2100));
    assert_eq!(usage(t, 1).cache_read_tokens, Some(1920));
    assert_eq!(recorded(t, &t.calls[1].input).len(), 7);
}

#[test]
fn codex_old_layout_reads_bare_items_after_the_meta_line() {
    let r = fixture("codex", "legacy-layout.jsonl");
    assert_eq!(r.format, "codex");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.id, "5973b6c0-94b8-487b-a530-2aeb6098ae0e");
    // No token_count events: every run of model items is a call.
    assert_eq!(t.calls.len(), 3);
    assert_eq!(text(t, t.calls[0].input[0]), "Prefer small diffs.");
    assert!(t.calls.iter().all(|c| c.usage.is_none()));
    // `{content, success}` outputs and local shell calls.
    let pair = &t.tool_pairs[0];
    assert_eq!(
        text(t, pair.result.expect("result")),
        "pub mod parse;\npub use parse::run;"
    );
    let shell = &t.tool_pairs[1];
    assert_eq!(
        t.chunk(shell.call.expect("call")).meta.tool_name.as_deref(),
        Some("local_shell")
    );
}

#[test]
fn codex_malformed_lines_are_warnings_naming_the_line() {
    let r = fixture("codex", "malformed.jsonl");
    let has = |line: usize, what: &str| {
        r.warnings
            .iter()
            .any(|w| w.location.line == Some(line) && w.message.contains(what))
    };
    assert!(has(2, "\"payload\" is a string"));
    assert!(has(3, "\"model\" is a number"));
    assert!(has(5, "\"hologram\""));
    assert!(has(6, "\"mystery_line\""));
    assert!(has(7, "without \"type\""));
    assert!(has(8, "expected an object"));
    assert!(has(10, "token_count without usable"));
    assert!(has(14, "invalid JSON"), "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    assert_eq!(usage(t, 1).input_tokens, Some(120));
}

#[test]
fn gemini_messages_are_calls_with_tool_results_in_the_next_input() {
    let r = fixture("gemini-cli", "session.json");
    assert_eq!(r.format, "gemini-cli");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.id, "6f1c2a8e-3b7d-4c1e-9a2f-0d5e8b7c4a11");
    assert_eq!(t.calls.len(), 4);
    assert_eq!(t.calls[2].model.as_deref(), Some("gemini-2.5-flash"));

    // Thoughts, then the two parallel tool calls.
    let out: Vec<Category> = t.calls[0]
        .output
        .iter()
        .map(|&id| category(t, id))
        .collect();
    assert_eq!(
        out,
        [Category::Reasoning, Category::ToolCall, Category::ToolCall]
    );
    assert_eq!(t.tool_pairs.len(), 3);
    for pair in &t.tool_pairs {
        let result = pair.result.expect("answered");
        assert!(!t.calls[0].input.contains(&result));
        let next = t
            .calls
            .iter()
            .position(|c| c.output.contains(&pair.call.expect("call")))
            .expect("made by a call")
            + 1;
        assert!(t.calls[next].input.contains(&result));
    }
    let read = t.tool_pairs[1].result.expect("read_file result");
    assert!(text(t, read).starts_with("export function total"));

    // The `info` notice is not context.
    assert!(!t
        .chunks
        .iter()
        .any(|c| c.content.contains("fallback model")));

    // promptTokenCount includes cached tokens; thoughts are output; tool-use prompt is input.
    let u = usage(t, 0);
    assert_eq!(u.input_tokens, Some(8213));
    assert_eq!(u.output_tokens, Some(41 + 118));
    assert_eq!(u.reasoning_tokens, Some(118));
    let u = usage(t, 1);
    assert_eq!(u.input_tokens, Some(8530));
    assert_eq!(u.cache_read_tokens, Some(8102));
    let u = usage(t, 3);
    assert_eq!(u.input_tokens, Some(8790 + 5));
    assert_eq!(u.cache_read_tokens, Some(8600));
}

#[test]
fn gemini_jsonl_rewind_and_compression_rewrite_the_context() {
    let r = fixture("gemini-cli", "session-compressed.jsonl");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 5);
    // The message written again with tokens and tool calls counts once, in its last version.
    assert_eq!(usage(t, 0).input_tokens, Some(6100));
    assert_eq!(t.calls[0].output.len(), 2);

    // `$rewindTo` took "Delete faq.md" out of the context.
    let rewound = t
        .chunks
        .iter()
        .find(|c| c.content == "Delete faq.md")
        .expect("chunk kept for the record")
        .id;
    assert!(t.calls.iter().all(|c| !c.input.contains(&rewound)));

    // `$set.messages` dropping messages: a compaction with the snapshot as its summary.
    let c = &t.compactions[0];
    assert_eq!(c.first_call, 4);
    let summary = c.summary.expect("summary");
    assert_eq!(category(t, summary), Category::Summary);
    assert!(text(t, summary).starts_with("<state_snapshot>"));
    let after = &t.calls[4];
    assert_eq!(recorded(t, &after.input)[0], summary);
    let before: Vec<ChunkId> = recorded(t, &t.calls[1].input)
        .into_iter()
        .chain(t.calls[1].output.iter().copied())
        .collect();
    assert_eq!(recorded(t, &c.replaced), before);
    for id in &c.replaced {
        assert!(!after.input.contains(id));
    }
    // Kept turns keep their chunks; the tool result repeated as a user turn is not doubled.
    assert!(after.input.contains(&t.calls[3].output[0]));
    let mut seen = std::collections::HashSet::new();
    assert!(after.input.iter().all(|id| seen.insert(*id)));
    assert_eq!(t.tool_pairs.len(), 2);
}

#[test]
fn gemini_malformed_messages_are_warnings() {
    let r = fixture("gemini-cli", "malformed.json");
    let has = |what: &str| r.warnings.iter().any(|w| w.message.contains(what));
    assert!(has("needs a string \"id\""));
    assert!(has("\"content\" is a number"));
    assert!(has("\"tokens\" is a string"));
    assert!(has("\"toolCalls\" is an object"));
    assert!(has("unknown type \"hologram\""));
    assert!(has("tool call without a string \"id\""));
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    assert_eq!(usage(t, 1).input_tokens, Some(12));
}

#[test]
fn real_codex_and_gemini_files_import() {
    let real = root().join("tests/fixtures/real");
    let codex = import_path(&real.join("codex/session-01.jsonl")).expect("real rollout");
    assert_eq!(codex.format, "codex");
    assert!(codex.warnings.is_empty(), "{:?}", codex.warnings);
    let t = &codex.traces[0];
    assert_eq!(t.calls.len(), 1);
    assert_eq!(t.model.as_deref(), Some("gpt-5.5"));
    let u = usage(t, 0);
    assert_eq!(u.input_tokens, Some(22539));
    assert_eq!(u.cache_read_tokens, Some(20864));
    // Instructions, developer context, environment context, prompt.
    assert_eq!(recorded(t, &t.calls[0].input).len(), 4);

    let gemini = import_path(&real.join("gemini-cli/session-01.json")).expect("real recording");
    assert_eq!(gemini.format, "gemini-cli");
    assert!(gemini.warnings.is_empty(), "{:?}", gemini.warnings);
    let t = &gemini.traces[0];
    assert_eq!(t.calls.len(), 1);
    let u = usage(t, 0);
    // total 4419 = input 4383 + output 8 + thoughts 28.
    assert_eq!(u.input_tokens, Some(4383));
    assert_eq!(u.output_tokens, Some(36));
    assert_eq!(u.reasoning_tokens, Some(28));
}

#[test]
fn codex_lines_not_imported_are_counted_and_an_orphan_usage_is_a_warning() {
    let r = fixture("codex", "interrupted-turn.jsonl");
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    for (kind, n) in [
        ("event_msg.user_message", "2"),
        ("event_msg.agent_message", "1"),
        ("event_msg.agent_reasoning", "1"),
        ("event_msg.task_started", "1"),
        ("event_msg.task_complete", "1"),
        ("event_msg.turn_aborted", "1"),
        // The rate-limit update without token numbers.
        ("event_msg.token_count", "1"),
        ("response_item.ghost_snapshot", "1"),
    ] {
        assert_eq!(t.attributes[&format!("ignored_lines.{kind}")], n, "{kind}");
    }
    // The interrupted request's usage was recorded, none of its items: said, not dropped unseen.
    let lost: Vec<&str> = r
        .warnings
        .iter()
        .map(|w| w.message.as_str())
        .filter(|m| m.starts_with("token usage not matched to a model response"))
        .collect();
    assert_eq!(lost.len(), 1, "{:?}", r.warnings);
    assert!(lost[0].contains("3380 input, 100 output"), "{}", lost[0]);
    assert_eq!(usage(t, 1).input_tokens, Some(3610));
}

#[test]
fn codex_old_layout_state_lines_are_counted() {
    let r = fixture("codex", "legacy-layout.jsonl");
    assert_eq!(
        r.traces[0].attributes["ignored_lines.record_type.state"],
        "2"
    );
}

#[test]
fn gemini_notices_and_metadata_updates_are_counted() {
    let r = fixture("gemini-cli", "notices-and-metadata-updates.jsonl");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    for (kind, n) in [("info", "1"), ("warning", "1"), ("metadata_update", "3")] {
        assert_eq!(t.attributes[&format!("ignored_lines.{kind}")], n, "{kind}");
    }
}

#[test]
fn gemini_parts_and_set_messages_of_unknown_shape_are_warnings() {
    let text = r#"{"sessionId":"s-1","projectHash":"p","startTime":"2026-02-11T15:20:00.000Z","lastUpdated":"2026-02-11T15:20:00.000Z"}
{"id":"u1","timestamp":"2026-02-11T15:20:04.000Z","type":"user","content":[{"text":"Hi"},{},42]}
{"id":"g1","timestamp":"2026-02-11T15:20:07.000Z","type":"gemini","content":"Hello.","tokens":{"input":10,"output":2,"cached":0,"thoughts":0,"tool":0,"total":12},"model":"gemini-2.5-pro"}
{"$set":{"messages":[{"id":"u1","type":"user","content":[{"text":"Hi"}]},{"id":"g1","type":"gemini","content":"Hello."},{"id":"x1","type":"hologram","content":"?"}]}}
{"$set":"oops"}"#;
    let r =
        memlens_import::import("s.jsonl", text.as_bytes(), &Default::default()).expect("imports");
    let messages: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    let count = |prefix: &str| messages.iter().filter(|m| m.starts_with(prefix)).count();
    assert_eq!(count("content part skipped"), 2, "{messages:?}");
    assert_eq!(
        count("$set.messages[2] (\"x1\") of unknown type"),
        1,
        "{messages:?}"
    );
    assert_eq!(
        count("skipped: a $set update needs an object"),
        1,
        "{messages:?}"
    );
}
