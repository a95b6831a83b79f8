//! The live memory pool behind the npm package's `MemoryPool` and the Python package's pool:
//! messages in (as the agent holds them), the context to send out, with the policy engine of the
//! core deciding. Pure Rust on `serde_json` values, so it is tested natively; the bindings
//! (`memlens-wasm`, `memlens-py`) only convert to and from JavaScript and Python.
//!
//! This file holds the pool's state, options and statistics, and what the host tells it besides
//! messages (labels, values, usage, another policy). Adding a message is `add.rs`; deciding and
//! rendering a context, `context.rs`; writing the run out and letting go of it, `history.rs`;
//! explaining a chunk and checking a context's invariants, `explain.rs`.

use crate::render::{PartState, Slot};
use memlens_core::builder::TraceBuilder;
use memlens_core::cost::{CacheModel, ModelPrice, PriceTable};
use memlens_core::policy::{
    Decision, Engine, EngineOptions, PolicyConfig, PolicyError, StrategyKind,
};
use memlens_core::tokens::{self, Encoding, EncodingChoice, TokenCounter};
use memlens_core::value::Label;
use memlens_core::{Category, ChunkId, Usage};
use memlens_import::live::Dialect;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

mod add;
mod context;
mod explain;
mod history;
mod timestamp;

pub use add::AddOptions;
pub use context::{PoolContext, Rendered};
pub use explain::Explanation;
pub use timestamp::parse_timestamp;

/// What can go wrong; each becomes a JavaScript `Error` (npm) or a Python exception with this
/// message.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// A message object MemLens cannot read.
    #[error("invalid message: {0}")]
    Message(String),
    /// An invalid or unknown policy.
    #[error("{0}")]
    Policy(#[from] PolicyError),
    /// A model name neither tiktoken nor the price table knows.
    #[error("unknown model {0:?}: use an OpenAI model name (exact counts), a model of the price table (estimated counts, e.g. \"claude-sonnet-4-5\"), or an encoding name (\"o200k_base\", \"cl100k_base\")")]
    UnknownModel(String),
    /// The policy summarizes but no summarizer was given.
    #[error("policy {0:?} summarizes old messages: pass a `summarizer` callback (MemLens never fakes a summary)")]
    NeedsSummarizer(String),
    /// A chunk id that was never returned by `add`.
    #[error("unknown chunk id {0}")]
    UnknownChunk(u32),
    /// Options that make no sense.
    #[error("invalid options: {0}")]
    Options(String),
    /// A label other than `important` / `useless`.
    #[error("unknown label {0:?}: expected \"important\", \"useless\" or none")]
    Label(String),
    /// A policy given as something that is not a policy (a number, a boolean, an array).
    #[error("invalid policy: {0}")]
    PolicyValue(String),
    /// `export`, `set_policy` or `trace_lines` on a pool that does not keep its history.
    #[error("{0} needs the pool's whole history, and this pool does not keep it (keep_history / keepHistory is off): what its policy gave up is released{1}")]
    HistoryNotKept(&'static str, &'static str),
    /// `explain` of a chunk a pool that does not keep its history has released.
    #[error("chunk {0} was released: its policy gave it up for good and this pool does not keep its history")]
    Released(u32),
    /// A policy that needs the future of the run (the hindsight oracle) asked for live.
    #[error("policy {0:?} reads which later steps use each chunk: it exists only for replays of a recorded trace (memlens simulate / compare, the web simulator), not for a live pool")]
    NeedsHindsight(String),
    /// A timestamp the pool cannot read or write (see [`AddOptions::timestamp`]).
    #[error("invalid timestamp: {0}")]
    Timestamp(String),
}

/// The built-in price table, parsed once: `countTokens` with a priced model checks it per call.
pub fn prices() -> &'static PriceTable {
    static PRICES: std::sync::OnceLock<PriceTable> = std::sync::OnceLock::new();
    PRICES.get_or_init(PriceTable::builtin)
}

/// How the pool counts tokens for a model.
pub fn counter_for(model: Option<&str>) -> Result<TokenCounter, PoolError> {
    let Some(model) = model else {
        return Ok(TokenCounter::for_model(None));
    };
    let exact = |encoding| {
        TokenCounter::new(EncodingChoice {
            encoding,
            estimated: false,
        })
    };
    match model {
        "o200k_base" => return Ok(exact(Encoding::O200kBase)),
        "cl100k_base" => return Ok(exact(Encoding::Cl100kBase)),
        _ => {}
    }
    let choice = tokens::encoding_for_model(Some(model));
    if choice.estimated && prices().lookup(model).is_none() {
        return Err(PoolError::UnknownModel(model.to_string()));
    }
    Ok(TokenCounter::new(choice))
}

/// Options of a pool.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// Model name (tokenizer and prices); `None` counts with o200k, marked estimated.
    pub model: Option<String>,
    /// Token budget of the context.
    pub budget: u32,
    /// The policy.
    pub policy: PolicyConfig,
    /// True when the host can summarize (the summary action is available only then).
    pub summarizer: bool,
    /// The message shape, when the host knows it (else detected per message).
    pub dialect: Option<Dialect>,
    /// Keep the whole run (the default): [`Pool::export`], [`Pool::set_policy`] (which replays
    /// the run) and [`Pool::trace_lines`] at any point need it, and memory grows with every
    /// message. `false`: what the policy has given up for good is released once
    /// [`Pool::trace_lines`] has returned it (a host that writes a trace file), or at once when
    /// the host never asked for trace lines, so memory follows the context and the archive;
    /// `export` and `set_policy` are then refused. See [`Engine::forget_dropped`].
    pub keep_history: bool,
}

struct StoredMessage {
    value: Value,
    dialect: Dialect,
    chunks: Vec<ChunkId>,
    /// The category of each chunk (a patch needs to know which are tool calls).
    categories: Vec<Category>,
    slots: Vec<Slot>,
}

/// Running totals.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolStats {
    /// Policy name.
    pub policy: String,
    /// Budget.
    pub budget: u32,
    /// Model, when given.
    pub model: Option<String>,
    /// Encoding used for counts.
    pub encoding: &'static str,
    /// True when counts are estimates (not an OpenAI model).
    pub tokens_estimated: bool,
    /// Messages added.
    pub messages: u32,
    /// Chunks (message parts) added.
    pub chunks: u32,
    /// Tokens of everything added (what keeping everything would send, plus reply priming).
    pub pool_tokens: u64,
    /// Tokens of the latest context.
    pub context_tokens: u64,
    /// Contexts decided so far.
    pub calls: u32,
    /// Chunks the policy has dropped so far (each counted once).
    pub dropped: u32,
    /// Compressions applied in the latest context.
    pub compressed: u32,
    /// Calls whose context was over the budget.
    pub over_budget_calls: u32,
    /// Input tokens sent over all decided contexts.
    pub sent_tokens: u64,
    /// Input tokens keeping everything would have sent over the same calls.
    pub full_tokens: u64,
    /// Estimated input cost of the contexts sent, USD (`None`: unpriced model), prompt-cache
    /// aware as the simulator is: the prefix shared with the previous context is priced at the
    /// cache-read rate where the provider caches automatically (OpenAI).
    pub est_input_cost_usd: Option<f64>,
    /// Estimated input cost of keeping everything over the same calls, USD (cache-aware too:
    /// keeping everything, each context extends the previous one).
    pub full_input_cost_usd: Option<f64>,
    /// Input tokens the provider reported (`recordUsage`), summed.
    pub reported_input_tokens: u64,
    /// Output tokens the provider reported, summed.
    pub reported_output_tokens: u64,
    /// Warnings while reading messages (e.g. a tool result with no call before it).
    pub warnings: Vec<String>,
}

/// What a pool holds now: how its memory is made up (see `keep_history`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Held {
    /// Messages held (a message is released once its policy gave up every part of it).
    pub messages: usize,
    /// Chunk records of the trace being built still held (written ones go).
    pub trace_chunks: usize,
    /// Call records of the trace being built still held.
    pub trace_calls: usize,
    /// Chunks the policy engine holds (context, archive, and what may come back).
    pub engine_chunks: usize,
    /// Chunks the value engine holds.
    pub value_entries: usize,
}

struct PendingCall {
    input: Vec<ChunkId>,
    usage: Option<Usage>,
}

/// The pool. See the module docs.
pub struct Pool {
    options: PoolOptions,
    builder: TraceBuilder,
    counter: TokenCounter,
    engine: Engine,
    input_usd_per_mtok: Option<f64>,
    /// The model's prices and its provider's automatic prompt cache, when priced.
    price: Option<(ModelPrice, Option<CacheModel>)>,
    /// Every message added, by index (`None`: released, see `keep_history`).
    messages: Vec<Option<Box<StoredMessage>>>,
    /// Chunk id -> message index.
    chunk_message: Vec<u32>,
    /// Message index -> its number of chunks while held, 0 once released: rendering checks a
    /// message sent whole against it without reading the stored message (each read was a
    /// cache miss, for every message of every context).
    message_parts: Vec<u32>,
    pending: Option<PendingCall>,
    last: Option<Decision>,
    pool_tokens: u64,
    stats: PoolStats,
    dropped: std::collections::HashSet<ChunkId>,
    warnings: Vec<String>,
    /// Chunks added when the latest context was decided.
    decided_chunks: u32,
    /// Per decided context: the chunks added before it and the query it was given, so that
    /// `set_policy` can replay the run under another policy.
    decisions: Vec<(u32, Option<String>)>,
    /// Labels in the order given, with the number of contexts decided before each.
    labels: Vec<(ChunkId, Option<Label>, u32)>,
    /// Host values in the order given, likewise.
    values: Vec<(ChunkId, Option<f32>, u32)>,
    /// What [`Pool::trace_lines`] has returned so far.
    appender: memlens_import::native::NativeAppender,
    /// Without `keep_history`: per message, its chunks released so far.
    released: Vec<u32>,
    /// Without `keep_history`: records dropped before any trace line was asked for (the trace
    /// can no longer be written whole).
    released_unwritten: bool,
    /// Dropped chunks the engine has forgotten (no longer in `dropped`; still counted once in
    /// `stats.dropped`).
    dropped_forgotten: u32,
    /// Messages released since the latest context.
    newly_released: Vec<u32>,
    /// The patched messages of the latest context, by message index, with the part states
    /// they were patched with: a context that sends a message with the same states again (most
    /// do: the same old tool results stay compressed turn after turn) shares its patched object
    /// instead of cloning and patching the message again. Holds only the latest context's.
    patched: std::collections::HashMap<u32, (Vec<PartState>, Arc<Value>)>,
    /// The latest context's rendering (`PoolContext::items`), extended at the next context when
    /// the engine extends its decision.
    rendered: Arc<Vec<Rendered>>,
    /// Whether `last` is the latest decision of the engine deciding now (not of the engine a
    /// `set_policy` replaced), so the next decision may extend it.
    last_is_engines: bool,
    /// Tool calls' times (for their results' latency) and the newest time added.
    times: add::Times,
}

const MAX_WARNINGS: usize = 100;

/// A policy as a live pool runs it: one that needs hindsight is refused; without a summarizer,
/// a summarizing strategy is refused and the summary action is off (never modeled).
fn live_policy(mut policy: PolicyConfig, summarizer: bool) -> Result<PolicyConfig, PoolError> {
    if policy.strategy.needs_hindsight() {
        return Err(PoolError::NeedsHindsight(policy.name.clone()));
    }
    if !summarizer {
        if policy.strategy == StrategyKind::LettaSummarize {
            return Err(PoolError::NeedsSummarizer(policy.name.clone()));
        }
        policy.compress.summary = None;
    }
    Ok(policy)
}

impl Pool {
    /// A pool. Fails on an unknown model, an invalid policy, or a summarizing policy without a
    /// summarizer.
    pub fn new(mut options: PoolOptions) -> Result<Pool, PoolError> {
        if options.budget == 0 {
            return Err(PoolError::Options(
                "budget must be a positive number of tokens".into(),
            ));
        }
        let counter = counter_for(options.model.as_deref())?;
        if !options.keep_history && options.summarizer {
            // A summary covers messages its policy gave up, which such a pool releases.
            return Err(PoolError::Options(
                "a pool that does not keep its history cannot summarize (the summarizer would be handed released messages): keep the history, or drop the summarizer".into(),
            ));
        }
        options.policy = live_policy(options.policy, options.summarizer)?;
        let price = options
            .model
            .as_deref()
            .and_then(|m| prices().lookup(m))
            .map(|(_, p)| (p.clone(), CacheModel::for_provider(p.provider.as_deref())));
        let input_usd_per_mtok = price.as_ref().and_then(|(p, _)| p.input);
        let mut engine = Engine::new(
            options.policy.clone(),
            EngineOptions {
                budget: options.budget,
                input_usd_per_mtok,
            },
            counter,
        )?;
        if !options.keep_history {
            engine.forget_dropped();
        }
        let mut builder = TraceBuilder::new("live", "memlens");
        builder.set_model(options.model.clone());
        let stats = PoolStats {
            policy: options.policy.name.clone(),
            budget: options.budget,
            model: options.model.clone(),
            encoding: counter.choice().encoding.name(),
            tokens_estimated: counter.choice().estimated,
            est_input_cost_usd: input_usd_per_mtok.map(|_| 0.0),
            full_input_cost_usd: input_usd_per_mtok.map(|_| 0.0),
            ..PoolStats::default()
        };
        Ok(Pool {
            options,
            builder,
            counter,
            engine,
            input_usd_per_mtok,
            price,
            messages: Vec::new(),
            chunk_message: Vec::new(),
            message_parts: Vec::new(),
            pending: None,
            last: None,
            pool_tokens: 0,
            stats,
            dropped: Default::default(),
            warnings: Vec::new(),
            decided_chunks: 0,
            decisions: Vec::new(),
            labels: Vec::new(),
            values: Vec::new(),
            appender: Default::default(),
            released: Vec::new(),
            released_unwritten: false,
            dropped_forgotten: 0,
            newly_released: Vec::new(),
            patched: Default::default(),
            rendered: Arc::default(),
            last_is_engines: false,
            times: add::Times::default(),
        })
    }

    /// Switches the pool to another policy without losing its history: a new engine replays
    /// every message, label and decision point of the run so far, so the next context is the
    /// one the new policy would have decided had it been used from the start (what earlier
    /// contexts dropped can come back). Statistics of past calls stay as they were sent.
    pub fn set_policy(&mut self, policy: PolicyConfig) -> Result<(), PoolError> {
        if !self.options.keep_history {
            return Err(PoolError::HistoryNotKept(
                "set_policy (a replay of the run under the new policy)",
                "",
            ));
        }
        let policy = live_policy(policy, self.options.summarizer)?;
        let mut engine = Engine::new(
            policy.clone(),
            EngineOptions {
                budget: self.options.budget,
                input_usd_per_mtok: self.input_usd_per_mtok,
            },
            self.counter,
        )?;
        let chunks = &self.builder.trace().chunks;
        let mut added = 0usize;
        let mut labels = self.labels.iter().peekable();
        let mut values = self.values.iter().peekable();
        for (k, (n, query)) in self.decisions.iter().enumerate() {
            for c in &chunks[added..*n as usize] {
                engine.add(c);
            }
            added = *n as usize;
            while let Some((id, label, _)) = labels.next_if(|l| l.2 <= k as u32) {
                engine.label(*id, *label);
            }
            while let Some((id, value, _)) = values.next_if(|v| v.2 <= k as u32) {
                engine.set_value(*id, *value);
            }
            let _ = engine.context(query.as_deref());
        }
        for c in &chunks[added..] {
            engine.add(c);
        }
        for (id, label, _) in labels {
            engine.label(*id, *label);
        }
        for (id, value, _) in values {
            engine.set_value(*id, *value);
        }
        self.stats.policy = policy.name.clone();
        self.options.policy = policy;
        self.engine = engine;
        // The new policy's contexts are rendered afresh: no patch is shared with the old one's.
        self.patched.clear();
        self.last_is_engines = false;
        Ok(())
    }

    /// The policy engine deciding for this pool.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The token counter (its encoding follows the model).
    pub fn counter(&self) -> &TokenCounter {
        &self.counter
    }

    fn warn(&mut self, w: String) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(w);
        }
    }

    /// Does now the value work the next [`Pool::context`] would do first (see
    /// [`Engine::prepare`]): call it while the agent waits for the model. Decisions are the
    /// same whether or not it is called; only when the work is done changes.
    pub fn prepare(&mut self) {
        self.engine.prepare();
    }

    /// What the pool holds now (every record ever added, unless it does not keep its history).
    pub fn held(&self) -> Held {
        Held {
            messages: self.messages.iter().filter(|m| m.is_some()).count(),
            trace_chunks: self.builder.trace().chunks.len(),
            trace_calls: self.builder.trace().calls.len(),
            engine_chunks: self.engine.held_chunks().count(),
            value_entries: self.engine.value_entries(),
        }
    }

    /// The latest decision of the engine (chunk level), for tests and explanations.
    pub fn last_decision(&self) -> Option<&Decision> {
        self.last.as_ref()
    }

    /// Records the provider's usage of the latest call (before or after its reply is added).
    pub fn record_usage(&mut self, usage: Usage) {
        self.stats.reported_input_tokens += usage.input_tokens.unwrap_or(0);
        self.stats.reported_output_tokens += usage.output_tokens.unwrap_or(0);
        match self.pending.as_mut() {
            Some(p) => p.usage = Some(usage),
            None => {
                if let Some(call) = self.builder.last_call_mut() {
                    call.usage = Some(usage).filter(|u| !u.is_empty());
                }
            }
        }
    }

    /// Sets (or clears) the host scorer's value of a chunk, in `[0, 1]` (kept across
    /// `set_policy`).
    pub fn set_value(&mut self, chunk: u32, value: Option<f32>) -> Result<(), PoolError> {
        let id = self.known(chunk)?;
        self.engine.set_value(id, value);
        if self.options.keep_history {
            self.values.push((id, value, self.decisions.len() as u32));
        }
        Ok(())
    }

    /// Labels a chunk for the value engine (`important` also protects it).
    pub fn label(&mut self, chunk: u32, label: Option<Label>) -> Result<(), PoolError> {
        let id = self.known(chunk)?;
        self.engine.label(id, label);
        if self.options.keep_history {
            self.labels.push((id, label, self.decisions.len() as u32));
        }
        Ok(())
    }

    fn known(&self, chunk: u32) -> Result<ChunkId, PoolError> {
        if (chunk as usize) < self.chunk_message.len() {
            Ok(ChunkId(chunk))
        } else {
            Err(PoolError::UnknownChunk(chunk))
        }
    }

    /// Running totals.
    pub fn stats(&self) -> PoolStats {
        let mut s = self.stats.clone();
        s.pool_tokens = self.pool_tokens + u64::from(tokens::REPLY_PRIMING_TOKENS);
        s.warnings = self.warnings.clone();
        s
    }
}

#[cfg(test)]
mod tests;
