//! Reading a session file's lines: what each contributes, and the count of those that hold no
//! conversation.

use crate::anthropic::{parse_message, parse_usage};
use crate::document::Document;
use crate::error::source_pos;
use crate::error::Location;
use crate::json::{str_at, type_name, u64_at};
use crate::Context;
use memlens_core::builder::{CompactionInfo, Message, Part};
use memlens_core::{Category, Usage};
use serde_json::Value;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

/// Line types that hold no conversation: session titles, file backups, the input queue, hook
/// progress, attachments, settings and links (the metadata types of 2.1 sessions). Counted per
/// type, not warned about.
pub(super) const BOOKKEEPING: &[&str] = &[
    "summary",
    "file-history-snapshot",
    "file-history-delta",
    "queue-operation",
    "progress",
    "attachment",
    "ai-title",
    "custom-title",
    "task-summary",
    "tag",
    "agent-name",
    "agent-color",
    "agent-setting",
    "last-prompt",
    "pr-link",
    "mode",
    "permission-mode",
    "worktree-state",
    "bridge-session",
    "isolation-latch",
    "attribution-snapshot",
    "speculation-accept",
    "fork-context-ref",
    "frame-link",
    "relocated",
];

/// Records by which Claude Code changed the context it sent, which this importer does not apply:
/// the type (or system subtype) and what it does.
const CONTEXT_EDITS: &[(&str, &str)] = &[
    (
        "content-replacement",
        "tool results replaced by a reference before sending",
    ),
    (
        "marble-origami-commit",
        "a span of the conversation collapsed into a summary",
    ),
    ("marble-origami-snapshot", "context collapse state"),
    ("microcompact_boundary", "old tool results cleared"),
];

/// What a line contributes, once parsed.
pub(super) enum Content {
    /// A prompt, tool results, or the summary after a compaction.
    User(UserLine),
    /// One content block (or more) of one API response.
    Assistant(AssistantLine),
    /// A `compact_boundary`: the context was replaced by the summary that follows.
    Compaction(CompactionInfo),
    /// On the `parentUuid` chain but never sent to the model (system notes, hook progress...).
    Structural,
}

pub(super) struct UserLine {
    pub(super) message: Message,
    /// A subagent reported by a Task/Agent result (`toolUseResult.agentId`), with the tool call id.
    pub(super) spawned: Option<(String, String)>,
    /// `tool_result` blocks with `is_error: true`.
    pub(super) tool_errors: usize,
}

impl UserLine {
    /// The tool call ids this line answers.
    pub(super) fn result_ids(&self) -> impl Iterator<Item = &str> {
        self.message.parts.iter().filter_map(|p| match p {
            Part::ToolResult { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }
}

pub(super) struct AssistantLine {
    /// `message.id`, else `requestId`: the lines of one API response share it.
    pub(super) response: Option<String>,
    pub(super) model: Option<String>,
    pub(super) parts: Vec<Part>,
    /// A hash of `parts`: a copy of a block line (a replay) has the same.
    pub(super) fingerprint: u64,
    pub(super) usage: Option<ReportedUsage>,
    /// Written by Claude Code itself (`<synthetic>` model, API error notices): no API call.
    pub(super) synthetic: bool,
}

/// Usage as reported, with the cache-write split by lifetime when given.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ReportedUsage {
    pub(super) usage: Usage,
    pub(super) write_5m: Option<u64>,
    pub(super) write_1h: Option<u64>,
}

/// Where the session ran, as the lines say.
#[derive(Default)]
pub(super) struct Origin {
    pub(super) session_id: Option<String>,
    pub(super) cwd: Option<String>,
    pub(super) version: Option<String>,
    pub(super) git_branch: Option<String>,
}

pub(super) struct Line {
    pub(super) location: Location,
    /// `uuid`, or `#<record>` for a line without one.
    pub(super) key: String,
    /// `parentUuid` (a compaction boundary: `logicalParentUuid`).
    pub(super) parent: Option<String>,
    pub(super) timestamp: Option<String>,
    pub(super) sidechain: bool,
    pub(super) agent_id: Option<String>,
    pub(super) origin: Origin,
    pub(super) content: Content,
}

impl Line {
    pub(super) fn is_conversation(&self) -> bool {
        !matches!(self.content, Content::Structural)
    }
}

/// The lines of a file, and how many of each kind held no conversation.
pub(super) struct Read {
    pub(super) lines: Vec<Line>,
    /// Lines deliberately not imported, by type (system lines by `system.<subtype>`).
    pub(super) ignored: BTreeMap<String, usize>,
}

/// Kinds of lines counted rather than imported, with the first location of each for warnings.
#[derive(Default)]
struct Tally {
    ignored: BTreeMap<String, usize>,
    unknown: BTreeMap<String, (usize, Location)>,
    edits: BTreeMap<&'static str, (usize, Location, &'static str)>,
}

impl Tally {
    fn ignore(&mut self, kind: &str) {
        *self.ignored.entry(kind.to_string()).or_insert(0) += 1;
    }

    /// A context edit, when `kind` is one.
    fn edit(&mut self, kind: &str, location: Location) -> bool {
        let Some(&(name, what)) = CONTEXT_EDITS.iter().find(|(k, _)| *k == kind) else {
            return false;
        };
        self.edits.entry(name).or_insert((0, location, what)).0 += 1;
        true
    }

    fn warn(self, cx: &mut Context<'_>) -> BTreeMap<String, usize> {
        for (kind, (n, location)) in self.unknown {
            cx.warn(
                location,
                format!("unknown line type {kind:?}: {n} line(s) ignored"),
            );
        }
        for (kind, (n, location, what)) in self.edits {
            cx.warn(
                location,
                format!(
                    "context edit not applied: {n} {kind} record(s) ({what}); the counted \
                     context may exceed what Claude Code sent"
                ),
            );
        }
        self.ignored
    }
}

pub(super) fn read_lines(doc: Document<'_>, cx: &mut Context<'_>) -> Read {
    let mut lines: Vec<Line> = Vec::new();
    let mut tally = Tally::default();
    for item in doc.into_records() {
        let Some((location, record)) = cx.accept(item) else {
            continue; // warned by `accept`
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
            Some("system") => system_content(&record, location, &mut tally),
            Some(kind) if BOOKKEEPING.contains(&kind) => {
                tally.ignore(kind);
                Content::Structural
            }
            Some(kind) => {
                if !tally.edit(kind, location) {
                    tally
                        .unknown
                        .entry(kind.to_string())
                        .or_insert((0, location))
                        .0 += 1;
                }
                Content::Structural
            }
            None => {
                cx.warn(location, "line without a \"type\" ignored");
                Content::Structural
            }
        };
        if let Some(line) = chain_line(&record, location, content, lines.last()) {
            lines.push(line);
        }
    }
    let ignored = tally.warn(cx);
    Read { lines, ignored }
}

/// The line as a link of the `parentUuid` chain; `None` for a structural line without a uuid
/// (already counted), which nothing can hang off.
fn chain_line(
    record: &Value,
    location: Location,
    content: Content,
    previous: Option<&Line>,
) -> Option<Line> {
    let uuid = str_at(record, "uuid");
    if uuid.is_none() && matches!(content, Content::Structural) {
        return None;
    }
    let parent = match record.get("parentUuid") {
        Some(Value::String(p)) => Some(p.clone()),
        Some(_) => str_at(record, "logicalParentUuid").map(str::to_string),
        // Exports without the chain fields: file order.
        None => previous.map(|l| l.key.clone()),
    };
    let text = |key: &str| str_at(record, key).map(str::to_string);
    Some(Line {
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
    })
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
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    message.parts.hash(&mut hasher);
    Content::Assistant(AssistantLine {
        response: str_at(m, "id")
            .or_else(|| str_at(record, "requestId"))
            .map(str::to_string),
        model,
        parts: message.parts,
        fingerprint: hasher.finish(),
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

/// A compaction boundary; any other system line is a note never sent to the model, counted.
fn system_content(record: &Value, location: Location, tally: &mut Tally) -> Content {
    let subtype = str_at(record, "subtype");
    if subtype != Some("compact_boundary") {
        match subtype {
            Some(s) if tally.edit(s, location) => {}
            Some(s) => tally.ignore(&format!("system.{s}")),
            None => tally.ignore("system"),
        }
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
