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

mod messages;
#[cfg(test)]
mod tests;

use crate::document::Document;
use crate::error::source_pos;
use crate::error::{ImportError, Location};
use crate::json::{array_at, as_text, as_u64, str_at, type_name};
use crate::logs::{build_traces, LoggedCall};
use crate::{Context, Importer};
use memlens_core::builder::{CallInfo, Message};
use memlens_core::{Category, Trace, Usage};
use messages::span_messages;
pub(crate) use messages::{loose_content, semconv_message};
use serde_json::{Map, Value};
use std::collections::HashMap;

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
    /// `parentSpanId`; `None` for a root (OTLP JSON writes it empty).
    pub(crate) parent_span_id: Option<String>,
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
            if !rs.is_object() {
                cx.warn(
                    location,
                    format!(
                        "resource spans skipped: expected an object, found {}",
                        type_name(rs)
                    ),
                );
                continue;
            }
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
                if !scope.is_object() {
                    cx.warn(
                        location,
                        format!(
                            "scope spans skipped: expected an object, found {}",
                            type_name(scope)
                        ),
                    );
                    continue;
                }
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
        parent_span_id: text("parentSpanId").filter(|p| !p.is_empty()),
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
