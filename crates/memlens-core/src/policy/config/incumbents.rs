//! The incumbents' own parameter blocks (`[langchain]`, `[anthropic]`, `[llamaindex]`,
//! `[letta]`, `[swe_agent]`), each with the upstream library's defaults.

use serde::{Deserialize, Serialize};

/// LangChain `trim_messages` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LangchainTrim {
    /// Keep the system message.
    pub include_system: bool,
    /// The kept history must start on a human message.
    pub start_on_human: bool,
    /// Allow splitting a message's content (LangChain's `allow_partial`); MemLens never splits.
    pub allow_partial: bool,
}

impl Default for LangchainTrim {
    fn default() -> Self {
        LangchainTrim {
            include_system: true,
            start_on_human: true,
            allow_partial: false,
        }
    }
}

/// Anthropic `clear_tool_uses_20250919` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnthropicClearToolUses {
    /// Input tokens above which clearing starts (`trigger`; default 100,000; the budget when 0).
    pub trigger_tokens: u32,
    /// Tool uses to keep, newest first (`keep`; default 3).
    pub keep: u32,
    /// Clear at least this many tokens when clearing (`clear_at_least`; default 0).
    pub clear_at_least: u32,
    /// Tools whose results are never cleared.
    pub exclude_tools: Vec<String>,
    /// Also clear the tool call inputs (`clear_tool_inputs`; default false).
    pub clear_tool_inputs: bool,
    /// Text that replaces a cleared result.
    pub placeholder: String,
}

impl Default for AnthropicClearToolUses {
    fn default() -> Self {
        AnthropicClearToolUses {
            trigger_tokens: 100_000,
            keep: 3,
            clear_at_least: 0,
            exclude_tools: Vec::new(),
            clear_tool_inputs: false,
            placeholder: "[tool result cleared to save context]".into(),
        }
    }
}

/// LlamaIndex `Memory` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlamaindexMemory {
    /// Total token limit (`token_limit`; the budget when 0).
    pub token_limit: u32,
    /// Share of the limit for chat history (`chat_history_token_ratio`, default 0.7).
    pub chat_history_token_ratio: f64,
    /// Tokens flushed out of the history at once when it is over its share (`token_flush_size`,
    /// default 3000).
    pub token_flush_size: u32,
}

impl Default for LlamaindexMemory {
    fn default() -> Self {
        LlamaindexMemory {
            token_limit: 0,
            chat_history_token_ratio: 0.7,
            token_flush_size: 3000,
        }
    }
}

/// Letta-style summarization parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LettaSummarize {
    /// Share of the history (oldest first) summarized on overflow.
    pub fraction: f64,
}

impl Default for LettaSummarize {
    fn default() -> Self {
        LettaSummarize { fraction: 0.3 }
    }
}

/// SWE-agent `LastNObservations` parameters (observation masking).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SweAgentObservationMasking {
    /// Observations kept whole (`n`; upstream requires it, > 0): 5 as in the SWE-agent paper.
    pub n: u32,
    /// Update the count of masked observations every `polling` observations (`polling`, > 0;
    /// default 1), so between `n` and `n + polling - 1` stay whole, for prompt caching.
    pub polling: u32,
}

impl Default for SweAgentObservationMasking {
    fn default() -> Self {
        SweAgentObservationMasking { n: 5, polling: 1 }
    }
}
