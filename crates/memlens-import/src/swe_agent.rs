//! SWE-agent and mini-swe-agent trajectories.
//!
//! **SWE-agent `.traj`** (github.com/SWE-agent/SWE-agent, `sweagent/types.py`: `TrajectoryStep`,
//! `HistoryItem`, `AgentInfo`; written by `sweagent/agent/agents.py`):
//! ```json
//! {"trajectory": [{"action": "ls", "observation": "...", "response": "...", "thought": "...",
//!                  "state": {}, "execution_time": 0.3, "query": [{"role": "system", ...}]}],
//!  "history": [{"role": "system", "content": "...", "agent": "main", "message_type": "system_prompt"},
//!              {"role": "assistant", "content": "...", "message_type": "action",
//!               "tool_calls": [{"id": "call_1", "function": {"name": "bash", "arguments": "{}"}}]},
//!              {"role": "tool", "content": "...", "tool_call_ids": ["call_1"], "message_type": "observation"}],
//!  "info": {"model_stats": {"instance_cost": 0.02, "tokens_sent": 7141, "tokens_received": 243,
//!           "api_calls": 5}, "exit_status": "submitted", "submission": "diff ..."},
//!  "replay_config": {"agent": {"model": {"name": "gpt-4o"}}}}
//! ```
//! Each step's `query` is exactly what SWE-agent sent for that step (its history after the history
//! processors, which elide old observations), so when steps have one, each is one call whose input
//! is its `query` (messages resent from step to step are the same chunk) and whose output is the
//! step's assistant message from `history`. Without `query` (older files, or a file holding only
//! its `history`) `history` is the record: every assistant message is one call whose input is
//! everything before it; a trailing step the history lacks is kept as a last call, or, when it
//! is a run ended by a failed query (`exit_cost`...), named in a warning. Demonstrations
//! (`message_type: "demonstration"`, or `is_demo`) stay in the context with chunk kind
//! `demonstration` and are never calls. `model_stats` are run totals that cannot be split per call:
//! they become trace attributes.
//!
//! **mini-swe-agent `.traj.json`** (github.com/SWE-agent/mini-swe-agent,
//! `src/minisweagent/run/utils/save.py`, `save_traj`): `{"info": {"exit_status", "submission",
//! "model_stats": {"instance_cost", "api_calls"}, "config", "mini_version"}, "messages": [...],
//! "trajectory_format": "mini-swe-agent-1"}` (`-1.1` since v2). The history is linear and never
//! rewritten: every assistant message is one call whose input is everything before it; its usage
//! is the LiteLLM response kept in `extra.response`. Messages follow the OpenAI chat format
//! (`tool_calls` and `role: "tool"` with tool-calling models); the final `role: "exit"` message is
//! never sent to a model and is left out. With tool calls, the tool definitions sent with every
//! request are not in the file: the attribute `unrecorded` says so.

use crate::document::Document;
use crate::error::{ImportError, Location};
use crate::json::{array_at, scalar_text, str_at, type_name};
use crate::openai::parse_message;
use crate::openhands::litellm_usage;
use crate::{Context, Importer};
use memlens_core::builder::{CallInfo, Message, Part, Role, TraceBuilder};
use memlens_core::{Category, SourcePos, Trace};
use serde_json::Value;

/// The SWE-agent `.traj` importer.
pub struct SweAgent;

/// The mini-swe-agent `.traj.json` importer.
pub struct MiniSweAgent;

const STEP_KEYS: [&str; 4] = ["action", "observation", "response", "thought"];

fn is_swe_agent(v: &Value) -> bool {
    let history = array_at(v, "history");
    let Some(steps) = array_at(v, "trajectory") else {
        // Only the history (demonstrations, stripped files): chat messages and SWE-agent's marks.
        return history.is_some_and(|h| is_swe_history(v, h));
    };
    if history.is_none() && !v.get("info").is_some_and(Value::is_object) {
        return false;
    }
    // OpenHands exports `{"trajectory": [events]}`: its events carry a `source` or a `kind`.
    let step_like = steps.first().is_none_or(|s| {
        s.get("source").is_none()
            && s.get("kind").is_none()
            && STEP_KEYS.iter().any(|k| s.get(*k).is_some())
    });
    let history_like = history.is_none_or(|h| h.first().is_none_or(|m| m.get("role").is_some()));
    step_like && history_like
}

/// A `history` of chat messages in a record SWE-agent wrote: its `info`, `environment` or
/// `replay_config`, or messages tagged with the `agent` or `message_type` SWE-agent adds.
fn is_swe_history(v: &Value, history: &[Value]) -> bool {
    if history.first().is_none_or(|m| str_at(m, "role").is_none()) {
        return false;
    }
    let tagged = |m: &Value| m.get("agent").is_some() || m.get("message_type").is_some();
    v.get("info").is_some_and(Value::is_object)
        || str_at(v, "environment").is_some()
        || v.get("replay_config").is_some_and(|c| !c.is_null())
        || history.iter().take(4).any(tagged)
}

fn is_mini(v: &Value) -> bool {
    array_at(v, "messages").is_some()
        && (str_at(v, "trajectory_format").is_some_and(|f| f.starts_with("mini-swe-agent"))
            || v.get("info").and_then(|i| i.get("mini_version")).is_some())
}

impl Importer for SweAgent {
    fn name(&self) -> &'static str {
        "swe-agent"
    }

    fn description(&self) -> &'static str {
        "SWE-agent .traj trajectories: each step's query (or the history) as calls, model_stats totals"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_swe_agent(first)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let mut traces = Vec::new();
        for item in doc.into_records() {
            let Some((location, record)) = cx.accept(item) else {
                continue;
            };
            // Sniffing needs the full shape; a file forced with `--format swe-agent` is read from
            // whichever of the two lists it has.
            if !is_swe_agent(&record)
                && array_at(&record, "history").is_none()
                && array_at(&record, "trajectory").is_none()
            {
                cx.warn(
                    location,
                    "skipped: not a SWE-agent trajectory (no \"trajectory\" or \"history\" list)",
                );
                continue;
            }
            traces.push(swe_agent_trace(&record, traces.len(), location, cx));
        }
        Ok(traces)
    }
}

fn swe_agent_trace(record: &Value, n: usize, location: Location, cx: &mut Context<'_>) -> Trace {
    let config = replay_config(record);
    let id = config
        .as_ref()
        .and_then(|c| c.get("problem_statement"))
        .and_then(|p| str_at(p, "id"))
        .or_else(|| record.get("info").and_then(|i| str_at(i, "instance_id")))
        .map_or_else(|| format!("swe-agent-{n}"), str::to_string);
    let mut b = TraceBuilder::new(id, "swe-agent");
    let model = config
        .as_ref()
        .and_then(|c| c.get("agent")?.get("model")?.get("name"))
        .and_then(Value::as_str)
        .map(str::to_string);
    b.set_model(model.clone());
    let info = record.get("info").unwrap_or(&Value::Null);
    let stats = info.get("model_stats").unwrap_or(&Value::Null);
    for key in [
        "instance_cost",
        "tokens_sent",
        "tokens_received",
        "api_calls",
    ] {
        if let Some(v) = stats.get(key).and_then(scalar_text) {
            b.attribute(key, v);
        }
    }
    if let Some(v) = info.get("exit_status").and_then(scalar_text) {
        b.attribute("exit_status", v);
    }
    if let Some(v) = str_at(record, "environment") {
        b.attribute("environment", v);
    }
    let steps = array_at(record, "trajectory")
        .map(Vec::as_slice)
        .unwrap_or_default();
    let history = array_at(record, "history")
        .map(Vec::as_slice)
        .unwrap_or_default();
    if steps.iter().any(|s| query_of(s).is_some()) {
        push_queried_steps(&mut b, steps, history, model, location, cx);
    } else if !history.is_empty() {
        for (i, item) in history.iter().enumerate() {
            if let Some(message) = swe_message(item, i, location, cx) {
                b.push_message(message, None);
            }
        }
        push_steps_missing_from_history(&mut b, steps, history, location, cx);
        b.reconstruct_calls();
    } else {
        cx.warn(location, "no \"history\" and no step \"query\": calls rebuilt from the steps' responses and observations");
        for step in steps {
            let response = str_at(step, "response").or_else(|| str_at(step, "thought"));
            b.push_message(
                Message::text("assistant", response.unwrap_or_default()),
                None,
            );
            b.push_message(
                Message::text("user", str_at(step, "observation").unwrap_or_default()),
                None,
            );
        }
        b.reconstruct_calls();
    }
    cx.finish(b, location)
}

/// `replay_config`: an object, or (older files) its JSON text.
fn replay_config(record: &Value) -> Option<Value> {
    match record.get("replay_config")? {
        Value::String(text) => serde_json::from_str(text).ok(),
        config @ Value::Object(_) => Some(config.clone()),
        _ => None,
    }
}

/// A step's `query` when it holds messages (the default is `[{}]`: nothing recorded).
fn query_of(step: &Value) -> Option<&Vec<Value>> {
    array_at(step, "query").filter(|q| q.iter().any(|m| m.get("role").is_some()))
}

fn is_demo(m: &Value) -> bool {
    str_at(m, "message_type") == Some("demonstration")
        || m.get("is_demo") == Some(&Value::Bool(true))
}

/// One call per step with a `query`: input the query, output the step's assistant message.
fn push_queried_steps(
    b: &mut TraceBuilder,
    steps: &[Value],
    history: &[Value],
    model: Option<String>,
    location: Location,
    cx: &mut Context<'_>,
) {
    let assistants = assistant_messages(history);
    let one_to_one = assistants.len() == steps.len();
    let mut cursor = 0;
    let mut unqueried = 0;
    for (i, step) in steps.iter().enumerate() {
        // The step's own assistant message: the i-th when history and steps line up, else the
        // next one with the same action.
        let found = if one_to_one {
            assistants.get(i).copied()
        } else {
            let action = str_at(step, "action");
            let at = (cursor..assistants.len())
                .find(|&j| action.is_some() && str_at(assistants[j], "action") == action);
            at.map(|j| {
                cursor = j + 1;
                assistants[j]
            })
        };
        let Some(query) = query_of(step) else {
            unqueried += 1;
            continue;
        };
        let input: Vec<Message> = query
            .iter()
            .enumerate()
            .filter_map(|(j, m)| swe_message(m, j, location, cx))
            .collect();
        let output = found.and_then(|m| swe_message(m, i, location, cx)).unwrap_or_else(|| {
            cx.warn(location, format!("step {i}: no assistant message for it in \"history\": its output is the step's response"));
            let text = str_at(step, "response").or_else(|| str_at(step, "thought"));
            Message::text("assistant", text.unwrap_or_default())
        });
        let input_ids = b.intern_messages(&input);
        // The response is a new occurrence: the next query resends it.
        let hash = output.identity_hash();
        let occurrence = input.iter().filter(|m| m.identity_hash() == hash).count();
        let output_ids = b.intern_message(&output, occurrence);
        b.push_call(
            input_ids,
            output_ids,
            CallInfo {
                model: model.clone(),
                source: Some(SourcePos {
                    line: location.line.unwrap_or(0) as u32,
                    record: location.record.unwrap_or(0) as u32,
                }),
                ..CallInfo::default()
            },
        );
    }
    if unqueried > 0 {
        cx.warn(
            location,
            format!("{unqueried} step(s) without a recorded \"query\": not counted as calls"),
        );
    }
}

/// Trajectory steps after the last one `history` records. SWE-agent 0.x appends the assistant
/// message only when the model answered: a step ended by a failed query (`exit_context`,
/// `exit_cost`, `exit_api`, `exit_error`: "Exit due to ...") is in `trajectory` alone, and is no
/// call. Any other such step is a response the history lost: it is kept as the last call.
/// The history's assistant messages, demonstrations left out: one per step the model answered.
fn assistant_messages(history: &[Value]) -> Vec<&Value> {
    history
        .iter()
        .filter(|m| str_at(m, "role") == Some("assistant") && !is_demo(m))
        .collect()
}

fn push_steps_missing_from_history(
    b: &mut TraceBuilder,
    steps: &[Value],
    history: &[Value],
    location: Location,
    cx: &mut Context<'_>,
) {
    let assistants = assistant_messages(history);
    // Steps and responses pair in order by action (a requeried step is in the trajectory
    // only); by position when the history does not say.
    let mut matched = 0;
    let mut after_last = 0;
    for (i, step) in steps.iter().enumerate() {
        let Some(message) = assistants.get(matched) else {
            break;
        };
        let same = match (str_at(message, "action"), str_at(step, "action")) {
            (Some(a), Some(b)) => a.trim() == b.trim(),
            _ => true,
        };
        if same {
            matched += 1;
            after_last = i + 1;
        }
    }
    if matched < assistants.len() {
        return;
    }
    for (i, step) in steps.iter().enumerate().skip(after_last) {
        let action = str_at(step, "action").unwrap_or_default().trim();
        let response = str_at(step, "response")
            .filter(|r| !r.is_empty())
            .or_else(|| str_at(step, "thought"))
            .unwrap_or_default();
        if action.starts_with("exit_") && response.starts_with("Exit due to") {
            cx.warn(
                location,
                format!(
                    "trajectory step not in history: step {i} ({action}, {response:?}) ended the \
                     run without a model response: not a call"
                ),
            );
            continue;
        }
        // The model read the previous step's observation before answering; the history may
        // have lost it with the response.
        let previous = i.checked_sub(1).and_then(|p| steps.get(p));
        let ends_with_response =
            b.trace().chunks.last().is_some_and(|c| {
                c.category == Category::Assistant || c.category == Category::ToolCall
            });
        let mut rebuilt = "the history";
        if let Some(observation) = previous.and_then(|p| str_at(p, "observation")) {
            if ends_with_response {
                b.push_message(Message::text("user", observation), None);
                rebuilt = "the history and the previous step's observation";
            }
        }
        b.push_message(Message::text("assistant", response), None);
        cx.warn(
            location,
            format!(
                "trajectory step not in history: step {i} ({action}) kept as a call, its input \
                 rebuilt from {rebuilt}"
            ),
        );
    }
}

/// A SWE-agent history item (or query message): OpenAI-shaped, with `tool_call_ids` on tool
/// results and `thinking_blocks` on Anthropic responses.
fn swe_message(
    m: &Value,
    index: usize,
    location: Location,
    cx: &mut Context<'_>,
) -> Option<Message> {
    let parsed = if str_at(m, "role") == Some("tool") && m.get("tool_call_id").is_none() {
        let mut patched = m.clone();
        let id = array_at(m, "tool_call_ids")
            .and_then(|ids| ids.first())
            .cloned();
        if let (Some(map), Some(id)) = (patched.as_object_mut(), id) {
            map.insert("tool_call_id".into(), id);
        }
        parse_message(&patched, location, cx)
    } else {
        parse_message(m, location, cx)
    };
    let Some(mut message) = parsed else {
        cx.warn(
            location,
            format!(
                "message {index} skipped: expected an object with a string \"role\", found {}",
                crate::json::describe(m)
            ),
        );
        return None;
    };
    let thinking: Vec<Part> = array_at(m, "thinking_blocks")
        .into_iter()
        .flatten()
        .filter_map(|b| str_at(b, "thinking"))
        .filter(|t| !t.is_empty())
        .map(|t| Part::Reasoning(t.to_string()))
        .collect();
    message.parts.splice(0..0, thinking);
    if is_demo(m) {
        message.meta.kind = Some("demonstration".into());
        if message.role == Some(Role::Assistant) {
            // Part of the prompt, not a response: context that no call produced.
            message.role = Some(Role::Other("demonstration".into()));
            message.category = Some(Category::Assistant);
        }
    }
    Some(message)
}

impl Importer for MiniSweAgent {
    fn name(&self) -> &'static str {
        "mini-swe-agent"
    }

    fn description(&self) -> &'static str {
        "mini-swe-agent .traj.json trajectories: linear message history, usage per response"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_mini(first)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let mut traces = Vec::new();
        for item in doc.into_records() {
            let Some((location, record)) = cx.accept(item) else {
                continue;
            };
            let Some(messages) = array_at(&record, "messages") else {
                cx.warn(location, "skipped: record has no \"messages\" list");
                continue;
            };
            let id = ["instance_id", "task_id"]
                .iter()
                .find_map(|k| str_at(&record, k))
                .map_or_else(
                    || format!("mini-swe-agent-{}", traces.len()),
                    str::to_string,
                );
            let mut b = TraceBuilder::new(id, "mini-swe-agent");
            let info = record.get("info").unwrap_or(&Value::Null);
            let model = info
                .get("config")
                .and_then(|c| c.get("model"))
                .and_then(|m| str_at(m, "model_name"))
                .map(str::to_string);
            b.set_model(model.clone());
            let stats = info.get("model_stats").unwrap_or(&Value::Null);
            for key in ["instance_cost", "api_calls"] {
                if let Some(v) = stats.get(key).and_then(scalar_text) {
                    b.attribute(key, v);
                }
            }
            for (key, value) in [
                ("exit_status", info.get("exit_status")),
                ("mini_version", info.get("mini_version")),
                ("trajectory_format", record.get("trajectory_format")),
            ] {
                if let Some(v) = value.and_then(scalar_text) {
                    b.attribute(key, v);
                }
            }
            for (i, m) in messages.iter().enumerate() {
                push_mini_message(&mut b, m, i, model.as_deref(), location, cx);
            }
            if messages
                .iter()
                .any(|m| array_at(m, "tool_calls").is_some_and(|c| !c.is_empty()))
            {
                b.attribute(
                    memlens_core::report::UNRECORDED_ATTRIBUTE,
                    "tool definitions (sent with every request, not written to the trajectory)",
                );
            }
            b.reconstruct_calls();
            traces.push(cx.finish(b, location));
        }
        Ok(traces)
    }
}

fn push_mini_message(
    b: &mut TraceBuilder,
    m: &Value,
    index: usize,
    model: Option<&str>,
    location: Location,
    cx: &mut Context<'_>,
) {
    if str_at(m, "role") == Some("exit") {
        return;
    }
    let Some(message) = parse_message(m, location, cx) else {
        cx.warn(
            location,
            format!(
                "message {index} skipped: expected an object with a string \"role\", found {}",
                crate::json::describe(m)
            ),
        );
        return;
    };
    let info = (message.role == Some(Role::Assistant)).then(|| {
        let extra = m.get("extra").unwrap_or(&Value::Null);
        let response = extra.get("response").unwrap_or(&Value::Null);
        let usage = response.get("usage").or_else(|| extra.get("usage"));
        if let Some(other) = usage.filter(|u| !u.is_object() && !u.is_null()) {
            cx.warn(
                location,
                format!(
                    "message {index}: \"usage\" is {}, expected an object: ignored",
                    type_name(other)
                ),
            );
        }
        CallInfo {
            model: str_at(response, "model").or(model).map(str::to_string),
            usage: usage.filter(|u| u.is_object()).map(litellm_usage),
            ended_at: extra.get("timestamp").and_then(scalar_text),
            source: Some(SourcePos {
                line: location.line.unwrap_or(0) as u32,
                record: location.record.unwrap_or(0) as u32,
            }),
            ..CallInfo::default()
        }
    });
    b.push_message(message, info);
}
