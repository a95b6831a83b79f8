//! One file per strategy, behind one trait. A strategy decides which units of the context to
//! give up (or compress, or summarize) for one call; the engine's bookkeeping ([`State`]: items,
//! units, protection, archive) is shared and lives in `engine`.
//!
//! MemLens' own strategies (`keep_all`, `window`, `value`, `oracle`) repair every invariant;
//! the incumbents (`incumbents/`) replay the upstream libraries faithfully, violations included.

mod incumbents;
mod keep_all;
mod oracle;
pub(crate) mod ranked;
pub(crate) mod rules;
#[cfg(test)]
pub(crate) mod testing;
mod value;
mod window;

use super::config::{PolicyConfig, PolicyError, QuotaOrder, StrategyKind};
use super::engine::decision::Decision;
use super::engine::state::State;
use std::sync::Arc;

pub use oracle::Hindsight;

/// A way of deciding the context. Strategies hold only their parameters; everything that
/// changes from call to call is in [`State`].
pub(crate) trait Strategy: std::fmt::Debug + Send + Sync {
    /// Decides this call's context: marks items evicted, compressed or retrieved, adds
    /// summaries. `query` is the current query (the newest user message unless the host gave
    /// one).
    fn decide(&self, s: &mut State, query: &str, d: &mut Decision);

    /// True for MemLens' own strategies, whose contexts keep every invariant.
    fn repairs_invariants(&self) -> bool {
        false
    }

    /// True when deciding reads chunk values (the value engine then works as chunks arrive).
    fn reads_values(&self) -> bool {
        false
    }

    /// True when a dropped item may come back later (stateless strategies that recompute the
    /// whole context every call), so dropped items are not compacted away.
    fn restores_dropped(&self) -> bool {
        false
    }

    /// True when every change the strategy makes to items goes through `State`'s own
    /// operations (`evict_unit`, `set_compressed`, summaries and retrieval in `rules`), which
    /// mark the latest context's entries stale: only then may a context be extended from the
    /// latest one instead of rebuilt (`Engine::context_after`).
    fn marks_changes(&self) -> bool {
        false
    }
}

/// The strategy a policy names. The oracle needs `hindsight` (which later calls use each
/// chunk); without it, asking for the oracle is an error, since live there is no future to read.
pub(crate) fn for_policy(
    config: &PolicyConfig,
    hindsight: Option<&Hindsight>,
) -> Result<Arc<dyn Strategy>, PolicyError> {
    let rules_read_values = config.value_threshold.is_some()
        || config.quota_order == QuotaOrder::Value
        || config.age_exempt_value.is_some();
    Ok(match config.strategy {
        StrategyKind::KeepAll => Arc::new(keep_all::KeepAll),
        StrategyKind::Window => Arc::new(window::Window {
            reads_values: rules_read_values,
        }),
        StrategyKind::Value => Arc::new(value::Value),
        StrategyKind::Oracle => match hindsight {
            Some(h) => Arc::new(oracle::Oracle::new(h.clone())),
            None => {
                return Err(PolicyError::NeedsHindsight {
                    policy: config.name.clone(),
                })
            }
        },
        StrategyKind::LangchainTrim => Arc::new(incumbents::LangchainTrim(
            config.langchain.clone().unwrap_or_default(),
        )),
        StrategyKind::AnthropicClearToolUses => Arc::new(incumbents::AnthropicClearToolUses(
            config.anthropic.clone().unwrap_or_default(),
        )),
        StrategyKind::LlamaindexMemory => Arc::new(incumbents::LlamaindexMemory(
            config.llamaindex.clone().unwrap_or_default(),
        )),
        StrategyKind::LettaSummarize => Arc::new(incumbents::LettaSummarize {
            params: config.letta.clone().unwrap_or_default(),
            model: config.compress.summary.clone().unwrap_or_default(),
        }),
        StrategyKind::OpenaiKeepLastN => Arc::new(incumbents::OpenaiKeepLastN {
            n: config
                .keep_last_n
                .unwrap_or(incumbents::DEFAULT_KEEP_LAST_N),
        }),
        StrategyKind::SweAgentObservationMasking => {
            let params = config.swe_agent.clone().unwrap_or_default();
            // Upstream's validator refuses n <= 0, and polling = 0 divides by zero.
            if params.n == 0 || params.polling == 0 {
                return Err(PolicyError::Parse {
                    syntax: "policy",
                    message: "swe_agent.n and swe_agent.polling must be positive integers".into(),
                });
            }
            Arc::new(incumbents::SweAgentObservationMasking(params))
        }
    })
}
