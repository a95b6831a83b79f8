//! OpenInference span messages: the flattened `llm.input_messages.N.message.*` /
//! `llm.output_messages.N.message.*` attributes, else the raw `input.value` / `output.value`,
//! and the advertised tools `llm.tools.N.tool.json_schema`.

use crate::json::{as_text, str_at};
use crate::langsmith::payload_messages;
use crate::openai;
use crate::otel::{loose_content, Span};
use crate::Context;
use memlens_core::builder::{Message, Part, Role};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The call's input and output messages: the flattened message attributes, else the raw
/// `input.value` / `output.value`.
pub(super) fn span_messages(span: &Span, cx: &mut Context<'_>) -> (Vec<Message>, Vec<Message>) {
    let raw_input = io_value(span, "input", cx);
    let mut input: Vec<Message> = tool_definitions(span).into_iter().collect();
    match messages_at(span, "llm.input_messages", "user", cx) {
        Some(messages) => {
            // Tools not recorded as `llm.tools` may still be in the raw request.
            if input.is_empty() {
                input.extend(raw_input.as_ref().and_then(openai::tool_definitions));
            }
            input.extend(messages);
        }
        None => {
            let has_tools = !input.is_empty();
            let raw = raw_input.as_ref().unwrap_or(&Value::Null);
            let messages = payload_messages(raw, "user", span.location, cx);
            input.extend(messages.into_iter().filter(|m| !(has_tools && m.unframed)));
        }
    }
    let output = match messages_at(span, "llm.output_messages", "assistant", cx) {
        Some(messages) => messages,
        None => match io_value(span, "output", cx) {
            Some(raw) => payload_messages(&raw, "assistant", span.location, cx),
            None => Vec::new(),
        },
    };
    (input, output)
}

/// `{side}.value`: JSON when its `{side}.mime_type` says so (or it looks like JSON), else text.
fn io_value(span: &Span, side: &str, cx: &mut Context<'_>) -> Option<Value> {
    let value = span.attrs.get(&format!("{side}.value"))?;
    let Value::String(text) = value else {
        return Some(value.clone());
    };
    let mime = span.attr_str(&format!("{side}.mime_type"));
    let looks_json = text.trim_start().starts_with(['{', '[']);
    if mime == Some("application/json") || (mime.is_none() && looks_json) {
        match serde_json::from_str::<Value>(text) {
            Ok(parsed) => return Some(parsed),
            Err(e) if mime.is_some() => cx.warn(
                span.location,
                format!(
                    "{}: {side}.value is not valid JSON ({e}): kept as text",
                    span.label()
                ),
            ),
            Err(_) => {}
        }
    }
    Some(Value::String(text.clone()))
}

/// `llm.tools.N.tool.json_schema` (else name, description, parameters) as one chunk.
fn tool_definitions(span: &Span) -> Option<Message> {
    let tools: Vec<Value> = indexed(&span.attrs, "llm.tools")
        .into_values()
        .map(|t| {
            let field = |k: &str| t.get(&format!("tool.{k}")).or_else(|| t.get(k));
            match field("json_schema") {
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                }
                Some(other) => other.clone(),
                None => {
                    let mut tool = Map::new();
                    for k in ["name", "description", "parameters"] {
                        if let Some(v) = field(k) {
                            tool.insert(k.to_string(), v.clone());
                        }
                    }
                    Value::Object(tool)
                }
            }
        })
        .collect();
    openai::tool_definitions(&serde_json::json!({ "tools": tools }))
}

/// Messages under `prefix`: flattened `{prefix}.N.message.*` attributes, or (not the convention,
/// but hand-rolled instrumentations write it) one JSON list under `prefix` itself. `None` when
/// there are none.
fn messages_at(
    span: &Span,
    prefix: &str,
    default_role: &str,
    cx: &mut Context<'_>,
) -> Option<Vec<Message>> {
    if let Some(list) = span.attrs.get(prefix) {
        let decoded = match list {
            Value::String(s) => serde_json::from_str::<Value>(s).unwrap_or(Value::Null),
            other => other.clone(),
        };
        if let Value::Array(items) = &decoded {
            if items.iter().all(|m| str_at(m, "role").is_some()) {
                return Some(payload_messages(&decoded, default_role, span.location, cx));
            }
        }
    }
    let by_index = indexed(&span.attrs, prefix);
    if by_index.is_empty() {
        return None;
    }
    Some(
        by_index
            .values()
            .map(|fields| flat_message(fields, default_role, span, cx))
            .collect(),
    )
}

/// `{prefix}.{i}.{rest}` entries grouped by the numeric index `i` (in numeric order), each a map
/// of `rest` to value; a JSON list stored under `prefix` itself is flattened the same way.
fn indexed(attrs: &Map<String, Value>, prefix: &str) -> BTreeMap<u64, Map<String, Value>> {
    let mut out: BTreeMap<u64, Map<String, Value>> = BTreeMap::new();
    for (key, value) in attrs {
        let Some(rest) = key.strip_prefix(prefix) else {
            continue;
        };
        if rest.is_empty() {
            let list = match value {
                Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
                other => other.clone(),
            };
            for (i, item) in list.as_array().into_iter().flatten().enumerate() {
                flatten(item, "", out.entry(i as u64).or_default());
            }
            continue;
        }
        let Some((index, field)) = rest.strip_prefix('.').and_then(|r| r.split_once('.')) else {
            continue;
        };
        if let Ok(index) = index.parse::<u64>() {
            out.entry(index)
                .or_default()
                .insert(field.to_string(), value.clone());
        }
    }
    out
}

/// Nested objects and lists as dotted keys (`{"message": {"role": "user"}}` → `message.role`).
fn flatten(v: &Value, prefix: &str, out: &mut Map<String, Value>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                flatten(x, &join(k), out);
            }
        }
        Value::Array(items) if items.iter().any(Value::is_object) => {
            for (i, x) in items.iter().enumerate() {
                flatten(x, &join(&i.to_string()), out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.clone());
        }
    }
}

/// One message from its flattened fields (`message.role`, `message.content`, ...).
fn flat_message(
    fields: &Map<String, Value>,
    default_role: &str,
    span: &Span,
    cx: &mut Context<'_>,
) -> Message {
    let get = |k: &str| {
        fields
            .get(&format!("message.{k}"))
            .or_else(|| fields.get(k))
            .filter(|v| !v.is_null())
    };
    let role_name = get("role").map_or_else(|| default_role.to_string(), as_text);
    let role = Role::parse(&role_name);
    if let Role::Other(name) = &role {
        cx.warn(
            span.location,
            format!(
                "{}: unknown role {name:?}: kept as category \"other\"",
                span.label()
            ),
        );
    }
    let name = get("name").map(as_text);
    let mut parts: Vec<Part> = get("content").map(loose_content).unwrap_or_default();
    parts.extend(content_parts(fields));
    merge_texts(&mut parts);
    let mut calls: Vec<Part> = tool_calls(fields);
    if let Some(function) = get("function_call_name").map(as_text) {
        calls.push(Part::ToolCall {
            id: format!("function:{function}"),
            arguments: get("function_call_arguments_json")
                .map(as_text)
                .unwrap_or_default(),
            name: function,
        });
    }
    if role == Role::Tool {
        let id = get("tool_call_id").map(as_text).unwrap_or_else(|| {
            // Legacy function results pair with their call by name.
            name.as_ref()
                .map(|n| format!("function:{n}"))
                .unwrap_or_default()
        });
        if id.is_empty() {
            cx.warn(
                span.location,
                format!(
                    "{}: tool message without message.tool_call_id: kept unpaired",
                    span.label()
                ),
            );
        }
        let content = parts
            .into_iter()
            .map(|p| match p {
                Part::Text(t) | Part::Other { text: t, .. } => t,
                Part::ToolResult { content, .. } => content,
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        parts = vec![Part::ToolResult {
            id,
            name: name.clone(),
            content,
        }];
    }
    if !calls.is_empty() {
        parts.retain(|p| !matches!(p, Part::Text(t) if t.is_empty()));
        parts.extend(calls);
    }
    Message {
        name: name.filter(|_| role != Role::Tool),
        role: Some(role),
        role_name,
        parts,
        ..Message::default()
    }
}

/// `message.contents.M.message_content.*`, in order.
fn content_parts(fields: &Map<String, Value>) -> Vec<Part> {
    let mut contents = indexed(fields, "message.contents");
    if contents.is_empty() {
        contents = indexed(fields, "contents");
    }
    let mut parts = Vec::new();
    for c in contents.values() {
        let get = |k: &str| {
            c.get(&format!("message_content.{k}"))
                .or_else(|| c.get(k))
                .filter(|v| !v.is_null())
        };
        let text = || get("text").map(as_text).unwrap_or_default();
        match get("type").and_then(Value::as_str) {
            None | Some("text") => parts.push(Part::Text(text())),
            Some("reasoning") => parts.push(Part::Reasoning(text())),
            // Repeated by `message.tool_calls`, which carries the arguments.
            Some("tool_use") => {}
            Some(kind) => {
                let url = c
                    .iter()
                    .find(|(k, _)| k.ends_with(".url"))
                    .and_then(|(_, v)| v.as_str())
                    .filter(|u| !u.starts_with("data:"))
                    .unwrap_or("inline data");
                parts.push(Part::Other {
                    kind: kind.to_string(),
                    text: format!("[{kind}: {url}]"),
                });
            }
        }
    }
    parts
}

/// Adjacent text parts as one: a message's text reads the same whether it was recorded as one
/// `content` or several `contents`, so the resent copy is the same chunk.
fn merge_texts(parts: &mut Vec<Part>) {
    let mut merged: Vec<Part> = Vec::with_capacity(parts.len());
    for part in parts.drain(..) {
        match (merged.last_mut(), part) {
            (Some(Part::Text(previous)), Part::Text(next)) => previous.push_str(&next),
            (_, part) => merged.push(part),
        }
    }
    *parts = merged;
}

/// `message.tool_calls.K.tool_call.{id, function.name, function.arguments}`, in order.
fn tool_calls(fields: &Map<String, Value>) -> Vec<Part> {
    let mut calls = indexed(fields, "message.tool_calls");
    if calls.is_empty() {
        calls = indexed(fields, "tool_calls");
    }
    calls
        .values()
        .map(|c| {
            let get = |k: &str| {
                c.get(&format!("tool_call.{k}"))
                    .or_else(|| c.get(k))
                    .filter(|v| !v.is_null())
                    .map(as_text)
                    .unwrap_or_default()
            };
            Part::ToolCall {
                id: get("id"),
                name: get("function.name"),
                arguments: get("function.arguments"),
            }
        })
        .collect()
}
