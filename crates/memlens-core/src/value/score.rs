//! One chunk's value as of now: each factor from the facts [`ValueEngine::add`] stored, with the
//! sentence that explains it. Sentences are built only when asked for: a policy ranking its
//! context every turn needs the numbers alone ([`ValueEngine::values`]).

use super::config::generation_cost_prior;
use super::factors::{clamp01, decay, saturate, ChunkValue, Factors, Label};
use super::{ValueConfig, ValueEngine};
use crate::model::{Category, ChunkId};

/// What [`ValueEngine::add`] keeps per chunk: only config-independent facts, so the config can be
/// changed ([`ValueEngine::set_config`]) without re-adding.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) id: ChunkId,
    pub(super) key: String,
    pub(super) category: Category,
    /// Tokens for value per token (framing included).
    pub(super) tokens: u32,
    /// Tokens of the content alone.
    pub(super) content_tokens: u32,
    pub(super) tokens_estimated: bool,
    pub(super) added_at_call: u32,
    pub(super) time_secs: Option<f64>,
    pub(super) distinct_terms: u32,
    /// Distinct / total word shingles (1 when there are none).
    pub(super) uniqueness: f64,
    /// Estimated Jaccard similarity to the most similar earlier chunk found, and its slot.
    pub(super) similarity: f64,
    pub(super) similar_to: Option<u32>,
    pub(super) latency_ms: Option<f64>,
    pub(super) uses: u32,
    pub(super) label: Option<Label>,
    pub(super) pinned: bool,
    /// A value the host's scorer gave, in `[0, 1]`: it replaces the factors' weighted sum.
    pub(super) host_value: Option<f32>,
}

/// A factor's value and, when explanations are asked for, its sentence.
type Explained = (f32, Option<String>);

/// The factors of a chunk that do not change while the config stays (see
/// [`ValueEngine::fixed_factors`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct FixedFactors {
    density: f32,
    redundancy: f32,
    category: f32,
    generation_cost: f32,
}

impl ValueEngine {
    /// The value of one chunk as of call `now_call` (and time `now_secs`), its relevance given;
    /// sentences only when `explain`. One helper per factor, called in [`Factors::NAMES`] order,
    /// so the sentences come in that order; then the label, which can force the value to 0.
    pub(super) fn score_with(
        &self,
        chunk: ChunkId,
        now_call: u32,
        now_secs: Option<f64>,
        relevance: f32,
        explain: bool,
    ) -> ChunkValue {
        match self.slot(chunk) {
            Some(slot) => self.score_slot(slot, now_call, now_secs, relevance, explain, None),
            None => not_added(chunk),
        }
    }

    /// [`ValueEngine::score_with`] for a chunk's slot, already looked up. `tables` hold the
    /// recency decay by age and the popularity by uses when the caller has them (the ranking's
    /// path, [`ValueEngine::ranked_values`]); else they are computed here.
    pub(super) fn score_slot(
        &self,
        slot: usize,
        now_call: u32,
        now_secs: Option<f64>,
        relevance: f32,
        explain: bool,
        tables: Option<Tables<'_>>,
    ) -> ChunkValue {
        let e = &self.entries[slot];
        let cfg = &self.config;
        let calls_ago = now_call.saturating_sub(e.added_at_call);
        let call_decay = match tables.and_then(|t| t.decay_by_age.get(calls_ago as usize)) {
            Some(&d) => d,
            None => decay(f64::from(calls_ago), f64::from(cfg.recency_half_life_calls)),
        };
        // Ranking calls this for every live chunk every turn: no allocation unless explaining.
        let mut why = if explain {
            Vec::with_capacity(9)
        } else {
            Vec::new()
        };
        let mut take = |(x, sentence): Explained| {
            why.extend(sentence);
            x
        };
        // Fields are evaluated in the order written: the sentences follow the factors' order.
        let factors = if explain {
            Factors {
                recency: take(recency(e, cfg, now_call, now_secs, call_decay, explain)),
                popularity: take(popularity(e, cfg, explain)),
                density: take(density(e, cfg, explain)),
                redundancy: take(self.redundancy(e, cfg, explain)),
                category: take(category(e, cfg, explain)),
                relevance: take(relevance_factor(relevance, explain)),
                generation_cost: take(generation_cost(e, cfg, explain)),
                pinned: take(pinned(e, explain)),
            }
        } else {
            self.ranking_factors(slot, now_call, now_secs, call_decay, relevance, tables)
        };
        let value = if e.label == Some(Label::Useless) {
            if explain {
                why.push("labelled useless: value forced to 0".to_string())
            };
            0.0
        } else if let Some(v) = e.host_value {
            if explain {
                why.push(format!("value {v:.2} set by the host's scorer"));
            }
            v
        } else {
            factors.value_with(&self.weights)
        };
        let tokens = e.tokens.max(1);
        ChunkValue {
            chunk: e.id,
            factors,
            value,
            tokens: e.tokens,
            value_per_token: value / tokens as f32,
            value_per_1k_tokens: value * 1000.0 / tokens as f32,
            explanation: why,
        }
    }

    /// A chunk's value alone, as [`ValueEngine::score_slot`] gives it without explaining: what
    /// the ranking reads for every live chunk at every call that evicts, without building the
    /// rest of a [`ChunkValue`].
    pub(super) fn value_of_slot(
        &self,
        slot: usize,
        now_call: u32,
        now_secs: Option<f64>,
        relevance: f32,
        tables: Tables<'_>,
    ) -> f32 {
        let e = &self.entries[slot];
        if e.label == Some(Label::Useless) {
            return 0.0;
        }
        if let Some(v) = e.host_value {
            return v;
        }
        let calls_ago = now_call.saturating_sub(e.added_at_call);
        let call_decay = match tables.decay_by_age.get(calls_ago as usize) {
            Some(&d) => d,
            None => decay(
                f64::from(calls_ago),
                f64::from(self.config.recency_half_life_calls),
            ),
        };
        self.ranking_factors(
            slot,
            now_call,
            now_secs,
            call_decay,
            relevance,
            Some(tables),
        )
        .value_with(&self.weights)
    }

    /// The factors without sentences: the fixed ones computed once (`fixed_factors`), the
    /// popularity from `tables` when they reach the chunk's uses.
    fn ranking_factors(
        &self,
        slot: usize,
        now_call: u32,
        now_secs: Option<f64>,
        call_decay: f64,
        relevance: f32,
        tables: Option<Tables<'_>>,
    ) -> Factors {
        let (e, cfg) = (&self.entries[slot], &self.config);
        let fixed = self.fixed[slot];
        Factors {
            recency: recency(e, cfg, now_call, now_secs, call_decay, false).0,
            popularity: match tables.and_then(|t| t.popularity_by_uses.get(e.uses as usize)) {
                Some(&p) => p,
                None => popularity(e, cfg, false).0,
            },
            density: fixed.density,
            redundancy: fixed.redundancy,
            category: fixed.category,
            relevance: relevance_factor(relevance, false).0,
            generation_cost: fixed.generation_cost,
            pinned: pinned(e, false).0,
        }
    }

    /// The factors that depend only on the entry and the config, as [`ValueEngine::score_slot`]
    /// computes them.
    pub(super) fn fixed_factors(&self, e: &Entry) -> FixedFactors {
        let cfg = &self.config;
        FixedFactors {
            density: density(e, cfg, false).0,
            redundancy: self.redundancy(e, cfg, false).0,
            category: category(e, cfg, false).0,
            generation_cost: generation_cost(e, cfg, false).0,
        }
    }

    /// Redundancy: the estimated Jaccard similarity to the most similar earlier chunk, 0 below
    /// the threshold. A method, unlike the other factors: the sentence names the earlier chunk,
    /// which only the engine's entries know.
    fn redundancy(&self, e: &Entry, cfg: &ValueConfig, explain: bool) -> Explained {
        let threshold = f64::from(cfg.redundancy_threshold);
        let redundant = e.similarity > 0.0 && e.similarity >= threshold;
        let redundancy = if redundant {
            clamp01(e.similarity)
        } else {
            0.0
        };
        let similar_key = e.similar_to.map(|s| self.entries[s as usize].key.as_str());
        let sentence = explain.then(|| match similar_key {
            Some(key) if redundant => format!(
                "near-duplicate ({:.2}) of {key}: redundancy {redundancy:.2} lowers the value",
                e.similarity
            ),
            Some(key) => format!(
                "most similar earlier chunk {key} ({:.2}) is below the {threshold:.2} threshold: not redundant",
                e.similarity
            ),
            None => "no near-duplicate earlier: redundancy 0".to_string(),
        });
        (redundancy, sentence)
    }
}

/// The value of a chunk that was never added: 0, with a sentence saying so.
fn not_added(chunk: ChunkId) -> ChunkValue {
    ChunkValue {
        chunk,
        factors: Factors::default(),
        value: 0.0,
        tokens: 0,
        value_per_token: 0.0,
        value_per_1k_tokens: 0.0,
        explanation: vec!["not added to the value engine".to_string()],
    }
}

/// Recency: `0.5^(calls_ago / half-life)`, times the time decay when a time half-life is set
/// and both times are known. Its own function because it combines two decays, and its sentence
/// gives both.
fn recency(
    e: &Entry,
    cfg: &ValueConfig,
    now_call: u32,
    now_secs: Option<f64>,
    call_decay: f64,
    explain: bool,
) -> Explained {
    let calls_ago = now_call.saturating_sub(e.added_at_call);
    // `decay(calls_ago, half-life in calls)`, which the caller has (see `score_slot`).
    let mut recency = call_decay;
    let mut sentence = if !explain {
        String::new()
    } else if calls_ago == 0 {
        "added at this call".to_string()
    } else {
        let hl = f64::from(cfg.recency_half_life_calls);
        let ago = format!("added {calls_ago} call{} ago", plural(u64::from(calls_ago)));
        if hl > 0.0 && hl.is_finite() {
            let s = if hl == 1.0 { "" } else { "s" };
            format!("{ago} (half-life {} call{s})", fmt_num(hl))
        } else {
            format!("{ago} (no decay)")
        }
    };
    if let (Some(hl), Some(t0), Some(now)) = (cfg.recency_half_life_secs, e.time_secs, now_secs) {
        let age = (now - t0).max(0.0);
        if age.is_finite() && hl > 0.0 && hl.is_finite() {
            recency *= decay(age, f64::from(hl));
            if explain {
                sentence += &format!(
                    ", {} ago (half-life {})",
                    fmt_duration(age),
                    fmt_duration(f64::from(hl))
                );
            }
        }
    }
    let recency = clamp01(recency);
    (
        recency,
        explain.then(|| format!("{sentence}: recency {recency:.2}")),
    )
}

/// Factors the ranking looks up instead of computing them for every chunk at every turn, each
/// the same number the factor's function gives.
#[derive(Clone, Copy)]
pub(super) struct Tables<'a> {
    /// `decay(age, half-life in calls)` by age in calls.
    pub(super) decay_by_age: &'a [f64],
    /// [`popularity_of_uses`] by use count.
    pub(super) popularity_by_uses: &'a [f32],
}

/// The popularity factor of a chunk used `uses` times.
pub(super) fn popularity_of_uses(uses: u32, cfg: &ValueConfig) -> f32 {
    clamp01(saturate(f64::from(uses), f64::from(cfg.popularity_scale)))
}

/// Popularity: `1 - exp(-uses / scale)`, from the use count the reference detector recorded.
fn popularity(e: &Entry, cfg: &ValueConfig, explain: bool) -> Explained {
    let popularity = popularity_of_uses(e.uses, cfg);
    let sentence = explain.then(|| {
        if e.uses == 0 {
            "not used by a later step yet: popularity 0".to_string()
        } else {
            format!(
                "used by {} later step{}: popularity {popularity:.2}",
                e.uses,
                plural(u64::from(e.uses))
            )
        }
    });
    (popularity, sentence)
}

/// Density: `sqrt(term_density * uniqueness)`, informative terms per content token saturated by
/// the density scale, times the share of distinct word 3-grams.
fn density(e: &Entry, cfg: &ValueConfig, explain: bool) -> Explained {
    let per_token = f64::from(e.distinct_terms) / f64::from(e.content_tokens.max(1));
    let scale = f64::from(cfg.density_scale);
    let term_density = if scale > 0.0 && scale.is_finite() {
        per_token / (per_token + scale)
    } else if per_token > 0.0 {
        1.0
    } else {
        0.0
    };
    let density = clamp01((term_density * e.uniqueness).sqrt());
    let sentence = explain.then(|| {
        format!(
            "{} distinct informative term{} in {} {}token{}, {:.0}% repeated 3-grams: density {density:.2}",
            e.distinct_terms,
            plural(u64::from(e.distinct_terms)),
            e.content_tokens,
            if e.tokens_estimated { "estimated " } else { "" },
            plural(u64::from(e.content_tokens)),
            (1.0 - e.uniqueness) * 100.0,
        )
    });
    (density, sentence)
}

/// Category: the configured weight of the chunk's category.
fn category(e: &Entry, cfg: &ValueConfig, explain: bool) -> Explained {
    let category = cfg.category_weight(e.category);
    (
        category,
        explain.then(|| format!("category {}: weight {category:.2}", e.category)),
    )
}

/// Relevance: the caller's BM25 relevance (relative to the best candidate), clamped.
fn relevance_factor(relevance: f32, explain: bool) -> Explained {
    let relevance = clamp01(f64::from(relevance));
    let sentence = explain.then(|| {
        if relevance > 0.0 {
            format!("relevance to the task {relevance:.2} (1 = the best match)")
        } else {
            "no lexical overlap with the task: relevance 0".to_string()
        }
    });
    (relevance, sentence)
}

/// Generation cost: `base * (0.5 + 0.5 * size)`, the base from the latency when known, else the
/// category's prior.
fn generation_cost(e: &Entry, cfg: &ValueConfig, explain: bool) -> Explained {
    let size = saturate(
        f64::from(e.content_tokens),
        f64::from(cfg.size_scale_tokens),
    );
    let base = match e.latency_ms {
        Some(ms) => saturate(ms, f64::from(cfg.latency_scale_ms)),
        None => generation_cost_prior(e.category),
    };
    let generation_cost = clamp01(base * (0.5 + 0.5 * size));
    let sentence = explain.then(|| match e.latency_ms {
        Some(ms) => format!(
            "took {} to produce, {} tokens: regeneration cost {generation_cost:.2}",
            fmt_duration(ms / 1000.0),
            e.content_tokens
        ),
        None => format!(
            "{} of {} tokens: regeneration cost {generation_cost:.2}",
            e.category, e.content_tokens
        ),
    });
    (generation_cost, sentence)
}

/// Pinned: 1 when pinned or labelled important; a sentence only when one of them holds.
fn pinned(e: &Entry, explain: bool) -> Explained {
    let important = e.label == Some(Label::Important);
    let pinned = if e.pinned || important { 1.0 } else { 0.0 };
    let sentence = match (e.pinned, important) {
        (true, true) => Some("pinned and labelled important"),
        (true, false) => Some("pinned"),
        (false, true) => Some("labelled important"),
        (false, false) => None,
    };
    (pinned, sentence.filter(|_| explain).map(str::to_string))
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e9 {
        format!("{}", x as i64)
    } else {
        format!("{x:.1}")
    }
}

fn fmt_duration(secs: f64) -> String {
    if secs < 1.0 {
        format!("{:.0} ms", secs * 1000.0)
    } else if secs < 10.0 {
        format!("{secs:.1} s")
    } else if secs < 120.0 {
        format!("{secs:.0} s")
    } else if secs < 7200.0 {
        format!("{:.0} min", secs / 60.0)
    } else if secs < 172_800.0 {
        format!("{:.1} h", secs / 3600.0)
    } else {
        format!("{:.1} d", secs / 86400.0)
    }
}
