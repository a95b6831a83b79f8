//! Langfuse exports: a trace with its observations (`GET /api/public/traces/{id}`, one object, an
//! array of them, or JSON Lines), the UI's download (`{trace, observations}`), or a list of
//! observations (`GET /api/public/observations`: `{data: [...], meta}`, or bare observations).
//!
//! ```json
//! {"id": "trace-1", "name": "support-chat", "sessionId": "s-1", "userId": "u-1",
//!  "timestamp": "2025-01-01T10:00:00.000Z", "observations": [
//!   {"id": "o-1", "traceId": "trace-1", "type": "GENERATION", "name": "chat",
//!    "startTime": "2025-01-01T10:00:00.100Z", "endTime": "2025-01-01T10:00:01.300Z",
//!    "model": "gpt-4o", "input": [{"role": "user", "content": "Where is my order?"}],
//!    "output": {"role": "assistant", "content": null, "tool_calls": [...]},
//!    "usageDetails": {"input": 40, "input_cached_tokens": 1024, "output": 12, "total": 1076},
//!    "costDetails": {"total": 0.0012}, "level": "DEFAULT", "parentObservationId": null},
//!   {"id": "o-2", "traceId": "trace-1", "type": "TOOL", "name": "lookup_order",
//!    "startTime": "…", "endTime": "…", "input": {"order_id": "A1"}, "output": "shipped"}]}
//! ```
//!
//! Every `GENERATION` is one model call that lists its whole input (an OpenAI-style message list,
//! `{messages}`, LangChain messages, the GenAI conventions' `{role, parts}` messages of
//! OpenTelemetry frameworks such as pydantic-ai, OpenAI Responses items from the OpenAI Agents SDK,
//! or a string; the output is a message, a string, `choices` or a `Response` object; system
//! instructions and tools kept outside the input, in `modelParameters` or the metadata, are put
//! back in front),
//! so the calls go through [`crate::logs::build_traces`], which interns the history resent on
//! every call. Calls are ordered by `startTime` and grouped by the trace's `sessionId`, else by
//! `traceId`. `TOOL` and `SPAN` observations give the latency of the matching tool result (by tool
//! call id when they carry one, else by tool name in order).
//!
//! Usage: `usageDetails` counts every token type apart (`input` excludes `input_cached_tokens`,
//! `input_audio_tokens`, Anthropic's `cache_read_input_tokens` / `cache_creation_input_tokens`,
//! and `output` excludes `output_reasoning_tokens`), so MemLens' input and output are the sums of
//! their keys; the older `usage {input, output, total, unit}` and `promptTokens` /
//! `completionTokens` are read when it is missing. Costs are not read: MemLens prices calls itself.
//!
//! Schema source: github.com/langfuse/langfuse `fern/apis/server/definition/commons.yml`
//! (`Trace`, `TraceWithFullDetails`, `Observation`, `ObservationsView`, `Usage`, `usageDetails`),
//! `fern/apis/server/definition/observations.yml` (`ObservationsViews {data, meta}`) and the
//! usage-details convention of `packages/shared/src/server/ingestion/` (token details are
//! subtracted from `input` / `output`, so the keys add up to `total`).

use crate::document::Document;
use crate::error::source_pos;
use crate::error::{ImportError, Location};
use crate::json::{array_at, as_text, as_u64, str_at, type_name, u64_at};
use crate::langsmith::{
    in_group_order, iso_latency_ms, iso_micros, payload_messages, provider_usage, ToolTimings,
};
use crate::logs::{build_traces, LoggedCall};
use crate::openai::tool_definitions;
use crate::{Context, Importer};
use memlens_core::builder::{CallInfo, Message, Role};
use memlens_core::{Trace, Usage};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The Langfuse export importer.
pub struct Langfuse;

/// Observation types of the current data model (`ObservationType`).
const OBSERVATION_TYPES: [&str; 10] = [
    "GENERATION",
    "SPAN",
    "EVENT",
    "AGENT",
    "TOOL",
    "CHAIN",
    "RETRIEVER",
    "EVALUATOR",
    "EMBEDDING",
    "GUARDRAIL",
];

impl Importer for Langfuse {
    fn name(&self) -> &'static str {
        "langfuse"
    }

    fn description(&self) -> &'static str {
        "Langfuse traces with observations, the UI's trace download, or observation lists"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_trace(first)
            || is_observation(first)
            || (first.get("meta").is_some()
                && array_at(first, "data")
                    .and_then(|d| d.first())
                    .is_some_and(|o| is_observation(o) || is_trace(o)))
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let mut observations = Vec::new();
        for item in doc.into_records() {
            let Some((location, record)) = cx.accept(item) else {
                continue;
            };
            collect(record, location, &mut observations, cx, true);
        }
        let mut calls = Vec::new();
        let mut tools = Vec::new();
        let mut attributes: HashMap<String, Vec<(&str, String)>> = HashMap::new();
        for (trace, obs, location) in &observations {
            let kind = str_at(obs, "type").unwrap_or_default().to_ascii_uppercase();
            match kind.as_str() {
                "GENERATION" => {
                    let (key, call) = generation_call(trace, obs, *location, cx);
                    if let Some(group) = &call.group {
                        attributes
                            .entry(group.clone())
                            .or_insert_with(|| trace.attributes());
                    }
                    calls.push((key, call));
                }
                "TOOL" | "SPAN" => tools.push((trace, obs)),
                k if OBSERVATION_TYPES.contains(&k) => {}
                _ => cx.warn(
                    *location,
                    format!(
                        "observation {} of unknown type {:?}: skipped",
                        label(obs),
                        str_at(obs, "type").unwrap_or_default()
                    ),
                ),
            }
        }
        let groups_by_trace: HashMap<String, String> = observations
            .iter()
            .filter_map(|(trace, obs, _)| {
                let id = trace_id(trace, obs)?;
                Some((id.clone(), trace.session.clone().unwrap_or(id)))
            })
            .collect();
        let mut timings = ToolTimings::default();
        // In time order, as the name-matched latencies are taken in order.
        tools.sort_by_key(|(_, obs)| str_at(obs, "startTime").and_then(iso_micros));
        for (trace, obs) in tools {
            let Some(group) = trace_id(trace, obs).and_then(|t| groups_by_trace.get(&t)) else {
                continue;
            };
            if let Some(ms) = latency_ms(obs) {
                timings.record(group, tool_call_id(obs), str_at(obs, "name"), ms);
            }
        }
        let mut traces = build_traces(in_group_order(calls), "langfuse", cx);
        timings.apply(&mut traces);
        for trace in &mut traces {
            for (key, value) in attributes.remove(&trace.id).unwrap_or_default() {
                trace.attributes.insert(key.to_string(), value);
            }
        }
        Ok(traces)
    }
}

fn is_trace(v: &Value) -> bool {
    // The UI's download without the separate observation list: `{trace: {..., observations}}`.
    if let Some(trace) = v.get("trace").filter(|_| v.get("observations").is_none()) {
        return array_at(trace, "observations").is_some();
    }
    array_at(v, "observations").is_some()
        && (v.get("trace").is_some_and(Value::is_object)
            || v.get("id").is_some()
            || v.get("timestamp").is_some())
}

fn is_observation(v: &Value) -> bool {
    str_at(v, "type").is_some_and(|t| OBSERVATION_TYPES.contains(&t))
        && (v.get("traceId").is_some() || v.get("startTime").is_some())
}

fn label(obs: &Value) -> String {
    format!(
        "{:?} ({})",
        str_at(obs, "name").unwrap_or_default(),
        obs.get("id").map(as_text).unwrap_or_default()
    )
}

/// What an observation knows of its trace.
#[derive(Debug, Clone, Default)]
struct TraceInfo {
    id: Option<String>,
    session: Option<String>,
    user: Option<String>,
    name: Option<String>,
}

impl TraceInfo {
    fn of(trace: &Value) -> TraceInfo {
        let text = |key: &str| {
            trace
                .get(key)
                .filter(|v| v.is_string() || v.is_number())
                .map(as_text)
                .filter(|s| !s.is_empty())
        };
        TraceInfo {
            id: text("id"),
            session: text("sessionId"),
            user: text("userId"),
            name: text("name"),
        }
    }

    fn attributes(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        out.extend(self.name.clone().map(|n| ("trace.name", n)));
        out.extend(self.user.clone().map(|u| ("user.id", u)));
        out
    }
}

fn trace_id(trace: &TraceInfo, obs: &Value) -> Option<String> {
    str_at(obs, "traceId")
        .map(str::to_string)
        .or_else(|| trace.id.clone())
}

/// The observations of one record, with what they know of their trace. `top` allows one level of
/// `{data: [...]}` list.
fn collect(
    mut record: Value,
    location: Location,
    out: &mut Vec<(TraceInfo, Value, Location)>,
    cx: &mut Context<'_>,
    top: bool,
) {
    if let Some(Value::Array(observations)) = record.get_mut("observations").map(Value::take) {
        let trace = record
            .get("trace")
            .filter(|t| t.is_object())
            .unwrap_or(&record);
        let info = TraceInfo::of(trace);
        let mut ids_only = 0usize;
        for obs in observations {
            match obs {
                Value::Object(_) => out.push((info.clone(), obs, location)),
                Value::String(_) => ids_only += 1,
                other => cx.warn(
                    location,
                    format!(
                        "observation skipped: expected an object, found {}",
                        type_name(&other)
                    ),
                ),
            }
        }
        if ids_only > 0 {
            cx.warn(
                location,
                format!(
                    "trace {}: {ids_only} observation(s) listed by id only (a trace list); \
                     export each trace with its observations (GET /api/public/traces/{{id}})",
                    info.id.unwrap_or_default()
                ),
            );
        }
        return;
    }
    if let Some(trace) = record
        .get_mut("trace")
        .filter(|t| t.get("observations").is_some())
    {
        collect(trace.take(), location, out, cx, false);
        return;
    }
    if top {
        if let Some(Value::Array(items)) = record.get_mut("data").map(Value::take) {
            for item in items {
                collect(item, location, out, cx, false);
            }
            return;
        }
    }
    if is_observation(&record) || (record.is_object() && str_at(&record, "type").is_some()) {
        out.push((TraceInfo::default(), record, location));
        return;
    }
    cx.warn(
        location,
        format!(
            "skipped: not a Langfuse trace or observation ({})",
            crate::json::describe(&record)
        ),
    );
}

/// Input and output are JSON, but the API returns them as strings unless asked to parse them.
fn decoded_io(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) if s.trim_start().starts_with(['[', '{']) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

fn generation_call(
    trace: &TraceInfo,
    obs: &Value,
    location: Location,
    cx: &mut Context<'_>,
) -> (Option<i64>, LoggedCall) {
    let raw_output = decoded_io(obs.get("output"));
    let mut input = payload_messages(&decoded_io(obs.get("input")), "user", location, cx);
    add_request_context(obs, &raw_output, &mut input);
    let output = payload_messages(&raw_output, "assistant", location, cx);
    let start = str_at(obs, "startTime");
    let key = start.and_then(iso_micros);
    if key.is_none() && obs.get("startTime").is_some_and(|t| !t.is_null()) {
        cx.warn(
            location,
            format!(
                "generation {}: startTime is not an ISO 8601 time: ordered first",
                label(obs)
            ),
        );
    }
    let call = LoggedCall {
        group: trace.session.clone().or_else(|| trace_id(trace, obs)),
        input,
        output,
        info: CallInfo {
            model: str_at(obs, "model").map(str::to_string),
            usage: observation_usage(obs, location, cx),
            started_at: start.map(str::to_string),
            ended_at: str_at(obs, "endTime").map(str::to_string),
            latency_ms: latency_ms(obs),
            source: Some(source_pos(location)),
        },
        location,
    };
    (key, call)
}

/// What the request sent beside its messages, when the observation keeps it elsewhere: the system
/// instructions (the Responses API's `instructions`, in `modelParameters` for the OpenAI Agents
/// SDK; pydantic-ai's `gen_ai.system_instructions` attribute, in the metadata) as the system
/// message, and the tool definitions (the `Response` object's `tools`, or pydantic-ai's
/// `model_request_parameters`) first, as request payloads put them.
fn add_request_context(obs: &Value, raw_output: &Value, input: &mut Vec<Message>) {
    let metadata = decoded_io(obs.get("metadata"));
    let attributes = metadata.get("attributes").unwrap_or(&Value::Null);
    if !input.iter().any(|m| m.role == Some(Role::System)) {
        if let Some(text) = instructions(obs, attributes) {
            input.insert(0, Message::text("system", text));
        }
    }
    if input.iter().any(|m| m.unframed) {
        return;
    }
    let parameters = decoded_io(attributes.get("model_request_parameters"));
    let pydantic_ai: Vec<Value> = ["function_tools", "output_tools"]
        .iter()
        .filter_map(|k| array_at(&parameters, k))
        .flatten()
        .cloned()
        .collect();
    let tools = tool_definitions(raw_output)
        .or_else(|| tool_definitions(&serde_json::json!({ "tools": pydantic_ai })));
    if let Some(tools) = tools {
        input.insert(0, tools);
    }
}

/// System instructions kept outside the input: `modelParameters.instructions`, or
/// `gen_ai.system_instructions` (a JSON list of `{type: "text", content}` parts, or text).
fn instructions(obs: &Value, attributes: &Value) -> Option<String> {
    let from_parameters = obs
        .get("modelParameters")
        .and_then(|p| str_at(p, "instructions"))
        .map(str::to_string);
    let text = from_parameters.or_else(|| {
        match decoded_io(attributes.get("gen_ai.system_instructions")) {
            Value::String(s) => Some(s),
            Value::Array(parts) => Some(
                parts
                    .iter()
                    .filter_map(|p| str_at(p, "content").or_else(|| p.as_str()))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        }
    });
    text.filter(|t| !t.is_empty())
}

fn latency_ms(obs: &Value) -> Option<f64> {
    iso_latency_ms(str_at(obs, "startTime"), str_at(obs, "endTime")).or_else(|| {
        // `ObservationsView.latency` is in seconds.
        obs.get("latency")
            .and_then(Value::as_f64)
            .filter(|s| *s >= 0.0)
            .map(|s| s * 1000.0)
    })
}

/// The tool call a tool observation executed, when it says.
fn tool_call_id(obs: &Value) -> Option<String> {
    let output = decoded_io(obs.get("output"));
    let input = decoded_io(obs.get("input"));
    let candidates = [
        obs.get("metadata"),
        Some(&input),
        Some(&output),
        output.get("kwargs"),
    ];
    let found = candidates
        .into_iter()
        .flatten()
        .find_map(|v| str_at(v, "tool_call_id"))
        .map(str::to_string);
    found
}

/// Usage of a generation, normalized so that input includes cached tokens.
fn observation_usage(obs: &Value, location: Location, cx: &mut Context<'_>) -> Option<Usage> {
    if let Some(details) = obs
        .get("usageDetails")
        .and_then(Value::as_object)
        .filter(|d| !d.is_empty())
    {
        return Some(usage_details(details));
    }
    if let Some(usage) = obs.get("usage").filter(|u| u.is_object()) {
        match str_at(usage, "unit") {
            None | Some("TOKENS") => {}
            Some(unit) => {
                cx.warn(
                    location,
                    format!(
                        "generation {}: usage in {unit}, not tokens: ignored",
                        label(obs)
                    ),
                );
                return None;
            }
        }
        let input = u64_at(usage, "input").or_else(|| u64_at(usage, "promptTokens"));
        let output = u64_at(usage, "output").or_else(|| u64_at(usage, "completionTokens"));
        if input.is_some() || output.is_some() {
            return Some(Usage {
                input_tokens: input,
                output_tokens: output,
                ..Usage::default()
            });
        }
    }
    let input = u64_at(obs, "promptTokens");
    let output = u64_at(obs, "completionTokens");
    (input.is_some() || output.is_some()).then(|| Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    })
}

/// `usageDetails`: one count per token type, the details apart from `input` / `output`.
fn usage_details(d: &Map<String, Value>) -> Usage {
    let is_input = |k: &str| {
        k == "input"
            || k.starts_with("input_")
            || k == "cache_read_input_tokens"
            || k == "cache_creation_input_tokens"
    };
    let is_output = |k: &str| k == "output" || k.starts_with("output_");
    if !d.keys().any(|k| is_input(k) || is_output(k)) {
        // Provider keys passed through as they were (`prompt_tokens`, `input_tokens`...).
        return provider_usage(&Value::Object(d.clone()));
    }
    let sum = |pred: &dyn Fn(&str) -> bool| -> Option<u64> {
        let values: Vec<u64> = d
            .iter()
            .filter(|(k, _)| pred(k))
            .filter_map(|(_, v)| as_u64(v))
            .collect();
        (!values.is_empty()).then(|| values.iter().fold(0u64, |a, &b| a.saturating_add(b)))
    };
    let first = |keys: &[&str]| keys.iter().find_map(|k| d.get(*k).and_then(as_u64));
    let (mut input, mut output) = (sum(&is_input), sum(&is_output));
    // Details already counted in `input` / `output` (not the convention, but sent by hand) show
    // when only the base counts add up to the reported total.
    if let Some(total) = first(&["total"]) {
        let (base_in, base_out) = (first(&["input"]), first(&["output"]));
        let summed = input.unwrap_or(0).saturating_add(output.unwrap_or(0));
        if summed != total && base_in.unwrap_or(0).saturating_add(base_out.unwrap_or(0)) == total {
            (input, output) = (base_in, base_out);
        }
    }
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: first(&[
            "input_cached_tokens",
            "input_cache_read",
            "cache_read_input_tokens",
            "input_cached",
            "prompt_details.cache_read",
        ]),
        cache_write_tokens: first(&[
            "input_cache_creation",
            "input_cache_write",
            "cache_creation_input_tokens",
            "prompt_details.cache_write",
        ]),
        reasoning_tokens: first(&[
            "output_reasoning_tokens",
            "output_reasoning",
            "completion_details.reasoning",
        ]),
    }
}
