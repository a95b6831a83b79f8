//! The incumbents: the memory management of popular agent frameworks, replayed faithfully
//! (violations included, because that is what they do), each in its own file naming the
//! upstream version it follows, with behaviour tests against that library's documented
//! semantics.

mod anthropic_clear_tool_uses;
mod langchain_trim;
mod letta_summarize;
mod llamaindex_memory;
mod openai_keep_last_n;
mod swe_agent_observation_masking;

pub(crate) use anthropic_clear_tool_uses::AnthropicClearToolUses;
pub(crate) use langchain_trim::LangchainTrim;
pub(crate) use letta_summarize::LettaSummarize;
pub(crate) use llamaindex_memory::LlamaindexMemory;
pub(crate) use openai_keep_last_n::OpenaiKeepLastN;
pub(crate) use swe_agent_observation_masking::SweAgentObservationMasking;

/// The OpenAI Agents SDK example's `keep_last_n` when a policy names none.
pub(crate) const DEFAULT_KEEP_LAST_N: u32 = 20;
