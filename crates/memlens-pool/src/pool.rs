//! The live memory pool behind the npm package's `MemoryPool`: messages in (as the agent holds
//! them), the context to send out, with the policy engine of the core deciding. Pure Rust on
//! `serde_json` values, so it is tested natively; `lib.rs` only converts to and from JavaScript.

use crate::render::{self, PartState, Slot};
use memlens_core::builder::TraceBuilder;
use memlens_core::cost::{CacheModel, ModelPrice, PriceTable};
use memlens_core::policy::{
    validate::{self, Violation},
    ContextEntry, Decision, Engine, EngineOptions, EntryForm, PolicyConfig, PolicyError,
    StrategyKind,
};
use memlens_core::tokens::{self, Encoding, EncodingChoice, TokenCounter, REPLY_PRIMING_TOKENS};
use memlens_core::value::{ChunkValue, Label};
use memlens_core::{Category, ChunkId, Usage};
use memlens_import::live::Dialect;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// What can go wrong; each becomes a JavaScript `Error` with this message.
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

/// One element of a rendered context.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Rendered {
    /// The message the agent added, unchanged (its index in `add` order).
    Original {
        /// Message index.
        message: u32,
    },
    /// That message with some parts compressed or removed.
    Patched {
        /// Message index.
        message: u32,
        /// The patched object (shared with the pool's render cache: a message sent with the same
        /// parts compressed as in the previous context is not patched again).
        value: Arc<Value>,
    },
    /// A summary the host must produce with its summarizer: of these messages, in this many
    /// tokens at most (the policy's model of it).
    Summary {
        /// Messages it stands for.
        covers: Vec<u32>,
        /// Tokens the policy planned for it.
        tokens: u32,
    },
}

/// The context for the next call.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolContext {
    /// What to send, in order. Shared with the pool, which extends the list in place at the
    /// next context when that one only appends (most contexts under budget): a host that still
    /// holds it then makes the pool copy it.
    pub items: Arc<Vec<Rendered>>,
    /// How many leading `items` are the latest context's, unchanged: this context extended
    /// that one (0 when rendered afresh). A host that keeps the latest list it built can keep
    /// that part and convert only the rest.
    pub extends: usize,
    /// Input tokens of the context (reply priming included; planned summary sizes included).
    pub tokens: u64,
    /// Tokens if everything were sent.
    pub full_tokens: u64,
    /// True when even the policy's best is above the budget (protected content alone is over it).
    pub over_budget: bool,
    /// Chunks compressed, evicted (first dropped), retrieved at this call.
    pub compressed: Vec<u32>,
    /// Chunks dropped at this call.
    pub evicted: Vec<u32>,
    /// Chunks brought back from the archive at this call.
    pub retrieved: Vec<u32>,
    /// Messages released since the previous context (a pool that does not keep its history):
    /// no later context refers to them, so the host can let its own copies go.
    pub released_messages: Vec<u32>,
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

/// The explanation of one chunk.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The chunk.
    pub chunk: u32,
    /// The message it belongs to (index in `add` order).
    pub message: u32,
    /// Its category.
    pub category: Category,
    /// Its tokens.
    pub tokens: u32,
    /// In the latest context: `kept`, `compressed`, `retrieved`, `dropped`, or `pending` (added
    /// after the latest context).
    pub status: &'static str,
    /// Why, in a sentence.
    pub reason: String,
    /// Its value now, with the factors and their explanations.
    pub value: ChunkValue,
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

    /// Decides the context for the next call (the newest user message is the query unless
    /// `query` is given).
    pub fn context(&mut self, query: Option<&str>) -> PoolContext {
        if self.options.keep_history {
            self.decisions
                .push((self.chunk_message.len() as u32, query.map(str::to_string)));
        }
        // The latest decision is handed back to the engine, which extends it in place when
        // this context only appends to it; its sizes are kept for the cache's prefix.
        let mut previous = self.last.take().filter(|_| self.last_is_engines);
        let prev_len = previous.as_ref().map_or(0, |p| p.entries.len());
        let (d, extended) = match previous.as_mut() {
            Some(p) => self.engine.context_after(query, p),
            None => (self.engine.context(query), false),
        };
        self.last_is_engines = true;
        self.decided_chunks = self.chunk_message.len() as u32;
        let mut input: Vec<ChunkId> = Vec::with_capacity(d.entries.len());
        input.extend(d.chunk_ids());
        self.pending = Some(PendingCall { input, usage: None });
        let (items, extends) = self.render(&d, extended.then_some(prev_len));
        self.stats.calls += 1;
        self.stats.context_tokens = d.tokens;
        self.stats.compressed = d.compressed.len() as u32;
        self.stats.over_budget_calls += u32::from(d.over_budget);
        self.stats.sent_tokens += d.tokens;
        self.stats.full_tokens += d.full_tokens;
        if let Some((price, cache)) = &self.price {
            // The prefix shared with the previous context (entry by entry, as the simulator
            // compares them: all of it when this one extends it); keeping everything, the
            // previous context is the prefix.
            let (prefix, full_prefix) = match &previous {
                Some(prev) => (
                    if extended {
                        prev.tokens.saturating_sub(u64::from(REPLY_PRIMING_TOKENS))
                    } else {
                        d.entries
                            .iter()
                            .zip(&prev.entries)
                            .take_while(|(a, b)| (a.chunk, a.tokens) == (b.chunk, b.tokens))
                            .map(|(a, _)| u64::from(a.tokens))
                            .sum::<u64>()
                    },
                    prev.full_tokens
                        .saturating_sub(u64::from(REPLY_PRIMING_TOKENS)),
                ),
                None => (0, 0),
            };
            let cached = |p: u64| cache.map_or(0, |m| m.cached_tokens(p));
            if let Some(c) = self.stats.est_input_cost_usd.as_mut() {
                *c += price.input_usd(d.tokens, cached(prefix)).unwrap_or(0.0);
            }
            if let Some(c) = self.stats.full_input_cost_usd.as_mut() {
                *c += price
                    .input_usd(d.full_tokens, cached(full_prefix))
                    .unwrap_or(0.0);
            }
        }
        self.dropped.extend(d.evicted.iter().copied());
        if !self.options.keep_history {
            self.release_forgotten();
            if !self.appender.started() {
                self.drop_trace_front();
            }
        }
        self.stats.dropped = self.dropped.len() as u32 + self.dropped_forgotten;
        let ctx = PoolContext {
            items,
            extends,
            tokens: d.tokens,
            full_tokens: d.full_tokens,
            over_budget: d.over_budget,
            compressed: d.compressed.iter().map(|c| c.0).collect(),
            evicted: d.evicted.iter().map(|c| c.0).collect(),
            retrieved: d.retrieved.iter().map(|c| c.0).collect(),
            released_messages: std::mem::take(&mut self.newly_released),
        };
        self.last = Some(d);
        ctx
    }

    /// Releases the messages whose every chunk the engine has forgotten (no context will
    /// refer to them again).
    fn release_forgotten(&mut self) {
        for id in self.engine.take_forgotten() {
            if self.dropped.remove(&id) {
                self.dropped_forgotten += 1;
            }
            let m = self.chunk_message[id.index()] as usize;
            self.released[m] += 1;
            let whole = self.messages[m]
                .as_ref()
                .is_some_and(|stored| self.released[m] as usize == stored.chunks.len());
            if whole {
                self.messages[m] = None;
                self.message_parts[m] = 0;
                self.newly_released.push(m as u32);
            }
        }
    }

    /// Drops from the trace being built what no longer needs to be held (a pool that does not
    /// keep its history): what `trace_lines` has written, or, when the host never asked for
    /// trace lines, everything but the newest call (its usage may still come) and the tool
    /// calls still waiting for their results.
    fn drop_trace_front(&mut self) {
        let trace = self.builder.trace();
        if self.appender.started() {
            let (chunks, calls, pairs) = (
                self.appender.chunks_written(),
                self.appender.calls_written(),
                self.appender.pairs_written(),
            );
            self.builder.drop_front(chunks, calls, pairs);
            self.appender.dropped_front(chunks, calls, pairs);
        } else {
            let (chunks, calls) = (trace.chunks.len(), trace.calls.len().saturating_sub(1));
            if chunks + calls > 0 {
                self.released_unwritten = true;
            }
            self.builder.drop_front(chunks, calls, 0);
            self.builder.drop_complete_pairs();
        }
    }

    /// The invariants the latest context broke, checked independently of the engine
    /// (`policy::validate::check` against every message added before it): always empty for
    /// MemLens' own policies; the incumbents replay their libraries, violations included.
    pub fn violations(&self) -> Vec<Violation> {
        let Some(d) = &self.last else {
            return Vec::new();
        };
        if !self.options.keep_history {
            // What was released is out of every context for good: the chunks the engine
            // holds are what the invariants are about.
            let held: std::collections::HashMap<ChunkId, &memlens_core::Chunk> = self
                .engine
                .held_chunks()
                .filter(|c| c.id.0 < self.decided_chunks)
                .map(|c| (c.id, c))
                .collect();
            let full: Vec<ChunkId> = self
                .engine
                .held_chunks()
                .map(|c| c.id)
                .filter(|id| held.contains_key(id))
                .collect();
            // Every chunk of the latest decision is held: compaction, the only place the engine
            // forgets, runs in the same `context` call and keeps what that context sent.
            return validate::check(|id| held[&id], &full, d);
        }
        let chunks = &self.builder.trace().chunks;
        let decided = chunks.len().min(self.decided_chunks as usize);
        let full: Vec<ChunkId> = chunks[..decided].iter().map(|c| c.id).collect();
        // Pool chunk ids are indices into the builder's chunks (see `add`).
        validate::check(|id| &chunks[id.index()], &full, d)
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

    /// The context's rendering, kept in `self.rendered`. `extends`: the number of leading
    /// entries the decision shares with the latest one (it extended that one), whose rendering
    /// is kept and extended with the rest's. Returns it with the number of its leading elements
    /// kept from the latest (0 when rendered afresh).
    fn render(&mut self, d: &Decision, extends: Option<usize>) -> (Arc<Vec<Rendered>>, usize) {
        let mut rendered = std::mem::take(&mut self.rendered);
        // The kept part must end where a message ends: chunks of one message arrive together,
        // so new entries start a new message, but a rendering is only extended when it shows.
        let message_of = |e: &ContextEntry| e.chunk.map(|c| self.chunk_message[c.0 as usize]);
        let extends = extends.filter(|&k| {
            k == 0
                || d.entries.get(k).is_none_or(|next| {
                    message_of(next).is_none() || message_of(next) != message_of(&d.entries[k - 1])
                })
        });
        let kept = match extends {
            Some(k) => {
                // New messages have no patches of their own in the latest context.
                let mut none = std::collections::HashMap::new();
                let list = Arc::make_mut(&mut rendered);
                let kept = list.len();
                self.render_entries(&d.entries[k..], &mut none, list);
                kept
            }
            None => {
                // At most one element per entry (a message's entries make one).
                let mut list = Vec::with_capacity(d.entries.len());
                let mut previous = std::mem::take(&mut self.patched);
                self.render_entries(&d.entries, &mut previous, &mut list);
                rendered = Arc::new(list);
                0
            }
        };
        self.rendered = Arc::clone(&rendered);
        (rendered, kept)
    }

    /// Renders `entries` (whole messages' runs) onto `out`.
    fn render_entries(
        &mut self,
        entries: &[ContextEntry],
        previous: &mut std::collections::HashMap<u32, (Vec<PartState>, Arc<Value>)>,
        out: &mut Vec<Rendered>,
    ) {
        let mut i = 0;
        while i < entries.len() {
            let entry = &entries[i];
            let Some(chunk) = entry.chunk else {
                if let EntryForm::Summary { covers } = &entry.form {
                    let mut messages: Vec<u32> = covers
                        .iter()
                        .filter_map(|c| self.chunk_message.get(c.0 as usize).copied())
                        .collect();
                    messages.dedup();
                    out.push(Rendered::Summary {
                        covers: messages,
                        tokens: entry.tokens,
                    });
                }
                i += 1;
                continue;
            };
            let message = self.chunk_message[chunk.0 as usize];
            // The run of entries from this message.
            let mut j = i;
            while j < entries.len()
                && entries[j]
                    .chunk
                    .is_some_and(|c| self.chunk_message[c.0 as usize] == message)
            {
                j += 1;
            }
            out.extend(self.render_message(message, &entries[i..j], previous));
            i = j;
        }
    }

    /// One message as the context sends it. A patched message is taken from `previous` (the
    /// latest context's patches) when its part states are the same, and kept in `self.patched`
    /// for the next context.
    fn render_message(
        &mut self,
        message: u32,
        entries: &[ContextEntry],
        previous: &mut std::collections::HashMap<u32, (Vec<PartState>, Arc<Value>)>,
    ) -> Option<Rendered> {
        // The common case, without allocating or reading the stored message: every chunk of a
        // held message sent as it was (a released message has no parts, so never matches).
        if self.message_parts.get(message as usize) == Some(&(entries.len() as u32))
            && entries.iter().all(|e| {
                e.text.is_none() && matches!(e.form, EntryForm::Original | EntryForm::Retrieved)
            })
        {
            return Some(Rendered::Original { message });
        }
        let stored = self.messages.get(message as usize)?.as_deref()?;
        let states: Vec<PartState> = stored
            .chunks
            .iter()
            .map(|&c| match entries.iter().find(|e| e.chunk == Some(c)) {
                None => PartState::Drop,
                Some(e) => match (&e.form, &e.text) {
                    // Compressed, or retrieved from the archive in its compressed form.
                    (EntryForm::Compressed { .. } | EntryForm::Retrieved, Some(text)) => {
                        PartState::Replace(text.clone())
                    }
                    _ => PartState::Keep,
                },
            })
            .collect();
        if states.iter().all(|s| *s == PartState::Keep) {
            return Some(Rendered::Original { message });
        }
        let value = match previous.remove(&message) {
            Some((before, value)) if before == states => value,
            _ => {
                let tool_calls: Vec<bool> = stored
                    .categories
                    .iter()
                    .map(|&c| c == Category::ToolCall)
                    .collect();
                Arc::new(render::patch(
                    &stored.value,
                    stored.dialect,
                    &stored.slots,
                    &states,
                    &tool_calls,
                )?)
            }
        };
        self.patched.insert(message, (states, Arc::clone(&value)));
        Some(Rendered::Patched { message, value })
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

    /// Why a chunk is (not) in the latest context, with its value factors.
    pub fn explain(&mut self, chunk: u32) -> Result<Explanation, PoolError> {
        let id = self.known(chunk)?;
        let (category, tokens) = match self.builder.chunk(id).or_else(|| self.engine.chunk(id)) {
            Some(c) => (c.category, c.tokens),
            None => return Err(PoolError::Released(chunk)),
        };
        let query = self.newest_user_text();
        let now = self.engine.calls();
        let now_secs = self.times.latest;
        let ve = self.engine.value_engine();
        let relevance = query.as_deref().map_or(0.0, |q| {
            ve.relevance(q, &[id]).first().copied().unwrap_or(0.0)
        });
        let value = ve.score(id, now, now_secs, relevance);
        let entry = self
            .last
            .as_ref()
            .and_then(|d| d.entries.iter().find(|e| e.chunk == Some(id)));
        // Chunks added after the latest decision have higher ids than every chunk it saw.
        let decided = self.last.is_some() && id.0 < self.decided_chunks;
        let (status, reason) = match (entry.map(|e| &e.form), decided) {
            (_, false) => ("pending", "added after the latest context was decided".to_string()),
            (Some(EntryForm::Compressed { kind }), _) => (
                "compressed",
                format!("sent compressed ({kind:?}) to fit the budget"),
            ),
            (Some(EntryForm::Retrieved), _) => (
                "retrieved",
                "brought back from the archive: relevant to the current query".to_string(),
            ),
            (Some(_), _) => ("kept", keep_reason(category, &value)),
            (None, _) => (
                "dropped",
                format!(
                    "dropped by the {} policy under a budget of {} tokens (value {:.2}, {:.2} per 1k tokens)",
                    self.options.policy.name, self.options.budget, value.value, value.value_per_1k_tokens
                ),
            ),
        };
        Ok(Explanation {
            chunk,
            message: self.chunk_message[id.0 as usize],
            category,
            tokens,
            status,
            reason,
            value,
        })
    }

    fn newest_user_text(&self) -> Option<String> {
        if !self.options.keep_history {
            return self.engine.newest_user_text();
        }
        self.builder
            .trace()
            .chunks
            .iter()
            .rev()
            .find(|c| c.category == Category::User)
            .map(|c| c.content.clone())
    }

    /// Running totals.
    pub fn stats(&self) -> PoolStats {
        let mut s = self.stats.clone();
        s.pool_tokens = self.pool_tokens + u64::from(tokens::REPLY_PRIMING_TOKENS);
        s.warnings = self.warnings.clone();
        s
    }

    /// The run so far in the native MemLens format (JSON Lines), loadable in the web app.
    /// Refused when the pool does not keep its history.
    pub fn export(&self) -> Result<String, PoolError> {
        if !self.options.keep_history {
            return Err(PoolError::HistoryNotKept(
                "export",
                ": write the run as it goes with trace lines (traceFile / trace_file)",
            ));
        }
        let trace = self.builder.trace().clone();
        Ok(memlens_import::native::write(std::slice::from_ref(&trace)))
    }

    /// The native-format lines of the run that earlier calls did not return: appended to a
    /// file as the agent runs, they make a file that `memlens inspect` or the web app reads at
    /// any point. The newest call is held back until the next one (its usage may still be
    /// reported), and tool pairs until they are complete; `finish` returns the rest. The
    /// concatenation of every result, the last with `finish`, imports as [`Pool::export`] does.
    ///
    /// Without `keep_history`, ask for them from the start (before the first context): a pool
    /// that released chunks before any trace line was asked for refuses, as its trace can no
    /// longer be written whole.
    pub fn trace_lines(&mut self, finish: bool) -> Result<String, PoolError> {
        if self.released_unwritten {
            return Err(PoolError::HistoryNotKept(
                "trace_lines (asked for after chunks were released unwritten)",
                ": ask for trace lines from the start (traceFile / trace_file)",
            ));
        }
        let lines = self.appender.lines(self.builder.trace(), finish);
        if !self.options.keep_history {
            self.drop_trace_front();
        }
        Ok(lines)
    }
}

fn keep_reason(category: Category, value: &ChunkValue) -> String {
    match category {
        Category::System => "kept: the system prompt is always kept".to_string(),
        _ if value.factors.pinned >= 1.0 => "kept: pinned (labelled important or protected)".into(),
        _ => format!(
            "kept: fits the budget at value {:.2} ({:.2} per 1k tokens)",
            value.value, value.value_per_1k_tokens
        ),
    }
}

mod add;
mod timestamp;

pub use add::AddOptions;
pub use timestamp::parse_timestamp;

#[cfg(test)]
mod tests;
