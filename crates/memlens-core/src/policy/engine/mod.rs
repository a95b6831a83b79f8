//! The incremental policy engine: add chunks as the agent produces them, ask for the context to
//! send before each call. The batch simulator drives the same engine over a recorded trace, so
//! live use and replay make the same decisions.
//!
//! State is kept per item (one item per chunk): active (in context, possibly compressed or
//! cleared), archived (offloaded, retrievable), dropped, or gone (the agent itself no longer sends
//! it). Items are grouped into *units* that must stay or go together: all tool calls of one
//! assistant message with all their results (parallel calls too); every other chunk is a unit of
//! its own. The bookkeeping is in `state` and `ops`, the archive in `archive`; what to give up is
//! the strategy's (`policy::strategy`, one file each).
//!
//! ```
//! use memlens_core::policy::{Engine, EngineOptions, PolicyConfig};
//! use memlens_core::tokens::TokenCounter;
//!
//! let policy = PolicyConfig::builtin("window").expect("a built-in policy");
//! let options = EngineOptions { budget: 4000, input_usd_per_mtok: None };
//! let mut engine = Engine::new(policy, options, TokenCounter::for_model(Some("gpt-4o")))
//!     .expect("window needs no hindsight");
//! let decision = engine.context(None);
//! assert!(decision.entries.is_empty());
//! ```

mod archive;
pub(crate) mod decision;
pub(crate) mod ops;
pub(crate) mod state;

pub use decision::{ContextEntry, Decision, EngineOptions, EntryForm};

use super::config::{PolicyConfig, PolicyError};
use super::strategy::{self, Hindsight, Strategy};
use crate::memo::PerChunk;
use crate::model::{Chunk, ChunkId};
use crate::tokens::TokenCounter;
use crate::value::ValueEngine;
use state::{State, Status};
use std::sync::Arc;

/// What the replays of one trace read of its chunks once and share (the fit replays every
/// training trace under every candidate policy): the reference detector's and the value engine's
/// readings of each chunk's text ([`crate::memo`]). Results are the same with or without it.
#[derive(Debug, Clone)]
pub struct TraceMemo {
    references: Arc<PerChunk<crate::references::ChunkReading>>,
    value: Arc<PerChunk<crate::value::ChunkReading>>,
}

impl TraceMemo {
    /// An empty memo for a trace of `chunks` chunks, filled by its replays.
    pub fn new(chunks: usize) -> Self {
        TraceMemo {
            references: Arc::new(PerChunk::new(chunks)),
            value: Arc::new(PerChunk::new(chunks)),
        }
    }
}

/// The policy engine. See the module docs.
#[derive(Clone)]
pub struct Engine {
    state: State,
    strategy: Arc<dyn Strategy>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("policy", &self.state.config.name)
            .field("strategy", &self.strategy)
            .field("items", &self.state.items.len())
            .field("call", &self.state.call)
            .finish()
    }
}

impl Engine {
    /// An engine for a policy, live. Fails on an invalid protection pattern, and for a policy
    /// that needs hindsight (the oracle: live there is no future to read).
    pub fn new(
        config: PolicyConfig,
        options: EngineOptions,
        counter: TokenCounter,
    ) -> Result<Engine, PolicyError> {
        Engine::build(config, options, counter, None)
    }

    /// An engine for replaying a recorded trace, given which later calls use each chunk (see
    /// `simulate::hindsight`). Every policy can be built this way; only the oracle reads it.
    pub fn with_hindsight(
        config: PolicyConfig,
        options: EngineOptions,
        counter: TokenCounter,
        hindsight: &Hindsight,
    ) -> Result<Engine, PolicyError> {
        Engine::build(config, options, counter, Some(hindsight))
    }

    fn build(
        config: PolicyConfig,
        options: EngineOptions,
        counter: TokenCounter,
        hindsight: Option<&Hindsight>,
    ) -> Result<Engine, PolicyError> {
        let strategy = strategy::for_policy(&config, hindsight)?;
        let state = State::new(config, options, counter, strategy.reads_values())?;
        Ok(Engine { state, strategy })
    }

    /// The policy.
    pub fn config(&self) -> &PolicyConfig {
        &self.state.config
    }

    /// The value engine, with every chunk added so far (for explanations). Brings it up to date
    /// first (see [`Engine::add`]).
    pub fn value_engine(&mut self) -> &ValueEngine {
        self.state.catch_up();
        &self.state.value
    }

    /// Does now the value work the next decision would do first, for a strategy that decides
    /// by values (for others, nothing: their values are worked out when something asks): the
    /// value engine's and the reference detector's analysis of the chunks added since the last
    /// ranking, and the detection of what the agent's outputs used. A live host calls it while
    /// the agent waits for the model, so that the next `context` need not (the npm package
    /// does it after every `context()`). Decisions are the same whether or not it is called.
    pub fn prepare(&mut self) {
        if self.state.reads_values {
            self.state.catch_up();
        }
    }

    /// Number of decisions made so far (the index of the next call).
    pub fn calls(&self) -> u32 {
        self.state.call
    }

    /// True when the chunk was added (and, for a forgetting engine, not forgotten).
    pub fn contains(&self, chunk: ChunkId) -> bool {
        self.state.contains(chunk)
    }

    /// The chunk's rank in arrival order, once added: a replay tells an agent that appended
    /// to what it sent from one that rewrote it.
    pub(crate) fn arrival(&self, chunk: ChunkId) -> Option<u64> {
        self.state.seq_of.get(&chunk).copied()
    }

    /// Reads chunk texts through `memo`, shared with the other replays of the same trace.
    pub fn set_memo(&mut self, memo: &TraceMemo) {
        self.state.memo = Some(memo.clone());
        self.state.detector.set_memo(memo.references.clone());
        self.state.value.set_memo(memo.value.clone());
    }

    /// Counts calls from `call` on: an engine a replay starts in the middle of a trace.
    pub(crate) fn resume_at(&mut self, call: u32) {
        self.state.call = call;
    }

    /// Adds a chunk (a new memory item). Chunks of one message are added together, the first with
    /// `starts_message`. Adding a chunk id twice is ignored. Value and reference work waits until
    /// something reads values, unless the strategy decides by them.
    pub fn add(&mut self, chunk: &Chunk) {
        self.state.add(chunk);
    }

    /// Marks every added chunk that is not in `live` as gone: the agent no longer sends it (a
    /// recorded trace whose own agent trimmed its history). Used by the simulator.
    pub fn retain(&mut self, live: &[ChunkId]) {
        self.state.retain(live);
    }

    /// Labels a chunk for the value engine (and protection: important chunks are kept).
    pub fn label(&mut self, chunk: ChunkId, label: Option<crate::value::Label>) {
        self.state.label(chunk, label);
    }

    /// Sets (or clears) the host's value for a chunk (a pluggable scorer: see
    /// [`ValueEngine::set_host_value`]); strategies and rules that read values use it, and the
    /// invariants and protection still hold.
    pub fn set_value(&mut self, chunk: ChunkId, value: Option<f32>) {
        self.state.catch_up();
        self.state.value.set_host_value(chunk, value);
    }

    /// Decides the context for the next call. `query` is the current query (the newest user
    /// message when `None`).
    pub fn context(&mut self, query: Option<&str>) -> Decision {
        self.decide(query, None).0
    }

    /// [`Engine::context`] for a host that keeps the latest decision: `previous` must be the
    /// decision this engine returned last. When this call's context is that one with only the
    /// chunks added since appended (no rule changed, evicted or retrieved anything, as most
    /// calls under budget), its entries are moved out of `previous` and extended instead of
    /// listing every held chunk again, and the second value is true: the new decision's entries
    /// start with every entry `previous` had. Otherwise `previous` is left as it was, and the
    /// second value is false. Decisions are the same either way.
    pub fn context_after(
        &mut self,
        query: Option<&str>,
        previous: &mut Decision,
    ) -> (Decision, bool) {
        self.decide(query, Some(previous))
    }

    fn decide(&mut self, query: Option<&str>, previous: Option<&mut Decision>) -> (Decision, bool) {
        let s = &mut self.state;
        s.flush_outputs();
        let mut d = Decision {
            call: s.call,
            entries: Vec::new(),
            tokens: 0,
            full_tokens: 0,
            over_budget: false,
            compressed: Vec::new(),
            evicted: Vec::new(),
            retrieved: Vec::new(),
            summary_cost_usd: 0.0,
        };
        let query = query
            .map(str::to_string)
            .or_else(|| s.newest_user_text())
            .unwrap_or_default();
        self.strategy.decide(s, &query, &mut d);
        let extended = match previous {
            Some(previous) if self.strategy.marks_changes() => s.emit_after(previous, &mut d),
            _ => false,
        };
        if extended {
            // Every test and property run checks the extension against a full listing.
            #[cfg(debug_assertions)]
            {
                let mut full = d.clone();
                full.entries = Vec::new();
                let emitted = s.emitted;
                s.emit(&mut full);
                s.emitted = emitted;
                debug_assert_eq!(full, d, "an extended context differs from its full listing");
            }
        } else {
            s.emit(&mut d);
        }
        d.over_budget = d.tokens > u64::from(s.options.budget);
        if extended {
            // Nothing changed since the latest call's compaction, and what arrived since is
            // active: nothing to take out.
            debug_assert!(s
                .items
                .iter()
                .all(|it| it.status == Status::Active || it.status == Status::Archived));
        } else {
            s.compact(self.strategy.restores_dropped());
        }
        s.call += 1;
        (d, extended)
    }

    /// A chunk the engine holds (in the context or archived, or dropped but able to come back).
    pub fn chunk(&self, chunk: ChunkId) -> Option<&Chunk> {
        let i = self.state.position(chunk)?;
        Some(&self.state.items[i].chunk)
    }

    /// Every chunk the engine holds, in arrival order (see [`Engine::chunk`]).
    pub fn held_chunks(&self) -> impl Iterator<Item = &Chunk> {
        self.state.items.iter().map(|it| &*it.chunk)
    }

    /// Chunks the value engine holds now (without working off queued value work): for a
    /// forgetting engine, at most the held chunks plus what was forgotten since its last rebuild.
    pub fn value_entries(&self) -> usize {
        self.state.value.len()
    }

    /// The text of the newest user message the engine holds: the default query.
    pub fn newest_user_text(&self) -> Option<String> {
        self.state.newest_user_text()
    }

    /// Makes the engine forget what it has given up for good, for a live pool whose history
    /// is not kept: a chunk dropped (and not archived) is compacted away after the call as
    /// always, and then its bookkeeping goes too, and the value engine's and reference
    /// detector's entries with it (they are rebuilt from the live chunks once enough were
    /// forgotten, so their memory follows the context and the archive, not the history).
    /// Values are then measured against what the engine still holds (redundancy and BM25
    /// statistics over live chunks), so decisions can differ a little from a remembering
    /// engine's; strategies that do not read values decide exactly as before. Strategies that
    /// re-trim the whole history every call (`langchain-trim`, `openai-keep-last-n`, as their
    /// libraries do) never give anything up for good, so they forget nothing.
    pub fn forget_dropped(&mut self) {
        self.state.forgetting = true;
    }

    /// The chunks forgotten since the last call of this method (empty unless
    /// [`Engine::forget_dropped`]), in the order they were forgotten: the host can release its
    /// own copies.
    pub fn take_forgotten(&mut self) -> Vec<ChunkId> {
        std::mem::take(&mut self.state.forgotten)
    }

    /// Whether the engine's strategy is one MemLens owns (repaired to keep every invariant).
    pub fn guarantees_invariants(&self) -> bool {
        self.strategy.repairs_invariants()
    }
}
