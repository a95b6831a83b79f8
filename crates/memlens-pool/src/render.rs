//! Renders a decided context back into the message objects the agent gave, in their own shape.
//!
//! A message whose chunks are all kept as they were is returned as the very object the agent
//! added (the host keeps those; Rust only says which). A message with some chunks compressed or
//! dropped is patched: the same object with those parts replaced or removed. Where each part lives
//! in the object ([`Slot`]) is recorded by the importer that parsed it (one chunk per part, in
//! order), so rendering cannot drift from parsing; when slots and chunks still do not match (a
//! message that made no parts), the message is never half-rendered: it is kept whole, or dropped whole when a tool
//! call in it was dropped (a call without its result is invalid for both providers).

pub use memlens_import::live::Slot;
use memlens_import::live::{is_text_item, Dialect};
use serde_json::{Map, Value};

/// What the context does with one chunk of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum PartState {
    /// Sent as it was.
    Keep,
    /// Sent with this text instead (compressed).
    Replace(std::sync::Arc<str>),
    /// Not sent.
    Drop,
}

/// True when the message holds nothing a provider would accept as a message.
fn is_empty_message(m: &Map<String, Value>) -> bool {
    let content_empty = match m.get("content") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    let calls_empty = m
        .get("tool_calls")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
        && m.get("function_call").is_none();
    content_empty && calls_empty
}

/// Applies the states of a message's chunks. `None`: the message is not sent at all.
/// `states` has one entry per chunk of the message, `slots` are its parts' slots
/// ([`memlens_import::live::LiveMessage::slots`]).
pub fn patch(
    message: &Value,
    dialect: Dialect,
    slots: &[Slot],
    states: &[PartState],
    tool_call_chunks: &[bool],
) -> Option<Value> {
    if states.iter().all(|s| *s == PartState::Keep) {
        return Some(message.clone());
    }
    if states.iter().all(|s| *s == PartState::Drop) {
        return None;
    }
    let Value::Object(original) = message else {
        return Some(message.clone());
    };
    if slots.len() != states.len() {
        // The layout did not match the chunks: never half-render.
        let dropped_call = states
            .iter()
            .zip(tool_call_chunks)
            .any(|(s, &call)| call && *s == PartState::Drop);
        return (!dropped_call).then(|| message.clone());
    }
    let mut m = original.clone();
    let mut drop_items: Vec<usize> = Vec::new();
    let mut drop_calls: Vec<usize> = Vec::new();
    for (&slot, state) in slots.iter().zip(states) {
        match (slot, state) {
            (_, PartState::Keep) => {}
            (Slot::Key(k), PartState::Drop) => {
                m.remove(k);
            }
            (Slot::Key(k), PartState::Replace(t)) => {
                m.insert(k.to_string(), Value::String(t.to_string()));
            }
            (Slot::ToolContent, PartState::Drop) => return None,
            (Slot::ToolContent, PartState::Replace(t)) => {
                m.insert("content".into(), Value::String(t.to_string()));
            }
            (Slot::Text, state) => patch_text(&mut m, dialect, state),
            (Slot::Item(i), PartState::Drop) => drop_items.push(i),
            (Slot::Item(i), PartState::Replace(t)) => {
                if let Some(block) = m
                    .get_mut("content")
                    .and_then(Value::as_array_mut)
                    .and_then(|a| a.get_mut(i))
                {
                    replace_block(block, t);
                }
            }
            (Slot::ToolCall(i), PartState::Drop) => drop_calls.push(i),
            (Slot::ToolCall(i), PartState::Replace(t)) => {
                if let Some(f) = m
                    .get_mut("tool_calls")
                    .and_then(Value::as_array_mut)
                    .and_then(|a| a.get_mut(i))
                    .and_then(|c| c.get_mut("function"))
                    .and_then(Value::as_object_mut)
                {
                    f.insert("arguments".into(), Value::String(t.to_string()));
                }
            }
            (Slot::FunctionCall, PartState::Drop) => {
                m.remove("function_call");
            }
            (Slot::FunctionCall, PartState::Replace(t)) => {
                if let Some(f) = m.get_mut("function_call").and_then(Value::as_object_mut) {
                    f.insert("arguments".into(), Value::String(t.to_string()));
                }
            }
        }
    }
    if let Some(items) = m.get_mut("content").and_then(Value::as_array_mut) {
        for &i in drop_items.iter().rev() {
            if i < items.len() {
                items.remove(i);
            }
        }
    }
    if let Some(calls) = m.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for &i in drop_calls.iter().rev() {
            if i < calls.len() {
                calls.remove(i);
            }
        }
        if calls.is_empty() {
            m.remove("tool_calls");
        }
    }
    (!is_empty_message(&m)).then_some(Value::Object(m))
}

/// The text slot: a string content, or (OpenAI arrays) all text items, merged by the importer.
fn patch_text(m: &mut Map<String, Value>, dialect: Dialect, state: &PartState) {
    let is_array = m.get("content").is_some_and(Value::is_array);
    match (state, is_array) {
        (PartState::Keep, _) => {}
        (PartState::Replace(t), false) => {
            m.insert("content".into(), Value::String(t.to_string()));
        }
        (PartState::Drop, false) => {
            let assistant = m.get("role").and_then(Value::as_str) == Some("assistant");
            let empty = if assistant && dialect == Dialect::OpenAi {
                Value::Null
            } else {
                Value::String(String::new())
            };
            m.insert("content".into(), empty);
        }
        (state, true) => {
            let Some(items) = m.get_mut("content").and_then(Value::as_array_mut) else {
                return;
            };
            let mut out = Vec::with_capacity(items.len());
            let mut placed = false;
            for item in items.drain(..) {
                if is_text_item(&item) {
                    if let (PartState::Replace(t), false) = (state, placed) {
                        out.push(serde_json::json!({"type": "text", "text": t}));
                        placed = true;
                    }
                } else {
                    out.push(item);
                }
            }
            *items = out;
        }
    }
}

/// Replaces the text of one content block with compressed text, by block type. Blocks whose text
/// cannot change without breaking them (signed thinking) are left as they are.
fn replace_block(block: &mut Value, text: &str) {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    match (kind.as_str(), block) {
        ("text" | "input_text" | "output_text", Value::Object(b)) => {
            b.insert("text".into(), Value::String(text.to_string()));
        }
        ("tool_result", Value::Object(b)) => {
            b.insert("content".into(), Value::String(text.to_string()));
        }
        ("tool_use" | "server_tool_use", Value::Object(b)) => {
            // `input` must stay an object: only a compaction that is still JSON is applied.
            if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
                b.insert("input".into(), v);
            }
        }
        ("", block @ Value::String(_)) => *block = Value::String(text.to_string()),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The slots the importer records for a message.
    fn layout(message: &Value, dialect: Dialect) -> Vec<Slot> {
        memlens_import::live::parse_message(message, Some(dialect))
            .expect("test messages are valid")
            .slots
    }

    #[test]
    fn layouts_follow_the_importers() {
        let m = json!({"role": "assistant", "content": "hi", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]});
        assert_eq!(
            layout(&m, Dialect::OpenAi),
            vec![Slot::Text, Slot::ToolCall(0), Slot::ToolCall(1)]
        );
        let a = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": "x"},
            {"type": "text", "text": "next"}]});
        assert_eq!(
            layout(&a, Dialect::Anthropic),
            vec![Slot::Item(0), Slot::Item(1)]
        );
    }

    #[test]
    fn dropping_one_call_keeps_the_rest_valid() {
        let m = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]});
        let slots = layout(&m, Dialect::OpenAi);
        let out = patch(
            &m,
            Dialect::OpenAi,
            &slots,
            &[PartState::Drop, PartState::Keep],
            &[true, true],
        )
        .unwrap();
        assert_eq!(out["tool_calls"].as_array().unwrap().len(), 1);
        assert_eq!(out["tool_calls"][0]["id"], "b");
        // Dropping every call of a message without text drops the message.
        assert!(patch(
            &m,
            Dialect::OpenAi,
            &slots,
            &[PartState::Drop, PartState::Drop],
            &[true, true]
        )
        .is_none());
    }

    #[test]
    fn compressed_tool_results_replace_content_in_place() {
        let t = json!({"role": "tool", "tool_call_id": "a", "content": "{\"a\": 1,   \"b\": 2}"});
        let out = patch(
            &t,
            Dialect::OpenAi,
            &layout(&t, Dialect::OpenAi),
            &[PartState::Replace("{\"a\":1}".into())],
            &[false],
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"role": "tool", "tool_call_id": "a", "content": "{\"a\":1}"})
        );
        let a = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "long"}]}]});
        let out = patch(
            &a,
            Dialect::Anthropic,
            &layout(&a, Dialect::Anthropic),
            &[PartState::Replace("short".into())],
            &[false],
        )
        .unwrap();
        assert_eq!(out["content"][0]["content"], "short");
        assert_eq!(out["content"][0]["tool_use_id"], "t");
    }

    #[test]
    fn a_mismatched_layout_never_half_renders() {
        let m = json!({"role": "assistant", "content": "x"});
        // Two chunks but one slot: keep whole unless a dropped chunk is a tool call.
        let slots = layout(&m, Dialect::OpenAi);
        assert_eq!(
            patch(
                &m,
                Dialect::OpenAi,
                &slots,
                &[PartState::Keep, PartState::Drop],
                &[false, false]
            ),
            Some(m.clone())
        );
        assert_eq!(
            patch(
                &m,
                Dialect::OpenAi,
                &slots,
                &[PartState::Keep, PartState::Drop],
                &[false, true]
            ),
            None
        );
    }
}
