//! What changed between two calls' inputs, and why a call's cached prefix ended where it did.
//!
//! Providers cache prompt prefixes: a call re-uses the cache for the run of input it shares with
//! the previous call from the start, and pays full price from the first difference on. A call
//! whose context was edited early (a changed system prompt or tool list, an edited or evicted
//! message, a compaction) re-sends everything after that point uncached; so does a call made after
//! the cache has expired. [`call_changes`] names, for every call, the cause and the chunk where
//! the shared prefix ended, what the previous input had that this one re-sent after it, and what
//! that miss cost; [`diff_inputs`] lists the chunks added, removed and edited between any two
//! calls.
//!
//! ```
//! use memlens_core::builder::{CallInfo, Message, TraceBuilder};
//! use memlens_core::cost::PriceTable;
//! use memlens_core::diff::{call_changes, PrefixCause};
//!
//! let mut b = TraceBuilder::new("t", "test");
//! let (sys, q) = (Message::text("system", "Be terse."), Message::text("user", "Hi"));
//! let edited = Message::text("system", "Be verbose.");
//! for system in [&sys, &sys, &edited] {
//!     let input = b.intern_messages(&[system.clone(), q.clone()]);
//!     b.push_call(input, Vec::new(), CallInfo::default());
//! }
//! let (trace, _) = b.finish();
//! let changes = call_changes(&trace, &PriceTable::builtin());
//! let causes: Vec<PrefixCause> = changes.iter().map(|c| c.cause).collect();
//! assert_eq!(causes, [PrefixCause::FirstCall, PrefixCause::Intact, PrefixCause::SystemPrompt]);
//! assert_eq!(changes[2].shared_prefix_chunks, 0);
//! assert_eq!(changes[2].diff.edited.len(), 1);
//! ```

use crate::cost::{shared_prefix_len, CacheModel, PriceTable};
use crate::model::{Call, Category, Chunk, ChunkId, Trace};
use crate::time::timestamp_secs;
use serde::{Deserialize, Serialize};

/// How long a provider keeps an idle prompt cache: Anthropic's default is 5 minutes; OpenAI
/// documents 5 to 10 minutes of inactivity. A gap longer than this between two calls is
/// reported as the likely cause of a miss on an otherwise intact prefix.
pub const CACHE_TTL_SECS: f64 = 300.0;

/// Why a call's shared prefix with the previous call ended where it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefixCause {
    /// The first call: there is nothing to share.
    FirstCall,
    /// The previous input is the start of this one: nothing broke.
    Intact,
    /// The prefix is intact but more than [`CACHE_TTL_SECS`] passed since the previous call.
    IdleGap,
    /// A compaction replaced part of the context before this call.
    Compaction,
    /// The system prompt was changed, added or removed.
    SystemPrompt,
    /// The tool definitions were changed, added or removed.
    ToolDefinitions,
    /// The context the log does not record changed (its estimate from the reported usage:
    /// a system prompt or tool set the file does not hold).
    Unrecorded,
    /// An earlier message was edited (same place, same kind, new content).
    Edited,
    /// An earlier item was removed (evicted from the middle of the context).
    Removed,
    /// An item was inserted before the end of the previous input.
    Inserted,
    /// The previous input's items are all there, in another order.
    Reordered,
}

impl PrefixCause {
    /// The snake_case name used in JSON and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            PrefixCause::FirstCall => "first_call",
            PrefixCause::Intact => "intact",
            PrefixCause::IdleGap => "idle_gap",
            PrefixCause::Compaction => "compaction",
            PrefixCause::SystemPrompt => "system_prompt",
            PrefixCause::ToolDefinitions => "tool_definitions",
            PrefixCause::Unrecorded => "unrecorded",
            PrefixCause::Edited => "edited",
            PrefixCause::Removed => "removed",
            PrefixCause::Inserted => "inserted",
            PrefixCause::Reordered => "reordered",
        }
    }

    /// True when the cause cost the call part of its cache.
    pub fn is_break(self) -> bool {
        !matches!(self, PrefixCause::FirstCall | PrefixCause::Intact)
    }
}

/// The chunks that differ between two inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputDiff {
    /// In the later input only (edits' new versions excluded), in its order.
    pub added: Vec<ChunkId>,
    /// In the earlier input only (edits' old versions excluded), in its order.
    pub removed: Vec<ChunkId>,
    /// `[before, after]`: an item of the earlier input replaced in place by one of the same
    /// category (an edited message).
    pub edited: Vec<[ChunkId; 2]>,
    /// Items of both inputs that changed order.
    pub moved: usize,
}

/// How one call's input relates to the previous call's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallChange {
    /// Call index.
    pub call: u32,
    /// Why the shared prefix ended where it did.
    pub cause: PrefixCause,
    /// The chunk at the break: the previous input's item that is gone or edited, or the item
    /// inserted; `None` when nothing broke.
    pub at: Option<ChunkId>,
    /// Chunks shared with the previous input from the start.
    pub shared_prefix_chunks: usize,
    /// Their tokens.
    pub shared_prefix_tokens: u64,
    /// Tokens of chunks this call carries that were in the previous input but come after the
    /// break (for an idle gap, the whole shared prefix): sent again without the cache.
    pub resent_tokens: u64,
    /// Of those, the tokens the provider's cache would have served had the prefix held: where
    /// caching is automatic (OpenAI: prefixes of 1,024+ tokens in 128-token steps) what that
    /// model caches of the longer prefix beyond the shorter one; elsewhere (explicit cache
    /// breakpoints, as Anthropic's) all of them.
    pub missed_cache_tokens: u64,
    /// What the missed cache reads cost at the input price over the cache-read price; `None`
    /// when unpriced or the model has no cache price.
    pub miss_usd: Option<f64>,
    /// Seconds between the previous call's end (or start) and this call's start, when both are
    /// known.
    pub idle_secs: Option<f64>,
    /// The chunks added, removed and edited since the previous call.
    pub diff: InputDiff,
}

/// Membership of chunk ids in one input (ids are dense indices into the trace's chunks).
pub(crate) fn members(trace: &Trace, input: &[ChunkId]) -> Vec<bool> {
    let mut set = vec![false; trace.chunks.len()];
    for id in input {
        if let Some(slot) = set.get_mut(id.index()) {
            *slot = true;
        }
    }
    set
}

fn contains(set: &[bool], id: ChunkId) -> bool {
    set.get(id.index()).copied().unwrap_or(false)
}

/// The chunks added, removed and edited from `before` to `after` (two calls' inputs).
///
/// Items common to both are matched in order; between two matched items, what only `before` has
/// and what only `after` has are paired as edits when their categories agree, in order, and the
/// rest are removals and additions.
pub fn diff_inputs(trace: &Trace, before: &[ChunkId], after: &[ChunkId]) -> InputDiff {
    let (in_before, in_after) = (members(trace, before), members(trace, after));
    diff_with(trace, before, after, &in_before, &in_after)
}

/// [`diff_inputs`] with both inputs' memberships already built.
fn diff_with(
    trace: &Trace,
    before: &[ChunkId],
    after: &[ChunkId],
    in_before: &[bool],
    in_after: &[bool],
) -> InputDiff {
    let mut diff = InputDiff::default();
    let (mut i, mut j) = (0, 0);
    while i < before.len() || j < after.len() {
        if i < before.len() && j < after.len() && before[i] == after[j] {
            i += 1;
            j += 1;
            continue;
        }
        let gone_start = i;
        while i < before.len() && !contains(in_after, before[i]) {
            i += 1;
        }
        let new_start = j;
        while j < after.len() && !contains(in_before, after[j]) {
            j += 1;
        }
        if i == gone_start && j == new_start {
            // Both sides hold items the other has, in another order: step past one on each.
            diff.moved += 1;
            i = (i + 1).min(before.len());
            j = (j + 1).min(after.len());
            continue;
        }
        pair_edits(
            trace,
            &before[gone_start..i],
            &after[new_start..j],
            &mut diff,
        );
    }
    diff
}

/// Pairs a run of removed items with a run of added ones, in order, by category.
fn pair_edits(trace: &Trace, gone: &[ChunkId], new: &[ChunkId], diff: &mut InputDiff) {
    let mut new_left: Vec<ChunkId> = new.to_vec();
    for &old in gone {
        let category = trace.chunk(old).category;
        match new_left
            .iter()
            .position(|&n| trace.chunk(n).category == category)
        {
            Some(p) => diff.edited.push([old, new_left.remove(p)]),
            None => diff.removed.push(old),
        }
    }
    diff.added.extend(new_left);
}

/// What kind of item broke the prefix, for a changed, removed or inserted item.
fn cause_of(chunk: &Chunk, otherwise: PrefixCause) -> PrefixCause {
    match chunk.category {
        Category::System => PrefixCause::SystemPrompt,
        Category::Unrecorded => PrefixCause::Unrecorded,
        _ if chunk.is_preamble() => PrefixCause::ToolDefinitions,
        _ => otherwise,
    }
}

/// The cause at the first difference (`p` = shared prefix length < `before.len()`).
fn break_at(
    trace: &Trace,
    before: &[ChunkId],
    after: &[ChunkId],
    p: usize,
    in_after: &[bool],
    in_before: &[bool],
) -> (PrefixCause, ChunkId) {
    let old = before[p];
    let old_chunk = trace.chunk(old);
    match after.get(p) {
        // The previous item is gone: replaced in place by a new one of its kind (an edit), or
        // removed.
        _ if !contains(in_after, old) => {
            let replaced = after.get(p).is_some_and(|&n| {
                !contains(in_before, n) && trace.chunk(n).category == old_chunk.category
            });
            let otherwise = if replaced {
                PrefixCause::Edited
            } else {
                PrefixCause::Removed
            };
            let cause = cause_of(old_chunk, otherwise);
            // A new system prompt or tool list in place of the old one names what changed.
            (cause, old)
        }
        Some(&new) if !contains(in_before, new) => {
            (cause_of(trace.chunk(new), PrefixCause::Inserted), new)
        }
        _ => (PrefixCause::Reordered, old),
    }
}

fn call_start_secs(call: &Call) -> Option<f64> {
    call.started_at.as_deref().and_then(timestamp_secs)
}

fn call_end_secs(call: &Call) -> Option<f64> {
    call.ended_at
        .as_deref()
        .and_then(timestamp_secs)
        .or_else(|| call_start_secs(call))
}

/// The cache reads a break cost: what the cache would serve of the prefix had it held, minus what
/// it serves of the shared one (after an idle gap: the same prefix, nothing served). With
/// `model` (automatic caching) both go through its minimum and steps; without, every token counts.
fn missed_cache_reads(
    model: Option<CacheModel>,
    cause: PrefixCause,
    shared_prefix_tokens: u64,
    resent_tokens: u64,
) -> u64 {
    let (served, would_serve) = if cause == PrefixCause::IdleGap {
        (0, shared_prefix_tokens)
    } else {
        (shared_prefix_tokens, shared_prefix_tokens + resent_tokens)
    };
    match model {
        Some(m) => m
            .cached_tokens(would_serve)
            .saturating_sub(m.cached_tokens(served)),
        None => would_serve - served,
    }
}

fn tokens_of<'a>(trace: &Trace, ids: impl IntoIterator<Item = &'a ChunkId>) -> u64 {
    ids.into_iter()
        .map(|&id| u64::from(trace.chunk(id).tokens))
        .sum()
}

/// Every call's change from the previous call (see the module docs), in call order.
pub fn call_changes(trace: &Trace, prices: &PriceTable) -> Vec<CallChange> {
    (0..trace.calls.len())
        .filter_map(|i| call_change(trace, prices, i))
        .collect()
}

/// Call `index`'s change from the previous call; `None` when the trace has no such call.
pub fn call_change(trace: &Trace, prices: &PriceTable, index: usize) -> Option<CallChange> {
    let main = trace.main_model();
    let call = trace.calls.get(index)?;
    let Some(prev) = index.checked_sub(1).and_then(|p| trace.calls.get(p)) else {
        return Some(CallChange {
            call: call.index,
            cause: PrefixCause::FirstCall,
            at: None,
            shared_prefix_chunks: 0,
            shared_prefix_tokens: 0,
            resent_tokens: 0,
            missed_cache_tokens: 0,
            miss_usd: None,
            idle_secs: None,
            diff: InputDiff {
                added: call.input.clone(),
                ..InputDiff::default()
            },
        });
    };
    let (before, after) = (&prev.input[..], &call.input[..]);
    let p = shared_prefix_len(before, after);
    let shared_prefix_tokens = tokens_of(trace, &after[..p]);
    let idle_secs = match (call_end_secs(prev), call_start_secs(call)) {
        (Some(end), Some(start)) => Some((start - end).max(0.0)),
        _ => None,
    };
    let compacted = trace.compactions.iter().any(|c| c.first_call == call.index);
    // Built once per call: the diff and the break both read them.
    let (in_before, in_after) = (members(trace, before), members(trace, after));
    let (cause, at, resent_tokens) = if p == before.len() {
        if idle_secs.is_some_and(|s| s > CACHE_TTL_SECS) && p > 0 {
            (PrefixCause::IdleGap, None, shared_prefix_tokens)
        } else {
            (PrefixCause::Intact, None, 0)
        }
    } else {
        let (cause, at) = break_at(trace, before, after, p, &in_after, &in_before);
        let cause = if compacted {
            PrefixCause::Compaction
        } else {
            cause
        };
        let resent = tokens_of(
            trace,
            after[p..].iter().filter(|&&id| contains(&in_before, id)),
        );
        (cause, Some(at), resent)
    };
    let price = call
        .model
        .as_deref()
        .or(main)
        .and_then(|m| prices.lookup(m))
        .map(|(_, price)| price);
    let missed_cache_tokens = missed_cache_reads(
        price.and_then(|p| CacheModel::for_provider(p.provider.as_deref())),
        cause,
        shared_prefix_tokens,
        resent_tokens,
    );
    let miss_usd = price.filter(|p| p.cache_read.is_some()).and_then(|p| {
        Some(
            p.input_usd(missed_cache_tokens, 0)?
                - p.input_usd(missed_cache_tokens, missed_cache_tokens)?,
        )
    });
    Some(CallChange {
        call: call.index,
        cause,
        at,
        shared_prefix_chunks: p,
        shared_prefix_tokens,
        resent_tokens,
        missed_cache_tokens,
        miss_usd,
        idle_secs,
        diff: diff_with(trace, before, after, &in_before, &in_after),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{CallInfo, Message, TraceBuilder};

    /// A trace whose calls carry the given messages (by text), all as user messages but the
    /// first (the system prompt).
    fn trace(calls: &[&[&str]]) -> Trace {
        let mut b = TraceBuilder::new("t", "test");
        for texts in calls {
            let messages: Vec<Message> = texts
                .iter()
                .enumerate()
                .map(|(i, t)| Message::text(if i == 0 { "system" } else { "user" }, *t))
                .collect();
            let input = b.intern_messages(&messages);
            b.push_call(input, Vec::new(), CallInfo::default());
        }
        b.finish().0
    }

    fn causes(t: &Trace) -> Vec<PrefixCause> {
        call_changes(t, &PriceTable::builtin())
            .iter()
            .map(|c| c.cause)
            .collect()
    }

    #[test]
    fn removals_insertions_and_reorders_are_told_apart() {
        use PrefixCause::*;
        let t = trace(&[
            &["s", "a", "b", "c"],
            &["s", "a", "c"],           // b evicted
            &["s", "x", "a", "c"],      // x inserted before a
            &["s", "a", "x", "c"],      // x and a swapped
            &["s", "a", "x", "c", "d"], // appended
        ]);
        assert_eq!(
            causes(&t),
            [FirstCall, Removed, Inserted, Reordered, Intact]
        );
        let changes = call_changes(&t, &PriceTable::builtin());
        let key = |id: ChunkId| t.chunk(id).content.clone();
        assert_eq!(
            changes[1]
                .diff
                .removed
                .iter()
                .map(|&c| key(c))
                .collect::<Vec<_>>(),
            ["b"]
        );
        assert_eq!(
            changes[2]
                .diff
                .added
                .iter()
                .map(|&c| key(c))
                .collect::<Vec<_>>(),
            ["x"]
        );
        assert_eq!(changes[3].diff.moved, 2, "x and a");
        assert_eq!(
            changes[4]
                .diff
                .added
                .iter()
                .map(|&c| key(c))
                .collect::<Vec<_>>(),
            ["d"]
        );
    }

    #[test]
    fn automatic_caches_lose_only_what_they_would_have_served() {
        // OpenAI: prefixes of 1,024+ tokens, in 128-token steps.
        let openai = Some(CacheModel::OPENAI);
        // 1,000 shared + 500 re-sent: 1,024 + 3 * 128 = 1,408 would be served; 0 are.
        assert_eq!(
            missed_cache_reads(openai, PrefixCause::Edited, 1000, 500),
            1408
        );
        // 2,000 shared (1,920 served) + 100 re-sent (2,048 would be): 128 lost.
        assert_eq!(
            missed_cache_reads(openai, PrefixCause::Edited, 2000, 100),
            128
        );
        // An idle gap loses what the prefix would have served.
        assert_eq!(
            missed_cache_reads(openai, PrefixCause::IdleGap, 2000, 2000),
            1920
        );
        // Explicit breakpoints: every re-sent token.
        assert_eq!(missed_cache_reads(None, PrefixCause::Edited, 10, 7), 7);
    }
}
