//! Claude Code sessions: subagents, compactions, cache usage.

use crate::{import_path, root};
use memlens_core::{Category, Trace};
use memlens_import::{import, import_many, FileInput, Import, ImportOptions};
use std::path::PathBuf;

const SESSION: &str = "7d3f6a52-1c9e-4b8a-9f21-5e0c7b4d2a10";

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/claude-code").join(name)
}

fn load(name: &str) -> Import {
    let r = import_path(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(r.format, "claude-code", "{name}");
    r
}

fn keys(t: &Trace, ids: &[memlens_core::ChunkId]) -> Vec<String> {
    ids.iter().map(|&i| t.chunk(i).key.clone()).collect()
}

fn categories(t: &Trace, ids: &[memlens_core::ChunkId]) -> Vec<Category> {
    ids.iter().map(|&i| t.chunk(i).category).collect()
}

#[test]
fn block_lines_of_one_response_are_one_call_with_usage_counted_once() {
    let r = load("session.jsonl");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.id, SESSION);
    assert_eq!(t.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    // Four responses (msg_01A..D) over eleven assistant lines' worth of blocks: four calls.
    assert_eq!(t.calls.len(), 4);
    let first = &t.calls[0];
    assert_eq!(
        categories(t, &first.output),
        [
            Category::Reasoning,
            Category::Assistant,
            Category::ToolCall,
            Category::ToolCall
        ]
    );
    // The usage of the last block line (the repeated usage grows while streaming), counted once:
    // 3 uncached + 1,200 cache writes + 14,000 cache reads.
    let u = first.usage.expect("usage");
    assert_eq!(u.input_tokens, Some(3 + 1_200 + 14_000));
    assert_eq!(u.output_tokens, Some(118));
    assert_eq!(u.cache_read_tokens, Some(14_000));
    assert_eq!(u.cache_write_tokens, Some(1_200));
    let total_input: u64 = t.calls.iter().filter_map(|c| c.usage?.input_tokens).sum();
    assert_eq!(total_input, 15_203 + 16_005 + 16_304 + 2_106);
    // The 5m/1h split is summed per trace: 1,200 + 2,100 (5m) and 800 (1h).
    assert_eq!(t.attributes["cache_write_5m_tokens"], "3300");
    assert_eq!(t.attributes["cache_write_1h_tokens"], "800");
    assert!(t.attributes["unrecorded"].starts_with("system prompt and tool definitions"));
    assert_eq!(t.attributes["version"], "2.0.46");
    assert_eq!(t.attributes["git_branch"], "main");
    assert_eq!(t.attributes["tool_errors"], "1");
    assert_eq!(t.attributes["agent_tool_call.a7c31f2"], "toolu_01T");
    // The request of call 0 went out when the prompt was written; the response ended with its
    // last block line.
    assert_eq!(
        first.started_at.as_deref(),
        Some("2025-11-19T10:00:00.000Z")
    );
    assert_eq!(first.ended_at.as_deref(), Some("2025-11-19T10:00:04.700Z"));
}

#[test]
fn parallel_tool_results_are_one_user_message_paired_with_their_calls() {
    let r = load("session.jsonl");
    let t = &r.traces[0];
    let (first, second) = (&t.calls[0], &t.calls[1]);
    // Input: call 0's input and four outputs, then both results as one message (one framing).
    let results: Vec<_> = second.input[first.input.len() + first.output.len()..]
        .iter()
        .map(|&i| t.chunk(i))
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|c| c.category == Category::ToolResult));
    assert!(results[0].starts_message && !results[1].starts_message);
    assert_eq!(results[0].meta.tool_name.as_deref(), Some("Read"));
    assert_eq!(results[1].meta.tool_name.as_deref(), Some("Grep"));
    // Every call has its result, the failed Edit included.
    assert_eq!(t.tool_pairs.len(), 4);
    assert!(t
        .tool_pairs
        .iter()
        .all(|p| p.call.is_some() && p.result.is_some()));
    let edit = t
        .tool_pairs
        .iter()
        .find(|p| p.id == "toolu_01E")
        .expect("edit");
    let result = t.chunk(edit.result.expect("result"));
    assert!(result.content.starts_with("<tool_use_error>"));
}

#[test]
fn compaction_replaces_the_chain_before_it_with_the_summary() {
    let r = load("session.jsonl");
    let t = &r.traces[0];
    assert_eq!(t.compactions.len(), 1);
    let c = &t.compactions[0];
    assert_eq!(c.first_call, 3);
    assert_eq!(c.trigger.as_deref(), Some("auto"));
    assert_eq!(c.reported_tokens_before, Some(17_210));
    assert_eq!(c.timestamp.as_deref(), Some("2025-11-19T10:01:40.000Z"));
    // Everything the last call before it carried, and its output, was replaced.
    let before = &t.calls[2];
    let mut carried = before.input.clone();
    carried.extend(&before.output);
    carried.push(*t.tool_pairs[3].result.as_ref().expect("edit result"));
    // The system prompt and tools (unrecorded) stay through a compaction.
    carried.retain(|&id| t.chunk(id).category != Category::Unrecorded);
    assert_eq!(keys(t, &c.replaced), keys(t, &carried));
    let summary = t.chunk(c.summary.expect("summary"));
    assert_eq!(summary.category, Category::Summary);
    assert!(summary
        .content
        .starts_with("This session is being continued"));
    // The call after it carries only the summary and the new prompt.
    let after = &t.calls[3];
    let input: Vec<Category> = categories(t, &after.input)
        .into_iter()
        .filter(|&c| c != Category::Unrecorded)
        .collect();
    assert_eq!(input, [Category::Summary, Category::User]);
    assert!(after.input.iter().all(|id| !c.replaced.contains(id)));
}

#[test]
fn a_subagent_file_links_to_the_task_call_of_its_session_through_import_many() {
    let read = |name: &str| std::fs::read(fixture(name)).expect("fixture");
    let (session, agent) = (read("session.jsonl"), read("agent-a7c31f2.jsonl"));

    // Alone, the subagent's file names its session but not the call that started it.
    let alone = import("agent-a7c31f2.jsonl", &agent, &ImportOptions::default()).expect("import");
    let child = &alone.traces[0];
    assert_eq!(child.id, format!("{SESSION}/agent-a7c31f2"));
    assert_eq!(child.attributes["agent_id"], "a7c31f2");
    let link = child.parent.as_ref().expect("parent");
    assert_eq!(link.trace, SESSION);
    assert_eq!((link.call, link.tool_call_id.as_deref()), (None, None));
    assert_eq!(child.calls.len(), 2);

    // Together, the session's `toolUseResult.agentId` gives the tool call and its call.
    let files = [
        FileInput {
            name: "projects/-home-dev-shop/7d3f6a52.jsonl",
            bytes: &session,
        },
        FileInput {
            name: "projects/-home-dev-shop/7d3f6a52/subagents/agent-a7c31f2.jsonl",
            bytes: &agent,
        },
    ];
    let results = import_many(&files, &ImportOptions::default());
    let child = &results[1].as_ref().expect("agent imports").traces[0];
    let link = child.parent.as_ref().expect("parent");
    assert_eq!(link.tool_call_id.as_deref(), Some("toolu_01T"));
    assert_eq!(link.call, Some(1));
    let parent = &results[0].as_ref().expect("session imports").traces[0];
    let task = &parent.calls[1];
    assert!(task
        .output
        .iter()
        .any(|&i| parent.chunk(i).meta.tool_name.as_deref() == Some("Task")));
}

#[test]
fn an_edited_message_keeps_the_continued_branch_and_inline_sidechains_become_subagents() {
    let r = load("branches-and-inline-sidechain.jsonl");
    let main = &r.traces[0];
    // b05/b06 (the message before the edit and its answer) are left out, and said so.
    assert_eq!(main.attributes["abandoned_branch_lines"], "2");
    assert!(r.warnings.iter().any(|w| w
        .message
        .starts_with("2 user/assistant line(s) on abandoned branches")));
    assert!(main
        .chunks
        .iter()
        .all(|c| c.content != "Yes, and the docs."));
    assert!(main
        .chunks
        .iter()
        .any(|c| c.content.starts_with("Yes, but leave the docs alone")));
    assert_eq!(main.calls.len(), 4);
    // The 1.0 sidechain (no agentId) is its own trace, linked by its prompt to the Task call.
    assert_eq!(r.traces.len(), 2);
    let side = &r.traces[1];
    assert!(side.id.ends_with("/sidechain-0"), "{}", side.id);
    assert_eq!(side.calls.len(), 1);
    let link = side.parent.as_ref().expect("parent");
    assert_eq!(link.trace, main.id);
    assert_eq!(link.tool_call_id.as_deref(), Some("toolu_03T"));
    assert_eq!(link.call, Some(2));
    assert!(main.chunks.iter().all(|c| !c
        .content
        .contains("src/main.py:8 and src/cli.py:21 call")
        || c.category == Category::ToolResult));
}

#[test]
fn malformed_lines_become_warnings_and_the_rest_loads() {
    let r = load("malformed-lines.jsonl");
    let messages: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    let has = |needle: &str| messages.iter().any(|m| m.contains(needle));
    assert!(has("invalid JSON"), "{messages:?}"); // the truncated last line
    assert!(
        has("expected a JSON object, found an array"),
        "{messages:?}"
    );
    assert!(
        has("assistant line without a \"message\" object (a string)"),
        "{messages:?}"
    );
    assert!(has("\"usage\" is a string"), "{messages:?}");
    assert!(has("\"content\" is a number"), "{messages:?}");
    assert!(has("unknown line type \"telemetry-ping\""), "{messages:?}");
    assert!(
        has("its parent \"gone-0001\" is not in this file"),
        "{messages:?}"
    );
    assert!(
        has("tool result \"toolu_zz\" has no matching tool call"),
        "{messages:?}"
    );
    let t = &r.traces[0];
    // x03 (content kept as JSON text, no usage) and x07; the synthetic API error is not a call.
    assert_eq!(t.calls.len(), 2);
    assert_eq!(t.calls[0].usage, None);
    assert_eq!(t.attributes["skipped_synthetic_messages"], "1");
    let u = t.calls[1].usage.expect("usage");
    assert_eq!(u.input_tokens, Some(12 + 100));
    assert_eq!(u.cache_read_tokens, Some(100));
}

#[test]
fn a_file_without_conversation_is_an_error() {
    let err = import_path(&fixture("error-no-conversation.jsonl")).expect_err("no traces");
    assert!(
        err.to_string()
            .contains("no traces found in this claude-code file"),
        "{err}"
    );
}

#[test]
fn the_real_session_excerpt_imports_its_main_chain_and_subagent() {
    let path = root().join("tests/fixtures/real/claude-code/sidechain_integrated.jsonl");
    let r = import_path(&path).expect("imports");
    assert_eq!(r.format, "claude-code");
    let main = &r.traces[0];
    assert_eq!(main.id, "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358");
    assert_eq!(main.calls.len(), 2);
    // The subagent e1c84ba5 (its result's agentId) is linked to the Task call.
    let agent = r
        .traces
        .iter()
        .find(|t| t.attributes.get("agent_id").map(String::as_str) == Some("e1c84ba5"))
        .expect("agent trace");
    let link = agent.parent.as_ref().expect("parent");
    assert_eq!(
        link.tool_call_id.as_deref(),
        Some("toolu_01JA2mLseQCAW3MdwPE4qWEk")
    );
    assert_eq!(link.call, Some(0));
    // The sidechain response written as two lines (one message.id) is one call.
    let sidechain = r
        .traces
        .iter()
        .find(|t| t.id.ends_with("/sidechain-0"))
        .expect("sidechain trace");
    assert_eq!(sidechain.calls.len(), 1);
    assert_eq!(sidechain.calls[0].output.len(), 2);
    assert_eq!(
        sidechain.calls[0].usage.expect("usage").output_tokens,
        Some(183)
    );
}

/// One line of a session, as Claude Code 2.x writes it.
fn line(uuid: &str, parent: Option<&str>, kind: &str, message: &str) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("{p:?}"));
    format!(
        r#"{{"parentUuid":{parent},"isSidechain":false,"sessionId":"s-1","type":"{kind}","message":{message},"uuid":"{uuid}","timestamp":"2025-12-01T10:00:00Z"}}"#
    )
}

#[test]
fn tool_results_hung_off_the_line_of_their_call_stay_in_the_conversation() {
    let call = |id: &str, tool: &str| {
        format!(
            r#"{{"id":"msg_A","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"tool_use","id":"{id}","name":"{tool}","input":{{}}}}],"usage":{{"input_tokens":10,"output_tokens":20}}}}"#
        )
    };
    let result = |id: &str| {
        format!(
            r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","content":"ok {id}"}}]}}"#
        )
    };
    let text = [
        line("u0", None, "user", r#"{"role":"user","content":"Check both."}"#),
        line("a1", Some("u0"), "assistant", &call("t1", "Read")),
        line("r1", Some("a1"), "user", &result("t1")),
        line("a2", Some("a1"), "assistant", &call("t2", "Glob")),
        line("r2", Some("a2"), "user", &result("t2")),
        line(
            "a3",
            Some("r2"),
            "assistant",
            r#"{"id":"msg_B","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Both fine."}]}"#,
        ),
    ]
    .join("\n");
    let r = import("s.jsonl", text.as_bytes(), &ImportOptions::default()).expect("imports");
    assert_eq!(r.format, "claude-code");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    // msg_A's two block lines are one call even with r1 written between them.
    assert_eq!(t.calls.len(), 2);
    assert_eq!(
        categories(t, &t.calls[0].output),
        [Category::ToolCall, Category::ToolCall]
    );
    assert_eq!(t.calls[0].usage.expect("usage").output_tokens, Some(20));
    assert_eq!(
        categories(t, &t.calls[1].input[3..]),
        [Category::ToolResult, Category::ToolResult]
    );
    assert!(t
        .tool_pairs
        .iter()
        .all(|p| p.call.is_some() && p.result.is_some()));
}

#[test]
fn sniffs_sessions_from_their_first_line_and_leaves_look_alikes_alone() {
    let user = line("u0", None, "user", r#"{"role":"user","content":"Hi"}"#);
    let reply = line(
        "a0",
        Some("u0"),
        "assistant",
        r#"{"id":"msg_1","role":"assistant","model":"claude-opus-4-1","content":[{"type":"text","text":"Hello."}]}"#,
    );
    let firsts = [
        r#"{"type":"file-history-snapshot","messageId":"u0","snapshot":{"messageId":"u0","trackedFileBackups":{},"timestamp":"2025-12-01T10:00:00Z"},"isSnapshotUpdate":false}"#,
        r#"{"type":"summary","summary":"Greeting","leafUuid":"a0"}"#,
        r#"{"type":"queue-operation","operation":"dequeue","timestamp":"2025-12-01T10:00:00Z","sessionId":"s-1"}"#,
    ];
    for first in firsts {
        let text = format!("{first}\n{user}\n{reply}\n");
        let r = import("s.jsonl", text.as_bytes(), &ImportOptions::default()).expect(first);
        assert_eq!(r.format, "claude-code", "{first}");
        assert_eq!(r.traces[0].calls.len(), 1);
    }
    // Gemini CLI's logs.json-like lines: a session id and a type, but no chain.
    let gemini = r#"{"sessionId":"s-1","messageId":0,"type":"user","message":"hi","timestamp":"2025-12-01T10:00:00Z"}
{"sessionId":"s-1","messageId":1,"type":"user","message":"there","timestamp":"2025-12-01T10:00:01Z"}"#;
    let format =
        import("logs.jsonl", gemini.as_bytes(), &ImportOptions::default()).map(|r| r.format);
    assert_ne!(format, Ok("claude-code"));
}

/// The tool call ids of a call's output, in order.
fn tool_call_ids(t: &Trace, ids: &[memlens_core::ChunkId]) -> Vec<String> {
    ids.iter()
        .filter_map(|&i| t.chunk(i).meta.tool_call_id.clone())
        .collect()
}

#[test]
fn parallel_task_calls_off_the_parent_chain_stay_one_call_with_all_results() {
    // Three Task blocks of one response (msg_01PaR7..), each on its own line; each result hangs
    // off its own call's line, written as the agents finished (B, C, A), and the next response
    // hangs off A's result: the walk back from the end passes A only.
    let r = load("parallel-tool-calls.jsonl");
    assert!(
        r.warnings.iter().all(|w| !w.message.contains("abandoned")),
        "{:?}",
        r.warnings
    );
    let t = &r.traces[0];
    assert!(!t.attributes.contains_key("abandoned_branch_lines"));
    let (a, b, c) = (
        "toolu_01Tq8WkP3nVx5RbJ2mLc7AaA",
        "toolu_01Hs4ZpN8cWy2QdK6tMf3BbB",
        "toolu_01Lr6XmQ9dTz7PeV4uNg5CcC",
    );
    assert_eq!(t.calls.len(), 3);
    let first = &t.calls[0];
    assert_eq!(
        categories(t, &first.output),
        [
            Category::Reasoning,
            Category::Assistant,
            Category::ToolCall,
            Category::ToolCall,
            Category::ToolCall
        ]
    );
    assert_eq!(tool_call_ids(t, &first.output), [a, b, c]);
    // The usage of the response's last line, once.
    let u = first.usage.expect("usage");
    assert_eq!(
        (u.input_tokens, u.output_tokens),
        (Some(3 + 2_100 + 15_800), Some(412))
    );
    // The next call's input: the three results as one user message after the calls.
    let second = &t.calls[1];
    let results = &second.input[first.input.len() + first.output.len()..];
    assert_eq!(categories(t, results), [Category::ToolResult; 3]);
    assert!(t.chunk(results[0]).starts_message);
    assert!(results[1..].iter().all(|&i| !t.chunk(i).starts_message));
    let mut answered = tool_call_ids(t, results);
    answered.sort();
    let mut called = vec![a, b, c];
    called.sort();
    assert_eq!(answered, called);
    // Every call has its result, and every agent its spawning call.
    assert_eq!(t.tool_pairs.len(), 5);
    assert!(t
        .tool_pairs
        .iter()
        .all(|p| p.call.is_some() && p.result.is_some()));
    for (agent, call) in [("a2f04d6", a), ("b41e7c2", b), ("c58d913", c)] {
        assert_eq!(t.attributes[&format!("agent_tool_call.{agent}")], call);
    }
    // The interleaved batch (Read, its result, then Grep hung off that result) is one call too.
    assert_eq!(tool_call_ids(t, &second.output).len(), 2);
    // What `memlens convert` writes keeps every call and its result.
    let native = memlens_import::native::write(&r.traces);
    for id in [a, b, c] {
        assert!(native.contains(id), "{id} missing from the native output");
    }
    for result in [
        "gateway.py:88 raises GatewayTimeout",
        "totals.py:57 raises DiscountError",
        "every carrier call in rates.py is wrapped",
    ] {
        assert!(native.contains(result), "{result:?} missing");
    }
}

#[test]
fn a_different_response_off_the_chain_is_still_an_abandoned_branch() {
    let call = |msg: &str, id: &str| {
        format!(
            r#"{{"id":"{msg}","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"tool_use","id":"{id}","name":"Read","input":{{}}}}],"usage":{{"input_tokens":10,"output_tokens":20}}}}"#
        )
    };
    let result = |id: &str| {
        format!(
            r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","content":"ok {id}"}}]}}"#
        )
    };
    let text = [
        line("u0", None, "user", r#"{"role":"user","content":"Read both."}"#),
        // A retried response (msg_X) and its result: a different response, abandoned.
        line("x1", Some("u0"), "assistant", &call("msg_X", "tx")),
        line("xr", Some("x1"), "user", &result("tx")),
        // The kept response (msg_A): two parallel blocks, results hung off each block.
        line("a1", Some("u0"), "assistant", &call("msg_A", "t1")),
        line("a2", Some("a1"), "assistant", &call("msg_A", "t2")),
        line("r2", Some("a2"), "user", &result("t2")),
        line("r1", Some("a1"), "user", &result("t1")),
        line(
            "n1",
            Some("r1"),
            "assistant",
            r#"{"id":"msg_B","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Done."}]}"#,
        ),
    ]
    .join("\n");
    let r = import("s.jsonl", text.as_bytes(), &ImportOptions::default()).expect("imports");
    let t = &r.traces[0];
    assert_eq!(t.attributes["abandoned_branch_lines"], "2");
    assert_eq!(tool_call_ids(t, &t.calls[0].output), ["t1", "t2"]);
    assert_eq!(t.tool_pairs.len(), 2);
    assert!(t.chunks.iter().all(|c| c.content != "ok tx"));
}

const SESSION_21: &str = "c4e8a1f3-5b27-4d90-8e6a-2f1b7c9d3e58";

#[test]
fn a_2_1_session_opening_with_permission_mode_imports_and_links_its_subagent() {
    let r = load("v2.1-permission-mode-first.jsonl");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.id, SESSION_21);
    assert_eq!(t.calls.len(), 2);
    // Lines that hold no conversation are counted per kind, not dropped unseen.
    for (kind, n) in [
        ("permission-mode", "1"),
        ("file-history-snapshot", "1"),
        ("attachment", "1"),
        ("progress", "1"),
        ("system.turn_duration", "1"),
        ("last-prompt", "1"),
        ("ai-title", "1"),
    ] {
        assert_eq!(t.attributes[&format!("ignored_lines.{kind}")], n, "{kind}");
    }
    let read = |name: &str| std::fs::read(fixture(name)).expect("fixture");
    let (session, agent) = (
        read("v2.1-permission-mode-first.jsonl"),
        read("agent-a3d9e51.jsonl"),
    );
    let files = [
        FileInput {
            name: "projects/-home-dev-hooks/c4e8a1f3.jsonl",
            bytes: &session,
        },
        FileInput {
            name: "projects/-home-dev-hooks/c4e8a1f3/subagents/agent-a3d9e51.jsonl",
            bytes: &agent,
        },
    ];
    let results = import_many(&files, &ImportOptions::default());
    let child = &results[1].as_ref().expect("agent imports").traces[0];
    assert_eq!(child.id, format!("{SESSION_21}/agent-a3d9e51"));
    let link = child.parent.as_ref().expect("parent");
    assert_eq!(link.trace, SESSION_21);
    assert_eq!(
        link.tool_call_id.as_deref(),
        Some("toolu_01Wm4Hq7Zs2Nc9Kx5Pd3Vb8J")
    );
    assert_eq!(link.call, Some(0));
}

#[test]
fn sniffing_looks_past_leading_records_no_importer_claims() {
    let user = line("u0", None, "user", r#"{"role":"user","content":"Hi"}"#);
    let reply = line(
        "a0",
        Some("u0"),
        "assistant",
        r#"{"id":"msg_1","role":"assistant","model":"claude-opus-4-5","content":[{"type":"text","text":"Hello."}]}"#,
    );
    // `mode` and `tag` records are Claude Code's, but too plain to name the format alone.
    let text = format!(
        "{}\n{}\n{user}\n{reply}\n",
        r#"{"type":"mode","mode":"normal","sessionId":"s-1"}"#,
        r#"{"type":"tag","tag":"release","sessionId":"s-1"}"#
    );
    let r = import("s.jsonl", text.as_bytes(), &ImportOptions::default()).expect("imports");
    assert_eq!(r.format, "claude-code");
    assert_eq!(r.traces[0].calls.len(), 1);
    assert_eq!(r.traces[0].attributes["ignored_lines.mode"], "1");
    // Generic records with a Claude Code type name but not its fields are not Claude Code.
    let lookalike =
        "{\"type\":\"summary\",\"summary\":\"weekly\"}\n{\"type\":\"mode\",\"mode\":\"normal\"}\n";
    let format =
        import("x.jsonl", lookalike.as_bytes(), &ImportOptions::default()).map(|r| r.format);
    assert_ne!(format, Ok("claude-code"));
    // A file holding only Claude Code metadata records is still named (and has no traces).
    let meta = "{\"type\":\"permission-mode\",\"permissionMode\":\"plan\",\"sessionId\":\"s-1\"}\n\
                {\"type\":\"ai-title\",\"aiTitle\":\"Plan\",\"sessionId\":\"s-1\"}\n";
    let err = import("m.jsonl", meta.as_bytes(), &ImportOptions::default()).expect_err("empty");
    assert!(
        err.to_string()
            .contains("no traces found in this claude-code file"),
        "{err}"
    );
}

#[test]
fn context_edits_unknown_types_and_system_notes_are_accounted_for() {
    let user = line("u0", None, "user", r#"{"role":"user","content":"Hi"}"#);
    let reply = line(
        "a0",
        Some("u0"),
        "assistant",
        r#"{"id":"msg_1","role":"assistant","model":"claude-opus-4-5","content":[{"type":"text","text":"Hello."}]}"#,
    );
    let text = [
        user,
        r#"{"type":"content-replacement","sessionId":"s-1","replacements":[]}"#.to_string(),
        r#"{"type":"content-replacement","sessionId":"s-1","replacements":[]}"#.to_string(),
        r#"{"type":"system","subtype":"microcompact_boundary","uuid":"m1","parentUuid":"u0","sessionId":"s-1","isSidechain":false}"#.to_string(),
        r#"{"type":"system","subtype":"api_error","level":"error","uuid":"e1","parentUuid":"m1","sessionId":"s-1","isSidechain":false}"#.to_string(),
        r#"{"type":"hologram","sessionId":"s-1"}"#.to_string(),
        reply,
    ]
    .join("\n");
    let r = import("s.jsonl", text.as_bytes(), &ImportOptions::default()).expect("imports");
    let messages: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("context edit not applied: 2 content-replacement record(s)")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("context edit not applied: 1 microcompact_boundary record(s)")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("unknown line type \"hologram\": 1 line(s)")),
        "{messages:?}"
    );
    assert_eq!(
        r.traces[0].attributes["ignored_lines.system.api_error"],
        "1"
    );
}

#[test]
fn lines_repeated_by_a_resumed_session_are_read_once_not_called_abandoned() {
    let prompt = line("u0", None, "user", r#"{"role":"user","content":"Hi"}"#);
    let reply = |uuid: &str, parent: &str, msg: &str, text: &str| {
        line(
            uuid,
            Some(parent),
            "assistant",
            &format!(
                r#"{{"id":"{msg}","role":"assistant","model":"claude-opus-4-5","content":[{{"type":"text","text":"{text}"}}]}}"#
            ),
        )
    };
    let text = [
        prompt.clone(),
        reply("a0", "u0", "msg_1", "Hello."),
        // The resumed session copies the conversation so far, then goes on.
        prompt,
        reply("a0", "u0", "msg_1", "Hello."),
        line(
            "u1",
            Some("a0"),
            "user",
            r#"{"role":"user","content":"Bye"}"#,
        ),
        reply("a1", "u1", "msg_2", "Bye."),
    ]
    .join("\n");
    let r = import("s.jsonl", text.as_bytes(), &ImportOptions::default()).expect("imports");
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    assert!(!t.attributes.contains_key("abandoned_branch_lines"));
    assert_eq!(t.attributes["repeated_lines"], "2");
    assert!(r.warnings.iter().any(|w| w
        .message
        .starts_with("2 line(s) repeat the uuid of an earlier line")));
}
