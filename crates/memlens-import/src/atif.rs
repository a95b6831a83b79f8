//! ATIF, the Agent Trajectory Interchange Format: the `trajectory.json` files Harbor writes for
//! every agent of a run (Terminal-Bench among them), which tracing platforms import too.
//!
//! ```json
//! {"schema_version": "ATIF-v1.6", "session_id": "1f0c..", "trajectory_id": "..",
//!  "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": "openai/gpt-5",
//!            "tool_definitions": [{"type": "function", "function": {..}}], "extra": {..}},
//!  "steps": [
//!   {"step_id": 1, "source": "system", "message": "You are .."},
//!   {"step_id": 2, "source": "user", "message": "Fix the failing test."},
//!   {"step_id": 3, "source": "agent", "model_name": "gpt-5", "message": "Running it.",
//!    "reasoning_content": "..", "llm_call_count": 1, "is_copied_context": false,
//!    "tool_calls": [{"tool_call_id": "call_1", "function_name": "bash", "arguments": {..}}],
//!    "observation": {"results": [{"source_call_id": "call_1", "content": "1 failed",
//!                                 "subagent_trajectory_ref": [{"trajectory_id": "..",
//!                                   "trajectory_path": null, "session_id": ".."}]}]},
//!    "metrics": {"prompt_tokens": 520, "completion_tokens": 80, "cached_tokens": 200,
//!                "cost_usd": 0.00045, "extra": {"reasoning_tokens": 12}}}],
//!  "final_metrics": {"total_prompt_tokens": 520, ..}, "continued_trajectory_ref": null,
//!  "subagent_trajectories": [{..an embedded trajectory..}]}
//! ```
//!
//! - **Calls**: every `agent` step is one LLM call whose input is every step before it (the
//!   steps are the conversation); its output is its reasoning, message and tool calls; its
//!   `metrics` are the call's usage (`prompt_tokens` includes `cached_tokens`, as here;
//!   `extra.reasoning_tokens` and `extra.cache_creation_input_tokens` when given), their
//!   `cost_usd` summed in the attribute `reported_cost_usd`, `final_metrics` kept as attributes.
//!   An agent step with `llm_call_count: 0` (a deterministic dispatch) or `is_copied_context`
//!   (copied from the trajectory that made the call) is context, not a call; one with
//!   `llm_call_count` above 1 is one call holding several calls' metrics (a warning). The
//!   step's `model_name` is the call's model, else `agent.model_name`.
//! - **Observations** come after their step: a result naming a `source_call_id` is that tool
//!   call's result; results without one (Terminus-2 sends the terminal output back as the next
//!   prompt) are one user message of kind `observation`. `system` steps are system messages,
//!   `user` steps user messages; message content parts other than text (images, audio) are kept
//!   as their path.
//! - **Subagents** are traces of their own whose [`memlens_core::TraceLink`] names the parent
//!   and the tool call whose result referenced them. Embedded ones (`subagent_trajectories`,
//!   matched by `trajectory_id`) are `<parent>/<trajectory_id>`. A referenced file
//!   (`trajectory_path`) is imported on its own, with [`crate::import_many`]: the parent lists
//!   it in the attribute `subagent_files` and records the tool call per subagent
//!   (`agent_tool_call.<id>`); the subagent names its parent only as Terminus-2 writes it,
//!   `agent.extra.parent_session_id`.
//! - **Compactions**: a system step with `extra.context_management.boundary: "replace"` (v1.7)
//!   replaces the whole context with its observation content (the summary). Terminus-2's
//!   summarization (a system step "Performed context summarization..." referencing the
//!   `trajectory.summarization-N-{summary,questions,answers}.json` subagents it writes beside
//!   the run) keeps only the first prompt, then sends the question prompt and questions (in the
//!   questions file, not this one) and the handoff prompt, the next user step (the summary).
//! - **Continuations**: a trajectory split by Terminus-2's linear-history mode
//!   (`continued_trajectory_ref`, `trajectory.cont-N.json`) is one trace per file; the copied
//!   steps at the start of a continuation are its context.
//! - **Not recorded**: a trajectory without a system step or `agent.tool_definitions` may still
//!   have sent them: the attribute `unrecorded` says so. Token ids and logprobs (RL data, not
//!   context) are left out, as are `notes` and `extra` fields other than those named here.
//!
//! Sources: the RFC, `docs/rfcs/0001-trajectory-format.md` of harbor-framework/harbor
//! (laude-institute/harbor), v1.7 (`llm_call_count`, `trajectory_id`, `subagent_trajectories`,
//! section VII "Context Management Convention"); its Pydantic models,
//! `src/harbor/models/trajectories/*.py`; Terminus-2, `src/harbor/agents/terminus_2/
//! terminus_2.py` (`_summarize`, `_save_subagent_trajectory`, `_split_trajectory_on_summarization`:
//! the summarization files and `continued_trajectory_ref`); Harbor's golden trajectories as
//! copied into Arize-ai/phoenix (`packages/phoenix-client/tests/client/helpers/atif/fixtures/`).

use crate::document::Document;
use crate::error::{ImportError, Location};
use crate::json::{array_at, describe, scalar_text, str_at, type_name};
use crate::{Context, Importer};
use memlens_core::builder::{Message, Part, Role, TraceBuilder};
use memlens_core::model::TOOL_DEFINITIONS_KIND;
use memlens_core::{Trace, TraceLink};
use serde_json::Value;

mod steps;

/// The ATIF importer.
pub struct Atif;

const FORMAT: &str = "atif";

/// Embedded subagents nest; deeper than this they are not imported (a warning).
const MAX_DEPTH: usize = 16;

fn is_atif(v: &Value) -> bool {
    if str_at(v, "schema_version").is_some_and(|s| s.starts_with("ATIF")) {
        return true;
    }
    // Without the marker: the agent object and a first step with its id and source.
    let first_step = array_at(v, "steps").and_then(|s| s.first());
    v.get("agent").is_some_and(|a| str_at(a, "name").is_some())
        && first_step.is_some_and(|s| {
            s.get("step_id").is_some()
                && matches!(str_at(s, "source"), Some("system" | "user" | "agent"))
        })
}

impl Importer for Atif {
    fn name(&self) -> &'static str {
        FORMAT
    }

    fn description(&self) -> &'static str {
        "ATIF trajectories (Harbor, Terminal-Bench): agent steps as calls with their metrics, \
         subagents, summarizations"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_atif(first)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let mut traces = Vec::new();
        let mut first_error = None;
        for item in doc.into_records() {
            let Some((location, record)) = cx.accept(item) else {
                continue;
            };
            if let Err(why) = check_trajectory(&record) {
                // One unusable trajectory among good ones is skipped; alone, it is the error.
                cx.warn(location, format!("skipped: {why}"));
                first_error.get_or_insert((location, why));
                continue;
            }
            let n = traces.len();
            let id = trajectory_id(&record).unwrap_or_else(|| format!("{FORMAT}-{n}"));
            let mut reader = Reader {
                cx: &mut *cx,
                location,
                traces: &mut traces,
            };
            let parent = parent_named_by(&record).map(|trace| TraceLink {
                trace,
                ..TraceLink::default()
            });
            reader.trajectory(&record, id, parent, 0);
        }
        if traces.is_empty() {
            if let Some((location, why)) = first_error {
                return Err(cx.invalid(location, why));
            }
        }
        // Embedded subagents name the tool call that started them: link them now.
        crate::link_traces(&mut traces.iter_mut().collect::<Vec<_>>());
        Ok(traces)
    }
}

/// Why a record is not a usable trajectory.
fn check_trajectory(record: &Value) -> Result<(), String> {
    if !record.is_object() {
        return Err(format!(
            "expected an ATIF trajectory object, found {}",
            type_name(record)
        ));
    }
    match record.get("steps") {
        Some(Value::Array(_)) => Ok(()),
        Some(other) => Err(format!(
            "expected \"steps\" to be an array of step objects, found {}",
            type_name(other)
        )),
        None => Err(format!(
            "expected an ATIF trajectory with a \"steps\" array, found {}",
            describe(record)
        )),
    }
}

/// The id of a trajectory document: `trajectory_id` (per document), else `session_id` (per run).
fn trajectory_id(t: &Value) -> Option<String> {
    ["trajectory_id", "session_id"]
        .iter()
        .find_map(|k| str_at(t, k).filter(|s| !s.is_empty()))
        .map(str::to_string)
}

/// The parent a subagent's own file names: Terminus-2 writes `agent.extra.parent_session_id`.
fn parent_named_by(t: &Value) -> Option<String> {
    let agent_extra = t.get("agent").and_then(|a| a.get("extra"));
    [agent_extra, t.get("extra")]
        .into_iter()
        .flatten()
        .find_map(|extra| str_at(extra, "parent_session_id"))
        .map(str::to_string)
}

/// Reads trajectories into traces: each one, then its embedded subagents.
struct Reader<'r, 'c> {
    cx: &'r mut Context<'c>,
    location: Location,
    traces: &'r mut Vec<Trace>,
}

impl Reader<'_, '_> {
    fn warn(&mut self, message: impl Into<String>) {
        self.cx.warn(self.location, message);
    }

    /// Imports one trajectory as trace `id`, then its embedded subagents.
    fn trajectory(&mut self, t: &Value, id: String, parent: Option<TraceLink>, depth: usize) {
        let agent = t.get("agent").unwrap_or(&Value::Null);
        let model = str_at(agent, "model_name").map(str::to_string);
        let mut b = TraceBuilder::new(id.clone(), FORMAT);
        b.set_model(model.clone());
        self.attributes(&mut b, t, &id);
        let tools = tool_definitions(agent);
        let mut state = steps::State::new(b, id.clone(), model);
        if let Some(tools) = tools {
            state.push(tools);
        }
        let steps = array_at(t, "steps").map(Vec::as_slice).unwrap_or_default();
        for (i, step) in steps.iter().enumerate() {
            state.step(self, step, i);
        }
        let has_tools = agent.get("tool_definitions").is_some_and(|d| !d.is_null());
        let refs = state.finish_into(self, has_tools);
        let mut trace = self.cx.finish(refs.builder, self.location);
        trace.parent = parent;
        if trace.parent.is_some() {
            // The parent records the tool call that started this subagent under this name.
            trace
                .attributes
                .insert("agent_id".into(), agent_key(t, &id));
        }
        self.traces.push(trace);
        self.embedded(t, &id, &refs.embedded, depth);
    }

    fn attributes(&mut self, b: &mut TraceBuilder, t: &Value, id: &str) {
        let agent = t.get("agent").unwrap_or(&Value::Null);
        let extra = agent.get("extra").unwrap_or(&Value::Null);
        let metrics = t.get("final_metrics").unwrap_or(&Value::Null);
        for (key, value) in [
            ("agent", agent.get("name")),
            ("agent_version", agent.get("version")),
            ("schema_version", t.get("schema_version")),
            (
                "continued_trajectory_ref",
                t.get("continued_trajectory_ref"),
            ),
            ("continuation_index", extra.get("continuation_index")),
            ("summarization_index", extra.get("summarization_index")),
            ("total_prompt_tokens", metrics.get("total_prompt_tokens")),
            (
                "total_completion_tokens",
                metrics.get("total_completion_tokens"),
            ),
            ("total_cached_tokens", metrics.get("total_cached_tokens")),
            ("total_cost_usd", metrics.get("total_cost_usd")),
            ("total_steps", metrics.get("total_steps")),
        ] {
            if let Some(v) = value.and_then(scalar_text) {
                b.attribute(key, v);
            }
        }
        if let Some(session) = str_at(t, "session_id").filter(|s| *s != id) {
            b.attribute("session_id", session);
        }
    }

    /// Imports the embedded subagents, linked to the tool call whose result referenced them.
    fn embedded(&mut self, t: &Value, parent: &str, refs: &[steps::SubRef], depth: usize) {
        let Some(subs) = t.get("subagent_trajectories").filter(|s| !s.is_null()) else {
            for r in refs {
                self.warn(format!(
                    "{}: subagent reference {:?} matches no embedded trajectory (the \
                     trajectory has no \"subagent_trajectories\"): not imported",
                    r.step, r.trajectory_id
                ));
            }
            return;
        };
        let Some(subs) = subs.as_array() else {
            self.warn(format!(
                "\"subagent_trajectories\" is {}, expected an array: not imported",
                type_name(subs)
            ));
            return;
        };
        if depth + 1 >= MAX_DEPTH {
            self.warn(format!(
                "{} subagent trajectories nested deeper than {MAX_DEPTH} levels: not imported",
                subs.len()
            ));
            return;
        }
        for r in refs {
            let found = subs
                .iter()
                .any(|s| str_at(s, "trajectory_id") == Some(r.trajectory_id.as_str()));
            if !found {
                self.warn(format!(
                    "{}: subagent reference {:?} matches no embedded trajectory: not imported",
                    r.step, r.trajectory_id
                ));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for (i, sub) in subs.iter().enumerate() {
            if let Err(why) = check_trajectory(sub) {
                self.warn(format!("embedded subagent {i} skipped: {why}"));
                continue;
            }
            let mut key = str_at(sub, "trajectory_id")
                .map_or_else(|| format!("subagent-{i}"), str::to_string);
            if !seen.insert(key.clone()) {
                // Trace ids must stay unique: the second is told apart by its position.
                self.warn(format!(
                    "embedded subagent {i}: trajectory_id {key:?} is not unique: imported as \
                     \"{key}-{i}\", linked to no reference"
                ));
                key = format!("{key}-{i}");
            }
            let tool_call_id = refs
                .iter()
                .find(|r| r.trajectory_id == key)
                .and_then(|r| r.tool_call_id.clone());
            let link = TraceLink {
                trace: parent.to_string(),
                tool_call_id,
                ..TraceLink::default()
            };
            self.trajectory(sub, format!("{parent}/{key}"), Some(link), depth + 1);
        }
    }
}

/// The name a parent knows a subagent by: its `trajectory_id`, else its `session_id`.
fn agent_key(t: &Value, id: &str) -> String {
    trajectory_id(t).unwrap_or_else(|| id.to_string())
}

/// `agent.tool_definitions` as the tool definitions sent with every call.
fn tool_definitions(agent: &Value) -> Option<Message> {
    let tools = array_at(agent, "tool_definitions").filter(|t| !t.is_empty())?;
    Some(Message {
        role: Some(Role::Other("tools".into())),
        role_name: "tools".into(),
        parts: vec![Part::Other {
            kind: TOOL_DEFINITIONS_KIND.into(),
            text: Value::Array(tools.clone()).to_string(),
        }],
        unframed: true,
        ..Message::default()
    })
}

/// What a trajectory leaves out that its calls were sent, for the `unrecorded` attribute.
fn unrecorded(has_system: bool, has_tools: bool, summarizations: usize) -> Option<String> {
    let mut missing = Vec::new();
    if !has_system {
        missing.push("the system prompt, if any (the trajectory has no system step)");
    }
    if !has_tools {
        missing.push("tool definitions, if any (no agent.tool_definitions)");
    }
    if summarizations > 0 {
        missing.push(
            "after a summarization, the question prompt and the questions asked (in the \
             trajectory.summarization-N-questions.json subagent file)",
        );
    }
    (!missing.is_empty()).then(|| missing.join("; "))
}
