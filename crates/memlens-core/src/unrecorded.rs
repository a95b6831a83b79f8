//! Context the provider was sent but the log does not hold: Claude Code, Codex, Gemini CLI and
//! OpenHands sessions leave out the system prompt and the tool definitions, Anthropic adds a
//! tool-use system prompt of its own, a request log may leave the tools out. The provider's
//! reported input counts all of it, so MemLens accounts for it as one chunk of category
//! [`Category::Unrecorded`], carried at the start of every call like the prompt it stands for.
//!
//! - **Estimate**: at the first call with reported input, reported minus counted. Below 1% of
//!   what was reported the difference is counting noise and there is no item.
//! - **Changes**: a compaction starts a new estimate at the first reported call after it; the
//!   item changes (a new chunk, a cache break in `diff`) only when that estimate moves by more
//!   than 5%, so a prompt that stayed the same stays one cached prefix.
//! - **What remains** per call, `reported − counted` with the item counted in, is the counting
//!   difference: the tokenizer's (o200k standing in for a model's own) and the framing's.
//!   [`crate::report::calibration`] gives the ratio of reported to counted over the calls that
//!   report both.
//! - **Policies keep it** ([`Chunk::is_preamble`]): it is in a replay's sent and full input
//!   alike, never in its savings.
//!
//! ```
//! use memlens_core::builder::{Message, TraceBuilder};
//! use memlens_core::{tokens, unrecorded, Category, Usage};
//!
//! let mut b = TraceBuilder::new("s", "example");
//! b.set_model(Some("gpt-4o".into()));
//! b.push_message(Message::text("user", "List the files."), None);
//! b.push_message(Message::text("assistant", "Done."), None);
//! b.reconstruct_calls();
//! let (mut trace, _) = b.finish();
//! tokens::count_trace(&mut trace, &tokens::TokenCounter::for_model(Some("gpt-4o")));
//! // The provider counted 2,000 input tokens: the tool definitions the log left out.
//! trace.calls[0].usage = Some(Usage { input_tokens: Some(2000), ..Usage::default() });
//! let counted = tokens::call_tokens(&trace)[0].input;
//! unrecorded::account(&mut trace);
//! let item = trace.chunk(trace.calls[0].input[0]);
//! assert_eq!(item.category, Category::Unrecorded);
//! assert_eq!(unrecorded::tokens_in(&trace, &trace.calls[0]), 2000 - counted);
//! ```

use crate::model::{Call, Category, Chunk, ChunkId, ChunkMeta, Trace};
use crate::tokens::call_tokens;

/// The trace attribute an importer sets to name content the provider was sent but the file does
/// not record (a system prompt, tool definitions): counted input is then below reported input.
pub const UNRECORDED_ATTRIBUTE: &str = "unrecorded";

/// What the item stands for when the importer does not say.
const UNKNOWN_CONTENT: &str = "context the provider counted but the file does not hold \
(a system prompt, tool definitions or instructions the provider adds)";

/// One estimate: the call it was read from and its figures.
#[derive(Debug, Clone, Copy)]
struct Estimate {
    call: usize,
    reported: u64,
    counted: u64,
}

impl Estimate {
    fn tokens(self) -> u64 {
        let missing = self.reported.saturating_sub(self.counted);
        // At least 1% of the call: below that, the difference is counting noise.
        if missing.saturating_mul(100) >= self.reported {
            missing
        } else {
            0
        }
    }
}

/// Adds the unrecorded-context item to a counted trace whose calls report usage (see the module
/// docs); a trace that already has one (read back from MemLens' own format) is left as it is.
pub fn account(trace: &mut Trace) {
    if trace
        .chunks
        .iter()
        .any(|c| c.category == Category::Unrecorded)
    {
        return;
    }
    let estimates = segment_estimates(trace);
    let what = trace
        .attributes
        .get(UNRECORDED_ATTRIBUTE)
        .map_or(UNKNOWN_CONTENT, String::as_str)
        .to_string();
    let mut current: Option<(ChunkId, u64)> = None;
    for (start, end, estimate) in estimates {
        let Some(estimate) = estimate.filter(|e| e.tokens() > 0) else {
            current = None;
            continue;
        };
        let tokens = estimate.tokens();
        let id = match current {
            // Within 5% of the item carried so far: the same prompt, still cached.
            Some((id, carried)) if tokens.abs_diff(carried) * 20 <= carried => id,
            _ => {
                let id = push_item(trace, &what, estimate);
                current = Some((id, tokens));
                id
            }
        };
        for call in &mut trace.calls[start..end] {
            call.input.insert(0, id);
        }
    }
}

/// Each segment of calls (split at compactions) with the estimate it carries: its own first
/// reported call's, else the nearest earlier segment's, else the nearest later one's.
fn segment_estimates(trace: &Trace) -> Vec<(usize, usize, Option<Estimate>)> {
    let n = trace.calls.len();
    let mut starts: Vec<usize> = std::iter::once(0)
        .chain(
            trace
                .compactions
                .iter()
                .map(|c| c.first_call as usize)
                .filter(|&c| c < n),
        )
        .collect();
    starts.sort_unstable();
    starts.dedup();
    let counted = call_tokens(trace);
    let first_reported = |range: std::ops::Range<usize>| {
        range.into_iter().find_map(|i| {
            let reported = trace.calls[i].usage?.input_tokens.filter(|&r| r > 0)?;
            Some(Estimate {
                call: i,
                reported,
                counted: counted[i].input,
            })
        })
    };
    let mut segments: Vec<(usize, usize, Option<Estimate>)> = starts
        .iter()
        .enumerate()
        .map(|(k, &s)| {
            let e = starts.get(k + 1).copied().unwrap_or(n);
            (s, e, first_reported(s..e))
        })
        .collect();
    let mut earlier = None;
    for segment in &mut segments {
        segment.2 = segment.2.or(earlier);
        earlier = segment.2;
    }
    let mut later = None;
    for segment in segments.iter_mut().rev() {
        segment.2 = segment.2.or(later);
        later = segment.2;
    }
    segments
}

fn push_item(trace: &mut Trace, what: &str, e: Estimate) -> ChunkId {
    let id = ChunkId(trace.chunks.len() as u32);
    let tokens = u32::try_from(e.tokens()).unwrap_or(u32::MAX);
    let key = match trace
        .chunks
        .iter()
        .filter(|c| c.category == Category::Unrecorded)
        .count()
    {
        0 => "unrecorded".to_string(),
        n => format!("unrecorded.{}", n + 1),
    };
    trace.chunks.push(Chunk {
        id,
        key,
        category: Category::Unrecorded,
        content: format!(
            "not in the log: {what}; estimated from call {}'s reported input \
             ({} reported, {} counted)",
            e.call + 1,
            e.reported,
            e.counted
        ),
        starts_message: false,
        content_tokens: tokens,
        tokens,
        meta: ChunkMeta::default(),
    });
    id
}

/// Tokens of the unrecorded item in a call's input (0 where the log holds everything).
pub fn tokens_in(trace: &Trace, call: &Call) -> u64 {
    call.input
        .iter()
        .filter_map(|&id| trace.chunks.get(id.index()))
        .filter(|c| c.category == Category::Unrecorded)
        .map(|c| u64::from(c.tokens))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{CompactionInfo, Message, TraceBuilder};
    use crate::model::Usage;
    use crate::tokens::{count_trace, TokenCounter};

    fn trace(reported: &[Option<u64>], compaction_before: Option<usize>) -> Trace {
        let mut b = TraceBuilder::new("t", "example");
        b.set_model(Some("gpt-4o".into()));
        for i in 0..reported.len() {
            if compaction_before == Some(i) {
                b.push_compaction(CompactionInfo::default());
            }
            b.push_message(Message::text("user", format!("question {i}")), None);
            b.push_message(Message::text("assistant", format!("answer {i}")), None);
        }
        b.reconstruct_calls();
        let (mut t, _) = b.finish();
        count_trace(&mut t, &TokenCounter::for_model(Some("gpt-4o")));
        let counted = call_tokens(&t);
        for ((call, r), c) in t.calls.iter_mut().zip(reported).zip(counted) {
            call.usage = r.map(|extra| Usage {
                input_tokens: Some(c.input + extra),
                ..Usage::default()
            });
        }
        t
    }

    fn carried(t: &Trace) -> Vec<u64> {
        t.calls.iter().map(|c| tokens_in(t, c)).collect()
    }

    #[test]
    fn the_item_carries_the_first_reported_difference_into_every_call() {
        let mut t = trace(&[None, Some(500), Some(510)], None);
        account(&mut t);
        assert_eq!(carried(&t), [500, 500, 500]);
        assert!(t.calls.iter().all(|c| t.chunk(c.input[0]).is_preamble()));
        // Accounting twice (a converted trace read back) adds nothing.
        let before = t.clone();
        account(&mut t);
        assert_eq!(t, before);
    }

    #[test]
    fn noise_below_one_percent_is_no_item() {
        let mut t = trace(&[Some(0), Some(0)], None);
        account(&mut t);
        assert_eq!(carried(&t), [0, 0]);
        assert_eq!(t.chunks.len(), 4);
    }

    #[test]
    fn a_compaction_changes_the_item_only_when_the_estimate_moves() {
        let mut same = trace(&[Some(1000), Some(1000), Some(1030)], Some(2));
        account(&mut same);
        assert_eq!(carried(&same), [1000, 1000, 1000]);
        let mut changed = trace(&[Some(1000), Some(1000), Some(3000)], Some(2));
        account(&mut changed);
        assert_eq!(carried(&changed), [1000, 1000, 3000]);
        let keys: Vec<&str> = changed
            .chunks
            .iter()
            .filter(|c| c.category == Category::Unrecorded)
            .map(|c| c.key.as_str())
            .collect();
        assert_eq!(keys, ["unrecorded", "unrecorded.2"]);
    }
}
