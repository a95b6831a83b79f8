//! The factors of a chunk, the weighted value, labels, and the numeric shapes the factors are
//! built from (clamping, decay, saturation).

use super::Weights;
use crate::model::ChunkId;
use serde::{Deserialize, Serialize};

/// The factors of one chunk, each in `[0, 1]`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
#[serde(default)]
pub struct Factors {
    /// Exponential decay since the chunk was added (1 = just added).
    pub recency: f32,
    /// How often later steps used it (0 = never).
    pub popularity: f32,
    /// Informative content per token.
    pub density: f32,
    /// Similarity to the most similar earlier chunk (1 = exact duplicate); lowers the value.
    pub redundancy: f32,
    /// The category's weight.
    pub category: f32,
    /// Lexical relevance to the task or query, relative to the best candidate.
    pub relevance: f32,
    /// Cost to regenerate it if dropped.
    pub generation_cost: f32,
    /// 1 when pinned or labelled important.
    pub pinned: f32,
}

impl Factors {
    /// Factor names, in the order of [`Factors::to_array`] and [`Weights::to_array`].
    pub const NAMES: [&'static str; 8] = [
        "recency",
        "popularity",
        "density",
        "redundancy",
        "category",
        "relevance",
        "generation_cost",
        "pinned",
    ];

    /// The factors in [`Factors::NAMES`] order.
    pub fn to_array(&self) -> [f32; 8] {
        [
            self.recency,
            self.popularity,
            self.density,
            self.redundancy,
            self.category,
            self.relevance,
            self.generation_cost,
            self.pinned,
        ]
    }

    /// The terms of the weighted sum in [`Factors::NAMES`] order: each factor clamped to `[0, 1]`,
    /// redundancy as `1 - redundancy`.
    pub(super) fn terms(&self) -> [f64; 8] {
        let mut t = self.to_array().map(|x| f64::from(clamp01(f64::from(x))));
        t[3] = 1.0 - t[3];
        t
    }

    /// The weighted value `Σ w_f x_f / Σ w_f` in `[0, 1]` (redundancy as `1 - redundancy`;
    /// negative or non-finite weights count as 0; all weights 0 gives 0). Labels are not applied.
    pub fn value(&self, weights: &Weights) -> f32 {
        self.value_with(&SanitizedWeights::of(weights))
    }

    /// [`Factors::value`] with the weights already sanitized: ranking scores every live chunk
    /// every turn, and need not sanitize the same weights for each (BENCHMARKS.md, "Live pool",
    /// issue 12).
    pub(super) fn value_with(&self, weights: &SanitizedWeights) -> f32 {
        if weights.total <= 0.0 {
            return 0.0;
        }
        let sum: f64 = weights.w.iter().zip(self.terms()).map(|(w, x)| w * x).sum();
        clamp01(sum / weights.total)
    }
}

/// Weights as the weighted sum uses them: negative or non-finite ones as 0, and their total.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct SanitizedWeights {
    w: [f64; 8],
    total: f64,
}

impl SanitizedWeights {
    pub(super) fn of(weights: &Weights) -> SanitizedWeights {
        let w = weights.to_array().map(sanitize_weight);
        SanitizedWeights {
            w,
            total: w.iter().sum(),
        }
    }
}

/// A user's label on a chunk.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// Worth keeping: the pinned factor is 1.
    Important,
    /// Not worth keeping: the value is forced to 0.
    Useless,
}

/// The value of one chunk, with its factors and the reasons.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ChunkValue {
    /// The chunk.
    pub chunk: ChunkId,
    /// The factors.
    pub factors: Factors,
    /// The weighted value in `[0, 1]` (0 for a chunk labelled useless).
    pub value: f32,
    /// Tokens the chunk costs in a call's input (estimated when the trace was not counted).
    pub tokens: u32,
    /// `value / max(tokens, 1)`.
    pub value_per_token: f32,
    /// `value` per 1,000 tokens, for display.
    pub value_per_1k_tokens: f32,
    /// Short human sentences, one per factor (and label), e.g. "used by 3 later steps".
    pub explanation: Vec<String>,
}

/// Clamps to `[0, 1]`; NaN becomes 0.
pub(super) fn clamp01(x: f64) -> f32 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0) as f32
    }
}

pub(super) fn sanitize_weight(w: f32) -> f64 {
    if w.is_finite() && w > 0.0 {
        f64::from(w)
    } else {
        0.0
    }
}

/// `0.5^(age / half_life)`; a half-life of 0 or less (or not finite) disables decay.
pub(super) fn decay(age: f64, half_life: f64) -> f64 {
    if !(half_life > 0.0 && half_life.is_finite() && age.is_finite()) {
        return 1.0;
    }
    0.5f64.powf(age / half_life)
}

/// `1 - exp(-x / scale)`; with a scale of 0 or less, 1 for any positive x.
pub(super) fn saturate(x: f64, scale: f64) -> f64 {
    if !(scale > 0.0 && scale.is_finite()) {
        return if x > 0.0 { 1.0 } else { 0.0 };
    }
    1.0 - (-x / scale).exp()
}
