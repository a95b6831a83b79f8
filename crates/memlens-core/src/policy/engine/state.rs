//! The engine's bookkeeping: one item per chunk, grouped into units that stay or go together,
//! protection fixed on arrival, and the value and reference work that waits until something
//! reads values.

use super::super::compress::CompressKind;
use super::super::config::{PolicyConfig, PolicyError};
use super::decision::EngineOptions;
use crate::model::{Category, Chunk, ChunkId};
use crate::recall::RecallIndex;
use crate::references::Detector;
use crate::time::timestamp_secs;
use crate::tokens::TokenCounter;
use crate::value::{ValueConfig, ValueEngine};
use foldhash::{HashMap, HashMapExt};
use regex::Regex;

/// Where an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// In the context (possibly compressed or cleared).
    Active,
    /// Offloaded: out of the context, retrievable.
    Archived,
    /// Out of the context for good (unless the strategy restores dropped items).
    Dropped,
    /// The agent itself no longer sends it.
    Gone,
}

#[derive(Debug, Clone)]
pub(crate) struct Item {
    /// Boxed: every call walks the items (emit, compaction, eviction), and a chunk inline made
    /// an item 376 bytes, six cache lines, of which the walks read a few fields (BENCHMARKS.md,
    /// "Live pool").
    pub(crate) chunk: Box<Chunk>,
    /// The chunk's id, category and tokens (before compression), copied from it for the walks.
    pub(crate) id: ChunkId,
    pub(crate) category: Category,
    pub(crate) chunk_tokens: u32,
    /// Tokens now (after compression).
    pub(crate) tokens: u32,
    /// Its compressed text, shared with the contexts that send it: as a `String` it was copied
    /// into every context and again by the live pool's rendering.
    pub(crate) compressed: Option<(CompressKind, std::sync::Arc<str>)>,
    pub(crate) status: Status,
    pub(crate) unit: u32,
    pub(crate) message: u32,
    pub(crate) added_call: u32,
    /// Protected by category or directive pattern (fixed when added).
    pub(crate) pinned: bool,
    /// Arrival order (item indices shift when dropped items are compacted away).
    pub(crate) seq: u64,
    /// Its timestamp, seconds since the epoch, when the trace gave one.
    pub(crate) time: Option<f64>,
    /// The distinctive tokens' keys of the text it is sent as, each once, once a rule asked
    /// (`evict_echoed_replies`); cleared when its text changes.
    pub(crate) echo_keys: Option<Box<[String]>>,
}

impl Item {
    /// The kind of turn the item opens: its category, except that a user's image, file,
    /// summary or preference (role `user`) opens a user turn, as providers and LangChain's
    /// `start_on="human"` see it.
    pub(crate) fn turn_kind(&self) -> Category {
        if self.chunk.opens_user_turn() {
            Category::User
        } else {
            self.category
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Summary {
    /// Emitted before the first item added at or after this sequence number.
    pub(crate) at: u64,
    pub(crate) tokens: u32,
    pub(crate) covers: Vec<ChunkId>,
    pub(crate) active: bool,
}

/// Value-engine and detector work queued by [`State::add`] (see `State::backlog`).
#[derive(Debug, Clone)]
pub(crate) enum Deferred {
    /// A chunk to add to the value engine (and to the detector's index unless it is an output),
    /// copied: a strategy that reads no values may compact its item away before the work is done.
    Add {
        chunk: Box<Chunk>,
        call: u32,
        time: Option<f64>,
        observe: bool,
    },
    /// The same for the item with sequence number `seq`, which is still held when the work is
    /// done: a strategy that reads values does its queued work before any item goes
    /// ([`State::compact`]), so no copy is made.
    AddHeld {
        seq: u64,
        call: u32,
        time: Option<f64>,
        observe: bool,
    },
    /// One agent message's output chunks, whose references to earlier chunks count as uses.
    Outputs { call: u32, chunks: Vec<Chunk> },
}

/// The engine's bookkeeping, shared by every strategy: items, units, protection, the value
/// engine and reference detector, the archive's index and summaries.
#[derive(Clone)]
pub(crate) struct State {
    pub(crate) config: PolicyConfig,
    pub(crate) options: EngineOptions,
    pub(crate) counter: TokenCounter,
    pub(crate) patterns: Vec<Regex>,
    /// Live items in arrival order. Dropped and gone items are compacted away after each call
    /// (unless the strategy may bring them back), so per-call work follows the context, not the
    /// history.
    pub(crate) items: Vec<Item>,
    /// Every chunk ever added -> its arrival order (`Item::seq`). Items stay sorted by `seq`, so
    /// a chunk's position is a binary search away ([`State::position`]) and nothing needs
    /// rebuilding when items are compacted away.
    pub(crate) seq_of: HashMap<ChunkId, u64>,
    /// The arrival rank of the first item after the preamble that the host still sends: the
    /// agent's own opening, which a context may start on whatever it is.
    pub(crate) opening: Option<u64>,
    /// BM25 document id -> chunk.
    pub(crate) doc_chunk: Vec<ChunkId>,
    /// BM25 document id -> its item's tokens now (kept in step with compression), so retrieval
    /// can pass over a document that cannot fit without finding its item. Documents are numbered
    /// by arrival like `seq` (every chunk gets one when the policy has an archive).
    pub(crate) doc_tokens: Vec<u32>,
    pub(crate) next_seq: u64,
    /// Tokens of dropped items compacted away (still part of "keeping everything").
    pub(crate) compacted_tokens: u64,
    pub(crate) unit_of_call_id: HashMap<String, u32>,
    pub(crate) units: u32,
    pub(crate) messages: u32,
    /// Message whose tool calls form the open tool unit, and that unit.
    pub(crate) tool_unit: Option<(u32, u32)>,
    pub(crate) call: u32,
    /// Message id of the newest user turn (kept up to date on add and retain).
    pub(crate) newest_user: Option<u32>,
    pub(crate) value: ValueEngine,
    /// The policy's value settings. Until the run has a tool call or result (a conversation
    /// between people, or a chat) the value engine weighs the assistant's turns as the user's:
    /// see [`conversation_settings`].
    pub(crate) policy_value: ValueConfig,
    /// Whether a tool call or tool result has arrived: the run is an agent's, not a
    /// conversation (see [`conversation_settings`]).
    pub(crate) saw_tools: bool,
    /// Whether the context has ever been over the budget: from then on an offloading policy
    /// keeps its retrieval reserve free.
    pub(crate) outgrown: bool,
    pub(crate) detector: Detector,
    /// Output chunks of the current agent message, detected together on the next non-output
    /// chunk or call.
    pub(crate) pending_outputs: Vec<Chunk>,
    /// Value-engine and reference-detector work not done yet, in order. It waits until
    /// something reads values (a ranking, an explanation, a label) or the host has time for it
    /// ([`State::catch_up`]): a turn that needs no values costs the decision alone, whatever
    /// the strategy.
    pub(crate) backlog: Vec<Deferred>,
    /// Whether the strategy (or one of its rules) reads values to decide: then queued work is
    /// done before any item goes (`State::compact`) and none is ever dropped (`State::forget`),
    /// so its values are those of work done on arrival.
    pub(crate) reads_values: bool,
    /// The archive's retrieval index (MemLens recall: BM25 with query expansion from the
    /// conversation and session cues), one document per chunk.
    pub(crate) recall: RecallIndex,
    pub(crate) summaries: Vec<Summary>,
    /// The newest timestamp seen: "now" for wall-clock ages (the core reads no clock).
    pub(crate) latest_time: Option<f64>,
    /// A live pool that gives up its history: what is compacted away is forgotten too (see
    /// [`State::forget`]).
    pub(crate) forgetting: bool,
    /// Chunks forgotten and not yet taken by the host ([`super::Engine::take_forgotten`]).
    pub(crate) forgotten: Vec<ChunkId>,
    /// Chunks forgotten since the value engine and detector were last rebuilt.
    pub(crate) forgotten_since_rebuild: usize,
    /// Readings of chunk texts shared with other replays of the trace ([`super::Engine::set_memo`]).
    pub(crate) memo: Option<super::TraceMemo>,
    /// `next_seq` when the latest context was listed, while its entries still hold for the
    /// items it covered: `None` once an item's status, text or tokens changed (every operation
    /// that changes one clears it), and for a context with summaries or retrieved chunks. Then a
    /// context that only adds the items arrived since can extend the latest one
    /// (`State::emit_after`) instead of walking every item again.
    pub(crate) emitted: Option<u64>,
}

/// The value settings for a run with no tool call or result yet: a conversation, whose two
/// parties are weighed alike (the assistant's category weight is the user's). The presets'
/// lower weight for assistant text is a prior about agents, whose replies can be regenerated and
/// whose tool results carry the facts; between people, and in a chat, either side says what a
/// later question asks about (measured on LoCoMo and on the conversations written for MemLens:
/// BENCHMARKS.md, "Live pool").
pub(crate) fn conversation_settings(policy: &ValueConfig) -> ValueConfig {
    let mut settings = policy.clone();
    let user = settings.category_weight(Category::User);
    settings.category_weights.insert(Category::Assistant, user);
    settings
}

/// The value engine and reference detector are rebuilt from the live items once this many chunks
/// (or twice the live items, if more) were forgotten since the last rebuild: their memory stays
/// within a constant factor of the live items', and the rebuild's cost (re-analysing the live
/// items) is spread over at least as many forgotten chunks.
const REBUILD_AFTER_FORGOTTEN: usize = 1024;

impl State {
    /// Fresh bookkeeping for a policy. Fails only on an invalid protection pattern.
    /// `reads_values`: the strategy reads values to decide (see `State::reads_values`).
    pub(crate) fn new(
        config: PolicyConfig,
        options: EngineOptions,
        counter: TokenCounter,
        reads_values: bool,
    ) -> Result<State, PolicyError> {
        let patterns = config
            .protect
            .patterns
            .iter()
            .map(|p| compiled(p))
            .collect::<Result<_, _>>()?;
        let policy_value = config.value_config()?;
        Ok(State {
            value: ValueEngine::new(conversation_settings(&policy_value)),
            policy_value,
            saw_tools: false,
            outgrown: false,
            config,
            options,
            counter,
            patterns,
            items: Vec::new(),
            seq_of: HashMap::new(),
            opening: None,
            doc_chunk: Vec::new(),
            doc_tokens: Vec::new(),
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
            reads_values,
            recall: RecallIndex::new(),
            summaries: Vec::new(),
            latest_time: None,
            forgetting: false,
            forgotten: Vec::new(),
            forgotten_since_rebuild: 0,
            memo: None,
            emitted: None,
        })
    }

    /// True when the chunk was added.
    pub(crate) fn contains(&self, chunk: ChunkId) -> bool {
        self.seq_of.contains_key(&chunk)
    }

    /// Position in `items` of a chunk's item, when it is still there.
    pub(crate) fn position(&self, chunk: ChunkId) -> Option<usize> {
        let seq = *self.seq_of.get(&chunk)?;
        self.items.binary_search_by_key(&seq, |it| it.seq).ok()
    }

    /// Adds a chunk (a new memory item). Chunks of one message are added together, the first with
    /// `starts_message`. Adding a chunk id twice is ignored.
    pub(crate) fn add(&mut self, chunk: &Chunk) {
        if self.seq_of.contains_key(&chunk.id) {
            return;
        }
        self.seq_of.insert(chunk.id, self.next_seq);
        if self.opening.is_none() && !chunk.is_preamble() {
            self.opening = Some(self.next_seq);
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
        if !self.saw_tools && matches!(chunk.category, Category::ToolCall | Category::ToolResult) {
            // An agent's run from here on: the policy's own settings, for every chunk.
            self.saw_tools = true;
            self.value.set_config(self.policy_value.clone());
        }
        let pinned = chunk.is_preamble()
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
        let time = chunk.meta.timestamp.as_deref().and_then(timestamp_secs);
        if let Some(t) = time {
            self.latest_time = Some(self.latest_time.map_or(t, |l| l.max(t)));
        }
        self.queue_value_work(chunk, time, observe);
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
            debug_assert_eq!(u64::from(doc), self.next_seq);
            self.doc_chunk.push(chunk.id);
            self.doc_tokens.push(chunk.tokens);
        }
        self.next_seq += 1;
        self.items.push(Item {
            chunk: Box::new(chunk.clone()),
            id: chunk.id,
            // The preamble (tool definitions, unrecorded context) is not a message: every rule
            // and incumbent passes over it as over the system prompt, so the walks see it as one.
            category: if chunk.is_preamble() {
                Category::System
            } else {
                chunk.category
            },
            chunk_tokens: chunk.tokens,
            tokens: chunk.tokens,
            compressed: None,
            status: Status::Active,
            unit,
            message,
            added_call: self.call,
            pinned,
            seq: self.next_seq - 1,
            time,
            echo_keys: None,
        });
        // The policy's own labels (by key) apply from the chunk's arrival.
        if let Some(&label) = self.config.labels.get(&chunk.key) {
            self.label(chunk.id, Some(label));
        }
    }

    /// Queues the value engine's (and, when `observe`, the detector's) work on the chunk being
    /// added, as item `next_seq` (see [`Deferred`]).
    fn queue_value_work(&mut self, chunk: &Chunk, time: Option<f64>, observe: bool) {
        let call = self.call;
        self.backlog.push(if self.reads_values {
            Deferred::AddHeld {
                seq: self.next_seq,
                call,
                time,
                observe,
            }
        } else {
            Deferred::Add {
                chunk: Box::new(chunk.clone()),
                call,
                time,
                observe,
            }
        });
    }

    /// Runs the reference detector on the buffered output chunks of the last agent message: the
    /// earlier chunks they used gain popularity.
    pub(crate) fn flush_outputs(&mut self) {
        if self.pending_outputs.is_empty() {
            return;
        }
        let outputs = std::mem::take(&mut self.pending_outputs);
        self.defer(Deferred::Outputs {
            call: self.call.saturating_sub(1),
            chunks: outputs,
        });
    }

    /// Queues value-engine and detector work (see `State::backlog`).
    fn defer(&mut self, work: Deferred) {
        self.backlog.push(work);
    }

    /// Does the queued work, in order: exactly what adding and detecting eagerly would have done.
    pub(crate) fn catch_up(&mut self) {
        if self.backlog.is_empty() {
            return;
        }
        // Drained in place: the queue keeps its allocation for the next turn's work.
        let mut backlog = std::mem::take(&mut self.backlog);
        for work in backlog.drain(..) {
            match work {
                Deferred::Add {
                    chunk,
                    call,
                    time,
                    observe,
                } => add_values(
                    &mut self.detector,
                    &mut self.value,
                    &chunk,
                    call,
                    time,
                    observe,
                ),
                Deferred::AddHeld {
                    seq,
                    call,
                    time,
                    observe,
                } => {
                    let held = self.items.binary_search_by_key(&seq, |it| it.seq);
                    debug_assert!(held.is_ok(), "queued work's item {seq} went first");
                    if let Ok(i) = held {
                        let chunk = &self.items[i].chunk;
                        add_values(
                            &mut self.detector,
                            &mut self.value,
                            chunk,
                            call,
                            time,
                            observe,
                        );
                    }
                }
                Deferred::Outputs { call, chunks } => {
                    let refs: Vec<&Chunk> = chunks.iter().collect();
                    for r in self.detector.outputs(call, &refs) {
                        self.value.record_use(r.used);
                    }
                }
            }
        }
        self.backlog = backlog;
    }

    fn new_unit(&mut self) -> u32 {
        self.units += 1;
        self.units - 1
    }

    /// Marks every added chunk that is not in `live` as gone: the agent no longer sends it (a
    /// recorded trace whose own agent trimmed its history). Used by the simulator.
    pub(crate) fn retain(&mut self, live: &[ChunkId]) {
        let keep: std::collections::HashSet<ChunkId> = live.iter().copied().collect();
        for item in &mut self.items {
            if item.status != Status::Gone && !keep.contains(&item.id) {
                self.emitted = None;
                item.status = Status::Gone;
            }
        }
        self.newest_user = self
            .items
            .iter()
            .rev()
            .find(|it| it.status != Status::Gone && it.category == Category::User)
            .map(|it| it.message);
        // The preamble is never dropped, so a live chunk no longer held is past it.
        self.opening = live
            .iter()
            .filter_map(|id| self.seq_of.get(id).copied())
            .filter(|&seq| {
                self.items
                    .binary_search_by_key(&seq, |it| it.seq)
                    .map_or(true, |i| self.items[i].category != Category::System)
            })
            .min();
    }

    /// Forgets chunks compacted away for good (forgetting engines only; each with its call id
    /// when it is a tool result): their arrival order, their queued value work, a tool result's
    /// pairing, and, every so often, their entries in
    /// the value engine and the detector, which are rebuilt from the live items (carrying uses,
    /// labels and host values). Values and references are then measured against what the
    /// engine still holds: redundancy against live chunks, BM25 statistics over live chunks.
    pub(crate) fn forget(&mut self, removed: Vec<(ChunkId, Option<String>)>) {
        if removed.is_empty() {
            return;
        }
        let gone: foldhash::HashSet<ChunkId> = removed.iter().map(|(id, _)| *id).collect();
        for (id, result_of_call) in &removed {
            self.seq_of.remove(id);
            if let Some(call_id) = result_of_call {
                self.unit_of_call_id.remove(call_id);
            }
        }
        if self.reads_values {
            // Values decide here: nothing queued is dropped (`compact` already did the work of
            // the items that went; this is every other path), so the value engine and the
            // detector hold what they would hold had nothing waited.
            self.catch_up();
        }
        // Work queued for strategies that do not read values: a forgotten chunk's is dropped
        // (its uses by outputs not yet detected are not counted).
        self.backlog.retain_mut(|work| match work {
            Deferred::Add { chunk, .. } => !gone.contains(&chunk.id),
            // Only strategies that read values queue these, and they caught up above.
            Deferred::AddHeld { .. } => true,
            Deferred::Outputs { chunks, .. } => {
                chunks.retain(|c| !gone.contains(&c.id));
                !chunks.is_empty()
            }
        });
        self.forgotten_since_rebuild += removed.len();
        self.forgotten.extend(removed.into_iter().map(|(id, _)| id));
        if self.forgotten_since_rebuild >= REBUILD_AFTER_FORGOTTEN.max(2 * self.items.len()) {
            self.rebuild_indexes();
        }
    }

    /// A fresh value engine and detector holding the live items they held before, in arrival
    /// order (the backlog still holds the rest), with their uses, labels and host values.
    fn rebuild_indexes(&mut self) {
        self.forgotten_since_rebuild = 0;
        let fresh = ValueEngine::new(self.value.config().clone());
        let old_value = std::mem::replace(&mut self.value, fresh);
        let old_detector = std::mem::take(&mut self.detector);
        if let Some(memo) = &self.memo {
            self.detector.set_memo(memo.references.clone());
            self.value.set_memo(memo.value.clone());
        }
        for item in &self.items {
            let id = item.id;
            if old_detector.contains(id) {
                self.detector.observe(&item.chunk);
            }
            if old_value.contains(id) {
                self.value.add(&item.chunk, item.added_call, item.time);
                self.value.carry(&old_value, id);
            }
        }
    }

    /// Labels a chunk for the value engine (and protection: important chunks are kept).
    pub(crate) fn label(&mut self, chunk: ChunkId, label: Option<crate::value::Label>) {
        self.catch_up();
        self.value.set_label(chunk, label);
        if let Some(i) = self.position(chunk) {
            self.items[i].pinned |= label == Some(crate::value::Label::Important);
        }
    }
}

/// A protection pattern, compiled once per process: an engine is made per trace and per
/// simulation (a fleet simulation makes thousands), and compiling the default patterns once per
/// engine made the value policy's replays of tau-bench 1.7x slower (3.0 s against 1.8 s for 200
/// trajectories at 3 budgets). Bounded: a host making endless distinct patterns starts over.
fn compiled(pattern: &str) -> Result<Regex, PolicyError> {
    static CACHE: std::sync::OnceLock<std::sync::Mutex<HashMap<String, Regex>>> =
        std::sync::OnceLock::new();
    const MAX_PATTERNS: usize = 1024;
    let cache = CACHE.get_or_init(Default::default);
    // A poisoned lock only means another thread panicked mid-insert; the map is still valid.
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(regex) = cache.get(pattern) {
        return Ok(regex.clone());
    }
    let regex = Regex::new(pattern).map_err(|e| PolicyError::Pattern {
        pattern: pattern.to_string(),
        message: e.to_string(),
    })?;
    if cache.len() >= MAX_PATTERNS {
        cache.clear();
    }
    cache.insert(pattern.to_string(), regex.clone());
    Ok(regex)
}

/// A chunk into the value engine, and into the detector's index when `observe` (fields, not
/// `&mut State`: a held item's chunk is borrowed from the state's items meanwhile).
fn add_values(
    detector: &mut Detector,
    value: &mut ValueEngine,
    chunk: &Chunk,
    call: u32,
    time: Option<f64>,
    observe: bool,
) {
    if observe {
        detector.observe(chunk);
    }
    value.add(chunk, call, time);
}
