//! The policy configuration: one format, read from JSON or TOML, composable. A policy is a base
//! strategy (which units to give up first when the context is over budget) plus orthogonal
//! modules: protection rules, per-category quotas, a maximum age, compression actions, and offload
//! with retrieval. The incumbents' defaults are strategies with their own parameter blocks.

pub use super::run_kind::RunKind;
use crate::model::Category;
use crate::value::{Label, ValueConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod builtin;
mod incumbents;
pub use builtin::BUILTIN;
pub use incumbents::{
    AnthropicClearToolUses, LangchainTrim, LettaSummarize, LlamaindexMemory,
    SweAgentObservationMasking,
};

/// Errors reading a policy.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// The text is not a valid policy in the given syntax.
    #[error("invalid policy ({syntax}): {message}")]
    Parse {
        /// `json` or `toml`.
        syntax: &'static str,
        /// What the parser said, with its position.
        message: String,
    },
    /// A name that is neither a built-in policy nor a file.
    #[error("unknown policy {name:?}; built-in policies: {known}")]
    Unknown {
        /// The name given.
        name: String,
        /// The built-in names.
        known: String,
    },
    /// A policy that reads the future (the oracle) was asked for where there is none: live, or
    /// without the recorded trace's hindsight.
    #[error("policy {policy:?} needs hindsight (which later steps use each chunk): it runs only on a recorded trace, never live")]
    NeedsHindsight {
        /// The policy's name.
        policy: String,
    },
    /// A protection pattern is not a valid regular expression.
    #[error("invalid protection pattern {pattern:?}: {message}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// The regex error.
        message: String,
    },
}

/// Which units a policy gives up first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyKind {
    /// Keep everything (the baseline every saving is measured against).
    KeepAll,
    /// Sliding window: the oldest units go first.
    Window,
    /// Lowest value per token goes first (the value engine).
    #[default]
    Value,
    /// Hindsight oracle: knows every future reference (Belady's MIN, token-weighted).
    Oracle,
    /// LangChain `trim_messages(strategy="last", include_system=True, start_on="human")`.
    LangchainTrim,
    /// Anthropic context editing `clear_tool_uses_20250919`.
    AnthropicClearToolUses,
    /// LlamaIndex `Memory` (token_limit, chat_history_token_ratio, token_flush_size).
    LlamaindexMemory,
    /// Letta/MemGPT: on overflow, summarize the oldest part of the history.
    LettaSummarize,
    /// OpenAI Agents SDK session with `keep_last_n` items.
    OpenaiKeepLastN,
    /// SWE-agent `LastNObservations`: all tool results but the last `n` become a placeholder.
    SweAgentObservationMasking,
}

impl StrategyKind {
    /// Every strategy, in the order lists show them.
    pub const ALL: [StrategyKind; 10] = [
        StrategyKind::KeepAll,
        StrategyKind::Window,
        StrategyKind::Value,
        StrategyKind::Oracle,
        StrategyKind::LangchainTrim,
        StrategyKind::AnthropicClearToolUses,
        StrategyKind::LlamaindexMemory,
        StrategyKind::LettaSummarize,
        StrategyKind::OpenaiKeepLastN,
        StrategyKind::SweAgentObservationMasking,
    ];

    /// The name in policy files (`"value"`, `"langchain-trim"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::KeepAll => "keep-all",
            StrategyKind::Window => "window",
            StrategyKind::Value => "value",
            StrategyKind::Oracle => "oracle",
            StrategyKind::LangchainTrim => "langchain-trim",
            StrategyKind::AnthropicClearToolUses => "anthropic-clear-tool-uses",
            StrategyKind::LlamaindexMemory => "llamaindex-memory",
            StrategyKind::LettaSummarize => "letta-summarize",
            StrategyKind::OpenaiKeepLastN => "openai-keep-last-n",
            StrategyKind::SweAgentObservationMasking => "swe-agent-observation-masking",
        }
    }

    /// MemLens' own strategies: their contexts are repaired to satisfy every invariant. The
    /// incumbents are replayed faithfully, violations included, because that is what they do.
    pub fn repairs_invariants(self) -> bool {
        matches!(
            self,
            StrategyKind::KeepAll
                | StrategyKind::Window
                | StrategyKind::Value
                | StrategyKind::Oracle
        )
    }

    /// True for the hindsight oracle: it reads which later steps use each chunk, so it runs
    /// only on a recorded trace (a replay), never live.
    pub fn needs_hindsight(self) -> bool {
        self == StrategyKind::Oracle
    }
}

/// Protection rules: protected units are never evicted or compressed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Protect {
    /// Categories that are always kept (the system prompt always is, whatever this says).
    pub categories: Vec<Category>,
    /// Regular expressions over user (and preference) chunks: matching directives are kept.
    pub patterns: Vec<String>,
    /// The newest N messages are kept (the newest user message always is).
    pub recent_messages: u32,
}

impl Default for Protect {
    fn default() -> Self {
        Protect {
            categories: vec![Category::System, Category::Preference],
            // Directives, not every sentence with "always" in it: casual talk ("I always loved
            // painting") must not pin a whole conversation.
            patterns: vec![
                r"(?i)\b(please\s+)?remember\s+(that|to|this|my)\b".into(),
                r"(?i)\bmy (requirement|preference|constraint)s?\s+(is|are)\b".into(),
                r"(?im)^\s*(please\s+)?(always|never)\s+\w+".into(),
                r"(?i)\byou (must|should) (always|never)\b".into(),
                r"(?i)\bdon'?t (ever\s+)?forget\b".into(),
                // Chinese, in the same spirit: a directive word at the start of a clause (a line
                // start or after 。！？；，：) or a phrase that is a directive wherever it stands
                // (请记住, 我的需求是, 不要忘记); "我总是迟到", "我记住了", "我的目标是当医生"
                // do not match. No `\b`: there is no word boundary between two Han characters.
                r"请(你|您)?(务必|一定要?)?记住".into(),
                r"(?m)(^|[。！？!?；;，,：:])\s*(你|您)?(要|得)?记住[^了吗呢啦么]".into(),
                r"(我|我们)的(需求|要求|偏好)(是|为)".into(),
                r"(?m)(^|[。！？!?；;，,：:])\s*(需求|要求|目标)(是|为)".into(),
                r"(?m)(^|[。！？!?；;，,：:])\s*(请|你|您)?(务必|一定要)".into(),
                r"(不要|别|千万别|千万不要)忘(记|了)".into(),
                r"(?m)(^|[。！？!?；;])\s*(请|你|您)?(总是|永远不要|永远别|始终)\w".into(),
            ],
            recent_messages: 2,
        }
    }
}

/// Compression of JSON tool results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JsonCompress {
    /// When non-empty, only these object keys are kept (at any depth).
    pub keep_fields: Vec<String>,
    /// These object keys are removed, with what they hold (at any depth).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drop_fields: Vec<String>,
    /// Arrays longer than this keep their first items and a count of the rest.
    pub max_array: usize,
    /// Strings longer than this (characters) are cut.
    pub max_string: usize,
}

impl Default for JsonCompress {
    fn default() -> Self {
        JsonCompress {
            keep_fields: Vec::new(),
            drop_fields: Vec::new(),
            max_array: 5,
            max_string: 200,
        }
    }
}

/// A modeled summary: in simulation, `ratio` of the tokens remain at a modeled cost; live, the
/// caller supplies the summarizer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummaryModel {
    /// Summary tokens per summarized token. (f64: an f32 0.15 widened is 0.15000000596, which
    /// made ceil(60 x ratio) 10 where 9 was meant.)
    pub ratio: f64,
    /// Price of the summarizing call, USD per million input tokens.
    pub input_usd_per_mtok: f64,
    /// Price of the summarizing call, USD per million output tokens.
    pub output_usd_per_mtok: f64,
}

impl SummaryModel {
    /// The modeled cost of summarizing `input_tokens` into `summary_tokens`, USD.
    pub fn cost_usd(&self, input_tokens: u64, summary_tokens: u32) -> f64 {
        (input_tokens as f64 * self.input_usd_per_mtok
            + f64::from(summary_tokens) * self.output_usd_per_mtok)
            / 1e6
    }
}

impl Default for SummaryModel {
    fn default() -> Self {
        // gpt-4o-mini prices as a cheap summarizer.
        SummaryModel {
            ratio: 0.15,
            input_usd_per_mtok: 0.15,
            output_usd_per_mtok: 0.6,
        }
    }
}

/// Compression actions, tried on eviction candidates before they are evicted.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Compress {
    /// Send JSON tool results without the whitespace between their tokens, from the first call
    /// that carries them, under budget or not (window and value strategies). Lossless, so
    /// protection does not exempt a result; a tool rule's `compress = false` does. The stronger
    /// compressions below may still be tried on the original later.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub minify_json: bool,
    /// Send JSON tool results as TOON (Token-Oriented Object Notation) when that is fewer
    /// tokens (than the original, and than minified with `minify_json`), like `minify_json`:
    /// from the first call, under budget or not; lossless (each TOON text is read back and
    /// compared with the original's data before it is used).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub toon_json: bool,
    /// Compact JSON tool results.
    pub json: Option<JsonCompress>,
    /// Strip markup (HTML tags) and collapse whitespace.
    pub strip_markup: bool,
    /// Replace an exact duplicate of an earlier kept chunk with a pointer to it.
    pub dedupe: bool,
    /// Clear tool results older than this many calls to a placeholder.
    pub clear_tool_results_after: Option<u32>,
    /// Summarize evicted spans instead of dropping them (modeled in simulation).
    pub summary: Option<SummaryModel>,
    /// Compress only when tokens saved x expected remaining calls x input price exceed the cost
    /// by this factor (1.0: break even).
    pub min_benefit: Option<f64>,
}

/// Offload + retrieval: evicted chunks go to an archive; each call, the archived chunks most
/// relevant to the current query come back within a reserved share of the budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Offload {
    /// Share of the budget reserved for retrieved chunks.
    pub reserve: f32,
    /// At most this many units are retrieved per call.
    pub top_k: usize,
}

impl Default for Offload {
    fn default() -> Self {
        Offload {
            reserve: 0.25,
            top_k: 8,
        }
    }
}

/// When eviction starts and where it stops, as shares of the budget (see
/// [`PolicyConfig::cleanup`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Cleanup {
    /// Evict once the context passes this share of the budget (0 < trigger <= 1).
    pub trigger: f32,
    /// ... down to this share (0 < target <= trigger).
    pub target: f32,
}

impl Default for Cleanup {
    fn default() -> Self {
        Cleanup {
            trigger: 0.8,
            target: 0.6,
        }
    }
}

/// Which units a quota gives up first (see [`PolicyConfig::quota_order`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QuotaOrder {
    /// Oldest first.
    #[default]
    Oldest,
    /// Lowest value per token first.
    Value,
}

impl QuotaOrder {
    fn is_oldest(&self) -> bool {
        *self == QuotaOrder::Oldest
    }
}

/// Rules for one tool (`[tools.web_search]`). They apply to its results once the model has seen
/// them (from the call after they arrive), under budget or not; protected chunks are exempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolRule {
    /// Keep only these JSON fields (at any depth) of its results: `["summary", "top_3_links"]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keep_fields: Vec<String>,
    /// Remove these JSON fields (at any depth, with what they hold) from its results:
    /// `["created_at", "email"]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drop_fields: Vec<String>,
    /// Clear its results to a placeholder this many calls after they arrive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clear_after_calls: Option<u32>,
    /// `false`: never compress or clear its results (they are kept whole, or evicted whole).
    pub compress: bool,
}

impl Default for ToolRule {
    fn default() -> Self {
        ToolRule {
            keep_fields: Vec::new(),
            drop_fields: Vec::new(),
            clear_after_calls: None,
            compress: true,
        }
    }
}

/// A retention policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// A name for reports.
    pub name: String,
    /// The base strategy.
    pub strategy: StrategyKind,
    /// Token budget for the context (input tokens); the CLI's `--budget` overrides it.
    pub budget: Option<u32>,
    /// Window and value strategies: keep at most this many messages (by tokens alone when
    /// unset).
    pub max_messages: Option<u32>,
    /// Protection rules.
    pub protect: Protect,
    /// Per-category token quotas, as shares of the budget.
    pub quotas: BTreeMap<Category, f32>,
    /// Evict units older than this many calls.
    pub max_age_calls: Option<u32>,
    /// Evict units older than this many seconds, by the trace's own timestamps: a unit's age is
    /// the newest timestamp seen minus its oldest member's (units without one never age out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_age_seconds: Option<f64>,
    /// Units worth at least this (their most valuable member's value) are exempt from
    /// `max_age_calls` and `max_age_seconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_exempt_value: Option<f32>,
    /// Which units a quota gives up first: `oldest` (the default) or `value` (lowest value per
    /// token first, as the value strategy evicts).
    #[serde(skip_serializing_if = "QuotaOrder::is_oldest")]
    pub quota_order: QuotaOrder,
    /// The runs `quotas` act in (as `value_threshold_runs`); in the others there are none: a
    /// quota on the dialogue, set for an agent whose old turns are rarely read again, would give
    /// up most of a conversation.
    #[serde(skip_serializing_if = "RunKind::is_any")]
    pub quotas_runs: RunKind,
    /// Rules for one tool's calls and results, by tool name (see [`ToolRule`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolRule>,
    /// Value settings from a preset by key (`support-bot`, `coding-agent`, `research`,
    /// `default`); a policy with a preset leaves `[value]` out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_preset: Option<String>,
    /// Compression actions.
    pub compress: Compress,
    /// Offload + retrieval (off when absent).
    pub offload: Option<Offload>,
    /// Window and value strategies: at every call, evict (drop, or archive with offload) each
    /// unprotected unit whose value is below this, also under budget. A unit's value is its most
    /// valuable member's; what the model has not seen yet (added since the last call) is exempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_threshold: Option<f32>,
    /// The runs the value threshold acts in: `any` (the default), `agent` (from a run's first
    /// tool call or result on) or `conversation` (until then). A threshold learned on one kind
    /// of run drops what the other kind still needs (`memlens fit` sets it to the kind it was
    /// fitted on).
    #[serde(skip_serializing_if = "RunKind::is_any")]
    pub value_threshold_runs: RunKind,
    /// The share of the budget the context fills before the rules that act under budget (the
    /// value threshold, echoed replies) act; unset: from the first call. They act before the
    /// budget squeezes, yet scale with it: at a budget the whole run fits in this share of,
    /// nothing is given up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub act_from: Option<f32>,
    /// The runs in which an assistant reply the model has seen is evicted once every
    /// distinctive token it holds (ids, numbers, dates, paths: what the reference detector
    /// matches) is also in another chunk still sent, in the form it is sent; replies with none
    /// go too. Off when unset. In an agent's run the replies mostly restate what a tool result
    /// or the user said; a conversation's replies are its content, so `agent` is the usual
    /// setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evict_echoed_replies: Option<RunKind>,
    /// Value strategy, and quotas by value: units are given up lowest `value / tokens^e` first.
    /// 1 is value per token, which gives up a large item before several small ones of the same
    /// value; 0 is value alone, whatever the size. In `[0, 1]` (clamped). Unset: 1 once the run
    /// has a tool call or result, 0 before (a conversation; see the value strategy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_exponent: Option<f32>,
    /// The runs `size_exponent` applies in (as `value_threshold_runs`); in the others the
    /// exponent is as if unset. `memlens fit` sets it to the kind it was fitted on.
    #[serde(skip_serializing_if = "RunKind::is_any")]
    pub size_exponent_runs: RunKind,
    /// Window and value strategies: act only once the context passes `trigger` x the budget,
    /// then evict down to `target` x the budget, so the cached prefix survives most calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<Cleanup>,
    /// The runs `cleanup` acts in (as `value_threshold_runs`); in the others the context is
    /// evicted to the budget at every call. `memlens fit` sets it to the kind it was fitted on.
    #[serde(skip_serializing_if = "RunKind::is_any")]
    pub cleanup_runs: RunKind,
    /// Value engine settings (value strategy, eviction order, retrieval ranking).
    pub value: ValueConfig,
    /// Labels by chunk key (a user's own, from the web app's Labels view or a labels file),
    /// applied as each chunk with that key arrives: `important` keeps it, `useless` forces its
    /// value to 0. Keys are trace-specific (`m3.0`), so a policy carrying labels means them for
    /// the trace they were made on.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, Label>,
    /// `langchain-trim` only: LangChain `trim_messages` parameters (its defaults when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub langchain: Option<LangchainTrim>,
    /// `anthropic-clear-tool-uses` only: `clear_tool_uses` parameters (the API's defaults when
    /// absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anthropic: Option<AnthropicClearToolUses>,
    /// `llamaindex-memory` only: LlamaIndex `Memory` parameters (its defaults when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llamaindex: Option<LlamaindexMemory>,
    /// `letta-summarize` only: Letta summarization parameters (defaults when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub letta: Option<LettaSummarize>,
    /// `openai-keep-last-n` only: the session items kept (20 when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_last_n: Option<u32>,
    /// `swe-agent-observation-masking` only: `LastNObservations` parameters (n = 5 when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swe_agent: Option<SweAgentObservationMasking>,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            name: "value".into(),
            strategy: StrategyKind::Value,
            budget: None,
            max_messages: None,
            protect: Protect::default(),
            quotas: BTreeMap::new(),
            max_age_calls: None,
            max_age_seconds: None,
            age_exempt_value: None,
            quota_order: QuotaOrder::Oldest,
            quotas_runs: RunKind::Any,
            tools: BTreeMap::new(),
            value_preset: None,
            compress: Compress::default(),
            offload: None,
            value_threshold: None,
            value_threshold_runs: RunKind::Any,
            act_from: None,
            size_exponent: None,
            size_exponent_runs: RunKind::Any,
            cleanup: None,
            cleanup_runs: RunKind::Any,
            evict_echoed_replies: None,
            value: ValueConfig::default(),
            labels: BTreeMap::new(),
            langchain: None,
            anthropic: None,
            llamaindex: None,
            letta: None,
            keep_last_n: None,
            swe_agent: None,
        }
    }
}

impl PolicyConfig {
    /// Parses a policy from JSON.
    pub fn from_json(text: &str) -> Result<PolicyConfig, PolicyError> {
        serde_json::from_str::<PolicyConfig>(text)
            .map_err(|e| PolicyError::Parse {
                syntax: "json",
                message: e.to_string(),
            })?
            .resolved("json")
    }

    /// Parses a policy from TOML (with the `toml` feature, which every host but the web app
    /// turns on: its page is built without a TOML parser, and its worker turns TOML into JSON
    /// text for the page to read, with less code than this function instantiates).
    #[cfg(feature = "toml")]
    pub fn from_toml(text: &str) -> Result<PolicyConfig, PolicyError> {
        toml::from_str::<PolicyConfig>(text)
            .map_err(|e| PolicyError::Parse {
                syntax: "toml",
                message: e.to_string(),
            })?
            .resolved("toml")
    }

    /// The value settings the policy means: its preset's when it names one (then `[value]`
    /// must be left out), its own otherwise.
    pub fn value_config(&self) -> Result<ValueConfig, PolicyError> {
        let Some(name) = &self.value_preset else {
            return Ok(self.value.clone());
        };
        let preset = ValueConfig::preset(name).ok_or_else(|| PolicyError::Parse {
            syntax: "policy",
            message: format!(
                "unknown value_preset {name:?}; presets: {}",
                ValueConfig::PRESETS.join(", ")
            ),
        })?;
        if self.value != ValueConfig::default() && self.value != preset {
            return Err(PolicyError::Parse {
                syntax: "policy",
                message: format!("value_preset {name:?} and a [value] section: give one of them"),
            });
        }
        Ok(preset)
    }

    /// Checks what serde cannot (a known preset, no conflicting `[value]`) and fills `value`
    /// from the preset, so every reader of the policy sees the weights it uses.
    fn resolved(mut self, syntax: &'static str) -> Result<PolicyConfig, PolicyError> {
        self.value = self.value_config().map_err(|e| match e {
            PolicyError::Parse { message, .. } => PolicyError::Parse { syntax, message },
            other => other,
        })?;
        if let Some(path) = self.non_finite_number() {
            return Err(PolicyError::Parse {
                syntax,
                message: format!("{path} is not a finite number"),
            });
        }
        Ok(self)
    }

    /// The path of the first number that is not finite (TOML's `inf` and `nan`, or a literal too
    /// large for its type): JSON has no such numbers, so the policy could not be exported and
    /// read back as itself (found by the `policy` fuzz target).
    #[cfg(feature = "toml")]
    fn non_finite_number(&self) -> Option<String> {
        fn walk(v: &toml::Value, path: &str) -> Option<String> {
            let at = |key: &str| match path {
                "" => key.to_string(),
                _ => format!("{path}.{key}"),
            };
            match v {
                toml::Value::Float(f) if !f.is_finite() => Some(path.to_string()),
                toml::Value::Table(t) => t.iter().find_map(|(k, v)| walk(v, &at(k))),
                toml::Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .find_map(|(i, v)| walk(v, &format!("{path}[{i}]"))),
                _ => None,
            }
        }
        walk(&toml::Value::try_from(self).ok()?, "")
    }

    /// Without TOML (the web page) only JSON is read, and JSON cannot carry a number that is
    /// not finite: it has no `inf` or `nan`, and serde_json refuses a literal out of its field's
    /// range (tested below). Nothing to look for.
    #[cfg(not(feature = "toml"))]
    fn non_finite_number(&self) -> Option<String> {
        None
    }

    /// Parses JSON when the text starts with `{`, TOML otherwise (an error naming the feature
    /// when the crate is built without `toml`).
    pub fn parse(text: &str) -> Result<PolicyConfig, PolicyError> {
        if text.trim_start().starts_with('{') {
            return PolicyConfig::from_json(text);
        }
        #[cfg(feature = "toml")]
        return PolicyConfig::from_toml(text);
        #[cfg(not(feature = "toml"))]
        Err(PolicyError::Parse {
            syntax: "toml",
            message:
                "this build reads JSON policies only (memlens-core without its `toml` feature)"
                    .to_string(),
        })
    }

    /// The policy as pretty JSON (for export).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("policy configs contain only string-keyed maps")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JSON has no `inf`, and a literal too large for its field is refused by serde_json itself
    /// (an `f32` and an `f64` field): why the build without TOML needs no finiteness check.
    #[test]
    fn a_json_number_too_large_for_its_field_is_refused() {
        for json in [
            r#"{"value_threshold": 1e39}"#,
            r#"{"max_age_seconds": 1e400}"#,
        ] {
            let err = PolicyConfig::from_json(json).expect_err("not a finite number");
            assert!(err.to_string().contains("number out of range"), "{err}");
        }
        let ok = PolicyConfig::from_json(r#"{"value_threshold": 0.25, "max_messages": 7}"#)
            .expect("a finite policy reads");
        assert_eq!(ok.value_threshold, Some(0.25));
    }

    #[cfg(not(feature = "toml"))]
    #[test]
    fn without_toml_a_toml_text_is_a_clear_error() {
        let err = PolicyConfig::parse("strategy = \"window\"").expect_err("no TOML parser");
        assert!(err.to_string().contains("JSON policies only"), "{err}");
    }
}
