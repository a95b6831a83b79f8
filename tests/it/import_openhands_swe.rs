//! OpenHands event streams, SWE-agent and mini-swe-agent trajectories.

use crate::{import_path, root};
use memlens_core::cost::PriceTable;
use memlens_core::model::TEXT_ACTION_KIND;
use memlens_core::policy::PolicyConfig;
use memlens_core::simulate::simulate;
use memlens_core::tokens::{TokenCounter, TOKENS_PER_MESSAGE};
use memlens_core::{Category, ChunkId, Trace};
use memlens_import::{import, Import, ImportOptions};
use serde_json::Value;

fn fixture(format: &str, name: &str) -> Import {
    let path = root().join("tests/fixtures").join(format).join(name);
    let r = import_path(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(r.format, format, "{name} sniffed as");
    r
}

fn keys(t: &Trace, ids: &[ChunkId]) -> Vec<String> {
    ids.iter().map(|&i| t.chunk(i).key.clone()).collect()
}

#[test]
fn openhands_v0_condensation_is_a_compaction_with_its_summary() {
    let r = fixture("openhands", "v0-events.json");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 5);
    // The tool definitions and the system prompt open every call, after the unrecorded item:
    // the fixture's reported usage is more than its messages count.
    let input = &t.calls[0].input;
    assert_eq!(t.chunk(input[0]).category, Category::Unrecorded);
    assert_eq!(
        t.chunk(input[1]).meta.kind.as_deref(),
        Some("tool_definitions")
    );
    assert_eq!(t.chunk(input[2]).category, Category::System);
    // A recall observation (microagent knowledge) stays a user chunk marked as recall.
    assert_eq!(t.chunk(input[4]).meta.kind.as_deref(), Some("recall"));

    assert_eq!(t.compactions.len(), 1);
    let c = &t.compactions[0];
    assert_eq!(c.first_call, 2);
    let summary = c.summary.expect("the condensation's summary");
    assert_eq!(t.chunk(summary).category, Category::Summary);
    // The forgotten events leave the context from the first call after the condensation on,
    // and the summary takes their place.
    for &gone in &c.replaced {
        assert!(t.calls[1].input.contains(&gone) || t.calls[1].output.contains(&gone));
        assert!(
            !t.calls[2].input.contains(&gone),
            "{} still sent",
            t.chunk(gone).key
        );
    }
    assert!(t.calls[2].input.contains(&summary));
    assert!(!t.calls[1].input.contains(&summary));
}

#[test]
fn openhands_v1_sdk_events_pair_parallel_calls_and_read_usage() {
    let r = fixture("openhands", "v1-sdk-events.jsonl");
    let t = &r.traces[0];
    assert_eq!(
        t.model.as_deref(),
        Some("anthropic/claude-sonnet-4-5-20250929")
    );
    // One response with two tool calls is one call; both results come back before the next one.
    let out = &t.calls[0].output;
    let cats: Vec<Category> = out.iter().map(|&i| t.chunk(i).category).collect();
    assert_eq!(
        cats,
        [
            Category::Reasoning,
            Category::Assistant,
            Category::ToolCall,
            Category::ToolCall
        ]
    );
    let pairs: Vec<(&str, bool)> = t
        .tool_pairs
        .iter()
        .map(|p| (p.id.as_str(), p.call.is_some() && p.result.is_some()))
        .collect();
    assert_eq!(
        pairs,
        [("c1", true), ("c2", true), ("c3", true), ("c4", true)]
    );
    // Anthropic-style usage: input includes cache reads and writes.
    let u = t.calls[1].usage.expect("usage of call 1");
    assert_eq!(u.cache_read_tokens, Some(1_900));
    assert!(u.input_tokens >= u.cache_read_tokens);
    assert_eq!(t.compactions.len(), 1);
    assert_eq!(t.compactions[0].trigger.as_deref(), Some("context_limit"));
}

#[test]
fn openhands_unknown_events_are_warnings_and_the_rest_loads() {
    for name in ["malformed-events.jsonl", "malformed-sdk.jsonl"] {
        let r = fixture("openhands", name);
        assert!(r.warning_count >= 3, "{name}: {:?}", r.warnings);
        // Every warning names the file and the line.
        for w in &r.warnings {
            let w = w.to_string();
            assert!(w.starts_with(name) && w.contains("line "), "{w}");
        }
        assert!(!r.traces[0].calls.is_empty(), "{name}");
    }
}

#[test]
fn openhands_v1_stream_opening_with_state_events_imports() {
    // A saved conversation opens with its `ConversationStateUpdateEvent`; the stream used to be
    // "not a trace format" (or, forced, "no traces found").
    let r = fixture("openhands", "v1-state-first.jsonl");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    assert_eq!(t.tool_pairs.len(), 1);
    let answer = t.chunk(t.calls[1].output[0]);
    assert_eq!(answer.content, "There are 42 Python files in /w/src.");
    assert!(t.calls[1].input.contains(&t.calls[0].output[1]));
}

/// The tool result paired with `call_id`.
fn tool_result<'a>(t: &'a Trace, call_id: &str) -> &'a str {
    t.chunks
        .iter()
        .find(|c| {
            c.category == Category::ToolResult && c.meta.tool_call_id.as_deref() == Some(call_id)
        })
        .map(|c| c.content.as_str())
        .unwrap_or_else(|| panic!("no result for {call_id}"))
}

#[test]
fn openhands_v0_llm_based_edit_counts_what_the_model_read() {
    // An LLM-based edit stores a git diff as `content`; the model was sent
    // `str(FileEditObservation)`: the numbered before/after hunks (`visualize_diff`), or a note
    // for a new file. Expected text from OpenHands' code run on the same contents (CPython 3.11).
    let r = fixture("openhands", "v0-llm-edit.json");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    let expected = [
        "[Existing file /w/geo.py is edited with 1 changes.]",
        "[begin of edit 1 / 1]",
        "(content before edit)",
        " 3|",
        " 4|def area(r):",
        "-5|    return 3.14 * r * r",
        " 6|",
        " 7|",
        " 8|def perimeter(r):",
        "-9|    return 2 * 3.14 * r",
        "10|",
        "(content after edit)",
        " 3|",
        " 4|def area(r):",
        "+5|    return math.pi * r * r",
        " 6|",
        " 7|",
        " 8|def perimeter(r):",
        "+9|    return 2 * math.pi * r",
        "10|",
        "[end of edit 1 / 1]",
        "",
    ];
    assert_eq!(tool_result(t, "call_9sKd2"), expected.join("\n"));
    assert_eq!(
        tool_result(t, "call_Tq71x"),
        "[New file /w/test_geo.py is created with the provided content.]\n"
    );
    // The ACI editor's edits still send their content (the UI's diff is in `extras.diff`).
    let aci = fixture("openhands", "v0-events.json");
    assert_eq!(
        tool_result(&aci.traces[0], "call_c"),
        "The file /w/calc.py has been edited. Line 2 now reads: return a + b"
    );
}

#[test]
fn swe_agent_traj_is_read_not_refused() {
    // A `.traj` was "not a trace format MemLens reads" before this importer.
    let r = fixture("swe-agent", "history-only.traj");
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 2);
    // The demonstration is context the agent re-sends, marked so; model stats become attributes.
    assert_eq!(
        t.chunk(t.calls[0].input[1]).meta.kind.as_deref(),
        Some("demonstration")
    );
    assert_eq!(t.attributes["tokens_sent"], "2900");
    assert_eq!(t.attributes["api_calls"], "2");
}

#[test]
fn swe_agent_steps_take_each_query_as_the_call_input() {
    // Each trajectory step records the exact query the model saw: history processors may
    // rewrite old observations, and the import follows what was sent, not the raw history.
    let r = fixture("swe-agent", "query-steps.traj");
    let t = &r.traces[0];
    assert_eq!(t.model.as_deref(), Some("claude-3-5-sonnet-20241022"));
    assert_eq!(t.calls.len(), 3);
    assert_eq!(keys(t, &t.calls[0].input), ["m0", "m1", "m2"]);
    let third = keys(t, &t.calls[2].input);
    assert!(third.contains(&"m6".to_string()), "{third:?}");
    assert!(
        !third.contains(&"m4".to_string()),
        "the elided observation is not resent: {third:?}"
    );
    assert_eq!(
        t.chunk(t.calls[2].input[5]).content,
        "Old environment output: (2 lines omitted)"
    );
}

#[test]
fn swe_agent_history_without_trajectory_is_recognised() {
    // Only `history` (no `trajectory` list): it used to be "not a trace format".
    let r = fixture("swe-agent", "history-without-trajectory.traj");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 3);
    assert_eq!(t.tool_pairs.len(), 3);
    assert_eq!(t.attributes["api_calls"], "3");
}

#[test]
fn swe_agent_final_step_missing_from_history_is_kept_or_explained() {
    // The submit step is in `trajectory` only (as in SWE-agent's own test trajectory): it was a
    // model call, and used to be dropped without a word.
    let r = fixture("swe-agent", "final-step-missing.traj");
    assert_eq!(r.warning_count, 1, "{:?}", r.warnings);
    assert!(r.warnings[0]
        .message
        .starts_with("trajectory step not in history: step 2 (submit) kept as a call"));
    let t = &r.traces[0];
    assert_eq!(t.calls.len(), 3, "api_calls is 3");
    let last = t.calls.last().expect("calls");
    assert_eq!(
        t.chunk(last.output[0]).content,
        "The colon is in place and the script runs. I will now submit the changes."
    );
    assert_eq!(last.input.len(), 8, "the whole history is its input");

    // SWE-agent 0.x ending at the cost limit: the last step had no model response.
    let r = fixture("swe-agent", "exit-cost-step.traj");
    assert_eq!(r.warning_count, 1, "{:?}", r.warnings);
    assert!(r.warnings[0].message.contains(
        "step 1 (exit_cost, \"Exit due to cost limit\") ended the run without a model response"
    ));
    assert_eq!(r.traces[0].calls.len(), 1);
}

#[test]
fn mini_swe_agent_reads_both_trajectory_versions_with_usage() {
    let v1 = fixture("mini-swe-agent", "v1-text.traj.json");
    let t = &v1.traces[0];
    assert_eq!(t.attributes["trajectory_format"], "mini-swe-agent-1");
    assert_eq!(t.calls.len(), 3);
    let u = t.calls[1].usage.expect("usage");
    assert_eq!(
        (u.input_tokens, u.cache_read_tokens),
        (Some(1_620), Some(1_500))
    );

    let v2 = fixture("mini-swe-agent", "v2-toolcall.traj.json");
    let t = &v2.traces[0];
    assert_eq!(t.tool_pairs.len(), 3);
    assert!(t
        .tool_pairs
        .iter()
        .all(|p| p.call.is_some() && p.result.is_some()));
}

#[test]
fn format_override_reads_a_file_sniffing_would_not() {
    // `--format swe-agent` on a trajectory with nothing but a history list still imports.
    let bytes = br#"{"history": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]}"#;
    let options = ImportOptions {
        format: Some("swe-agent".into()),
        ..ImportOptions::default()
    };
    let r = import("x.json", bytes, &options).expect("forced swe-agent import");
    assert_eq!(r.format, "swe-agent");
    assert_eq!(r.traces[0].calls.len(), 1);
}

/// The `action-*` pairs of a trace (text actions: no native id starts so): id, the action as
/// the model wrote it, its output when one came back.
fn text_pairs(t: &Trace) -> Vec<(String, String, Option<String>)> {
    t.tool_pairs
        .iter()
        .filter(|p| p.id.starts_with("action-"))
        .map(|p| {
            let call = t.chunk(p.call.expect("every text action pair has its call"));
            assert_eq!(call.category, Category::ToolCall);
            assert_eq!(
                call.meta.kind.as_deref(),
                Some(TEXT_ACTION_KIND),
                "{}",
                p.id
            );
            assert_eq!(call.meta.tool_name.as_deref(), Some("bash"));
            let result = p.result.map(|r| {
                let r = t.chunk(r);
                // The output keeps the user message's framing: it starts that message.
                assert!(r.starts_message && r.meta.role.as_deref() == Some("user"));
                r.content.clone()
            });
            (p.id.clone(), call.content.clone(), result)
        })
        .collect()
}

fn source(format: &str, name: &str) -> Value {
    let path = root().join("tests/fixtures").join(format).join(name);
    serde_json::from_slice(&std::fs::read(&path).expect("fixture")).expect("JSON")
}

/// Tokens of a chat message counted whole, as the import counted it before actions were split
/// out of replies and outputs made results: its text and the message framing.
fn whole(counter: &TokenCounter, m: &Value) -> u64 {
    let text = |k: &str| counter.count(m[k].as_str().unwrap_or_default());
    u64::from(TOKENS_PER_MESSAGE + text("role") + text("content"))
}

/// What a call's chunks count (the unrecorded item, an estimate from usage, left out).
fn counted(t: &Trace, ids: &[ChunkId]) -> u64 {
    ids.iter()
        .map(|&i| t.chunk(i))
        .filter(|c| c.category != Category::Unrecorded)
        .map(|c| u64::from(c.tokens))
        .sum()
}

/// Every call of a message-list trace (one per assistant message but demonstrations) counts,
/// input and output, what its messages counted whole: within 2 tokens (a cut inside a BPE piece; the cuts the importers make keep every piece).
fn assert_counts_as_whole(t: &Trace, messages: &[&Value]) {
    let counter = TokenCounter::for_model(t.main_model());
    let replies = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m["role"] == "assistant" && m.get("is_demo").is_none());
    assert_eq!(replies.clone().count(), t.calls.len(), "{}", t.id);
    for ((i, reply), call) in replies.zip(&t.calls) {
        let input: u64 = messages[..i].iter().map(|m| whole(&counter, m)).sum();
        let (got_in, got_out) = (counted(t, &call.input), counted(t, &call.output));
        let out = whole(&counter, reply);
        assert!(
            input.abs_diff(got_in) <= 2 && out.abs_diff(got_out) <= 2,
            "{} call {}: input {got_in} (whole {input}), output {got_out} (whole {out})",
            t.id,
            call.index
        );
    }
}

#[test]
fn mini_swe_agent_text_actions_pair_with_their_outputs() {
    let r = fixture("mini-swe-agent", "v1-text-format-error-timeout.traj.json");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    let pairs = text_pairs(t);
    let ids: Vec<&str> = pairs.iter().map(|p| p.0.as_str()).collect();
    // Message 4 wrote two blocks: the scaffold ran neither, and its format error (message 5)
    // answers the reply, not an action.
    assert_eq!(
        ids,
        ["action-2", "action-6", "action-8", "action-10", "action-12"]
    );
    assert_eq!(
        pairs[0].1, "```bash\ngrep -rn \"def mean\" stats/\n```",
        "the block as written"
    );
    let outputs: Vec<&str> = pairs.iter().map(|p| p.2.as_deref().unwrap_or("")).collect();
    assert!(outputs[0].starts_with("<returncode>0</returncode>\n<output>\nstats/core.py:4"));
    assert!(outputs[2].starts_with("The last command <command>python -m pytest -q tests/"));
    // v1 writes the submission (the command's output less its first line) as the last message.
    assert!(outputs[4].starts_with("diff --git a/stats/core.py"));
    assert_eq!(t.unanswered_calls().count(), 0);
    let format_error = t
        .chunks
        .iter()
        .find(|c| {
            c.content
                .starts_with("Please always provide EXACTLY ONE action")
        })
        .expect("the format error");
    assert_eq!(format_error.category, Category::User);
    let two_blocks = t
        .chunks
        .iter()
        .find(|c| c.content.contains("Then:"))
        .expect("message 4");
    assert_eq!(two_blocks.category, Category::Assistant);
    // Text after the block stays the assistant's text, after the action.
    let after = t
        .chunks
        .iter()
        .find(|c| c.content.starts_with("The suite is small"));
    assert_eq!(
        after.map(|c| (c.category, c.key.as_str())),
        Some((Category::Assistant, "m8.2"))
    );

    let raw = source("mini-swe-agent", "v1-text-format-error-timeout.traj.json");
    let messages: Vec<&Value> = raw["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .collect();
    assert_counts_as_whole(t, &messages);
}

#[test]
fn mini_swe_agent_v2_text_outputs_are_the_ones_it_marked() {
    let r = fixture("mini-swe-agent", "v2-text.traj.json");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    let pairs = text_pairs(t);
    let ids: Vec<&str> = pairs.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        ids,
        ["action-2", "action-5", "action-7", "action-9", "action-11"]
    );
    assert_eq!(pairs[1].1, "```mswea_bash_command\ncat text/slug.py\n```");
    // The timeout is the command's output (`<exception>`, returncode -1).
    assert!(pairs[2]
        .2
        .as_deref()
        .is_some_and(|o| o.starts_with("<exception>")));
    // The submit command's output ended the run (`role: "exit"`, never sent): no result.
    assert_eq!(pairs[4].2, None);
    assert_eq!(t.unanswered_calls().count(), 1);
    // The format error (`extra.interrupt_type`) stays the user message it is.
    let format_error = t
        .chunks
        .iter()
        .find(|c| c.content.starts_with("Please always"));
    assert_eq!(format_error.map(|c| c.category), Some(Category::User));

    let raw = source("mini-swe-agent", "v2-text.traj.json");
    let messages: Vec<&Value> = raw["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .collect();
    assert_counts_as_whole(t, &messages);
    // The v1 fixture from before this import split actions: every call still counts as whole.
    let v1 = fixture("mini-swe-agent", "v1-text.traj.json");
    assert_eq!(text_pairs(&v1.traces[0]).len(), 3);
    let raw = source("mini-swe-agent", "v1-text.traj.json");
    let messages: Vec<&Value> = raw["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .collect();
    assert_counts_as_whole(&v1.traces[0], &messages);
}

#[test]
fn swe_agent_thought_action_history_pairs_each_action_with_its_observation() {
    // SWE-agent 0.x: the demonstration's block is prompt text; the run's own steps are actions.
    let r = fixture("swe-agent", "history-only.traj");
    let t = &r.traces[0];
    let pairs = text_pairs(t);
    assert_eq!(pairs.len(), 2);
    assert_eq!(pairs[0].1, "```\nopen calc.py\n```");
    assert!(pairs[0]
        .2
        .as_deref()
        .is_some_and(|o| o.starts_with("[File: /repo/calc.py")));
    assert_eq!(
        pairs[1],
        ("action-1".into(), "```\nsubmit\n```".into(), None)
    );
    assert_eq!(t.chunk(t.calls[0].input[2]).category, Category::Assistant);
    let raw = source("swe-agent", "history-only.traj");
    let history: Vec<&Value> = raw["history"].as_array().expect("history").iter().collect();
    assert_counts_as_whole(t, &history);
}

#[test]
fn swe_agent_thought_action_queries_keep_one_result_per_action() {
    // SWE-agent 1.x without function calling, each step's query recorded; the history
    // processor elided the first output in the third query.
    let r = fixture("swe-agent", "thought-action-queries.traj");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    let pairs = text_pairs(t);
    let ids: Vec<&str> = pairs.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(ids, ["action-0", "action-1", "action-2"]);
    assert!(pairs[0]
        .2
        .as_deref()
        .is_some_and(|o| o.starts_with("OBSERVATION:\ndef add")));
    // No query sent the submit's output.
    assert_eq!(pairs[2].2, None);
    assert_eq!(t.orphan_results().count(), 0);
    // The elided output is resent as the user message it is; the call it answers is resent too.
    let third = &t.calls[2].input;
    let elided = third
        .iter()
        .map(|&i| t.chunk(i))
        .find(|c| c.content.starts_with("Old environment output"))
        .expect("the elided output");
    assert_eq!(elided.category, Category::User);
    let first_call = t.tool_pairs[0].call.expect("call");
    assert!(third.contains(&first_call));

    let raw = source("swe-agent", "thought-action-queries.traj");
    let counter = TokenCounter::for_model(t.main_model());
    let steps = raw["trajectory"].as_array().expect("steps");
    let replies = raw["history"].as_array().expect("history").iter();
    let replies = replies.filter(|m| m["role"] == "assistant");
    for ((step, reply), call) in steps.iter().zip(replies).zip(&t.calls) {
        let query = step["query"].as_array().expect("query");
        let input: u64 = query.iter().map(|m| whole(&counter, m)).sum();
        assert_eq!(counted(t, &call.input), input, "call {}", call.index);
        assert_eq!(counted(t, &call.output), whole(&counter, reply));
    }
}

#[test]
fn text_format_runs_replay_at_a_budget_above_them_untouched() {
    let prices = PriceTable::builtin();
    let window = PolicyConfig::builtin("window").expect("built-in");
    for (format, name) in [
        ("mini-swe-agent", "v1-text.traj.json"),
        ("mini-swe-agent", "v1-text-format-error-timeout.traj.json"),
        ("mini-swe-agent", "v2-text.traj.json"),
        ("swe-agent", "history-only.traj"),
        ("swe-agent", "thought-action-queries.traj"),
    ] {
        let r = fixture(format, name);
        let report = simulate(&r.traces, &window, 1_000_000, &prices).expect("simulates");
        let totals = &report.totals;
        assert_eq!((totals.saved_tokens, totals.violations), (0, 0), "{name}");
    }
}

#[test]
fn mini_swe_agent_tool_calling_runs_have_no_text_actions() {
    // The real runs (gzipped, tool-calling format) import as they did before actions written
    // in text were split out: their calls are the native ones, and every output pairs with one.
    let dir = root().join("../shared/data/traces/mini-swe-agent-deepseek");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (the real data sits at ../shared)", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(files.len() >= 90, "{} files", files.len());
    for path in files {
        let r = import_path(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for t in &r.traces {
            assert!(
                t.chunks
                    .iter()
                    .all(|c| c.meta.kind.as_deref() != Some(TEXT_ACTION_KIND)),
                "{}",
                t.id
            );
            assert!(t.tool_pairs.iter().all(|p| !p.id.starts_with("action-")));
            let tool_messages = t
                .chunks
                .iter()
                .filter(|c| c.meta.role.as_deref() == Some("tool"));
            let results = t
                .chunks
                .iter()
                .filter(|c| c.category == Category::ToolResult);
            assert_eq!(tool_messages.count(), results.count(), "{}", t.id);
        }
    }
}
