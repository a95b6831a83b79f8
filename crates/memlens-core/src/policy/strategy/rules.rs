//! MemLens' own rules, shared by the window and value strategies (they differ only in the order
//! units go): max age and quotas, clearing old tool results, the value threshold, eviction to
//! the budget (compression first; with a cleanup rule, only past its trigger), a context that
//! starts on a user message, and retrieval from the archive within the reserve.

use super::super::compress::{compact_json, strip_markup, CompressKind};
use super::super::config::{Compress, SummaryModel};
use super::super::engine::decision::Decision;
use super::super::engine::state::{State, Status, Summary};
use crate::model::{Category, ChunkId};

/// Units (with their item indices) in the order they go, first to go first.
pub(crate) type EvictionOrder = fn(&State, &str) -> Vec<(u32, Vec<usize>)>;

/// Runs every MemLens rule for one call, evicting in `order`'s order.
pub(crate) fn apply(s: &mut State, query: &str, order: EvictionOrder, d: &mut Decision) {
    let budget = s.options.budget;
    let reserve = s
        .config
        .offload
        .as_ref()
        .map_or(0, |o| (budget as f32 * o.reserve.clamp(0.0, 0.9)) as u32);
    s.age_and_quotas(d);
    s.clear_old_tool_results(d);
    s.evict_below_threshold(query, d);
    s.evict_to(budget.saturating_sub(reserve), query, order, d);
    s.start_on_user(d);
    if s.config.offload.is_some() {
        s.retrieve(query, d);
    }
}

/// Unprotected units with an active item, oldest first (the order they came in).
pub(crate) fn oldest_first(s: &State, _query: &str) -> Vec<(u32, Vec<usize>)> {
    s.active_units()
        .into_iter()
        .filter(|(_, m)| !s.unit_protected(m))
        .collect()
}

impl State {
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

    /// Evicts down to `limit` (or, with a cleanup rule, down to its target once past its
    /// trigger): compression first, then whole units in `order`'s order.
    fn evict_to(&mut self, limit: u32, query: &str, order: EvictionOrder, d: &mut Decision) {
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
        if total <= limit {
            return;
        }
        let order = order(self, query);
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
    fn try_compress(&mut self, i: usize, rules: &Compress, d: &mut Decision) -> u64 {
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
        let summary_tokens = ((tokens as f64 * model.ratio).ceil() as u32).max(1);
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
    pub(crate) fn start_on_user(&mut self, d: &mut Decision) {
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
}
