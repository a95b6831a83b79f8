//! The bookkeeping operations strategies are built from: which items are live, active and
//! protected, units, eviction and compression of one unit or item, message-level views for the
//! incumbents, and the output (entries in order, then compaction of what cannot come back).

use super::super::compress::CompressKind;
use super::decision::{ContextEntry, Decision, EntryForm};
use super::state::{Item, State, Status, Summary};
use crate::model::{Category, ChunkId};
use crate::tokens::REPLY_PRIMING_TOKENS;
use smallvec::SmallVec;

/// Lists one item: its entry, if it is in the context (`retrieved`: the chunks brought back from
/// the archive for this call), onto `entries`, with its tokens added to `tokens`; a live item's
/// tokens before compression to `full` (what keeping everything would send).
fn list_item(
    it: &Item,
    retrieved: &std::collections::HashSet<ChunkId>,
    entries: &mut Vec<ContextEntry>,
    tokens: &mut u64,
    full: &mut u64,
) {
    if it.status == Status::Gone {
        return;
    }
    *full += u64::from(it.chunk_tokens);
    let (form, text) = match (it.status, &it.compressed) {
        (Status::Active, None) => (EntryForm::Original, None),
        (Status::Active, Some((kind, text))) => {
            (EntryForm::Compressed { kind: *kind }, Some(text.clone()))
        }
        (Status::Archived, _) if retrieved.contains(&it.id) => (
            EntryForm::Retrieved,
            it.compressed.as_ref().map(|c| c.1.clone()),
        ),
        _ => return,
    };
    *tokens += u64::from(it.tokens);
    entries.push(ContextEntry {
        chunk: Some(it.id),
        tokens: it.tokens,
        form,
        text,
    });
}

/// The item indices of one unit. Inline up to four: almost every unit is one message, or one
/// tool call with its result, and units are listed every turn.
pub(crate) type Members = SmallVec<[usize; 4]>;

/// The unit whose pairs start at `pairs[k]` (see [`State::unit_pairs`]): its id, its items and
/// where the next unit starts.
pub(crate) fn unit_at(pairs: &[(u32, usize)], k: usize) -> (u32, Members, usize) {
    let unit = pairs[k].0;
    // A unit is one or two items almost always: a scan, not a binary search of the rest.
    let end = k + pairs[k..].iter().take_while(|p| p.0 == unit).count();
    (unit, pairs[k..end].iter().map(|&(_, i)| i).collect(), end)
}

impl State {
    pub(crate) fn live(&self, i: usize) -> bool {
        self.items[i].status != Status::Gone
    }

    pub(crate) fn active(&self, i: usize) -> bool {
        self.items[i].status == Status::Active
    }

    pub(crate) fn active_tokens(&self) -> u64 {
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

    pub(crate) fn newest_user_text(&self) -> Option<String> {
        let m = self.newest_user?;
        Some(
            self.items
                .iter()
                .rev()
                .take_while(|it| it.message >= m)
                .filter(|it| it.message == m && it.category == Category::User)
                .map(|it| it.chunk.content.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }

    /// Protected now: pinned, in the newest user message, or among the newest messages.
    pub(crate) fn protected(&self, i: usize) -> bool {
        let it = &self.items[i];
        if it.pinned {
            return true;
        }
        if self.newest_user == Some(it.message) && it.category == Category::User {
            return true;
        }
        let recent = self.config.protect.recent_messages;
        recent > 0 && it.message + recent >= self.messages
    }

    /// Units (in order of first item) with their item indices, for units with an active item.
    pub(crate) fn active_units(&self) -> Vec<(u32, Members)> {
        let pairs = self.unit_pairs();
        let mut out: Vec<(u32, Members)> = Vec::with_capacity(pairs.len());
        let mut k = 0;
        while k < pairs.len() {
            let (unit, members, next) = unit_at(&pairs, k);
            if members.iter().any(|&i| self.active(i)) {
                out.push((unit, members));
            }
            k = next;
        }
        out
    }

    /// `(unit, item)` for every live item, sorted: units in order of their first item, each
    /// unit's items together (walk them with [`unit_at`]; a rule that stops after a few units
    /// need not list them all).
    pub(crate) fn unit_pairs(&self) -> Vec<(u32, usize)> {
        // Unit ids are handed out when a unit's first item arrives and items are kept in arrival
        // order, so ordering by (unit, item) groups units in order of their first item. Sorting
        // nearly sorted pairs is cheaper than a hash map per call, and the stable sort finds
        // the runs already in order (only a tool result arriving after other units is out of
        // place); pairs are distinct, so it orders them as the unstable sort does.
        // Sized for every item up front: collected through the filter it grew a step at a time,
        // and its reallocations cost more than the sort (callgrind, BENCHMARKS.md, "Live pool").
        let mut pairs: Vec<(u32, usize)> = Vec::with_capacity(self.items.len());
        pairs.extend(
            self.items
                .iter()
                .enumerate()
                .filter(|(_, it)| it.status != Status::Gone)
                .map(|(i, it)| (it.unit, i)),
        );
        pairs.sort();
        pairs
    }

    pub(crate) fn unit_protected(&self, members: &[usize]) -> bool {
        members.iter().any(|&i| self.protected(i))
    }

    /// Evicts a unit's active items; returns the tokens freed.
    pub(crate) fn evict_unit(&mut self, members: &[usize], d: &mut Decision) -> u64 {
        let to = if self.config.offload.is_some() {
            Status::Archived
        } else {
            Status::Dropped
        };
        let mut freed = 0;
        for &i in members {
            if self.items[i].status == Status::Active {
                self.emitted = None;
                self.items[i].status = to;
                freed += u64::from(self.items[i].tokens);
                d.evicted.push(self.items[i].id);
            }
        }
        freed
    }

    /// Replaces an item's text when that saves tokens; returns the tokens saved.
    pub(crate) fn set_compressed(
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
        self.emitted = None;
        self.items[i].tokens = tokens;
        // Its archive document is numbered like its `seq` (none without an archive).
        if let Some(t) = self.doc_tokens.get_mut(self.items[i].seq as usize) {
            *t = tokens;
        }
        self.items[i].compressed = Some((kind, text.into()));
        self.items[i].echo_keys = None;
        d.compressed.push(self.items[i].id);
        saved
    }

    /// Message ids of live non-system messages, oldest first, with their token totals.
    pub(crate) fn message_tokens(&self) -> Vec<(u32, u64, Category)> {
        self.messages_where(|status| status != Status::Gone)
    }

    /// Like [`State::message_tokens`], counting only active items (messages with none left out).
    pub(crate) fn active_message_tokens(&self) -> Vec<(u32, u64, Category)> {
        self.messages_where(|status| status == Status::Active)
    }

    /// Non-system messages of the items whose status passes `keep`, oldest first, with their
    /// token totals and the kind of turn they are ([`Item::turn_kind`] of their first item, or
    /// of the next one past an image or file of no role).
    pub(crate) fn messages_where(
        &self,
        keep: impl Fn(Status) -> bool,
    ) -> Vec<(u32, u64, Category)> {
        let mut out: Vec<(u32, u64, Category)> = Vec::new();
        for it in self.items.iter().filter(|it| keep(it.status)) {
            if it.category == Category::System {
                continue;
            }
            match out.last_mut() {
                Some((m, t, c)) if *m == it.message => {
                    *t += u64::from(it.tokens);
                    if *c == Category::Other {
                        *c = it.turn_kind();
                    }
                }
                _ => out.push((it.message, u64::from(it.tokens), it.turn_kind())),
            }
        }
        out
    }

    /// A limit from an incumbent's parameters: 0 means the simulated budget.
    pub(crate) fn or_budget(&self, limit: u32) -> u32 {
        if limit == 0 {
            self.options.budget
        } else {
            limit
        }
    }

    pub(crate) fn system_tokens(&self) -> u64 {
        self.items
            .iter()
            .filter(|it| it.status != Status::Gone && it.category == Category::System)
            .map(|it| u64::from(it.tokens))
            .sum()
    }

    /// Sets every live non-system item's status from the set of kept messages (stateless
    /// strategies recompute this every call).
    pub(crate) fn keep_messages(
        &mut self,
        kept: &std::collections::HashSet<u32>,
        d: &mut Decision,
    ) {
        self.emitted = None;
        for it in &mut self.items {
            if it.status == Status::Gone || it.category == Category::System {
                continue;
            }
            let keep = kept.contains(&it.message);
            if !keep && it.status == Status::Active {
                d.evicted.push(it.id);
            }
            it.status = if keep {
                Status::Active
            } else {
                Status::Dropped
            };
        }
    }

    /// Lists the context's entries in order, with its tokens and what keeping everything would
    /// send, into `d`.
    pub(crate) fn emit(&mut self, d: &mut Decision) {
        let retrieved: std::collections::HashSet<ChunkId> = d.retrieved.iter().copied().collect();
        let mut tokens = u64::from(REPLY_PRIMING_TOKENS);
        let mut full = u64::from(REPLY_PRIMING_TOKENS);
        let mut summaries: Vec<&Summary> = self.summaries.iter().filter(|s| s.active).collect();
        summaries.sort_by_key(|s| s.at);
        let mut pending = summaries.into_iter().peekable();
        // At most one entry per item and summary: pushed one by one, the list was regrown.
        d.entries.reserve(self.items.len() + self.summaries.len());
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
            list_item(it, &retrieved, &mut d.entries, &mut tokens, &mut full);
        }
        for s in pending {
            tokens += u64::from(s.tokens);
            d.entries.push(summary_entry(s));
        }
        d.tokens = tokens;
        // Items compacted away earlier still count for keeping everything.
        d.full_tokens = full + self.compacted_tokens;
        // Retrieval lasts one call and summaries sit between items: a context with either is
        // never extended.
        self.emitted =
            (d.retrieved.is_empty() && self.summaries.is_empty()).then_some(self.next_seq);
    }

    /// Emits this call's context by extending `previous`, the latest context's, when no item
    /// it listed changed since (see `State::emitted`) and this call retrieved nothing: its
    /// entries are moved into `d` and the items that arrived since are appended. Returns false,
    /// leaving both alone, when the context must be listed afresh ([`State::emit`]).
    pub(crate) fn emit_after(&mut self, previous: &mut Decision, d: &mut Decision) -> bool {
        let Some(from) = self.emitted else {
            return false;
        };
        if !d.retrieved.is_empty() || !self.summaries.is_empty() || previous.call + 1 != d.call {
            return false;
        }
        // Items stay in arrival order: the new ones are at the end.
        let start = self.items.partition_point(|it| it.seq < from);
        let none = std::collections::HashSet::new();
        d.entries = std::mem::take(&mut previous.entries);
        let (mut tokens, mut full) = (previous.tokens, previous.full_tokens);
        for it in &self.items[start..] {
            list_item(it, &none, &mut d.entries, &mut tokens, &mut full);
        }
        d.tokens = tokens;
        d.full_tokens = full;
        self.emitted = Some(self.next_seq);
        true
    }

    /// Removes items that cannot come back (dropped, unless the strategy `restores` dropped
    /// items; gone, always). The rest keep their order, so [`State::position`] still holds.
    pub(crate) fn compact(&mut self, restores: bool) {
        let keep = |it: &Item| match it.status {
            Status::Gone => false,
            Status::Dropped => restores,
            Status::Active | Status::Archived => true,
        };
        if self.reads_values && !self.backlog.is_empty() && !self.items.iter().all(keep) {
            // Queued work reads held items (`Deferred::AddHeld`): done before any goes.
            self.catch_up();
        }
        // One pass over the items (this runs after every call): what goes is counted, and a
        // forgetting engine keeps it to forget.
        let forgetting = self.forgetting;
        let mut freed = 0u64;
        let mut removed = Vec::new();
        self.items.retain_mut(|it| {
            if keep(it) {
                return true;
            }
            if it.status == Status::Dropped {
                freed += u64::from(it.chunk_tokens);
            }
            if forgetting {
                // A tool result's call id: the pair is complete, the id is not looked up again.
                let call_id = (it.category == Category::ToolResult)
                    .then(|| it.chunk.meta.tool_call_id.take())
                    .flatten();
                removed.push((it.id, call_id));
            }
            false
        });
        self.compacted_tokens += freed;
        self.forget(removed);
    }
}
