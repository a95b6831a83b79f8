//! OpenHands V1 (software-agent-sdk) events, tagged by `kind` (github.com/OpenHands/software-agent-sdk,
//! `openhands-sdk/openhands/sdk/event/`): the `LLMConvertibleEvent`s become messages as their
//! `to_llm_message` does, consecutive `ActionEvent`s of one `llm_response_id` make one assistant
//! message (`events_to_messages` / `_combine_action_events` in `base.py`: the thought and reasoning
//! of the first, one tool call each), and `Condensation` forgets `forgotten_event_ids` with its
//! `summary` inserted at `summary_offset` (`condenser.py`).
//!
//! ```json
//! {"kind": "ActionEvent", "id": "e3", "source": "agent", "llm_response_id": "resp-2",
//!  "thought": [{"type": "text", "text": "Run the tests."}], "reasoning_content": null,
//!  "tool_name": "terminal", "tool_call_id": "call_1",
//!  "tool_call": {"id": "call_1", "name": "terminal", "arguments": "{\"command\": \"pytest\"}"}}
//! {"kind": "ObservationEvent", "id": "e4", "source": "environment", "tool_name": "terminal",
//!  "tool_call_id": "call_1", "action_id": "e3",
//!  "observation": {"kind": "TerminalObservation", "content": [{"type": "text", "text": "1 failed"}]}}
//! ```

use super::{token_usage, Stream};
use crate::error::Location;
use crate::json::{array_at, as_text, scalar_text, str_at, u64_at};
use crate::openai::tool_definitions;
use crate::Context;
use memlens_core::builder::{CallInfo, CompactionInfo, Message, Part, Role};
use memlens_core::Category;
use serde_json::Value;
use std::collections::HashSet;

/// The kinds a V1 stream is recognized by.
const KINDS: [&str; 9] = [
    "SystemPromptEvent",
    "MessageEvent",
    "ActionEvent",
    "ObservationEvent",
    "UserRejectObservation",
    "AgentErrorEvent",
    "Condensation",
    "CondensationRequest",
    "CondensationSummaryEvent",
];

/// Kinds that never reach the model: state, streaming and UI events, and the ask-user pair (the
/// agent reads the answer through the tool's observation). A stream may start with any of them
/// (a saved conversation opens with its `ConversationStateUpdateEvent`).
const SILENT_KINDS: [&str; 14] = [
    "PauseEvent",
    "InterruptEvent",
    "ConversationStateUpdateEvent",
    "ConversationErrorEvent",
    "TokenEvent",
    "StreamingDeltaEvent",
    "LLMCompletionLogEvent",
    "SecurityAnalyzerEvent",
    "ConversationIterationLimitEvent",
    "HookExecutionEvent",
    "WarningEvent",
    "AskUserRequestEvent",
    "AskUserResponseEvent",
    // Tool calls an ACP server (an external agent) ran: in its own context, not this one's.
    "ACPToolCallEvent",
];

/// True for a V1 SDK event: a message kind, or a state kind stamped like an SDK `Event` (`id`,
/// `timestamp`, `source`), so that a stream opening with state updates is still recognized.
pub(super) fn is_event(v: &Value) -> bool {
    match str_at(v, "kind") {
        Some(k) if KINDS.contains(&k) => true,
        Some(k) if SILENT_KINDS.contains(&k) => {
            v.get("id").is_some() && v.get("timestamp").is_some() && v.get("source").is_some()
        }
        _ => false,
    }
}

fn event_id(ev: &Value, index: usize) -> String {
    ev.get("id")
        .and_then(scalar_text)
        .unwrap_or_else(|| format!("#{index}"))
}

/// Reads one V1 event. Action events wait in the stream's batch until their response is complete.
pub(super) fn event(
    s: &mut Stream,
    ev: &Value,
    index: usize,
    location: Location,
    cx: &mut Context<'_>,
) {
    let kind = str_at(ev, "kind").unwrap_or_default();
    if kind == "ActionEvent" {
        let same_response = s.sdk_batch.first().is_none_or(|(first, _)| {
            str_at(first, "llm_response_id") == str_at(ev, "llm_response_id")
        });
        if !same_response {
            flush_actions(s, cx);
        }
        let mut ev = ev.clone();
        if ev.get("id").is_none() {
            if let Some(map) = ev.as_object_mut() {
                map.insert("id".into(), Value::String(format!("#{index}")));
            }
        }
        s.sdk_batch.push((ev, location));
        return;
    }
    s.flush_sdk(cx);
    let id = event_id(ev, index);
    match kind {
        "SystemPromptEvent" => {
            if let Some(tools) = tool_definitions(ev) {
                s.append(&tools, &id);
            }
            let mut parts = content_parts(ev.get("system_prompt").unwrap_or(&Value::Null));
            parts.extend(content_parts(
                ev.get("dynamic_context").unwrap_or(&Value::Null),
            ));
            let message = Message {
                parts,
                ..Message::text("system", "")
            };
            s.append(&message, &id);
        }
        "MessageEvent" if !ev.get("llm_message").is_some_and(Value::is_object) => cx.warn(
            location,
            format!("event {index}: MessageEvent without an \"llm_message\" object: skipped"),
        ),
        "MessageEvent" => message_event(s, ev, &id, location),
        "ObservationEvent" | "UserRejectObservation" | "AgentErrorEvent" => {
            let content = match kind {
                "ObservationEvent" => observation_text(ev),
                "UserRejectObservation" => format!(
                    "Action rejected: {}",
                    str_at(ev, "rejection_reason").unwrap_or("User rejected the action")
                ),
                _ => str_at(ev, "error").unwrap_or_default().to_string(),
            };
            let message = Message {
                role: Some(Role::Tool),
                role_name: "tool".into(),
                parts: vec![Part::ToolResult {
                    id: str_at(ev, "tool_call_id").unwrap_or_default().to_string(),
                    name: str_at(ev, "tool_name").map(str::to_string),
                    content,
                }],
                ..Message::default()
            };
            s.append(&message, &id);
        }
        "Condensation" => {
            let forgotten: HashSet<String> = array_at(ev, "forgotten_event_ids")
                .into_iter()
                .flatten()
                .filter_map(scalar_text)
                .collect();
            let info = CompactionInfo {
                timestamp: ev.get("timestamp").and_then(scalar_text),
                source: Some(super::source_pos(location)),
                ..CompactionInfo::default()
            };
            let offset = u64_at(ev, "summary_offset").map(|n| n as usize);
            s.condense(&forgotten, str_at(ev, "summary"), offset, info);
        }
        "CondensationRequest" => {
            s.requested = Some(str_at(ev, "reason").unwrap_or("requested").to_string());
        }
        "CondensationSummaryEvent" => {
            let message = Message {
                category: Some(Category::Summary),
                ..Message::text("user", str_at(ev, "summary").unwrap_or_default())
            };
            s.append(&message, &id);
        }
        kind if SILENT_KINDS.contains(&kind) => {}
        kind => cx.warn(
            location,
            format!("event {index}: unknown OpenHands event kind {kind:?}: skipped"),
        ),
    }
}

fn message_event(s: &mut Stream, ev: &Value, id: &str, location: Location) {
    let llm_message = ev.get("llm_message").unwrap_or(&Value::Null);
    let source = str_at(ev, "source").unwrap_or("user");
    let role_name = str_at(llm_message, "role").unwrap_or(if source == "agent" {
        "assistant"
    } else {
        "user"
    });
    let mut parts = reasoning_parts(llm_message);
    parts.extend(content_parts(
        llm_message.get("content").unwrap_or(&Value::Null),
    ));
    parts.extend(content_parts(
        ev.get("extended_content").unwrap_or(&Value::Null),
    ));
    let message = Message {
        role: Some(Role::parse(role_name)),
        role_name: role_name.to_string(),
        parts,
        ..Message::default()
    };
    if message.role == Some(Role::Assistant) {
        let info = call_info(s, ev, location);
        s.call(&message, id, info);
    } else {
        s.append(&message, id);
    }
}

/// Turns the batched actions of one response into its call.
pub(super) fn flush_actions(s: &mut Stream, _cx: &mut Context<'_>) {
    let batch = std::mem::take(&mut s.sdk_batch);
    let Some((first, location)) = batch.first() else {
        return;
    };
    let mut parts = reasoning_parts(first);
    parts.extend(content_parts(first.get("thought").unwrap_or(&Value::Null)));
    let text_parts = parts.len();
    let mut owners = Vec::new();
    for (ev, _) in &batch {
        owners.push(str_at(ev, "id").unwrap_or_default().to_string());
        let call = ev.get("tool_call").unwrap_or(&Value::Null);
        let function = call.get("function").unwrap_or(call);
        parts.push(Part::ToolCall {
            id: str_at(call, "id")
                .or_else(|| str_at(ev, "tool_call_id"))
                .unwrap_or_default()
                .to_string(),
            name: str_at(function, "name")
                .or_else(|| str_at(ev, "tool_name"))
                .unwrap_or_default()
                .to_string(),
            arguments: function.get("arguments").map(as_text).unwrap_or_default(),
        });
    }
    let message = Message {
        parts,
        ..Message::text("assistant", "")
    };
    let info = call_info(s, first, *location);
    let owner = owners.first().cloned().unwrap_or_default();
    let ids = s.call(&message, &owner, info);
    // Thought and reasoning stay while any action of the response is in context; each tool call
    // while its own action is.
    for (i, &chunk) in ids.iter().enumerate() {
        let kept_by = match i.checked_sub(text_parts) {
            None => owners.clone(),
            Some(n) => owners.get(n).cloned().into_iter().collect(),
        };
        s.owners.insert(chunk, kept_by);
    }
}

/// What an agent event says of its call: its time, and usage from the accumulated `metrics`
/// snapshot some SDK versions attach.
fn call_info(s: &mut Stream, ev: &Value, location: Location) -> CallInfo {
    let totals = ev
        .get("metrics")
        .and_then(|m| m.get("accumulated_token_usage"))
        .filter(|u| u.is_object())
        .map(token_usage);
    CallInfo {
        model: ev
            .get("metrics")
            .and_then(|m| str_at(m, "model_name"))
            .map(str::to_string),
        usage: totals.and_then(|t| s.totals.response_usage(t)),
        ended_at: ev.get("timestamp").and_then(scalar_text),
        source: Some(super::source_pos(location)),
        ..CallInfo::default()
    }
}

/// Reasoning of a response: `reasoning_content` and Anthropic thinking blocks.
fn reasoning_parts(v: &Value) -> Vec<Part> {
    let mut parts = Vec::new();
    for block in array_at(v, "thinking_blocks").into_iter().flatten() {
        if let Some(text) = str_at(block, "thinking").filter(|t| !t.is_empty()) {
            parts.push(Part::Reasoning(text.to_string()));
        }
    }
    if let Some(text) = str_at(v, "reasoning_content").filter(|t| !t.is_empty()) {
        parts.push(Part::Reasoning(text.to_string()));
    }
    parts
}

/// SDK content: a `TextContent` / `ImageContent` list (or one of them, or a string).
fn content_parts(content: &Value) -> Vec<Part> {
    let items = match content {
        Value::Null => return Vec::new(),
        Value::String(s) => return vec![Part::Text(s.clone())],
        Value::Array(items) => items.as_slice(),
        other => std::slice::from_ref(other),
    };
    items
        .iter()
        .filter_map(|item| match (str_at(item, "type"), item) {
            (_, Value::String(s)) => Some(Part::Text(s.clone())),
            (Some("text") | None, _) => str_at(item, "text").map(|t| Part::Text(t.to_string())),
            (Some(kind), _) => {
                let what = array_at(item, "image_urls")
                    .and_then(|u| u.first())
                    .and_then(Value::as_str)
                    .filter(|u| !u.starts_with("data:"))
                    .unwrap_or("inline data");
                Some(Part::Other {
                    kind: kind.to_string(),
                    text: format!("[{kind}: {what}]"),
                })
            }
        })
        .collect()
}

/// An observation's text as the model sees it: its `content` list (current SDK) or its output
/// field (earlier SDK versions), then the agent context's `extended_content`.
fn observation_text(ev: &Value) -> String {
    let observation = ev.get("observation").unwrap_or(&Value::Null);
    let mut texts: Vec<String> = match observation.get("content") {
        Some(content @ (Value::Array(_) | Value::String(_))) => content_parts(content)
            .into_iter()
            .map(|p| match p {
                Part::Text(t) | Part::Other { text: t, .. } => t,
                _ => String::new(),
            })
            .collect(),
        _ => ["output", "text", "message", "error"]
            .iter()
            .find_map(|k| str_at(observation, k))
            .map(|t| vec![t.to_string()])
            .unwrap_or_else(|| {
                let mut rest = observation.clone();
                if let Some(map) = rest.as_object_mut() {
                    map.remove("kind");
                }
                vec![as_text(&rest)]
            }),
    };
    for part in content_parts(ev.get("extended_content").unwrap_or(&Value::Null)) {
        if let Part::Text(t) = part {
            texts.push(t);
        }
    }
    texts.join("\n")
}
