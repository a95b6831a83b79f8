//! OpenHands event streams, both generations:
//!
//! - **V0 (legacy) events**, as `event_to_dict` writes them (`openhands/events/serialization/event.py`
//!   in github.com/OpenHands/OpenHands, formerly All-Hands-AI/OpenHands): a JSON array of events,
//!   JSON Lines of them, a trajectory export `{"trajectory": [...]}`, or evaluation records
//!   `{"instance_id", "history": [...]}` (one trace each). Actions (`openhands/core/schema/action.py`,
//!   `openhands/events/action/*.py`) carry `args`; observations (`openhands/core/schema/observation.py`,
//!   `openhands/events/observation/*.py`) carry `content`, `extras` and `cause` (the action's id);
//!   both may carry `tool_call_metadata` {`function_name`, `tool_call_id`, `model_response` (the
//!   LiteLLM response: message and `usage`), `total_calls_in_response`} and `llm_metrics`
//!   (`openhands/llm/metrics.py`: accumulated cost and `accumulated_token_usage`, per-call
//!   `token_usages` with `response_id`).
//!   ```json
//!   [{"id": 0, "source": "agent", "action": "system", "args": {"content": "You are...", "tools": []}},
//!    {"id": 1, "source": "user", "action": "message", "args": {"content": "Fix the test"}},
//!    {"id": 2, "source": "agent", "action": "run", "args": {"command": "pytest"},
//!     "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "call_1",
//!       "model_response": {"id": "resp-1", "choices": [{"message": {...}}], "usage": {...}}}},
//!    {"id": 3, "source": "agent", "observation": "run", "cause": 2, "content": "1 failed",
//!     "tool_call_metadata": {"tool_call_id": "call_1", "function_name": "execute_bash"}},
//!    {"id": 9, "source": "agent", "action": "condensation",
//!     "args": {"forgotten_event_ids": [2, 3], "summary": "...", "summary_offset": 1}}]
//!   ```
//! - **V1 SDK events** (github.com/OpenHands/software-agent-sdk,
//!   `openhands-sdk/openhands/sdk/event/`: `base.py`, `condenser.py`, `llm_convertible/{system,
//!   message,action,observation}.py`), tagged by `kind`: `SystemPromptEvent`, `MessageEvent`,
//!   `ActionEvent` (`thought`, `reasoning_content`, `tool_call`, `llm_response_id`),
//!   `ObservationEvent` / `UserRejectObservation` / `AgentErrorEvent` (`tool_call_id`),
//!   `Condensation` (`forgotten_event_ids`, `summary`, `summary_offset`), `CondensationSummaryEvent`;
//!   state and UI events (`ConversationStateUpdateEvent`...) never reach the model, and a saved
//!   stream may open with them. See [`sdk`].
//!
//! Calls follow how OpenHands builds each request (V0 `openhands/memory/conversation_memory.py`,
//! V1 `LLMConvertibleEvent.events_to_messages`): one call per agent LLM response (the actions of
//! one response share `model_response.id` / `llm_response_id` and make one assistant message, its
//! text from the response and one tool call per action); its input is the context at that point:
//! every message so far minus the events condensations forgot, with the latest summary inserted
//! `summary_offset` events from the start, and without tool calls or results whose partner is not
//! in context (OpenHands filters those). A condensation becomes a compaction whose `replaced`
//! chunks are those of the forgotten events. Tool results pair by `tool_call_id` (V0 falls back to
//! `cause`). Usage per response: the response's own `usage`, else the `token_usages` entry with its
//! id, else the growth of `accumulated_token_usage` since the previous response (not across a
//! condensation: the condenser's calls are in the same totals). LiteLLM's `prompt_tokens` already
//! includes cache reads and writes, so it is `input_tokens` as is.
//!
//! An observation is the text OpenHands put in the tool message (see [`observation`]): a file edit
//! made by the LLM-based editor is rendered as OpenHands rendered it for the model, not its stored
//! git diff.
//!
//! Not reproduced: OpenHands' prompt templates (workspace context from `recall` observations is
//! kept as the extras' text), the command metadata lines appended to `run` results, and the
//! first-message insertion `conversation_memory` does when a stream lacks a system prompt.

mod difflib;
mod observation;
mod sdk;

use crate::document::Document;
use crate::error::source_pos;
use crate::error::{ImportError, Location};
use crate::json::{array_at, as_text, scalar_text, str_at, type_name, u64_at};
use crate::openai::{parse_message, tool_definitions};
use crate::{Context, Importer};
use memlens_core::builder::{CallInfo, CompactionInfo, Message, Part, Role, TraceBuilder};
use memlens_core::{Category, ChunkId, Trace, Usage};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The OpenHands importer.
pub struct OpenHands;

/// Top-level keys that hold an event list (trajectory export, evaluation record, API page).
const CONTAINER_KEYS: [&str; 4] = ["trajectory", "history", "events", "items"];

fn is_v0_event(v: &Value) -> bool {
    let tagged = str_at(v, "action").is_some() || str_at(v, "observation").is_some();
    let stamped =
        str_at(v, "source").is_some() || (v.get("id").is_some() && v.get("timestamp").is_some());
    tagged && stamped && v.get("role").is_none()
}

/// True for any OpenHands event, either generation.
fn is_event(v: &Value) -> bool {
    is_v0_event(v) || sdk::is_event(v)
}

/// The event list of a container record.
fn container_events(v: &Value) -> Option<&Vec<Value>> {
    CONTAINER_KEYS
        .iter()
        .find_map(|k| array_at(v, k))
        .filter(|events| events.first().is_some_and(is_event))
}

impl Importer for OpenHands {
    fn name(&self) -> &'static str {
        "openhands"
    }

    fn description(&self) -> &'static str {
        "OpenHands event streams: legacy actions/observations and V1 SDK events, with condensations"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_event(first) || container_events(first).is_some()
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        if doc.first_value().is_some_and(is_event) {
            // The document is one stream: every record is an event.
            let mut stream = Stream::new("openhands-0");
            for item in doc.into_records() {
                if let Some((location, event)) = cx.accept(item) {
                    stream.event(&event, location, cx);
                }
            }
            return Ok(vec![stream.finish(cx, Location::default())]);
        }
        let mut traces = Vec::new();
        for item in doc.into_records() {
            let Some((location, record)) = cx.accept(item) else {
                continue;
            };
            let Some(events) = CONTAINER_KEYS.iter().find_map(|k| array_at(&record, k)) else {
                cx.warn(location, "skipped: record holds no OpenHands event list");
                continue;
            };
            let id = ["instance_id", "conversation_id", "id"]
                .iter()
                .find_map(|k| record.get(*k).and_then(scalar_text))
                .unwrap_or_else(|| format!("openhands-{}", traces.len()));
            let mut stream = Stream::new(id);
            if let Some(cost) = metrics_cost(&record) {
                stream.b.attribute("accumulated_cost", cost);
            }
            for event in events {
                stream.event(event, location, cx);
            }
            traces.push(stream.finish(cx, location));
        }
        Ok(traces)
    }
}

fn metrics_cost(record: &Value) -> Option<String> {
    record
        .get("metrics")
        .and_then(|m| m.get("accumulated_cost"))
        .and_then(scalar_text)
}

/// What one agent LLM response became: its output chunks, to hand ownership to later actions.
struct Response {
    text: Vec<ChunkId>,
    tool_calls: HashMap<String, ChunkId>,
}

/// Accumulated token totals seen on events, to derive one response's usage from the next.
#[derive(Default)]
struct UsageTotals {
    last: Option<Usage>,
    /// A condensation ran since `last`: its calls are in the next totals too.
    tainted: bool,
}

impl UsageTotals {
    /// The usage of the response whose event carries these totals.
    fn response_usage(&mut self, totals: Usage) -> Option<Usage> {
        let usage = match (&self.last, self.tainted) {
            (None, false) => Some(totals),
            (Some(prev), false) => difference(&totals, prev),
            (_, true) => None,
        };
        self.last = Some(totals);
        self.tainted = false;
        usage
    }
}

fn difference(now: &Usage, before: &Usage) -> Option<Usage> {
    let sub = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), b) => a.checked_sub(b.unwrap_or(0)).map(Some),
        (None, _) => Some(None),
    };
    Some(Usage {
        input_tokens: sub(now.input_tokens, before.input_tokens)?,
        output_tokens: sub(now.output_tokens, before.output_tokens)?,
        cache_read_tokens: sub(now.cache_read_tokens, before.cache_read_tokens)?,
        cache_write_tokens: sub(now.cache_write_tokens, before.cache_write_tokens)?,
        reasoning_tokens: sub(now.reasoning_tokens, before.reasoning_tokens)?,
    })
}

/// One stream being rebuilt: the builder, and the context OpenHands would send now.
pub(crate) struct Stream {
    b: TraceBuilder,
    /// The chunks in context, in order.
    view: Vec<ChunkId>,
    /// The events that keep each chunk in context (all forgotten: the chunk leaves).
    owners: HashMap<ChunkId, Vec<String>>,
    /// Identical messages seen so far, so that each event gets chunks of its own.
    occurrences: HashMap<u64, usize>,
    responses: HashMap<String, Response>,
    /// V0: tool call id of each action, for observations that only name their `cause`.
    action_calls: HashMap<String, String>,
    pending: Option<CompactionInfo>,
    /// The trigger named by a condensation request, for the condensation that follows.
    requested: Option<String>,
    totals: UsageTotals,
    events: usize,
    sdk_batch: Vec<(Value, Location)>,
}

impl Stream {
    fn new(id: impl Into<String>) -> Stream {
        Stream {
            b: TraceBuilder::new(id, "openhands"),
            view: Vec::new(),
            owners: HashMap::new(),
            occurrences: HashMap::new(),
            responses: HashMap::new(),
            action_calls: HashMap::new(),
            pending: None,
            requested: None,
            totals: UsageTotals::default(),
            events: 0,
            sdk_batch: Vec::new(),
        }
    }

    /// Reads one event of either generation.
    fn event(&mut self, event: &Value, location: Location, cx: &mut Context<'_>) {
        let index = self.events;
        self.events += 1;
        if str_at(event, "kind").is_some() && !is_v0_event(event) {
            sdk::event(self, event, index, location, cx);
        } else if is_v0_event(event) {
            self.flush_sdk(cx);
            self.v0_event(event, index, location, cx);
        } else {
            self.flush_sdk(cx);
            cx.warn(
                location,
                format!(
                    "event {index} skipped: expected an OpenHands event (\"action\", \"observation\" or \"kind\"), found {}",
                    describe(event)
                ),
            );
        }
    }

    fn flush_sdk(&mut self, cx: &mut Context<'_>) {
        if !self.sdk_batch.is_empty() {
            sdk::flush_actions(self, cx);
        }
    }

    fn finish(mut self, cx: &mut Context<'_>, location: Location) -> Trace {
        self.flush_sdk(cx);
        if let Some(compaction) = self.pending.take() {
            // Nothing was called after the last condensation: it is recorded, pointing past the
            // last call, with what it replaced.
            self.b.push_compaction(compaction);
        }
        cx.finish(self.b, location)
    }

    /// Creates fresh chunks for `message` (never shared with an identical earlier message).
    fn create(&mut self, message: &Message) -> Vec<ChunkId> {
        let n = self.occurrences.entry(message.identity_hash()).or_insert(0);
        let occurrence = *n;
        *n += 1;
        self.b.intern_message(message, occurrence)
    }

    /// Adds a message to the context, kept there by event `owner`.
    fn append(&mut self, message: &Message, owner: &str) -> Vec<ChunkId> {
        let ids = self.create(message);
        for &id in &ids {
            self.owners.insert(id, vec![owner.to_string()]);
        }
        self.view.extend(&ids);
        ids
    }

    fn add_owner(&mut self, ids: &[ChunkId], owner: &str) {
        for id in ids {
            let owners = self.owners.entry(*id).or_default();
            if !owners.iter().any(|o| o == owner) {
                owners.push(owner.to_string());
            }
        }
    }

    /// The context as sent: tool calls without their result in context (and results without
    /// their call) are left out, as OpenHands' `_filter_unmatched_tool_calls` does.
    fn context(&self) -> Vec<ChunkId> {
        let trace = self.b.trace();
        let ids_of = |category: Category| -> HashSet<&str> {
            self.view
                .iter()
                .map(|&id| trace.chunk(id))
                .filter(|c| c.category == category)
                .filter_map(|c| c.meta.tool_call_id.as_deref())
                .collect()
        };
        let calls = ids_of(Category::ToolCall);
        let results = ids_of(Category::ToolResult);
        self.view
            .iter()
            .copied()
            .filter(|&id| {
                let chunk = trace.chunk(id);
                let partner = chunk.meta.tool_call_id.as_deref().unwrap_or_default();
                match chunk.category {
                    Category::ToolCall => results.contains(partner),
                    Category::ToolResult => calls.contains(partner),
                    _ => true,
                }
            })
            .collect()
    }

    /// Records one agent LLM call whose output is `output`, made by event `owner`.
    fn call(&mut self, output: &Message, owner: &str, info: CallInfo) -> Vec<ChunkId> {
        let input = self.context();
        let ids = self.append(output, owner);
        if let Some(compaction) = self.pending.take() {
            self.b.push_compaction(compaction);
        }
        self.b.push_call(input, ids.clone(), info);
        ids
    }

    /// Applies a condensation: the forgotten events' chunks leave the context and the summary
    /// (replacing any earlier one) goes `offset` events from its start.
    fn condense(
        &mut self,
        forgotten: &HashSet<String>,
        summary: Option<&str>,
        offset: Option<usize>,
        mut info: CompactionInfo,
    ) {
        let is_summary =
            |s: &Stream, id: ChunkId| s.b.trace().chunk(id).category == Category::Summary;
        let mut replaced: Vec<ChunkId> = Vec::new();
        let view = std::mem::take(&mut self.view);
        for id in view {
            let owners = self.owners.get(&id).map(Vec::as_slice).unwrap_or_default();
            let gone = !owners.is_empty() && owners.iter().all(|o| forgotten.contains(o));
            let superseded = summary.is_some() && is_summary(self, id);
            if gone || superseded {
                replaced.push(id);
            } else {
                self.view.push(id);
            }
        }
        if let Some(text) = summary {
            let message = Message {
                role: Some(Role::User),
                role_name: "user".into(),
                parts: vec![Part::Text(text.to_string())],
                category: Some(Category::Summary),
                ..Message::default()
            };
            let at = self.event_position(offset.unwrap_or(0));
            let ids = self.create(&message);
            for &id in &ids {
                // Kept until a later summary replaces it.
                self.owners.insert(id, Vec::new());
            }
            self.view.splice(at..at, ids.iter().copied());
            info.summary = ids.first().copied();
        }
        info.trigger = info.trigger.or_else(|| self.requested.take());
        self.totals.tainted = true;
        info.replaced = Some(match self.pending.take() {
            // Two condensations without a call between them make one compaction.
            Some(earlier) => earlier
                .replaced
                .unwrap_or_default()
                .into_iter()
                .chain(replaced)
                .collect(),
            None => replaced,
        });
        self.pending = Some(info);
    }

    /// The position in the context before the `offset`-th event (counting events with chunks).
    fn event_position(&self, offset: usize) -> usize {
        let mut seen: HashSet<&str> = HashSet::new();
        for (i, id) in self.view.iter().enumerate() {
            let owners = self.owners.get(id).map(Vec::as_slice).unwrap_or_default();
            // Only between events: the next chunks of an event already counted stay with it.
            let continues = !owners.is_empty() && owners.iter().all(|o| seen.contains(o.as_str()));
            if seen.len() >= offset && !continues {
                return i;
            }
            seen.extend(owners.iter().map(String::as_str));
        }
        self.view.len()
    }

    /// Reads one V0 event.
    fn v0_event(&mut self, ev: &Value, index: usize, location: Location, cx: &mut Context<'_>) {
        let id = ev
            .get("id")
            .and_then(scalar_text)
            .unwrap_or_else(|| format!("#{index}"));
        if let Some(action) = str_at(ev, "action") {
            self.v0_action(action, ev, &id, location, cx);
        } else if let Some(observation) = str_at(ev, "observation") {
            self.v0_observation(observation, ev, &id, location, cx);
        }
    }

    fn v0_action(
        &mut self,
        action: &str,
        ev: &Value,
        id: &str,
        location: Location,
        cx: &mut Context<'_>,
    ) {
        let args = ev.get("args").unwrap_or(&Value::Null);
        let source = str_at(ev, "source").unwrap_or("agent");
        let metadata = ev.get("tool_call_metadata").filter(|m| m.is_object());
        if let Some(call_id) = metadata.and_then(|m| str_at(m, "tool_call_id")) {
            self.action_calls
                .insert(id.to_string(), call_id.to_string());
        }
        match action {
            "system" => {
                let owner = id.to_string();
                if let Some(tools) = tool_definitions(args) {
                    self.append(&tools, &owner);
                }
                let text = str_at(args, "content").unwrap_or_default();
                self.append(&Message::text("system", text), &owner);
            }
            "condensation" => self.v0_condensation(ev, args, location),
            "condensation_request" => self.requested = Some("requested".into()),
            "recall" | "change_agent_state" | "null" | "pause" | "resume" | "stop" | "start"
            | "loop_recovery" | "push" | "send_pr" => {}
            _ if metadata.is_some() && source != "user" => {
                self.v0_response(ev, metadata.unwrap_or(&Value::Null), id, location, cx)
            }
            "message" if source == "user" => {
                let message = Message {
                    parts: user_parts(args),
                    ..Message::text("user", "")
                };
                self.append(&message, id);
            }
            "run" if source == "user" => {
                let command = str_at(args, "command").unwrap_or_default();
                let text = format!("User executed the command:\n{command}");
                self.append(&Message::text("user", text), id);
            }
            "message" | "finish" | "reject" if source != "user" => {
                let text = match action {
                    "message" => str_at(args, "content").unwrap_or_default().to_string(),
                    _ => str_at(args, "thought")
                        .filter(|t| !t.is_empty())
                        .or_else(|| str_at(ev, "message"))
                        .unwrap_or_default()
                        .to_string(),
                };
                let info = self.v0_info(ev, None, location);
                self.call(&Message::text("assistant", text), id, info);
            }
            _ if source == "user" => {
                let text = str_at(ev, "message").unwrap_or(action).to_string();
                self.append(&Message::text("user", text), id);
            }
            _ => {
                if !KNOWN_V0_ACTIONS.contains(&action) {
                    cx.warn(
                        location,
                        format!("unknown OpenHands action {action:?}: kept as an agent call"),
                    );
                }
                // Without function calling the agent wrote its action as text: its thought and
                // the action's arguments are what the model produced.
                let mut parts = Vec::new();
                if let Some(thought) = str_at(args, "thought").filter(|t| !t.is_empty()) {
                    parts.push(Part::Text(thought.to_string()));
                }
                let mut rest = args.clone();
                if let Some(map) = rest.as_object_mut() {
                    map.remove("thought");
                }
                parts.push(Part::Other {
                    kind: format!("action:{action}"),
                    text: as_text(&rest),
                });
                let message = Message {
                    parts,
                    ..Message::text("assistant", "")
                };
                let info = self.v0_info(ev, None, location);
                self.call(&message, id, info);
            }
        }
    }

    /// An action made by a function-calling response: the first action of a response makes the
    /// call; the others only keep their tool call in context.
    fn v0_response(
        &mut self,
        ev: &Value,
        metadata: &Value,
        id: &str,
        location: Location,
        cx: &mut Context<'_>,
    ) {
        let model_response = metadata.get("model_response").filter(|r| r.is_object());
        let response_id = model_response
            .and_then(|r| str_at(r, "id"))
            .map(str::to_string)
            .unwrap_or_else(|| format!("event-{id}"));
        let call_id = str_at(metadata, "tool_call_id")
            .unwrap_or_default()
            .to_string();
        if let Some(response) = self.responses.get(&response_id) {
            let mut ids = response.text.clone();
            ids.extend(response.tool_calls.get(&call_id));
            self.add_owner(&ids, id);
            return;
        }
        let message = model_response
            .and_then(|r| array_at(r, "choices"))
            .and_then(|c| c.first())
            .and_then(|c| c.get("message"))
            .and_then(|m| parse_message(m, location, cx));
        let message = message.unwrap_or_else(|| {
            cx.warn(
                location,
                format!("event {id}: tool_call_metadata without a model_response message: the call is rebuilt from the action"),
            );
            let name = str_at(metadata, "function_name").unwrap_or_default();
            Message {
                parts: vec![Part::ToolCall {
                    id: call_id.clone(),
                    name: name.to_string(),
                    arguments: ev.get("args").map(as_text).unwrap_or_default(),
                }],
                ..Message::text("assistant", "")
            }
        });
        let info = self.v0_info(ev, model_response, location);
        let ids = self.call(&message, id, info);
        let trace = self.b.trace();
        let mut response = Response {
            text: Vec::new(),
            tool_calls: HashMap::new(),
        };
        for &chunk_id in &ids {
            let chunk = trace.chunk(chunk_id);
            match (&chunk.category, &chunk.meta.tool_call_id) {
                (Category::ToolCall, Some(call)) => {
                    response.tool_calls.insert(call.clone(), chunk_id);
                }
                _ => response.text.push(chunk_id),
            }
        }
        // A tool call stays while the action that made it is in context; the text while any is.
        for (call, &chunk_id) in &response.tool_calls {
            if *call != call_id {
                self.owners.insert(chunk_id, Vec::new());
            }
        }
        self.responses.insert(response_id, response);
    }

    /// What a V0 action says of the call that produced it.
    fn v0_info(
        &mut self,
        ev: &Value,
        model_response: Option<&Value>,
        location: Location,
    ) -> CallInfo {
        let response_id = model_response.and_then(|r| str_at(r, "id"));
        let metrics = ev.get("llm_metrics").filter(|m| m.is_object());
        let own_usage = model_response
            .and_then(|r| r.get("usage"))
            .filter(|u| u.is_object())
            .map(litellm_usage);
        let listed = metrics.zip(response_id).and_then(|(m, rid)| {
            array_at(m, "token_usages")?
                .iter()
                .find(|u| str_at(u, "response_id") == Some(rid))
                .map(token_usage)
        });
        let accumulated = metrics
            .and_then(|m| m.get("accumulated_token_usage"))
            .filter(|u| u.is_object())
            .map(token_usage);
        let from_totals = accumulated.and_then(|t| self.totals.response_usage(t));
        let latency_ms = metrics.zip(response_id).and_then(|(m, rid)| {
            array_at(m, "response_latencies")?
                .iter()
                .find(|l| str_at(l, "response_id") == Some(rid))
                .and_then(|l| l.get("latency")?.as_f64())
                .map(|s| s * 1000.0)
        });
        CallInfo {
            model: model_response
                .and_then(|r| str_at(r, "model"))
                .map(str::to_string),
            usage: own_usage.or(listed).or(from_totals),
            ended_at: ev.get("timestamp").and_then(scalar_text),
            latency_ms,
            source: Some(source_pos(location)),
            ..CallInfo::default()
        }
    }

    fn v0_condensation(&mut self, ev: &Value, args: &Value, location: Location) {
        let mut forgotten: HashSet<String> = array_at(args, "forgotten_event_ids")
            .into_iter()
            .flatten()
            .filter_map(scalar_text)
            .collect();
        // A range of ids: event ids increase monotonically.
        if let (Some(start), Some(end)) = (
            u64_at(args, "forgotten_events_start_id"),
            u64_at(args, "forgotten_events_end_id"),
        ) {
            forgotten.extend((start..=end.min(start + 1_000_000)).map(|i| i.to_string()));
        }
        let info = CompactionInfo {
            timestamp: ev.get("timestamp").and_then(scalar_text),
            source: Some(source_pos(location)),
            ..CompactionInfo::default()
        };
        let summary = str_at(args, "summary");
        let offset = u64_at(args, "summary_offset").map(|n| n as usize);
        self.condense(&forgotten, summary, offset, info);
    }
}

const KNOWN_V0_ACTIONS: [&str; 12] = [
    "run",
    "run_ipython",
    "read",
    "write",
    "edit",
    "browse",
    "browse_interactive",
    "delegate",
    "think",
    "call_tool_mcp",
    "task_tracking",
    "summarize",
];

/// A user message's parts: its text and image placeholders.
fn user_parts(args: &Value) -> Vec<Part> {
    let mut parts = vec![Part::Text(
        str_at(args, "content").unwrap_or_default().to_string(),
    )];
    for url in array_at(args, "image_urls")
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let what = if url.starts_with("data:") {
            "inline data"
        } else {
            url
        };
        parts.push(Part::Other {
            kind: "image".into(),
            text: format!("[image: {what}]"),
        });
    }
    parts
}

/// LiteLLM response usage (OpenAI spelling; Anthropic's cache counts when present).
/// `prompt_tokens` already includes cached tokens, read and written.
pub(crate) fn litellm_usage(u: &Value) -> Usage {
    let mut usage = crate::openai::parse_usage(u);
    if usage.cache_read_tokens.is_none() {
        usage.cache_read_tokens = u64_at(u, "cache_read_input_tokens");
    }
    usage.cache_write_tokens = u64_at(u, "cache_creation_input_tokens");
    usage
}

/// OpenHands' `TokenUsage` (`openhands/llm/metrics.py`, the SDK's `llm/utils/metrics.py`).
fn token_usage(u: &Value) -> Usage {
    Usage {
        input_tokens: u64_at(u, "prompt_tokens"),
        output_tokens: u64_at(u, "completion_tokens"),
        cache_read_tokens: u64_at(u, "cache_read_tokens"),
        cache_write_tokens: u64_at(u, "cache_write_tokens"),
        reasoning_tokens: u64_at(u, "reasoning_tokens"),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Object(_) => crate::json::describe(v),
        other => type_name(other).to_string(),
    }
}
