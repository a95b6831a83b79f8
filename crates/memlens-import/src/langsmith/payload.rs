//! Chat payloads as tracing platforms store a call's input and output, and LangChain messages in
//! every serialized shape: shared by the LangSmith, Langfuse and OpenInference importers.
//!
//! LangChain shapes (langchain-core `libs/core/langchain_core/load/serializable.py` `to_json`,
//! `messages/utils.py` `message_to_dict`, `messages/ai.py` `AIMessage.tool_calls`):
//! `{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {content, tool_calls,
//! tool_call_id, additional_kwargs}}`, `{"type": "ai", "data": {...}}`, plain dumps
//! `{"type": "ai", "content": ...}` and `["human", "text"]` tuples. Two more message layouts
//! arrive through OpenTelemetry ingestion: the GenAI conventions' `{role, parts: [...]}`
//! (pydantic-ai; parsed by [`crate::otel::semconv_message`]) and OpenAI Responses items (the
//! OpenAI Agents SDK; [`super::responses`]).

use super::responses;
use crate::error::Location;
use crate::json::{array_at, as_text, str_at};
use crate::otel::semconv_message;
use crate::{anthropic, openai, Context};
use memlens_core::builder::{Message, Part};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Messages of a loosely shaped chat payload, as tracing platforms store a call's input or output:
/// a string; one message (OpenAI, Anthropic, LangChain); a list of them; a batch of lists (the
/// first is read); `{messages, system?, tools?}`; `{choices}`; `{generations}`; `{prompts}`;
/// `{message}`; or an object with one text field. Anything else is kept as its JSON text.
pub(crate) fn payload_messages(
    v: &Value,
    default_role: &str,
    location: Location,
    cx: &mut Context<'_>,
) -> Vec<Message> {
    match v {
        Value::Null => Vec::new(),
        Value::String(s) if s.is_empty() => Vec::new(),
        Value::String(s) => vec![Message::text(default_role, s.clone())],
        Value::Array(items) => list_messages(items, default_role, location, cx),
        Value::Object(_) => object_messages(v, default_role, location, cx),
        other => vec![Message::text(default_role, as_text(other))],
    }
}

fn list_messages(
    items: &[Value],
    default_role: &str,
    location: Location,
    cx: &mut Context<'_>,
) -> Vec<Message> {
    // LangChain batches: `messages: [[...]]`, one list per prompt of the batch.
    if let Some(first @ Value::Array(inner)) = items.first() {
        if !is_tuple_message(first) {
            if items.len() > 1 {
                cx.warn(
                    location,
                    format!(
                        "a batch of {} message lists: only the first is read",
                        items.len()
                    ),
                );
            }
            return list_messages(inner, default_role, location, cx);
        }
    }
    items
        .iter()
        .filter_map(|m| one_message(m, default_role, location, cx))
        .collect()
}

fn object_messages(
    v: &Value,
    default_role: &str,
    location: Location,
    cx: &mut Context<'_>,
) -> Vec<Message> {
    if let Some(messages) = v.get("messages").filter(|m| m.is_array()) {
        let mut out: Vec<Message> = openai::tool_definitions(v).into_iter().collect();
        match v.get("system") {
            Some(Value::String(s)) => out.push(Message::text("system", s.clone())),
            Some(blocks @ Value::Array(_)) => out.extend(anthropic::parse_message(
                &serde_json::json!({"role": "system", "content": blocks}),
                location,
                cx,
            )),
            _ => {}
        }
        out.extend(payload_messages(messages, default_role, location, cx));
        return out;
    }
    if let Some(choice) = array_at(v, "choices").and_then(|c| c.first()) {
        // Several choices are alternatives; the conversation continues with the first.
        return match choice.get("message") {
            Some(m) => one_message(m, "assistant", location, cx)
                .into_iter()
                .collect(),
            None => payload_messages(
                choice.get("text").unwrap_or(&Value::Null),
                "assistant",
                location,
                cx,
            ),
        };
    }
    if array_at(v, "generations").is_some() {
        return match generation_message(v) {
            Some(m) => one_message(m, "assistant", location, cx)
                .into_iter()
                .collect(),
            None => payload_messages(
                first_generation(v)
                    .and_then(|g| g.get("text"))
                    .unwrap_or(&Value::Null),
                "assistant",
                location,
                cx,
            ),
        };
    }
    if let Some(prompts) = array_at(v, "prompts") {
        if prompts.len() > 1 {
            cx.warn(
                location,
                format!(
                    "a batch of {} prompts: only the first is read",
                    prompts.len()
                ),
            );
        }
        return payload_messages(
            prompts.first().unwrap_or(&Value::Null),
            default_role,
            location,
            cx,
        );
    }
    if let (Some(instructions), Some(input)) = (str_at(v, "instructions"), v.get("input")) {
        // A Responses request: the instructions are the system message, sent before the input.
        let mut out: Vec<Message> = openai::tool_definitions(v).into_iter().collect();
        out.push(Message::text("system", instructions));
        out.extend(payload_messages(input, default_role, location, cx));
        return out;
    }
    if is_message_like(v) {
        return one_message(v, default_role, location, cx)
            .into_iter()
            .collect();
    }
    if let Some(m) = v.get("message").filter(|m| m.is_object()) {
        return one_message(m, default_role, location, cx)
            .into_iter()
            .collect();
    }
    const TEXT_KEYS: [&str; 9] = [
        "output",
        "input",
        "text",
        "content",
        "completion",
        "response",
        "prompt",
        "question",
        "query",
    ];
    match TEXT_KEYS
        .iter()
        .find_map(|k| v.get(*k).filter(|x| !x.is_null()))
    {
        Some(inner) => payload_messages(inner, default_role, location, cx),
        None => vec![Message::text(default_role, v.to_string())],
    }
}

/// The first generation of `{generations: [[...]]}` (or `[...]`).
fn first_generation(outputs: &Value) -> Option<&Value> {
    let first = array_at(outputs, "generations")?.first()?;
    match first {
        Value::Array(inner) => inner.first(),
        other => Some(other),
    }
}

/// The message of the first generation, when it has one.
pub(super) fn generation_message(outputs: &Value) -> Option<&Value> {
    first_generation(outputs)?
        .get("message")
        .filter(|m| m.is_object())
}

/// `["human", "Hi"]`: LangChain's tuple shorthand for a message.
fn is_tuple_message(v: &Value) -> bool {
    match v.as_array().map(Vec::as_slice) {
        Some([Value::String(role), Value::String(_)]) => {
            langchain_role(role, &Value::Null).is_some()
        }
        _ => false,
    }
}

fn is_message_like(v: &Value) -> bool {
    str_at(v, "role").is_some() || langchain_fields(v).is_some() || responses::is_item(v)
}

/// The GenAI conventions' layout: `{role, parts}` and no `content`.
fn is_parts_message(m: &Value) -> bool {
    str_at(m, "role").is_some()
        && m.get("parts").is_some_and(Value::is_array)
        && m.get("content").is_none_or(Value::is_null)
}

/// One message of any supported shape; `None` (with a warning) when it is none of them.
pub(crate) fn one_message(
    m: &Value,
    default_role: &str,
    location: Location,
    cx: &mut Context<'_>,
) -> Option<Message> {
    match m {
        Value::String(s) => return Some(Message::text(default_role, s.clone())),
        Value::Array(pair) if is_tuple_message(m) => {
            let role = langchain_role(pair[0].as_str().unwrap_or_default(), &Value::Null)?;
            return Some(Message::text(&role, as_text(&pair[1])));
        }
        _ => {}
    }
    if responses::is_item(m) {
        return responses::item_message(m, location, cx);
    }
    if let Some((role, fields)) = langchain_fields(m) {
        return langchain_message(&role, fields, location, cx);
    }
    if is_parts_message(m) {
        return semconv_message(m, location, "message", cx);
    }
    if str_at(m, "role").is_some() {
        return role_message(m, location, cx);
    }
    if m.get("lc").is_some() {
        // `not_implemented` / `secret`: LangChain could not serialize the object.
        cx.warn(
            location,
            format!(
                "message skipped: a LangChain {:?} object, not a serialized message",
                str_at(m, "type").unwrap_or_default()
            ),
        );
        return None;
    }
    cx.warn(
        location,
        format!(
            "message skipped: expected a chat message (role or LangChain type), found {}",
            crate::json::describe(m)
        ),
    );
    None
}

const LC_TYPES: [&str; 7] = [
    "human",
    "ai",
    "system",
    "tool",
    "function",
    "chat",
    "developer",
];

/// The role and fields of a LangChain message: a serialized constructor
/// (`{lc, type: "constructor", id: [..., "AIMessage"], kwargs}`), a `message_to_dict` entry
/// (`{type: "ai", data}`), or a plain dump (`{type: "ai", content, ...}`).
fn langchain_fields(m: &Value) -> Option<(String, &Value)> {
    if m.get("lc").is_some() && str_at(m, "type") == Some("constructor") {
        let class = array_at(m, "id")?.last()?.as_str()?;
        let kwargs = m.get("kwargs")?;
        return Some((langchain_role(class, kwargs)?, kwargs));
    }
    let kind = str_at(m, "type")?;
    let lowered = kind.to_ascii_lowercase();
    let known = LC_TYPES.contains(&lowered.as_str()) || kind.ends_with("MessageChunk");
    if !known || str_at(m, "role").is_some() {
        return None;
    }
    let fields = m.get("data").filter(|d| d.is_object()).unwrap_or(m);
    Some((langchain_role(kind, fields)?, fields))
}

/// A LangChain class or type name as a chat role (`HumanMessage`, `human`, `AIMessageChunk`...).
fn langchain_role(kind: &str, fields: &Value) -> Option<String> {
    let base = kind.trim_end_matches("Chunk").trim_end_matches("Message");
    let role = match base.to_ascii_lowercase().as_str() {
        "human" | "user" => "user",
        "ai" | "assistant" => "assistant",
        "system" | "developer" => "system",
        "tool" => "tool",
        "function" => "function",
        "chat" => return str_at(fields, "role").map(str::to_string),
        _ => return None,
    };
    Some(role.to_string())
}

/// A LangChain message: its content parsed as an OpenAI or Anthropic message, then its tool calls.
fn langchain_message(
    role: &str,
    fields: &Value,
    location: Location,
    cx: &mut Context<'_>,
) -> Option<Message> {
    let extra = fields.get("additional_kwargs").unwrap_or(&Value::Null);
    let mut dict = Map::new();
    dict.insert("role".into(), Value::String(role.to_string()));
    dict.insert(
        "content".into(),
        fields.get("content").cloned().unwrap_or(Value::Null),
    );
    for key in ["name", "tool_call_id"] {
        if let Some(v) = fields.get(key).filter(|v| v.is_string()) {
            dict.insert(key.into(), v.clone());
        }
    }
    if let Some(r) = extra.get("reasoning_content").filter(|r| r.is_string()) {
        dict.insert("reasoning_content".into(), r.clone());
    }
    let mut message = role_message(&Value::Object(dict), location, cx)?;
    // The arguments as the model wrote them, when the provider's raw tool calls were kept.
    let raw = array_at(extra, "tool_calls").cloned().unwrap_or_default();
    let raw_arguments: HashMap<&str, String> = raw
        .iter()
        .filter_map(|c| {
            let args = c.get("function").and_then(|f| f.get("arguments"))?;
            Some((str_at(c, "id")?, as_text(args)))
        })
        .collect();
    // `invalid_tool_calls` are calls whose arguments did not parse: still the model's output,
    // and resent as tool calls (langchain-openai `_lc_invalid_tool_call_to_openai_tool_call`).
    let standard: Vec<&Value> = ["tool_calls", "invalid_tool_calls"]
        .iter()
        .filter_map(|k| array_at(fields, k))
        .flatten()
        .collect();
    let mut calls: Vec<Part> = Vec::new();
    if standard.is_empty() {
        calls.extend(raw.iter().map(openai_tool_call));
    }
    for c in standard {
        let id = str_at(c, "id").unwrap_or_default().to_string();
        let arguments = raw_arguments
            .get(id.as_str())
            .cloned()
            .unwrap_or_else(|| c.get("args").map(as_text).unwrap_or_default());
        let name = str_at(c, "name").unwrap_or_default().to_string();
        calls.push(Part::ToolCall {
            id,
            name,
            arguments,
        });
    }
    if let Some(fc) = extra.get("function_call").filter(|f| f.is_object()) {
        let name = str_at(fc, "name").unwrap_or_default().to_string();
        calls.push(Part::ToolCall {
            id: format!("function:{name}"),
            arguments: fc.get("arguments").map(as_text).unwrap_or_default(),
            name,
        });
    }
    push_tool_calls(&mut message, calls);
    Some(message)
}

/// Appends tool calls not already in the message (Anthropic content repeats them as `tool_use`
/// blocks); an empty text beside tool calls is the absence of text and is dropped, so that the
/// resent copy of the message, which may omit it, is the same chunk.
fn push_tool_calls(message: &mut Message, calls: Vec<Part>) {
    if calls.is_empty() {
        return;
    }
    for call in calls {
        let Part::ToolCall { id, .. } = &call else {
            continue;
        };
        let present = !id.is_empty()
            && message
                .parts
                .iter()
                .any(|p| matches!(p, Part::ToolCall { id: other, .. } if other == id));
        if !present {
            message.parts.push(call);
        }
    }
    message
        .parts
        .retain(|p| !matches!(p, Part::Text(t) if t.is_empty()));
}

fn openai_tool_call(c: &Value) -> Part {
    let f = c.get("function").unwrap_or(c);
    Part::ToolCall {
        id: str_at(c, "id").unwrap_or_default().to_string(),
        name: str_at(f, "name").unwrap_or_default().to_string(),
        arguments: f
            .get("arguments")
            .or_else(|| f.get("args"))
            .map(as_text)
            .unwrap_or_default(),
    }
}

/// A `{role, ...}` message: Anthropic when its content holds Anthropic blocks, OpenAI otherwise.
/// Tool calls in LangChain's shape (`{name, args, id}`, as Langfuse's LangChain handler writes
/// them) are read too.
fn role_message(m: &Value, location: Location, cx: &mut Context<'_>) -> Option<Message> {
    if anthropic::is_anthropic_message(m) {
        return anthropic::parse_message(m, location, cx);
    }
    let Some(calls) = array_at(m, "tool_calls").filter(|c| !c.is_empty()) else {
        return openai::parse_message(m, location, cx);
    };
    let mut without = m.clone();
    if let Some(map) = without.as_object_mut() {
        map.remove("tool_calls");
    }
    let mut message = openai::parse_message(&without, location, cx)?;
    push_tool_calls(&mut message, calls.iter().map(openai_tool_call).collect());
    Some(message)
}
