//! One chat message at a time, as a live agent holds it: the npm package's `MemoryPool.add`.
//!
//! The same parsing the file importers use (so a message added live becomes the same chunks as
//! the same message read from a log), plus the dialect, which the host needs to render the
//! managed context back in the shape it was given.
//!
//! ```
//! use memlens_import::live::{parse_message, Dialect};
//! use serde_json::json;
//!
//! let m = json!({"role": "user", "content": [
//!     {"type": "tool_result", "tool_use_id": "t1", "content": "42"}]});
//! let parsed = parse_message(&m, None).unwrap();
//! assert_eq!(parsed.dialect, Dialect::Anthropic);
//! assert!(parse_message(&json!({"content": "no role"}), None).is_err());
//! ```

pub use crate::chat::{Dialect, Slot};
use crate::error::{ImportError, Location};
use crate::json::type_name;
use crate::{anthropic, openai, Context};
use memlens_core::builder::Message;
pub use openai::is_text_item;
use serde_json::Value;

/// A parsed message.
#[derive(Debug, Clone)]
pub struct LiveMessage {
    /// The normalized message, ready for [`memlens_core::builder::TraceBuilder::push_message`].
    pub message: Message,
    /// Where each of `message.parts` came from, in the same order.
    pub slots: Vec<Slot>,
    /// The dialect it was read as.
    pub dialect: Dialect,
    /// Recoverable problems (an unknown role, an ignored content part).
    pub warnings: Vec<String>,
}

/// The name errors and warnings give the input.
const SOURCE: &str = "message";

/// Parses one message object. `dialect` forces a shape; `None` detects it: Anthropic when the
/// content holds Anthropic-only blocks, OpenAI otherwise (plain text messages read the same in
/// both). An object without a string `role` is an error.
pub fn parse_message(value: &Value, dialect: Option<Dialect>) -> Result<LiveMessage, ImportError> {
    let mut cx = Context::new(SOURCE);
    let invalid = |message: String| ImportError::Invalid {
        file: SOURCE.to_string(),
        location: Location::default(),
        message,
    };
    if !value.is_object() {
        return Err(invalid(format!(
            "expected a message object with a string \"role\", found {}",
            type_name(value)
        )));
    }
    let dialect = dialect.unwrap_or_else(|| detect(value));
    let parsed = match dialect {
        Dialect::OpenAi => openai::parse_message_with_slots(value, Location::default(), &mut cx),
        Dialect::Anthropic => {
            anthropic::parse_message_with_slots(value, Location::default(), &mut cx)
        }
    };
    let (message, slots) = parsed.ok_or_else(|| {
        invalid(match value.get("role") {
            Some(role) => format!("\"role\" is {}, expected a string", type_name(role)),
            None => "the message has no \"role\" (expected e.g. \"user\")".to_string(),
        })
    })?;
    Ok(LiveMessage {
        message,
        slots,
        dialect,
        warnings: cx.warnings.into_iter().map(|w| w.message).collect(),
    })
}

/// The dialect a message is written in (see [`parse_message`]).
pub fn detect(value: &Value) -> Dialect {
    if anthropic::is_anthropic_message(value) {
        Dialect::Anthropic
    } else {
        Dialect::OpenAi
    }
}

/// Reads a provider's reported usage: OpenAI (`prompt_tokens`, `completion_tokens`,
/// `prompt_tokens_details.cached_tokens`) or Anthropic (`input_tokens` + cache reads and writes,
/// normalized so that input includes cached input, as MemLens counts it).
pub fn parse_usage(value: &Value) -> Result<memlens_core::Usage, ImportError> {
    if !value.is_object() {
        return Err(ImportError::Invalid {
            file: "usage".into(),
            location: Location::default(),
            message: format!("expected a usage object, found {}", type_name(value)),
        });
    }
    let anthropic = value.get("cache_read_input_tokens").is_some()
        || value.get("cache_creation_input_tokens").is_some();
    Ok(if anthropic {
        anthropic::parse_usage(value)
    } else {
        openai::parse_usage(value)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slots(m: &Value, dialect: Dialect) -> Vec<Slot> {
        let parsed = parse_message(m, Some(dialect)).expect("a valid test message");
        assert_eq!(
            parsed.slots.len(),
            parsed.message.parts.len(),
            "one slot per part"
        );
        parsed.slots
    }

    #[test]
    fn every_part_knows_where_it_came_from() {
        let m = json!({"role": "assistant", "reasoning_content": "think", "content": [
            {"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "u"}},
            {"type": "text", "text": "b"}], "refusal": "no",
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]});
        assert_eq!(
            slots(&m, Dialect::OpenAi),
            vec![
                Slot::Key("reasoning_content"),
                Slot::Text,
                Slot::Item(1),
                Slot::Key("refusal"),
                Slot::ToolCall(0)
            ]
        );
        let t = json!({"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "42"}]});
        assert_eq!(slots(&t, Dialect::OpenAi), vec![Slot::ToolContent]);
        let f = json!({"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{}"}});
        assert_eq!(slots(&f, Dialect::OpenAi), vec![Slot::FunctionCall]);
        // An empty text item beside an image makes no text part: no text slot either (a layout
        // re-derived from the JSON gave one here, and the message was then kept whole).
        let e = json!({"role": "user", "content": [{"type": "text", "text": ""},
            {"type": "image_url", "image_url": {"url": "u"}}]});
        assert_eq!(slots(&e, Dialect::OpenAi), vec![Slot::Item(1)]);
        let a = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"},
            7, {"type": "text", "text": "next"}]});
        assert_eq!(
            slots(&a, Dialect::Anthropic),
            vec![Slot::Item(0), Slot::Item(2)]
        );
        assert_eq!(
            slots(
                &json!({"role": "user", "content": "hi"}),
                Dialect::Anthropic
            ),
            vec![Slot::Text]
        );
    }
}
