//! OpenAI Codex CLI session rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.
//!
//! Every line is a `RolloutLine` (`{timestamp, type, payload}`, `type` one of `session_meta`,
//! `turn_context`, `response_item`, `event_msg`, `compacted`); schema source: github.com/openai/codex
//! `codex-rs/protocol/src/protocol.rs` (`RolloutLine`, `RolloutItem`, `SessionMeta`,
//! `CompactedItem`, `EventMsg`, `TokenCountEvent`) and `codex-rs/protocol/src/models.rs`
//! (`ResponseItem`, `ContentItem`). The older layout (a first line that is the bare
//! `{id, timestamp, instructions}` session meta, then bare response items, plus
//! `{"record_type": "state"}` lines) is read too.
//!
//! ```text
//! {"timestamp":"…","type":"session_meta","payload":{"id":"…","cwd":"/repo","cli_version":"0.46.0","base_instructions":{"text":"You are Codex…"}}}
//! {"timestamp":"…","type":"turn_context","payload":{"model":"gpt-5-codex","effort":"high",…}}
//! {"timestamp":"…","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the test"}]}}
//! {"timestamp":"…","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"…"}],"encrypted_content":"…"}}
//! {"timestamp":"…","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}}
//! {"timestamp":"…","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":900,"cached_input_tokens":600,"output_tokens":40,"reasoning_output_tokens":16,"total_tokens":940},…}}}
//! {"timestamp":"…","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"a.rs b.rs"}}
//! {"timestamp":"…","type":"compacted","payload":{"message":"summary…","replacement_history":[…]}}
//! ```
//!
//! - **Calls.** The model's response items (assistant `message`, `reasoning`, `function_call`,
//!   `custom_tool_call`, `local_shell_call`, `web_search_call`, …) of one sampling request are one
//!   call; its input is the history before it, after the session's base instructions (sent as the
//!   Responses API `instructions`, kept here as a system chunk). Every sampling request ends with a
//!   `token_count` event, so those separate calls. Codex has written them in two orders: current
//!   versions record each item as it is streamed and the tool outputs after the request completed
//!   (`…items, token_count, outputs`); older ones recorded a request's items and outputs interleaved
//!   after its `token_count`. The first `token_count` before any model item means the older order.
//!   Without `token_count` events (the old layout), each run of model items is one call.
//! - **Usage** is `last_token_usage`. Codex copies the Responses API usage: `input_tokens` includes
//!   `cached_input_tokens` and `output_tokens` includes `reasoning_output_tokens` (their
//!   `total_tokens` is input + output), already the OpenAI convention. A `token_count` repeating the
//!   previous cumulative `total_token_usage` (sent again on rate-limit updates) is skipped.
//! - **Not double counted**: `event_msg` `user_message`, `agent_message` and `agent_reasoning`
//!   repeat response items for the UI; they and the other events are ignored.
//! - **Compaction** (`compacted`): the history becomes `replacement_history` when the line has one
//!   (items already in the context keep their chunks); else what Codex rebuilds on resume
//!   (`codex-rs/core/src/codex/rollout_reconstruction.rs` → `build_compacted_history` in
//!   `codex-rs/core/src/compact.rs`): the initial context (developer messages, user instructions,
//!   environment context), the real user messages, newest first up to 20,000 tokens counted as
//!   bytes / 4 (`COMPACT_USER_MESSAGE_MAX_TOKENS`; the one that crosses the limit, which Codex
//!   truncates, is kept whole here), then the summary (`message`) as a user message. Contextual user
//!   messages (`<environment_context>`, `<turn_aborted>`, …) and earlier summaries are not user
//!   messages there. The summarization request is not in the rollout, but its `token_count` is:
//!   when one precedes `compacted` with no model item in between, it becomes a call whose output
//!   is the summary chunk.
//! - `thread_rolled_back` drops the last N user turns from the context. A subagent's
//!   `session_meta.source.subagent.thread_spawn.parent_thread_id` becomes [`Trace::parent`].
//! - **Accounting.** Lines read but deliberately not imported are counted per kind in the
//!   attributes `ignored_lines.<kind>`: `event_msg.<type>` (UI copies and telemetry, token counts
//!   repeating the previous total or carrying none), `response_item.ghost_snapshot` / `.other`,
//!   a repeated `session_meta`, the old layout's `record_type.<type>` lines. A `token_count` whose
//!   usage no call takes (no model item recorded for that request) is a warning.

use crate::document::Document;
use crate::error::source_pos;
use crate::error::{ImportError, Location};
use crate::json::{array_at, str_at, type_name, u64_at};
use crate::{Context, Importer};
use memlens_core::builder::{CallInfo, CompactionInfo, Message, Part, Role};
use memlens_core::{Category, ChunkId, SourcePos, Trace, TraceLink, Usage};
use serde_json::Value;
use std::collections::HashMap;

mod history;
mod items;
pub(crate) use history::{Entry, EntryKind, History};
use items::{is_model_item, parse_item};

/// The Codex CLI rollout importer.
pub struct Codex;

const ROLLOUT_TYPES: [&str; 5] = [
    "session_meta",
    "turn_context",
    "response_item",
    "event_msg",
    "compacted",
];

/// The old layout's first line: the session meta itself, without `type`.
fn is_legacy_meta(v: &Value) -> bool {
    v.get("type").is_none()
        && str_at(v, "id").is_some()
        && str_at(v, "timestamp").is_some()
        && (v.get("instructions").is_some() || v.get("git").is_some())
}

impl Importer for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn description(&self) -> &'static str {
        "OpenAI Codex CLI session rollouts (~/.codex/sessions/**/rollout-*.jsonl)"
    }

    fn sniff(&self, first: &Value) -> bool {
        let typed = str_at(first, "type").is_some_and(|t| ROLLOUT_TYPES.contains(&t))
            && first.get("payload").is_some_and(Value::is_object);
        typed || is_legacy_meta(first)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        // Held whole: where the first `token_count` falls decides how calls are cut.
        let lines: Vec<crate::document::RecordItem> = doc.into_records().collect();
        let mut rollout = Rollout::new(&lines);
        for item in lines {
            if let Some((location, line)) = cx.accept(item) {
                rollout.line(&line, location, cx);
            }
        }
        if !rollout.meta_seen && rollout.history.context.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![rollout.finish(cx)])
    }
}

/// A call whose output is still arriving.
struct OpenCall {
    input: Vec<ChunkId>,
    output: Vec<ChunkId>,
    usage: Option<Usage>,
    started_at: Option<String>,
    ended_at: Option<String>,
    source: SourcePos,
}

/// Reads one rollout into one trace.
struct Rollout {
    history: History,
    /// Whether `token_count` events are there at all, and whether they come before their items.
    has_usage: bool,
    usage_first: bool,
    model: Option<String>,
    call: Option<OpenCall>,
    /// Usage not yet given to a call: the next call's (older order), or a summarization's.
    pending_usage: Option<(Usage, Location)>,
    /// Lines deliberately not imported, by kind (attributes `ignored_lines.<kind>`).
    ignored: std::collections::BTreeMap<String, usize>,
    last_total: Option<Value>,
    tool_names: HashMap<String, String>,
    meta_seen: bool,
    parent: Option<TraceLink>,
    first: Location,
}

impl Rollout {
    fn new(lines: &[crate::document::RecordItem]) -> Rollout {
        let values = || lines.iter().map(|(_, v)| v.as_ref().ok());
        let usage_at = values().position(|v| v.and_then(usage_of).is_some());
        let model_item_at = values().position(|v| v.and_then(item_of).is_some_and(is_model_item));
        Rollout {
            history: History::new("codex-0", "codex"),
            has_usage: usage_at.is_some(),
            usage_first: matches!((usage_at, model_item_at), (Some(u), Some(m)) if u < m),
            model: None,
            call: None,
            pending_usage: None,
            ignored: Default::default(),
            last_total: None,
            tool_names: HashMap::new(),
            meta_seen: false,
            parent: None,
            first: lines.first().map(|(l, _)| *l).unwrap_or_default(),
        }
    }

    fn line(&mut self, line: &Value, location: Location, cx: &mut Context<'_>) {
        if !line.is_object() {
            cx.warn(
                location,
                format!("skipped: expected an object, found {}", type_name(line)),
            );
            return;
        }
        let timestamp = str_at(line, "timestamp").map(str::to_string);
        let Some(kind) = str_at(line, "type") else {
            if let Some(record_type) = line.get("record_type") {
                // The old layout's state lines: resume bookkeeping, not context.
                let kind = record_type.as_str().unwrap_or("other");
                return self.ignore(&format!("record_type.{kind}"));
            }
            if !self.meta_seen && is_legacy_meta(line) {
                self.session_meta(line);
            } else {
                cx.warn(location, "skipped: a line without \"type\"");
            }
            return;
        };
        if line.get("payload").is_none() && !ROLLOUT_TYPES.contains(&kind) {
            // Old layout: the line is the response item itself.
            return self.item(line, timestamp, location, cx);
        }
        let payload = match line.get("payload") {
            Some(p @ Value::Object(_)) => p,
            Some(other) => {
                cx.warn(
                    location,
                    format!(
                        "{kind} skipped: \"payload\" is {}, expected an object",
                        type_name(other)
                    ),
                );
                return;
            }
            None => {
                cx.warn(location, format!("{kind} skipped: no \"payload\""));
                return;
            }
        };
        match kind {
            "session_meta" if !self.meta_seen => self.session_meta(payload),
            // A resumed or forked session repeats it.
            "session_meta" => self.ignore("session_meta"),
            "turn_context" => match payload.get("model") {
                Some(Value::String(model)) => self.model = Some(model.clone()),
                None | Some(Value::Null) => {}
                Some(other) => cx.warn(
                    location,
                    format!(
                        "turn_context \"model\" is {}, expected a string: ignored",
                        type_name(other)
                    ),
                ),
            },
            "response_item" => self.item(payload, timestamp, location, cx),
            "event_msg" => self.event(payload, location, cx),
            "compacted" => self.compacted(payload, timestamp, location, cx),
            other => cx.warn(
                location,
                format!("unknown rollout line type {other:?} ignored"),
            ),
        }
    }

    fn session_meta(&mut self, meta: &Value) {
        self.meta_seen = true;
        if let Some(id) = str_at(meta, "id").filter(|_| self.history.context.is_empty()) {
            self.history = History::new(id, "codex");
        }
        for key in ["cwd", "cli_version", "originator", "model_provider"] {
            if let Some(value) = str_at(meta, key) {
                self.history.builder().attribute(key, value);
            }
        }
        if let Some(branch) = meta.get("git").and_then(|g| str_at(g, "branch")) {
            self.history.builder().attribute("git.branch", branch);
        }
        let instructions = str_at(meta, "instructions").or_else(|| {
            meta.get("base_instructions")
                .and_then(|b| str_at(b, "text").or_else(|| b.as_str()))
        });
        if let Some(text) = instructions.filter(|t| !t.is_empty()) {
            self.history
                .push(&Message::text("system", text), EntryKind::System);
        }
        self.parent = meta
            .get("source")
            .and_then(|s| s.get("subagent"))
            .and_then(|s| s.get("thread_spawn"))
            .and_then(|s| str_at(s, "parent_thread_id"))
            .map(|parent| TraceLink {
                trace: parent.to_string(),
                call: None,
                tool_call_id: None,
            });
    }

    fn item(
        &mut self,
        item: &Value,
        timestamp: Option<String>,
        location: Location,
        cx: &mut Context<'_>,
    ) {
        if let Some(kind @ ("ghost_snapshot" | "other")) = str_at(item, "type") {
            return self.ignore(&format!("response_item.{kind}"));
        }
        let Some((mut message, kind, from_model)) = parse_item(item, location, cx) else {
            return;
        };
        message.meta.timestamp = timestamp.clone();
        message.meta.source = Some(source_pos(location));
        for part in &mut message.parts {
            match part {
                Part::ToolCall { id, name, .. } => {
                    self.tool_names.insert(id.clone(), name.clone());
                }
                Part::ToolResult { id, name, .. } if name.is_none() => {
                    *name = self.tool_names.get(id.as_str()).cloned();
                }
                _ => {}
            }
        }
        if !from_model {
            let is_tool_output = message.role == Some(Role::Tool);
            // In the older order a request's tool outputs sit between its items.
            if !(is_tool_output && self.has_usage && self.usage_first) {
                self.close_call();
            }
            self.history.push(&message, kind);
            return;
        }
        if self.call.is_none() {
            // Older order: the usage came first. Current order: a usage still pending belonged
            // to no call of the rollout.
            let usage = match self.pending_usage.take() {
                Some((usage, _)) if self.usage_first => Some(usage),
                lost => {
                    self.lost_usage(lost, cx);
                    None
                }
            };
            self.call = Some(OpenCall {
                input: self.history.input(),
                output: Vec::new(),
                usage,
                started_at: timestamp.clone(),
                ended_at: None,
                source: source_pos(location),
            });
        }
        let chunks = self.history.push(&message, kind);
        if let Some(call) = self.call.as_mut() {
            call.output.extend(chunks);
            call.ended_at = timestamp;
        }
    }

    fn ignore(&mut self, kind: &str) {
        *self.ignored.entry(kind.to_string()).or_insert(0) += 1;
    }

    /// Keeps a `token_count`'s usage for the call it belongs to; one still waiting is lost.
    fn park_usage(&mut self, usage: Usage, location: Location, cx: &mut Context<'_>) {
        let earlier = self.pending_usage.replace((usage, location));
        self.lost_usage(earlier, cx);
    }

    /// A reported usage no call took: its request's items are not in the rollout.
    fn lost_usage(&self, pending: Option<(Usage, Location)>, cx: &mut Context<'_>) {
        if let Some((usage, location)) = pending {
            let n = |v: Option<u64>| v.map_or("?".to_string(), |n| n.to_string());
            cx.warn(
                location,
                format!(
                    "token usage not matched to a model response ({} input, {} output \
                     tokens): no call reports it",
                    n(usage.input_tokens),
                    n(usage.output_tokens)
                ),
            );
        }
    }

    fn close_call(&mut self) {
        if let Some(call) = self.call.take() {
            let info = CallInfo {
                model: self.model.clone(),
                usage: call.usage,
                started_at: call.started_at,
                ended_at: call.ended_at,
                latency_ms: None,
                source: Some(call.source),
            };
            self.history.call(call.input, call.output, info);
        }
    }

    fn event(&mut self, event: &Value, location: Location, cx: &mut Context<'_>) {
        match str_at(event, "type") {
            Some("token_count") => {
                let Some(usage) = usage_of_event(event) else {
                    // `info: null` (a rate-limit update before any request) carries nothing.
                    if event.get("info").is_some_and(Value::is_object) {
                        cx.warn(location, "token_count without usable token numbers ignored");
                    } else {
                        self.ignore("event_msg.token_count");
                    }
                    return;
                };
                // The same cumulative total again: a rate-limit refresh, not a new request.
                let total = event.get("info").and_then(|i| i.get("total_token_usage"));
                if total.is_some() && total == self.last_total.as_ref() {
                    return self.ignore("event_msg.token_count");
                }
                self.last_total = total.cloned();
                if self.usage_first {
                    self.close_call();
                    self.park_usage(usage, location, cx);
                } else if let Some(call) = self.call.as_mut().filter(|c| c.usage.is_none()) {
                    call.usage = Some(usage);
                    self.close_call();
                } else {
                    self.park_usage(usage, location, cx);
                }
            }
            Some("thread_rolled_back") => {
                self.close_call();
                let turns = u64_at(event, "num_turns").unwrap_or(0) as usize;
                let users: Vec<usize> = (0..self.history.context.len())
                    .filter(|&i| matches!(self.history.context[i].kind, EntryKind::User { .. }))
                    .collect();
                // The context from the N-th last user message on goes.
                let first_dropped = users.get(users.len().saturating_sub(turns));
                if let Some(&cut) = first_dropped.filter(|_| turns > 0) {
                    let kept = self.history.context[..cut].to_vec();
                    self.history.replace(kept, None);
                }
            }
            // UI duplicates of response items and telemetry: not context.
            kind => self.ignore(&format!("event_msg.{}", kind.unwrap_or("untyped"))),
        }
    }

    fn compacted(
        &mut self,
        payload: &Value,
        timestamp: Option<String>,
        location: Location,
        cx: &mut Context<'_>,
    ) {
        self.close_call();
        let message = str_at(payload, "message").unwrap_or_default();
        let (entries, summary) = match array_at(payload, "replacement_history") {
            Some(items) => self.replacement(items, message, location, cx),
            None => self.rebuilt(message, timestamp.clone(), location),
        };
        let pending = self.pending_usage.take();
        if summary.is_none() {
            self.lost_usage(pending, cx);
        }
        if let (Some((usage, _)), Some(summary)) = (pending, &summary) {
            // The summarization request: the whole context in, the summary out.
            let info = CallInfo {
                model: self.model.clone(),
                usage: Some(usage),
                started_at: timestamp.clone(),
                ended_at: timestamp.clone(),
                latency_ms: None,
                source: Some(source_pos(location)),
            };
            self.history
                .call(self.history.input(), summary.chunks.clone(), info);
        }
        let info = CompactionInfo {
            timestamp,
            summary: summary.and_then(|s| s.chunks.first().copied()),
            source: Some(source_pos(location)),
            ..CompactionInfo::default()
        };
        self.history.replace(entries, Some(info));
    }

    /// The history Codex rebuilds from `message` alone (see the module docs).
    fn rebuilt(
        &mut self,
        message: &str,
        timestamp: Option<String>,
        location: Location,
    ) -> (Vec<Entry>, Option<Entry>) {
        const MAX_USER_TOKENS: usize = 20_000;
        let context = &self.history.context;
        let mut keep = vec![false; context.len()];
        let mut remaining = MAX_USER_TOKENS;
        for (i, entry) in context.iter().enumerate().rev() {
            if let EntryKind::User { bytes } = entry.kind {
                if remaining == 0 {
                    break;
                }
                keep[i] = true;
                remaining = remaining.saturating_sub(bytes.div_ceil(4));
            }
        }
        let mut entries: Vec<Entry> = context
            .iter()
            .zip(&keep)
            .filter(|(e, kept)| **kept || matches!(e.kind, EntryKind::System | EntryKind::Initial))
            .map(|(e, _)| e.clone())
            .collect();
        let mut summary = Message::text("user", message);
        summary.category = Some(Category::Summary);
        summary.meta.timestamp = timestamp;
        summary.meta.source = Some(source_pos(location));
        let entry = self.history.create(&summary, EntryKind::Other);
        entries.push(entry.clone());
        (entries, Some(entry))
    }

    /// `replacement_history`: items already in the context keep their chunks.
    fn replacement(
        &mut self,
        items: &[Value],
        message: &str,
        location: Location,
        cx: &mut Context<'_>,
    ) -> (Vec<Entry>, Option<Entry>) {
        let mut unused: Vec<Option<&Entry>> = self.history.context.iter().map(Some).collect();
        let mut reused = Vec::new();
        let mut fresh = Vec::new();
        for item in items {
            let Some((mut m, kind, _)) = parse_item(item, location, cx) else {
                continue;
            };
            let hash = m.identity_hash();
            if let Some(slot) = unused
                .iter_mut()
                .find(|e| e.is_some_and(|e| e.hash == hash))
            {
                reused.push((reused.len() + fresh.len(), slot.take().cloned()));
                continue;
            }
            let is_summary = m.category == Some(Category::Summary)
                || (!message.is_empty()
                    && m.role == Some(Role::User)
                    && m.parts == [Part::Text(message.to_string())]);
            if is_summary {
                m.category = Some(Category::Summary);
                if m.parts == [Part::Text(String::new())] && !message.is_empty() {
                    m.parts = vec![Part::Text(message.to_string())];
                }
            }
            m.meta.source = Some(source_pos(location));
            fresh.push((reused.len() + fresh.len(), m, kind, is_summary));
        }
        let total = reused.len() + fresh.len();
        let mut slots: Vec<Option<Entry>> = vec![None; total];
        for (at, entry) in reused {
            slots[at] = entry;
        }
        let mut summary = None;
        for (at, m, kind, is_summary) in fresh {
            let entry = self.history.create(&m, kind);
            if is_summary && summary.is_none() {
                summary = Some(entry.clone());
            }
            slots[at] = Some(entry);
        }
        // Codex sends the base instructions apart from the history: they stay.
        let mut entries: Vec<Entry> = self
            .history
            .context
            .iter()
            .filter(|e| e.kind == EntryKind::System)
            .cloned()
            .collect();
        entries.extend(slots.into_iter().flatten());
        (entries, summary)
    }

    fn finish(mut self, cx: &mut Context<'_>) -> Trace {
        self.close_call();
        let pending = self.pending_usage.take();
        self.lost_usage(pending, cx);
        for (kind, n) in std::mem::take(&mut self.ignored) {
            self.history
                .builder()
                .attribute(&format!("ignored_lines.{kind}"), n.to_string());
        }
        let mut trace = self.history.finish(cx, self.first);
        trace.parent = self.parent;
        trace
    }
}

/// A line's response item: `payload` of a `response_item` line, or an old-layout bare item.
fn item_of(line: &Value) -> Option<&Value> {
    match str_at(line, "type")? {
        "response_item" => line.get("payload"),
        t if ROLLOUT_TYPES.contains(&t) => None,
        _ if line.get("payload").is_none() => Some(line),
        _ => None,
    }
}

/// A line's `token_count` usage, when it carries one.
fn usage_of(line: &Value) -> Option<Usage> {
    if str_at(line, "type") != Some("event_msg") {
        return None;
    }
    usage_of_event(line.get("payload")?)
}

fn usage_of_event(event: &Value) -> Option<Usage> {
    if str_at(event, "type") != Some("token_count") {
        return None;
    }
    // Current: `info.last_token_usage`; early versions put the usage in the event itself.
    let usage = match event.get("info") {
        Some(info) if info.is_object() => info.get("last_token_usage")?,
        _ if event.get("input_tokens").is_some() => event,
        _ => return None,
    };
    let usage = Usage {
        input_tokens: u64_at(usage, "input_tokens"),
        output_tokens: u64_at(usage, "output_tokens"),
        cache_read_tokens: u64_at(usage, "cached_input_tokens"),
        cache_write_tokens: None,
        reasoning_tokens: u64_at(usage, "reasoning_output_tokens"),
    };
    (!usage.is_empty()).then_some(usage)
}
