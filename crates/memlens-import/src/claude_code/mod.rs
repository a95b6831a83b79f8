//! Claude Code sessions: `~/.claude/projects/<project>/<session-id>.jsonl`, one JSON object per
//! line, and the subagents' files (`<session-id>/subagents/agent-<agent-id>.jsonl`; `agent-*.jsonl`
//! beside the session in 2.0 versions; `isSidechain` lines inside the session file before that).
//!
//! ```text
//! {"type":"permission-mode","permissionMode":"default","sessionId":"7d3f.."}
//! {"type":"file-history-snapshot","messageId":"m01","snapshot":{..},"isSnapshotUpdate":false}
//! {"type":"user","uuid":"m01","parentUuid":null,"sessionId":"7d3f..","isSidechain":false,
//!  "cwd":"/home/dev/shop","version":"2.0.46","gitBranch":"main","timestamp":"2025-11-19T10:00:00Z",
//!  "message":{"role":"user","content":"The cart total test fails. Can you fix it?"}}
//! {"type":"assistant","uuid":"m02","parentUuid":"m01","requestId":"req_01..",
//!  "message":{"id":"msg_01..","model":"claude-sonnet-4-5-20250929","role":"assistant",
//!   "content":[{"type":"thinking","thinking":".."}],
//!   "usage":{"input_tokens":3,"cache_creation_input_tokens":1200,"cache_read_input_tokens":14000,
//!    "cache_creation":{"ephemeral_5m_input_tokens":1200,"ephemeral_1h_input_tokens":0},
//!    "output_tokens":12}}}
//! {"type":"assistant","uuid":"m03","parentUuid":"m02", ..same message.id, the next block..}
//! {"type":"user","uuid":"m04","parentUuid":"m03","message":{"role":"user","content":[
//!   {"type":"tool_result","tool_use_id":"toolu_..","content":"..","is_error":false}]},
//!  "toolUseResult":{"agentId":"a7c31f2", ..the structured result..}}
//! {"type":"system","subtype":"compact_boundary","uuid":"m05","parentUuid":null,
//!  "logicalParentUuid":"m04","compactMetadata":{"trigger":"auto","preTokens":155025}}
//! {"type":"user","uuid":"m06","parentUuid":"m05","isCompactSummary":true,"message":{..summary..}}
//! ```
//!
//! - **The conversation** is the chain from the last line back along `parentUuid` (and from a
//!   compaction boundary along `logicalParentUuid`), plus what that single-parent walk misses of
//!   a parallel tool batch (see [`chain`]): the other block lines of every API response on the
//!   chain (same `message.id`) and the tool-result lines hung off any of them, right after the
//!   response's last line on the chain, as Claude Code itself reloads them. User and assistant
//!   lines still off the chain are branches abandoned by an edit or a retry: counted (warning and
//!   attribute `abandoned_branch_lines`), left out. Lines repeating an earlier line's `uuid` (a
//!   resumed session's copies) are read once (warning and attribute `repeated_lines`).
//! - **One call per API response.** Claude Code writes one line per content block; lines sharing
//!   `message.id` (else `requestId`) are one assistant message and one call, its usage counted
//!   once: the last line's (the repeated usage grows while the response streams). Cache reads
//!   and writes are added into `input_tokens`; the 5-minute/1-hour cache-write split is summed
//!   per trace in the attributes `cache_write_5m_tokens` / `cache_write_1h_tokens`. Lines Claude
//!   Code wrote itself (`model: "<synthetic>"`, API error notices) are not calls: left out and
//!   counted (`skipped_synthetic_messages`).
//! - **Consecutive user lines are one message** (parallel tool results, as the API receives
//!   them: after the assistant message holding all the calls). A tool result's text is the
//!   `tool_result` block (what the model saw), not the structured `toolUseResult`; results with
//!   `is_error` are counted in `tool_errors`.
//! - **Compactions**: a `compact_boundary` system line (`compactMetadata` / `compact_metadata`:
//!   `trigger`, `preTokens`, `postTokens`) replaces the whole context; the next user line with
//!   `isCompactSummary` is the summary ([`memlens_core::Category::Summary`]).
//! - **Not recorded**: the system prompt and the tool definitions are not in session files, so
//!   reported input exceeds counted input; the attribute `unrecorded` says so. Nor is the text
//!   Claude Code renders from `attachment` lines (hook context, reminders, mentioned files).
//! - **Subagents** are traces of their own, `<session-id>/agent-<agent-id>` (older in-file
//!   sidechains without an agent id: `<session-id>/sidechain-<n>`), whose
//!   [`memlens_core::TraceLink`] names the session. The session trace records which tool call
//!   started each agent (`agent_tool_call.<agent-id>` from `toolUseResult.agentId`); the child
//!   carries `agent_id`; [`crate::link_traces`] joins them (or matches the child's first prompt to
//!   the tool call's `prompt` argument) when files are imported together with
//!   [`crate::import_many`], and within one file on import.
//! - **Lines that hold no conversation** are counted per kind on the file's first trace, in
//!   attributes `ignored_lines.<type>` (`ignored_lines.system.<subtype>` for system notes): the
//!   bookkeeping types of [`lines::BOOKKEEPING`] (titles, file backups, the input queue, hook
//!   progress, attachments, settings) and system lines other than compaction boundaries. Records
//!   by which Claude Code edited the context it sent (`content-replacement`, the context
//!   collapse's `marble-origami-*`, `microcompact_boundary`) are not applied: a warning per kind
//!   says the counted context may exceed what was sent. Unknown line types are warnings.
//!
//! The format is not documented by Anthropic. Sources: the transcript models of
//! `daaain/claude-code-log` (`claude_code_log/models.py`: entry types, `compactMetadata`,
//! `toolUseResult.agentId`, subagent files; `dev-docs/dag.md`: parallel tool-call shapes) and its
//! DAG fixtures (`test/test_data/dag_compact_after_rewind.jsonl`: `logicalParentUuid`,
//! `isCompactSummary`); `ryoppippi/ccusage` (`src/data-loader.ts`, `createUniqueHash`: usage
//! repeated on every line of a response, deduplicated by `message.id` + `requestId`);
//! `chrisguillory/claude-session-mcp` (`CLAUDE.md`: record types and system subtypes); public
//! readers of 2.1 sessions listing the metadata record types (`permission-mode`, `mode`,
//! `worktree-state`, `content-replacement`, ...) and describing Claude Code's own
//! `recoverOrphanedParallelToolResults`.

mod build;
mod chain;
mod lines;

use crate::document::Document;
use crate::error::ImportError;
use crate::json::str_at;
use crate::{Context, Importer};
use memlens_core::{Trace, TraceLink};
use serde_json::Value;

/// The Claude Code session importer.
pub struct ClaudeCode;

const FORMAT: &str = "claude-code";

impl Importer for ClaudeCode {
    fn name(&self) -> &'static str {
        FORMAT
    }

    fn description(&self) -> &'static str {
        "Claude Code session files (~/.claude/projects/*/<session>.jsonl) and subagent files"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_message_line(first) || is_metadata_line(first)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let read = lines::read_lines(doc, cx);
        let lines = &read.lines;
        let (main, sidechains) = chain::partition(lines);
        let session = chain::session_id(lines, &main);
        let mut traces = Vec::new();
        if main.iter().any(|&i| lines[i].is_conversation()) {
            let chain = chain::conversation_chain(lines, &main, cx);
            traces.push(build::build_trace(session.clone(), lines, chain, cx));
        }
        for (n, group) in sidechains.iter().enumerate() {
            if !group.members.iter().any(|&i| lines[i].is_conversation()) {
                continue; // only structural lines, counted when read
            }
            let chain = chain::conversation_chain(lines, &group.members, cx);
            let id = match &group.agent_id {
                Some(agent) => format!("{session}/agent-{agent}"),
                None => format!("{session}/sidechain-{n}"),
            };
            let mut trace = build::build_trace(id, lines, chain, cx);
            if let Some(agent) = &group.agent_id {
                trace.attributes.insert("agent_id".into(), agent.clone());
            }
            trace.parent = Some(TraceLink {
                trace: session.clone(),
                ..TraceLink::default()
            });
            traces.push(trace);
        }
        if let Some(first) = traces.first_mut() {
            for (kind, n) in &read.ignored {
                first
                    .attributes
                    .insert(format!("ignored_lines.{kind}"), n.to_string());
            }
        }
        // Older versions keep subagents in the session file: link them now.
        crate::link_traces(&mut traces.iter_mut().collect::<Vec<_>>());
        Ok(traces)
    }
}

/// A line on the conversation chain (user, assistant, system, progress, attachment, ...): typed,
/// in a session, with a parent or a uuid.
fn is_message_line(v: &Value) -> bool {
    let has = |key: &str| v.get(key).is_some();
    str_at(v, "type").is_some()
        && has("sessionId")
        && (has("parentUuid") || has("uuid") && has("isSidechain"))
}

/// A metadata record with the fields only Claude Code writes together (record shapes as
/// validated by public readers of 2.1 sessions): enough to name a file that holds nothing else,
/// never a generic `{"type": "summary"}` or `{"type": "mode"}` of another format.
fn is_metadata_line(v: &Value) -> bool {
    let has = |key: &str| v.get(key).is_some();
    let session = str_at(v, "sessionId").is_some();
    match str_at(v, "type") {
        Some("summary") => has("summary") && str_at(v, "leafUuid").is_some(),
        Some("file-history-snapshot") => has("messageId") && has("snapshot"),
        Some("queue-operation") => session && has("operation") && has("timestamp"),
        Some("permission-mode") => session && str_at(v, "permissionMode").is_some(),
        Some("custom-title") => session && str_at(v, "customTitle").is_some(),
        Some("ai-title") => session && str_at(v, "aiTitle").is_some(),
        Some("last-prompt") => session && (has("lastPrompt") || has("leafUuid")),
        Some("agent-name") => session && str_at(v, "agentName").is_some(),
        Some("worktree-state") => session && has("worktreeSession"),
        _ => false,
    }
}
