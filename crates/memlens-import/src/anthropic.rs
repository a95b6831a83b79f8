//! Anthropic Messages: a request (`system` + `messages`), a conversation export, JSON Lines of
//! them, or request/response logs whose response is a `message` object. Content blocks `text`,
//! `thinking` / `redacted_thinking`, `tool_use`, `tool_result` (in the following user turn),
//! `image` / `document`; usage with `cache_read_input_tokens` / `cache_creation_input_tokens`.

use crate::chat::{import_records, log_parts, Reader, Response, Slot};
use crate::document::Document;
use crate::error::{ImportError, Location};
use crate::json::{array_at, as_text, str_at, type_name, u64_at};
use crate::openai::tool_definitions;
use crate::{Context, Importer};
use memlens_core::builder::{Message, Part, Role};
use memlens_core::{Trace, Usage};
use serde_json::Value;

/// The Anthropic Messages importer.
pub struct Anthropic;

const BLOCK_TYPES: [&str; 5] = [
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "document",
];

/// True when a message's content holds Anthropic-only block types.
fn has_anthropic_blocks(messages: &[Value]) -> bool {
    messages.iter().any(|m| {
        array_at(m, "content").is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| str_at(b, "type").is_some_and(|t| BLOCK_TYPES.contains(&t)))
        })
    })
}

fn looks_anthropic(v: &Value) -> bool {
    if let Some((request, response)) = log_parts(v) {
        return str_at(response, "type") == Some("message")
            || response.get("stop_reason").is_some()
            || looks_anthropic(request);
    }
    let Some(messages) = array_at(v, "messages") else {
        return false;
    };
    v.get("system")
        .is_some_and(|s| s.is_string() || s.is_array())
        || has_anthropic_blocks(messages)
}

impl Importer for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn description(&self) -> &'static str {
        "Anthropic Messages requests, conversations and request/response logs"
    }

    fn sniff(&self, first: &Value) -> bool {
        looks_anthropic(first)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        import_records(doc, cx, "anthropic", &ANTHROPIC_READER)
    }
}

const ANTHROPIC_READER: Reader = Reader {
    request_messages,
    response,
};

fn request_messages(v: &Value, location: Location, cx: &mut Context<'_>) -> Option<Vec<Message>> {
    let items = array_at(v, "messages")?;
    let mut out = Vec::with_capacity(items.len() + 2);
    out.extend(tool_definitions(v));
    match v.get("system") {
        None | Some(Value::Null) => {}
        Some(system) => out.push(Message {
            role: Some(Role::System),
            role_name: "system".into(),
            parts: blocks(system, location, cx),
            ..Message::default()
        }),
    }
    for (i, m) in items.iter().enumerate() {
        match parse_message(m, location, cx) {
            Some(message) => out.push(message),
            None => cx.warn(
                location,
                format!(
                    "message {i} skipped: expected an object with a string \"role\", found {}",
                    type_name(m)
                ),
            ),
        }
    }
    Some(out)
}

/// Parses one Anthropic message (`role` + string or block `content`). `None` when it has no
/// string role.
pub fn parse_message(m: &Value, location: Location, cx: &mut Context<'_>) -> Option<Message> {
    parse_message_with_slots(m, location, cx).map(|(message, _)| message)
}

/// [`parse_message`], with where each part came from in the message object (one slot per part,
/// in part order): the text of a string content, else the block's index.
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
    let (parts, slots) = blocks_at(m.get("content").unwrap_or(&Value::Null), location, cx)
        .into_iter()
        .unzip();
    let message = Message {
        role: Some(role),
        role_name: role_name.to_string(),
        parts,
        ..Message::default()
    };
    Some((message, slots))
}

/// True when a message's content holds Anthropic-only block types.
pub fn is_anthropic_message(m: &Value) -> bool {
    has_anthropic_blocks(std::slice::from_ref(m))
}

fn response(v: &Value, location: Location, cx: &mut Context<'_>) -> Response {
    let mut out = Vec::new();
    if let Some(content) = v.get("content") {
        out.push(Message {
            role: Some(Role::Assistant),
            role_name: str_at(v, "role").unwrap_or("assistant").to_string(),
            parts: blocks(content, location, cx),
            ..Message::default()
        });
    }
    let usage = v.get("usage").map(parse_usage);
    (out, str_at(v, "model").map(str::to_string), usage)
}

/// Anthropic reports uncached input apart from cache reads and writes; MemLens' input includes all.
pub fn parse_usage(u: &Value) -> Usage {
    let uncached = u64_at(u, "input_tokens");
    let read = u64_at(u, "cache_read_input_tokens");
    let write = u64_at(u, "cache_creation_input_tokens");
    Usage {
        // Saturating: counts come from the file (found by the `import` fuzz target).
        input_tokens: uncached.map(|n| {
            n.saturating_add(read.unwrap_or(0))
                .saturating_add(write.unwrap_or(0))
        }),
        output_tokens: u64_at(u, "output_tokens"),
        cache_read_tokens: read,
        cache_write_tokens: write,
        reasoning_tokens: None,
    }
}

/// Content: a string, or a list of blocks.
fn blocks(content: &Value, location: Location, cx: &mut Context<'_>) -> Vec<Part> {
    blocks_at(content, location, cx)
        .into_iter()
        .map(|(part, _)| part)
        .collect()
}

/// [`blocks`], with each part's slot.
fn blocks_at(content: &Value, location: Location, cx: &mut Context<'_>) -> Vec<(Part, Slot)> {
    let items = match content {
        Value::Null => return Vec::new(),
        Value::String(s) => return vec![(Part::Text(s.clone()), Slot::Text)],
        Value::Array(items) => items,
        other => {
            cx.warn(
                location,
                format!(
                    "\"content\" is {}, expected a string or a list of blocks: kept as JSON text",
                    type_name(other)
                ),
            );
            return vec![(Part::Text(other.to_string()), Slot::Text)];
        }
    };
    let mut parts = Vec::with_capacity(items.len());
    for (i, block) in items.iter().enumerate() {
        let part = match str_at(block, "type") {
            Some("text") => Part::Text(str_at(block, "text").unwrap_or_default().to_string()),
            Some("thinking") => {
                Part::Reasoning(str_at(block, "thinking").unwrap_or_default().to_string())
            }
            Some("redacted_thinking") => Part::Other {
                kind: "redacted_thinking".into(),
                text: str_at(block, "data").unwrap_or_default().to_string(),
            },
            Some("tool_use" | "server_tool_use") => Part::ToolCall {
                id: str_at(block, "id").unwrap_or_default().to_string(),
                name: str_at(block, "name").unwrap_or_default().to_string(),
                // `input` is an object; its JSON text (key order kept) is what the model saw.
                arguments: block.get("input").map(as_text).unwrap_or_default(),
            },
            Some("tool_result") => Part::ToolResult {
                id: str_at(block, "tool_use_id").unwrap_or_default().to_string(),
                name: None,
                content: result_text(block.get("content").unwrap_or(&Value::Null)),
            },
            Some(kind @ ("image" | "document")) => {
                let source = block.get("source");
                let what = source
                    .and_then(|s| str_at(s, "url").or_else(|| str_at(s, "media_type")))
                    .unwrap_or("inline data");
                Part::Other {
                    kind: kind.to_string(),
                    text: format!("[{kind}: {what}]"),
                }
            }
            Some(kind) => Part::Other {
                kind: kind.to_string(),
                text: block.to_string(),
            },
            None => match block {
                Value::String(s) => Part::Text(s.clone()),
                other => {
                    cx.warn(
                        location,
                        format!(
                            "content block without \"type\" ({}) ignored",
                            type_name(other)
                        ),
                    );
                    continue;
                }
            },
        };
        parts.push((part, Slot::Item(i)));
    }
    parts
}

/// A tool result's content: a string or a list of text (and image) blocks.
fn result_text(content: &Value) -> String {
    match content {
        Value::Array(items) => items
            .iter()
            .map(|b| match str_at(b, "type") {
                Some("text") => str_at(b, "text").unwrap_or_default().to_string(),
                Some(kind) => format!("[{kind}]"),
                None => as_text(b),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => as_text(other),
    }
}
