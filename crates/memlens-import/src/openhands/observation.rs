//! V0 observations as OpenHands put them in the model's context
//! (`openhands/memory/conversation_memory.py`, `_process_observation`), and the rendering of a
//! file edit (`openhands/events/observation/files.py`, `FileEditObservation.__str__`).

use super::difflib::{grouped_opcodes, Tag};
use super::Stream;
use crate::error::Location;
use crate::json::{array_at, scalar_text, str_at, type_name};
use crate::Context;
use memlens_core::builder::{Message, Part, Role};
use memlens_core::Category;
use serde_json::Value;

impl Stream {
    pub(super) fn v0_observation(
        &mut self,
        kind: &str,
        ev: &Value,
        id: &str,
        location: Location,
        cx: &mut Context<'_>,
    ) {
        let content = match ev.get("content") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(other) => {
                cx.warn(
                    location,
                    format!(
                        "event {id}: \"content\" is {}, expected a string: kept as JSON text",
                        type_name(other)
                    ),
                );
                other.to_string()
            }
        };
        let content = content.as_str();
        let extras = ev.get("extras").unwrap_or(&Value::Null);
        let metadata = ev.get("tool_call_metadata").filter(|m| m.is_object());
        let call_id = metadata
            .and_then(|m| str_at(m, "tool_call_id"))
            .map(str::to_string)
            .or_else(|| {
                let cause = ev.get("cause").and_then(scalar_text)?;
                self.action_calls.get(&cause).cloned()
            });
        let text = match kind {
            "agent_state_changed" | "null" | "loop_detection" | "llm_response" | "success" => {
                return
            }
            "condense" | "agent_condensation_observation" => {
                let message = Message {
                    category: Some(Category::Summary),
                    ..Message::text("user", content)
                };
                self.append(&message, id);
                return;
            }
            "recall" => {
                let text = recall_text(extras);
                if !text.is_empty() {
                    let message = Message {
                        meta: memlens_core::ChunkMeta {
                            kind: Some("recall".into()),
                            ..Default::default()
                        },
                        ..Message::text("user", text)
                    };
                    self.append(&message, id);
                }
                return;
            }
            "error" => format!("{content}\n[Error occurred in processing last action]"),
            "user_rejected" => {
                format!("OBSERVATION:\n{content}\n[Last action has been rejected by the user]")
            }
            "run" if call_id.is_none() => {
                format!("\nObserved result of command executed by user:\n{content}")
            }
            "edit" => edit_text(content, extras, id, location, cx),
            _ => {
                if !KNOWN_V0_OBSERVATIONS.contains(&kind) {
                    cx.warn(
                        location,
                        format!("unknown OpenHands observation {kind:?}: kept as its content"),
                    );
                }
                content.to_string()
            }
        };
        let message = match call_id {
            Some(call_id) => Message {
                role: Some(Role::Tool),
                role_name: "tool".into(),
                parts: vec![Part::ToolResult {
                    id: call_id,
                    name: metadata
                        .and_then(|m| str_at(m, "function_name"))
                        .map(str::to_string),
                    content: text,
                }],
                ..Message::default()
            },
            None => Message::text("user", text),
        };
        self.append(&message, id);
    }
}

const KNOWN_V0_OBSERVATIONS: [&str; 15] = [
    "run",
    "run_ipython",
    "read",
    "write",
    "edit",
    "browse",
    "chat",
    "delegate",
    "message",
    "think",
    "mcp",
    "download",
    "task_tracking",
    "error",
    "user_rejected",
];

/// What the model read of a file edit: `str(FileEditObservation)`. An edit made by the ACI
/// editor (`impl_source: "oh_aci"`, the `str_replace_editor` tool) sends its `content`, the
/// editor's own report; the UI's diff is in `extras.diff`. An LLM-based edit (the default, and
/// every edit before `impl_source` existed) stores a git diff as `content` but sends a note for a
/// new file, else `visualize_diff()` of the old and new contents.
fn edit_text(
    content: &str,
    extras: &Value,
    id: &str,
    location: Location,
    cx: &mut Context<'_>,
) -> String {
    if str_at(extras, "impl_source") == Some("oh_aci") {
        return content.to_string();
    }
    let path = extras.get("path").and_then(scalar_text).unwrap_or_default();
    if extras.get("prev_exist") == Some(&Value::Bool(false)) {
        return format!("[New file {path} is created with the provided content.]\n");
    }
    if let Some(cached) = str_at(extras, "_diff_cache") {
        return format!("{}\n", cached.trim_end());
    }
    match (str_at(extras, "old_content"), str_at(extras, "new_content")) {
        (Some(old), Some(new)) => {
            format!("{}\n", visualize_diff(path.as_str(), old, new).trim_end())
        }
        _ => {
            if extras.get("impl_source").is_some() {
                cx.warn(
                    location,
                    format!(
                        "event {id}: edit observation without old_content/new_content: counted \
                         as its content, not the diff OpenHands rendered for the model"
                    ),
                );
            }
            content.to_string()
        }
    }
}

/// `FileEditObservation.visualize_diff(n_context_lines=2)`: each hunk's lines before and after
/// the edit, numbered.
fn visualize_diff(path: &str, old: &str, new: &str) -> String {
    if old == new {
        return "(no changes detected. Please make sure your edits change the content of the \
                existing file.)\n"
            .to_string();
    }
    let old_lines: Vec<&str> = old.split('\n').collect();
    let new_lines: Vec<&str> = new.split('\n').collect();
    let groups = grouped_opcodes(&old_lines, &new_lines, 2);
    let mut out = vec![format!(
        "[Existing file {path} is edited with {} changes.]",
        groups.len()
    )];
    for (g, group) in groups.iter().enumerate() {
        // Width of the largest line number in the hunk (its last opcode's start in the new
        // file), plus one for the `-` / `+` mark.
        let pad = group.last().map_or(1, |c| c.j1.to_string().len() + 1);
        let (mut before, mut after) = (Vec::new(), Vec::new());
        for c in group {
            if c.tag == Tag::Equal {
                before.extend(numbered(&old_lines, c.i1..c.i2, None, pad));
                after.extend(numbered(&new_lines, c.j1..c.j2, None, pad));
                continue;
            }
            if matches!(c.tag, Tag::Replace | Tag::Delete) {
                before.extend(numbered(&old_lines, c.i1..c.i2, Some('-'), pad));
            }
            if matches!(c.tag, Tag::Replace | Tag::Insert) {
                after.extend(numbered(&new_lines, c.j1..c.j2, Some('+'), pad));
            }
        }
        if g != 0 {
            out.push("-------------------------".to_string());
        }
        let n = groups.len();
        out.push(format!("[begin of edit {} / {n}]", g + 1));
        out.push("(content before edit)".to_string());
        out.extend(before);
        out.push("(content after edit)".to_string());
        out.extend(after);
        out.push(format!("[end of edit {} / {n}]", g + 1));
    }
    out.join("\n")
}

/// Lines `range` numbered from 1, right-aligned to `pad` columns including the `mark`.
fn numbered(
    lines: &[&str],
    range: std::ops::Range<usize>,
    mark: Option<char>,
    pad: usize,
) -> Vec<String> {
    range
        .filter_map(|i| Some((i + 1, lines.get(i)?)))
        .map(|(n, line)| match mark {
            None => format!("{n:>pad$}|{line}"),
            Some(m) => format!("{m}{n:>w$}|{line}", w = pad.saturating_sub(1)),
        })
        .collect()
}

/// The context a `recall` observation adds: instructions and triggered microagents' knowledge.
fn recall_text(extras: &Value) -> String {
    let mut texts: Vec<String> = [
        "repo_instructions",
        "additional_agent_instructions",
        "conversation_instructions",
    ]
    .iter()
    .filter_map(|k| str_at(extras, k))
    .filter(|t| !t.trim().is_empty())
    .map(str::to_string)
    .collect();
    for agent in array_at(extras, "microagent_knowledge")
        .into_iter()
        .flatten()
    {
        if let Some(content) = str_at(agent, "content").filter(|t| !t.trim().is_empty()) {
            texts.push(content.to_string());
        }
    }
    texts.join("\n\n")
}
