//! The messages of a GenAI call span, in the three generations of the conventions: the current
//! `gen_ai.{system_instructions,input.messages,output.messages}` JSON attributes, the older
//! flattened `gen_ai.prompt.{i}.*` / `gen_ai.completion.{i}.*` attributes, and the per-message
//! span events. The current layout's messages (`{role, parts}`) are parsed by [`semconv_message`],
//! which the tracing platforms' payloads share.

use super::{Span, EVENT_ROLES};
use crate::error::Location;
use crate::json::{as_text, str_at, type_name};
use crate::Context;
use memlens_core::builder::{Message, Part, Role};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The call's input and output messages. Each side comes from the newest convention that has it.
pub(super) fn span_messages(span: &Span, cx: &mut Context<'_>) -> (Vec<Message>, Vec<Message>) {
    let mut input = Vec::new();
    if let Some(v) = span.attrs.get("gen_ai.system_instructions") {
        input.extend(system_instructions(v, span, cx));
    }
    let (event_input, event_output) = event_messages(span, cx);
    if let Some(v) = span.attrs.get("gen_ai.input.messages") {
        input.extend(semconv_messages(v, "gen_ai.input.messages", span, cx));
    } else if let Some(msgs) = legacy_messages(span, "gen_ai.prompt.", "user", cx) {
        input.extend(msgs);
    } else {
        input.extend(event_input);
    }
    let output = if let Some(v) = span.attrs.get("gen_ai.output.messages") {
        semconv_messages(v, "gen_ai.output.messages", span, cx)
    } else if let Some(msgs) = legacy_messages(span, "gen_ai.completion.", "assistant", cx) {
        msgs
    } else {
        event_output
    };
    (input, output)
}

/// A JSON-string attribute decoded; an already structured value (an OTLP array or kvlist) is
/// taken as it is. `None` (with a warning) when the string is not JSON.
fn decode_json(v: &Value, key: &str, span: &Span, cx: &mut Context<'_>) -> Option<Value> {
    match v {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(parsed) => Some(parsed),
            Err(e) => {
                // Typically an attribute cut by a length limit (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT).
                cx.warn(
                    span.location,
                    format!(
                        "{}: {key} is not valid JSON ({e}, {} bytes): ignored",
                        span.label(),
                        s.len()
                    ),
                );
                None
            }
        },
        other => Some(other.clone()),
    }
}

fn semconv_messages(v: &Value, key: &str, span: &Span, cx: &mut Context<'_>) -> Vec<Message> {
    let items = match decode_json(v, key, span, cx) {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(one @ Value::Object(_)) => vec![one],
        Some(other) => {
            cx.warn(
                span.location,
                format!(
                    "{}: {key} is {}, expected a list of messages: ignored",
                    span.label(),
                    type_name(&other)
                ),
            );
            return Vec::new();
        }
    };
    let label = span.label();
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            if str_at(item, "role").is_none() {
                cx.warn(
                    span.location,
                    format!("{label}: {key} message {i} skipped: it has no string \"role\""),
                );
                return None;
            }
            semconv_message(item, span.location, &label, cx)
        })
        .collect()
}

/// One message of the GenAI conventions' layout, `{role, parts: [...]}` (or, not the convention
/// but written by some instrumentations, `{role, content}`); `None` without a string role.
/// Shared with the chat payloads of the tracing platforms, which store the same layout
/// (pydantic-ai's instrumentation exported to Langfuse). `label` prefixes warnings.
pub(crate) fn semconv_message(
    item: &Value,
    location: Location,
    label: &str,
    cx: &mut Context<'_>,
) -> Option<Message> {
    let role_name = str_at(item, "role")?;
    let role = Role::parse(role_name);
    if let Role::Other(name) = &role {
        cx.warn(
            location,
            format!("{label}: unknown role {name:?}: kept as category \"other\""),
        );
    }
    let parts = match item.get("parts") {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| semconv_part(p, location, label, cx))
            .collect(),
        _ => loose_content(item.get("content").unwrap_or(&Value::Null)),
    };
    Some(Message {
        role: Some(role),
        role_name: role_name.to_string(),
        name: str_at(item, "name").map(str::to_string),
        parts,
        ..Message::default()
    })
}

/// One part of a current-convention message.
fn semconv_part(p: &Value, location: Location, label: &str, cx: &mut Context<'_>) -> Option<Part> {
    let text_of = |key: &str| p.get(key).map(as_text).unwrap_or_default();
    let part = match str_at(p, "type") {
        Some("text") => Part::Text(text_of("content")),
        Some("reasoning" | "thinking") => Part::Reasoning(text_of("content")),
        Some("tool_call") => Part::ToolCall {
            id: text_of("id"),
            name: text_of("name"),
            // Objects are serialized back to JSON text: the model saw (and will see) JSON.
            arguments: text_of("arguments"),
        },
        // Whatever the message role: a tool result is one however it is delivered. The
        // convention names it `response`; pydantic-ai's `_otel_messages.py` writes `result`.
        Some("tool_call_response") => Part::ToolResult {
            id: text_of("id"),
            name: str_at(p, "name").map(str::to_string),
            content: p
                .get("response")
                .or_else(|| p.get("result"))
                .map(as_text)
                .unwrap_or_default(),
        },
        Some(kind) => Part::Other {
            kind: kind.to_string(),
            text: placeholder(kind, p),
        },
        None => match p {
            Value::String(s) => Part::Text(s.clone()),
            _ if p.get("content").is_some() => Part::Text(text_of("content")),
            other => {
                cx.warn(
                    location,
                    format!(
                        "{label}: message part of type {} without \"type\" ignored",
                        type_name(other)
                    ),
                );
                return None;
            }
        },
    };
    Some(part)
}

/// A short stand-in for media and files: their tokens are not counted from bytes or base64.
fn placeholder(kind: &str, p: &Value) -> String {
    let detail = ["uri", "url", "file_id", "mime_type", "modality"]
        .iter()
        .find_map(|k| str_at(p, k))
        .map(|d| {
            if d.starts_with("data:") {
                "inline data"
            } else {
                d
            }
        })
        .unwrap_or("inline data");
    format!("[{kind}: {detail}]")
}

/// `gen_ai.system_instructions`: a JSON list of parts, one system message placed first.
fn system_instructions(v: &Value, span: &Span, cx: &mut Context<'_>) -> Option<Message> {
    let parts = match v {
        // Plain text instead of JSON: it is still the instructions; only text that looks like
        // broken JSON is worth a warning.
        Value::String(s) if serde_json::from_str::<Value>(s).is_err() => {
            let t = s.trim_start();
            if t.starts_with('[') || t.starts_with('{') {
                decode_json(v, "gen_ai.system_instructions", span, cx);
            }
            vec![Part::Text(s.clone())]
        }
        _ => match decode_json(v, "gen_ai.system_instructions", span, cx)? {
            Value::Array(items) => items
                .iter()
                .filter_map(|p| semconv_part(p, span.location, &span.label(), cx))
                .collect(),
            Value::Null => return None,
            other => semconv_part(&other, span.location, &span.label(), cx)
                .into_iter()
                .collect(),
        },
    };
    Some(Message {
        role: Some(Role::System),
        role_name: "system".into(),
        parts,
        ..Message::default()
    })
}

/// A chat-API-like message before normalization: what the flattened attributes and the events
/// carry.
#[derive(Default)]
struct Loose {
    role: Option<String>,
    content: Option<Value>,
    name: Option<String>,
    tool_call_id: Option<String>,
    /// Tool calls by index: (id, name, arguments).
    tool_calls: BTreeMap<u64, (String, String, String)>,
}

impl Loose {
    fn into_message(self, default_role: &str) -> Message {
        let role_name = self.role.unwrap_or_else(|| default_role.to_string());
        let role = Role::parse(&role_name);
        let content = self.content.unwrap_or(Value::Null);
        let mut parts = Vec::new();
        match (&role, self.tool_call_id) {
            (Role::Tool, Some(id)) => parts.push(Part::ToolResult {
                id,
                name: self.name.clone(),
                content: as_text(&content),
            }),
            _ => parts.extend(loose_content(&content)),
        }
        let has_calls = !self.tool_calls.is_empty();
        for (id, name, arguments) in self.tool_calls.into_values() {
            parts.push(Part::ToolCall {
                id,
                name,
                arguments,
            });
        }
        // An empty text beside tool calls is the absence of text; dropping it keeps the resent
        // copy of this message (which may omit it) identical, so it is interned.
        if has_calls {
            parts.retain(|p| !matches!(p, Part::Text(t) if t.is_empty()));
        }
        Message {
            name: self.name.filter(|_| role != Role::Tool),
            role: Some(role),
            role_name,
            parts,
            ..Message::default()
        }
    }
}

/// Content of a loose message: text, or a JSON list of content blocks (OpenAI parts or Anthropic
/// blocks, which instrumentations serialize to a string) when it is one.
pub(crate) fn loose_content(content: &Value) -> Vec<Part> {
    match content {
        Value::Null => Vec::new(),
        Value::String(s) => {
            let t = s.trim_start();
            if t.starts_with('[') {
                if let Ok(Value::Array(blocks)) = serde_json::from_str::<Value>(s) {
                    if let Some(parts) = content_blocks(&blocks) {
                        return parts;
                    }
                }
            }
            vec![Part::Text(s.clone())]
        }
        Value::Array(blocks) => {
            content_blocks(blocks).unwrap_or_else(|| vec![Part::Text(content.to_string())])
        }
        other => vec![Part::Text(as_text(other))],
    }
}

/// Typed content blocks as parts; `None` unless every item is an object with a string `type`
/// (otherwise the text is just text that happens to start with `[`).
fn content_blocks(blocks: &[Value]) -> Option<Vec<Part>> {
    if blocks.is_empty() || !blocks.iter().all(|b| str_at(b, "type").is_some()) {
        return None;
    }
    let text_of = |b: &Value, key: &str| b.get(key).map(as_text).unwrap_or_default();
    let parts = blocks
        .iter()
        .map(|b| match str_at(b, "type").unwrap_or_default() {
            "text" | "input_text" | "output_text" => Part::Text(
                str_at(b, "text")
                    .or_else(|| str_at(b, "content"))
                    .unwrap_or_default()
                    .to_string(),
            ),
            "thinking" | "reasoning" => Part::Reasoning(text_of(b, "thinking")),
            "tool_use" => Part::ToolCall {
                id: text_of(b, "id"),
                name: text_of(b, "name"),
                arguments: text_of(b, "input"),
            },
            "tool_result" => Part::ToolResult {
                id: text_of(b, "tool_use_id"),
                name: None,
                content: match b.get("content") {
                    Some(Value::Array(inner)) => {
                        Part::joined_text(content_blocks(inner).unwrap_or_default())
                    }
                    Some(other) => as_text(other),
                    None => String::new(),
                },
            },
            kind => Part::Other {
                kind: kind.to_string(),
                text: format!("[{kind}]"),
            },
        })
        .collect();
    Some(parts)
}

/// Messages from flattened `{prefix}{i}.{field}` attributes, ordered by the numeric index `i`.
/// `None` when the span has none.
fn legacy_messages(
    span: &Span,
    prefix: &str,
    default_role: &str,
    cx: &mut Context<'_>,
) -> Option<Vec<Message>> {
    let mut by_index: BTreeMap<u64, Loose> = BTreeMap::new();
    for (key, value) in &span.attrs {
        let Some(rest) = key.strip_prefix(prefix) else {
            continue;
        };
        let Some((index, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(index) = index.parse::<u64>() else {
            let field = field.split('.').next().unwrap_or_default();
            if ["role", "content", "name", "tool_call_id", "tool_calls"].contains(&field) {
                cx.warn(
                    span.location,
                    format!(
                        "{}: attribute {key} skipped: its message index is not a number",
                        span.label()
                    ),
                );
            }
            continue;
        };
        let m = by_index.entry(index).or_default();
        let text = || Some(as_text(value)).filter(|_| !value.is_null());
        match field {
            "role" => m.role = text(),
            "content" => m.content = Some(value.clone()),
            "name" => m.name = text(),
            "tool_call_id" => m.tool_call_id = text(),
            _ => {
                let Some((j, call_field)) = field
                    .strip_prefix("tool_calls.")
                    .and_then(|f| f.split_once('.'))
                else {
                    continue;
                };
                let Ok(j) = j.parse::<u64>() else {
                    continue;
                };
                let call = m.tool_calls.entry(j).or_default();
                match call_field {
                    "id" => call.0 = as_text(value),
                    "name" => call.1 = as_text(value),
                    "arguments" => call.2 = as_text(value),
                    _ => {}
                }
            }
        }
    }
    if by_index.is_empty() {
        return None;
    }
    Some(
        by_index
            .into_values()
            .map(|m| m.into_message(default_role))
            .collect(),
    )
}

/// Messages from the older per-message span events: (input, output).
fn event_messages(span: &Span, cx: &mut Context<'_>) -> (Vec<Message>, Vec<Message>) {
    let (mut input, mut output) = (Vec::new(), Vec::new());
    for event in &span.events {
        let Some((_, role)) = EVENT_ROLES.iter().find(|(n, _)| *n == event.name) else {
            continue;
        };
        // The event body is either flattened into attributes or one JSON string attribute.
        let mut body = Value::Object(event.attrs.clone());
        for key in ["gen_ai.event.content", "body"] {
            if let Some(Value::String(s)) = event.attrs.get(key) {
                if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(s) {
                    body = v;
                }
            }
        }
        let is_choice = event.name == "gen_ai.choice";
        // A choice wraps its message; the message may itself be a JSON string.
        let message = match body.get("message") {
            Some(Value::String(s)) if is_choice => match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Object(_)) => v,
                _ => Value::Object(Map::from_iter([(
                    "content".to_string(),
                    Value::String(s.clone()),
                )])),
            },
            Some(m @ Value::Object(_)) if is_choice => m.clone(),
            _ => body.clone(),
        };
        let mut loose = Loose {
            role: str_at(&message, "role").map(str::to_string),
            content: message.get("content").cloned(),
            name: str_at(&message, "name").map(str::to_string),
            tool_call_id: ["id", "tool_call_id"]
                .iter()
                .find_map(|k| body.get(*k).or_else(|| message.get(*k)))
                .filter(|_| *role == "tool")
                .map(as_text),
            ..Loose::default()
        };
        let calls = match message.get("tool_calls") {
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(v) => v,
                Err(e) => {
                    cx.warn(
                        span.location,
                        format!(
                            "{}: event {} tool_calls is not valid JSON ({e}): ignored",
                            span.label(),
                            event.name
                        ),
                    );
                    Value::Null
                }
            },
            Some(v) => v.clone(),
            None => Value::Null,
        };
        for (j, call) in calls.as_array().into_iter().flatten().enumerate() {
            let f = call.get("function").unwrap_or(call);
            let text_of = |v: &Value, key: &str| v.get(key).map(as_text).unwrap_or_default();
            loose.tool_calls.insert(
                j as u64,
                (
                    text_of(call, "id"),
                    text_of(f, "name"),
                    text_of(f, "arguments"),
                ),
            );
        }
        let m = loose.into_message(role);
        if is_choice {
            output.push(m);
        } else {
            input.push(m);
        }
    }
    (input, output)
}
