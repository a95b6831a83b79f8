//! SWE-agent observation masking (`LastNObservations`): before every call, all observations
//! but the last `n` are sent as `Old environment output: (K lines omitted)`, plus
//! ` (M images omitted)` when they had images. It counts observations, not tokens, so it acts at
//! any budget; it never drops anything (a masked result stays paired with its call), so the
//! context may stay over budget. With `polling` > 1 the masked count moves only every `polling`
//! observations, so the prompt prefix stays cacheable in between. Stateless upstream (recomputed
//! from the history); here a masked result stays masked, which is the same since the masked
//! count never falls.
//!
//! Follows `LastNObservations._get_omit_indices` and `__call__` of SWE-agent
//! (`sweagent/agent/history_processors.py`, commit 318f909, MIT). Mapping to MemLens:
//! - An observation is a tool result chunk (`message_type: "observation"`), demonstrations
//!   (chunk kind `demonstration`, SWE-agent's `is_demo`) left out.
//! - SWE-agent's first observation, never masked, is the instance template: in MemLens traces
//!   that is the task's user message, which this strategy never touches. So the template is
//!   counted as observation 0 and the first tool result is observation 1, maskable.
//! - Images: a tool result's image parts are lines of its text in MemLens (the importers write
//!   `[image_url: ...]`, `[input_image: ...]`, `[image]` for them); those lines count as images,
//!   the others as text lines (Python's `str.splitlines()`). An image sent as a chunk of its own
//!   beside a result (a Gemini `inlineData` part) is not the result's content and stays.
//! - SWE-agent's `tags` (`keep_output`, `remove_output`) do not exist in traces: not modeled.
//! - Deviation: the engine never makes an item longer, so a result already no longer (in
//!   tokens) than its placeholder is sent as it is, where SWE-agent would send the placeholder.

use super::super::Strategy;
use crate::model::Category;
use crate::policy::compress::CompressKind;
use crate::policy::config::SweAgentObservationMasking as Params;
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::{Item, State};

/// The replay of the upstream library, without MemLens' repairs.
#[derive(Debug)]
pub(crate) struct SweAgentObservationMasking(pub(crate) Params);

impl Strategy for SweAgentObservationMasking {
    fn decide(&self, s: &mut State, _query: &str, d: &mut Decision) {
        let observations: Vec<usize> = (0..s.items.len())
            .filter(|&i| s.live(i) && is_observation(&s.items[i]))
            .collect();
        let masked = masked_count(observations.len(), &self.0);
        for &i in &observations[..masked] {
            if s.items[i].compressed.is_none() {
                let text = placeholder(&s.items[i].chunk.content);
                let _ = s.set_compressed(i, CompressKind::Clear, text, d);
            }
        }
    }

    // Every change goes through `set_compressed`.
    fn marks_changes(&self) -> bool {
        true
    }
}

fn is_observation(it: &Item) -> bool {
    it.category == Category::ToolResult && it.chunk.meta.kind.as_deref() != Some("demonstration")
}

/// How many of `results` tool results, oldest first, are masked: `_get_omit_indices` over
/// `results + 1` observations (the instance template first), which omits
/// `observation_indices[1:last_removed_idx]`.
fn masked_count(results: usize, p: &Params) -> usize {
    let (n, polling) = (p.n as usize, p.polling.max(1) as usize);
    let last_removed_idx = ((results + 1) / polling * polling).saturating_sub(n);
    last_removed_idx.saturating_sub(1)
}

/// The text SWE-agent sends for an elided observation.
pub(crate) fn placeholder(content: &str) -> String {
    let (lines, images) = content_stats(content);
    let mut text = format!("Old environment output: ({lines} lines omitted)");
    if images > 0 {
        text.push_str(&format!(" ({images} images omitted)"));
    }
    text
}

/// `_get_content_stats`: text lines (as Python's `str.splitlines()` counts them) and images.
fn content_stats(content: &str) -> (usize, usize) {
    let lines = python_splitlines(content);
    let images = lines.iter().filter(|l| is_image_line(l)).count();
    (lines.len() - images, images)
}

/// Python's `str.splitlines()`: `\r\n` is one boundary, and so is each of the other line
/// separators it knows; a trailing boundary adds no empty line ("" has none).
fn python_splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(
            c,
            '\n' | '\r' | '\x0b' | '\x0c' | '\x1c'..='\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}'
        ) {
            lines.push(&text[start..i]);
            start = i + c.len_utf8();
            if c == '\r' && chars.next_if(|&(_, n)| n == '\n').is_some() {
                start += 1;
            }
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// A line an importer wrote for an image part of a tool result: `[image]` (Anthropic),
/// `[image_url: ...]` (OpenAI chat, SWE-agent), `[input_image: ...]` (OpenAI Responses).
fn is_image_line(line: &str) -> bool {
    let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) else {
        return false;
    };
    let kind = inner.split_once(": ").map_or(inner, |(kind, _)| kind);
    matches!(kind, "image" | "image_url" | "input_image")
}

#[cfg(test)]
mod tests {
    use super::{placeholder, Params};
    use crate::model::Category::{System, User};
    use crate::policy::strategy::testing::{builtin, engine, Script};
    use crate::policy::validate::check;
    use crate::policy::{Decision, EntryForm, PolicyConfig};
    use crate::tokens::TokenCounter;

    /// system 10, the task 10, then `results` tool uses: a 10-token call and a 100-token result
    /// of three lines each.
    fn tool_uses(results: usize) -> Script {
        let mut s = Script::default();
        s.msg("sys", System, 10).msg("task", User, 10);
        for k in 1..=results {
            s.call(&format!("c{k}"), "bash", 10, true)
                .result(&format!("r{k}"), &format!("c{k}"), "bash", 100)
                .content(&format!("<returncode>0</returncode>\n<output>\nout {k}"));
        }
        s
    }

    fn policy(n: u32, polling: u32) -> PolicyConfig {
        PolicyConfig {
            swe_agent: Some(Params { n, polling }),
            ..builtin("swe-agent-observation-masking")
        }
    }

    /// The masked chunks' keys and the text each is sent as.
    fn masked(s: &Script, d: &Decision) -> Vec<(String, String)> {
        d.entries
            .iter()
            .filter(|e| matches!(e.form, EntryForm::Compressed { .. }))
            .map(|e| {
                let key = &s.chunks[e.chunk.expect("masked results are chunks").index()].key;
                (key.clone(), e.text.as_deref().unwrap_or("").to_string())
            })
            .collect()
    }

    fn masked_keys(s: &Script, d: &Decision) -> Vec<String> {
        masked(s, d).into_iter().map(|(k, _)| k).collect()
    }

    #[test]
    fn keeps_the_last_n_results_whole_and_masks_the_older_ones_at_any_budget() {
        let s = tool_uses(7);
        // 7 results and the task make 8 observations: last_removed_idx = 8 - 5 = 3, and
        // observations 1 and 2 (r1, r2) are masked; r3-r7 stay whole.
        let d = s.decide(builtin("swe-agent-observation-masking"), 100_000);
        let text = "Old environment output: (3 lines omitted)";
        assert_eq!(
            masked(&s, &d),
            [("r1".into(), text.into()), ("r2".into(), text.into())]
        );
        // Nothing leaves: every call keeps its result, and no invariant breaks.
        assert_eq!(d.entries.len(), s.chunks.len());
        let full: Vec<_> = s.chunks.iter().map(|c| c.id).collect();
        assert!(check(|id| &s.chunks[id.index()], &full, &d).is_empty());
        // 10 + 10 + 7 x 110 + 3 (reply priming), less the two results, plus two placeholders.
        let p = TokenCounter::for_model(Some("gpt-4o")).count(text);
        assert_eq!(d.tokens, 793 - 200 + 2 * u64::from(p));
        // The study's n = 10 keeps all seven.
        let d = s.decide(builtin("swe-agent-observation-masking-10"), 100_000);
        assert!(masked(&s, &d).is_empty());
        let d = s.decide(builtin("swe-agent-observation-masking-10"), 100);
        assert!(masked(&s, &d).is_empty(), "a budget changes nothing");
    }

    #[test]
    fn the_first_observation_kept_upstream_is_the_task_so_the_first_result_can_be_masked() {
        // SWE-agent's history with n = 1 and two results: [template, r1, r2], last_removed_idx
        // = 3 - 1 = 2, omitted [1:2] = r1. The template is the task here, never touched.
        let s = tool_uses(2);
        assert_eq!(masked_keys(&s, &s.decide(policy(1, 1), 100_000)), ["r1"]);
        // One result: [template, r1], last_removed_idx = 1, nothing omitted.
        let s = tool_uses(1);
        assert!(masked(&s, &s.decide(policy(1, 1), 100_000)).is_empty());
        // A demonstration's observation (is_demo) is neither counted nor masked.
        let mut s = tool_uses(2);
        s.chunks[3].meta.kind = Some("demonstration".into());
        assert!(masked(&s, &s.decide(policy(1, 1), 100_000)).is_empty());
    }

    #[test]
    fn polling_moves_the_masked_count_every_polling_observations() {
        // n = 2, polling = 3, after each of 8 results (chunks: sys, task, then call + result):
        // L observations with the template, last_removed_idx = L // 3 * 3 - 2, masked
        // max(0, last_removed_idx - 1): L = 2..5 -> 0; L = 6..8 -> 3; L = 9 -> 6. Between
        // n and n + polling - 1 results stay whole.
        let s = tool_uses(8);
        let calls: Vec<usize> = (1..=8).map(|k| 2 + 2 * k).collect();
        let decisions = s.run(&mut engine(policy(2, 3), 100_000), &calls);
        let counts: Vec<usize> = decisions.iter().map(|d| masked(&s, d).len()).collect();
        assert_eq!(counts, [0, 0, 0, 0, 3, 3, 3, 6]);
        assert_eq!(
            masked_keys(&s, &decisions[7]),
            ["r1", "r2", "r3", "r4", "r5", "r6"]
        );
        // polling = 1: exactly the last n stay whole once there are more.
        let decisions = s.run(&mut engine(policy(2, 1), 100_000), &calls);
        let counts: Vec<usize> = decisions.iter().map(|d| masked(&s, d).len()).collect();
        assert_eq!(counts, [0, 0, 1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn the_placeholder_counts_lines_as_python_and_images_apart() {
        assert_eq!(placeholder(""), "Old environment output: (0 lines omitted)");
        // "a\r\nb\rc\n".splitlines() == ["a", "b", "c"]; a trailing newline adds no line.
        assert_eq!(
            placeholder("a\r\nb\rc\n"),
            "Old environment output: (3 lines omitted)"
        );
        assert_eq!(
            placeholder("a\n\nb"),
            "Old environment output: (3 lines omitted)"
        );
        // A tool message [text, image_url] imported as one result: the image is its own line.
        assert_eq!(
            placeholder("Screenshot taken\nsee below\n[image_url: inline data]"),
            "Old environment output: (2 lines omitted) (1 images omitted)"
        );
        assert_eq!(
            placeholder("[image]\n[image]"),
            "Old environment output: (0 lines omitted) (2 images omitted)"
        );
        // Brackets around other text are text.
        assert_eq!(
            placeholder("[imagery]\n[image_url]"),
            "Old environment output: (1 lines omitted) (1 images omitted)"
        );
    }

    #[test]
    fn a_result_no_longer_than_its_placeholder_is_sent_as_it_is() {
        let mut s = tool_uses(2);
        s.chunks[3].content_tokens = 2;
        s.chunks[3].tokens = 2;
        // r1 would be masked, but the placeholder is longer: the engine never lengthens an item.
        assert!(masked(&s, &s.decide(policy(1, 1), 100_000)).is_empty());
    }

    #[test]
    fn n_and_polling_must_be_positive() {
        let err = crate::policy::Engine::new(
            policy(0, 1),
            crate::policy::EngineOptions {
                budget: 1000,
                input_usd_per_mtok: None,
            },
            TokenCounter::for_model(Some("gpt-4o")),
        )
        .expect_err("n = 0");
        assert!(err.to_string().contains("positive"), "{err}");
        assert!(crate::policy::Engine::new(
            policy(5, 0),
            crate::policy::EngineOptions {
                budget: 1000,
                input_usd_per_mtok: None,
            },
            TokenCounter::for_model(Some("gpt-4o")),
        )
        .is_err());
    }
}
