//! Gemini CLI chat recordings: `~/.gemini/tmp/<project_hash>/chats/session-*.json` (one
//! `ConversationRecord`) and the newer `session-*.jsonl` (the same records appended line by line).
//!
//! Schema source: github.com/google-gemini/gemini-cli `packages/core/src/services/chatRecordingService.ts`
//! (`ChatRecordingService`, `loadConversationRecord`; types in `chatRecordingTypes.ts`).
//!
//! ```text
//! {"sessionId": "…", "projectHash": "…", "startTime": "…", "lastUpdated": "…", "messages": [
//!   {"id": "m1", "timestamp": "…", "type": "user", "content": [{"text": "list the files"}]},
//!   {"id": "m2", "timestamp": "…", "type": "gemini", "content": "", "model": "gemini-2.5-pro",
//!    "thoughts": [{"subject": "Listing", "description": "…", "timestamp": "…"}],
//!    "tokens": {"input": 9000, "output": 20, "cached": 8000, "thoughts": 64, "tool": 0, "total": 9084},
//!    "toolCalls": [{"id": "ls-1", "name": "list_directory", "args": {"path": "."}, "status": "success",
//!                   "result": [{"functionResponse": {"id": "ls-1", "name": "list_directory",
//!                               "response": {"output": "a.ts b.ts"}}}], "resultDisplay": "…"}]}]}
//! ```
//!
//! - **Calls.** Each `gemini` message is one call (the recorder writes one per model response;
//!   tool calls are attached to it): output = its thoughts (reasoning), text and tool calls; input =
//!   every user message, model output and tool result before it. The tool results
//!   (`toolCalls[].result`, the `functionResponse` parts sent back to the model) follow the call,
//!   so the next call's input carries them. `info` / `error` / `warning` messages are UI notices,
//!   never sent to the model: skipped.
//! - **Usage** (`tokens`, from the API's `usageMetadata` in `recordMessageTokens`): `input` is
//!   `promptTokenCount`, which includes the cached tokens (Gemini API `UsageMetadata`: "when
//!   cachedContent is set, this is still the total effective prompt size"), so `input_tokens =
//!   input + tool` (`toolUsePromptTokenCount`, prompt tokens of tool use, counted apart from the
//!   prompt and inside `total`); `cached` → `cache_read_tokens`; `thoughts` → `reasoning_tokens`
//!   and, as `candidatesTokenCount` excludes them, added to `output_tokens` (`total = input +
//!   output + thoughts + tool`).
//! - **JSON Lines** (newer versions): a metadata line, then message records (a message written
//!   again when its tokens or tool calls arrive: the last version wins, at its first position),
//!   `{"$set": {...}}` metadata updates and `{"$rewindTo": id}` (that message and every later one
//!   are gone).
//! - **Compression.** The `.json` recordings never recorded `/compress` or automatic compression:
//!   the file kept the full history (gemini-cli issue #21335). Newer versions sync the history
//!   after compression back into the recording (`updateMessagesFromHistory` →
//!   `{"$set": {"messages": [...]}}`, new turns such as the summary get new ids). A `$set` of
//!   messages that drops messages is a compaction: the dropped messages are replaced, the first new
//!   user message is the summary.
//! - **Accounting.** Records read but deliberately not imported are counted per kind in the
//!   attributes `ignored_lines.<kind>`: the UI notices (`info`, `error`, `warning` messages),
//!   `$set` updates of metadata only (`metadata_update`), a repeated metadata record
//!   (`metadata`). Content parts and `$set` messages of unknown shape are warnings.

use crate::codex::{Entry, EntryKind, History};
use crate::document::Document;
use crate::error::source_pos;
use crate::error::{ImportError, Location};
use crate::json::{array_at, as_text, str_at, type_name, u64_at};
use crate::{Context, Importer};
use memlens_core::builder::{CallInfo, CompactionInfo, Message, Part, Role};
use memlens_core::{Category, ChunkId, Trace, Usage};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The Gemini CLI chat recording importer.
pub struct GeminiCli;

impl Importer for GeminiCli {
    fn name(&self) -> &'static str {
        "gemini-cli"
    }

    fn description(&self) -> &'static str {
        "Gemini CLI chat recordings (~/.gemini/tmp/<project>/chats/session-*.json or .jsonl)"
    }

    fn sniff(&self, first: &Value) -> bool {
        str_at(first, "sessionId").is_some() && str_at(first, "projectHash").is_some()
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let mut recording = Recording::default();
        for item in doc.into_records() {
            if let Some((location, record)) = cx.accept(item) {
                recording.record(record, location, cx);
            }
        }
        if recording.session.is_none() && recording.events.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![recording.replay(cx)])
    }
}

/// What happened, in file order; messages are looked up in their last version.
enum Event {
    Message(String),
    Set(Vec<Value>, Location),
    Rewind(String),
}

#[derive(Default)]
struct Recording {
    session: Option<Value>,
    events: Vec<Event>,
    messages: HashMap<String, (Value, Location)>,
    /// Records deliberately not imported, by kind (attributes `ignored_lines.<kind>`).
    ignored: BTreeMap<String, usize>,
}

fn ignore(ignored: &mut BTreeMap<String, usize>, kind: &str) {
    *ignored.entry(kind.to_string()).or_insert(0) += 1;
}

impl Recording {
    fn record(&mut self, record: Value, location: Location, cx: &mut Context<'_>) {
        if !record.is_object() {
            cx.warn(
                location,
                format!("skipped: expected an object, found {}", type_name(&record)),
            );
            return;
        }
        if let Some(id) = str_at(&record, "$rewindTo") {
            self.events.push(Event::Rewind(id.to_string()));
        } else if let Some(set) = record.get("$set") {
            match set.get("messages") {
                Some(Value::Array(messages)) => {
                    self.events.push(Event::Set(messages.clone(), location));
                }
                None if set.is_object() => ignore(&mut self.ignored, "metadata_update"),
                found => cx.warn(
                    location,
                    format!(
                        "skipped: a $set update needs an object with a \"messages\" array (found {})",
                        crate::json::describe(found.unwrap_or(set))
                    ),
                ),
            }
        } else if str_at(&record, "sessionId").is_some() {
            // The whole `.json` recording, or the first line of a `.jsonl` one.
            if let Some(messages) = record.get("messages") {
                match messages.as_array() {
                    Some(items) => {
                        for (i, m) in items.iter().enumerate() {
                            self.message(m.clone(), Location::record(i, location.line), cx);
                        }
                    }
                    None => cx.warn(
                        location,
                        format!(
                            "\"messages\" is {}, expected an array: no messages read",
                            type_name(messages)
                        ),
                    ),
                }
            }
            if self.session.is_none() {
                self.session = Some(record);
            } else {
                ignore(&mut self.ignored, "metadata"); // a resumed recording repeats it
            }
        } else {
            self.message(record, location, cx);
        }
    }

    fn message(&mut self, message: Value, location: Location, cx: &mut Context<'_>) {
        let Some(id) = str_at(&message, "id").map(str::to_string) else {
            cx.warn(
                location,
                format!(
                    "skipped: a message needs a string \"id\" (found {})",
                    crate::json::describe(&message)
                ),
            );
            return;
        };
        if self
            .messages
            .insert(id.clone(), (message, location))
            .is_none()
        {
            self.events.push(Event::Message(id));
        }
    }

    fn replay(self, cx: &mut Context<'_>) -> Trace {
        let session = self.session.unwrap_or(Value::Null);
        let id = str_at(&session, "sessionId").unwrap_or("gemini-cli-0");
        let mut replay = Replay {
            history: History::new(id, "gemini-cli"),
            results: HashMap::new(),
            ignored: self.ignored,
        };
        for (key, attribute) in [("projectHash", "project_hash"), ("kind", "kind")] {
            if let Some(value) = str_at(&session, key) {
                replay.history.builder().attribute(attribute, value);
            }
        }
        for event in self.events {
            match event {
                Event::Message(id) => {
                    if let Some((message, location)) = self.messages.get(&id) {
                        replay.message(&id, message, *location, cx);
                    }
                }
                Event::Rewind(id) => replay.rewind(&id),
                Event::Set(messages, location) => replay.set(&messages, location, cx),
            }
        }
        for (kind, n) in std::mem::take(&mut replay.ignored) {
            replay
                .history
                .builder()
                .attribute(&format!("ignored_lines.{kind}"), n.to_string());
        }
        replay.history.finish(cx, Location::default())
    }
}

struct Replay {
    history: History,
    /// The result chunk of each tool call id answered so far.
    results: HashMap<String, ChunkId>,
    ignored: BTreeMap<String, usize>,
}

/// The key of the entry holding a model message's tool results.
fn results_key(id: &str) -> String {
    format!("{id}#results")
}

impl Replay {
    fn message(&mut self, id: &str, m: &Value, location: Location, cx: &mut Context<'_>) {
        let timestamp = str_at(m, "timestamp").map(str::to_string);
        match str_at(m, "type") {
            Some("user") => {
                if let Some(entry) = self.user_entry(id, m, location, false, cx) {
                    self.history.context.push(entry);
                }
            }
            Some("gemini") => {
                let input = self.history.input();
                let mut output = model_message(m, location, cx);
                output.meta.timestamp = timestamp.clone();
                let chunks = self.push(output, EntryKind::Other, id);
                let usage = match m.get("tokens") {
                    None | Some(Value::Null) => None,
                    Some(tokens @ Value::Object(_)) => parse_tokens(tokens),
                    Some(other) => {
                        cx.warn(
                            location,
                            format!(
                                "message {id:?}: \"tokens\" is {}, expected an object: no usage",
                                type_name(other)
                            ),
                        );
                        None
                    }
                };
                let info = CallInfo {
                    model: str_at(m, "model").map(str::to_string),
                    usage,
                    started_at: None,
                    ended_at: timestamp,
                    latency_ms: None,
                    source: Some(source_pos(location)),
                };
                self.history.call(input, chunks, info);
                self.tool_results(id, m, location, cx);
            }
            Some(kind @ ("info" | "error" | "warning")) => ignore(&mut self.ignored, kind),
            Some(other) => cx.warn(
                location,
                format!("message {id:?} of unknown type {other:?} skipped"),
            ),
            None => cx.warn(location, format!("message {id:?} without \"type\" skipped")),
        }
    }

    fn push(&mut self, message: Message, kind: EntryKind, key: &str) -> Vec<ChunkId> {
        let mut entry = self.history.create(&message, kind);
        entry.key = Some(key.to_string());
        let chunks = entry.chunks.clone();
        self.history.context.push(entry);
        chunks
    }

    /// A user message as a context entry. Tool results already in the trace (a history sync
    /// repeats them as user turns) keep their chunks.
    fn user_entry(
        &mut self,
        id: &str,
        m: &Value,
        location: Location,
        summary: bool,
        cx: &mut Context<'_>,
    ) -> Option<Entry> {
        let mut known = Vec::new();
        let mut parts = Vec::new();
        for part in parts_of(m.get("content").unwrap_or(&Value::Null), location, cx) {
            match &part {
                Part::ToolResult { id, .. } if self.results.contains_key(id) => {
                    known.push(self.results[id]);
                }
                _ => parts.push(part),
            }
        }
        if parts.is_empty() && !known.is_empty() {
            return Some(Entry {
                hash: 0,
                chunks: known,
                kind: EntryKind::Other,
                key: Some(id.to_string()),
            });
        }
        let text: usize = parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.len(),
                _ => 0,
            })
            .sum();
        let message = Message {
            role: Some(Role::User),
            role_name: "user".into(),
            parts,
            category: summary.then_some(Category::Summary),
            meta: memlens_core::ChunkMeta {
                timestamp: str_at(m, "timestamp").map(str::to_string),
                source: Some(source_pos(location)),
                ..Default::default()
            },
            ..Message::default()
        };
        let mut entry = self
            .history
            .create(&message, EntryKind::User { bytes: text });
        for chunk in &entry.chunks {
            if let Some(call_id) = &self
                .history
                .builder()
                .trace()
                .chunk(*chunk)
                .meta
                .tool_call_id
            {
                self.results.insert(call_id.clone(), *chunk);
            }
        }
        entry.chunks.splice(0..0, known);
        entry.key = Some(id.to_string());
        Some(entry)
    }

    /// The results of a model message's tool calls, as the next request sends them.
    fn tool_results(&mut self, id: &str, m: &Value, location: Location, cx: &mut Context<'_>) {
        let Some(calls) = array_at(m, "toolCalls") else {
            return;
        };
        let mut parts = Vec::new();
        for call in calls {
            let Some(call_id) = str_at(call, "id") else {
                continue; // warned about with the call
            };
            if self.results.contains_key(call_id) {
                continue;
            }
            let content = match call.get("result") {
                Some(result @ (Value::Array(_) | Value::Object(_) | Value::String(_))) => {
                    parts_text(&parts_of(result, location, cx))
                }
                _ => call.get("resultDisplay").map(as_text).unwrap_or_default(),
            };
            parts.push(Part::ToolResult {
                id: call_id.to_string(),
                name: str_at(call, "name").map(str::to_string),
                content,
            });
        }
        if parts.is_empty() {
            return;
        }
        let message = Message {
            role: Some(Role::Tool),
            role_name: "user".into(),
            parts,
            meta: memlens_core::ChunkMeta {
                timestamp: str_at(m, "timestamp").map(str::to_string),
                source: Some(source_pos(location)),
                ..Default::default()
            },
            ..Message::default()
        };
        let chunks = self.push(message, EntryKind::Other, &results_key(id));
        for chunk in chunks {
            if let Some(call_id) = &self
                .history
                .builder()
                .trace()
                .chunk(chunk)
                .meta
                .tool_call_id
            {
                self.results.insert(call_id.clone(), chunk);
            }
        }
    }

    /// `$rewindTo`: the message and everything after it leave the context (all of it when the
    /// id is unknown, as the recorder does).
    fn rewind(&mut self, id: &str) {
        let at = self
            .history
            .context
            .iter()
            .position(|e| e.key.as_deref() == Some(id))
            .unwrap_or(0);
        let kept = self.history.context[..at].to_vec();
        self.history.replace(kept, None);
    }

    /// `$set.messages`: the recorder's history replaced by the agent's (after a compression,
    /// a resume, or masking).
    fn set(&mut self, messages: &[Value], location: Location, cx: &mut Context<'_>) {
        let ids: HashSet<&str> = messages.iter().filter_map(|m| str_at(m, "id")).collect();
        let dropped = self.history.context.iter().any(|e| {
            e.key
                .as_deref()
                .is_some_and(|k| !ids.contains(k.trim_end_matches("#results")))
        });
        let mut entries = Vec::new();
        let mut summary: Option<ChunkId> = None;
        for (i, m) in messages.iter().enumerate() {
            let Some(id) = str_at(m, "id") else {
                cx.warn(
                    location,
                    format!("$set.messages[{i}] without \"id\" skipped"),
                );
                continue;
            };
            let known: Vec<Entry> = self
                .history
                .context
                .iter()
                .filter(|e| {
                    e.key.as_deref() == Some(id) || e.key.as_deref() == Some(&results_key(id))
                })
                .cloned()
                .collect();
            if !known.is_empty() {
                entries.extend(known);
                continue;
            }
            // A new turn (the compression summary and its acknowledgement): context, not a call.
            let entry = match str_at(m, "type") {
                Some("gemini") => {
                    let message = model_message(m, location, cx);
                    let mut entry = self.history.create(&message, EntryKind::Other);
                    entry.key = Some(id.to_string());
                    Some(entry)
                }
                Some("user") => {
                    let is_summary = dropped && summary.is_none() && has_text(m);
                    let entry = self.user_entry(id, m, location, is_summary, cx);
                    if is_summary {
                        summary = entry.as_ref().and_then(|e| e.chunks.first().copied());
                    }
                    entry
                }
                // UI notices, counted where they were first recorded.
                Some("info" | "error" | "warning") => None,
                kind => {
                    cx.warn(
                        location,
                        format!(
                            "$set.messages[{i}] ({id:?}) of unknown type {} skipped",
                            kind.map_or("(none)".to_string(), |k| format!("{k:?}"))
                        ),
                    );
                    None
                }
            };
            entries.extend(entry);
        }
        // A history sync repeats tool results as user turns: each chunk once, where it came first.
        let mut seen = HashSet::new();
        for entry in &mut entries {
            entry.chunks.retain(|id| seen.insert(*id));
        }
        entries.retain(|e| !e.chunks.is_empty());
        let compaction = dropped.then(|| CompactionInfo {
            summary,
            source: Some(source_pos(location)),
            ..CompactionInfo::default()
        });
        self.history.replace(entries, compaction);
    }
}

fn has_text(m: &Value) -> bool {
    match m.get("content") {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(parts)) => parts.iter().any(|p| str_at(p, "text").is_some()),
        _ => false,
    }
}

/// A `gemini` message as the model's output: thoughts, text, tool calls.
fn model_message(m: &Value, location: Location, cx: &mut Context<'_>) -> Message {
    let mut parts = Vec::new();
    if let Some(thoughts) = array_at(m, "thoughts").filter(|t| !t.is_empty()) {
        let text: Vec<String> = thoughts
            .iter()
            .map(|t| {
                [str_at(t, "subject"), str_at(t, "description")]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .collect();
        parts.push(Part::Reasoning(text.join("\n\n")));
    }
    let content = parts_of(m.get("content").unwrap_or(&Value::Null), location, cx);
    parts.extend(content);
    match m.get("toolCalls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(calls)) => {
            for call in calls {
                match str_at(call, "id") {
                    Some(id) => parts.push(Part::ToolCall {
                        id: id.to_string(),
                        name: str_at(call, "name").unwrap_or_default().to_string(),
                        arguments: call.get("args").map(as_text).unwrap_or_default(),
                    }),
                    None => cx.warn(location, "tool call without a string \"id\" skipped"),
                }
            }
        }
        Some(other) => cx.warn(
            location,
            format!(
                "\"toolCalls\" is {}, expected an array: ignored",
                type_name(other)
            ),
        ),
    }
    Message {
        role: Some(Role::Assistant),
        role_name: "model".into(),
        parts,
        meta: memlens_core::ChunkMeta {
            timestamp: str_at(m, "timestamp").map(str::to_string),
            source: Some(source_pos(location)),
            ..Default::default()
        },
        ..Message::default()
    }
}

/// Gemini `PartListUnion` content: a string, a part, or a list of parts (`text`, `thought`,
/// `functionCall`, `functionResponse`, `inlineData`, `fileData`, …).
fn parts_of(content: &Value, location: Location, cx: &mut Context<'_>) -> Vec<Part> {
    let items = match content {
        Value::Null => return Vec::new(),
        Value::String(s) if s.is_empty() => return Vec::new(),
        Value::String(s) => return vec![Part::Text(s.clone())],
        Value::Array(items) => items.as_slice(),
        part @ Value::Object(_) => std::slice::from_ref(part),
        other => {
            cx.warn(
                location,
                format!(
                    "\"content\" is {}, expected text or parts: kept as JSON text",
                    type_name(other)
                ),
            );
            return vec![Part::Text(other.to_string())];
        }
    };
    let mut parts = Vec::with_capacity(items.len());
    for item in items {
        if let Some(text) = str_at(item, "text") {
            if item.get("thought").and_then(Value::as_bool) == Some(true) {
                parts.push(Part::Reasoning(text.to_string()));
            } else {
                parts.push(Part::Text(text.to_string()));
            }
        } else if let Some(call) = item.get("functionCall") {
            parts.push(Part::ToolCall {
                id: str_at(call, "id").unwrap_or_default().to_string(),
                name: str_at(call, "name").unwrap_or_default().to_string(),
                arguments: call.get("args").map(as_text).unwrap_or_default(),
            });
        } else if let Some(response) = item.get("functionResponse") {
            let body = response.get("response").unwrap_or(&Value::Null);
            parts.push(Part::ToolResult {
                id: str_at(response, "id").unwrap_or_default().to_string(),
                name: str_at(response, "name").map(str::to_string),
                content: str_at(body, "output")
                    .map(str::to_string)
                    .unwrap_or_else(|| as_text(body)),
            });
        } else if let Value::String(s) = item {
            parts.push(Part::Text(s.clone()));
        } else if let Some((kind, value)) = item.as_object().and_then(|o| o.iter().next()) {
            let what = str_at(value, "fileUri")
                .or_else(|| str_at(value, "mimeType"))
                .unwrap_or("inline data");
            parts.push(Part::Other {
                kind: kind.clone(),
                text: format!("[{kind}: {what}]"),
            });
        } else {
            cx.warn(
                location,
                format!(
                    "content part skipped: expected text or a part object, found {}",
                    crate::json::describe(item)
                ),
            );
        }
    }
    parts
}

/// A tool result's parts as one text.
fn parts_text(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) | Part::Reasoning(t) => t.as_str(),
            Part::ToolResult { content, .. } => content.as_str(),
            Part::Other { text, .. } => text.as_str(),
            Part::ToolCall { arguments, .. } => arguments.as_str(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `tokens`: Gemini's usage metadata, normalized (see the module docs).
fn parse_tokens(t: &Value) -> Option<Usage> {
    let thoughts = u64_at(t, "thoughts");
    let usage = Usage {
        input_tokens: u64_at(t, "input").map(|n| n.saturating_add(u64_at(t, "tool").unwrap_or(0))),
        output_tokens: u64_at(t, "output").map(|n| n.saturating_add(thoughts.unwrap_or(0))),
        cache_read_tokens: u64_at(t, "cached"),
        cache_write_tokens: None,
        reasoning_tokens: thoughts,
    };
    (!usage.is_empty()).then_some(usage)
}
