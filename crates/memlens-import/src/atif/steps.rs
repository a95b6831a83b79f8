//! The steps of one ATIF trajectory: messages, calls, observations, compactions, subagent
//! references. See the module docs of [`super`].

use super::{unrecorded, Reader};
use crate::error::source_pos;
use crate::json::{array_at, as_u64, describe, str_at, type_name, u64_at};
use memlens_core::builder::{CallInfo, CompactionInfo, Message, Part, Role, TraceBuilder};
use memlens_core::model::TOOL_DEFINITIONS_KIND;
use memlens_core::report::UNRECORDED_ATTRIBUTE;
use memlens_core::{Category, ChunkId, Usage};
use serde_json::Value;

/// The message Terminus-2 writes on the system step of a context summarization.
const SUMMARIZATION_MARKER: &str = "Performed context summarization";

/// A reference to an embedded subagent trajectory, from an observation result.
pub(super) struct SubRef {
    /// The step it is on (`step 4`), for warnings.
    pub step: String,
    /// The embedded trajectory's `trajectory_id`.
    pub trajectory_id: String,
    /// The tool call whose result it is.
    pub tool_call_id: Option<String>,
}

/// What a finished trajectory hands back: its builder and the embedded subagents it referenced.
pub(super) struct Finished {
    pub builder: TraceBuilder,
    pub embedded: Vec<SubRef>,
}

/// One trajectory while its steps are read.
pub(super) struct State {
    b: TraceBuilder,
    id: String,
    model: Option<String>,
    /// The chunks in the context now, in order (what a replacing compaction takes out).
    context: Vec<ChunkId>,
    /// The chunks of the first conversation message (Terminus-2 keeps it through a summary).
    first_message: Option<Vec<ChunkId>>,
    /// The next user step is the summary of a compaction just recorded.
    pending_summary: bool,
    has_system: bool,
    summarizations: usize,
    multi_call_steps: usize,
    ignored_metrics: usize,
    cost_usd: Option<f64>,
    embedded: Vec<SubRef>,
    files: Vec<String>,
    /// Per subagent (its `trajectory_id` or `session_id`), the tool call that started it.
    agent_calls: Vec<(String, String)>,
}

impl State {
    pub(super) fn new(b: TraceBuilder, id: String, model: Option<String>) -> State {
        State {
            b,
            id,
            model,
            context: Vec::new(),
            first_message: None,
            pending_summary: false,
            has_system: false,
            summarizations: 0,
            multi_call_steps: 0,
            ignored_metrics: 0,
            cost_usd: None,
            embedded: Vec::new(),
            files: Vec::new(),
            agent_calls: Vec::new(),
        }
    }

    /// Appends a context message (not a call's output).
    pub(super) fn push(&mut self, message: Message) -> Vec<ChunkId> {
        self.push_with(message, None)
    }

    fn push_with(&mut self, message: Message, call: Option<CallInfo>) -> Vec<ChunkId> {
        let tools = message.parts.iter().any(
            |p| matches!(p, Part::Other { kind, .. } if kind.as_str() == TOOL_DEFINITIONS_KIND),
        );
        let ids = self.b.push_message(message, call);
        if !tools && self.first_message.is_none() {
            self.first_message = Some(ids.clone());
        }
        self.context.extend(&ids);
        ids
    }

    /// Reads step `index` of the `steps` array.
    pub(super) fn step(&mut self, r: &mut Reader<'_, '_>, step: &Value, index: usize) {
        let label = match step.get("step_id").and_then(as_u64) {
            Some(n) => format!("step {n}"),
            None => format!("step {} (by position)", index + 1),
        };
        if !step.is_object() {
            r.warn(format!(
                "{label} skipped: expected a step object, found {}",
                type_name(step)
            ));
            return;
        }
        let source = str_at(step, "source");
        if source != Some("agent") && step.get("metrics").is_some_and(|m| !m.is_null()) {
            r.warn(format!(
                "{label}: \"metrics\" on a {} step ignored (only agent steps are calls)",
                source.unwrap_or("sourceless")
            ));
        }
        match source {
            Some("agent") => self.agent_step(r, step, &label),
            Some("user") => self.user_step(r, step, &label),
            Some("system") => self.system_step(r, step, &label),
            Some(other) => {
                r.warn(format!(
                    "{label}: unknown step source {other:?}: kept as context, not a call"
                ));
                let parts = content_parts(r, step.get("message"), &label);
                let mut unknown = message(other, parts, step);
                // Even `assistant`: only agent steps are calls.
                unknown.role = Some(Role::Other(other.to_string()));
                self.push(unknown);
                self.observation(r, step, &label, &[]);
            }
            None => r.warn(format!(
                "{label} skipped: expected a \"source\" (system, user or agent), found {}",
                step.get("source").map_or("none", type_name)
            )),
        }
    }

    fn user_step(&mut self, r: &mut Reader<'_, '_>, step: &Value, label: &str) {
        let parts = content_parts(r, step.get("message"), label);
        let mut message = message("user", parts, step);
        if std::mem::take(&mut self.pending_summary) {
            message.category = Some(Category::Summary);
        }
        self.push(message);
        self.observation(r, step, label, &[]);
    }

    fn system_step(&mut self, r: &mut Reader<'_, '_>, step: &Value, label: &str) {
        let managed = step
            .get("extra")
            .and_then(|e| e.get("context_management"))
            .filter(|c| c.is_object());
        if let Some(cm) = managed {
            match str_at(cm, "boundary") {
                Some("replace") => return self.replacing_compaction(r, step, label),
                Some("append") => {}
                Some(other) => r.warn(format!(
                    "{label}: context_management boundary {other:?} does not say which steps \
                     left the context: the context is kept whole"
                )),
                None => r.warn(format!(
                    "{label}: context_management without a \"boundary\": read as \"append\""
                )),
            }
        } else if is_summarization(step) {
            return self.summarization(r, step, label);
        }
        self.has_system = true;
        let parts = content_parts(r, step.get("message"), label);
        if !parts.is_empty() {
            self.push(message("system", parts, step));
        }
        self.observation(r, step, label, &[]);
    }

    fn agent_step(&mut self, r: &mut Reader<'_, '_>, step: &Value, label: &str) {
        // A summary is the user step right after a compaction; a call in between means none.
        self.pending_summary = false;
        let mut parts = Vec::new();
        if let Some(reasoning) = str_at(step, "reasoning_content").filter(|s| !s.is_empty()) {
            parts.push(Part::Reasoning(reasoning.to_string()));
        }
        parts.extend(content_parts(r, step.get("message"), label));
        let calls = tool_calls(r, step, label);
        parts.extend(calls.iter().map(|(id, name, arguments)| Part::ToolCall {
            id: id.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
        }));
        let copied = step.get("is_copied_context").and_then(Value::as_bool) == Some(true);
        let llm_calls = step.get("llm_call_count").and_then(as_u64);
        let metrics = step.get("metrics").filter(|m| !m.is_null());
        let mut message = message("assistant", parts, step);
        let call = if copied || llm_calls == Some(0) {
            // Context this trajectory did not produce: an assistant turn, not a call.
            message.role = Some(Role::Other("agent".into()));
            message.category = Some(Category::Assistant);
            message.meta.kind = Some(
                if copied {
                    "copied_context"
                } else {
                    "no_llm_call"
                }
                .into(),
            );
            self.ignored_metrics += usize::from(metrics.is_some());
            None
        } else {
            if llm_calls.is_some_and(|n| n > 1) {
                self.multi_call_steps += 1;
            }
            let usage = metrics.and_then(|m| self.metrics(r, m, label));
            Some(CallInfo {
                model: str_at(step, "model_name")
                    .map(str::to_string)
                    .or_else(|| self.model.clone()),
                usage,
                source: Some(source_pos(r.location)),
                ..CallInfo::default()
            })
        };
        self.push_with(message, call);
        let names: Vec<(String, String)> = calls.into_iter().map(|(i, n, _)| (i, n)).collect();
        self.observation(r, step, label, &names);
    }

    /// A step's metrics as the call's usage; its `cost_usd` is summed for the trace.
    fn metrics(&mut self, r: &mut Reader<'_, '_>, m: &Value, label: &str) -> Option<Usage> {
        if !m.is_object() {
            r.warn(format!(
                "{label}: \"metrics\" is {}, expected an object: ignored",
                type_name(m)
            ));
            return None;
        }
        if let Some(cost) = m.get("cost_usd").and_then(Value::as_f64) {
            *self.cost_usd.get_or_insert(0.0) += cost;
        }
        let extra = m.get("extra").unwrap_or(&Value::Null);
        Some(Usage {
            input_tokens: u64_at(m, "prompt_tokens"),
            output_tokens: u64_at(m, "completion_tokens"),
            cache_read_tokens: u64_at(m, "cached_tokens"),
            cache_write_tokens: u64_at(extra, "cache_creation_input_tokens"),
            reasoning_tokens: u64_at(extra, "reasoning_tokens"),
        })
    }

    /// The step's observation results: tool results, then the rest as one user message.
    fn observation(
        &mut self,
        r: &mut Reader<'_, '_>,
        step: &Value,
        label: &str,
        calls: &[(String, String)],
    ) {
        let Some(observation) = step.get("observation").filter(|o| !o.is_null()) else {
            return;
        };
        let Some(results) = array_at(observation, "results") else {
            r.warn(format!(
                "{label}: \"observation\" has no \"results\" list ({}): ignored",
                describe(observation)
            ));
            return;
        };
        let mut loose = Vec::new();
        for (j, result) in results.iter().enumerate() {
            if !result.is_object() {
                r.warn(format!(
                    "{label}: observation result {j} skipped: expected an object, found {}",
                    type_name(result)
                ));
                continue;
            }
            let call_id = str_at(result, "source_call_id").filter(|s| !s.is_empty());
            self.subagent_refs(r, result, call_id, label);
            let parts = content_parts(r, result.get("content"), label);
            let Some(id) = call_id else {
                loose.extend(parts);
                continue;
            };
            let name = calls.iter().find(|(c, _)| c == id).map(|(_, n)| n.clone());
            if name.is_none() {
                r.warn(format!(
                    "{label}: observation result {j} answers tool call {id:?}, which is not \
                     among the step's tool calls"
                ));
            }
            self.push(Message {
                role: Some(Role::Tool),
                role_name: "tool".into(),
                parts: vec![Part::ToolResult {
                    id: id.to_string(),
                    name,
                    content: Part::joined_text(parts),
                }],
                ..message("tool", Vec::new(), step)
            });
        }
        if !loose.is_empty() {
            let mut observed = message("user", loose, step);
            if std::mem::take(&mut self.pending_summary) {
                observed.category = Some(Category::Summary);
            } else {
                observed.meta.kind = Some("observation".into());
            }
            self.push(observed);
        }
    }

    /// Records a result's subagent references: embedded ones to import after this trajectory,
    /// files in the `subagent_files` attribute.
    fn subagent_refs(
        &mut self,
        r: &mut Reader<'_, '_>,
        result: &Value,
        call_id: Option<&str>,
        label: &str,
    ) {
        let Some(refs) = result
            .get("subagent_trajectory_ref")
            .filter(|v| !v.is_null())
        else {
            return;
        };
        let Some(refs) = refs.as_array() else {
            r.warn(format!(
                "{label}: \"subagent_trajectory_ref\" is {}, expected an array: ignored",
                type_name(refs)
            ));
            return;
        };
        for reference in refs {
            let path = str_at(reference, "trajectory_path").filter(|p| !p.is_empty());
            let trajectory = str_at(reference, "trajectory_id");
            match (path, trajectory) {
                (Some(path), _) => {
                    if !self.files.iter().any(|f| f == path) {
                        self.files.push(path.to_string());
                    }
                    // The subagent's own file knows itself by this name (its `agent_id`).
                    let key = trajectory.or_else(|| str_at(reference, "session_id"));
                    if let (Some(key), Some(call)) = (key, call_id) {
                        self.agent_calls.push((key.to_string(), call.to_string()));
                    }
                }
                (None, Some(id)) => self.embedded.push(SubRef {
                    step: label.to_string(),
                    trajectory_id: id.to_string(),
                    tool_call_id: call_id.map(str::to_string),
                }),
                (None, None) => r.warn(format!(
                    "{label}: subagent reference without \"trajectory_id\" or \
                     \"trajectory_path\" cannot be resolved: ignored"
                )),
            }
        }
    }

    /// A v1.7 `context_management` step with `boundary: "replace"`: the context is its
    /// observation content (the summary) and what follows.
    fn replacing_compaction(&mut self, r: &mut Reader<'_, '_>, step: &Value, label: &str) {
        let kept = |c: &memlens_core::Chunk| c.meta.kind.as_deref() == Some(TOOL_DEFINITIONS_KIND);
        let replaced = self.take_context(|c| !kept(c), None);
        self.b.push_compaction(CompactionInfo {
            timestamp: str_at(step, "timestamp").map(str::to_string),
            replaced: Some(replaced),
            source: Some(source_pos(r.location)),
            ..CompactionInfo::default()
        });
        self.pending_summary = true;
        self.observation(r, step, label, &[]);
        if std::mem::take(&mut self.pending_summary) {
            r.warn(format!(
                "{label}: context replaced with no observation content: no summary recorded"
            ));
        }
    }

    /// Terminus-2's summarization: only the first prompt stays; the handoff prompt (the next
    /// user step) carries the summary.
    fn summarization(&mut self, r: &mut Reader<'_, '_>, step: &Value, label: &str) {
        let first = self.first_message.clone().unwrap_or_default();
        let replaced = self.take_context(
            |c| c.meta.kind.as_deref() != Some(TOOL_DEFINITIONS_KIND),
            Some(&first),
        );
        self.b.push_compaction(CompactionInfo {
            timestamp: str_at(step, "timestamp").map(str::to_string),
            replaced: Some(replaced),
            source: Some(source_pos(r.location)),
            ..CompactionInfo::default()
        });
        self.summarizations += 1;
        self.observation(r, step, label, &[]);
        self.pending_summary = true;
    }

    /// Takes the chunks `leaves` out of the context (except `keep`) and returns them.
    fn take_context(
        &mut self,
        leaves: impl Fn(&memlens_core::Chunk) -> bool,
        keep: Option<&[ChunkId]>,
    ) -> Vec<ChunkId> {
        let (out, stay): (Vec<ChunkId>, Vec<ChunkId>) = std::mem::take(&mut self.context)
            .into_iter()
            .partition(|&id| {
                !keep.is_some_and(|k| k.contains(&id)) && self.b.chunk(id).is_some_and(&leaves)
            });
        self.context = stay;
        out
    }

    /// Builds the calls and the trace's attributes; warns of what was not counted.
    pub(super) fn finish_into(mut self, r: &mut Reader<'_, '_>, has_tools: bool) -> Finished {
        self.b.reconstruct_calls();
        if let Some(missing) = unrecorded(self.has_system, has_tools, self.summarizations) {
            self.b.attribute(UNRECORDED_ATTRIBUTE, missing);
        }
        if let Some(cost) = self.cost_usd {
            // Summed floats: rounded to the nanodollar so the figure reads as written.
            self.b.attribute(
                "reported_cost_usd",
                ((cost * 1e9).round() / 1e9).to_string(),
            );
        }
        if !self.files.is_empty() {
            self.b.attribute("subagent_files", self.files.join(", "));
        }
        for (agent, call) in &self.agent_calls {
            self.b
                .attribute(&format!("agent_tool_call.{agent}"), call.clone());
        }
        if self.summarizations > 0 {
            self.b
                .attribute("summarizations", self.summarizations.to_string());
        }
        let id = &self.id;
        if self.multi_call_steps > 0 {
            r.warn(format!(
                "trace {id}: {} agent step(s) stand for several LLM calls (llm_call_count > 1): \
                 each is one call here, with the step's summed metrics",
                self.multi_call_steps
            ));
        }
        if self.ignored_metrics > 0 {
            r.warn(format!(
                "trace {id}: metrics of {} copied or non-LLM agent step(s) not counted (the \
                 calls were made in the trajectory they were copied from, or not at all)",
                self.ignored_metrics
            ));
        }
        Finished {
            builder: self.b,
            embedded: self.embedded,
        }
    }
}

/// A Terminus-2 summarization step: its marker message, or references to its summary files.
fn is_summarization(step: &Value) -> bool {
    if str_at(step, "message").is_some_and(|m| m.starts_with(SUMMARIZATION_MARKER)) {
        return true;
    }
    let refs = step
        .pointer("/observation/results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| array_at(r, "subagent_trajectory_ref"))
        .flatten();
    refs.filter_map(|r| str_at(r, "trajectory_path"))
        .any(|p| p.contains("trajectory.summarization-"))
}

/// A message of the step with these parts and the step's timestamp.
fn message(role: &str, parts: Vec<Part>, step: &Value) -> Message {
    let mut m = Message {
        role: Some(Role::parse(role)),
        role_name: role.to_string(),
        parts,
        ..Message::default()
    };
    m.meta.timestamp = str_at(step, "timestamp").map(str::to_string);
    m
}

/// A `message` or `content`: a string, or content parts (text, image, audio).
fn content_parts(r: &mut Reader<'_, '_>, v: Option<&Value>, label: &str) -> Vec<Part> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) if s.is_empty() => Vec::new(),
        Some(Value::String(s)) => vec![Part::Text(s.clone())],
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| content_part(r, item, label))
            .collect(),
        Some(other) => {
            r.warn(format!(
                "{label}: content is {}, expected a string or content parts: kept as JSON text",
                type_name(other)
            ));
            vec![Part::Text(other.to_string())]
        }
    }
}

fn content_part(r: &mut Reader<'_, '_>, item: &Value, label: &str) -> Part {
    match str_at(item, "type") {
        Some("text") => Part::Text(str_at(item, "text").unwrap_or_default().to_string()),
        Some(kind @ ("image" | "audio")) => {
            // The file itself is stored beside the trajectory: the path is what is known.
            let path = item
                .get("source")
                .and_then(|s| str_at(s, "path"))
                .unwrap_or("?");
            Part::Other {
                kind: kind.to_string(),
                text: format!("[{kind}: {path}]"),
            }
        }
        other => {
            r.warn(format!(
                "{label}: unknown content part type {:?}: kept as its JSON text",
                other.unwrap_or("(none)")
            ));
            Part::Other {
                kind: other.unwrap_or("unknown").to_string(),
                text: item.to_string(),
            }
        }
    }
}

/// A step's tool calls: id, function name, arguments as JSON text.
fn tool_calls(r: &mut Reader<'_, '_>, step: &Value, label: &str) -> Vec<(String, String, String)> {
    let Some(calls) = step.get("tool_calls").filter(|c| !c.is_null()) else {
        return Vec::new();
    };
    let Some(calls) = calls.as_array() else {
        r.warn(format!(
            "{label}: \"tool_calls\" is {}, expected an array: ignored",
            type_name(calls)
        ));
        return Vec::new();
    };
    let mut out = Vec::with_capacity(calls.len());
    for (j, call) in calls.iter().enumerate() {
        let name = str_at(call, "function_name");
        let Some(name) = name.filter(|_| call.is_object()) else {
            r.warn(format!(
                "{label}: tool call {j} skipped: expected an object with a \"function_name\", \
                 found {}",
                describe(call)
            ));
            continue;
        };
        let id = match str_at(call, "tool_call_id").filter(|s| !s.is_empty()) {
            Some(id) => id.to_string(),
            None => {
                let id = format!("{}-call-{j}", label.replace(' ', "-"));
                r.warn(format!(
                    "{label}: tool call {j} has no \"tool_call_id\": named {id:?}"
                ));
                id
            }
        };
        let arguments = match call.get("arguments") {
            None | Some(Value::Null) => "{}".to_string(),
            // Producers that kept the API's JSON text: the text is what the model wrote.
            Some(Value::String(text)) => text.clone(),
            Some(args) => args.to_string(),
        };
        out.push((id, name.to_string(), arguments));
    }
    out
}
