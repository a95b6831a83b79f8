//! Prices and cost: a dated price table, per-call cost, per-chunk attributed cost, prompt caching.
//!
//! The default table is `data/prices.json` in the repository (taken from LiteLLM's public price
//! list; its header names the source and date); users may load their own with
//! [`PriceTable::from_json`]. A model the table does not know is *unpriced*: costs are `None`,
//! never $0.
//!
//! Prompt caching is modeled from the call structure: a call's *shared prefix* is the longest run of
//! chunk references it has in common with the previous call's input, from the start. Providers cache
//! prefixes, so evicting a chunk from the middle of the context breaks the cache for everything
//! after it. When a trace reports cache reads, those are used; otherwise, for providers that cache
//! automatically (OpenAI: prefixes of 1,024 tokens or more, in 128-token steps), the cached part is
//! derived from the shared prefix.

use crate::model::{ChunkId, Trace};
use crate::tokens::{call_tokens, CallTokens};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The price table shipped with MemLens.
pub const DEFAULT_PRICES_JSON: &str = include_str!("../../../data/prices.json");

/// Errors reading a price table.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    /// The JSON does not have the price table's shape.
    #[error("invalid price table at line {line}, column {column}: {message}")]
    Invalid {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What serde expected.
        message: String,
    },
}

/// Prices of one model, USD per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    /// Provider (`openai`, `anthropic`, `google`, ...).
    #[serde(default)]
    pub provider: Option<String>,
    /// Uncached input.
    pub input: Option<f64>,
    /// Output.
    pub output: Option<f64>,
    /// Input read from the prompt cache.
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// Input written to the prompt cache.
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Context window in tokens.
    #[serde(default)]
    pub context_window: Option<u64>,
}

/// Tokens of one call by how they are billed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BilledTokens {
    /// Input tokens not read from (or written to) the prompt cache.
    pub uncached_input: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// Output tokens.
    pub output: u64,
}

impl ModelPrice {
    /// What one call costs, USD: each kind of token at its rate, cache reads and writes at the
    /// input rate where the table has none. `None` without an input or an output price. The one
    /// place a call's price is multiplied out: trace cost, the simulator and the live pool use it.
    pub fn call_usd(&self, t: BilledTokens) -> Option<f64> {
        let input = self.input?;
        let output = self.output?;
        Some(
            per_token(input) * t.uncached_input as f64
                + per_token(self.cache_read.unwrap_or(input)) * t.cache_read as f64
                + per_token(self.cache_write.unwrap_or(input)) * t.cache_write as f64
                + per_token(output) * t.output as f64,
        )
    }

    /// USD of `tokens` input tokens of which `cached` are read from the prompt cache (a
    /// chunk's share of a call, or a live context before its output exists).
    pub fn input_usd(&self, tokens: u64, cached: u64) -> Option<f64> {
        let input = self.input?;
        let read = self.cache_read.unwrap_or(input);
        let cached = cached.min(tokens);
        Some(per_token(input) * (tokens - cached) as f64 + per_token(read) * cached as f64)
    }
}

/// USD of `tokens` at a price in USD per million tokens.
pub fn usd_at(tokens: f64, usd_per_mtok: f64) -> f64 {
    tokens * per_token(usd_per_mtok)
}

/// A price table: header plus prices by model name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    /// Where the prices come from.
    #[serde(default)]
    pub source: String,
    /// When they were taken.
    #[serde(default)]
    pub retrieved: String,
    /// Prices by model name.
    pub models: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// Parses a table in the format of `data/prices.json` (USD per 1M tokens).
    pub fn from_json(text: &str) -> Result<PriceTable, PriceError> {
        serde_json::from_str(text).map_err(|e| PriceError::Invalid {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    }

    /// The table shipped with MemLens.
    pub fn builtin() -> PriceTable {
        PriceTable::from_json(DEFAULT_PRICES_JSON)
            .expect("data/prices.json is checked by the test suite and embedded at build time")
    }

    /// Adds or replaces entries from another table (a user's overrides).
    pub fn merge(&mut self, other: PriceTable) {
        self.models.extend(other.models);
        if !other.source.is_empty() {
            self.source = format!("{}; overrides: {}", self.source, other.source);
        }
    }

    /// Looks a model up: the exact name; else the name normalized (lower case, without provider
    /// path `openrouter/anthropic/`, Bedrock region and vendor `us.anthropic.`, Vertex `@date`
    /// as `-date`, OpenRouter's `claude-sonnet-4.5` as `claude-sonnet-4-5`), exact or as a dated
    /// snapshot of a table name (`gpt-4o-2024-08-06`, `...-20250929-v1:0` -> the longest table
    /// name it extends with digits or a version only); else a table name that is a whole
    /// dash-separated suffix (`aide-gpt-5` -> `gpt-5`). Anything else is unpriced: `None`.
    pub fn lookup(&self, model: &str) -> Option<(&str, &ModelPrice)> {
        if let Some((k, p)) = self.models.get_key_value(model) {
            return Some((k.as_str(), p));
        }
        let name = normalize_model_name(model);
        // The longest suffix first: `aide-gpt-5-mini` is `gpt-5-mini`, never `mini`.
        std::iter::once(name.as_str())
            .chain(name.match_indices('-').map(|(i, _)| &name[i + 1..]))
            .find_map(|candidate| self.snapshot_of(candidate))
    }

    /// The table entry `name` is, exactly or as a dated snapshot (the longest such entry).
    fn snapshot_of(&self, name: &str) -> Option<(&str, &ModelPrice)> {
        if let Some((k, p)) = self.models.get_key_value(name) {
            return Some((k.as_str(), p));
        }
        self.models
            .iter()
            .filter(|(k, _)| {
                name.strip_prefix(k.as_str())
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(is_snapshot_suffix)
            })
            .max_by_key(|(k, _)| k.len())
            .map(|(k, p)| (k.as_str(), p))
    }
}

/// A model name as price tables spell it: see [`PriceTable::lookup`].
fn normalize_model_name(model: &str) -> String {
    let lower = model.trim().to_lowercase();
    let last = lower.rsplit('/').next().unwrap_or(&lower);
    // Bedrock: `us.anthropic.claude-...`; model names themselves start with a letter run and a
    // dash or digit (`gpt-5.1`), so only all-letter leading segments are a region or vendor.
    let mut rest = last;
    while let Some((head, tail)) = rest.split_once('.') {
        if tail.is_empty() || head.is_empty() || !head.chars().all(|c| c.is_ascii_lowercase()) {
            break;
        }
        rest = tail;
    }
    let name = rest.replace('@', "-");
    // Anthropic ids never have dots; OpenRouter writes `claude-opus-4.1` for `claude-opus-4-1`.
    if name.starts_with("claude-") {
        name.replace('.', "-")
    } else {
        name
    }
}

/// Whether what follows a table name marks a snapshot of that model: dash-separated dates or
/// numbers (`2024-08-06`, `20250929`, `0613`) and version tags (`v1`, `v1:0`), nothing else.
fn is_snapshot_suffix(rest: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    !rest.is_empty()
        && rest.split('-').all(|segment| {
            digits(segment)
                || segment
                    .strip_prefix('v')
                    .is_some_and(|v| match v.split_once(':') {
                        Some((major, minor)) => digits(major) && digits(minor),
                        None => digits(v),
                    })
        })
}

/// How the prompt cache is modeled when a trace does not report cache reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheModel {
    /// Shortest prefix that is cached.
    pub min_prefix_tokens: u64,
    /// Cached lengths are the minimum plus a multiple of this.
    pub step_tokens: u64,
}

impl CacheModel {
    /// OpenAI's automatic prompt caching.
    pub const OPENAI: CacheModel = CacheModel {
        min_prefix_tokens: 1024,
        step_tokens: 128,
    };

    /// The automatic cache of a provider; `None` where caching needs explicit markers (Anthropic)
    /// or is not modeled.
    pub fn for_provider(provider: Option<&str>) -> Option<CacheModel> {
        match provider {
            Some("openai") => Some(CacheModel::OPENAI),
            _ => None,
        }
    }

    /// Tokens served from cache for a shared prefix of `prefix_tokens`.
    pub fn cached_tokens(&self, prefix_tokens: u64) -> u64 {
        if prefix_tokens < self.min_prefix_tokens {
            return 0;
        }
        let extra = prefix_tokens - self.min_prefix_tokens;
        self.min_prefix_tokens + extra / self.step_tokens.max(1) * self.step_tokens.max(1)
    }
}

/// Length, in references, of the longest common prefix of two inputs.
pub fn shared_prefix_len(previous: &[ChunkId], current: &[ChunkId]) -> usize {
    previous
        .iter()
        .zip(current)
        .take_while(|(a, b)| a == b)
        .count()
}

/// Where a call's token figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Usage the provider reported.
    Reported,
    /// MemLens' own count (and modeled cache).
    Counted,
}

/// Tokens and cost of one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallCost {
    /// Call index.
    pub index: u32,
    /// Counted tokens.
    pub counted: CallTokens,
    /// Of `counted.input`, the estimated tokens of context the log does not record
    /// ([`crate::unrecorded`]); 0 where the log holds everything.
    #[serde(default)]
    pub unrecorded: u64,
    /// Reported input tokens, when the trace has them.
    pub reported_input: Option<u64>,
    /// Reported minus counted input tokens (the unrecorded item counted in), when reported:
    /// the counting difference, the tokenizer's and the framing's.
    pub input_diff: Option<i64>,
    /// Tokens of the input prefix shared with the previous call.
    pub shared_prefix_tokens: u64,
    /// Input tokens served from cache (reported, or modeled from the shared prefix).
    pub cached_input: u64,
    /// Where input/output/cache figures used for cost come from.
    pub basis: Basis,
    /// Cost in USD; `None` when the model is unpriced.
    pub cost_usd: Option<f64>,
}

/// Attributed cost of one chunk over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkCost {
    /// The chunk.
    pub chunk: ChunkId,
    /// In how many calls' input it rode along.
    pub calls_carried: u32,
    /// Its tokens times the calls carried.
    pub token_calls: u64,
    /// Of those, tokens that were served from cache.
    pub cached_token_calls: u64,
    /// Input cost attributed to it, cache-aware; `None` when unpriced.
    pub cost_usd: Option<f64>,
}

/// Cost analysis of a counted trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceCost {
    /// The price entry used (`None`: unpriced).
    pub priced_as: Option<String>,
    /// Per call.
    pub calls: Vec<CallCost>,
    /// Per chunk, indexed like [`Trace::chunks`].
    pub chunks: Vec<ChunkCost>,
    /// Sum of call costs; `None` when any priced figure is missing.
    pub total_usd: Option<f64>,
}

fn per_token(price_per_million: f64) -> f64 {
    price_per_million / 1_000_000.0
}

/// Computes per-call and per-chunk cost of a trace whose tokens have been counted.
pub fn trace_cost(trace: &Trace, prices: &PriceTable) -> TraceCost {
    let tokens = call_tokens(trace);
    let main = trace.main_model();
    let mut calls = Vec::with_capacity(trace.calls.len());
    let mut chunks: Vec<ChunkCost> = trace
        .chunks
        .iter()
        .map(|c| ChunkCost {
            chunk: c.id,
            calls_carried: 0,
            token_calls: 0,
            cached_token_calls: 0,
            cost_usd: None,
        })
        .collect();
    let mut chunk_usd = vec![0.0f64; trace.chunks.len()];
    let mut all_priced = true;
    // A trace without calls costs nothing if its model is priced, and is unpriced otherwise.
    let mut priced_as = main
        .and_then(|m| prices.lookup(m))
        .map(|(k, _)| k.to_string());
    let mut previous: &[ChunkId] = &[];
    for (call, counted) in trace.calls.iter().zip(tokens) {
        let model = call.model.as_deref().or(main);
        let price = model.and_then(|m| prices.lookup(m));
        if priced_as.is_none() {
            priced_as = price.map(|(k, _)| k.to_string());
        }
        let prefix = shared_prefix_len(previous, &call.input);
        let shared_prefix_tokens: u64 = call.input[..prefix]
            .iter()
            .map(|&id| u64::from(trace.chunk(id).tokens))
            .sum();
        previous = &call.input;
        let usage = call.usage.unwrap_or_default();
        let reported_input = usage.input_tokens;
        let basis = if reported_input.is_some() {
            Basis::Reported
        } else {
            Basis::Counted
        };
        let input = reported_input.unwrap_or(counted.input);
        let output = usage.output_tokens.unwrap_or(counted.output);
        let cache_write = usage.cache_write_tokens.unwrap_or(0);
        let cached_input = match usage.cache_read_tokens {
            Some(n) => n,
            None if basis == Basis::Reported => 0,
            None => price
                .and_then(|(_, p)| CacheModel::for_provider(p.provider.as_deref()))
                .map_or(0, |m| m.cached_tokens(shared_prefix_tokens)),
        };
        let cost_usd = price.and_then(|(_, p)| {
            p.call_usd(BilledTokens {
                uncached_input: input
                    .saturating_sub(cached_input)
                    .saturating_sub(cache_write),
                cache_read: cached_input,
                cache_write,
                output,
            })
        });
        all_priced &= cost_usd.is_some();
        // Attribute input cost to chunks: the first `cached_input` tokens of the input are the
        // cached prefix, priced at the cache-read rate.
        let mut position = 0u64;
        for &id in &call.input {
            let t = u64::from(trace.chunk(id).tokens);
            let cached = cached_input.saturating_sub(position).min(t);
            position += t;
            let cc = &mut chunks[id.index()];
            cc.calls_carried += 1;
            cc.token_calls += t;
            cc.cached_token_calls += cached;
            if let Some(usd) = price.and_then(|(_, p)| p.input_usd(t, cached)) {
                chunk_usd[id.index()] += usd;
            }
        }
        calls.push(CallCost {
            index: call.index,
            counted,
            unrecorded: crate::unrecorded::tokens_in(trace, call),
            reported_input,
            input_diff: reported_input.map(|r| r as i64 - counted.input as i64),
            shared_prefix_tokens,
            cached_input,
            basis,
            cost_usd,
        });
    }
    if priced_as.is_some() {
        for (cc, usd) in chunks.iter_mut().zip(chunk_usd) {
            cc.cost_usd = Some(usd);
        }
    }
    let total_usd = if all_priced && priced_as.is_some() {
        Some(calls.iter().filter_map(|c| c.cost_usd).sum())
    } else {
        None
    };
    TraceCost {
        priced_as,
        calls,
        chunks,
        total_usd,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_parses_and_looks_up() {
        let t = PriceTable::builtin();
        assert!(!t.source.is_empty());
        let (k, p) = t.lookup("gpt-4o").expect("gpt-4o is in the table");
        assert_eq!(k, "gpt-4o");
        assert!(p.input.is_some());
        let (k, _) = t.lookup("gpt-4o-mini-2099-01-01").expect("prefix lookup");
        assert_eq!(k, "gpt-4o-mini");
        assert_eq!(t.lookup("openai/gpt-4o").map(|x| x.0), Some("gpt-4o"));
        assert!(t.lookup("my-own-model").is_none());
    }

    fn key(model: &str) -> Option<&'static str> {
        static TABLE: std::sync::OnceLock<PriceTable> = std::sync::OnceLock::new();
        let table = TABLE.get_or_init(PriceTable::builtin);
        table.lookup(model).map(|(k, _)| k)
    }

    #[test]
    fn the_models_agents_use_today_are_priced() {
        for model in [
            "claude-opus-4-1",
            "claude-opus-4-5",
            "claude-sonnet-4-5",
            "claude-haiku-4-5",
            "claude-sonnet-4-20250514",
            "gpt-5",
            "gpt-5.1",
            "gpt-5-codex",
            "gpt-5.1-codex",
            "gpt-5.1-codex-mini",
            "gpt-5-mini",
            "gpt-5-nano",
            "gemini-2.5-pro",
            "gemini-2.5-flash",
            "gemini-3-pro-preview",
            "gemini-3-flash-preview",
            "deepseek-chat",
            "deepseek-reasoner",
        ] {
            assert_eq!(key(model), Some(model), "{model}");
        }
        let t = PriceTable::builtin();
        let (_, opus) = t.lookup("claude-opus-4-5").expect("priced");
        assert_eq!((opus.input, opus.output), (Some(5.0), Some(25.0)));
        assert_eq!((opus.cache_read, opus.cache_write), (Some(0.5), Some(6.25)));
        assert_eq!(opus.context_window, Some(200_000));
    }

    #[test]
    fn provider_prefixes_resolve() {
        assert_eq!(
            key("google/gemini-3-pro-preview"),
            Some("gemini-3-pro-preview")
        );
        assert_eq!(key("gemini/gemini-2.5-flash"), Some("gemini-2.5-flash"));
        assert_eq!(key("models/gemini-2.5-pro"), Some("gemini-2.5-pro"));
        assert_eq!(
            key("anthropic/claude-sonnet-4-5"),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(
            key("openrouter/anthropic/claude-opus-4-1"),
            Some("claude-opus-4-1")
        );
        assert_eq!(key("vertex_ai/gemini-2.5-pro"), Some("gemini-2.5-pro"));
        assert_eq!(key("azure/gpt-5.1-codex"), Some("gpt-5.1-codex"));
        assert_eq!(key("openai/GPT-5-Mini"), Some("gpt-5-mini"));
    }

    #[test]
    fn openrouter_dotted_claude_versions_resolve() {
        assert_eq!(
            key("openrouter/anthropic/claude-sonnet-4.5"),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(key("anthropic/claude-opus-4.1"), Some("claude-opus-4-1"));
        // Dots are versions in other families: `gpt-5.1` is not `gpt-5-1`.
        assert_eq!(key("openai/gpt-5.1"), Some("gpt-5.1"));
    }

    #[test]
    fn bedrock_ids_resolve() {
        assert_eq!(
            key("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some("claude-sonnet-4-5-20250929")
        );
        assert_eq!(
            key("bedrock/global.anthropic.claude-haiku-4-5-20251001-v1:0"),
            Some("claude-haiku-4-5-20251001")
        );
        assert_eq!(
            key("anthropic.claude-opus-4-1-20250805-v1:0"),
            Some("claude-opus-4-1-20250805")
        );
    }

    #[test]
    fn vertex_at_dates_and_dated_snapshots_resolve() {
        assert_eq!(
            key("claude-sonnet-4-5@20250929"),
            Some("claude-sonnet-4-5-20250929")
        );
        assert_eq!(
            key("vertex_ai/claude-opus-4-5@20251101"),
            Some("claude-opus-4-5-20251101")
        );
        // A snapshot the table does not list is priced as its model.
        assert_eq!(key("claude-opus-4-5@20991231"), Some("claude-opus-4-5"));
        assert_eq!(key("gpt-5-2025-08-07"), Some("gpt-5-2025-08-07"));
        assert_eq!(key("gpt-5.1-codex-2099-01-01"), Some("gpt-5.1-codex"));
        assert_eq!(key("gpt-4-0613"), Some("gpt-4-0613"));
        assert_eq!(key("o3-20991231"), Some("o3"));
    }

    #[test]
    fn vendor_prefixed_names_resolve_to_a_whole_suffix() {
        assert_eq!(key("aide-gpt-5"), Some("gpt-5"));
        assert_eq!(key("aide-gpt-5-mini"), Some("gpt-5-mini"));
        assert_eq!(key("my-agent-claude-sonnet-4-5"), Some("claude-sonnet-4-5"));
        assert_eq!(key("team-o3-2099-01-01"), Some("o3"));
    }

    #[test]
    fn unknown_or_variant_models_stay_unpriced() {
        for model in [
            "my-own-model",
            "",
            "-",
            "gpt-6",
            "claude-sonnet-4-5-thinking",
            // A variant is not its base model: a shorter name is never taken for it.
            "gpt-4o-audio-preview",
            "o3-deep-research",
            "gpt-5-turbo",
            "aide-gpt",
            "deepseek-ai/DeepSeek-V3",
            "us.meta.llama3-70b-instruct-v1:0",
            "claude-é@…",
        ] {
            assert_eq!(key(model), None, "{model:?}");
        }
        let trace = Trace {
            model: Some("gpt-6".into()),
            ..Trace::default()
        };
        assert_eq!(trace_cost(&trace, &PriceTable::builtin()).total_usd, None);
    }

    #[test]
    fn openai_cache_model_steps() {
        let m = CacheModel::OPENAI;
        assert_eq!(m.cached_tokens(1023), 0);
        assert_eq!(m.cached_tokens(1024), 1024);
        assert_eq!(m.cached_tokens(1151), 1024);
        assert_eq!(m.cached_tokens(1152), 1152);
    }

    #[test]
    fn a_trace_without_calls_costs_nothing_when_priced_and_is_unpriced_otherwise() {
        let prices = PriceTable::builtin();
        let mut trace = Trace {
            model: Some("gpt-4o".into()),
            ..Trace::default()
        };
        assert_eq!(trace_cost(&trace, &prices).total_usd, Some(0.0));
        trace.model = Some("unknown-model".into());
        assert_eq!(trace_cost(&trace, &prices).total_usd, None);
    }

    #[test]
    fn shared_prefix() {
        let a = [ChunkId(0), ChunkId(1), ChunkId(2)];
        let b = [ChunkId(0), ChunkId(1), ChunkId(3), ChunkId(2)];
        assert_eq!(shared_prefix_len(&a, &b), 2);
        assert_eq!(shared_prefix_len(&[], &b), 0);
    }
}
