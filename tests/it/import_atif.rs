//! ATIF trajectories (Harbor): calls and metrics, observations, subagents, compactions.

use crate::{import_path, root};
use memlens_core::{Category, ChunkId, Trace};
use memlens_import::{import, import_many, FileInput, Import, ImportOptions};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/atif").join(name)
}

fn load(name: &str) -> Import {
    let r = import_path(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(r.format, "atif", "{name}");
    r
}

fn categories(t: &Trace, ids: &[ChunkId]) -> Vec<Category> {
    ids.iter().map(|&i| t.chunk(i).category).collect()
}

fn contents<'t>(t: &'t Trace, ids: &[ChunkId]) -> Vec<&'t str> {
    ids.iter().map(|&i| t.chunk(i).content.as_str()).collect()
}

/// A call's input as the trajectory records it, without the estimate of what it does not
/// record ([`Category::Unrecorded`]).
fn sent(t: &Trace, call: &memlens_core::Call) -> Vec<ChunkId> {
    let recorded = |i: &&ChunkId| t.chunk(**i).category != Category::Unrecorded;
    call.input.iter().filter(recorded).copied().collect()
}

/// Imports fixtures together, as a run's folder is.
fn load_many(names: &[&str]) -> Vec<Import> {
    let bytes: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(fixture(n)).unwrap_or_else(|e| panic!("{n}: {e}")))
        .collect();
    let files: Vec<FileInput<'_>> = names
        .iter()
        .zip(&bytes)
        .map(|(name, bytes)| FileInput { name, bytes })
        .collect();
    import_many(&files, &ImportOptions::default())
        .into_iter()
        .zip(names)
        .map(|(r, n)| r.unwrap_or_else(|e| panic!("{n}: {e}")))
        .collect()
}

#[test]
fn agent_steps_are_calls_with_their_metrics_as_usage() {
    let r = load("openhands-tool-calls.json");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.id, "harbor-openhands-hello-1");
    assert_eq!(t.model.as_deref(), Some("gpt-5"));
    assert_eq!(t.calls.len(), 3);
    // The step's model overrides the agent's.
    assert!(t
        .calls
        .iter()
        .all(|c| c.model.as_deref() == Some("gpt-5-2025-08-07")));
    let first = &t.calls[0];
    // Tool definitions, system prompt, task, the recall note: all sent before the first call.
    assert_eq!(
        categories(t, &sent(t, first)),
        [
            Category::Other,
            Category::System,
            Category::User,
            Category::System
        ]
    );
    assert_eq!(
        t.chunk(first.input[0]).meta.kind.as_deref(),
        Some("tool_definitions")
    );
    assert_eq!(
        categories(t, &first.output),
        [Category::Reasoning, Category::Assistant, Category::ToolCall]
    );
    // ATIF's prompt_tokens already include the cached tokens (the OpenAI convention).
    let u = t.calls[1].usage.expect("usage");
    assert_eq!(u.input_tokens, Some(325));
    assert_eq!(u.cache_read_tokens, Some(256));
    assert_eq!(u.output_tokens, Some(30));
    assert_eq!(first.usage.and_then(|u| u.reasoning_tokens), Some(40));
    // An empty message adds no empty text chunk: the call's output is its tool call alone.
    assert_eq!(categories(t, &t.calls[1].output), [Category::ToolCall]);
    assert_eq!(t.attributes["reported_cost_usd"], "0.002127");
    assert_eq!(t.attributes["total_prompt_tokens"], "948");
    assert_eq!(t.attributes["agent"], "openhands");
    // System prompt and tools are recorded: nothing is said to be missing.
    assert!(!t.attributes.contains_key("unrecorded"));
}

#[test]
fn observations_pair_with_their_tool_calls_by_id() {
    let r = load("openhands-tool-calls.json");
    let t = &r.traces[0];
    assert_eq!(t.tool_pairs.len(), 3);
    let create = &t.tool_pairs[0];
    assert_eq!(create.id, "call_create_1");
    let result = t.chunk(create.result.expect("answered"));
    assert_eq!(result.category, Category::ToolResult);
    assert_eq!(result.meta.tool_name.as_deref(), Some("str_replace_editor"));
    assert_eq!(
        result.content,
        "File created successfully at: /app/hello.txt"
    );
    let call = t.chunk(create.call.expect("called"));
    assert_eq!(
        call.content,
        r#"{"command":"create","path":"/app/hello.txt","file_text":"Hello, world!"}"#
    );
    // The result is in the next call's input, after the call that asked for it.
    assert!(t.calls[1]
        .input
        .contains(&create.result.expect("the create call's result")));
    // `finish` ends the run: its call is never answered.
    assert_eq!(t.unanswered_calls().count(), 1);
}

#[test]
fn terminus_observations_are_the_next_prompt_and_a_summarization_is_a_compaction() {
    let r = load("terminus-2-summarization.json");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let t = &r.traces[0];
    assert_eq!(t.id, "tb-hello-world-7c1e");
    assert_eq!(t.calls.len(), 4);
    // Terminal output without a source_call_id is sent back as the next user message.
    let second = &t.calls[1];
    let observed = t.chunk(*second.input.last().expect("input"));
    assert_eq!(observed.category, Category::User);
    assert_eq!(observed.meta.kind.as_deref(), Some("observation"));
    assert!(observed.content.starts_with("New Terminal Output:"));
    // Token ids and logprobs are not content.
    assert!(t.chunks.iter().all(|c| !c.content.contains("-0.1")));

    assert_eq!(t.compactions.len(), 1);
    let c = &t.compactions[0];
    assert_eq!(c.first_call, 2);
    // Everything but the first prompt left the context; the handoff prompt is the summary.
    let first_prompt = sent(t, &t.calls[0])[0];
    assert!(!c.replaced.contains(&first_prompt));
    let summary = t.chunk(c.summary.expect("summary"));
    let before: Vec<ChunkId> = (1..summary.id.0).map(ChunkId).collect();
    assert_eq!(c.replaced, before);
    assert_eq!(summary.category, Category::Summary);
    assert!(summary.content.starts_with("Here are the answers"));
    let after = sent(t, &t.calls[2]);
    assert_eq!(after[0], first_prompt);
    assert_eq!(contents(t, &after[1..]), [summary.content.as_str()]);
    // The marker step is not context.
    assert!(t
        .chunks
        .iter()
        .all(|c| !c.content.starts_with("Performed context summarization")));
    assert_eq!(t.attributes["summarizations"], "1");
    assert!(t.attributes["subagent_files"].starts_with(
        "trajectory.summarization-1-summary.json, trajectory.summarization-1-questions.json"
    ));
    let unrecorded = &t.attributes["unrecorded"];
    assert!(unrecorded.contains("system prompt, if any"), "{unrecorded}");
    assert!(unrecorded.contains("questions asked"), "{unrecorded}");
}

#[test]
fn summarization_files_are_subagents_of_the_run() {
    let r = load_many(&[
        "terminus-2-summarization.json",
        "trajectory.summarization-1-summary.json",
    ]);
    let summary = &r[1].traces[0];
    assert_eq!(summary.id, "tb-hello-world-7c1e-summarization-1-summary");
    let link = summary.parent.as_ref().expect("parent");
    assert_eq!(link.trace, "tb-hello-world-7c1e");
    // Started by a system step, not a tool call: no call to link.
    assert_eq!(link.call, None);
    assert_eq!(summary.attributes["summarization_index"], "1");
    // The copied steps are context; only the summary request is a call of this trajectory.
    assert_eq!(summary.calls.len(), 1);
    let call = &summary.calls[0];
    assert_eq!(call.usage.and_then(|u| u.input_tokens), Some(374));
    let copied: Vec<_> = call
        .input
        .iter()
        .map(|&i| t_kind(summary, i))
        .filter(|k| k.as_deref() == Some("copied_context"))
        .collect();
    // Two copied agent turns, a text and a tool call each.
    assert_eq!(copied.len(), 4);
}

fn t_kind(t: &Trace, id: ChunkId) -> Option<String> {
    t.chunk(id).meta.kind.clone()
}

#[test]
fn embedded_subagents_are_traces_linked_to_the_calls_that_started_them() {
    let r = load("embedded-subagents.json");
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let ids: Vec<&str> = r.traces.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "orchestrator-main",
            "orchestrator-main/researcher-1",
            "orchestrator-main/tester-1"
        ]
    );
    let main = &r.traces[0];
    // The dispatch step (llm_call_count 0) is not a call.
    assert_eq!(main.calls.len(), 2);
    let researcher = &r.traces[1];
    let link = researcher.parent.as_ref().expect("parent");
    assert_eq!(link.trace, "orchestrator-main");
    assert_eq!(link.tool_call_id.as_deref(), Some("call_delegate"));
    assert_eq!(link.call, Some(0));
    assert_eq!(researcher.model.as_deref(), Some("gpt-5-mini"));
    assert_eq!(researcher.calls.len(), 2);
    // The tester was started by the dispatch step's tool call, which no call produced.
    let tester = &r.traces[2];
    let link = tester.parent.as_ref().expect("parent");
    assert_eq!(link.tool_call_id.as_deref(), Some("call_tests"));
    assert_eq!(link.call, None);
    assert!(tester.calls.is_empty());
}

#[test]
fn a_replacing_context_management_step_is_a_compaction_of_everything_before() {
    let r = load("embedded-subagents.json");
    let t = &r.traces[0];
    assert_eq!(t.compactions.len(), 1);
    let c = &t.compactions[0];
    assert_eq!(c.first_call, 1);
    let last = &t.calls[1];
    // After a "replace" boundary the context is the tool definitions, the summary and what
    // follows (RFC section VII): the system prompt left too.
    let input = sent(t, last);
    assert_eq!(categories(t, &input), [Category::Other, Category::Summary]);
    assert!(t.chunk(input[1]).content.starts_with("Summary: the user"));
    assert!(c
        .replaced
        .iter()
        .any(|&i| t.chunk(i).category == Category::System));
    assert_eq!(c.summary, Some(input[1]));
    // The dispatch step's tool call is context that no call produced.
    let dispatch = t
        .chunks
        .iter()
        .find(|c| c.meta.tool_call_id.as_deref() == Some("call_tests"))
        .expect("dispatch call");
    assert_eq!(dispatch.category, Category::ToolCall);
    assert!(t.calls.iter().all(|c| !c.output.contains(&dispatch.id)));
}

#[test]
fn a_referenced_subagent_file_links_to_the_parent_call() {
    let r = load_many(&["delegate-parent.json", "delegate-child.json"]);
    let parent = &r[0].traces[0];
    assert_eq!(parent.attributes["subagent_files"], "delegate-child.json");
    assert_eq!(
        parent.attributes["agent_tool_call.delegate-run-3-sub-1"],
        "toolu_01"
    );
    let child = &r[1].traces[0];
    let link = child.parent.as_ref().expect("parent");
    assert_eq!(link.trace, "delegate-run-3");
    assert_eq!(link.tool_call_id.as_deref(), Some("toolu_01"));
    assert_eq!(link.call, Some(0));
    // Alone, the child still names its parent, unlinked to a call.
    let alone = load("delegate-child.json");
    let link = alone.traces[0].parent.as_ref().expect("parent");
    assert_eq!((link.trace.as_str(), link.call), ("delegate-run-3", None));
}

#[test]
fn malformed_steps_are_warnings_and_the_rest_loads() {
    let r = load("malformed.json");
    let t = &r.traces[0];
    let said = |phrase: &str| r.warnings.iter().any(|w| w.message.contains(phrase));
    for phrase in [
        "step 1 (by position) skipped: expected a step object",
        "step 2 skipped: expected a \"source\"",
        "step 3: \"metrics\" on a user step ignored",
        "unknown content part type \"video\"",
        "step 4: unknown step source \"narrator\"",
        "step 5: content is a number",
        "tool call 0 has no \"tool_call_id\"",
        "tool call 1 skipped",
        "tool call 2 skipped",
        "answers tool call \"call_elsewhere\"",
        "observation result 2 skipped",
        "subagent reference without \"trajectory_id\"",
        "\"metrics\" is a string",
        "boundary \"truncate\"",
        "step 8: \"observation\" has no \"results\" list",
        "step 8: \"tool_calls\" is an object",
        "subagent reference \"missing-sub\" matches no embedded trajectory",
        "llm_call_count > 1",
        "metrics of 1 copied or non-LLM agent step",
        "trajectory_id \"dup\" is not unique",
        "embedded subagent 2 skipped: expected an ATIF trajectory object, found a string",
    ] {
        assert!(
            said(phrase),
            "no warning with {phrase:?}: {:#?}",
            r.warnings
        );
    }
    let ids: Vec<&str> = r.traces.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["malformed-1", "malformed-1/dup", "malformed-1/dup-1"]);
    // Steps 5 and 8 are calls; the copied step 6 is not.
    assert_eq!(t.calls.len(), 2);
    assert_eq!(t.calls[0].usage, None);
    let image = t
        .chunks
        .iter()
        .find(|c| c.meta.kind.as_deref() == Some("image"))
        .expect("image part");
    assert_eq!(image.content, "[image: images/step_3.png]");
    // The result for the unnamed call pairs with the id it was given.
    assert!(t
        .tool_pairs
        .iter()
        .any(|p| p.id == "step-5-call-0" && p.call.is_some() && p.result.is_some()));
}

#[test]
fn an_unusable_trajectory_is_an_error_naming_the_file_and_what_was_expected() {
    let err = import_path(&fixture("error-steps-not-an-array.json"))
        .expect_err("error")
        .to_string();
    assert_eq!(
        err,
        "error-steps-not-an-array.json: top level: expected \"steps\" to be an array of step \
         objects, found an object"
    );
    // Forced onto another format's file, the importer says what it expected.
    let options = ImportOptions {
        format: Some("atif".into()),
        ..ImportOptions::default()
    };
    let err = import("chat.json", br#"{"messages": []}"#, &options)
        .expect_err("error")
        .to_string();
    assert!(
        err.contains("expected an ATIF trajectory with a \"steps\" array"),
        "{err}"
    );
}

#[test]
fn the_sniffer_picks_atif_by_marker_or_shape_and_nothing_else() {
    let sniffed = |text: &str| import("t.json", text.as_bytes(), &ImportOptions::default());
    // Without schema_version: the agent object and a first step with id and source.
    let r = sniffed(
        r#"{"agent": {"name": "a", "version": "1"}, "steps": [
            {"step_id": 1, "source": "user", "message": "hi"},
            {"step_id": 2, "source": "agent", "message": "hello"}]}"#,
    )
    .expect("imports");
    assert_eq!(r.format, "atif");
    assert_eq!(r.traces[0].calls.len(), 1);
    // A list of steps alone is not ATIF.
    let other = sniffed(r#"{"steps": [{"step_id": 1, "source": "user"}]}"#);
    assert!(other.map_or(true, |r| r.format != "atif"));
    // JSON Lines of trajectories: one trace each.
    let lines = "{\"schema_version\": \"ATIF-v1.6\", \"session_id\": \"a\", \"agent\": {\"name\": \"x\", \"version\": \"1\"}, \"steps\": [{\"step_id\": 1, \"source\": \"user\", \"message\": \"q\"}]}\n\
                 {\"schema_version\": \"ATIF-v1.6\", \"session_id\": \"b\", \"agent\": {\"name\": \"x\", \"version\": \"1\"}, \"steps\": []}\n";
    let r = sniffed(lines).expect("imports");
    let ids: Vec<&str> = r.traces.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
}
