//! The incremental policy engine: add chunks as the agent produces them, ask for the context to
//! send before each call. The batch simulator drives the same engine over a recorded trace, so
//! live use and replay make the same decisions.
//!
//! State is kept per item (one item per chunk): active (in context, possibly compressed or
//! cleared), archived (offloaded, retrievable), dropped, or gone (the agent itself no longer sends
//! it). Items are grouped into *units* that must stay or go together: all tool calls of one
//! assistant message with all their results (parallel calls too); every other chunk is a unit of
//! its own.

use super::compress::{compact_json, strip_markup, CompressKind};
use super::config::{PolicyConfig, PolicyError, Strategy, SummaryModel};
use crate::model::{Category, Chunk, ChunkId};
use crate::recall::{RecallIndex, RecallParams};
use crate::references::Detector;
use crate::tokens::{TokenCounter, REPLY_PRIMING_TOKENS};
use crate::value::ValueEngine;
use regex::Regex;
use serde::Serialize;
use std::collections::HashMap;

/// What the engine needs besides the policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineOptions {
    /// Token budget for the context (input tokens, reply priming included).
    pub budget: u32,
    /// Input price of the model, USD per million tokens, for the compression cost-benefit rule
    /// (`None`: unpriced; summaries are then judged on tokens alone).
    pub input_usd_per_mtok: Option<f64>,
}

/// How an entry of the context relates to its chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "form")]
pub enum EntryForm {
    /// The chunk as it was.
    Original,
    /// Compressed text (see `text`).
    Compressed {
        /// Which compression.
        kind: CompressKind,
    },
    /// Brought back from the archive for this call.
    Retrieved,
    /// A modeled summary of dropped chunks.
    Summary {
        /// The chunks it stands for.
        covers: Vec<ChunkId>,
    },
}

/// One entry of the context to send.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextEntry {
    /// The chunk (`None` for a summary).
    pub chunk: Option<ChunkId>,
    /// Tokens it takes.
    pub tokens: u32,
    /// Original, compressed, retrieved or summary.
    #[serde(flatten)]
    pub form: EntryForm,
    /// The text sent when it differs from the chunk's content (compressed, cleared, summary).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The context for one call, and what the policy did to get it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The call index (0-based count of decisions so far).
    pub call: u32,
    /// Entries in the order to send.
    pub entries: Vec<ContextEntry>,
    /// Tokens of the context, reply priming included.
    pub tokens: u64,
    /// Tokens of every live chunk (what keeping everything would send).
    pub full_tokens: u64,
    /// Protected content alone (or what the strategy insists on) exceeds the budget.
    pub over_budget: bool,
    /// Chunks compressed or cleared during this call.
    pub compressed: Vec<ChunkId>,
    /// Chunks evicted during this call (dropped, archived or summarized).
    pub evicted: Vec<ChunkId>,
    /// Chunks retrieved from the archive for this call.
    pub retrieved: Vec<ChunkId>,
    /// Modeled cost of summaries made during this call, USD.
    pub summary_cost_usd: f64,
}

impl Decision {
    /// The chunks in the context (summaries left out), in order.
    pub fn chunk_ids(&self) -> impl Iterator<Item = ChunkId> + '_ {
        self.entries.iter().filter_map(|e| e.chunk)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Active,
    Archived,
    Dropped,
    Gone,
}

#[derive(Debug, Clone)]
struct Item {
    chunk: Chunk,
    /// Tokens now (after compression).
    tokens: u32,
    compressed: Option<(CompressKind, String)>,
    status: Status,
    unit: u32,
    message: u32,
    added_call: u32,
    /// Protected by category or directive pattern (fixed when added).
    pinned: bool,
    /// Arrival order (item indices shift when dropped items are compacted away).
    seq: u64,
}

#[derive(Debug, Clone)]
struct Summary {
    /// Emitted before the first item added at or after this sequence number.
    at: u64,
    tokens: u32,
    covers: Vec<ChunkId>,
    active: bool,
}

/// Value-engine and detector work queued by [`Engine::add`] (see `Engine::backlog`).
#[derive(Debug, Clone)]
enum Deferred {
    /// A chunk to add to the value engine (and to the detector's index unless it is an output).
    Add {
        chunk: Box<Chunk>,
        call: u32,
        observe: bool,
    },
    /// One agent message's output chunks, whose references to earlier chunks count as uses.
    Outputs { call: u32, chunks: Vec<Chunk> },
}

/// The policy engine. See the module docs.
#[derive(Clone)]
pub struct Engine {
    config: PolicyConfig,
    options: EngineOptions,
    counter: TokenCounter,
    patterns: Vec<Regex>,
    /// Live items in arrival order. Dropped and gone items are compacted away after each call
    /// (unless the strategy may bring them back), so per-call work follows the context, not the
    /// history.
    items: Vec<Item>,
    /// Chunk -> position in `items`, for the items still there.
    index: HashMap<ChunkId, usize>,
    /// Every chunk ever added.
    seen: std::collections::HashSet<ChunkId>,
    /// BM25 document id -> chunk.
    doc_chunk: Vec<ChunkId>,
    next_seq: u64,
    /// Tokens of dropped items compacted away (still part of "keeping everything").
    compacted_tokens: u64,
    unit_of_call_id: HashMap<String, u32>,
    units: u32,
    messages: u32,
    /// Message whose tool calls form the open tool unit, and that unit.
    tool_unit: Option<(u32, u32)>,
    call: u32,
    /// Message id of the newest user turn (kept up to date on add and retain).
    newest_user: Option<u32>,
    value: ValueEngine,
    detector: Detector,
    /// Output chunks of the current agent message, detected together on the next non-output
    /// chunk or call.
    pending_outputs: Vec<Chunk>,
    /// Value-engine and reference-detector work not done yet, in order. Only the value
    /// strategy reads values to decide; for the others this work waits until something reads
    /// them (an explanation, a label), so their per-turn cost is the decision's alone.
    backlog: Vec<Deferred>,
    /// The archive's retrieval index (MemLens recall: BM25 with query expansion from the
    /// conversation and session cues), one document per chunk.
    recall: RecallIndex,
    summaries: Vec<Summary>,
    /// For the oracle: calls at which each chunk will be used, ascending.
    future: HashMap<ChunkId, Vec<u32>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("policy", &self.config.name)
            .field("items", &self.items.len())
            .field("call", &self.call)
            .finish()
    }
}

impl Engine {
    /// An engine for a policy. Fails only on an invalid protection pattern.
    pub fn new(
        config: PolicyConfig,
        options: EngineOptions,
        counter: TokenCounter,
    ) -> Result<Engine, PolicyError> {
        let patterns = config
            .protect
            .patterns
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|e| PolicyError::Pattern {
                    pattern: p.clone(),
                    message: e.to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Engine {
            value: ValueEngine::new(config.value.clone()),
            config,
            options,
            counter,
            patterns,
            items: Vec::new(),
            index: HashMap::new(),
            seen: std::collections::HashSet::new(),
            doc_chunk: Vec::new(),
            next_seq: 0,
            compacted_tokens: 0,
            unit_of_call_id: HashMap::new(),
            units: 0,
            messages: 0,
            tool_unit: None,
            call: 0,
            newest_user: None,
            detector: Detector::new(),
            pending_outputs: Vec::new(),
            backlog: Vec::new(),
            recall: RecallIndex::new(),
            summaries: Vec::new(),
            future: HashMap::new(),
        })
    }

    /// Gives the oracle its hindsight: for each chunk, the calls whose outputs use it.
    pub fn set_future(&mut self, uses: HashMap<ChunkId, Vec<u32>>) {
        self.future = uses;
    }

    /// The policy.
    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    /// The value engine, with every chunk added so far (for explanations). Brings it up to date
    /// first (see [`Engine::add`]).
    pub fn value_engine(&mut self) -> &ValueEngine {
        self.catch_up();
        &self.value
    }

    /// Number of decisions made so far (the index of the next call).
    pub fn calls(&self) -> u32 {
        self.call
    }

    /// True when the chunk was added.
    pub fn contains(&self, chunk: ChunkId) -> bool {
        self.seen.contains(&chunk)
    }

    /// Adds a chunk (a new memory item). Chunks of one message are added together, the first with
    /// `starts_message`. Adding a chunk id twice is ignored.
    pub fn add(&mut self, chunk: &Chunk) {
        if !self.seen.insert(chunk.id) {
            return;
        }
        if chunk.starts_message || self.items.is_empty() {
            self.messages += 1;
        }
        let message = self.messages - 1;
        let unit = match chunk.category {
            Category::ToolCall => match self.tool_unit {
                Some((m, u)) if m == message => u,
                _ => {
                    let u = self.new_unit();
                    self.tool_unit = Some((message, u));
                    u
                }
            },
            Category::ToolResult => match chunk
                .meta
                .tool_call_id
                .as_ref()
                .and_then(|id| self.unit_of_call_id.get(id))
            {
                Some(&u) => u,
                None => self.new_unit(),
            },
            _ => self.new_unit(),
        };
        if chunk.category == Category::ToolCall {
            if let Some(id) = &chunk.meta.tool_call_id {
                self.unit_of_call_id.insert(id.clone(), unit);
            }
        }
        let pinned = chunk.category == Category::System
            || self.config.protect.categories.contains(&chunk.category)
            || (matches!(chunk.category, Category::User | Category::Preference)
                && self.patterns.iter().any(|p| p.is_match(&chunk.content)));
        // Outputs of the agent reveal which earlier chunks it used: that is popularity.
        // One message's output chunks are detected together, so they never count as using
        // each other.
        if matches!(
            chunk.category,
            Category::Assistant | Category::ToolCall | Category::Reasoning
        ) {
            if chunk.starts_message {
                self.flush_outputs();
            }
            self.pending_outputs.push(chunk.clone());
        } else {
            self.flush_outputs();
        }
        if chunk.category == Category::User {
            self.newest_user = Some(message);
        }
        let observe = !matches!(
            chunk.category,
            Category::Assistant | Category::ToolCall | Category::Reasoning
        );
        self.defer(Deferred::Add {
            chunk: Box::new(chunk.clone()),
            call: self.call,
            observe,
        });
        // Only an archive is ever searched: without offload the index would be dead weight.
        if self.config.offload.is_some() {
            if matches!(chunk.category, Category::ToolCall | Category::ToolResult)
                && !self.recall.is_light()
            {
                self.use_light_recall();
            }
            let session = chunk.meta.session_date.as_deref();
            let doc = self.recall.add(
                &chunk.content,
                chunk.meta.speaker.as_deref(),
                session,
                chunk.tokens,
            ) as u32;
            debug_assert_eq!(doc as usize, self.doc_chunk.len());
            self.doc_chunk.push(chunk.id);
        }
        self.index.insert(chunk.id, self.items.len());
        self.next_seq += 1;
        self.items.push(Item {
            chunk: chunk.clone(),
            tokens: chunk.tokens,
            compressed: None,
            status: Status::Active,
            unit,
            message,
            added_call: self.call,
            pinned,
            seq: self.next_seq - 1,
        });
    }

    /// Runs the reference detector on the buffered output chunks of the last agent message: the
    /// earlier chunks they used gain popularity.
    fn flush_outputs(&mut self) {
        if self.pending_outputs.is_empty() {
            return;
        }
        let outputs = std::mem::take(&mut self.pending_outputs);
        self.defer(Deferred::Outputs {
            call: self.call.saturating_sub(1),
            chunks: outputs,
        });
    }

    /// Queues value-engine and detector work; the value strategy does it at once.
    fn defer(&mut self, work: Deferred) {
        self.backlog.push(work);
        if self.reads_values() {
            self.catch_up();
        }
    }

    /// Whether deciding reads chunk values (then the value work is done as chunks arrive).
    fn reads_values(&self) -> bool {
        self.config.strategy == Strategy::Value
            || (self.config.value_threshold.is_some()
                && matches!(self.config.strategy, Strategy::Window | Strategy::Value))
    }

    /// Does the queued work, in order: exactly what adding and detecting eagerly would have done.
    fn catch_up(&mut self) {
        for work in std::mem::take(&mut self.backlog) {
            match work {
                Deferred::Add {
                    chunk,
                    call,
                    observe,
                } => {
                    if observe {
                        self.detector.observe(&chunk);
                    }
                    self.value.add(&chunk, call, None);
                }
                Deferred::Outputs { call, chunks } => {
                    let refs: Vec<&Chunk> = chunks.iter().collect();
                    for r in self.detector.outputs(call, &refs) {
                        self.value.record_use(r.used);
                    }
                }
            }
        }
    }

    fn new_unit(&mut self) -> u32 {
        self.units += 1;
        self.units - 1
    }

    /// Marks every added chunk that is not in `live` as gone: the agent no longer sends it (a
    /// recorded trace whose own agent trimmed its history). Used by the simulator.
    pub fn retain(&mut self, live: &[ChunkId]) {
        let keep: std::collections::HashSet<ChunkId> = live.iter().copied().collect();
        for item in &mut self.items {
            if item.status != Status::Gone && !keep.contains(&item.chunk.id) {
                item.status = Status::Gone;
            }
        }
        self.newest_user = self
            .items
            .iter()
            .rev()
            .find(|it| it.status != Status::Gone && it.chunk.category == Category::User)
            .map(|it| it.message);
    }

    /// Labels a chunk for the value engine (and protection: important chunks are kept).
    pub fn label(&mut self, chunk: ChunkId, label: Option<crate::value::Label>) {
        self.catch_up();
        self.value.set_label(chunk, label);
        if let Some(&i) = self.index.get(&chunk) {
            self.items[i].pinned |= label == Some(crate::value::Label::Important);
        }
    }

    /// Decides the context for the next call. `query` is the current query (the newest user
    /// message when `None`).
    pub fn context(&mut self, query: Option<&str>) -> Decision {
        self.flush_outputs();
        let mut d = Decision {
            call: self.call,
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
            .or_else(|| self.newest_user_text())
            .unwrap_or_default();
        let budget = self.options.budget;
        match self.config.strategy {
            Strategy::KeepAll => {}
            Strategy::Oracle => {
                self.oracle_select(&mut d);
                self.start_on_user(&mut d);
            }
            Strategy::Window | Strategy::Value => {
                let reserve = self
                    .config
                    .offload
                    .as_ref()
                    .map_or(0, |o| (budget as f32 * o.reserve.clamp(0.0, 0.9)) as u32);
                self.age_and_quotas(&mut d);
                self.clear_old_tool_results(&mut d);
                self.evict_below_threshold(&query, &mut d);
                self.evict_to(budget.saturating_sub(reserve), &query, &mut d);
                self.start_on_user(&mut d);
                if self.config.offload.is_some() {
                    self.retrieve(&query, &mut d);
                }
            }
            Strategy::LangchainTrim => self.langchain_trim(&mut d),
            Strategy::OpenaiKeepLastN => self.keep_last_n(&mut d),
            Strategy::AnthropicClearToolUses => self.anthropic_clear(&mut d),
            Strategy::LlamaindexMemory => self.llamaindex_flush(&mut d),
            Strategy::LettaSummarize => self.letta_summarize(&mut d),
        }
        self.emit(&mut d);
        d.over_budget = d.tokens > u64::from(budget);
        self.compact();
        self.call += 1;
        d
    }

    // ---- shared helpers -------------------------------------------------------------------

    fn live(&self, i: usize) -> bool {
        self.items[i].status != Status::Gone
    }

    fn active(&self, i: usize) -> bool {
        self.items[i].status == Status::Active
    }

    fn active_tokens(&self) -> u64 {
        let items: u64 = self
            .items
            .iter()
            .filter(|it| it.status == Status::Active)
            .map(|it| u64::from(it.tokens))
            .sum();
        let summaries: u64 = self
            .summaries
            .iter()
            .filter(|s| s.active)
            .map(|s| u64::from(s.tokens))
            .sum();
        items + summaries + u64::from(REPLY_PRIMING_TOKENS)
    }

    fn newest_user_text(&self) -> Option<String> {
        let m = self.newest_user?;
        Some(
            self.items
                .iter()
                .rev()
                .take_while(|it| it.message >= m)
                .filter(|it| it.message == m && it.chunk.category == Category::User)
                .map(|it| it.chunk.content.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }

    /// Protected now: pinned, in the newest user message, or among the newest messages.
    fn protected(&self, i: usize) -> bool {
        let it = &self.items[i];
        if it.pinned {
            return true;
        }
        if self.newest_user == Some(it.message) && it.chunk.category == Category::User {
            return true;
        }
        let recent = self.config.protect.recent_messages;
        recent > 0 && it.message + recent >= self.messages
    }

    /// Units (in order of first item) with their item indices, for units with an active item.
    fn active_units(&self) -> Vec<(u32, Vec<usize>)> {
        // Unit ids are handed out when a unit's first item arrives and items are kept in arrival
        // order, so ordering by (unit, item) groups units in order of their first item. Sorting
        // nearly sorted pairs is cheaper than a hash map per call.
        let mut pairs: Vec<(u32, usize)> = self
            .items
            .iter()
            .enumerate()
            .filter(|(_, it)| it.status != Status::Gone)
            .map(|(i, it)| (it.unit, i))
            .collect();
        pairs.sort_unstable();
        let mut out: Vec<(u32, Vec<usize>)> = Vec::new();
        let mut k = 0;
        while k < pairs.len() {
            let unit = pairs[k].0;
            let end = k + pairs[k..].partition_point(|p| p.0 == unit);
            if pairs[k..end].iter().any(|&(_, i)| self.active(i)) {
                out.push((unit, pairs[k..end].iter().map(|&(_, i)| i).collect()));
            }
            k = end;
        }
        out
    }

    fn unit_protected(&self, members: &[usize]) -> bool {
        members.iter().any(|&i| self.protected(i))
    }

    /// Evicts a unit's active items; returns the tokens freed.
    fn evict_unit(&mut self, members: &[usize], d: &mut Decision) -> u64 {
        let to = if self.config.offload.is_some() {
            Status::Archived
        } else {
            Status::Dropped
        };
        let mut freed = 0;
        for &i in members {
            if self.items[i].status == Status::Active {
                self.items[i].status = to;
                freed += u64::from(self.items[i].tokens);
                d.evicted.push(self.items[i].chunk.id);
            }
        }
        freed
    }

    /// Replaces an item's text when that saves tokens; returns the tokens saved.
    fn set_compressed(
        &mut self,
        i: usize,
        kind: CompressKind,
        text: String,
        d: &mut Decision,
    ) -> u64 {
        let framing = self.items[i]
            .chunk
            .tokens
            .saturating_sub(self.items[i].chunk.content_tokens);
        let tokens = self.counter.count(&text) + framing;
        if tokens >= self.items[i].tokens {
            return 0;
        }
        let saved = u64::from(self.items[i].tokens - tokens);
        self.items[i].tokens = tokens;
        self.items[i].compressed = Some((kind, text));
        d.compressed.push(self.items[i].chunk.id);
        saved
    }

    // ---- MemLens strategies ---------------------------------------------------------------

    fn age_and_quotas(&mut self, d: &mut Decision) {
        if let Some(max_age) = self.config.max_age_calls {
            for (_, members) in self.active_units() {
                let oldest = members.iter().map(|&i| self.items[i].added_call).min();
                if oldest.is_some_and(|a| a + max_age < self.call) && !self.unit_protected(&members)
                {
                    let _ = self.evict_unit(&members, d);
                }
            }
        }
        let quotas: Vec<(Category, f32)> =
            self.config.quotas.iter().map(|(c, q)| (*c, *q)).collect();
        for (category, share) in quotas {
            let cap = (self.options.budget as f32 * share.max(0.0)) as u64;
            let mut used: u64 = self
                .items
                .iter()
                .filter(|it| it.status == Status::Active && it.chunk.category == category)
                .map(|it| u64::from(it.tokens))
                .sum();
            // Oldest first within the category.
            for (_, members) in self.active_units() {
                if used <= cap {
                    break;
                }
                let in_category: u64 = members
                    .iter()
                    .filter(|&&i| self.items[i].chunk.category == category && self.active(i))
                    .map(|&i| u64::from(self.items[i].tokens))
                    .sum();
                if in_category > 0 && !self.unit_protected(&members) {
                    let _ = self.evict_unit(&members, d);
                    used = used.saturating_sub(in_category);
                }
            }
        }
    }

    fn clear_old_tool_results(&mut self, d: &mut Decision) {
        let Some(after) = self.config.compress.clear_tool_results_after else {
            return;
        };
        for i in 0..self.items.len() {
            let it = &self.items[i];
            if it.status == Status::Active
                && it.chunk.category == Category::ToolResult
                && it.compressed.is_none()
                && it.added_call + after < self.call
                && !self.protected(i)
            {
                let text = format!(
                    "[tool result cleared: {} ({} tokens)]",
                    it.chunk.meta.tool_name.as_deref().unwrap_or("tool"),
                    it.chunk.content_tokens
                );
                let _ = self.set_compressed(i, CompressKind::Clear, text, d);
            }
        }
    }

    /// Eviction order for the window, value and oracle strategies: first to go first.
    fn eviction_order(&self, query: &str) -> Vec<(u32, Vec<usize>)> {
        let units: Vec<(u32, Vec<usize>)> = self
            .active_units()
            .into_iter()
            .filter(|(_, m)| !self.unit_protected(m))
            .collect();
        match self.config.strategy {
            Strategy::Value => {
                let ids: Vec<ChunkId> = units
                    .iter()
                    .flat_map(|(_, m)| m.iter().map(|&i| self.items[i].chunk.id))
                    .collect();
                let values =
                    self.value
                        .values(&ids, self.call, None, Some(query).filter(|q| !q.is_empty()));
                let by_chunk: HashMap<ChunkId, f32> = ids.iter().copied().zip(values).collect();
                let mut keyed: Vec<(f32, usize, (u32, Vec<usize>))> = units
                    .into_iter()
                    .enumerate()
                    .map(|(pos, (u, m))| {
                        let value: f32 = m
                            .iter()
                            .map(|&i| {
                                by_chunk
                                    .get(&self.items[i].chunk.id)
                                    .copied()
                                    .unwrap_or(0.0)
                            })
                            .sum();
                        let tokens: u32 = m.iter().map(|&i| self.items[i].tokens).sum();
                        (value / tokens.max(1) as f32, pos, (u, m))
                    })
                    .collect();
                keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                keyed.into_iter().map(|(_, _, u)| u).collect()
            }
            // Window (and anything else): oldest first, which is the order units came in.
            _ => units,
        }
    }

    /// The hindsight oracle, stateless: for each call it picks the best context from every live
    /// chunk, as a policy with a perfect archive would. Protected units first, then the units
    /// this call's output will use (smallest first), then the rest by soonest next use (Belady's
    /// order), while they fit. It bounds what any policy can achieve on misses at a budget.
    fn oracle_select(&mut self, d: &mut Decision) {
        let now = self.call;
        let next_use = |e: &Engine, m: &[usize]| -> Option<u32> {
            m.iter()
                .filter_map(|&i| {
                    let uses = e.future.get(&e.items[i].chunk.id)?;
                    uses.get(uses.partition_point(|&c| c < now)).copied()
                })
                .min()
        };
        let mut units: Vec<(u32, Vec<usize>)> = Vec::new();
        {
            let mut pos: HashMap<u32, usize> = HashMap::new();
            for (i, it) in self.items.iter().enumerate() {
                if it.status == Status::Gone {
                    continue;
                }
                let k = *pos.entry(it.unit).or_insert_with(|| {
                    units.push((it.unit, Vec::new()));
                    units.len() - 1
                });
                units[k].1.push(i);
            }
        }
        let was_active: Vec<bool> = self
            .items
            .iter()
            .map(|it| it.status == Status::Active)
            .collect();
        // (rank, next use, tokens, position): protected 0, used now 1, used later 2, never 3.
        let mut ranked: Vec<(u8, u32, u64, usize)> = units
            .iter()
            .enumerate()
            .map(|(k, (_, m))| {
                let tokens: u64 = m.iter().map(|&i| u64::from(self.items[i].tokens)).sum();
                let rank_use = next_use(self, m);
                let rank = if self.unit_protected(m) {
                    0
                } else {
                    match rank_use {
                        Some(c) if c == now => 1,
                        Some(_) => 2,
                        None => 3,
                    }
                };
                (rank, rank_use.unwrap_or(u32::MAX), tokens, k)
            })
            .collect();
        ranked.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then(if a.0 == 1 {
                    a.2.cmp(&b.2)
                } else {
                    a.1.cmp(&b.1)
                })
                .then(a.3.cmp(&b.3))
        });
        let mut total = u64::from(REPLY_PRIMING_TOKENS);
        let mut keep = vec![false; units.len()];
        for &(rank, _, tokens, k) in &ranked {
            if rank == 3 {
                break;
            }
            if rank == 0 || total + tokens <= u64::from(self.options.budget) {
                keep[k] = true;
                total += tokens;
            }
        }
        // The context must start on a user message: bring the user turn that precedes the first
        // kept unit, when it fits (otherwise `start_on_user` drops the leading units).
        let is_user = |e: &Engine, m: &[usize]| {
            m.iter()
                .any(|&i| e.items[i].chunk.category == Category::User)
        };
        let is_system = |e: &Engine, m: &[usize]| {
            m.iter()
                .all(|&i| e.items[i].chunk.category == Category::System)
        };
        if let Some(first) = (0..units.len()).find(|&k| keep[k] && !is_system(self, &units[k].1)) {
            if !is_user(self, &units[first].1) {
                if let Some(u) = (0..first).rev().find(|&k| is_user(self, &units[k].1)) {
                    let tokens: u64 = units[u]
                        .1
                        .iter()
                        .map(|&i| u64::from(self.items[i].tokens))
                        .sum();
                    if total + tokens <= u64::from(self.options.budget) {
                        keep[u] = true;
                    }
                }
            }
        }
        for (k, (_, members)) in units.iter().enumerate() {
            for &i in members {
                self.items[i].status = if keep[k] {
                    Status::Active
                } else {
                    Status::Dropped
                };
                if was_active[i] && !keep[k] {
                    d.evicted.push(self.items[i].chunk.id);
                }
            }
        }
    }

    /// The value threshold: every unprotected unit the model has seen whose most valuable
    /// member is below it goes, under budget or not.
    fn evict_below_threshold(&mut self, query: &str, d: &mut Decision) {
        let Some(threshold) = self.config.value_threshold else {
            return;
        };
        let units: Vec<Vec<usize>> = self
            .active_units()
            .into_iter()
            .map(|(_, m)| m)
            .filter(|m| !self.unit_protected(m))
            // Not yet seen by the model: it was added for this very call.
            .filter(|m| m.iter().all(|&i| self.items[i].added_call < self.call))
            .collect();
        if units.is_empty() {
            return;
        }
        self.catch_up();
        let ids: Vec<ChunkId> = units
            .iter()
            .flat_map(|m| m.iter().map(|&i| self.items[i].chunk.id))
            .collect();
        let values =
            self.value
                .values(&ids, self.call, None, Some(query).filter(|q| !q.is_empty()));
        let mut values = values.into_iter();
        for members in units {
            let best = members
                .iter()
                .map(|_| values.next().unwrap_or(0.0))
                .fold(0.0f32, f32::max);
            if best < threshold {
                self.evict_unit(&members, d);
            }
        }
    }

    fn evict_to(&mut self, limit: u32, query: &str, d: &mut Decision) {
        if let Some(max) = self.config.max_messages {
            self.window_messages(max, d);
        }
        let mut total = self.active_tokens();
        let mut limit = u64::from(limit);
        if let Some(cleanup) = self.config.cleanup {
            // Between cleanups the context only grows (the cached prefix stays intact); past the
            // trigger it is cut back to the target.
            let share = |s: f32| (limit as f64 * f64::from(s.clamp(0.01, 1.0))) as u64;
            if total <= share(cleanup.trigger) {
                return;
            }
            limit = share(cleanup.target.min(cleanup.trigger));
        }
        if total <= limit || self.config.strategy == Strategy::KeepAll {
            return;
        }
        let order = self.eviction_order(query);
        // Compression first: cheaper than losing a unit.
        let compress = self.config.compress.clone();
        if compress.json.is_some() || compress.strip_markup || compress.dedupe {
            for (_, members) in &order {
                for &i in members {
                    if total <= limit {
                        return;
                    }
                    total -= self.try_compress(i, &compress, d);
                }
            }
        }
        let mut summarized: Vec<usize> = Vec::new();
        for (_, members) in order {
            if total <= limit {
                break;
            }
            if compress.summary.is_some() {
                summarized.extend(members.iter().copied().filter(|&i| self.active(i)));
            }
            total -= self.evict_unit(&members, d);
        }
        if let Some(model) = compress.summary {
            self.summarize(&summarized, &model, d);
        }
    }

    fn window_messages(&mut self, max: u32, d: &mut Decision) {
        let mut live: Vec<u32> = self
            .items
            .iter()
            .filter(|it| it.status == Status::Active && it.chunk.category != Category::System)
            .map(|it| it.message)
            .collect();
        live.dedup();
        let mut excess = live.len().saturating_sub(max as usize);
        for m in live {
            if excess == 0 {
                break;
            }
            let members: Vec<usize> = (0..self.items.len())
                .filter(|&i| self.items[i].message == m && self.active(i))
                .collect();
            // Whole units: a tool call's message goes with its results' messages.
            let units: Vec<u32> = members.iter().map(|&i| self.items[i].unit).collect();
            let unit_members: Vec<usize> = (0..self.items.len())
                .filter(|&i| self.active(i) && units.contains(&self.items[i].unit))
                .collect();
            if !self.unit_protected(&unit_members) {
                let _ = self.evict_unit(&unit_members, d);
                excess -= 1;
            }
        }
    }

    /// Tries the configured compressions on one item; returns the tokens saved.
    fn try_compress(&mut self, i: usize, rules: &super::config::Compress, d: &mut Decision) -> u64 {
        let it = &self.items[i];
        if it.status != Status::Active || it.compressed.is_some() {
            return 0;
        }
        let content = &it.chunk.content;
        if rules.dedupe {
            let earlier = self.items[..i].iter().find(|e| {
                e.status == Status::Active && e.compressed.is_none() && e.chunk.content == *content
            });
            if let Some(e) = earlier {
                let text = format!("[same as {}]", e.chunk.key);
                return self.set_compressed(i, CompressKind::Dedupe, text, d);
            }
        }
        if let (Some(json), Category::ToolResult | Category::ToolCall) =
            (&rules.json, it.chunk.category)
        {
            if let Some(text) = compact_json(content, json) {
                return self.set_compressed(i, CompressKind::Json, text, d);
            }
        }
        if rules.strip_markup {
            if let Some(text) = strip_markup(content) {
                return self.set_compressed(i, CompressKind::Strip, text, d);
            }
        }
        0
    }

    /// Replaces the given (just evicted) items with one modeled summary, when worth its cost.
    fn summarize(&mut self, items: &[usize], model: &SummaryModel, d: &mut Decision) {
        let Some(&first) = items.first() else {
            return;
        };
        let tokens: u64 = items.iter().map(|&i| u64::from(self.items[i].tokens)).sum();
        let summary_tokens = ((tokens as f64 * f64::from(model.ratio)).ceil() as u32).max(1);
        let cost = (tokens as f64 * model.input_usd_per_mtok
            + f64::from(summary_tokens) * model.output_usd_per_mtok)
            / 1e6;
        // Cost-benefit: tokens saved on each expected remaining call (as many as so far).
        let saved = tokens.saturating_sub(u64::from(summary_tokens)) as f64;
        let remaining = f64::from(self.call.max(1));
        let benefit = self
            .options
            .input_usd_per_mtok
            .map_or(f64::INFINITY, |p| saved * remaining * p / 1e6);
        if benefit < cost * self.config.compress.min_benefit.unwrap_or(1.0) {
            return;
        }
        d.summary_cost_usd += cost;
        self.summaries.push(Summary {
            at: self.items[first].seq,
            tokens: summary_tokens,
            covers: items.iter().map(|&i| self.items[i].chunk.id).collect(),
            active: true,
        });
    }

    /// The context must start (after system) on a user message for Anthropic: evict leading
    /// assistant and tool units.
    fn start_on_user(&mut self, d: &mut Decision) {
        for (_, members) in self.active_units() {
            let first = members
                .iter()
                .copied()
                .filter(|&i| self.active(i))
                .min()
                .map(|i| self.items[i].chunk.category);
            match first {
                Some(Category::System) => continue,
                Some(Category::User) | None => break,
                // Validity outranks the recent-messages rule; only pinned units (and the newest
                // user message, which is a user message) stop this.
                Some(_) if members.iter().any(|&i| self.items[i].pinned) => break,
                Some(_) => {
                    let _ = self.evict_unit(&members, d);
                }
            }
        }
    }

    /// Switches the archive's index to the light analysis (no word vectors, light stemmer) and
    /// re-adds what it held. Conversations keep the full analysis (vectors and Snowball stems:
    /// +.03 on LoCoMo's evidence for the `recall` policy); once a trace carries tool calls the
    /// light one is used, since on tau-bench the full one raised the `recall` policy's misses at
    /// 4,000 from 84 to 99 (docs/recall.md). Happens once, at the first tool call or result.
    fn use_light_recall(&mut self) {
        let mut light = RecallIndex::light();
        for id in &self.doc_chunk {
            match self.index.get(id).map(|&i| &self.items[i].chunk) {
                Some(c) => light.add(
                    &c.content,
                    c.meta.speaker.as_deref(),
                    c.meta.session_date.as_deref(),
                    c.tokens,
                ),
                // Compacted away (dropped for good): an empty entry keeps the numbering.
                None => light.add("", None, None, 0),
            };
        }
        self.recall = light;
    }

    fn retrieve(&mut self, query: &str, d: &mut Decision) {
        let Some(offload) = self.config.offload.clone() else {
            return;
        };
        if query.is_empty() {
            return;
        }
        // Chunk-level scores for the archive: in agent traces a chunk's neighbours are often a
        // different kind of item (a tool call beside its result), so the passage smoothing that
        // helps conversations is left off; the session prior stands in for it. Which analysis
        // the index uses: see `use_light_recall`.
        let params = RecallParams {
            window: 0.0,
            session_weight: 0.3,
            ..RecallParams::default()
        };
        let scores = self.recall.scores(query, &params);
        let mut candidates: Vec<(f32, usize)> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .filter_map(|(doc, s)| Some((s, *self.index.get(&self.doc_chunk[doc])?)))
            .filter(|(_, i)| self.items[*i].status == Status::Archived)
            .collect();
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        // Archived units and their members, found once.
        let mut archived: HashMap<u32, Vec<usize>> = HashMap::new();
        for (j, it) in self.items.iter().enumerate() {
            if it.status == Status::Archived {
                archived.entry(it.unit).or_default().push(j);
            }
        }
        let mut total = self.active_tokens();
        let mut taken: Vec<(usize, u64, u32)> = Vec::new(); // (first member, tokens, unit)
        for (_, i) in candidates {
            if taken.len() >= offload.top_k {
                break;
            }
            let unit = self.items[i].unit;
            if taken.iter().any(|t| t.2 == unit) {
                continue;
            }
            let Some(members) = archived.get(&unit) else {
                continue;
            };
            let tokens: u64 = members
                .iter()
                .map(|&j| u64::from(self.items[j].tokens))
                .sum();
            if total + tokens > u64::from(self.options.budget) {
                continue;
            }
            total += tokens;
            taken.push((
                members.iter().copied().min().unwrap_or(usize::MAX),
                tokens,
                unit,
            ));
        }
        // The context must still start on a user message: in position order, a retrieved unit
        // that would come first without being a user turn brings the user turn before it (the
        // question it answered) when that fits, and is given up otherwise.
        taken.sort_unstable();
        let mut first = (0..self.items.len())
            .find(|&i| self.active(i) && self.items[i].chunk.category != Category::System)
            .unwrap_or(usize::MAX);
        let mut chosen: Vec<u32> = Vec::new();
        for (start, tokens, unit) in taken {
            if start < first && self.items[start].chunk.category != Category::User {
                let lead = (0..start).rev().find(|&j| {
                    self.items[j].status == Status::Archived
                        && self.items[j].chunk.category == Category::User
                });
                let lead_unit = lead
                    .map(|j| self.items[j].unit)
                    .filter(|u| !chosen.contains(u));
                let lead_tokens: u64 = lead_unit.and_then(|u| archived.get(&u)).map_or(0, |m| {
                    m.iter().map(|&j| u64::from(self.items[j].tokens)).sum()
                });
                match (lead, lead_unit) {
                    (Some(j), Some(u)) if total + lead_tokens <= u64::from(self.options.budget) => {
                        total += lead_tokens;
                        chosen.push(u);
                        first = j;
                    }
                    _ => {
                        total -= tokens;
                        continue;
                    }
                }
            }
            first = first.min(start);
            chosen.push(unit);
        }
        chosen.sort_unstable();
        chosen.dedup();
        for unit in chosen {
            if let Some(members) = archived.get(&unit) {
                d.retrieved
                    .extend(members.iter().map(|&j| self.items[j].chunk.id));
            }
        }
    }

    // ---- the incumbents -------------------------------------------------------------------

    /// Message ids of live non-system messages, oldest first, with their token totals.
    fn message_tokens(&self) -> Vec<(u32, u64, Category)> {
        self.messages_where(|status| status != Status::Gone)
    }

    /// Like [`Engine::message_tokens`], counting only active items (messages with none left out).
    fn active_message_tokens(&self) -> Vec<(u32, u64, Category)> {
        self.messages_where(|status| status == Status::Active)
    }

    /// Non-system messages of the items whose status passes `keep`, oldest first, with their
    /// token totals and the category of their first item.
    fn messages_where(&self, keep: impl Fn(Status) -> bool) -> Vec<(u32, u64, Category)> {
        let mut out: Vec<(u32, u64, Category)> = Vec::new();
        for it in self.items.iter().filter(|it| keep(it.status)) {
            if it.chunk.category == Category::System {
                continue;
            }
            match out.last_mut() {
                Some((m, t, _)) if *m == it.message => *t += u64::from(it.tokens),
                _ => out.push((it.message, u64::from(it.tokens), it.chunk.category)),
            }
        }
        out
    }

    /// A limit from an incumbent's parameters: 0 means the simulated budget.
    fn or_budget(&self, limit: u32) -> u32 {
        if limit == 0 {
            self.options.budget
        } else {
            limit
        }
    }

    fn system_tokens(&self) -> u64 {
        self.items
            .iter()
            .filter(|it| it.status != Status::Gone && it.chunk.category == Category::System)
            .map(|it| u64::from(it.tokens))
            .sum()
    }

    /// Sets every live non-system item's status from the set of kept messages (stateless
    /// strategies recompute this every call).
    fn keep_messages(&mut self, kept: &std::collections::HashSet<u32>, d: &mut Decision) {
        for it in &mut self.items {
            if it.status == Status::Gone || it.chunk.category == Category::System {
                continue;
            }
            let keep = kept.contains(&it.message);
            if !keep && it.status == Status::Active {
                d.evicted.push(it.chunk.id);
            }
            it.status = if keep {
                Status::Active
            } else {
                Status::Dropped
            };
        }
    }

    /// LangChain `trim_messages(strategy="last", include_system=True, start_on="human",
    /// allow_partial=False)`, applied to the whole history before every call: keep the system
    /// message, then the longest suffix of messages that fits, then drop leading messages until a
    /// human one. Stateless.
    fn langchain_trim(&mut self, d: &mut Decision) {
        let lc = self.config.langchain.clone();
        let mut room =
            u64::from(self.options.budget).saturating_sub(u64::from(REPLY_PRIMING_TOKENS));
        if lc.include_system {
            room = room.saturating_sub(self.system_tokens());
        }
        let messages = self.message_tokens();
        let mut kept: Vec<(u32, Category)> = Vec::new();
        for &(m, t, c) in messages.iter().rev() {
            if t > room {
                break;
            }
            room -= t;
            kept.push((m, c));
        }
        kept.reverse();
        if lc.start_on_human {
            let first_user = kept.iter().position(|(_, c)| *c == Category::User);
            kept.drain(..first_user.unwrap_or(kept.len()));
        }
        let kept = kept.into_iter().map(|(m, _)| m).collect();
        self.keep_messages(&kept, d);
        if !lc.include_system {
            for it in &mut self.items {
                if it.chunk.category == Category::System && it.status == Status::Active {
                    it.status = Status::Dropped;
                }
            }
        }
    }

    /// OpenAI Agents SDK `SQLiteSession.get_items(limit=N)`: the last N session items, each
    /// message, function call and function call output an item of its own; the agent's
    /// instructions are not session items and are always sent. Stateless. It can cut between a
    /// function call and its output: a violation the simulator reports.
    fn keep_last_n(&mut self, d: &mut Decision) {
        let n = self.config.keep_last_n as usize;
        let live: Vec<usize> = (0..self.items.len())
            .filter(|&i| self.live(i) && self.items[i].chunk.category != Category::System)
            .collect();
        let cut = live.len().saturating_sub(n);
        for (k, &i) in live.iter().enumerate() {
            let keep = k >= cut;
            if !keep && self.items[i].status == Status::Active {
                d.evicted.push(self.items[i].chunk.id);
            }
            self.items[i].status = if keep {
                Status::Active
            } else {
                Status::Dropped
            };
        }
    }

    /// Anthropic context editing `clear_tool_uses_20250919`: once the input exceeds `trigger`
    /// (the budget when 0), clear the results of all tool uses but the newest `keep`, oldest first,
    /// skipping `exclude_tools`, and only if at least `clear_at_least` tokens are cleared. Cleared
    /// results stay as a placeholder (the tool use itself stays). Nothing else is removed.
    fn anthropic_clear(&mut self, d: &mut Decision) {
        let cfg = self.config.anthropic.clone();
        let trigger = self.or_budget(cfg.trigger_tokens);
        if self.active_tokens() <= u64::from(trigger) {
            return;
        }
        let results: Vec<usize> = (0..self.items.len())
            .filter(|&i| {
                let it = &self.items[i];
                it.status == Status::Active
                    && it.chunk.category == Category::ToolResult
                    && !it
                        .chunk
                        .meta
                        .tool_name
                        .as_ref()
                        .is_some_and(|t| cfg.exclude_tools.contains(t))
            })
            .collect();
        let uncleared: Vec<usize> = results
            .iter()
            .copied()
            .filter(|&i| self.items[i].compressed.is_none())
            .collect();
        let keep = cfg.keep as usize;
        let clearable = &uncleared[..uncleared.len().saturating_sub(keep)];
        let placeholder_tokens = self.counter.count(&cfg.placeholder);
        let gain: u64 = clearable
            .iter()
            .map(|&i| {
                u64::from(
                    self.items[i]
                        .chunk
                        .content_tokens
                        .saturating_sub(placeholder_tokens),
                )
            })
            .sum();
        if clearable.is_empty() || gain < u64::from(cfg.clear_at_least) {
            return;
        }
        for &i in clearable {
            let _ = self.set_compressed(i, CompressKind::Clear, cfg.placeholder.clone(), d);
            if cfg.clear_tool_inputs {
                let unit = self.items[i].unit;
                for j in 0..self.items.len() {
                    if self.items[j].unit == unit
                        && self.items[j].chunk.category == Category::ToolCall
                        && self.items[j].compressed.is_none()
                    {
                        let _ = self.set_compressed(j, CompressKind::Clear, "{}".into(), d);
                    }
                }
            }
        }
    }

    /// LlamaIndex `Memory._manage_queue` (llama-index-core `memory/memory.py`), message for
    /// message: when the active queue exceeds `token_limit x chat_history_token_ratio`, pop the
    /// oldest messages until `token_flush_size` tokens are flushed (always leaving one), then keep
    /// flushing until the queue starts on a user message; if that would leave no user message,
    /// put the most recent complete turn back. Repeat while over the limit. Flushed messages leave
    /// the context (they go to memory blocks, none by default). The system prompt is the agent's,
    /// not the memory's. Stateful.
    fn llamaindex_flush(&mut self, d: &mut Decision) {
        let cfg = self.config.llamaindex.clone();
        let limit = self.or_budget(cfg.token_limit);
        let history_limit = limit as f64 * f64::from(cfg.chat_history_token_ratio);
        // Active messages, oldest first: (message id, tokens, is a user message).
        let mut queue: std::collections::VecDeque<(u32, u64, bool)> = self
            .active_message_tokens()
            .into_iter()
            .map(|(m, t, c)| (m, t, c == Category::User))
            .collect();
        let flush_size = u64::from(cfg.token_flush_size);
        let tokens = |q: &std::collections::VecDeque<(u32, u64, bool)>| {
            q.iter().map(|x| x.1).sum::<u64>() as f64
        };
        let mut flushed_all: std::collections::HashSet<u32> = std::collections::HashSet::new();
        while tokens(&queue) > history_limit {
            if queue.len() <= 1 {
                break;
            }
            let mut flush: Vec<(u32, u64, bool)> = Vec::new();
            let mut flushed = 0u64;
            while flushed < flush_size && queue.len() > 1 {
                if let Some(m) = queue.pop_front() {
                    flushed += m.1;
                    flush.push(m);
                }
            }
            while queue.front().is_some_and(|m| !m.2) && queue.len() > 1 {
                if let Some(m) = queue.pop_front() {
                    flush.push(m);
                }
            }
            if queue.len() == 1 && queue.front().is_some_and(|m| !m.2) && !flush.is_empty() {
                if let Some(m) = queue.pop_front() {
                    flush.push(m);
                }
                if let Some(start) = flush.iter().rposition(|m| m.2) {
                    for m in flush.drain(start..).rev() {
                        queue.push_front(m);
                    }
                }
            }
            if flush.is_empty() {
                break;
            }
            flushed_all.extend(flush.iter().map(|m| m.0));
        }
        for it in &mut self.items {
            if it.status == Status::Active && flushed_all.contains(&it.message) {
                it.status = Status::Dropped;
                d.evicted.push(it.chunk.id);
            }
        }
    }

    /// Letta/MemGPT: on overflow, the oldest `fraction` of the messages (and any earlier summary)
    /// are replaced by a recursive summary (modeled: `compress.summary` or the default model).
    fn letta_summarize(&mut self, d: &mut Decision) {
        let model = self.config.compress.summary.clone().unwrap_or_default();
        let budget = u64::from(self.options.budget);
        let mut guard = 0;
        while self.active_tokens() > budget && guard < 16 {
            guard += 1;
            let active: Vec<(u32, u64, Category)> = self.active_message_tokens();
            if active.len() < 2 {
                break;
            }
            let n = ((active.len() as f32 * self.config.letta.fraction).ceil() as usize)
                .clamp(1, active.len() - 1);
            let mut chosen: std::collections::HashSet<u32> =
                active[..n].iter().map(|(m, _, _)| *m).collect();
            // Never split a tool call from its result: extend to whole units.
            let units: std::collections::HashSet<u32> = self
                .items
                .iter()
                .filter(|it| it.status == Status::Active && chosen.contains(&it.message))
                .map(|it| it.unit)
                .collect();
            for it in &self.items {
                if it.status == Status::Active && units.contains(&it.unit) {
                    chosen.insert(it.message);
                }
            }
            let items: Vec<usize> = (0..self.items.len())
                .filter(|&i| self.active(i) && chosen.contains(&self.items[i].message))
                .filter(|&i| self.items[i].chunk.category != Category::System)
                .collect();
            if items.len()
                == self
                    .items
                    .iter()
                    .filter(|it| {
                        it.status == Status::Active && it.chunk.category != Category::System
                    })
                    .count()
            {
                break;
            }
            let mut covered_tokens: u64 =
                items.iter().map(|&i| u64::from(self.items[i].tokens)).sum();
            let mut covers: Vec<ChunkId> = Vec::new();
            for s in self.summaries.iter_mut().filter(|s| s.active) {
                s.active = false;
                covered_tokens += u64::from(s.tokens);
                covers.append(&mut s.covers);
            }
            for &i in &items {
                self.items[i].status = Status::Dropped;
                d.evicted.push(self.items[i].chunk.id);
                covers.push(self.items[i].chunk.id);
            }
            let summary_tokens =
                ((covered_tokens as f64 * f64::from(model.ratio)).ceil() as u32).max(1);
            d.summary_cost_usd += (covered_tokens as f64 * model.input_usd_per_mtok
                + f64::from(summary_tokens) * model.output_usd_per_mtok)
                / 1e6;
            let at = self
                .summaries
                .first()
                .map_or(self.items[items[0]].seq, |s| {
                    s.at.min(self.items[items[0]].seq)
                });
            covers.sort();
            self.summaries.push(Summary {
                at,
                tokens: summary_tokens,
                covers,
                active: true,
            });
        }
    }

    // ---- output ---------------------------------------------------------------------------

    fn emit(&mut self, d: &mut Decision) {
        let retrieved: std::collections::HashSet<ChunkId> = d.retrieved.iter().copied().collect();
        let mut tokens = u64::from(REPLY_PRIMING_TOKENS);
        let mut full = u64::from(REPLY_PRIMING_TOKENS);
        let mut summaries: Vec<&Summary> = self.summaries.iter().filter(|s| s.active).collect();
        summaries.sort_by_key(|s| s.at);
        let mut pending = summaries.into_iter().peekable();
        let summary_entry = |s: &Summary| ContextEntry {
            chunk: None,
            tokens: s.tokens,
            form: EntryForm::Summary {
                covers: s.covers.clone(),
            },
            text: None,
        };
        for it in &self.items {
            while let Some(s) = pending.next_if(|s| s.at <= it.seq) {
                tokens += u64::from(s.tokens);
                d.entries.push(summary_entry(s));
            }
            if it.status == Status::Gone {
                continue;
            }
            full += u64::from(it.chunk.tokens);
            let (form, text) = match (it.status, &it.compressed) {
                (Status::Active, None) => (EntryForm::Original, None),
                (Status::Active, Some((kind, text))) => {
                    (EntryForm::Compressed { kind: *kind }, Some(text.clone()))
                }
                (Status::Archived, _) if retrieved.contains(&it.chunk.id) => (
                    EntryForm::Retrieved,
                    it.compressed.as_ref().map(|c| c.1.clone()),
                ),
                _ => continue,
            };
            tokens += u64::from(it.tokens);
            d.entries.push(ContextEntry {
                chunk: Some(it.chunk.id),
                tokens: it.tokens,
                form,
                text,
            });
        }
        for s in pending {
            tokens += u64::from(s.tokens);
            d.entries.push(summary_entry(s));
        }
        d.tokens = tokens;
        // Items compacted away earlier still count for keeping everything.
        d.full_tokens = full + self.compacted_tokens;
    }

    /// Removes items that cannot come back (dropped, for strategies that never restore; gone,
    /// always) and rebuilds the index.
    fn compact(&mut self) {
        let restores = matches!(
            self.config.strategy,
            Strategy::LangchainTrim | Strategy::OpenaiKeepLastN | Strategy::Oracle
        );
        let before = self.items.len();
        let mut freed = 0u64;
        self.items.retain(|it| {
            let keep = match it.status {
                Status::Gone => false,
                Status::Dropped => restores,
                Status::Active | Status::Archived => true,
            };
            if !keep && it.status == Status::Dropped {
                freed += u64::from(it.chunk.tokens);
            }
            keep
        });
        self.compacted_tokens += freed;
        if self.items.len() != before {
            self.index = self
                .items
                .iter()
                .enumerate()
                .map(|(i, it)| (it.chunk.id, i))
                .collect();
        }
    }

    /// Whether the engine's strategy is one MemLens owns (repaired to keep every invariant).
    pub fn guarantees_invariants(&self) -> bool {
        self.config.strategy.repairs_invariants()
    }
}
