//! Value engine settings: factor weights, category weights and the presets.

use super::factors::clamp01;
use crate::model::Category;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Factor weights. Negative or non-finite weights count as 0.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    /// Weight of [`Factors::recency`](super::Factors::recency).
    pub recency: f32,
    /// Weight of [`Factors::popularity`](super::Factors::popularity).
    pub popularity: f32,
    /// Weight of [`Factors::density`](super::Factors::density).
    pub density: f32,
    /// Weight of `1 - `[`Factors::redundancy`](super::Factors::redundancy).
    pub redundancy: f32,
    /// Weight of [`Factors::category`](super::Factors::category).
    pub category: f32,
    /// Weight of [`Factors::relevance`](super::Factors::relevance).
    pub relevance: f32,
    /// Weight of [`Factors::generation_cost`](super::Factors::generation_cost).
    pub generation_cost: f32,
    /// Weight of [`Factors::pinned`](super::Factors::pinned).
    pub pinned: f32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            recency: 1.0,
            popularity: 1.0,
            density: 0.5,
            redundancy: 1.0,
            category: 1.0,
            relevance: 1.0,
            generation_cost: 0.5,
            pinned: 2.0,
        }
    }
}

impl Weights {
    /// The weights in [`Factors::NAMES`](super::Factors::NAMES) order.
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

    /// Weights from an array in [`Factors::NAMES`](super::Factors::NAMES) order.
    pub fn from_array(a: [f32; 8]) -> Weights {
        Weights {
            recency: a[0],
            popularity: a[1],
            density: a[2],
            redundancy: a[3],
            category: a[4],
            relevance: a[5],
            generation_cost: a[6],
            pinned: a[7],
        }
    }
}

/// The built-in category weight (used for categories missing from
/// [`ValueConfig::category_weights`]).
pub fn default_category_weight(category: Category) -> f32 {
    match category {
        // The preamble: always kept, so its weight only shows in the value figures.
        Category::System | Category::Unrecorded => 1.0,
        Category::User => 0.8,
        Category::ToolResult => 0.6,
        Category::ToolCall => 0.5,
        Category::Assistant => 0.4,
        Category::Reasoning => 0.2,
        Category::Summary => 0.7,
        Category::Preference => 0.9,
        Category::Other => 0.3,
    }
}

/// The regeneration-cost prior of a category when the latency is unknown: a tool result means
/// re-running the tool, assistant text a model call; user input and static prompts are cheap.
pub(super) fn generation_cost_prior(category: Category) -> f64 {
    match category {
        Category::ToolResult => 0.8,
        Category::Summary => 0.6,
        Category::Assistant => 0.5,
        Category::Reasoning => 0.4,
        Category::ToolCall => 0.4,
        Category::Preference => 0.3,
        Category::System | Category::User | Category::Other | Category::Unrecorded => 0.2,
    }
}

/// Value engine settings. Every field has a default, so a partial JSON or TOML object works;
/// a category missing from `category_weights` keeps its built-in weight.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ValueConfig {
    /// Factor weights.
    pub weights: Weights,
    /// Weight (the category factor, in `[0, 1]`) per category.
    pub category_weights: BTreeMap<Category, f32>,
    /// Recency half-life in calls; 0 or less disables decay over calls.
    pub recency_half_life_calls: f32,
    /// Recency half-life in seconds, applied (multiplied) on top of the call decay when set and
    /// both the chunk and "now" have times; 0 or less disables it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recency_half_life_secs: Option<f32>,
    /// Uses at which popularity reaches `1 - 1/e` (≈ 0.63).
    pub popularity_scale: f32,
    /// Distinct informative terms per token at which term density is 0.5.
    pub density_scale: f32,
    /// Estimated Jaccard similarity below which a chunk is not counted as redundant.
    pub redundancy_threshold: f32,
    /// Latency (ms) at which the latency part of the generation cost reaches `1 - 1/e`.
    pub latency_scale_ms: f32,
    /// Content tokens at which the size part of the generation cost reaches `1 - 1/e`.
    pub size_scale_tokens: f32,
}

impl Default for ValueConfig {
    fn default() -> Self {
        ValueConfig {
            weights: Weights::default(),
            category_weights: Category::ALL
                .iter()
                .map(|&c| (c, default_category_weight(c)))
                .collect(),
            recency_half_life_calls: 20.0,
            recency_half_life_secs: None,
            popularity_scale: 2.0,
            density_scale: 0.25,
            redundancy_threshold: 0.5,
            latency_scale_ms: 2000.0,
            size_scale_tokens: 500.0,
        }
    }
}

impl ValueConfig {
    /// The preset names [`ValueConfig::preset`] knows.
    pub const PRESETS: &'static [&'static str] =
        &["default", "support-bot", "coding-agent", "research"];

    /// A preset by name:
    /// - `default`: balanced;
    /// - `support-bot`: recent turns, user facts and preferences, the customer's question;
    ///   cheap to regenerate assistant text; time decay with a 6 h half-life;
    /// - `coding-agent`: tool results (file contents, test output) are costly to regenerate and
    ///   re-read files are redundant; reasoning is cheap; slow decay (30 calls);
    /// - `research`: relevance to the question and dense content first; slow decay (50 calls).
    pub fn preset(name: &str) -> Option<ValueConfig> {
        let base = ValueConfig::default();
        let with = |mut config: ValueConfig, cats: &[(Category, f32)]| {
            for &(c, w) in cats {
                config.category_weights.insert(c, w);
            }
            config
        };
        Some(match name {
            "default" => base,
            "support-bot" => with(
                ValueConfig {
                    weights: Weights {
                        recency: 1.5,
                        popularity: 0.5,
                        density: 0.5,
                        redundancy: 1.0,
                        category: 1.0,
                        relevance: 1.5,
                        generation_cost: 0.25,
                        pinned: 2.0,
                    },
                    recency_half_life_calls: 10.0,
                    recency_half_life_secs: Some(6.0 * 3600.0),
                    ..base
                },
                &[
                    (Category::User, 0.9),
                    (Category::Preference, 1.0),
                    (Category::ToolResult, 0.7),
                    (Category::Reasoning, 0.1),
                ],
            ),
            "coding-agent" => with(
                ValueConfig {
                    weights: Weights {
                        recency: 1.0,
                        popularity: 1.5,
                        density: 0.5,
                        redundancy: 1.5,
                        category: 1.0,
                        relevance: 1.0,
                        generation_cost: 1.0,
                        pinned: 2.0,
                    },
                    recency_half_life_calls: 30.0,
                    ..base
                },
                &[
                    (Category::User, 0.9),
                    (Category::ToolResult, 0.8),
                    (Category::ToolCall, 0.5),
                    (Category::Reasoning, 0.1),
                ],
            ),
            "research" => with(
                ValueConfig {
                    weights: Weights {
                        recency: 0.5,
                        popularity: 1.0,
                        density: 1.0,
                        redundancy: 1.0,
                        category: 0.5,
                        relevance: 2.0,
                        generation_cost: 0.75,
                        pinned: 2.0,
                    },
                    recency_half_life_calls: 50.0,
                    ..base
                },
                &[(Category::Summary, 0.9), (Category::ToolResult, 0.8)],
            ),
            _ => return None,
        })
    }

    /// The category factor of a category: the configured weight, else the built-in one, in `[0, 1]`.
    pub fn category_weight(&self, category: Category) -> f32 {
        let w = self
            .category_weights
            .get(&category)
            .copied()
            .unwrap_or_else(|| default_category_weight(category));
        clamp01(f64::from(w))
    }
}
