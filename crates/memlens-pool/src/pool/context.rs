//! Deciding the context for the next call and rendering it as the caller's messages: each
//! unchanged message by reference, patched copies where parts were compressed or removed, and
//! summaries for the host to produce.

use super::{PendingCall, Pool};
use crate::render::{self, PartState};
use memlens_core::policy::{ContextEntry, Decision, EntryForm};
use memlens_core::tokens::REPLY_PRIMING_TOKENS;
use memlens_core::{Category, ChunkId};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

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

impl Pool {
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
}
