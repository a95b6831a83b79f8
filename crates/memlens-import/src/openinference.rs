//! OpenInference spans (Arize Phoenix, the `openinference-instrumentation-*` packages) in OTLP
//! JSON: one `{"resourceSpans": [...]}` export request or JSON Lines of them, read with the OTLP
//! walking of the OpenTelemetry importer ([`crate::otel`]).
//!
//! ```json
//! {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "…", "spanId": "…",
//!   "name": "ChatCompletion", "startTimeUnixNano": "…", "endTimeUnixNano": "…", "attributes": [
//!   {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
//!   {"key": "llm.model_name", "value": {"stringValue": "gpt-4o"}},
//!   {"key": "session.id", "value": {"stringValue": "s-1"}},
//!   {"key": "llm.input_messages.0.message.role", "value": {"stringValue": "user"}},
//!   {"key": "llm.input_messages.0.message.content", "value": {"stringValue": "Hi"}},
//!   {"key": "llm.output_messages.0.message.role", "value": {"stringValue": "assistant"}},
//!   {"key": "llm.output_messages.0.message.tool_calls.0.tool_call.id", "value": …},
//!   {"key": "llm.token_count.prompt", "value": {"intValue": "1200"}},
//!   {"key": "llm.token_count.prompt_details.cache_read", "value": {"intValue": "1024"}}]}]}]}]}
//! ```
//!
//! A span of kind `LLM` is one model call that lists its whole input, so the calls go through
//! [`crate::logs::build_traces`], which interns the history resent on every call. Its messages
//! are the flattened `llm.input_messages.N.message.*` / `llm.output_messages.N.message.*`
//! attributes (`role`, `content`, `contents.M.message_content.{type, text, image}`,
//! `tool_calls.K.tool_call.{id, function.name, function.arguments}`, `tool_call_id`, `name`),
//! else `input.value` / `output.value` (the raw request and response, or text). Advertised tools
//! are `llm.tools.N.tool.json_schema`. Calls are ordered by start time and grouped by
//! `session.id`, else by trace id. `TOOL` spans (`tool.name`, `tool.id`) give the latency of the
//! matching tool result; other kinds (CHAIN, AGENT, RETRIEVER, EMBEDDING...) are structure only.
//! Two instrumentations on one call (LangChain's and the provider SDK's) record it twice with the
//! same messages at the same time; the copy is dropped.
//!
//! Usage: `llm.token_count.prompt` counts cached tokens in (its `prompt_details.cache_read` /
//! `cache_write` are a breakdown), MemLens' convention; an instrumentation that reports the
//! uncached count instead shows in `llm.token_count.total`, and the cache is added back.
//!
//! Schema source: github.com/Arize-ai/openinference `spec/semantic_conventions.md` and
//! `python/openinference-semantic-conventions/src/openinference/semconv/trace/__init__.py`
//! (`SpanAttributes`, `MessageAttributes`, `MessageContentAttributes`, `ToolCallAttributes`,
//! `ToolAttributes`, `OpenInferenceSpanKindValues`).

use crate::document::Document;
use crate::error::source_pos;
use crate::error::{ImportError, Location};
use crate::json::{array_at, as_text, str_at};
use crate::langsmith::{in_group_order, payload_messages, ToolTimings};
use crate::logs::{build_traces, LoggedCall};
use crate::openai;
use crate::otel::{collect_spans, is_export, loose_content, Span};
use crate::{Context, Importer};
use memlens_core::builder::{CallInfo, Message, Part, Role};
use memlens_core::{Trace, Usage};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// `openinference.span.kind` values (`OpenInferenceSpanKindValues`).
const KNOWN_KINDS: [&str; 11] = [
    "LLM",
    "TOOL",
    "CHAIN",
    "AGENT",
    "RETRIEVER",
    "EMBEDDING",
    "RERANKER",
    "GUARDRAIL",
    "EVALUATOR",
    "PROMPT",
    "UNKNOWN",
];

/// The OpenInference (OTLP JSON) importer.
pub struct OpenInference;

impl Importer for OpenInference {
    fn name(&self) -> &'static str {
        "openinference"
    }

    fn description(&self) -> &'static str {
        "OpenInference (Arize Phoenix) LLM and tool spans in OTLP JSON"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_export(first) && has_openinference_span(first)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let mut calls: Vec<(Option<u64>, LoggedCall)> = Vec::new();
        let mut tools: Vec<Span> = Vec::new();
        let mut attributes: HashMap<String, Vec<(&str, String)>> = HashMap::new();
        // The group of each trace's calls, for its tool spans (which rarely carry `session.id`).
        let mut trace_groups: HashMap<String, String> = HashMap::new();
        let mut without_content = 0usize;
        for span in collect_spans(doc, cx) {
            match span_kind(&span).as_deref() {
                Some("LLM") => {}
                Some("TOOL") => {
                    tools.push(span);
                    continue;
                }
                None if has_messages(&span) => {}
                Some(kind) if !KNOWN_KINDS.contains(&kind) => {
                    cx.warn(
                        span.location,
                        format!("{}: unknown span kind {kind:?}: skipped", span.label()),
                    );
                    continue;
                }
                _ => continue,
            }
            let (input, output) = span_messages(&span, cx);
            if input.is_empty() && output.is_empty() {
                without_content += 1;
                continue;
            }
            let call = span_call(&span, input, output);
            if let Some(group) = &call.group {
                trace_groups
                    .entry(span.trace_id.clone())
                    .or_insert_with(|| group.clone());
                attributes
                    .entry(group.clone())
                    .or_insert_with(|| span_attributes(&span));
            }
            calls.push((span.start, call));
        }
        if without_content > 0 {
            let message = format!(
                "{without_content} LLM span(s) without messages or input/output values skipped \
                 (instrumentations leave them out when OPENINFERENCE_HIDE_INPUTS / \
                 OPENINFERENCE_HIDE_OUTPUTS are set)"
            );
            if calls.is_empty() {
                return Err(cx.invalid(Location::default(), message));
            }
            cx.warn(Location::default(), message);
        }
        let ordered = drop_duplicate_calls(in_group_order(calls));
        let mut traces = build_traces(ordered, "openinference", cx);
        let mut timings = ToolTimings::default();
        // In time order: latencies matched by tool name are taken in order.
        tools.sort_by_key(|s| s.start);
        for span in &tools {
            let Some(group) = trace_groups
                .get(&span.trace_id)
                .cloned()
                .or_else(|| group_of(span))
            else {
                continue;
            };
            if let Some(ms) = span.latency_ms() {
                let id = span
                    .attr_text("tool.id")
                    .or_else(|| span.attr_text("tool_call.id"));
                let name = span
                    .attr_text("tool.name")
                    .unwrap_or_else(|| span.name.clone());
                timings.record(&group, id, Some(&name), ms);
            }
        }
        timings.apply(&mut traces);
        for trace in &mut traces {
            for (key, value) in attributes.remove(&trace.id).unwrap_or_default() {
                trace.attributes.insert(key.to_string(), value);
            }
        }
        Ok(traces)
    }
}

/// True when an export's spans carry OpenInference attributes (looked at without decoding them).
fn has_openinference_span(export: &Value) -> bool {
    let is_openinference_key = |k: &str| {
        k == "openinference.span.kind"
            || k.starts_with("llm.input_messages")
            || k.starts_with("llm.output_messages")
    };
    array_at(export, "resourceSpans")
        .into_iter()
        .flatten()
        .flat_map(|rs| {
            array_at(rs, "scopeSpans")
                .into_iter()
                .chain(array_at(rs, "instrumentationLibrarySpans"))
                .flatten()
        })
        .flat_map(|scope| array_at(scope, "spans").into_iter().flatten())
        .any(|span| match span.get("attributes") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|kv| str_at(kv, "key"))
                .any(is_openinference_key),
            Some(Value::Object(map)) => map.keys().any(|k| is_openinference_key(k)),
            _ => false,
        })
}

fn span_kind(span: &Span) -> Option<String> {
    span.attr_str("openinference.span.kind")
        .map(|k| k.trim().to_ascii_uppercase())
}

/// A span without a kind that still records LLM messages (hand-rolled instrumentation).
fn has_messages(span: &Span) -> bool {
    span.attrs
        .keys()
        .any(|k| k.starts_with("llm.input_messages") || k.starts_with("llm.output_messages"))
}

/// `session.id`, else the trace id.
fn group_of(span: &Span) -> Option<String> {
    span.attr_text("session.id")
        .or_else(|| Some(span.trace_id.clone()).filter(|t| !t.is_empty()))
}

fn span_attributes(span: &Span) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    out.extend(span.service.clone().map(|s| ("service.name", s)));
    out.extend(span.attr_text("user.id").map(|u| ("user.id", u)));
    out
}

fn span_call(span: &Span, input: Vec<Message>, output: Vec<Message>) -> LoggedCall {
    let model = [
        "llm.response.model_name",
        "llm.model_name",
        "llm.request.model_name",
    ]
    .iter()
    .find_map(|k| span.attr_text(k))
    .or_else(|| {
        let params = span.attr_str("llm.invocation_parameters")?;
        let params: Value = serde_json::from_str(params).ok()?;
        str_at(&params, "model").map(str::to_string)
    });
    LoggedCall {
        // No session and no trace id: grouped by history continuity.
        group: group_of(span),
        input,
        output,
        info: CallInfo {
            model,
            usage: Some(span_usage(span)),
            started_at: span.start_text.clone(),
            ended_at: span.end_text.clone(),
            latency_ms: span.latency_ms(),
            source: Some(source_pos(span.location)),
        },
        location: span.location,
    }
}

/// `llm.token_count.*`, normalized so that input tokens include cached ones.
fn span_usage(span: &Span) -> Usage {
    let count = |key: &str| span.attr_u64(&format!("llm.token_count.{key}"));
    let (prompt, completion, total) = (count("prompt"), count("completion"), count("total"));
    let cache_read = count("prompt_details.cache_read");
    let cache_write = count("prompt_details.cache_write");
    let cached = cache_read
        .unwrap_or(0)
        .saturating_add(cache_write.unwrap_or(0));
    let mut input = prompt;
    if let (Some(p), Some(c), Some(t)) = (prompt, completion, total) {
        // The prompt count excludes the cache when only adding it back matches the total.
        if cached > 0 && p.saturating_add(c) != t && p.saturating_add(cached).saturating_add(c) == t
        {
            input = Some(p.saturating_add(cached));
        }
    }
    Usage {
        input_tokens: input,
        output_tokens: completion,
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
        reasoning_tokens: count("completion_details.reasoning"),
    }
}

/// Two instrumentations on one call (LangChain's and the provider SDK's) record it twice: same
/// messages, overlapping times. The copy is dropped; what it adds (usage, model, tool
/// definitions) is kept.
fn drop_duplicate_calls(calls: Vec<LoggedCall>) -> Vec<LoggedCall> {
    let mut out: Vec<LoggedCall> = Vec::with_capacity(calls.len());
    let mut last_in_group: HashMap<Option<String>, usize> = HashMap::new();
    for call in calls {
        if let Some(&i) = last_in_group.get(&call.group) {
            let kept = &mut out[i];
            if same_messages(kept, &call) && overlaps(kept, &call) {
                if kept.info.usage.as_ref().is_none_or(Usage::is_empty) {
                    kept.info.usage = call.info.usage;
                }
                kept.info.model = kept.info.model.take().or(call.info.model);
                if call.input.len() > kept.input.len() {
                    kept.input = call.input;
                }
                continue;
            }
        }
        last_in_group.insert(call.group.clone(), out.len());
        out.push(call);
    }
    out
}

/// Same messages, tool definitions aside (one instrumentation may record them, the other not).
fn same_messages(a: &LoggedCall, b: &LoggedCall) -> bool {
    let hashes = |messages: &[Message]| -> Vec<u64> {
        messages
            .iter()
            .filter(|m| !m.unframed)
            .map(Message::identity_hash)
            .collect()
    };
    hashes(&a.input) == hashes(&b.input) && hashes(&a.output) == hashes(&b.output)
}

fn overlaps(a: &LoggedCall, b: &LoggedCall) -> bool {
    let nanos = |t: &Option<String>| t.as_deref().and_then(|t| t.parse::<u64>().ok());
    match (
        nanos(&a.info.started_at),
        nanos(&a.info.ended_at),
        nanos(&b.info.started_at),
    ) {
        (Some(start), Some(end), Some(other)) => other >= start && other <= end,
        _ => false,
    }
}

/// The call's input and output messages: the flattened message attributes, else the raw
/// `input.value` / `output.value`.
fn span_messages(span: &Span, cx: &mut Context<'_>) -> (Vec<Message>, Vec<Message>) {
    let raw_input = io_value(span, "input", cx);
    let mut input: Vec<Message> = tool_definitions(span).into_iter().collect();
    match messages_at(span, "llm.input_messages", "user", cx) {
        Some(messages) => {
            // Tools not recorded as `llm.tools` may still be in the raw request.
            if input.is_empty() {
                input.extend(raw_input.as_ref().and_then(openai::tool_definitions));
            }
            input.extend(messages);
        }
        None => {
            let has_tools = !input.is_empty();
            let raw = raw_input.as_ref().unwrap_or(&Value::Null);
            let messages = payload_messages(raw, "user", span.location, cx);
            input.extend(messages.into_iter().filter(|m| !(has_tools && m.unframed)));
        }
    }
    let output = match messages_at(span, "llm.output_messages", "assistant", cx) {
        Some(messages) => messages,
        None => match io_value(span, "output", cx) {
            Some(raw) => payload_messages(&raw, "assistant", span.location, cx),
            None => Vec::new(),
        },
    };
    (input, output)
}

/// `{side}.value`: JSON when its `{side}.mime_type` says so (or it looks like JSON), else text.
fn io_value(span: &Span, side: &str, cx: &mut Context<'_>) -> Option<Value> {
    let value = span.attrs.get(&format!("{side}.value"))?;
    let Value::String(text) = value else {
        return Some(value.clone());
    };
    let mime = span.attr_str(&format!("{side}.mime_type"));
    let looks_json = text.trim_start().starts_with(['{', '[']);
    if mime == Some("application/json") || (mime.is_none() && looks_json) {
        match serde_json::from_str::<Value>(text) {
            Ok(parsed) => return Some(parsed),
            Err(e) if mime.is_some() => cx.warn(
                span.location,
                format!(
                    "{}: {side}.value is not valid JSON ({e}): kept as text",
                    span.label()
                ),
            ),
            Err(_) => {}
        }
    }
    Some(Value::String(text.clone()))
}

/// `llm.tools.N.tool.json_schema` (else name, description, parameters) as one chunk.
fn tool_definitions(span: &Span) -> Option<Message> {
    let tools: Vec<Value> = indexed(&span.attrs, "llm.tools")
        .into_values()
        .map(|t| {
            let field = |k: &str| t.get(&format!("tool.{k}")).or_else(|| t.get(k));
            match field("json_schema") {
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                }
                Some(other) => other.clone(),
                None => {
                    let mut tool = Map::new();
                    for k in ["name", "description", "parameters"] {
                        if let Some(v) = field(k) {
                            tool.insert(k.to_string(), v.clone());
                        }
                    }
                    Value::Object(tool)
                }
            }
        })
        .collect();
    openai::tool_definitions(&serde_json::json!({ "tools": tools }))
}

/// Messages under `prefix`: flattened `{prefix}.N.message.*` attributes, or (not the convention,
/// but hand-rolled instrumentations write it) one JSON list under `prefix` itself. `None` when
/// there are none.
fn messages_at(
    span: &Span,
    prefix: &str,
    default_role: &str,
    cx: &mut Context<'_>,
) -> Option<Vec<Message>> {
    if let Some(list) = span.attrs.get(prefix) {
        let decoded = match list {
            Value::String(s) => serde_json::from_str::<Value>(s).unwrap_or(Value::Null),
            other => other.clone(),
        };
        if let Value::Array(items) = &decoded {
            if items.iter().all(|m| str_at(m, "role").is_some()) {
                return Some(payload_messages(&decoded, default_role, span.location, cx));
            }
        }
    }
    let by_index = indexed(&span.attrs, prefix);
    if by_index.is_empty() {
        return None;
    }
    Some(
        by_index
            .values()
            .map(|fields| flat_message(fields, default_role, span, cx))
            .collect(),
    )
}

/// `{prefix}.{i}.{rest}` entries grouped by the numeric index `i` (in numeric order), each a map
/// of `rest` to value; a JSON list stored under `prefix` itself is flattened the same way.
fn indexed(attrs: &Map<String, Value>, prefix: &str) -> BTreeMap<u64, Map<String, Value>> {
    let mut out: BTreeMap<u64, Map<String, Value>> = BTreeMap::new();
    for (key, value) in attrs {
        let Some(rest) = key.strip_prefix(prefix) else {
            continue;
        };
        if rest.is_empty() {
            let list = match value {
                Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
                other => other.clone(),
            };
            for (i, item) in list.as_array().into_iter().flatten().enumerate() {
                flatten(item, "", out.entry(i as u64).or_default());
            }
            continue;
        }
        let Some((index, field)) = rest.strip_prefix('.').and_then(|r| r.split_once('.')) else {
            continue;
        };
        if let Ok(index) = index.parse::<u64>() {
            out.entry(index)
                .or_default()
                .insert(field.to_string(), value.clone());
        }
    }
    out
}

/// Nested objects and lists as dotted keys (`{"message": {"role": "user"}}` → `message.role`).
fn flatten(v: &Value, prefix: &str, out: &mut Map<String, Value>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                flatten(x, &join(k), out);
            }
        }
        Value::Array(items) if items.iter().any(Value::is_object) => {
            for (i, x) in items.iter().enumerate() {
                flatten(x, &join(&i.to_string()), out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.clone());
        }
    }
}

/// One message from its flattened fields (`message.role`, `message.content`, ...).
fn flat_message(
    fields: &Map<String, Value>,
    default_role: &str,
    span: &Span,
    cx: &mut Context<'_>,
) -> Message {
    let get = |k: &str| {
        fields
            .get(&format!("message.{k}"))
            .or_else(|| fields.get(k))
            .filter(|v| !v.is_null())
    };
    let role_name = get("role").map_or_else(|| default_role.to_string(), as_text);
    let role = Role::parse(&role_name);
    if let Role::Other(name) = &role {
        cx.warn(
            span.location,
            format!(
                "{}: unknown role {name:?}: kept as category \"other\"",
                span.label()
            ),
        );
    }
    let name = get("name").map(as_text);
    let mut parts: Vec<Part> = get("content").map(loose_content).unwrap_or_default();
    parts.extend(content_parts(fields));
    merge_texts(&mut parts);
    let mut calls: Vec<Part> = tool_calls(fields);
    if let Some(function) = get("function_call_name").map(as_text) {
        calls.push(Part::ToolCall {
            id: format!("function:{function}"),
            arguments: get("function_call_arguments_json")
                .map(as_text)
                .unwrap_or_default(),
            name: function,
        });
    }
    if role == Role::Tool {
        let id = get("tool_call_id").map(as_text).unwrap_or_else(|| {
            // Legacy function results pair with their call by name.
            name.as_ref()
                .map(|n| format!("function:{n}"))
                .unwrap_or_default()
        });
        if id.is_empty() {
            cx.warn(
                span.location,
                format!(
                    "{}: tool message without message.tool_call_id: kept unpaired",
                    span.label()
                ),
            );
        }
        let content = parts
            .into_iter()
            .map(|p| match p {
                Part::Text(t) | Part::Other { text: t, .. } => t,
                Part::ToolResult { content, .. } => content,
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        parts = vec![Part::ToolResult {
            id,
            name: name.clone(),
            content,
        }];
    }
    if !calls.is_empty() {
        parts.retain(|p| !matches!(p, Part::Text(t) if t.is_empty()));
        parts.extend(calls);
    }
    Message {
        name: name.filter(|_| role != Role::Tool),
        role: Some(role),
        role_name,
        parts,
        ..Message::default()
    }
}

/// `message.contents.M.message_content.*`, in order.
fn content_parts(fields: &Map<String, Value>) -> Vec<Part> {
    let mut contents = indexed(fields, "message.contents");
    if contents.is_empty() {
        contents = indexed(fields, "contents");
    }
    let mut parts = Vec::new();
    for c in contents.values() {
        let get = |k: &str| {
            c.get(&format!("message_content.{k}"))
                .or_else(|| c.get(k))
                .filter(|v| !v.is_null())
        };
        let text = || get("text").map(as_text).unwrap_or_default();
        match get("type").and_then(Value::as_str) {
            None | Some("text") => parts.push(Part::Text(text())),
            Some("reasoning") => parts.push(Part::Reasoning(text())),
            // Repeated by `message.tool_calls`, which carries the arguments.
            Some("tool_use") => {}
            Some(kind) => {
                let url = c
                    .iter()
                    .find(|(k, _)| k.ends_with(".url"))
                    .and_then(|(_, v)| v.as_str())
                    .filter(|u| !u.starts_with("data:"))
                    .unwrap_or("inline data");
                parts.push(Part::Other {
                    kind: kind.to_string(),
                    text: format!("[{kind}: {url}]"),
                });
            }
        }
    }
    parts
}

/// Adjacent text parts as one: a message's text reads the same whether it was recorded as one
/// `content` or several `contents`, so the resent copy is the same chunk.
fn merge_texts(parts: &mut Vec<Part>) {
    let mut merged: Vec<Part> = Vec::with_capacity(parts.len());
    for part in parts.drain(..) {
        match (merged.last_mut(), part) {
            (Some(Part::Text(previous)), Part::Text(next)) => previous.push_str(&next),
            (_, part) => merged.push(part),
        }
    }
    *parts = merged;
}

/// `message.tool_calls.K.tool_call.{id, function.name, function.arguments}`, in order.
fn tool_calls(fields: &Map<String, Value>) -> Vec<Part> {
    let mut calls = indexed(fields, "message.tool_calls");
    if calls.is_empty() {
        calls = indexed(fields, "tool_calls");
    }
    calls
        .values()
        .map(|c| {
            let get = |k: &str| {
                c.get(&format!("tool_call.{k}"))
                    .or_else(|| c.get(k))
                    .filter(|v| !v.is_null())
                    .map(as_text)
                    .unwrap_or_default()
            };
            Part::ToolCall {
                id: get("id"),
                name: get("function.name"),
                arguments: get("function.arguments"),
            }
        })
        .collect()
}
