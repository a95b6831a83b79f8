//! OpenAI Chat Completions: a message list, `{"messages": [...]}`, JSON Lines of conversations, and
//! request/response logs (`{request: {messages}, response: {choices, usage, model}}` and the common
//! variants: `input`/`output`, or `messages` beside `response`). Handles `tool_calls`,
//! `role: "tool"`, the legacy `function_call` / `role: "function"`, `developer`, multi-part content
//! and `reasoning_content`.

use crate::chat::{import_records, log_parts, Reader, Response, Slot};
use crate::document::Document;
use crate::error::{ImportError, Location};
use crate::json::{array_at, as_text, str_at, type_name, u64_at};
use crate::{Context, Importer};
use memlens_core::builder::{Message, Part, Role, TraceBuilder};
use memlens_core::{Trace, Usage};
use serde_json::Value;

/// The OpenAI Chat Completions importer.
pub struct OpenAi;

impl Importer for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn description(&self) -> &'static str {
        "OpenAI Chat Completions messages, conversations and request/response logs"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_message(first) || array_at(first, "messages").is_some() || log_parts(first).is_some()
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        // A bare message list (JSON array of messages) is one conversation.
        if doc.is_array() && doc.first_value().is_some_and(is_message) {
            let items: Vec<Value> = doc
                .into_records()
                .filter_map(|item| cx.accept(item).map(|(_, v)| v))
                .collect();
            let mut b = TraceBuilder::new("conversation-0", "openai");
            push_conversation(&mut b, &items, Location::default(), cx);
            return Ok(vec![cx.finish(b, Location::default())]);
        }
        import_records(doc, cx, "openai", &OPENAI_READER)
    }
}

const OPENAI_READER: Reader = Reader {
    request_messages,
    response,
};

fn is_message(v: &Value) -> bool {
    v.get("role").is_some_and(Value::is_string)
}

fn request_messages(v: &Value, location: Location, cx: &mut Context<'_>) -> Option<Vec<Message>> {
    let items = match v {
        Value::Array(items) if items.first().is_some_and(is_message) => items,
        _ => array_at(v, "messages")?,
    };
    let mut messages: Vec<Message> = tool_definitions(v).into_iter().collect();
    messages.extend(parse_messages(items, location, cx));
    Some(messages)
}

/// The request's `tools` (function definitions) as one chunk: they ride along in every call's input
/// and often weigh thousands of tokens. Providers render them in their own syntax, so the count
/// of their JSON text is an estimate of what they cost.
pub fn tool_definitions(request: &Value) -> Option<Message> {
    let tools = array_at(request, "tools").filter(|t| !t.is_empty())?;
    Some(Message {
        role: Some(Role::Other("tools".into())),
        role_name: "tools".into(),
        parts: vec![Part::Other {
            kind: memlens_core::model::TOOL_DEFINITIONS_KIND.into(),
            text: Value::Array(tools.clone()).to_string(),
        }],
        unframed: true,
        ..Message::default()
    })
}

fn response(v: &Value, location: Location, cx: &mut Context<'_>) -> Response {
    let mut out = Vec::new();
    if let Some(choices) = array_at(v, "choices") {
        // Several choices are alternatives; the conversation continues with the first.
        if let Some(message) = choices.first().and_then(|c| c.get("message")) {
            out.extend(parse_message(message, location, cx));
        }
    } else if is_message(v) {
        out.extend(parse_message(v, location, cx));
    }
    let usage = v.get("usage").map(parse_usage);
    (out, str_at(v, "model").map(str::to_string), usage)
}

/// OpenAI usage (Chat Completions and Responses spellings).
pub fn parse_usage(u: &Value) -> Usage {
    let details = |key: &str, field: &str| u.get(key).and_then(|d| u64_at(d, field));
    Usage {
        input_tokens: u64_at(u, "prompt_tokens").or_else(|| u64_at(u, "input_tokens")),
        output_tokens: u64_at(u, "completion_tokens").or_else(|| u64_at(u, "output_tokens")),
        cache_read_tokens: details("prompt_tokens_details", "cached_tokens")
            .or_else(|| details("input_tokens_details", "cached_tokens")),
        cache_write_tokens: None,
        reasoning_tokens: details("completion_tokens_details", "reasoning_tokens")
            .or_else(|| details("output_tokens_details", "reasoning_tokens")),
    }
}

/// Parses a message list; bad messages become warnings and are skipped.
pub fn parse_messages(items: &[Value], location: Location, cx: &mut Context<'_>) -> Vec<Message> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let loc = location;
            parse_message(m, loc, cx).or_else(|| {
                cx.warn(
                    loc,
                    format!(
                        "message {i} skipped: expected an object with a string \"role\", found {}",
                        describe_msg(m)
                    ),
                );
                None
            })
        })
        .collect()
}

fn describe_msg(m: &Value) -> String {
    match m.get("role") {
        Some(r) => format!("\"role\" of type {}", type_name(r)),
        None => type_name(m).to_string(),
    }
}

/// Parses one OpenAI message. `None` when it has no string role.
pub fn parse_message(m: &Value, location: Location, cx: &mut Context<'_>) -> Option<Message> {
    parse_message_with_slots(m, location, cx).map(|(message, _)| message)
}

/// [`parse_message`], with where each part came from in the message object (one slot per part,
/// in part order): what renders a managed context back into the caller's own objects.
pub fn parse_message_with_slots(
    m: &Value,
    location: Location,
    cx: &mut Context<'_>,
) -> Option<(Message, Vec<Slot>)> {
    let role_name = str_at(m, "role")?;
    let role = Role::parse(role_name);
    if let Role::Other(name) = &role {
        cx.warn(
            location,
            format!("unknown role {name:?}: kept as category \"other\""),
        );
    }
    let mut parts = Vec::new();
    let mut slots = Vec::new();
    for key in ["reasoning_content", "reasoning"] {
        if let Some(text) = str_at(m, key).filter(|t| !t.is_empty()) {
            parts.push(Part::Reasoning(text.to_string()));
            slots.push(Slot::Key(key));
        }
    }
    let content = m.get("content").unwrap_or(&Value::Null);
    match role {
        Role::Tool => {
            let id = str_at(m, "tool_call_id")
                .map(str::to_string)
                // Legacy `role: "function"` results pair with `function_call` by name.
                .or_else(|| str_at(m, "name").map(|n| format!("function:{n}")))
                .unwrap_or_default();
            if id.is_empty() {
                cx.warn(
                    location,
                    "tool message without \"tool_call_id\": kept unpaired",
                );
            }
            parts.push(Part::ToolResult {
                id,
                name: str_at(m, "name").map(str::to_string),
                content: content_text(content, location, cx),
            });
            slots.push(Slot::ToolContent);
        }
        _ => {
            for (part, slot) in content_parts_at(content, location, cx) {
                parts.push(part);
                slots.push(slot);
            }
        }
    }
    if let Some(refusal) = str_at(m, "refusal") {
        parts.push(Part::Text(refusal.to_string()));
        slots.push(Slot::Key("refusal"));
    }
    if let Some(calls) = array_at(m, "tool_calls") {
        for (i, call) in calls.iter().enumerate() {
            let f = call.get("function").unwrap_or(call);
            parts.push(Part::ToolCall {
                id: str_at(call, "id").unwrap_or_default().to_string(),
                name: str_at(f, "name").unwrap_or_default().to_string(),
                arguments: f.get("arguments").map(as_text).unwrap_or_default(),
            });
            slots.push(Slot::ToolCall(i));
        }
    }
    if let Some(fc) = m.get("function_call").filter(|v| v.is_object()) {
        let name = str_at(fc, "name").unwrap_or_default().to_string();
        parts.push(Part::ToolCall {
            id: format!("function:{name}"),
            name,
            arguments: fc.get("arguments").map(as_text).unwrap_or_default(),
        });
        slots.push(Slot::FunctionCall);
    }
    let message = Message {
        role: Some(role),
        role_name: role_name.to_string(),
        name: str_at(m, "name")
            .filter(|_| role_name != "tool")
            .map(str::to_string),
        parts,
        ..Message::default()
    };
    Some((message, slots))
}

/// Content as text parts: a string, null, or a list of typed parts.
fn content_parts(content: &Value, location: Location, cx: &mut Context<'_>) -> Vec<Part> {
    content_parts_at(content, location, cx)
        .into_iter()
        .map(|(part, _)| part)
        .collect()
}

/// Whether an item of an OpenAI content array is text: it joins the message's text part
/// ([`Slot::Text`]) rather than making a part of its own. The same cases as the match in
/// [`content_parts_at`]; the renderer uses this to find the items a text part came from.
pub fn is_text_item(item: &Value) -> bool {
    matches!(
        (str_at(item, "type"), item),
        (Some("text" | "input_text" | "output_text" | "refusal"), _)
            | (None, Value::Object(_) | Value::String(_))
            | (Some(_), Value::String(_))
    )
}

/// [`content_parts`] with each part's slot: the text (all text items joined), then each other
/// typed item by its index.
fn content_parts_at(
    content: &Value,
    location: Location,
    cx: &mut Context<'_>,
) -> Vec<(Part, Slot)> {
    match content {
        Value::Null => Vec::new(),
        Value::String(s) => vec![(Part::Text(s.clone()), Slot::Text)],
        Value::Array(items) => {
            let mut parts = Vec::new();
            let mut text = String::new();
            for (i, item) in items.iter().enumerate() {
                match (str_at(item, "type"), item) {
                    (Some("text" | "input_text" | "output_text"), _) | (None, Value::Object(_)) => {
                        if let Some(t) = str_at(item, "text") {
                            text.push_str(t);
                        }
                    }
                    (_, Value::String(s)) => text.push_str(s),
                    (Some("refusal"), _) => {
                        text.push_str(str_at(item, "refusal").unwrap_or_default())
                    }
                    (Some(kind), _) => parts.push((
                        Part::Other {
                            kind: kind.to_string(),
                            text: describe_media(kind, item),
                        },
                        Slot::Item(i),
                    )),
                    (None, other) => cx.warn(
                        location,
                        format!("content part of type {} ignored", type_name(other)),
                    ),
                }
            }
            if !text.is_empty() || parts.is_empty() {
                parts.insert(0, (Part::Text(text), Slot::Text));
            }
            parts
        }
        other => {
            cx.warn(
                location,
                format!(
                    "\"content\" is {}, expected a string, an array or null: kept as JSON text",
                    type_name(other)
                ),
            );
            vec![(Part::Text(other.to_string()), Slot::Text)]
        }
    }
}

/// Text of a tool result's content (string or parts).
fn content_text(content: &Value, location: Location, cx: &mut Context<'_>) -> String {
    match content {
        Value::Array(_) => Part::joined_text(content_parts(content, location, cx)),
        other => as_text(other),
    }
}

/// A placeholder for non-text content: media tokens are not counted from their bytes.
pub fn describe_media(kind: &str, item: &Value) -> String {
    let url = item
        .get("image_url")
        .and_then(|u| u.get("url").or(Some(u)))
        .and_then(Value::as_str)
        .filter(|u| !u.starts_with("data:"))
        .unwrap_or("inline data");
    format!("[{kind}: {url}]")
}

/// Pushes a whole conversation (final message list) and reconstructs its calls.
pub fn push_conversation(
    b: &mut TraceBuilder,
    items: &[Value],
    location: Location,
    cx: &mut Context<'_>,
) {
    for m in parse_messages(items, location, cx) {
        b.push_message(m, None);
    }
    b.reconstruct_calls();
}
