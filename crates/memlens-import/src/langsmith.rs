//! LangSmith run exports: a JSON array of runs, JSON Lines of runs, or `{"runs": [...]}` (runs
//! read with their `child_runs` are flattened). Every run of type `llm` is one model call that
//! lists its whole input, so the calls go through [`crate::logs::build_traces`], which interns the
//! history resent on every call; tool runs give the latency of the matching tool result.
//!
//! ```json
//! {"id": "…", "trace_id": "…", "parent_run_id": "…", "dotted_order": "20240101T000000000000Z…",
//!  "run_type": "llm", "name": "ChatOpenAI", "start_time": "2024-01-01T00:00:00.000000",
//!  "end_time": "…", "extra": {"invocation_params": {"model": "gpt-4o", "tools": [...]},
//!    "metadata": {"ls_provider": "openai", "ls_model_name": "gpt-4o", "thread_id": "t-1"}},
//!  "inputs": {"messages": [[{"lc": 1, "type": "constructor",
//!    "id": ["langchain", "schema", "messages", "HumanMessage"], "kwargs": {"content": "Hi"}}]]},
//!  "outputs": {"generations": [[{"text": "Hello", "message": {"lc": 1, "type": "constructor",
//!    "id": ["langchain", "schema", "messages", "AIMessage"], "kwargs": {"content": "Hello",
//!    "tool_calls": [], "usage_metadata": {"input_tokens": 9, "output_tokens": 2,
//!    "input_token_details": {"cache_read": 0}}}}}]]},
//!  "prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
//! ```
//!
//! Inputs are LangChain messages (serialized constructors, `message_to_dict` `{type, data}`,
//! or plain dumps `{type: "human", content}`), OpenAI-style `{role, content}` messages, or
//! `{"prompts": [...]}`; outputs are `generations`, OpenAI `choices` or a message. Calls are ordered
//! by `dotted_order` (else `start_time`) and grouped by the thread: `extra.metadata.thread_id`,
//! `session_id` or `conversation_id` (the keys LangSmith threads use), else `trace_id`. The run's
//! own `session_id` is its tracing project, not a conversation, and is not used to group. Usage:
//! LangChain `usage_metadata` (its `input_tokens` already include cache reads and writes), else
//! the run's `prompt_tokens` / `completion_tokens` / `prompt_token_details`, else the provider's
//! `llm_output.token_usage`.
//!
//! Schema sources: github.com/langchain-ai/langsmith-sdk `python/langsmith/schemas.py` (`RunBase`,
//! `Run`) and langchain-core `libs/core/langchain_core/load/serializable.py` (`to_json`: the
//! `{lc, type: "constructor", id, kwargs}` shape), `libs/core/langchain_core/messages/`
//! (`ai.py` `tool_calls` / `usage_metadata` / `UsageMetadata`, `tool.py` `tool_call_id`,
//! `utils.py` `message_to_dict`).
//!
//! Run ingestion batches (`{post: [...], patch: [...]}`, as the SDKs send to `/runs/batch`, with
//! epoch-millisecond times from the JS SDK) are read too, each update merged into its run. The
//! parsing of chat payloads and LangChain messages (`payload`), times, call order and tool latency
//! here are shared with the Langfuse and OpenInference importers, which store the same payloads.

use crate::document::Document;
use crate::error::source_pos;
use crate::error::{ImportError, Location};
use crate::json::{array_at, as_text, str_at, type_name, u64_at};
use crate::logs::{build_traces, LoggedCall};
use crate::{anthropic, openai, Context, Importer};
use memlens_core::builder::CallInfo;
use memlens_core::{Category, Trace, Usage};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};

mod payload;
mod responses;

use payload::generation_message;
pub(crate) use payload::payload_messages;

/// The LangSmith run export importer.
pub struct LangSmith;

impl Importer for LangSmith {
    fn name(&self) -> &'static str {
        "langsmith"
    }

    fn description(&self) -> &'static str {
        "LangSmith run exports (JSON array, JSON Lines or {runs: [...]}) with LangChain messages"
    }

    fn sniff(&self, first: &Value) -> bool {
        let first_of = |key: &str| array_at(first, key).and_then(|r| r.first());
        is_run(first)
            || first_of("runs").is_some_and(is_run)
            || first_of("post").is_some_and(is_run)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let mut runs = Vec::new();
        for item in doc.into_records() {
            let Some((location, mut record)) = cx.accept(item) else {
                continue;
            };
            if let Some(Value::Array(list)) = record.get_mut("runs").map(Value::take) {
                for run in list {
                    flatten_runs(run, location, &mut runs, cx);
                }
            } else if record.get("post").is_some_and(Value::is_array) {
                for run in merge_batch(record, location, cx) {
                    flatten_runs(run, location, &mut runs, cx);
                }
            } else {
                flatten_runs(record, location, &mut runs, cx);
            }
        }
        let mut calls = Vec::new();
        let mut tools = Vec::new();
        for (location, run) in &runs {
            match str_at(run, "run_type") {
                Some("llm") => calls.push(run_call(run, *location, cx)),
                Some("tool") => tools.push(run),
                Some("chain" | "retriever" | "prompt" | "embedding" | "parser") => {}
                Some(other) => cx.warn(
                    *location,
                    format!(
                        "run {} of unknown run_type {other:?}: skipped",
                        run_label(run)
                    ),
                ),
                None => cx.warn(*location, "skipped: a run without a string \"run_type\""),
            }
        }
        let groups_by_trace: HashMap<String, Option<String>> = calls
            .iter()
            .filter_map(|(_, trace, call)| Some((trace.clone()?, call.group.clone())))
            .collect();
        let mut timings = ToolTimings::default();
        for run in tools {
            let trace = str_at(run, "trace_id").map(str::to_string);
            let group = trace
                .as_ref()
                .and_then(|t| groups_by_trace.get(t).cloned())
                .unwrap_or_else(|| thread_id(run).or(trace));
            let (Some(group), Some(ms)) = (group, run_latency(run)) else {
                continue;
            };
            timings.record(&group, tool_run_call_id(run), str_at(run, "name"), ms);
        }
        let ordered = in_group_order(calls.into_iter().map(|(key, _, call)| (key, call)));
        let mut traces = build_traces(ordered, "langsmith", cx);
        timings.apply(&mut traces);
        Ok(traces)
    }
}

/// A run ingestion batch (`{post: [run creates], patch: [run updates]}`, as the SDKs send to
/// `/runs/batch`): each update merged into the run it completes (by `id`, else `dotted_order`).
fn merge_batch(mut record: Value, location: Location, cx: &mut Context<'_>) -> Vec<Value> {
    let mut take = |key: &str, cx: &mut Context<'_>| match record.get_mut(key).map(Value::take) {
        Some(Value::Array(items)) => items,
        None | Some(Value::Null) => Vec::new(),
        Some(other) => {
            cx.warn(
                location,
                format!(
                    "run batch {key:?} skipped: expected a list of runs, found {}",
                    type_name(&other)
                ),
            );
            Vec::new()
        }
    };
    let mut runs = take("post", cx);
    for patch in take("patch", cx) {
        let Value::Object(fields) = patch else {
            cx.warn(
                location,
                format!(
                    "run update skipped: expected an object, found {}",
                    type_name(&patch)
                ),
            );
            continue;
        };
        let same = |run: &Value, key: &str| {
            fields
                .get(key)
                .is_some_and(|v| !v.is_null() && run.get(key) == Some(v))
        };
        let target = runs
            .iter()
            .position(|r| same(r, "id"))
            .or_else(|| runs.iter().position(|r| same(r, "dotted_order")));
        match target {
            Some(i) => {
                if let Some(run) = runs[i].as_object_mut() {
                    run.extend(fields);
                }
            }
            None if fields.contains_key("run_type") => runs.push(Value::Object(fields)),
            None => cx.warn(
                location,
                "run update skipped: no run of the batch has its id or dotted_order",
            ),
        }
    }
    runs
}

fn is_run(v: &Value) -> bool {
    str_at(v, "run_type").is_some()
        && ["inputs", "outputs", "trace_id", "dotted_order"]
            .iter()
            .any(|k| v.get(*k).is_some())
}

/// A run and its `child_runs` (as `read_run(load_child_runs=True)` nests them), depth first.
fn flatten_runs(
    mut run: Value,
    location: Location,
    out: &mut Vec<(Location, Value)>,
    cx: &mut Context<'_>,
) {
    if !run.is_object() {
        cx.warn(
            location,
            format!("skipped: expected a run object, found {}", type_name(&run)),
        );
        return;
    }
    let children = run.get_mut("child_runs").map(Value::take);
    out.push((location, run));
    if let Some(Value::Array(children)) = children {
        for child in children {
            flatten_runs(child, location, out, cx);
        }
    }
}

fn run_label(run: &Value) -> String {
    format!(
        "{:?} ({})",
        str_at(run, "name").unwrap_or_default(),
        run.get("id").map(as_text).unwrap_or_default()
    )
}

/// The conversation a run belongs to, from the metadata keys LangSmith threads are built on.
fn thread_id(run: &Value) -> Option<String> {
    let metadata = run.get("extra").and_then(|e| e.get("metadata"))?;
    ["thread_id", "session_id", "conversation_id"]
        .iter()
        .find_map(|k| metadata.get(*k))
        .filter(|v| v.is_string() || v.is_number())
        .map(as_text)
}

type SortKey = (Option<String>, Option<i64>);

/// One `llm` run as a logged call, with its sort key and trace id.
fn run_call(
    run: &Value,
    location: Location,
    cx: &mut Context<'_>,
) -> (SortKey, Option<String>, LoggedCall) {
    let extra = run.get("extra").unwrap_or(&Value::Null);
    let params = extra.get("invocation_params").unwrap_or(&Value::Null);
    let inputs = run.get("inputs").unwrap_or(&Value::Null);
    let outputs = run.get("outputs").unwrap_or(&Value::Null);
    let mut input = Vec::new();
    // Tools bound to a chat model are in its invocation parameters, not in the inputs.
    if inputs.get("tools").is_none() {
        input.extend(openai::tool_definitions(params));
    }
    input.extend(payload_messages(inputs, "user", location, cx));
    let output = payload_messages(outputs, "assistant", location, cx);
    // The model that answered (the provider's response) before the one requested.
    let answered = generation_message(outputs).and_then(|m| {
        let fields = m.get("kwargs").or_else(|| m.get("data")).unwrap_or(m);
        let metadata = fields.get("response_metadata")?;
        str_at(metadata, "model_name").or_else(|| str_at(metadata, "model"))
    });
    let model = answered
        .or_else(|| {
            outputs
                .get("llm_output")
                .and_then(|o| str_at(o, "model_name"))
        })
        .or_else(|| str_at(outputs, "model"))
        .or_else(|| {
            extra
                .get("metadata")
                .and_then(|m| str_at(m, "ls_model_name"))
        })
        .or_else(|| str_at(params, "model"))
        .or_else(|| str_at(params, "model_name"))
        .map(str::to_string);
    let dotted = str_at(run, "dotted_order").map(str::to_string);
    let start = run_time(run, "start_time");
    if dotted.is_none() && start.is_none() && run.get("start_time").is_some_and(|t| !t.is_null()) {
        cx.warn(
            location,
            format!(
                "run {}: start_time is not an ISO 8601 time or epoch milliseconds: \
                 ordered first",
                run_label(run)
            ),
        );
    }
    let key = (dotted, start);
    let trace = str_at(run, "trace_id").map(str::to_string);
    let call = LoggedCall {
        group: thread_id(run).or_else(|| trace.clone()),
        input,
        output,
        info: CallInfo {
            model,
            usage: run_usage(run),
            started_at: time_text(run, "start_time"),
            ended_at: time_text(run, "end_time"),
            latency_ms: run_latency(run),
            source: Some(source_pos(location)),
        },
        location,
    };
    (key, trace, call)
}

fn run_latency(run: &Value) -> Option<f64> {
    let (start, end) = (run_time(run, "start_time")?, run_time(run, "end_time")?);
    (end >= start).then(|| (end - start) as f64 / 1000.0)
}

/// A run time in microseconds since the epoch: an ISO 8601 string (the Python SDK, exports) or
/// epoch milliseconds (the JS SDK's run payloads).
fn run_time(run: &Value, key: &str) -> Option<i64> {
    match run.get(key)? {
        Value::String(s) => iso_micros(s),
        Value::Number(n) => n
            .as_f64()
            .filter(|ms| ms.is_finite() && *ms >= 0.0 && *ms < 1e15)
            .map(|ms| (ms * 1000.0) as i64),
        _ => None,
    }
}

fn time_text(run: &Value, key: &str) -> Option<String> {
    run.get(key)
        .filter(|t| t.is_string() || t.is_number())
        .map(as_text)
}

/// The tool call a tool run executed: LangChain tools invoked with a tool call return a
/// `ToolMessage` that carries its id.
fn tool_run_call_id(run: &Value) -> Option<String> {
    let output = run.get("outputs").and_then(|o| o.get("output"));
    let candidates = [
        output.and_then(|o| o.get("kwargs")),
        output,
        run.get("inputs"),
        run.get("extra").and_then(|e| e.get("metadata")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|v| str_at(v, "tool_call_id"))
        .map(str::to_string)
}

/// Usage of an `llm` run, from the richest place that has it.
fn run_usage(run: &Value) -> Option<Usage> {
    let outputs = run.get("outputs").unwrap_or(&Value::Null);
    let metadata = run.get("extra").and_then(|e| e.get("metadata"));
    let from_messages = generation_message(outputs).and_then(|m| {
        m.get("kwargs")
            .and_then(|k| k.get("usage_metadata"))
            .or_else(|| m.get("usage_metadata"))
            .or_else(|| m.get("data").and_then(|d| d.get("usage_metadata")))
    });
    let metadata_usage = [
        from_messages,
        outputs.get("usage_metadata"),
        metadata.and_then(|m| m.get("usage_metadata")),
    ];
    if let Some(u) = metadata_usage.into_iter().flatten().find(|u| u.is_object()) {
        return Some(usage_metadata(u));
    }
    if u64_at(run, "prompt_tokens").is_some() || u64_at(run, "completion_tokens").is_some() {
        let detail = |key: &str, field: &str| run.get(key).and_then(|d| u64_at(d, field));
        return Some(Usage {
            input_tokens: u64_at(run, "prompt_tokens"),
            output_tokens: u64_at(run, "completion_tokens"),
            cache_read_tokens: detail("prompt_token_details", "cache_read"),
            cache_write_tokens: detail("prompt_token_details", "cache_creation"),
            reasoning_tokens: detail("completion_token_details", "reasoning"),
        });
    }
    let provider = outputs
        .get("llm_output")
        .and_then(|o| o.get("token_usage").or_else(|| o.get("usage")))
        .or_else(|| outputs.get("usage"))?;
    Some(provider_usage(provider))
}

/// A provider's own usage object: Anthropic's (input without the cache) or OpenAI's.
pub(crate) fn provider_usage(u: &Value) -> Usage {
    if u.get("cache_read_input_tokens").is_some() || u.get("cache_creation_input_tokens").is_some()
    {
        anthropic::parse_usage(u)
    } else {
        openai::parse_usage(u)
    }
}

/// LangChain `UsageMetadata`: `input_tokens` is the sum of every input token type, cache reads and
/// writes included, which is MemLens' convention already.
pub(crate) fn usage_metadata(u: &Value) -> Usage {
    let detail = |key: &str, field: &str| u.get(key).and_then(|d| u64_at(d, field));
    Usage {
        input_tokens: u64_at(u, "input_tokens"),
        output_tokens: u64_at(u, "output_tokens"),
        cache_read_tokens: detail("input_token_details", "cache_read"),
        cache_write_tokens: detail("input_token_details", "cache_creation"),
        reasoning_tokens: detail("output_token_details", "reasoning"),
    }
}

// ---------------------------------------------------------------------------------------------
// Shared with the Langfuse and OpenInference importers: times, tool latency, call order (the chat
// payloads and LangChain messages are in `payload`).
// ---------------------------------------------------------------------------------------------

/// An ISO 8601 date-time (`2024-05-01T12:00:00.123456Z`, `+02:00` offsets, or no zone: UTC) as
/// microseconds since the Unix epoch; `None` when it is not one.
pub(crate) fn iso_micros(s: &str) -> Option<i64> {
    let s = s.trim();
    let num = |from: usize, to: usize| -> Option<i64> {
        let part = s.get(from..to)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let sep = |at: usize, allowed: &[u8]| s.as_bytes().get(at).is_some_and(|b| allowed.contains(b));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = s.get(19..)?;
    let mut micros = 0i64;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        for (i, b) in fraction.bytes().take(6).take(digits).enumerate() {
            micros += i64::from(b - b'0') * 10i64.pow(5 - i as u32);
        }
        rest = &fraction[digits..];
    }
    let offset_seconds = match rest {
        "" | "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let digits: String = rest[1..].chars().filter(|c| *c != ':').collect();
            if digits.len() != 2 && digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            let hours: i64 = digits[..2].parse().ok()?;
            let minutes: i64 = digits
                .get(2..)
                .filter(|m| !m.is_empty())
                .map_or(Ok(0), str::parse)
                .ok()?;
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    Some(seconds * 1_000_000 + micros)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let year_of_era = y - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Milliseconds between two ISO 8601 times, when both parse and the end is not before the start.
pub(crate) fn iso_latency_ms(start: Option<&str>, end: Option<&str>) -> Option<f64> {
    let (start, end) = (iso_micros(start?)?, iso_micros(end?)?);
    (end >= start).then(|| (end - start) as f64 / 1000.0)
}

/// Calls in build order: groups in order of first appearance, calls within a group sorted by
/// `key` (stable: calls without a key keep their file order, and come first).
pub(crate) fn in_group_order<K: Ord>(
    calls: impl IntoIterator<Item = (K, LoggedCall)>,
) -> Vec<LoggedCall> {
    let mut first_seen: HashMap<Option<String>, usize> = HashMap::new();
    let mut keyed: Vec<(usize, K, LoggedCall)> = Vec::new();
    for (key, call) in calls {
        let next = first_seen.len();
        // Calls without a group id are grouped by continuity later; keep them in file order.
        let group = match &call.group {
            Some(_) => *first_seen.entry(call.group.clone()).or_insert(next),
            None => usize::MAX,
        };
        keyed.push((group, key, call));
    }
    keyed.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    keyed.into_iter().map(|(_, _, call)| call).collect()
}

/// Latencies measured by tool spans or runs, matched to tool result chunks by tool call id, else
/// by tool name in order.
#[derive(Default)]
pub(crate) struct ToolTimings {
    by_id: HashMap<(String, String), f64>,
    by_name: HashMap<(String, String), VecDeque<f64>>,
}

impl ToolTimings {
    /// Records one tool execution of the trace (group) `group`. Record them in time order.
    pub(crate) fn record(&mut self, group: &str, id: Option<String>, name: Option<&str>, ms: f64) {
        match (id, name) {
            (Some(id), _) if !id.is_empty() => {
                self.by_id.insert((group.to_string(), id), ms);
            }
            (_, Some(name)) => self
                .by_name
                .entry((group.to_string(), name.to_string()))
                .or_default()
                .push_back(ms),
            _ => {}
        }
    }

    /// Sets the latency of the tool results that have none.
    pub(crate) fn apply(mut self, traces: &mut [Trace]) {
        for trace in traces {
            let names: HashMap<String, String> = trace
                .chunks
                .iter()
                .filter(|c| c.category == Category::ToolCall)
                .filter_map(|c| Some((c.meta.tool_call_id.clone()?, c.meta.tool_name.clone()?)))
                .collect();
            for chunk in &mut trace.chunks {
                if chunk.category != Category::ToolResult || chunk.meta.latency_ms.is_some() {
                    continue;
                }
                let id = chunk.meta.tool_call_id.clone().unwrap_or_default();
                let by_id = self.by_id.get(&(trace.id.clone(), id.clone())).copied();
                let name = chunk
                    .meta
                    .tool_name
                    .clone()
                    .or_else(|| names.get(&id).cloned());
                chunk.meta.latency_ms = by_id.or_else(|| {
                    self.by_name
                        .get_mut(&(trace.id.clone(), name?))
                        .and_then(VecDeque::pop_front)
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::iso_micros;

    #[test]
    fn iso_times_with_and_without_zones() {
        assert_eq!(iso_micros("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(iso_micros("1970-01-01T00:00:01.5"), Some(1_500_000));
        assert_eq!(
            iso_micros("2024-10-13T07:05:37.170001Z"),
            Some(1_728_803_137_170_001)
        );
        // The same instant written with an offset.
        assert_eq!(
            iso_micros("2024-10-13T09:05:37.170001+02:00"),
            iso_micros("2024-10-13T07:05:37.170001Z")
        );
        assert_eq!(
            iso_micros("2000-03-01 00:00:00-0130"),
            iso_micros("2000-03-01T01:30:00Z")
        );
        // Nanoseconds are cut to microseconds.
        assert_eq!(iso_micros("1970-01-01T00:00:00.123456789Z"), Some(123_456));
        for bad in [
            "",
            "2024-13-01T00:00:00Z",
            "2024-01-01",
            "2024-01-01T00:00:00+x",
            "२०२४-01-01T00:00:00Z",
        ] {
            assert_eq!(iso_micros(bad), None, "{bad}");
        }
    }
}
