//! Claude Code sessions: `~/.claude/projects/<project>/<session-id>.jsonl`, one JSON object per
//! line, and the subagents' files (`<session-id>/subagents/agent-<agent-id>.jsonl`; `agent-*.jsonl`
//! beside the session in 2.0 versions; `isSidechain` lines inside the session file before that).
//!
//! ```text
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
//!   compaction boundary along `logicalParentUuid`). User and assistant lines off that chain are
//!   branches abandoned by an edit or a retry: counted (warning and attribute
//!   `abandoned_branch_lines`), left out. A tool-result line hung off the assistant line holding
//!   its tool call (rather than off the previous line) is kept.
//! - **One call per API response.** Claude Code writes one line per content block; lines sharing
//!   `message.id` (else `requestId`) are one assistant message and one call, its usage counted
//!   once: the last line's (the repeated usage grows while the response streams). Cache reads
//!   and writes are added into `input_tokens`; the 5-minute/1-hour cache-write split is summed
//!   per trace in the attributes `cache_write_5m_tokens` / `cache_write_1h_tokens`. Lines Claude
//!   Code wrote itself (`model: "<synthetic>"`, API error notices) are not calls: left out.
//! - **Consecutive user lines are one message** (parallel tool results, as the API receives
//!   them). A tool result's text is the `tool_result` block (what the model saw), not the
//!   structured `toolUseResult`; results with `is_error` are counted in `tool_errors`.
//! - **Compactions**: a `compact_boundary` system line (`compactMetadata` / `compact_metadata`:
//!   `trigger`, `preTokens`, `postTokens`) replaces the whole context; the next user line with
//!   `isCompactSummary` is the summary ([`Category::Summary`]).
//! - **Not recorded**: the system prompt and the tool definitions are not in session files, so
//!   reported input exceeds counted input; the attribute `unrecorded` says so.
//! - **Subagents** are traces of their own, `<session-id>/agent-<agent-id>` (older in-file
//!   sidechains without an agent id: `<session-id>/sidechain-<n>`), whose
//!   [`memlens_core::TraceLink`] names the session. The session trace records which tool call
//!   started each agent (`agent_tool_call.<agent-id>` from `toolUseResult.agentId`); the child
//!   carries `agent_id`; [`crate::link_traces`] joins them (or matches the child's first prompt to
//!   the tool call's `prompt` argument) when files are imported together with
//!   [`crate::import_many`], and within one file on import.
//! - Bookkeeping lines (`summary`, `file-history-snapshot`, `queue-operation`, `progress`, ...)
//!   are ignored; unknown line types are warnings.
//!
//! The format is not documented by Anthropic. Sources: the transcript models of
//! `daaain/claude-code-log` (`claude_code_log/models.py`: entry types, `compactMetadata`,
//! `toolUseResult.agentId`, subagent files) and its DAG fixtures
//! (`test/test_data/dag_compact_after_rewind.jsonl`: `logicalParentUuid`, `isCompactSummary`);
//! `ryoppippi/ccusage` (`src/data-loader.ts`, `createUniqueHash`: usage repeated on every line of
//! a response, deduplicated by `message.id` + `requestId`); `chrisguillory/claude-session-mcp`
//! (`CLAUDE.md`: record types and system subtypes).

use crate::anthropic::{parse_message, parse_usage};
use crate::document::Document;
use crate::error::source_pos;
use crate::error::{ImportError, Location};
use crate::json::{str_at, type_name, u64_at};
use crate::{Context, Importer};
use memlens_core::builder::{CallInfo, CompactionInfo, Message, Part, Role, TraceBuilder};
use memlens_core::{Category, Trace, TraceLink, Usage};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The Claude Code session importer.
pub struct ClaudeCode;

const FORMAT: &str = "claude-code";

/// Why reported input tokens exceed the counted ones.
const UNRECORDED: &str =
    "system prompt and tool definitions (not written to Claude Code session files)";

/// Line types that hold no conversation: session titles, file backups, the input queue, hook
/// progress, attachments and settings. Ignored without a warning.
const BOOKKEEPING: &[&str] = &[
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "attachment",
    "ai-title",
    "custom-title",
    "tag",
    "agent-name",
    "agent-setting",
    "last-prompt",
    "pr-link",
    "mode",
    "permission-mode",
];

impl Importer for ClaudeCode {
    fn name(&self) -> &'static str {
        FORMAT
    }

    fn description(&self) -> &'static str {
        "Claude Code session files (~/.claude/projects/*/<session>.jsonl) and subagent files"
    }

    fn sniff(&self, first: &Value) -> bool {
        let has = |key: &str| first.get(key).is_some();
        match str_at(first, "type") {
            Some("summary") => has("leafUuid"),
            Some("file-history-snapshot") => has("snapshot") || has("messageId"),
            Some("queue-operation") => has("operation") && has("sessionId"),
            Some(_) => has("sessionId") && (has("parentUuid") || has("uuid") && has("isSidechain")),
            None => false,
        }
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let lines = read_lines(doc, cx);
        let (main, sidechains) = partition(&lines);
        let session = session_id(&lines, &main);
        let mut traces = Vec::new();
        if main.iter().any(|&i| lines[i].is_conversation()) {
            let chain = conversation_chain(&lines, &main, cx);
            traces.push(build_trace(session.clone(), &lines, chain, cx));
        }
        for (n, group) in sidechains.iter().enumerate() {
            if !group.members.iter().any(|&i| lines[i].is_conversation()) {
                continue;
            }
            let chain = conversation_chain(&lines, &group.members, cx);
            let id = match &group.agent_id {
                Some(agent) => format!("{session}/agent-{agent}"),
                None => format!("{session}/sidechain-{n}"),
            };
            let mut trace = build_trace(id, &lines, chain, cx);
            if let Some(agent) = &group.agent_id {
                trace.attributes.insert("agent_id".into(), agent.clone());
            }
            trace.parent = Some(TraceLink {
                trace: session.clone(),
                ..TraceLink::default()
            });
            traces.push(trace);
        }
        // Older versions keep subagents in the session file: link them now.
        crate::link_traces(&mut traces.iter_mut().collect::<Vec<_>>());
        Ok(traces)
    }
}

/// What a line contributes, once parsed.
enum Content {
    /// A prompt, tool results, or the summary after a compaction.
    User(UserLine),
    /// One content block (or more) of one API response.
    Assistant(AssistantLine),
    /// A `compact_boundary`: the context was replaced by the summary that follows.
    Compaction(CompactionInfo),
    /// On the `parentUuid` chain but never sent to the model (system notes, hook progress...).
    Structural,
}

struct UserLine {
    message: Message,
    /// A subagent reported by a Task/Agent result (`toolUseResult.agentId`), with the tool call id.
    spawned: Option<(String, String)>,
    /// `tool_result` blocks with `is_error: true`.
    tool_errors: usize,
}

struct AssistantLine {
    /// `message.id`, else `requestId`: the lines of one API response share it.
    response: Option<String>,
    model: Option<String>,
    parts: Vec<Part>,
    usage: Option<ReportedUsage>,
    /// Written by Claude Code itself (`<synthetic>` model, API error notices): no API call.
    synthetic: bool,
}

/// Usage as reported, with the cache-write split by lifetime when given.
#[derive(Debug, Clone, Copy, Default)]
struct ReportedUsage {
    usage: Usage,
    write_5m: Option<u64>,
    write_1h: Option<u64>,
}

/// Where the session ran, as the lines say.
#[derive(Default)]
struct Origin {
    session_id: Option<String>,
    cwd: Option<String>,
    version: Option<String>,
    git_branch: Option<String>,
}

struct Line {
    location: Location,
    /// `uuid`, or `#<record>` for a line without one.
    key: String,
    /// `parentUuid` (a compaction boundary: `logicalParentUuid`).
    parent: Option<String>,
    timestamp: Option<String>,
    sidechain: bool,
    agent_id: Option<String>,
    origin: Origin,
    content: Content,
}

impl Line {
    fn is_conversation(&self) -> bool {
        !matches!(self.content, Content::Structural)
    }
}

fn read_lines(doc: Document<'_>, cx: &mut Context<'_>) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    // Unknown line types: how many, and where the first one is.
    let mut unknown: BTreeMap<String, (usize, Location)> = BTreeMap::new();
    for item in doc.into_records() {
        let Some((location, record)) = cx.accept(item) else {
            continue;
        };
        if !record.is_object() {
            cx.warn(
                location,
                format!(
                    "skipped: expected a JSON object, found {}",
                    type_name(&record)
                ),
            );
            continue;
        }
        let content = match str_at(&record, "type") {
            Some("user") => user_content(&record, location, cx),
            Some("assistant") => assistant_content(&record, location, cx),
            Some("system") => system_content(&record, location),
            Some(kind) => {
                if !BOOKKEEPING.contains(&kind) {
                    unknown.entry(kind.to_string()).or_insert((0, location)).0 += 1;
                }
                Content::Structural
            }
            None => {
                cx.warn(location, "line without a \"type\" ignored");
                Content::Structural
            }
        };
        let uuid = str_at(&record, "uuid");
        if uuid.is_none() && matches!(content, Content::Structural) {
            continue; // not on the chain
        }
        let parent = match record.get("parentUuid") {
            Some(Value::String(p)) => Some(p.clone()),
            Some(_) => str_at(&record, "logicalParentUuid").map(str::to_string),
            // Exports without the chain fields: file order.
            None => lines.last().map(|l| l.key.clone()),
        };
        let text = |key: &str| str_at(&record, key).map(str::to_string);
        lines.push(Line {
            location,
            key: uuid.map_or_else(
                || format!("#{}", location.record.unwrap_or(0)),
                str::to_string,
            ),
            parent,
            timestamp: text("timestamp"),
            sidechain: record.get("isSidechain").and_then(Value::as_bool) == Some(true),
            agent_id: text("agentId"),
            origin: Origin {
                session_id: text("sessionId"),
                cwd: text("cwd"),
                version: text("version"),
                git_branch: text("gitBranch"),
            },
            content,
        });
    }
    for (kind, (n, location)) in unknown {
        cx.warn(
            location,
            format!("{n} line(s) of unknown type {kind:?} ignored"),
        );
    }
    lines
}

/// The `message` object of a user or assistant line, parsed; `None` (with a warning) when absent.
fn line_message(
    record: &Value,
    role: &str,
    location: Location,
    cx: &mut Context<'_>,
) -> Option<Message> {
    let Some(m) = record.get("message").filter(|m| m.is_object()) else {
        cx.warn(
            location,
            format!(
                "{role} line without a \"message\" object ({}): not part of the conversation",
                record.get("message").map_or("missing", type_name)
            ),
        );
        return None;
    };
    if let Some(message) = parse_message(m, location, cx) {
        return Some(message);
    }
    // No string role: the line type says it.
    let mut with_role = m.clone();
    with_role["role"] = Value::String(role.to_string());
    parse_message(&with_role, location, cx)
}

fn user_content(record: &Value, location: Location, cx: &mut Context<'_>) -> Content {
    let Some(mut message) = line_message(record, "user", location, cx) else {
        return Content::Structural;
    };
    if record.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
        message.category = Some(Category::Summary);
    }
    message.meta.timestamp = str_at(record, "timestamp").map(str::to_string);
    message.meta.source = Some(source_pos(location));
    let blocks = record
        .pointer("/message/content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let results = || {
        blocks
            .iter()
            .filter(|b| str_at(b, "type") == Some("tool_result"))
    };
    let tool_errors = results()
        .filter(|b| b.get("is_error").and_then(Value::as_bool) == Some(true))
        .count();
    // `toolUseResult.agentId` in session files; a top-level `agentId` on a main-chain line in
    // exports that copied it up (claude-code-log's).
    let agent = record
        .pointer("/toolUseResult/agentId")
        .and_then(Value::as_str)
        .or_else(|| {
            let sidechain = record.get("isSidechain").and_then(Value::as_bool) == Some(true);
            str_at(record, "agentId").filter(|_| !sidechain)
        });
    let spawned = agent.and_then(|agent| {
        let call = results().find_map(|b| str_at(b, "tool_use_id"))?;
        Some((agent.to_string(), call.to_string()))
    });
    Content::User(UserLine {
        message,
        spawned,
        tool_errors,
    })
}

fn assistant_content(record: &Value, location: Location, cx: &mut Context<'_>) -> Content {
    let Some(message) = line_message(record, "assistant", location, cx) else {
        return Content::Structural;
    };
    let m = &record["message"];
    let model = str_at(m, "model").map(str::to_string);
    let synthetic = model.as_deref() == Some("<synthetic>")
        || record.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true);
    let usage = match m.get("usage") {
        None | Some(Value::Null) => None,
        Some(u) if u.is_object() => Some(reported_usage(u)),
        Some(other) => {
            cx.warn(
                location,
                format!(
                    "\"usage\" is {}, expected an object: ignored",
                    type_name(other)
                ),
            );
            None
        }
    };
    Content::Assistant(AssistantLine {
        response: str_at(m, "id")
            .or_else(|| str_at(record, "requestId"))
            .map(str::to_string),
        model,
        parts: message.parts,
        usage,
        synthetic,
    })
}

/// Anthropic usage; the cache-write total from the 5m/1h split when only the split is given.
fn reported_usage(u: &Value) -> ReportedUsage {
    let mut usage = parse_usage(u);
    let split = u.get("cache_creation");
    let write_5m = split.and_then(|s| u64_at(s, "ephemeral_5m_input_tokens"));
    let write_1h = split.and_then(|s| u64_at(s, "ephemeral_1h_input_tokens"));
    if usage.cache_write_tokens.is_none() && (write_5m.is_some() || write_1h.is_some()) {
        let written = write_5m.unwrap_or(0).saturating_add(write_1h.unwrap_or(0));
        usage.cache_write_tokens = Some(written);
        usage.input_tokens = usage.input_tokens.map(|n| n.saturating_add(written));
    }
    usage.reasoning_tokens = u
        .pointer("/output_tokens_details/thinking_tokens")
        .and_then(crate::json::as_u64);
    ReportedUsage {
        usage,
        write_5m,
        write_1h,
    }
}

fn system_content(record: &Value, location: Location) -> Content {
    if str_at(record, "subtype") != Some("compact_boundary") {
        return Content::Structural;
    }
    let meta = record
        .get("compactMetadata")
        .or_else(|| record.get("compact_metadata"))
        .unwrap_or(&Value::Null);
    Content::Compaction(CompactionInfo {
        trigger: str_at(meta, "trigger").map(str::to_string),
        timestamp: str_at(record, "timestamp").map(str::to_string),
        reported_tokens_before: u64_at(meta, "preTokens"),
        reported_tokens_after: u64_at(meta, "postTokens"),
        source: Some(source_pos(location)),
        ..CompactionInfo::default()
    })
}

/// Lines of one subagent.
struct Sidechain {
    agent_id: Option<String>,
    members: Vec<usize>,
}

/// Splits the lines into the main session's and each subagent's (by `agentId`; without one, by
/// the root of the sidechain's chain), in file order.
fn partition(lines: &[Line]) -> (Vec<usize>, Vec<Sidechain>) {
    let index = key_index(lines, 0..lines.len());
    let mut main = Vec::new();
    let mut groups: Vec<Sidechain> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut roots: HashMap<usize, usize> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.sidechain {
            main.push(i);
            continue;
        }
        let key = match &line.agent_id {
            Some(agent) => format!("agent {agent}"),
            None => {
                // Parents come first in the file: their root is known.
                let root = match line.parent.as_deref().and_then(|p| index.get(p)) {
                    Some(&p) if lines[p].sidechain => roots.get(&p).copied().unwrap_or(p),
                    _ => i,
                };
                roots.insert(i, root);
                format!("root {}", lines[root].key)
            }
        };
        let n = *by_key.entry(key).or_insert_with(|| {
            groups.push(Sidechain {
                agent_id: line.agent_id.clone(),
                members: Vec::new(),
            });
            groups.len() - 1
        });
        groups[n].members.push(i);
    }
    (main, groups)
}

/// Line index by key (the first line with a key wins: resumed sessions repeat lines).
fn key_index(lines: &[Line], members: impl IntoIterator<Item = usize>) -> HashMap<&str, usize> {
    let mut index = HashMap::new();
    for i in members {
        index.entry(lines[i].key.as_str()).or_insert(i);
    }
    index
}

/// The session id of the main lines (else of any line).
fn session_id(lines: &[Line], main: &[usize]) -> String {
    main.iter()
        .rev()
        .map(|&i| &lines[i])
        .chain(lines.iter())
        .find_map(|l| l.origin.session_id.clone())
        .unwrap_or_else(|| FORMAT.to_string())
}

/// The conversation of a group of lines, in order: the chain from its last line back to its root.
struct Chain {
    lines: Vec<usize>,
    /// User and assistant lines left on abandoned branches.
    abandoned: usize,
}

fn conversation_chain(lines: &[Line], members: &[usize], cx: &mut Context<'_>) -> Chain {
    let index = key_index(lines, members.iter().copied());
    let Some(&leaf) = members
        .iter()
        .rev()
        .find(|&&i| lines[i].is_conversation())
        .or(members.last())
    else {
        return Chain {
            lines: Vec::new(),
            abandoned: 0,
        };
    };
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut at = Some(leaf);
    while let Some(i) = at {
        if !seen.insert(i) {
            cx.warn(lines[i].location, "the parentUuid chain loops here: cut");
            break;
        }
        chain.push(i);
        at = lines[i].parent.as_deref().and_then(|p| {
            let found = index.get(p).copied();
            if found.is_none() && !lines.iter().any(|l| l.key == p) {
                cx.warn(
                    lines[i].location,
                    format!("the conversation starts here: its parent {p:?} is not in this file"),
                );
            }
            found
        });
    }
    chain.reverse();
    let chain = with_hung_tool_results(lines, members, chain);
    let on_chain: HashSet<usize> = chain.iter().copied().collect();
    let abandoned = members
        .iter()
        .filter(|&&i| !on_chain.contains(&i))
        .filter(|&&i| matches!(lines[i].content, Content::User(_) | Content::Assistant(_)))
        .count();
    if abandoned > 0 {
        cx.warn(
            lines[leaf].location,
            format!(
                "{abandoned} user/assistant line(s) on abandoned branches (edited or retried \
                 messages) are not part of the conversation: left out"
            ),
        );
    }
    Chain {
        lines: chain,
        abandoned,
    }
}

/// Adds tool-result lines whose parent is the assistant line holding their tool call but that
/// the chain skipped (parallel tool calls answered off the last line): they were sent.
fn with_hung_tool_results(lines: &[Line], members: &[usize], chain: Vec<usize>) -> Vec<usize> {
    let position: HashMap<&str, usize> = chain
        .iter()
        .enumerate()
        .map(|(pos, &i)| (lines[i].key.as_str(), pos))
        .collect();
    let on_chain: HashSet<usize> = chain.iter().copied().collect();
    let mut called = HashSet::new();
    let mut answered = HashSet::new();
    for &i in &chain {
        match &lines[i].content {
            Content::Assistant(a) => called.extend(a.parts.iter().filter_map(tool_call_id)),
            Content::User(u) => answered.extend(u.message.parts.iter().filter_map(tool_result_id)),
            _ => {}
        }
    }
    let mut hung: Vec<(usize, usize)> = Vec::new();
    for &i in members {
        let (Content::User(u), Some(parent)) = (&lines[i].content, lines[i].parent.as_deref())
        else {
            continue;
        };
        let Some(&pos) = position.get(parent) else {
            continue;
        };
        let parts = &u.message.parts;
        let answers_chain = !parts.is_empty()
            && parts.iter().all(|p| {
                tool_result_id(p).is_some_and(|id| called.contains(id) && !answered.contains(id))
            });
        if answers_chain && !on_chain.contains(&i) {
            hung.push((pos, i));
        }
    }
    if hung.is_empty() {
        return chain;
    }
    let mut out = Vec::with_capacity(chain.len() + hung.len());
    for (pos, &i) in chain.iter().enumerate() {
        out.push(i);
        out.extend(hung.iter().filter(|(p, _)| *p == pos).map(|(_, j)| *j));
    }
    out
}

fn tool_call_id(part: &Part) -> Option<&str> {
    match part {
        Part::ToolCall { id, .. } => Some(id),
        _ => None,
    }
}

fn tool_result_id(part: &Part) -> Option<&str> {
    match part {
        Part::ToolResult { id, .. } => Some(id),
        _ => None,
    }
}

/// One message of the conversation, or a compaction, in order.
enum Item {
    User(Message),
    Call(Box<PendingCall>),
    Compaction(CompactionInfo),
}

/// An assistant message and the call that produced it, while its block lines come in.
struct PendingCall {
    response: Option<String>,
    message: Message,
    info: CallInfo,
    usage: Option<ReportedUsage>,
}

/// What a trace's attributes report besides its messages.
#[derive(Default)]
struct Tally {
    origin: Origin,
    spawned: BTreeMap<String, String>,
    tool_errors: usize,
    synthetic: usize,
}

/// Turns the chain into messages: user lines merged while consecutive, the block lines of one API
/// response joined into one call (even when tool results were written between them).
fn conversation(lines: &[Line], chain: &[usize], tally: &mut Tally) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::new();
    // The call further lines of the same response join.
    let mut open: Option<usize> = None;
    let mut last_user_time: Option<String> = None;
    let mut tool_names: HashMap<String, String> = HashMap::new();
    for &i in chain {
        let line = &lines[i];
        let origin = &mut tally.origin;
        for (field, value) in [
            (&mut origin.cwd, &line.origin.cwd),
            (&mut origin.version, &line.origin.version),
            (&mut origin.git_branch, &line.origin.git_branch),
        ] {
            if field.is_none() {
                field.clone_from(value);
            }
        }
        match &line.content {
            Content::Structural => {}
            Content::Compaction(info) => {
                open = None;
                items.push(Item::Compaction(info.clone()));
            }
            Content::User(user) => {
                tally.tool_errors += user.tool_errors;
                if let Some((agent, call)) = &user.spawned {
                    tally.spawned.insert(agent.clone(), call.clone());
                }
                let mut message = user.message.clone();
                for part in &mut message.parts {
                    if let Part::ToolResult { id, name, .. } = part {
                        name.clone_from(&tool_names.get(id.as_str()).cloned());
                    }
                }
                last_user_time.clone_from(&line.timestamp);
                match items.last_mut() {
                    Some(Item::User(previous)) if previous.category == message.category => {
                        previous.parts.extend(message.parts);
                    }
                    _ => items.push(Item::User(message)),
                }
            }
            Content::Assistant(a) if a.synthetic => tally.synthetic += 1,
            Content::Assistant(a) => {
                for part in &a.parts {
                    if let Part::ToolCall { id, name, .. } = part {
                        tool_names.insert(id.clone(), name.clone());
                    }
                }
                let joined = match open.and_then(|n| items.get_mut(n)) {
                    Some(Item::Call(call))
                        if call.response.is_some() && call.response == a.response =>
                    {
                        call.message.parts.extend(a.parts.iter().cloned());
                        call.info.ended_at.clone_from(&line.timestamp);
                        if a.usage.is_some() {
                            call.usage = a.usage;
                        }
                        true
                    }
                    _ => false,
                };
                if !joined {
                    open = Some(items.len());
                    items.push(new_call(line, a, last_user_time.take()));
                }
            }
        }
    }
    items
}

fn new_call(line: &Line, a: &AssistantLine, started_at: Option<String>) -> Item {
    let mut message = Message {
        role: Some(Role::Assistant),
        role_name: "assistant".into(),
        parts: a.parts.clone(),
        ..Message::default()
    };
    message.meta.timestamp.clone_from(&line.timestamp);
    message.meta.source = Some(source_pos(line.location));
    Item::Call(Box::new(PendingCall {
        response: a.response.clone(),
        message,
        info: CallInfo {
            model: a.model.clone(),
            // The request went out when the last input line was written.
            started_at,
            ended_at: line.timestamp.clone(),
            source: Some(source_pos(line.location)),
            ..CallInfo::default()
        },
        usage: a.usage,
    }))
}

fn build_trace(id: String, lines: &[Line], chain: Chain, cx: &mut Context<'_>) -> Trace {
    let mut b = TraceBuilder::new(id, FORMAT);
    let mut tally = Tally::default();
    let (mut write_5m, mut write_1h): (Option<u64>, Option<u64>) = (None, None);
    for item in conversation(lines, &chain.lines, &mut tally) {
        match item {
            Item::User(message) => {
                b.push_message(message, None);
            }
            Item::Call(call) => {
                let PendingCall {
                    message,
                    mut info,
                    usage,
                    ..
                } = *call;
                if let Some(reported) = usage {
                    info.usage = Some(reported.usage);
                    for (sum, n) in [
                        (&mut write_5m, reported.write_5m),
                        (&mut write_1h, reported.write_1h),
                    ] {
                        if let Some(n) = n {
                            *sum = Some(sum.unwrap_or(0).saturating_add(n));
                        }
                    }
                }
                b.push_message(message, Some(info));
            }
            Item::Compaction(info) => b.push_compaction(info),
        }
    }
    b.reconstruct_calls();
    b.attribute("unrecorded", UNRECORDED);
    let origin = tally.origin;
    for (key, value) in [
        ("cwd", origin.cwd),
        ("version", origin.version),
        ("git_branch", origin.git_branch),
    ] {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            b.attribute(key, value);
        }
    }
    for (agent, call) in tally.spawned {
        b.attribute(&format!("agent_tool_call.{agent}"), call);
    }
    for (key, n) in [
        ("tool_errors", tally.tool_errors),
        ("skipped_synthetic_messages", tally.synthetic),
        ("abandoned_branch_lines", chain.abandoned),
    ] {
        if n > 0 {
            b.attribute(key, n.to_string());
        }
    }
    for (key, n) in [
        ("cache_write_5m_tokens", write_5m),
        ("cache_write_1h_tokens", write_1h),
    ] {
        if let Some(n) = n {
            b.attribute(key, n.to_string());
        }
    }
    let location = chain
        .lines
        .first()
        .map_or_else(Location::default, |&i| lines[i].location);
    cx.finish(b, location)
}
