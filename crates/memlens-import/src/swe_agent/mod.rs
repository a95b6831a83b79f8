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
//! **Without function calling** (SWE-agent 0.x, and 1.x with a `thought_action` or XML parser)
//! the model writes its command in its reply (the last ```` ``` ```` block, or `<command>`
//! tags) and the output comes back as a `user` message. The history says which is which: an
//! assistant item with an `action` and no `tool_calls` (`message_type: "action"` in 1.x) issued
//! that action; the user item right after it (`message_type: "observation"` in 1.x; 0.x appends
//! nothing else there: its format-error requeries are never written to the history) is its
//! output. The block becomes a tool call `action-<step>` (the step's index in `trajectory`,
//! which the queries resend under the same id) and the output its result
//! ([`text_actions`]). Demonstrations are prompt text, not actions of the run: they stay as
//! they are. A query whose history processor rewrote an old output (`Old environment output:
//! (N lines omitted)`) resends it as a user message: the pair keeps the output as first sent.
//!
//! mini-swe-agent: [`mini`].

mod mini;
mod text_actions;

pub use mini::MiniSweAgent;

use crate::document::Document;
use crate::error::{ImportError, Location};
use crate::json::{array_at, scalar_text, str_at};
use crate::openai::parse_message;
use crate::{Context, Importer};
use memlens_core::builder::{CallInfo, Message, Part, Role, TraceBuilder};
use memlens_core::{Category, SourcePos, Trace};
use serde_json::Value;
use text_actions::{Action, Linked, Said};

/// The SWE-agent `.traj` importer.
pub struct SweAgent;

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
        let linked = linked_messages(history, 0, location, cx);
        text_actions::push_all(&mut b, linked, |_| None);
        push_steps_missing_from_history(&mut b, steps, history, location, cx);
        b.reconstruct_calls();
    } else {
        cx.warn(location, "no \"history\" and no step \"query\": calls rebuilt from the steps' responses and observations");
        let mut messages = Vec::with_capacity(steps.len() * 2);
        let mut said = Vec::with_capacity(steps.len() * 2);
        for (i, step) in steps.iter().enumerate() {
            let response = str_at(step, "response")
                .or_else(|| str_at(step, "thought"))
                .unwrap_or_default();
            let at = str_at(step, "action")
                .and_then(|action| text_actions::locate(response, action))
                .map(|(start, end)| Action {
                    part: 0,
                    start,
                    end,
                });
            said.push(at.map_or(Said::Other, |at| Said::Action(format!("action-{i}"), at)));
            messages.push(Message::text("assistant", response));
            said.push(Said::Observation);
            messages.push(Message::text(
                "user",
                str_at(step, "observation").unwrap_or_default(),
            ));
        }
        text_actions::push_all(&mut b, text_actions::link(messages, &said), |_| None);
        b.reconstruct_calls();
    }
    cx.finish(b, location)
}

/// An assistant item that is one of the run's steps: not a demonstration, nor the rejected
/// reply a format-error requery resends (`message_type: "assistant"`).
fn is_step(m: &Value) -> bool {
    str_at(m, "role") == Some("assistant")
        && !is_demo(m)
        && match str_at(m, "message_type") {
            Some(kind) => kind == "action",
            None => m.get("action").is_some(),
        }
}

/// A user item with an environment's output: an observation (1.x marks it; 0.x marks nothing,
/// and writes no user item but the task and the observations).
fn is_observation(m: &Value) -> bool {
    str_at(m, "role") == Some("user")
        && !is_demo(m)
        && str_at(m, "message_type").is_none_or(|kind| kind == "observation")
}

/// Where the action a step wrote in its text sits (the last text part holding it); `None` for
/// a native tool call, or an action its text does not show.
fn text_action_of(m: &Value, message: &Message) -> Option<Action> {
    if array_at(m, "tool_calls").is_some_and(|c| !c.is_empty()) {
        return None;
    }
    let action = str_at(m, "action")?;
    message
        .parts
        .iter()
        .enumerate()
        .rev()
        .find_map(|(part, p)| match p {
            Part::Text(text) => {
                text_actions::locate(text, action).map(|(start, end)| Action { part, start, end })
            }
            _ => None,
        })
}

/// Parses items (history or a query) and links their text actions with their outputs; the
/// first step among them is step `first_step` of the run (its action is `action-<step>`).
fn linked_messages(
    items: &[Value],
    first_step: usize,
    location: Location,
    cx: &mut Context<'_>,
) -> Vec<Linked> {
    let mut step = first_step;
    let mut messages = Vec::with_capacity(items.len());
    let mut said = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Some(message) = swe_message(item, i, location, cx) else {
            continue;
        };
        said.push(if is_step(item) {
            step += 1;
            text_action_of(item, &message).map_or(Said::Other, |at| {
                Said::Action(format!("action-{}", step - 1), at)
            })
        } else if is_observation(item) {
            Said::Observation
        } else {
            Said::Other
        });
        messages.push(message);
    }
    text_actions::link(messages, &said)
}

/// Interns a query's messages as [`TraceBuilder::intern_messages`] does, marking text actions.
fn intern_linked(b: &mut TraceBuilder, linked: &[Linked]) -> Vec<memlens_core::ChunkId> {
    let mut occurrences: std::collections::HashMap<u64, usize> = Default::default();
    let mut input = Vec::new();
    for l in linked {
        let n = occurrences.entry(l.message.identity_hash()).or_insert(0);
        let ids = b.intern_message(&l.message, *n);
        text_actions::mark(b, l.text_action, &ids);
        input.extend(ids);
        *n += 1;
    }
    input
}

/// An output whose action already has a result of other text: a history processor rewrote it
/// for this query (`Old environment output: (N lines omitted)`). It is sent as the user message
/// it is; the pair keeps the output as first sent (one result per call).
fn demote_rewritten_outputs(b: &TraceBuilder, linked: &mut [Linked]) {
    for l in linked.iter_mut().filter(|l| l.text_result) {
        let Some(Part::ToolResult { id, content, .. }) = l.message.parts.first() else {
            continue;
        };
        let first = b.trace().tool_pairs.iter().find(|p| &p.id == id);
        let first = first.and_then(|p| p.result).and_then(|r| b.chunk(r));
        if first.is_some_and(|c| &c.content != content) {
            l.message.parts = vec![Part::Text(content.clone())];
            l.text_result = false;
        }
    }
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
        let mut input = linked_messages(query, 0, location, cx);
        demote_rewritten_outputs(b, &mut input);
        // The query holds every step before this one: this one's action is the next.
        let ordinal = query.iter().filter(|m| is_step(m)).count();
        let output = found
            .and_then(|m| linked_messages(std::slice::from_ref(m), ordinal, location, cx).pop())
            .unwrap_or_else(|| {
                cx.warn(location, format!("step {i}: no assistant message for it in \"history\": its output is the step's response"));
                let text = str_at(step, "response").or_else(|| str_at(step, "thought"));
                Linked::plain(Message::text("assistant", text.unwrap_or_default()))
            });
        let input_ids = intern_linked(b, &input);
        // The response is a new occurrence: the next query resends it.
        let hash = output.message.identity_hash();
        let occurrence = input
            .iter()
            .filter(|l| l.message.identity_hash() == hash)
            .count();
        let output_ids = b.intern_message(&output.message, occurrence);
        text_actions::mark(b, output.text_action, &output_ids);
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
