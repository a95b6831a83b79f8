//! Adding a message: its chunks, and what the host knows of it beyond the object: when it was
//! added (a timestamp), how long a tool took to produce its result (the latency), and whether it
//! states a preference of the user. Rules by wall-clock time (`max_age_seconds`, a value
//! half-life in seconds) and the generation-cost factor read these from the chunks, as they read
//! what the importers record in a trace: a live pool and a replay of its trace decide alike.

use super::timestamp::format_timestamp;
use super::{Pool, PoolError, StoredMessage};
use memlens_core::builder::{CallInfo, Part, Role};
use memlens_core::tokens::count_chunk;
use memlens_core::{Category, Chunk};
use memlens_import::live;
use memlens_import::ImportError;
use serde_json::Value;
use std::collections::HashMap;

/// What the host knows of a message beyond its object: the options of every binding's `add`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AddOptions {
    /// When the message was added, in seconds since the Unix epoch: the caller's time, else the
    /// host's clock (the npm and Python packages pass theirs: the pool reads no clock). `None`:
    /// not known, and rules by wall-clock time pass the message by, as a replay does a trace
    /// without timestamps.
    pub timestamp: Option<f64>,
    /// Milliseconds the message's tool results took to produce. When not given, the time from
    /// the message that made the tool call to this one (both timestamps known).
    pub latency_ms: Option<f64>,
    /// The message states a preference of the user: its text parts are category `preference`,
    /// which protection rules name (the default policy protects it). Not for system prompts.
    pub preference: bool,
}

/// When the tool calls still waiting for their results were made, and the newest time added.
#[derive(Debug, Default)]
pub(super) struct Times {
    /// Tool call id -> seconds since the epoch of the message that made it, until its result.
    open_calls: HashMap<String, f64>,
    /// The newest timestamp added: "now" for wall-clock ages, as the engine takes it.
    pub(super) latest: Option<f64>,
}

impl Times {
    /// Records a chunk of a message added at `time` (seconds, read back from its timestamp):
    /// a tool call's time, a tool result's latency (`given`, else measured from its call).
    /// Returns a warning when the measure makes no sense.
    fn on_chunk(
        &mut self,
        chunk: &mut Chunk,
        time: Option<f64>,
        given: Option<f64>,
    ) -> Option<String> {
        let id = chunk.meta.tool_call_id.as_ref()?;
        match chunk.category {
            Category::ToolCall => {
                if let Some(t) = time {
                    self.open_calls.insert(id.clone(), t);
                }
                None
            }
            Category::ToolResult => {
                let called = self.open_calls.remove(id);
                let measured = time.zip(called).map(|(t, c)| (t - c) * 1000.0);
                if given.is_none() && measured.is_some_and(|ms| ms < 0.0) {
                    return Some(format!(
                        "tool result {id:?} is timestamped before its call: latency unknown"
                    ));
                }
                // Microseconds: what is below is the noise of subtracting two epoch times.
                chunk.meta.latency_ms = given.or(measured.map(|ms| (ms * 1000.0).round() / 1000.0));
                None
            }
            _ => None,
        }
    }
}

impl Pool {
    /// Adds one message; returns its chunk ids. An assistant message added after `context()`
    /// is recorded as that call's output (for `export`). Without a timestamp: see
    /// [`Pool::add_with`].
    pub fn add(&mut self, value: Value) -> Result<Vec<u32>, PoolError> {
        self.add_with(value, AddOptions::default())
    }

    /// [`Pool::add`] with what the host knows of the message beyond its object (see
    /// [`AddOptions`]). A refused message or option leaves the pool as it was.
    pub fn add_with(&mut self, value: Value, options: AddOptions) -> Result<Vec<u32>, PoolError> {
        let mut parsed = live::parse_message(&value, self.options.dialect).map_err(|e| {
            PoolError::Message(match e {
                ImportError::Invalid { message, .. } => message,
                other => other.to_string(),
            })
        })?;
        let time = options.timestamp.map(format_timestamp).transpose()?;
        if let Some(ms) = options
            .latency_ms
            .filter(|ms| !(ms.is_finite() && *ms >= 0.0))
        {
            return Err(PoolError::Options(format!(
                "a latency must be a finite number of milliseconds, at least 0; got {ms}"
            )));
        }
        let index = self.messages.len() as u32;
        if options.preference {
            if Role::parse(&parsed.message.role_name) == Role::System {
                return Err(PoolError::Options(
                    "`preference` marks a user's or an assistant's message: a system prompt is always kept".into(),
                ));
            }
            if !parsed
                .message
                .parts
                .iter()
                .any(|p| matches!(p, Part::Text(_)))
            {
                self.warn(format!(
                    "message {index}: marked as a preference, but it has no text to mark"
                ));
            }
            parsed.message.category = Some(Category::Preference);
        }
        let time_secs = time.as_ref().map(|(_, secs)| *secs);
        if let Some(t) = time_secs {
            self.times.latest = Some(self.times.latest.map_or(t, |l| l.max(t)));
        }
        parsed.message.meta.timestamp = time.map(|(text, _)| text);
        for w in parsed.warnings {
            self.warn(format!("message {index}: {w}"));
        }
        let is_assistant = parsed.message.role_name == "assistant";
        let before = self.builder.warnings().len();
        let ids = self.builder.push_message(parsed.message, None);
        let new_warnings: Vec<String> = self.builder.warnings()[before..].to_vec();
        for w in new_warnings {
            self.warn(format!("message {index}: {w}"));
        }
        let mut results = 0;
        for &id in &ids {
            let Some(chunk) = self.builder.chunk_mut(id) else {
                continue;
            };
            results += usize::from(chunk.category == Category::ToolResult);
            let timing = self.times.on_chunk(chunk, time_secs, options.latency_ms);
            count_chunk(chunk, &self.counter);
            self.pool_tokens += u64::from(chunk.tokens);
            self.chunk_message.push(index);
            if let Some(chunk) = self.builder.chunk(id) {
                self.engine.add(chunk);
            }
            if let Some(w) = timing {
                self.warn(format!("message {index}: {w}"));
            }
        }
        if options.latency_ms.is_some() && results == 0 {
            self.warn(format!(
                "message {index}: a latency was given, but it has no tool result: ignored"
            ));
        }
        if is_assistant {
            if let Some(call) = self.pending.take() {
                self.builder.push_call(
                    call.input,
                    ids.clone(),
                    CallInfo {
                        model: self.options.model.clone(),
                        usage: call.usage,
                        ..CallInfo::default()
                    },
                );
            }
        }
        if !self.options.keep_history {
            self.released.push(0);
        }
        let categories = ids
            .iter()
            .map(|&id| {
                self.builder
                    .chunk(id)
                    .map_or(Category::Other, |c| c.category)
            })
            .collect();
        self.message_parts.push(ids.len() as u32);
        self.messages.push(Some(Box::new(StoredMessage {
            categories,
            slots: parsed.slots,
            value,
            dialect: parsed.dialect,
            chunks: ids.clone(),
        })));
        self.stats.messages += 1;
        self.stats.chunks += ids.len() as u32;
        Ok(ids.iter().map(|c| c.0).collect())
    }
}
