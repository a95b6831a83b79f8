//! `memlens inspect --calls`: every call's input, what it shared with the previous call, and why
//! the shared (cacheable) prefix ended there (`memlens_core::diff`).

use crate::out::outln;
use memlens_core::diff::{CallChange, PrefixCause};
use memlens_core::tokens::call_tokens;
use memlens_core::{ChunkId, Trace};
use memlens_report::fmt::usd;
use serde::Serialize;

/// One call in `inspect --calls --json`: chunk references as the trace's stable keys.
#[derive(Serialize)]
pub struct CallRow {
    call: u32,
    counted_input_tokens: u64,
    /// Of the counted input, the unrecorded item's (context the log does not hold).
    unrecorded_tokens: u64,
    cause: PrefixCause,
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<String>,
    shared_prefix_chunks: usize,
    shared_prefix_tokens: u64,
    resent_tokens: u64,
    miss_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    idle_secs: Option<f64>,
    added: Vec<String>,
    removed: Vec<String>,
    edited: Vec<[String; 2]>,
}

/// The rows of a counted trace's calls.
pub fn rows(trace: &Trace, changes: &[CallChange]) -> Vec<CallRow> {
    let key = |id: ChunkId| trace.chunk(id).key.clone();
    let keys = |ids: &[ChunkId]| ids.iter().map(|&id| key(id)).collect();
    let inputs = call_tokens(trace);
    changes
        .iter()
        .zip(inputs)
        .zip(&trace.calls)
        .map(|((c, tokens), call)| CallRow {
            call: c.call,
            counted_input_tokens: tokens.input,
            unrecorded_tokens: memlens_core::unrecorded::tokens_in(trace, call),
            cause: c.cause,
            at: c.at.map(key),
            shared_prefix_chunks: c.shared_prefix_chunks,
            shared_prefix_tokens: c.shared_prefix_tokens,
            resent_tokens: c.resent_tokens,
            miss_usd: c.miss_usd,
            idle_secs: c.idle_secs,
            added: keys(&c.diff.added),
            removed: keys(&c.diff.removed),
            edited: c
                .diff
                .edited
                .iter()
                .map(|&[a, b]| [key(a), key(b)])
                .collect(),
        })
        .collect()
}

/// Prints one trace's calls as a table, then the cache breaks' total.
pub fn print(trace: &Trace, rows: &[CallRow]) {
    outln!(
        "  calls of {} (shared prefix with the previous call, and why it ended):",
        trace.id
    );
    outln!(
        "    {:>5} {:>9} {:>10} {:>9} {:>9} {:>10}  {:<17} {:<10} changes",
        "call",
        "input",
        "unrecorded",
        "shared",
        "re-sent",
        "miss",
        "cause",
        "at"
    );
    for r in rows {
        let cause = match (r.cause, r.idle_secs) {
            (PrefixCause::IdleGap, Some(s)) => format!("idle_gap ({s:.0} s)"),
            (cause, _) => cause.as_str().to_string(),
        };
        let miss = if r.cause.is_break() {
            usd(r.miss_usd)
        } else {
            "-".to_string()
        };
        outln!(
            "    {:>5} {:>9} {:>10} {:>9} {:>9} {:>10}  {:<17} {:<10} +{} -{} ~{}",
            r.call,
            r.counted_input_tokens,
            r.unrecorded_tokens,
            r.shared_prefix_tokens,
            r.resent_tokens,
            miss,
            cause,
            r.at.as_deref().unwrap_or("-"),
            r.added.len(),
            r.removed.len(),
            r.edited.len()
        );
    }
    let breaks: Vec<&CallRow> = rows.iter().filter(|r| r.cause.is_break()).collect();
    let resent: u64 = breaks.iter().map(|r| r.resent_tokens).sum();
    let missed: Option<f64> = breaks.iter().map(|r| r.miss_usd).sum();
    outln!(
        "  cache breaks: {} of {} call(s), {} token(s) re-sent after the break, {} over cache reads",
        breaks.len(),
        rows.len(),
        resent,
        if breaks.is_empty() {
            "$0".to_string()
        } else {
            usd(missed)
        }
    );
    outln!();
}
