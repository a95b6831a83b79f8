//! OpenAI Responses API items, as the OpenAI Agents SDK's instrumentations store a call's input
//! (`input.value`: the item list) and output (the `Response` object, whose `output` is an item
//! list) in Langfuse, LangSmith and OpenInference:
//!
//! ```json
//! [{"role": "user", "content": "What's the weather in Tokyo?"},
//!  {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "…"}]},
//!  {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
//!   "arguments": "{\"city\":\"Tokyo\"}", "status": "completed"},
//!  {"type": "function_call_output", "call_id": "call_1", "output": "Sunny."},
//!  {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "…"}]}]
//! ```
//!
//! Each item is one message (a tool call or result pairs with its partner by `call_id`), so the
//! items the next request resends are the same messages as the response that produced them.
//! Schema source: github.com/openai/openai-python `src/openai/types/responses/`
//! (`response_input_item_param.py`, `response_output_item.py`, `response_reasoning_item.py`).

use crate::error::Location;
use crate::json::{array_at, as_text, str_at};
use crate::Context;
use memlens_core::builder::{Message, Part, Role};
use serde_json::Value;

/// Item types that are a tool call, with the field holding what the model wrote.
const CALLS: [(&str, &str); 4] = [
    ("function_call", "arguments"),
    ("custom_tool_call", "input"),
    ("local_shell_call", "action"),
    ("computer_call", "action"),
];

/// Item types that are a tool's result.
const RESULTS: [&str; 4] = [
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "computer_call_output",
];

/// Built-in tools run by OpenAI: the item holds the call (and its result); kept as its JSON.
const HOSTED: [&str; 7] = [
    "web_search_call",
    "file_search_call",
    "image_generation_call",
    "code_interpreter_call",
    "mcp_call",
    "mcp_list_tools",
    "mcp_approval_request",
];

/// True for a Responses item that is not a plain `{role, content}` message.
pub(crate) fn is_item(v: &Value) -> bool {
    match str_at(v, "type") {
        Some("message") => str_at(v, "role").is_some(),
        Some("reasoning" | "item_reference" | "mcp_approval_response") => true,
        Some(t) => {
            CALLS.iter().any(|(c, _)| *c == t) || RESULTS.contains(&t) || HOSTED.contains(&t)
        }
        None => false,
    }
}

/// One Responses item as a message; `None` (with a warning) for an item that holds nothing the
/// model reads back from this record.
pub(crate) fn item_message(
    item: &Value,
    location: Location,
    cx: &mut Context<'_>,
) -> Option<Message> {
    let kind = str_at(item, "type").unwrap_or_default();
    let call_id = || {
        str_at(item, "call_id")
            .or_else(|| str_at(item, "id"))
            .unwrap_or_default()
            .to_string()
    };
    let assistant = |parts: Vec<Part>| Message {
        role: Some(Role::Assistant),
        role_name: "assistant".into(),
        parts,
        ..Message::default()
    };
    if let Some((_, field)) = CALLS.iter().find(|(c, _)| *c == kind) {
        let name = str_at(item, "name").unwrap_or(kind.trim_end_matches("_call"));
        return Some(assistant(vec![Part::ToolCall {
            id: call_id(),
            name: name.to_string(),
            arguments: item.get(*field).map(as_text).unwrap_or_default(),
        }]));
    }
    if RESULTS.contains(&kind) {
        return Some(Message {
            role: Some(Role::Tool),
            role_name: "tool".into(),
            parts: vec![Part::ToolResult {
                id: call_id(),
                name: None,
                content: item.get("output").map(output_text).unwrap_or_default(),
            }],
            ..Message::default()
        });
    }
    match kind {
        "message" => Some(Message {
            parts: content_parts(item.get("content").unwrap_or(&Value::Null)),
            ..Message::text(str_at(item, "role").unwrap_or("user"), "")
        }),
        "reasoning" => Some(assistant(vec![Part::Reasoning(reasoning_text(item))])),
        _ if HOSTED.contains(&kind) || kind == "mcp_approval_response" => {
            let mut body = item.clone();
            if let Some(map) = body.as_object_mut() {
                // Ids and statuses are bookkeeping, not what the model reads.
                map.remove("id");
                map.remove("status");
            }
            Some(assistant(vec![Part::Other {
                kind: kind.to_string(),
                text: body.to_string(),
            }]))
        }
        _ => {
            cx.warn(
                location,
                format!(
                    "message skipped: a Responses {kind:?} item refers to an item stored by \
                     OpenAI ({}), not in this record",
                    str_at(item, "id").unwrap_or_default()
                ),
            );
            None
        }
    }
}

/// A reasoning item's readable text: its summary, else its content (encrypted reasoning is not
/// readable and is not counted).
fn reasoning_text(item: &Value) -> String {
    let texts = |key: &str| -> Vec<&str> {
        array_at(item, key)
            .into_iter()
            .flatten()
            .filter_map(|p| str_at(p, "text"))
            .collect()
    };
    let mut text = texts("summary");
    if text.is_empty() {
        text = texts("content");
    }
    text.join("\n\n")
}

/// A message item's content: `input_text` / `output_text` parts (or a string); media as a
/// placeholder, never counted from its bytes.
fn content_parts(content: &Value) -> Vec<Part> {
    let items = match content {
        Value::Null => return Vec::new(),
        Value::String(s) => return vec![Part::Text(s.clone())],
        Value::Array(items) => items,
        other => return vec![Part::Text(as_text(other))],
    };
    let mut text = String::new();
    let mut parts = Vec::new();
    for item in items {
        match (str_at(item, "type"), str_at(item, "text")) {
            (_, Some(t)) => text.push_str(t),
            (Some("refusal"), None) => text.push_str(str_at(item, "refusal").unwrap_or_default()),
            (Some(kind), None) => {
                let what = ["image_url", "file_url", "file_id", "filename"]
                    .iter()
                    .find_map(|k| str_at(item, k))
                    .filter(|u| !u.starts_with("data:"))
                    .unwrap_or("inline data");
                parts.push(Part::Other {
                    kind: kind.to_string(),
                    text: format!("[{kind}: {what}]"),
                });
            }
            (None, None) => text.push_str(&as_text(item)),
        }
    }
    if !text.is_empty() || parts.is_empty() {
        parts.insert(0, Part::Text(text));
    }
    parts
}

/// A tool output: a string, or a list of content items (text joined).
fn output_text(output: &Value) -> String {
    match output {
        Value::Array(_) => Part::joined_text(content_parts(output)),
        other => as_text(other),
    }
}
