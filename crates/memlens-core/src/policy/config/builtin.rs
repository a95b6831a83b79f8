//! The built-in policies by name, and what the budget means to each (`untouched_below`).

use super::*;

/// The share of the budget the context of an agent's run fills before the `value` family's
/// echoed-reply eviction acts ([`PolicyConfig::act_from`]).
pub const VALUE_ACT_FROM: f32 = 0.25;

/// The built-in policy names, usable wherever a policy file is.
pub const BUILTIN: &[&str] = &[
    "keep-all",
    "window",
    "value",
    "value-compress",
    "value-offload",
    "recall",
    "oracle",
    "langchain-trim",
    "anthropic-clear-tool-uses",
    "llamaindex-memory",
    "letta-summarize",
    "openai-keep-last-n",
    "swe-agent-observation-masking",
    "swe-agent-observation-masking-10",
];

impl PolicyConfig {
    /// The share of the budget a context may fill and still be sent whole: the budget makes
    /// the policy act, so at a budget the largest call fits in this share of it, it saves
    /// nothing (what the tests hold every such policy to). 1 for a policy that acts only past
    /// the budget; LlamaIndex's `chat_history_token_ratio`, a cleanup's trigger, `act_from` or
    /// the smallest quota when lower. `None` for a policy that gives things up at any budget:
    /// the oracle (the hindsight bound), a count of items or calls (`openai-keep-last-n`,
    /// SWE-agent's observation masking, `max_messages`, ages, clearing, per-tool rules), a
    /// value threshold or echoed replies without `act_from`, a fixed trigger, lossless JSON
    /// forms. (LangChain's `start_on="human"` drops a
    /// history's leading non-human messages even when all fit, faithfully; nothing else of
    /// `langchain-trim` acts below the budget.)
    pub fn untouched_below(&self) -> Option<f64> {
        let any_budget = matches!(
            self.strategy,
            StrategyKind::Oracle
                | StrategyKind::OpenaiKeepLastN
                | StrategyKind::SweAgentObservationMasking
        ) || self.max_messages.is_some()
            || self.max_age_calls.is_some()
            || self.max_age_seconds.is_some()
            || ((self.value_threshold.is_some() || self.evict_echoed_replies.is_some())
                && self.act_from.is_none())
            || self.compress.minify_json
            || self.compress.toon_json
            || self.compress.clear_tool_results_after.is_some()
            || !self.tools.is_empty()
            || self
                .anthropic
                .as_ref()
                .is_some_and(|a| a.trigger_tokens > 0);
        if any_budget {
            return None;
        }
        let mut share = 1.0f64;
        if self.strategy == StrategyKind::LlamaindexMemory {
            let params = self.llamaindex.clone().unwrap_or_default();
            if params.token_limit > 0 {
                return None;
            }
            share = share.min(params.chat_history_token_ratio);
        }
        if let Some(cleanup) = self.cleanup {
            share = share.min(f64::from(cleanup.trigger));
        }
        if let Some(from) = self
            .act_from
            .filter(|_| self.value_threshold.is_some() || self.evict_echoed_replies.is_some())
        {
            share = share.min(f64::from(from));
        }
        for &quota in self.quotas.values() {
            share = share.min(f64::from(quota));
        }
        (share > 0.0).then_some(share)
    }

    /// A built-in policy by name.
    pub fn builtin(name: &str) -> Result<PolicyConfig, PolicyError> {
        let base = PolicyConfig {
            name: name.to_string(),
            ..PolicyConfig::default()
        };
        // In an agent's run the assistant's replies mostly restate what a tool result said: the
        // value family gives up those whose facts are all sent elsewhere, once the context fills
        // a quarter of the budget (so a budget the run fits in a quarter of costs it nothing).
        let value = PolicyConfig {
            evict_echoed_replies: Some(RunKind::Agent),
            act_from: Some(VALUE_ACT_FROM),
            ..base.clone()
        };
        let bare = |strategy| PolicyConfig {
            strategy,
            // The incumbents protect what they protect themselves; MemLens' rules stay off.
            protect: Protect {
                categories: vec![Category::System],
                patterns: Vec::new(),
                recent_messages: 0,
            },
            ..base.clone()
        };
        Ok(match name {
            "keep-all" => bare(StrategyKind::KeepAll),
            "window" => bare(StrategyKind::Window),
            "value" => value,
            "value-compress" => PolicyConfig {
                compress: Compress {
                    minify_json: false,
                    toon_json: false,
                    json: Some(JsonCompress::default()),
                    strip_markup: true,
                    dedupe: true,
                    clear_tool_results_after: None,
                    summary: None,
                    min_benefit: None,
                },
                ..value
            },
            "value-offload" => PolicyConfig {
                offload: Some(Offload::default()),
                ..value
            },
            // For question answering over long memories: most of the budget goes to what the
            // archive brings back for the current query, the rest to the newest turns.
            "recall" => PolicyConfig {
                offload: Some(Offload {
                    reserve: 0.85,
                    top_k: 200,
                }),
                ..value
            },
            "oracle" => bare(StrategyKind::Oracle),
            "langchain-trim" => bare(StrategyKind::LangchainTrim),
            "anthropic-clear-tool-uses" => PolicyConfig {
                // Triggered by the simulated budget rather than the API's 100,000 default, so
                // that it is compared at the same budget as the others.
                anthropic: Some(AnthropicClearToolUses {
                    trigger_tokens: 0,
                    ..AnthropicClearToolUses::default()
                }),
                ..bare(StrategyKind::AnthropicClearToolUses)
            },
            "llamaindex-memory" => bare(StrategyKind::LlamaindexMemory),
            "letta-summarize" => bare(StrategyKind::LettaSummarize),
            "openai-keep-last-n" => bare(StrategyKind::OpenaiKeepLastN),
            // n = 5 is the SWE-agent paper's; 10 is the window of the "Complexity Trap" study.
            "swe-agent-observation-masking" => bare(StrategyKind::SweAgentObservationMasking),
            "swe-agent-observation-masking-10" => PolicyConfig {
                swe_agent: Some(SweAgentObservationMasking {
                    n: 10,
                    ..SweAgentObservationMasking::default()
                }),
                ..bare(StrategyKind::SweAgentObservationMasking)
            },
            other => {
                return Err(PolicyError::Unknown {
                    name: other.to_string(),
                    known: BUILTIN.join(", "),
                })
            }
        })
    }
}
