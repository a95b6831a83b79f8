//! One Codex response item as a message: its role, parts and kind for the compaction rules.

use super::EntryKind;
use crate::error::Location;
use crate::json::{array_at, as_text, str_at};
use crate::Context;
use memlens_core::builder::{Message, Part, Role};
use memlens_core::Category;
use serde_json::Value;

/// Whether a response item is produced by the model.
pub(super) fn is_model_item(item: &Value) -> bool {
    match str_at(item, "type") {
        Some("message") => str_at(item, "role") == Some("assistant"),
        Some(
            "reasoning"
            | "function_call"
            | "custom_tool_call"
            | "local_shell_call"
            | "web_search_call"
            | "image_generation_call"
            | "tool_search_call",
        ) => true,
        _ => false,
    }
}

/// User messages Codex puts in the history that the user did not type
/// (`codex-rs/core/src/contextual_user_message.rs`, `event_mapping.rs`): the first three are
/// rebuilt with the initial context after a compaction, the others are dropped.
const INITIAL_PREFIXES: [&str; 3] = [
    "<environment_context>",
    "<user_instructions>",
    "# agents.md instructions",
];
const CONTEXTUAL_PREFIXES: [&str; 6] = [
    "<turn_aborted>",
    "<user_shell_command>",
    "<skill",
    "<context_update>",
    "<subagent_notification>",
    "<tool_context>",
];

fn message_kind(role: &str, text: &str) -> EntryKind {
    let lowered = text.trim_start().to_ascii_lowercase();
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| lowered.starts_with(p));
    match role {
        "developer" | "system" => EntryKind::Initial,
        "user" if starts(&INITIAL_PREFIXES) => EntryKind::Initial,
        "user" if starts(&CONTEXTUAL_PREFIXES) => EntryKind::Other,
        "user" => EntryKind::User { bytes: text.len() },
        _ => EntryKind::Other,
    }
}

/// One response item as a message: (message, its kind, produced by the model).
pub(super) fn parse_item(
    item: &Value,
    location: Location,
    cx: &mut Context<'_>,
) -> Option<(Message, EntryKind, bool)> {
    let Some(kind) = str_at(item, "type") else {
        cx.warn(location, "response item without \"type\" ignored");
        return None;
    };
    let call_id = || {
        str_at(item, "call_id")
            .or_else(|| str_at(item, "id"))
            .unwrap_or_default()
            .to_string()
    };
    let model = |parts: Vec<Part>| Message {
        role: Some(Role::Assistant),
        role_name: "assistant".into(),
        parts,
        ..Message::default()
    };
    let json_text = |key: &str| item.get(key).map(as_text).unwrap_or_default();
    let message = match kind {
        "message" => {
            let role = str_at(item, "role").unwrap_or("user");
            let parts = content_parts(item.get("content").unwrap_or(&Value::Null));
            let text: String = parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            let entry_kind = message_kind(role, &text);
            let message = Message {
                role: Some(Role::parse(role)),
                role_name: role.to_string(),
                parts,
                ..Message::default()
            };
            return Some((message, entry_kind, role == "assistant"));
        }
        "reasoning" => {
            let texts = |key: &str| -> Vec<String> {
                array_at(item, key)
                    .map(|parts| {
                        parts
                            .iter()
                            .filter_map(|p| str_at(p, "text").map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut text = texts("summary");
            if text.is_empty() {
                text = texts("content");
            }
            model(vec![Part::Reasoning(text.join("\n\n"))])
        }
        "function_call" | "custom_tool_call" | "tool_search_call" | "local_shell_call" => {
            let (name, arguments) = match kind {
                "custom_tool_call" => (str_at(item, "name"), json_text("input")),
                "tool_search_call" => (Some("tool_search"), json_text("arguments")),
                "local_shell_call" => (Some("local_shell"), json_text("action")),
                _ => (str_at(item, "name"), json_text("arguments")),
            };
            model(vec![Part::ToolCall {
                id: call_id(),
                name: name.unwrap_or_default().to_string(),
                arguments,
            }])
        }
        "web_search_call" | "image_generation_call" => model(vec![Part::Other {
            kind: kind.to_string(),
            text: item
                .get("action")
                .or_else(|| item.get("revised_prompt"))
                .map(as_text)
                .unwrap_or_default(),
        }]),
        "function_call_output" | "custom_tool_call_output" | "tool_search_output" => {
            let output = item.get("output").or_else(|| item.get("tools"));
            Message {
                role: Some(Role::Tool),
                role_name: "tool".into(),
                parts: vec![Part::ToolResult {
                    id: call_id(),
                    name: str_at(item, "name").map(str::to_string),
                    content: output.map(output_text).unwrap_or_default(),
                }],
                ..Message::default()
            }
        }
        // A remote compaction's summary, encrypted: its text is the `compacted` message, if any.
        "compaction" | "compaction_summary" => Message {
            role: Some(Role::User),
            role_name: "user".into(),
            parts: vec![Part::Text(String::new())],
            category: Some(Category::Summary),
            ..Message::default()
        },
        // Undo snapshots and forward-compatible placeholders are never sent to the model.
        "ghost_snapshot" | "other" => return None,
        other => {
            cx.warn(
                location,
                format!("unknown response item type {other:?} ignored"),
            );
            return None;
        }
    };
    let from_model = message.role == Some(Role::Assistant);
    Some((message, EntryKind::Other, from_model))
}

/// `content` of a message item: `input_text` / `output_text` parts (or a string).
fn content_parts(content: &Value) -> Vec<Part> {
    match content {
        Value::String(s) => vec![Part::Text(s.clone())],
        Value::Array(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for item in items {
                match (str_at(item, "type"), str_at(item, "text")) {
                    (_, Some(text)) => parts.push(Part::Text(text.to_string())),
                    (Some(kind), None) => parts.push(Part::Other {
                        kind: kind.to_string(),
                        text: format!(
                            "[{kind}: {}]",
                            str_at(item, "image_url")
                                .filter(|u| !u.starts_with("data:"))
                                .unwrap_or("inline data")
                        ),
                    }),
                    (None, None) => parts.push(Part::Text(as_text(item))),
                }
            }
            parts
        }
        Value::Null => Vec::new(),
        other => vec![Part::Text(other.to_string())],
    }
}

/// A tool output: a string, content items, or the older `{content, success}` object.
fn output_text(output: &Value) -> String {
    match output {
        Value::Array(_) => Part::joined_text(content_parts(output)),
        Value::Object(_) => match output.get("content") {
            Some(content) => output_text(content),
            None => output.to_string(),
        },
        other => as_text(other),
    }
}
