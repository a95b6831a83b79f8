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
//! `session.id` (the span's or an ancestor's), else by trace id; a group holding several
//! conversations (two agents, or one agent run twice) is split into one trace each ([`calls`]).
//! `TOOL` spans (`tool.name`, `tool.id`) give the latency of the matching tool result; other kinds
//! (CHAIN, AGENT, RETRIEVER, EMBEDDING...) are structure only. Two instrumentations on one call
//! (LangChain's span with the provider SDK's nested in it, or two siblings with the same messages
//! at the same time) record it twice; one call is kept and the copies are counted in a warning.
//!
//! Usage: `llm.token_count.prompt` counts cached tokens in (its `prompt_details.cache_read` /
//! `cache_write` are a breakdown), MemLens' convention; an instrumentation that reports the
//! uncached count instead shows in `llm.token_count.total`, and the cache is added back.
//!
//! Schema source: github.com/Arize-ai/openinference `spec/semantic_conventions.md` and
//! `python/openinference-semantic-conventions/src/openinference/semconv/trace/__init__.py`
//! (`SpanAttributes`, `MessageAttributes`, `MessageContentAttributes`, `ToolCallAttributes`,
//! `ToolAttributes`, `OpenInferenceSpanKindValues`).

mod calls;
mod messages;

use crate::document::Document;
use crate::error::source_pos;
use crate::error::{ImportError, Location};
use crate::json::{array_at, str_at};
use crate::langsmith::ToolTimings;
use crate::logs::{build_traces, LoggedCall};
use crate::otel::{collect_spans, is_export, Span};
use crate::{Context, Importer};
use calls::{drop_sibling_copies, fold_nested, split_conversations, Candidate, Conversation, Tree};
use memlens_core::builder::{CallInfo, Message};
use memlens_core::{Trace, Usage};
use messages::span_messages;
use serde_json::Value;
use std::collections::HashMap;

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
        let spans = collect_spans(doc, cx);
        let tree = Tree::new(&spans);
        let mut candidates = Vec::new();
        let mut tools = Vec::new();
        for (i, span) in spans.iter().enumerate() {
            match span_kind(span).as_deref() {
                Some("LLM") => {}
                Some("TOOL") => {
                    tools.push(i);
                    continue;
                }
                None if has_messages(span) => {}
                Some(kind) if !KNOWN_KINDS.contains(&kind) => {
                    cx.warn(
                        span.location,
                        format!("{}: unknown span kind {kind:?}: skipped", span.label()),
                    );
                    continue;
                }
                _ => continue,
            }
            let (input, output) = span_messages(span, cx);
            candidates.push(Candidate {
                span: i,
                start: span.start,
                agent: tree.agent(i),
                has_content: !(input.is_empty() && output.is_empty()),
                call: span_call(span, group_of(&tree, i), input, output),
            });
        }
        let (calls, nested, without_content) = fold_nested(candidates, &tree);
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
        let mut calls = in_time_order(calls);
        let duplicates = nested + drop_sibling_copies(&mut calls);
        if duplicates > 0 {
            cx.warn(
                Location::default(),
                format!(
                    "duplicate LLM spans: {duplicates} span(s) recorded a call another span \
                     records too (two instrumentations, e.g. LangChain's and the provider \
                     SDK's): one call kept (the innermost span with messages), with the usage \
                     and model of both"
                ),
            );
        }
        // The group of each trace's calls, for its tool spans (which rarely carry `session.id`).
        let mut trace_groups: HashMap<String, String> = HashMap::new();
        for c in &calls {
            if let Some(group) = &c.call.group {
                let trace = spans[c.span].trace_id.clone();
                trace_groups.entry(trace).or_insert_with(|| group.clone());
            }
        }
        let conversations = split_conversations(&mut calls);
        let mut attributes: HashMap<String, Vec<(&str, String)>> = HashMap::new();
        for c in &calls {
            if let Some(id) = &c.call.group {
                attributes
                    .entry(id.clone())
                    .or_insert_with(|| span_attributes(&spans[c.span]));
            }
        }
        for conversation in &conversations {
            if let Some(agent) = conversation
                .agent
                .clone()
                .filter(|_| conversation.id != conversation.group)
            {
                attributes
                    .entry(conversation.id.clone())
                    .or_default()
                    .push(("agent.name", agent));
            }
        }
        let logged = calls.into_iter().map(|c| c.call).collect();
        let mut traces = build_traces(logged, "openinference", cx);
        tool_timings(&spans, &tree, tools, &trace_groups, &conversations).apply(&mut traces);
        for trace in &mut traces {
            for (key, value) in attributes.remove(&trace.id).unwrap_or_default() {
                trace.attributes.insert(key.to_string(), value);
            }
        }
        Ok(traces)
    }
}

/// Calls in build order: groups in order of first appearance, calls within a group by start time
/// (stable: calls without a start keep their file order, and come first); calls without a group
/// (grouped by continuity later) last, in file order.
fn in_time_order(calls: Vec<Candidate>) -> Vec<Candidate> {
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    let mut keyed: Vec<(usize, Option<u64>, Candidate)> = calls
        .into_iter()
        .map(|c| {
            let rank = match &c.call.group {
                Some(g) => {
                    let next = first_seen.len();
                    *first_seen.entry(g.clone()).or_insert(next)
                }
                None => usize::MAX,
            };
            (rank, c.start.filter(|_| rank != usize::MAX), c)
        })
        .collect();
    keyed.sort_by_key(|(rank, start, _)| (*rank, *start));
    keyed.into_iter().map(|(_, _, c)| c).collect()
}

/// Latencies of the tool spans, each matched to the conversation whose call asked for it: its
/// group and agent, and the latest call started before it.
fn tool_timings(
    spans: &[Span],
    tree: &Tree<'_>,
    mut tools: Vec<usize>,
    trace_groups: &HashMap<String, String>,
    conversations: &[Conversation],
) -> ToolTimings {
    let mut timings = ToolTimings::default();
    // In time order: latencies matched by tool name are taken in order.
    tools.sort_by_key(|&i| spans[i].start);
    for i in tools {
        let span = &spans[i];
        let Some(group) = tree
            .inherited(i, "session.id")
            .or_else(|| trace_groups.get(&span.trace_id).cloned())
            .or_else(|| Some(span.trace_id.clone()).filter(|t| !t.is_empty()))
        else {
            continue;
        };
        let agent = tree.agent(i);
        let mut candidates: Vec<&Conversation> =
            conversations.iter().filter(|c| c.group == group).collect();
        if candidates
            .iter()
            .any(|c| c.agent.is_some() && c.agent == agent)
        {
            candidates.retain(|c| c.agent == agent);
        }
        let start = span.start.unwrap_or(0);
        let conversation = candidates
            .iter()
            .filter_map(|c| Some((c.starts.iter().filter(|&&s| s <= start).max()?, c)))
            .max_by_key(|(s, _)| **s)
            .map(|(_, c)| *c)
            .or_else(|| candidates.first().copied());
        let id = conversation.map_or(group, |c| c.id.clone());
        if let Some(ms) = span.latency_ms() {
            let call_id = span
                .attr_text("tool.id")
                .or_else(|| span.attr_text("tool_call.id"));
            let name = span
                .attr_text("tool.name")
                .unwrap_or_else(|| span.name.clone());
            timings.record(&id, call_id, Some(&name), ms);
        }
    }
    timings
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

/// `session.id` (of the span or the nearest ancestor that has one), else the trace id.
fn group_of(tree: &Tree<'_>, i: usize) -> Option<String> {
    tree.inherited(i, "session.id")
        .or_else(|| Some(tree.span(i).trace_id.clone()).filter(|t| !t.is_empty()))
}

fn span_attributes(span: &Span) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    out.extend(span.service.clone().map(|s| ("service.name", s)));
    out.extend(span.attr_text("user.id").map(|u| ("user.id", u)));
    out
}

fn span_call(
    span: &Span,
    group: Option<String>,
    input: Vec<Message>,
    output: Vec<Message>,
) -> LoggedCall {
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
        group,
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
