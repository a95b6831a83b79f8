//! MemLens' own rules, shared by the window and value strategies (they differ only in the order
//! units go): per-tool rules, max age (calls, seconds) and quotas, clearing old tool results, the value threshold, eviction to
//! the budget (compression first; with a cleanup rule, only past its trigger), a context that
//! starts on a user message, and retrieval from the archive within the reserve.

use super::super::compress::{compact_json, minify_json, strip_markup, toon_json, CompressKind};
use super::super::config::{Compress, JsonCompress, QuotaOrder, SummaryModel, ToolRule};
use super::super::engine::decision::Decision;
use super::super::engine::ops::{unit_at, Members};
use super::super::engine::state::{State, Status, Summary};
use super::ranked::Ranked;
use crate::model::{Category, Chunk, ChunkId};
use crate::references::distinctive_tokens;
use foldhash::{HashMap, HashMapExt};

/// Units (with their item indices) in the order they go, first to go first.
pub(crate) type EvictionOrder = fn(&mut State, &str) -> Ranked;

/// Runs every MemLens rule for one call, evicting in `order`'s order.
pub(crate) fn apply(s: &mut State, query: &str, order: EvictionOrder, d: &mut Decision) {
    let budget = s.options.budget;
    let reserve = s
        .config
        .offload
        .as_ref()
        .map_or(0, |o| (budget as f32 * o.reserve.clamp(0.0, 0.9)) as u32);
    s.reencode_new_json_results(d);
    s.apply_tool_rules(d);
    s.evict_aged(query, d);
    s.enforce_quotas(query, d);
    s.clear_old_tool_results(d);
    s.evict_below_threshold(query, d);
    s.evict_echoed_replies(d);
    // A history that has always fitted is sent whole; once it outgrows the budget, the
    // retrieval reserve is kept free.
    s.outgrown = s.outgrown || reserve == 0 || s.active_tokens() > u64::from(budget);
    if s.outgrown {
        s.evict_to(budget.saturating_sub(reserve), query, order, d);
    }
    s.start_on_user(d);
    if s.config.offload.is_some() {
        s.retrieve(query, d);
    }
}

/// Unprotected units with an active item, oldest first (the order they came in).
pub(crate) fn oldest_first(s: &mut State, _query: &str) -> Ranked {
    Ranked::in_order(unprotected_units(s))
}

fn unprotected_units(s: &State) -> Vec<(u32, Members)> {
    s.active_units()
        .into_iter()
        .filter(|(_, m)| !s.unit_protected(m))
        .collect()
}

/// Unprotected units with an active item, lowest value per token first (ties: oldest first):
/// the value strategy's order, and quotas' with `quota_order = "value"`. Per token raised to the
/// policy's `size_exponent`; unset, 1 once the run has a tool call or result and 0 before (a
/// conversation: value alone, see below).
pub(crate) fn by_value_per_token(s: &mut State, query: &str) -> Ranked {
    // Per token suits an agent's run, where a tool result can be a hundred times a message's
    // size. In a conversation the turns are alike in size and per token only gives up the longer,
    // more informative ones: on LoCoMo and on the conversations written for MemLens, value alone
    // keeps far more of what later questions need (BENCHMARKS.md, Policies: "Conversations
    // (LoCoMo)"). The value work queued since the last ranking (or the host's last
    // `Engine::prepare`) first.
    s.catch_up();
    let unset = if s.saw_tools { 1.0 } else { 0.0 };
    let exponent = s
        .config
        .size_exponent
        .filter(|e| e.is_finite() && s.config.size_exponent_runs.includes(s.saw_tools))
        .map_or(unset, |e| e.clamp(0.0, 1.0));
    let units = unprotected_units(s);
    let ids: Vec<ChunkId> = units
        .iter()
        .flat_map(|(_, m)| m.iter().map(|&i| s.items[i].id))
        .collect();
    let (call, time) = (s.call, s.latest_time);
    let values = s
        .value
        .ranked_values(&ids, call, time, Some(query).filter(|q| !q.is_empty()));
    // `values` is in the order of `ids`: the units' members, unit by unit.
    let mut values = values.into_iter();
    let keys: Vec<f32> = units
        .iter()
        .map(|(_, m)| {
            let value: f32 = m.iter().map(|_| values.next().unwrap_or(0.0)).sum();
            let tokens = m.iter().map(|&i| s.items[i].tokens).sum::<u32>().max(1) as f32;
            // Exactly value per token at the default: the figures measured before it stay.
            let size = if exponent == 1.0 {
                tokens
            } else if exponent == 0.0 {
                1.0
            } else {
                tokens.powf(exponent)
            };
            value / size
        })
        .collect();
    // Ties go oldest first; eviction usually takes one or two units, so they are not all sorted.
    Ranked::by_key(units, &keys)
}

/// The placeholder a cleared tool result becomes.
fn cleared_text(chunk: &Chunk) -> String {
    format!(
        "[tool result cleared: {} ({} tokens)]",
        chunk.meta.tool_name.as_deref().unwrap_or("tool"),
        chunk.content_tokens
    )
}

impl State {
    /// Max age, in calls and in seconds (units worth `age_exempt_value` or more exempt).
    fn evict_aged(&mut self, query: &str, d: &mut Decision) {
        let (calls, secs) = (self.config.max_age_calls, self.config.max_age_seconds);
        if calls.is_none() && secs.is_none() {
            return;
        }
        let now = self.latest_time;
        let aged: Vec<Members> = self
            .active_units()
            .into_iter()
            .map(|(_, m)| m)
            .filter(|m| {
                let by_calls = calls.is_some_and(|max| {
                    let oldest = m.iter().map(|&i| self.items[i].added_call).min();
                    oldest.is_some_and(|a| a + max < self.call)
                });
                let by_secs = match (secs, now) {
                    (Some(max), Some(now)) => m
                        .iter()
                        .filter_map(|&i| self.items[i].time)
                        .reduce(f64::min)
                        .is_some_and(|oldest| now - oldest > max),
                    _ => false,
                };
                (by_calls || by_secs) && !self.unit_protected(m)
            })
            .collect();
        let exempt: Vec<bool> = match self.config.age_exempt_value {
            Some(v) => self
                .unit_best_values(&aged, query)
                .into_iter()
                .map(|best| best >= v)
                .collect(),
            None => vec![false; aged.len()],
        };
        for (members, exempt) in aged.iter().zip(exempt) {
            if !exempt {
                let _ = self.evict_unit(members, d);
            }
        }
    }

    /// Per-category quotas: past its share of the budget, a category gives up units oldest
    /// first, or lowest value per token first (`quota_order = "value"`).
    fn enforce_quotas(&mut self, query: &str, d: &mut Decision) {
        if !self.config.quotas_runs.includes(self.saw_tools) {
            return;
        }
        let quotas: Vec<(Category, f32)> =
            self.config.quotas.iter().map(|(c, q)| (*c, *q)).collect();
        for (category, share) in quotas {
            let cap = (self.options.budget as f32 * share.max(0.0)) as u64;
            let mut used: u64 = self
                .items
                .iter()
                .filter(|it| it.status == Status::Active && it.category == category)
                .map(|it| u64::from(it.tokens))
                .sum();
            if used <= cap {
                continue;
            }
            let order = match self.config.quota_order {
                QuotaOrder::Oldest => Ranked::in_order(self.active_units()),
                QuotaOrder::Value => by_value_per_token(self, query),
            };
            for (_, members) in order {
                if used <= cap {
                    break;
                }
                let in_category: u64 = members
                    .iter()
                    .filter(|&&i| self.items[i].category == category && self.active(i))
                    .map(|&i| u64::from(self.items[i].tokens))
                    .sum();
                if in_category > 0 && !self.unit_protected(&members) {
                    let _ = self.evict_unit(&members, d);
                    used = used.saturating_sub(in_category);
                }
            }
        }
    }

    /// The rule for the tool whose call or result item `i` is, if the policy has one.
    fn tool_rule(&self, i: usize) -> Option<&ToolRule> {
        let tool = self.items[i].chunk.meta.tool_name.as_ref()?;
        self.config.tools.get(tool)
    }

    /// False for results of a tool whose rule says `compress = false`.
    fn compressible(&self, i: usize) -> bool {
        self.tool_rule(i).is_none_or(|r| r.compress)
    }

    /// True when the item is sent as it came, or in a lossless form only (minified): the
    /// lossy compressions may still be tried on its original.
    fn uncompressed(&self, i: usize) -> bool {
        self.items[i]
            .compressed
            .as_ref()
            .is_none_or(|c| c.0.is_lossless())
    }

    /// `compress.minify_json` and `compress.toon_json`: the JSON tool results added for this
    /// call are sent minified or as TOON, whichever is fewer tokens, from this call on (so the
    /// cached prefix never sees them change form). Only the new items are looked at: items are
    /// in arrival order, the new ones at the end.
    fn reencode_new_json_results(&mut self, d: &mut Decision) {
        let (minify, toon) = (
            self.config.compress.minify_json,
            self.config.compress.toon_json,
        );
        if !minify && !toon {
            return;
        }
        for i in (0..self.items.len()).rev() {
            let it = &self.items[i];
            if it.added_call < self.call {
                break;
            }
            if it.status != Status::Active
                || it.category != Category::ToolResult
                || it.compressed.is_some()
                || !self.compressible(i)
            {
                continue;
            }
            let content = &it.chunk.content;
            let minified = minify.then(|| minify_json(content)).flatten();
            let as_toon = toon.then(|| toon_json(content)).flatten();
            let fewest = match (minified, as_toon) {
                (Some(m), Some(t)) => {
                    // Ties go to minified JSON: the form the model was trained on most.
                    if self.counter.count(&t) < self.counter.count(&m) {
                        Some((CompressKind::Toon, t))
                    } else {
                        Some((CompressKind::Minify, m))
                    }
                }
                (Some(m), None) => Some((CompressKind::Minify, m)),
                (None, Some(t)) => Some((CompressKind::Toon, t)),
                (None, None) => None,
            };
            // `set_compressed` keeps the original when the new form is not fewer tokens.
            if let Some((kind, text)) = fewest {
                let _ = self.set_compressed(i, kind, text, d);
            }
        }
    }

    /// Per-tool rules on the results the model has seen: clear after N calls, keep only some
    /// JSON fields. Under budget or not; protected chunks are exempt.
    fn apply_tool_rules(&mut self, d: &mut Decision) {
        if self.config.tools.is_empty() {
            return;
        }
        for i in 0..self.items.len() {
            let it = &self.items[i];
            let seen = it.added_call < self.call;
            let cleared = matches!(it.compressed, Some((CompressKind::Clear, _)));
            if it.status != Status::Active
                || it.category != Category::ToolResult
                || !seen
                || cleared
                || self.protected(i)
            {
                continue;
            }
            let Some(rule) = self.tool_rule(i).filter(|r| r.compress).cloned() else {
                continue;
            };
            let added = self.items[i].added_call;
            if rule
                .clear_after_calls
                .is_some_and(|n| added + n < self.call)
            {
                let text = cleared_text(&self.items[i].chunk);
                let _ = self.set_compressed(i, CompressKind::Clear, text, d);
            } else if !(rule.keep_fields.is_empty() && rule.drop_fields.is_empty())
                && self.uncompressed(i)
            {
                let only = JsonCompress {
                    keep_fields: rule.keep_fields,
                    drop_fields: rule.drop_fields,
                    max_array: usize::MAX,
                    max_string: usize::MAX,
                };
                if let Some(text) = compact_json(&self.items[i].chunk.content, &only) {
                    // What is left is sent in the policy's lossless form where that is fewer
                    // tokens: else a result already sent as TOON could not get smaller as JSON.
                    let text = match self.config.compress.toon_json.then(|| toon_json(&text)) {
                        Some(Some(t)) if self.counter.count(&t) < self.counter.count(&text) => t,
                        _ => text,
                    };
                    let _ = self.set_compressed(i, CompressKind::Json, text, d);
                }
            }
        }
    }

    /// Each unit's value: its most valuable member's (what the threshold and the age exemption
    /// compare).
    fn unit_best_values(&mut self, units: &[Members], query: &str) -> Vec<f32> {
        if units.is_empty() {
            return Vec::new();
        }
        self.catch_up();
        let ids: Vec<ChunkId> = units
            .iter()
            .flat_map(|m| m.iter().map(|&i| self.items[i].id))
            .collect();
        let (call, time) = (self.call, self.latest_time);
        let values =
            self.value
                .ranked_values(&ids, call, time, Some(query).filter(|q| !q.is_empty()));
        let mut values = values.into_iter();
        units
            .iter()
            .map(|m| {
                m.iter()
                    .map(|_| values.next().unwrap_or(0.0))
                    .fold(0.0f32, f32::max)
            })
            .collect()
    }

    fn clear_old_tool_results(&mut self, d: &mut Decision) {
        let Some(after) = self.config.compress.clear_tool_results_after else {
            return;
        };
        for i in 0..self.items.len() {
            let it = &self.items[i];
            if it.status == Status::Active
                && it.category == Category::ToolResult
                && self.uncompressed(i)
                && it.added_call + after < self.call
                && !self.protected(i)
                && self.compressible(i)
            {
                let text = cleared_text(&it.chunk);
                let _ = self.set_compressed(i, CompressKind::Clear, text, d);
            }
        }
    }

    /// Whether the context is still within `act_from` x the budget, where the rules that act
    /// under budget wait.
    fn below_act_from(&self) -> bool {
        self.config.act_from.is_some_and(|from| {
            let budget = f64::from(self.options.budget);
            self.active_tokens() as f64 <= budget * f64::from(from.clamp(0.0, 1.0))
        })
    }

    /// The value threshold: every unprotected unit the model has seen whose most valuable
    /// member is below it goes, under budget or not (in the kind of run it is for).
    fn evict_below_threshold(&mut self, query: &str, d: &mut Decision) {
        let Some(threshold) = self.config.value_threshold else {
            return;
        };
        if !self.config.value_threshold_runs.includes(self.saw_tools) {
            return;
        }
        if self.below_act_from() {
            return;
        }
        let units: Vec<Members> = self
            .active_units()
            .into_iter()
            .map(|(_, m)| m)
            .filter(|m| !self.unit_protected(m))
            // Not yet seen by the model: it was added for this very call.
            .filter(|m| m.iter().all(|&i| self.items[i].added_call < self.call))
            .collect();
        let best = self.unit_best_values(&units, query);
        for (members, best) in units.iter().zip(best) {
            if best < threshold {
                self.evict_unit(members, d);
            }
        }
    }

    /// `evict_echoed_replies`: every unprotected assistant reply the model has seen whose
    /// distinctive tokens are all in another active chunk (none at all included) goes, oldest
    /// first. A reply's tokens stop counting once it goes: two replies that only echo each other
    /// do not both go.
    fn evict_echoed_replies(&mut self, d: &mut Decision) {
        let runs = self.config.evict_echoed_replies;
        if !runs.is_some_and(|r| r.includes(self.saw_tools)) || self.below_act_from() {
            return;
        }
        let call = self.call;
        let replies: Vec<Members> = self
            .active_units()
            .into_iter()
            .map(|(_, m)| m)
            .filter(|m| {
                m.iter().all(|&i| {
                    let it = &self.items[i];
                    it.category == Category::Assistant && it.added_call < call
                })
            })
            .filter(|m| !self.unit_protected(m))
            .collect();
        if replies.is_empty() {
            return;
        }
        for i in 0..self.items.len() {
            if self.active(i) && self.items[i].echo_keys.is_none() {
                let it = &self.items[i];
                let text = it.compressed.as_ref().map_or(&*it.chunk.content, |c| &*c.1);
                let mut keys: Vec<String> =
                    distinctive_tokens(text).into_iter().map(|t| t.1).collect();
                keys.sort_unstable();
                keys.dedup();
                self.items[i].echo_keys = Some(keys.into_boxed_slice());
            }
        }
        let keys_of = |i: usize| self.items[i].echo_keys.as_deref().unwrap_or_default();
        let mut counts: HashMap<&str, u32> = HashMap::new();
        for i in (0..self.items.len()).filter(|&i| self.active(i)) {
            for k in keys_of(i) {
                *counts.entry(k.as_str()).or_default() += 1;
            }
        }
        let mut echoed: Vec<Members> = Vec::new();
        for members in replies {
            let own: Vec<&str> = members
                .iter()
                .filter(|&&i| self.active(i))
                .flat_map(|&i| keys_of(i).iter().map(String::as_str))
                .collect();
            let count_in = |k: &str| own.iter().filter(|&&o| o == k).count() as u32;
            if own
                .iter()
                .all(|&k| counts.get(k).copied().unwrap_or(0) > count_in(k))
            {
                for &k in &own {
                    if let Some(c) = counts.get_mut(k) {
                        *c = c.saturating_sub(1);
                    }
                }
                echoed.push(members);
            }
        }
        for members in &echoed {
            let _ = self.evict_unit(members, d);
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
        let cleanup =
            (self.config.cleanup).filter(|_| self.config.cleanup_runs.includes(self.saw_tools));
        if let Some(cleanup) = cleanup {
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
        let mut order = order(self, query);
        // Compression first: cheaper than losing a unit.
        let compress = self.config.compress.clone();
        if compress.json.is_some() || compress.strip_markup || compress.dedupe {
            let mut k = 0;
            while let Some((_, members)) = order.unit(k) {
                k += 1;
                for i in members {
                    if total <= limit {
                        return;
                    }
                    total -= self.try_compress(i, &compress, d);
                }
            }
        }
        let mut summarized: Vec<usize> = Vec::new();
        let mut k = 0;
        while let Some((_, members)) = order.unit(k) {
            k += 1;
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
            .filter(|it| it.status == Status::Active && it.category != Category::System)
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
        if it.status != Status::Active || !self.uncompressed(i) || !self.compressible(i) {
            return 0;
        }
        let content = &it.chunk.content;
        if rules.dedupe {
            let earlier = self.items[..i].iter().find(|e| {
                e.status == Status::Active
                    && e.compressed.as_ref().is_none_or(|c| c.0.is_lossless())
                    && e.chunk.content == *content
            });
            if let Some(e) = earlier {
                let text = format!("[same as {}]", e.chunk.key);
                return self.set_compressed(i, CompressKind::Dedupe, text, d);
            }
        }
        if let (Some(json), Category::ToolResult | Category::ToolCall) = (&rules.json, it.category)
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
        let cost = model.cost_usd(tokens, summary_tokens);
        // Cost-benefit: tokens saved on each expected remaining call (as many as so far).
        let saved = tokens.saturating_sub(u64::from(summary_tokens)) as f64;
        let remaining = f64::from(self.call.max(1));
        let benefit = self
            .options
            .input_usd_per_mtok
            .map_or(f64::INFINITY, |p| crate::cost::usd_at(saved * remaining, p));
        if benefit < cost * self.config.compress.min_benefit.unwrap_or(1.0) {
            return;
        }
        d.summary_cost_usd += cost;
        self.emitted = None;
        self.summaries.push(Summary {
            at: self.items[first].seq,
            tokens: summary_tokens,
            covers: items.iter().map(|&i| self.items[i].id).collect(),
            active: true,
        });
    }

    /// The context must start (after the preamble) on a user message for Anthropic: once the
    /// front was cut, evict the leading assistant and tool units.
    pub(crate) fn start_on_user(&mut self, d: &mut Decision) {
        // Only a context cut at the front may need mending: one that still starts as the agent's
        // own did (its opening kept), or has no user message to start on, is left as it is
        // (validation excuses both alike).
        let first = self
            .items
            .iter()
            .find(|it| it.status == Status::Active && it.category != Category::System);
        let has_user = self
            .items
            .iter()
            .rev()
            .any(|it| it.status == Status::Active && it.category == Category::User);
        if first.is_none_or(|it| Some(it.seq) == self.opening) || !has_user {
            return;
        }
        // Units in order of their ids (the order `unit_pairs` lists them). This almost always
        // stops at the first unit or two, so the first few are found by a scan of the items
        // each, without listing and sorting every (unit, item) pair of the context; a context
        // that starts with many agent units lists them once. Evicting a unit changes only its
        // own items, so finding units as the loop goes decides the same.
        const SCANNED_UNITS: usize = 4;
        let mut after = None;
        for _ in 0..SCANNED_UNITS {
            let Some(unit) = self.next_active_unit(after) else {
                return;
            };
            after = Some(unit);
            let members: Members = (0..self.items.len())
                .filter(|&i| self.live(i) && self.items[i].unit == unit)
                .collect();
            if !self.evict_leading(&members, d) {
                return;
            }
        }
        let pairs = self.unit_pairs();
        let mut next = pairs.partition_point(|p| Some(p.0) <= after);
        while next < pairs.len() {
            let (_, members, following) = unit_at(&pairs, next);
            next = following;
            if members.iter().any(|&i| self.active(i)) && !self.evict_leading(&members, d) {
                return;
            }
        }
    }

    /// The smallest unit id above `after` (any, when `None`) with an active item.
    fn next_active_unit(&self, after: Option<u32>) -> Option<u32> {
        self.items
            .iter()
            .filter(|it| it.status == Status::Active && Some(it.unit) > after)
            .map(|it| it.unit)
            .min()
    }

    /// One step of [`State::start_on_user`] on a unit with an active item: passes over a
    /// system unit and evicts an assistant or tool unit (returns true: go on), stops at a user
    /// message or a pinned unit (returns false).
    fn evict_leading(&mut self, members: &[usize], d: &mut Decision) -> bool {
        let first = members
            .iter()
            .copied()
            .filter(|&i| self.active(i))
            .min()
            .map(|i| self.items[i].turn_kind());
        match first {
            Some(Category::System) => true,
            Some(Category::User) | None => false,
            // Validity outranks the recent-messages rule; only pinned units (and the newest
            // user message, which is a user message) stop this.
            Some(_) if members.iter().any(|&i| self.items[i].pinned) => false,
            Some(_) => {
                let _ = self.evict_unit(members, d);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests;
