//! What the chat importers share, at the bottom of the crate: the [`Dialect`] of a message, the
//! [`Slot`] each part came from, and the loop over records that are conversations or logged
//! request/response pairs, which the OpenAI and Anthropic importers run with their own [`Reader`].

use crate::document::Document;
use crate::error::source_pos;
use crate::error::{ImportError, Location};
use crate::json::{as_text, str_at};
use crate::logs::{build_traces, LoggedCall};
use crate::Context;
use memlens_core::builder::{CallInfo, Message, TraceBuilder};
use memlens_core::{Trace, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The message shapes MemLens reads live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// OpenAI Chat Completions messages (`tool_calls`, `role: "tool"`).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages (`tool_use` / `tool_result` blocks).
    Anthropic,
}

/// Where a part's text lives in its message object: one per part of a parsed message, set by
/// the importer that made the part, so rendering a managed context back cannot drift from
/// parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// A string field of the message (`reasoning_content`, `reasoning`, `refusal`).
    Key(&'static str),
    /// The whole `content` of an OpenAI tool message.
    ToolContent,
    /// The text of `content`: the string, or (OpenAI) every text item of the content array.
    Text,
    /// Item `i` of the `content` array (a non-text OpenAI part, an Anthropic block).
    Item(usize),
    /// `tool_calls[i]` (OpenAI).
    ToolCall(usize),
    /// The legacy `function_call` (OpenAI).
    FunctionCall,
}

/// How one dialect's records are read (messages, responses, usage): the OpenAI and Anthropic
/// importers differ only in these.
pub struct Reader {
    /// Parses a request's messages (and the system field, for Anthropic) into normalized messages.
    pub request_messages: fn(&Value, Location, &mut Context<'_>) -> Option<Vec<Message>>,
    /// Parses a response object into output messages, model and usage.
    pub response: fn(&Value, Location, &mut Context<'_>) -> Response,
}

/// What a response record holds: output messages, model, usage.
pub type Response = (Vec<Message>, Option<String>, Option<Usage>);

/// Reads records that are either whole conversations or logged calls.
pub fn import_records(
    doc: Document<'_>,
    cx: &mut Context<'_>,
    format: &str,
    reader: &Reader,
) -> Result<Vec<Trace>, ImportError> {
    let mut traces = Vec::new();
    let mut calls = Vec::new();
    for item in doc.into_records() {
        let Some((location, record)) = cx.accept(item) else {
            continue;
        };
        let record = &record;
        if let Some((request, response)) = log_parts(record) {
            let Some(input) = (reader.request_messages)(request, location, cx) else {
                cx.warn(
                    location,
                    "request skipped: it has no \"messages\" list (its response is not a call)",
                );
                continue;
            };
            let (output, model, usage) = (reader.response)(response, location, cx);
            let model = model.or_else(|| str_at(request, "model").map(str::to_string));
            calls.push(LoggedCall {
                group: group_id(record).or_else(|| group_id(request)),
                input,
                output,
                info: CallInfo {
                    model,
                    usage,
                    started_at: time_field(
                        record,
                        &["start_time", "startTime", "created_at", "timestamp"],
                    )
                    .or_else(|| time_field(response, &["created"])),
                    ended_at: time_field(record, &["end_time", "endTime"]),
                    latency_ms: record
                        .get("latency_ms")
                        .and_then(Value::as_f64)
                        .or_else(|| {
                            record
                                .get("latency")
                                .and_then(Value::as_f64)
                                .map(|s| s * 1000.0)
                        }),
                    source: Some(source_pos(location)),
                },
                location,
            });
        } else if let Some(messages) = (reader.request_messages)(record, location, cx) {
            let id = group_id(record).unwrap_or_else(|| format!("conversation-{}", traces.len()));
            let mut b = TraceBuilder::new(id, format);
            b.set_model(str_at(record, "model").map(str::to_string));
            for m in messages {
                b.push_message(m, None);
            }
            b.reconstruct_calls();
            traces.push(cx.finish(b, location));
        } else {
            cx.warn(
                location,
                "skipped: not a conversation or a request/response record",
            );
        }
    }
    traces.extend(build_traces(calls, format, cx));
    Ok(traces)
}

fn time_field(v: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| v.get(*k).filter(|x| x.is_string() || x.is_number()))
        .map(as_text)
}

/// An explicit conversation id on a record.
fn group_id(v: &Value) -> Option<String> {
    const KEYS: [&str; 6] = [
        "trace_id",
        "session_id",
        "conversation_id",
        "thread_id",
        "traceId",
        "sessionId",
    ];
    KEYS.iter()
        .find_map(|k| v.get(*k))
        .or_else(|| {
            v.get("metadata")
                .and_then(|m| KEYS.iter().find_map(|k| m.get(*k)))
        })
        .filter(|x| x.is_string() || x.is_number())
        .map(as_text)
}

/// Splits a logged call into (request, response), for the shapes users log.
pub fn log_parts(record: &Value) -> Option<(&Value, &Value)> {
    for (req, res) in [("request", "response"), ("input", "output"), ("req", "res")] {
        if let (Some(q), Some(s)) = (record.get(req), record.get(res)) {
            if q.is_object() && s.is_object() {
                return Some((q, s));
            }
        }
    }
    // LiteLLM-style: messages beside the response.
    match (record.get("messages"), record.get("response")) {
        (Some(Value::Array(_)), Some(res @ Value::Object(_))) => Some((record, res)),
        _ => None,
    }
}
