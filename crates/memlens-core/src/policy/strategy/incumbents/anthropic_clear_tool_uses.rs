//! Anthropic context editing `clear_tool_uses_20250919`: once the input exceeds `trigger`
//! (the budget when 0), clear the results of all tool uses but the newest `keep`, oldest first,
//! skipping `exclude_tools`, and only if at least `clear_at_least` tokens are cleared. Cleared
//! results stay as a placeholder (the tool use itself stays). Nothing else is removed.
//!
//! Follows the Anthropic Messages API's context-editing strategy `clear_tool_uses_20250919` (the
//! date is its version) with its documented parameters and defaults.

use super::super::Strategy;
use crate::model::Category;
use crate::policy::compress::CompressKind;
use crate::policy::config::AnthropicClearToolUses as AnthropicParams;
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::{State, Status};

/// The replay of the upstream library, without MemLens' repairs.
#[derive(Debug)]
pub(crate) struct AnthropicClearToolUses(pub(crate) AnthropicParams);

impl Strategy for AnthropicClearToolUses {
    fn decide(&self, s: &mut State, _query: &str, d: &mut Decision) {
        let cfg = self.0.clone();
        let trigger = s.or_budget(cfg.trigger_tokens);
        if s.active_tokens() <= u64::from(trigger) {
            return;
        }
        let results: Vec<usize> = (0..s.items.len())
            .filter(|&i| {
                let it = &s.items[i];
                it.status == Status::Active
                    && it.category == Category::ToolResult
                    && !it
                        .chunk
                        .meta
                        .tool_name
                        .as_ref()
                        .is_some_and(|t| cfg.exclude_tools.contains(t))
            })
            .collect();
        let uncleared: Vec<usize> = results
            .iter()
            .copied()
            .filter(|&i| s.items[i].compressed.is_none())
            .collect();
        let keep = cfg.keep as usize;
        let clearable = &uncleared[..uncleared.len().saturating_sub(keep)];
        let placeholder_tokens = s.counter.count(&cfg.placeholder);
        let gain: u64 = clearable
            .iter()
            .map(|&i| {
                u64::from(
                    s.items[i]
                        .chunk
                        .content_tokens
                        .saturating_sub(placeholder_tokens),
                )
            })
            .sum();
        if clearable.is_empty() || gain < u64::from(cfg.clear_at_least) {
            return;
        }
        for &i in clearable {
            let _ = s.set_compressed(i, CompressKind::Clear, cfg.placeholder.clone(), d);
            if cfg.clear_tool_inputs {
                let unit = s.items[i].unit;
                for j in 0..s.items.len() {
                    if s.items[j].unit == unit
                        && s.items[j].category == Category::ToolCall
                        && s.items[j].compressed.is_none()
                    {
                        let _ = s.set_compressed(j, CompressKind::Clear, "{}".into(), d);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Category::{System, User};
    use crate::policy::config::AnthropicClearToolUses as Params;
    use crate::policy::strategy::testing::{builtin, Script};
    use crate::policy::EntryForm;

    /// system 10, user 10, then five tool uses: a 10-token call and a 100-token result each.
    /// Everything: 10 + 10 + 5 x 110 + 3 (reply priming) = 573 tokens.
    fn five_tool_uses() -> Script {
        let mut s = Script::default();
        s.msg("sys", System, 10).msg("u1", User, 10);
        for k in 1..=5 {
            s.call(
                &format!("c{k}"),
                if k == 1 { "search" } else { "read" },
                10,
                true,
            )
            .result(
                &format!("r{k}"),
                &format!("c{k}"),
                if k == 1 { "search" } else { "read" },
                100,
            );
        }
        s
    }

    fn cleared(s: &Script, d: &crate::policy::Decision) -> Vec<String> {
        d.entries
            .iter()
            .filter(|e| matches!(e.form, EntryForm::Compressed { .. }))
            .map(|e| {
                s.chunks[e.chunk.expect("cleared results are chunks").index()]
                    .key
                    .clone()
            })
            .collect()
    }

    #[test]
    fn past_the_trigger_every_result_but_the_newest_three_is_cleared() {
        let s = five_tool_uses();
        let d = s.decide(builtin("anthropic-clear-tool-uses"), 500);
        assert_eq!(cleared(&s, &d), ["r1", "r2"]);
        // Tool uses stay, and so does everything else.
        assert_eq!(d.entries.len(), s.chunks.len());
        let placeholder = Params::default().placeholder;
        assert!(d
            .entries
            .iter()
            .filter_map(|e| e.text.as_deref())
            .all(|t| t == placeholder));
        let p = crate::tokens::TokenCounter::for_model(Some("gpt-4o")).count(&placeholder);
        assert_eq!(d.tokens, 573 - 200 + 2 * u64::from(p));
    }

    #[test]
    fn under_the_trigger_nothing_is_cleared() {
        let s = five_tool_uses();
        assert!(cleared(&s, &s.decide(builtin("anthropic-clear-tool-uses"), 573)).is_empty());
    }

    #[test]
    fn excluded_tools_are_spared_and_clear_at_least_can_veto() {
        let s = five_tool_uses();
        let mut policy = builtin("anthropic-clear-tool-uses");
        policy.anthropic = Some(Params {
            trigger_tokens: 0,
            exclude_tools: vec!["search".into()],
            ..Params::default()
        });
        // r1 is a `search` result: spared; the newest three of the rest (r3-r5) are kept.
        assert_eq!(cleared(&s, &s.decide(policy.clone(), 500)), ["r2"]);
        policy.anthropic = Some(Params {
            trigger_tokens: 0,
            clear_at_least: 1_000,
            ..Params::default()
        });
        // Clearing r1 and r2 would free under 200 tokens: not worth it, nothing is cleared.
        assert!(cleared(&s, &s.decide(policy, 500)).is_empty());
    }
}
