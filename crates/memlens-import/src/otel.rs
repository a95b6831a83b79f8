//! OpenTelemetry GenAI spans in OTLP JSON: one `{"resourceSpans": [...]}` document (an
//! `ExportTraceServiceRequest`), or JSON Lines of them as the collector's file exporter writes.
//! `scopeSpans` and the older `instrumentationLibrarySpans` are both read.
//!
//! A span is an LLM call when it carries message content, in any of three generations of the GenAI
//! semantic conventions:
//! - current: `gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`, each
//!   a JSON string of `{role, parts: [{type: text | reasoning | tool_call | tool_call_response |
//!   blob | uri | file, ...}]}` messages;
//! - older flattened attributes: `gen_ai.prompt.{i}.role/content/tool_call_id/name/tool_calls.{j}.*`
//!   and `gen_ai.completion.{i}.*` (OpenLLMetry and friends);
//! - span events `gen_ai.{system,user,assistant,tool}.message` and `gen_ai.choice` (best effort).
//!
//! Usage comes from `gen_ai.usage.*`, the model from `gen_ai.response.model` (else
//! `gen_ai.request.model`), times from the span. Call spans are grouped into one trace per
//! `traceId` and ordered by start time; every span lists its whole input, so the calls go through
//! [`crate::logs::build_traces`], which interns the history resent on every call. Tool execution
//! spans (`gen_ai.operation.name = execute_tool`) give the latency of the matching tool result.
//! Other spans (HTTP, database, agent wrappers) are ignored.

use crate::document::Document;
use crate::error::source_pos;
use crate::error::{ImportError, Location};
use crate::json::{array_at, as_text, as_u64, str_at, type_name};
use crate::logs::{build_traces, LoggedCall};
use crate::{Context, Importer};
use memlens_core::builder::{CallInfo, Message, Part, Role};
use memlens_core::{Category, Trace, Usage};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// The OpenTelemetry (OTLP JSON) GenAI spans importer.
pub struct Otel;

impl Importer for Otel {
    fn name(&self) -> &'static str {
        "otel"
    }

    fn description(&self) -> &'static str {
        "OpenTelemetry GenAI spans in OTLP JSON (one export request, or JSON Lines of them)"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_export(first)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let spans = collect_spans(doc, cx);
        let mut calls: Vec<SpanCall> = Vec::new();
        let mut tool_latency: HashMap<(String, String), f64> = HashMap::new();
        let mut without_content = 0usize;
        for span in spans {
            if is_call(&span) {
                let (input, output) = span_messages(&span, cx);
                calls.push(SpanCall {
                    span,
                    input,
                    output,
                });
            } else if span.attr_str("gen_ai.operation.name") == Some("execute_tool") {
                if let (Some(id), Some(ms)) =
                    (span.attr_str("gen_ai.tool.call.id"), span.latency_ms())
                {
                    tool_latency.insert((span.trace_id.clone(), id.to_string()), ms);
                }
            } else if is_contentless_llm_span(&span) {
                without_content += 1;
            }
        }
        if calls.is_empty() {
            if without_content > 0 {
                // Not "no traces": the calls are there, their content was not recorded. Say how
                // to fix it.
                return Err(cx.invalid(
                    Location::default(),
                    format!(
                        "{without_content} GenAI call span(s) found but none records message content; \
                         most instrumentations capture it only when asked (e.g. \
                         OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)"
                    ),
                ));
            }
            return Ok(Vec::new());
        }
        if without_content > 0 {
            cx.warn(
                Location::default(),
                format!("{without_content} GenAI call span(s) without message content skipped"),
            );
        }

        // Traces in order of first appearance, calls within a trace by start time: exporters write
        // spans when they end, so a file's order is end order (and batches may interleave traces).
        let mut order: Vec<String> = Vec::new();
        let mut by_trace: HashMap<String, Vec<SpanCall>> = HashMap::new();
        for call in calls {
            let key = call.span.trace_id.clone();
            if !by_trace.contains_key(&key) {
                order.push(key.clone());
            }
            by_trace.entry(key).or_default().push(call);
        }
        let mut services: HashMap<String, String> = HashMap::new();
        let mut logged = Vec::new();
        for key in &order {
            let Some(mut group) = by_trace.remove(key) else {
                continue;
            };
            // Stable: spans without a start time keep their file order (and come first).
            group.sort_by_key(|c| c.span.start.unwrap_or(0));
            for SpanCall {
                span,
                input,
                output,
            } in group
            {
                if let Some(service) = &span.service {
                    services
                        .entry(span.trace_id.clone())
                        .or_insert_with(|| service.clone());
                }
                logged.push(LoggedCall {
                    // No traceId: fall back to grouping by history continuity.
                    group: Some(span.trace_id.clone()).filter(|id| !id.is_empty()),
                    info: CallInfo {
                        model: span
                            .attr_text("gen_ai.response.model")
                            .or_else(|| span.attr_text("gen_ai.request.model")),
                        usage: Some(span_usage(&span)),
                        started_at: span.start_text.clone(),
                        ended_at: span.end_text.clone(),
                        latency_ms: span.latency_ms(),
                        source: Some(source_pos(span.location)),
                    },
                    input,
                    output,
                    location: span.location,
                });
            }
        }
        let mut traces = build_traces(logged, "otel", cx);
        for trace in &mut traces {
            if let Some(service) = services.get(&trace.id) {
                trace
                    .attributes
                    .insert("service.name".into(), service.clone());
            }
            // The tool span measured the execution that produced the result the next call reads.
            for chunk in &mut trace.chunks {
                if chunk.category != Category::ToolResult || chunk.meta.latency_ms.is_some() {
                    continue;
                }
                let Some(id) = &chunk.meta.tool_call_id else {
                    continue;
                };
                if let Some(ms) = tool_latency.get(&(trace.id.clone(), id.clone())) {
                    chunk.meta.latency_ms = Some(*ms);
                }
            }
        }
        Ok(traces)
    }
}

/// A call span with its messages.
struct SpanCall {
    span: Span,
    input: Vec<Message>,
    output: Vec<Message>,
}

pub(crate) fn is_export(v: &Value) -> bool {
    array_at(v, "resourceSpans").is_some()
}

/// One span, its attributes decoded from OTLP `AnyValue`s into plain JSON.
pub(crate) struct Span {
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
    pub(crate) name: String,
    pub(crate) start: Option<u64>,
    pub(crate) end: Option<u64>,
    pub(crate) start_text: Option<String>,
    pub(crate) end_text: Option<String>,
    pub(crate) attrs: Map<String, Value>,
    events: Vec<Event>,
    /// `service.name` of the resource that emitted it.
    pub(crate) service: Option<String>,
    /// The record (export request) it came from.
    pub(crate) location: Location,
}

struct Event {
    name: String,
    attrs: Map<String, Value>,
}

impl Span {
    pub(crate) fn attr_str(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).and_then(Value::as_str)
    }

    /// An attribute as text, whatever its scalar type (ids and models are sometimes numbers).
    pub(crate) fn attr_text(&self, key: &str) -> Option<String> {
        self.attrs
            .get(key)
            .filter(|v| !v.is_null())
            .map(as_text)
            .filter(|s| !s.is_empty())
    }

    pub(crate) fn attr_u64(&self, key: &str) -> Option<u64> {
        self.attrs.get(key).and_then(as_u64)
    }

    pub(crate) fn latency_ms(&self) -> Option<f64> {
        let (start, end) = (self.start?, self.end?);
        end.checked_sub(start).map(|ns| ns as f64 / 1e6)
    }

    /// How warnings name the span: its name alone is rarely unique in a trace, its id is.
    pub(crate) fn label(&self) -> String {
        format!("span {:?} (spanId {})", self.name, self.span_id)
    }
}

/// Every span of every record, in file order.
pub(crate) fn collect_spans(doc: Document<'_>, cx: &mut Context<'_>) -> Vec<Span> {
    let mut spans = Vec::new();
    for item in doc.into_records() {
        let Some((location, record)) = cx.accept(item) else {
            continue;
        };
        let Some(resources) = array_at(&record, "resourceSpans") else {
            cx.warn(location, "skipped: record has no \"resourceSpans\" array");
            continue;
        };
        for rs in resources {
            let resource_attrs = rs
                .get("resource")
                .and_then(|r| r.get("attributes"))
                .map(attributes)
                .unwrap_or_default();
            let service = resource_attrs.get("service.name").map(as_text);
            // `instrumentationLibrarySpans` is the pre-1.0 OTLP name of `scopeSpans`.
            let scopes = array_at(rs, "scopeSpans")
                .into_iter()
                .chain(array_at(rs, "instrumentationLibrarySpans"))
                .flatten();
            for scope in scopes {
                for (i, span) in array_at(scope, "spans").into_iter().flatten().enumerate() {
                    if !span.is_object() {
                        cx.warn(
                            location,
                            format!(
                                "span {i} skipped: expected an object, found {}",
                                type_name(span)
                            ),
                        );
                        continue;
                    }
                    spans.push(parse_span(span, service.clone(), location));
                }
            }
        }
    }
    spans
}

fn parse_span(span: &Value, service: Option<String>, location: Location) -> Span {
    let text = |key: &str| {
        span.get(key)
            .filter(|v| v.is_string() || v.is_number())
            .map(as_text)
    };
    // Unix nanoseconds: OTLP JSON writes 64-bit integers as strings, some exporters as numbers.
    // Zero means "not set".
    let nanos = |key: &str| span.get(key).and_then(as_u64).filter(|n| *n > 0);
    let events = array_at(span, "events")
        .into_iter()
        .flatten()
        .map(|e| Event {
            name: str_at(e, "name").unwrap_or_default().to_string(),
            attrs: e.get("attributes").map(attributes).unwrap_or_default(),
        })
        .collect();
    Span {
        trace_id: text("traceId").unwrap_or_default(),
        span_id: text("spanId").unwrap_or_default(),
        name: text("name").unwrap_or_default(),
        start: nanos("startTimeUnixNano"),
        end: nanos("endTimeUnixNano"),
        start_text: nanos("startTimeUnixNano").and(text("startTimeUnixNano")),
        end_text: nanos("endTimeUnixNano").and(text("endTimeUnixNano")),
        attrs: span.get("attributes").map(attributes).unwrap_or_default(),
        events,
        service,
        location,
    }
}

/// OTLP attributes `[{key, value: AnyValue}]` as a map (a plain JSON object is accepted too).
fn attributes(v: &Value) -> Map<String, Value> {
    match v {
        Value::Array(items) => items
            .iter()
            .filter_map(|kv| {
                let key = str_at(kv, "key")?;
                Some((
                    key.to_string(),
                    kv.get("value").map_or(Value::Null, any_value),
                ))
            })
            .collect(),
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    }
}

/// An OTLP `AnyValue` (`{"stringValue": ...}` etc.) as plain JSON; a value that is not wrapped is
/// kept as it is.
fn any_value(v: &Value) -> Value {
    let Value::Object(map) = v else {
        return v.clone();
    };
    if let Some(s) = map.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = map.get("intValue") {
        // int64 is a JSON string in OTLP JSON.
        return match i {
            Value::String(s) => s
                .trim()
                .parse::<i64>()
                .map_or_else(|_| i.clone(), Value::from),
            other => other.clone(),
        };
    }
    if let Some(d) = map.get("doubleValue") {
        return match d {
            // NaN and infinities are strings; keep them as text.
            Value::String(s) => s
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map_or_else(|| d.clone(), Value::Number),
            other => other.clone(),
        };
    }
    if let Some(b) = map.get("boolValue") {
        return b.clone();
    }
    if let Some(a) = map.get("arrayValue") {
        return Value::Array(
            array_at(a, "values")
                .into_iter()
                .flatten()
                .map(any_value)
                .collect(),
        );
    }
    if let Some(kv) = map.get("kvlistValue") {
        return Value::Object(kv.get("values").map(attributes).unwrap_or_default());
    }
    if let Some(b) = map.get("bytesValue") {
        return b.clone();
    }
    if map.is_empty() {
        return Value::Null;
    }
    v.clone()
}

const EVENT_ROLES: [(&str, &str); 5] = [
    ("gen_ai.system.message", "system"),
    ("gen_ai.user.message", "user"),
    ("gen_ai.assistant.message", "assistant"),
    ("gen_ai.tool.message", "tool"),
    ("gen_ai.choice", "assistant"),
];

fn is_call(span: &Span) -> bool {
    // Embedding spans carry their input as `gen_ai.prompt.*` too, but are not chat context.
    if span.attr_str("gen_ai.operation.name") == Some("embeddings")
        || span.attr_str("llm.request.type") == Some("embedding")
    {
        return false;
    }
    span.attrs.keys().any(|k| {
        matches!(
            k.as_str(),
            "gen_ai.input.messages" | "gen_ai.output.messages" | "gen_ai.system_instructions"
        ) || k.starts_with("gen_ai.prompt.")
            || k.starts_with("gen_ai.completion.")
    }) || span
        .events
        .iter()
        .any(|e| EVENT_ROLES.iter().any(|(n, _)| *n == e.name))
}

/// A model call span whose content was not captured (the default of most instrumentations).
fn is_contentless_llm_span(span: &Span) -> bool {
    match span.attr_str("gen_ai.operation.name") {
        Some(op) => matches!(op, "chat" | "text_completion" | "generate_content"),
        None => span.attrs.keys().any(|k| k.starts_with("gen_ai.usage.")),
    }
}

/// The call's input and output messages. Each side comes from the newest convention that has it.
fn span_messages(span: &Span, cx: &mut Context<'_>) -> (Vec<Message>, Vec<Message>) {
    let mut input = Vec::new();
    if let Some(v) = span.attrs.get("gen_ai.system_instructions") {
        input.extend(system_instructions(v, span, cx));
    }
    let (event_input, event_output) = event_messages(span, cx);
    if let Some(v) = span.attrs.get("gen_ai.input.messages") {
        input.extend(semconv_messages(v, "gen_ai.input.messages", span, cx));
    } else if let Some(msgs) = legacy_messages(span, "gen_ai.prompt.", "user") {
        input.extend(msgs);
    } else {
        input.extend(event_input);
    }
    let output = if let Some(v) = span.attrs.get("gen_ai.output.messages") {
        semconv_messages(v, "gen_ai.output.messages", span, cx)
    } else if let Some(msgs) = legacy_messages(span, "gen_ai.completion.", "assistant") {
        msgs
    } else {
        event_output
    };
    (input, output)
}

/// A JSON-string attribute decoded; an already structured value (an OTLP array or kvlist) is
/// taken as it is. `None` (with a warning) when the string is not JSON.
fn decode_json(v: &Value, key: &str, span: &Span, cx: &mut Context<'_>) -> Option<Value> {
    match v {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(parsed) => Some(parsed),
            Err(e) => {
                // Typically an attribute cut by a length limit (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT).
                cx.warn(
                    span.location,
                    format!(
                        "{}: {key} is not valid JSON ({e}, {} bytes): ignored",
                        span.label(),
                        s.len()
                    ),
                );
                None
            }
        },
        other => Some(other.clone()),
    }
}

fn semconv_messages(v: &Value, key: &str, span: &Span, cx: &mut Context<'_>) -> Vec<Message> {
    let items = match decode_json(v, key, span, cx) {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(one @ Value::Object(_)) => vec![one],
        Some(other) => {
            cx.warn(
                span.location,
                format!(
                    "{}: {key} is {}, expected a list of messages: ignored",
                    span.label(),
                    type_name(&other)
                ),
            );
            return Vec::new();
        }
    };
    let mut messages = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(role_name) = str_at(item, "role") else {
            cx.warn(
                span.location,
                format!(
                    "{}: {key} message {i} skipped: it has no string \"role\"",
                    span.label()
                ),
            );
            continue;
        };
        let role = Role::parse(role_name);
        if let Role::Other(name) = &role {
            cx.warn(
                span.location,
                format!(
                    "{}: unknown role {name:?}: kept as category \"other\"",
                    span.label()
                ),
            );
        }
        let parts = match item.get("parts") {
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| semconv_part(p, span, cx))
                .collect(),
            // Not the convention, but some instrumentations write `content` like a chat API.
            _ => loose_content(item.get("content").unwrap_or(&Value::Null)),
        };
        messages.push(Message {
            role: Some(role),
            role_name: role_name.to_string(),
            name: str_at(item, "name").map(str::to_string),
            parts,
            ..Message::default()
        });
    }
    messages
}

/// One part of a current-convention message.
fn semconv_part(p: &Value, span: &Span, cx: &mut Context<'_>) -> Option<Part> {
    let text_of = |key: &str| p.get(key).map(as_text).unwrap_or_default();
    let part = match str_at(p, "type") {
        Some("text") => Part::Text(text_of("content")),
        Some("reasoning" | "thinking") => Part::Reasoning(text_of("content")),
        Some("tool_call") => Part::ToolCall {
            id: text_of("id"),
            name: text_of("name"),
            // Objects are serialized back to JSON text: the model saw (and will see) JSON.
            arguments: text_of("arguments"),
        },
        // Whatever the message role: a tool result is one however it is delivered.
        Some("tool_call_response") => Part::ToolResult {
            id: text_of("id"),
            name: None,
            content: text_of("response"),
        },
        Some(kind) => Part::Other {
            kind: kind.to_string(),
            text: placeholder(kind, p),
        },
        None => match p {
            Value::String(s) => Part::Text(s.clone()),
            _ if p.get("content").is_some() => Part::Text(text_of("content")),
            other => {
                cx.warn(
                    span.location,
                    format!(
                        "{}: message part of type {} without \"type\" ignored",
                        span.label(),
                        type_name(other)
                    ),
                );
                return None;
            }
        },
    };
    Some(part)
}

/// A short stand-in for media and files: their tokens are not counted from bytes or base64.
fn placeholder(kind: &str, p: &Value) -> String {
    let detail = ["uri", "url", "file_id", "mime_type", "modality"]
        .iter()
        .find_map(|k| str_at(p, k))
        .map(|d| {
            if d.starts_with("data:") {
                "inline data"
            } else {
                d
            }
        })
        .unwrap_or("inline data");
    format!("[{kind}: {detail}]")
}

/// `gen_ai.system_instructions`: a JSON list of parts, one system message placed first.
fn system_instructions(v: &Value, span: &Span, cx: &mut Context<'_>) -> Option<Message> {
    let parts = match v {
        // Plain text instead of JSON: it is still the instructions; only text that looks like
        // broken JSON is worth a warning.
        Value::String(s) if serde_json::from_str::<Value>(s).is_err() => {
            let t = s.trim_start();
            if t.starts_with('[') || t.starts_with('{') {
                decode_json(v, "gen_ai.system_instructions", span, cx);
            }
            vec![Part::Text(s.clone())]
        }
        _ => match decode_json(v, "gen_ai.system_instructions", span, cx)? {
            Value::Array(items) => items
                .iter()
                .filter_map(|p| semconv_part(p, span, cx))
                .collect(),
            Value::Null => return None,
            other => semconv_part(&other, span, cx).into_iter().collect(),
        },
    };
    Some(Message {
        role: Some(Role::System),
        role_name: "system".into(),
        parts,
        ..Message::default()
    })
}

/// A chat-API-like message before normalization: what the flattened attributes and the events
/// carry.
#[derive(Default)]
struct Loose {
    role: Option<String>,
    content: Option<Value>,
    name: Option<String>,
    tool_call_id: Option<String>,
    /// Tool calls by index: (id, name, arguments).
    tool_calls: BTreeMap<u64, (String, String, String)>,
}

impl Loose {
    fn into_message(self, default_role: &str) -> Message {
        let role_name = self.role.unwrap_or_else(|| default_role.to_string());
        let role = Role::parse(&role_name);
        let content = self.content.unwrap_or(Value::Null);
        let mut parts = Vec::new();
        match (&role, self.tool_call_id) {
            (Role::Tool, Some(id)) => parts.push(Part::ToolResult {
                id,
                name: self.name.clone(),
                content: as_text(&content),
            }),
            _ => parts.extend(loose_content(&content)),
        }
        let has_calls = !self.tool_calls.is_empty();
        for (id, name, arguments) in self.tool_calls.into_values() {
            parts.push(Part::ToolCall {
                id,
                name,
                arguments,
            });
        }
        // An empty text beside tool calls is the absence of text; dropping it keeps the resent
        // copy of this message (which may omit it) identical, so it is interned.
        if has_calls {
            parts.retain(|p| !matches!(p, Part::Text(t) if t.is_empty()));
        }
        Message {
            name: self.name.filter(|_| role != Role::Tool),
            role: Some(role),
            role_name,
            parts,
            ..Message::default()
        }
    }
}

/// Content of a loose message: text, or a JSON list of content blocks (OpenAI parts or Anthropic
/// blocks, which instrumentations serialize to a string) when it is one.
pub(crate) fn loose_content(content: &Value) -> Vec<Part> {
    match content {
        Value::Null => Vec::new(),
        Value::String(s) => {
            let t = s.trim_start();
            if t.starts_with('[') {
                if let Ok(Value::Array(blocks)) = serde_json::from_str::<Value>(s) {
                    if let Some(parts) = content_blocks(&blocks) {
                        return parts;
                    }
                }
            }
            vec![Part::Text(s.clone())]
        }
        Value::Array(blocks) => {
            content_blocks(blocks).unwrap_or_else(|| vec![Part::Text(content.to_string())])
        }
        other => vec![Part::Text(as_text(other))],
    }
}

/// Typed content blocks as parts; `None` unless every item is an object with a string `type`
/// (otherwise the text is just text that happens to start with `[`).
fn content_blocks(blocks: &[Value]) -> Option<Vec<Part>> {
    if blocks.is_empty() || !blocks.iter().all(|b| str_at(b, "type").is_some()) {
        return None;
    }
    let text_of = |b: &Value, key: &str| b.get(key).map(as_text).unwrap_or_default();
    let parts = blocks
        .iter()
        .map(|b| match str_at(b, "type").unwrap_or_default() {
            "text" | "input_text" | "output_text" => Part::Text(
                str_at(b, "text")
                    .or_else(|| str_at(b, "content"))
                    .unwrap_or_default()
                    .to_string(),
            ),
            "thinking" | "reasoning" => Part::Reasoning(text_of(b, "thinking")),
            "tool_use" => Part::ToolCall {
                id: text_of(b, "id"),
                name: text_of(b, "name"),
                arguments: text_of(b, "input"),
            },
            "tool_result" => Part::ToolResult {
                id: text_of(b, "tool_use_id"),
                name: None,
                content: match b.get("content") {
                    Some(Value::Array(inner)) => {
                        Part::joined_text(content_blocks(inner).unwrap_or_default())
                    }
                    Some(other) => as_text(other),
                    None => String::new(),
                },
            },
            kind => Part::Other {
                kind: kind.to_string(),
                text: format!("[{kind}]"),
            },
        })
        .collect();
    Some(parts)
}

/// Messages from flattened `{prefix}{i}.{field}` attributes, ordered by the numeric index `i`.
/// `None` when the span has none.
fn legacy_messages(span: &Span, prefix: &str, default_role: &str) -> Option<Vec<Message>> {
    let mut by_index: BTreeMap<u64, Loose> = BTreeMap::new();
    for (key, value) in &span.attrs {
        let Some(rest) = key.strip_prefix(prefix) else {
            continue;
        };
        let Some((index, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(index) = index.parse::<u64>() else {
            continue;
        };
        let m = by_index.entry(index).or_default();
        let text = || Some(as_text(value)).filter(|_| !value.is_null());
        match field {
            "role" => m.role = text(),
            "content" => m.content = Some(value.clone()),
            "name" => m.name = text(),
            "tool_call_id" => m.tool_call_id = text(),
            _ => {
                let Some((j, call_field)) = field
                    .strip_prefix("tool_calls.")
                    .and_then(|f| f.split_once('.'))
                else {
                    continue;
                };
                let Ok(j) = j.parse::<u64>() else {
                    continue;
                };
                let call = m.tool_calls.entry(j).or_default();
                match call_field {
                    "id" => call.0 = as_text(value),
                    "name" => call.1 = as_text(value),
                    "arguments" => call.2 = as_text(value),
                    _ => {}
                }
            }
        }
    }
    if by_index.is_empty() {
        return None;
    }
    Some(
        by_index
            .into_values()
            .map(|m| m.into_message(default_role))
            .collect(),
    )
}

/// Messages from the older per-message span events: (input, output).
fn event_messages(span: &Span, cx: &mut Context<'_>) -> (Vec<Message>, Vec<Message>) {
    let (mut input, mut output) = (Vec::new(), Vec::new());
    for event in &span.events {
        let Some((_, role)) = EVENT_ROLES.iter().find(|(n, _)| *n == event.name) else {
            continue;
        };
        // The event body is either flattened into attributes or one JSON string attribute.
        let mut body = Value::Object(event.attrs.clone());
        for key in ["gen_ai.event.content", "body"] {
            if let Some(Value::String(s)) = event.attrs.get(key) {
                if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(s) {
                    body = v;
                }
            }
        }
        let is_choice = event.name == "gen_ai.choice";
        // A choice wraps its message; the message may itself be a JSON string.
        let message = match body.get("message") {
            Some(Value::String(s)) if is_choice => match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Object(_)) => v,
                _ => Value::Object(Map::from_iter([(
                    "content".to_string(),
                    Value::String(s.clone()),
                )])),
            },
            Some(m @ Value::Object(_)) if is_choice => m.clone(),
            _ => body.clone(),
        };
        let mut loose = Loose {
            role: str_at(&message, "role").map(str::to_string),
            content: message.get("content").cloned(),
            name: str_at(&message, "name").map(str::to_string),
            tool_call_id: ["id", "tool_call_id"]
                .iter()
                .find_map(|k| body.get(*k).or_else(|| message.get(*k)))
                .filter(|_| *role == "tool")
                .map(as_text),
            ..Loose::default()
        };
        let calls = match message.get("tool_calls") {
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(v) => v,
                Err(e) => {
                    cx.warn(
                        span.location,
                        format!(
                            "{}: event {} tool_calls is not valid JSON ({e}): ignored",
                            span.label(),
                            event.name
                        ),
                    );
                    Value::Null
                }
            },
            Some(v) => v.clone(),
            None => Value::Null,
        };
        for (j, call) in calls.as_array().into_iter().flatten().enumerate() {
            let f = call.get("function").unwrap_or(call);
            let text_of = |v: &Value, key: &str| v.get(key).map(as_text).unwrap_or_default();
            loose.tool_calls.insert(
                j as u64,
                (
                    text_of(call, "id"),
                    text_of(f, "name"),
                    text_of(f, "arguments"),
                ),
            );
        }
        let m = loose.into_message(role);
        if is_choice {
            output.push(m);
        } else {
            input.push(m);
        }
    }
    (input, output)
}

/// `gen_ai.usage.*`, normalized so that input tokens include cached ones.
fn span_usage(span: &Span) -> Usage {
    let first = |keys: &[&str]| keys.iter().find_map(|k| span.attr_u64(k));
    let cache_read = first(&[
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
    ]);
    let cache_write = first(&[
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_creation_input_tokens",
    ]);
    let mut input = first(&["gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"]);
    let provider = span
        .attr_str("gen_ai.provider.name")
        .or_else(|| span.attr_str("gen_ai.system"))
        .unwrap_or_default();
    // Anthropic reports input tokens without the cached ones; MemLens counts them in (OpenAI's way).
    if provider.eq_ignore_ascii_case("anthropic") {
        input = input.map(|n| {
            n.saturating_add(cache_read.unwrap_or(0))
                .saturating_add(cache_write.unwrap_or(0))
        });
    }
    Usage {
        input_tokens: input,
        output_tokens: first(&[
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
        ]),
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
        reasoning_tokens: first(&[
            "gen_ai.usage.reasoning_tokens",
            "gen_ai.usage.output_tokens_details.reasoning_tokens",
        ]),
    }
}

#[cfg(test)]
mod tests {
    use crate::{import, ImportError, ImportOptions};
    use memlens_core::{Category, Trace};

    fn run(name: &str, bytes: &[u8]) -> crate::Import {
        match import(name, bytes, &ImportOptions::default()) {
            Ok(result) => result,
            Err(e) => panic!("{name}: {e}"),
        }
    }

    fn categories(trace: &Trace, ids: &[memlens_core::ChunkId]) -> Vec<Category> {
        ids.iter().map(|id| trace.chunk(*id).category).collect()
    }

    fn assert_paired(trace: &Trace) {
        assert!(
            !trace.tool_pairs.is_empty(),
            "trace {} has no tool pair",
            trace.id
        );
        for pair in &trace.tool_pairs {
            assert!(
                pair.call.is_some() && pair.result.is_some(),
                "unpaired {pair:?}"
            );
        }
        assert_eq!(trace.orphan_results().count(), 0);
    }

    #[test]
    fn current_conventions() {
        let result = run(
            "semconv-current.json",
            include_bytes!("../../../tests/fixtures/otel/semconv-current.json"),
        );
        assert_eq!(result.format, "otel");
        assert!(result.warnings.is_empty(), "{:?}", result.warnings);
        // The HTTP and invoke_agent spans are not calls.
        assert_eq!(result.traces.len(), 1);
        let trace = &result.traces[0];
        assert_eq!(trace.id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(trace.format, "otel");
        assert_eq!(trace.model.as_deref(), Some("gpt-4o-2024-08-06"));
        assert_eq!(
            trace.attributes.get("service.name").map(String::as_str),
            Some("travel-assistant")
        );
        assert_eq!(trace.calls.len(), 2);
        let (first, second) = (&trace.calls[0], &trace.calls[1]);
        assert_eq!(
            categories(trace, &first.input),
            [Category::System, Category::User]
        );
        assert_eq!(categories(trace, &first.output), [Category::ToolCall]);
        assert_eq!(
            categories(trace, &second.input),
            [
                Category::System,
                Category::User,
                Category::ToolCall,
                Category::ToolResult
            ]
        );
        assert_eq!(categories(trace, &second.output), [Category::Assistant]);
        // The resent history is the same chunks, not copies: 5 distinct messages.
        assert_eq!(
            second.input[..3],
            [first.input[0], first.input[1], first.output[0]]
        );
        assert_eq!(trace.chunks.len(), 5);

        let call = trace.chunk(first.output[0]);
        assert_eq!(call.content, r#"{"city":"Paris","units":"metric"}"#);
        assert_eq!(call.meta.tool_name.as_deref(), Some("get_weather"));
        let tool_result = trace.chunk(second.input[3]);
        assert!(tool_result.content.contains("light rain"));
        // From the execute_tool span: 1747994401.070 - 1747994400.840 s.
        assert!(tool_result
            .meta
            .latency_ms
            .is_some_and(|ms| (ms - 230.0).abs() < 1e-6));
        assert_paired(trace);

        let usage = second.usage.unwrap_or_default();
        assert_eq!(usage.input_tokens, Some(1342));
        assert_eq!(usage.output_tokens, Some(27));
        assert_eq!(usage.cache_read_tokens, Some(1152));
        assert_eq!(first.usage.and_then(|u| u.cache_read_tokens), Some(0));
        assert_eq!(first.started_at.as_deref(), Some("1747994400020000000"));
        assert_eq!(first.ended_at.as_deref(), Some("1747994400832000000"));
        assert!(first.latency_ms.is_some_and(|ms| (ms - 812.0).abs() < 1e-6));
        assert!(trace
            .chunks
            .iter()
            .all(|c| c.tokens > 0 && c.content_tokens > 0));
    }

    #[test]
    fn legacy_attributes_two_interleaved_traces() {
        let result = run(
            "semconv-legacy.json",
            include_bytes!("../../../tests/fixtures/otel/semconv-legacy.json"),
        );
        assert!(result.warnings.is_empty(), "{:?}", result.warnings);
        assert_eq!(result.traces.len(), 2);
        // Order of first appearance in the file.
        let (a, b) = (&result.traces[0], &result.traces[1]);
        assert_eq!(a.id, "7d2c9e41a0b84f3c9e5f1a2b3c4d5e6f");
        assert_eq!(b.id, "e1f2a3b4c5d60718293a4b5c6d7e8f90");
        assert_eq!(
            a.attributes.get("service.name").map(String::as_str),
            Some("repo-agent")
        );
        for trace in [a, b] {
            assert_eq!(trace.calls.len(), 2, "trace {}", trace.id);
            assert_paired(trace);
            // Sorted by start time, whatever the file order.
            assert!(trace.calls[0].started_at < trace.calls[1].started_at);
            assert!(trace.calls[0].input.len() < trace.calls[1].input.len());
            assert!(trace.chunks.iter().all(|c| c.tokens > 0));
        }
        assert_eq!(
            categories(a, &a.calls[1].input),
            [
                Category::System,
                Category::User,
                Category::Assistant,
                Category::ToolCall,
                Category::ToolResult
            ]
        );
        // The assistant text and tool call resent in call 2 are the chunks call 1 produced.
        assert_eq!(a.calls[1].input[2..4], a.calls[0].output[..]);
        assert_eq!(categories(b, &b.calls[0].output), [Category::ToolCall]);
        assert_eq!(categories(b, &b.calls[1].output), [Category::Assistant]);
        let result_chunk = b.chunk(b.calls[1].input[3]);
        assert_eq!(
            result_chunk.meta.tool_call_id.as_deref(),
            Some("call_8fJ2kLmN4pQ6rS0t")
        );

        // Anthropic: reported input excludes the cache, MemLens' includes it.
        let a1 = a.calls[0].usage.unwrap_or_default();
        assert_eq!(
            (a1.input_tokens, a1.cache_write_tokens, a1.output_tokens),
            (Some(24 + 2048), Some(2048), Some(96))
        );
        let a2 = a.calls[1].usage.unwrap_or_default();
        assert_eq!(
            (a2.input_tokens, a2.cache_read_tokens),
            (Some(310 + 2048), Some(2048))
        );
        // OpenAI: as reported.
        let b2 = b.calls[1].usage.unwrap_or_default();
        assert_eq!((b2.input_tokens, b2.output_tokens), (Some(181), Some(21)));
        assert_eq!(b.model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    }

    #[test]
    fn json_lines_batches_of_one_trace() {
        let result = run(
            "otlp-lines.jsonl",
            include_bytes!("../../../tests/fixtures/otel/otlp-lines.jsonl"),
        );
        assert!(result.warnings.is_empty(), "{:?}", result.warnings);
        assert_eq!(result.traces.len(), 1);
        let trace = &result.traces[0];
        assert_eq!(trace.calls.len(), 2);
        let lines: Vec<u32> = trace
            .calls
            .iter()
            .filter_map(|c| c.source.map(|s| s.line))
            .collect();
        assert_eq!(lines, [1, 2]);
        assert_eq!(
            categories(trace, &trace.calls[0].output),
            [Category::Reasoning, Category::ToolCall]
        );
        assert_paired(trace);
        let tool_result = trace
            .chunks
            .iter()
            .find(|c| c.category == Category::ToolResult)
            .and_then(|c| c.meta.latency_ms);
        assert!(tool_result.is_some_and(|ms| (ms - 120.0).abs() < 1e-6));
        let reasoning: Vec<_> = trace
            .calls
            .iter()
            .map(|c| c.usage.and_then(|u| u.reasoning_tokens))
            .collect();
        assert_eq!(reasoning, [Some(128), Some(64)]);
        assert_eq!(trace.calls[0].usage.and_then(|u| u.input_tokens), Some(142));
    }

    #[test]
    fn malformed_messages_warn_and_keep_the_span() {
        let result = run(
            "malformed-messages.json",
            include_bytes!("../../../tests/fixtures/otel/malformed-messages.json"),
        );
        assert_eq!(result.warnings.len(), 1, "{:?}", result.warnings);
        let message = &result.warnings[0].message;
        assert!(message.contains("gen_ai.input.messages"), "{message}");
        assert!(
            message.contains("d0d0d0d0d0d0d002") && message.contains("chat gpt-4.1"),
            "{message}"
        );
        let trace = &result.traces[0];
        assert_eq!(trace.calls.len(), 2);
        // The broken span keeps its output and usage.
        let broken = &trace.calls[1];
        assert!(broken.input.is_empty());
        assert_eq!(categories(trace, &broken.output), [Category::Assistant]);
        assert_eq!(broken.usage.and_then(|u| u.input_tokens), Some(91));
    }

    #[test]
    fn no_llm_spans_is_an_error() {
        let bytes = include_bytes!("../../../tests/fixtures/otel/no-llm-spans.json");
        match import("no-llm-spans.json", bytes, &ImportOptions::default()) {
            Err(ImportError::Invalid { message, .. }) => {
                assert!(message.contains("no traces"), "{message}")
            }
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn contentless_call_spans_explain_how_to_capture() {
        let doc = br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t", "spanId": "s",
            "name": "chat gpt-4o", "attributes": [
              {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
              {"key": "gen_ai.usage.input_tokens", "value": {"intValue": 12}}]}]}]}]}"#;
        match import("x.json", doc, &ImportOptions::default()) {
            Err(ImportError::Invalid { message, .. }) => {
                assert!(message.contains("CAPTURE_MESSAGE_CONTENT"), "{message}")
            }
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn prompt_indices_sort_numerically_and_events_are_read() {
        let mut attrs = Vec::new();
        for i in 0..12 {
            attrs.push(format!(
                r#"{{"key": "gen_ai.prompt.{i}.role", "value": {{"stringValue": "user"}}}},
                   {{"key": "gen_ai.prompt.{i}.content", "value": {{"stringValue": "message {i}"}}}}"#
            ));
        }
        let doc = format!(
            r#"{{"resourceSpans": [{{"instrumentationLibrarySpans": [{{"spans": [
              {{"traceId": "t1", "spanId": "s1", "name": "chat", "startTimeUnixNano": 5, "endTimeUnixNano": 9,
                "attributes": [{}, {{"key": "gen_ai.completion.0.content", "value": {{"stringValue": "done"}}}}]}},
              {{"traceId": "t2", "spanId": "s2", "name": "chat", "events": [
                {{"name": "gen_ai.system.message", "attributes": [{{"key": "content", "value": {{"stringValue": "Be brief."}}}}]}},
                {{"name": "gen_ai.user.message", "attributes": [{{"key": "content", "value": {{"stringValue": "Hi"}}}}]}},
                {{"name": "gen_ai.choice", "attributes": [{{"key": "message", "value": {{"stringValue": "{{\"role\":\"assistant\",\"content\":\"Hello!\"}}"}}}}]}}]}}
            ]}}]}}]}}"#,
            attrs.join(",")
        );
        let result = run("inline.json", doc.as_bytes());
        assert_eq!(result.traces.len(), 2);
        let t1 = &result.traces[0];
        let contents: Vec<&str> = t1.calls[0]
            .input
            .iter()
            .map(|id| t1.chunk(*id).content.as_str())
            .collect();
        let expected: Vec<String> = (0..12).map(|i| format!("message {i}")).collect();
        assert_eq!(contents, expected);
        assert_eq!(
            t1.chunk(t1.calls[0].output[0]).category,
            Category::Assistant
        );
        let t2 = &result.traces[1];
        assert_eq!(
            categories(t2, &t2.calls[0].input),
            [Category::System, Category::User]
        );
        assert_eq!(t2.chunk(t2.calls[0].output[0]).content, "Hello!");
    }

    #[test]
    fn odd_values_never_panic() {
        for doc in [
            r#"{"resourceSpans": []}"#,
            r#"{"resourceSpans": [1, {"scopeSpans": "x"}, {"scopeSpans": [{"spans": [null, 3]}]}]}"#,
            r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": "gen_ai.input.messages",
                "value": {"stringValue": "[1, {\"role\": 2}, {\"role\": \"user\", \"parts\": [7, {\"type\": \"blob\", \"mime_type\": \"image/png\"}]}]"}},
                {"key": "gen_ai.system_instructions", "value": {"stringValue": "plain text instructions"}},
                {"key": "gen_ai.output.messages", "value": {"intValue": "x"}},
                {"key": "gen_ai.completion.x.content", "value": {}}],
                "startTimeUnixNano": "9", "endTimeUnixNano": "3", "events": [{"name": "gen_ai.choice"}]}]}]}]}"#,
        ] {
            let _ = import("odd.json", doc.as_bytes(), &ImportOptions::default());
        }
        let doc = r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "s", "name": "n", "attributes": [
            {"key": "gen_ai.input.messages", "value": {"stringValue": "[{\"role\": \"user\", \"parts\": [{\"type\": \"uri\", \"uri\": \"https://example.com/a.png\", \"modality\": \"image\"}]}]"}}]}]}]}]}"#;
        let result = run("uri.json", doc.as_bytes());
        let trace = &result.traces[0];
        assert_eq!(trace.chunks[0].category, Category::Other);
        assert_eq!(trace.chunks[0].content, "[uri: https://example.com/a.png]");
    }
}
