//! Hindsight labels: for every chunk at every call that carried it, whether that call's output
//! or a later one used it, and how soon, read off the trace's access graph
//! ([`crate::references::detect`]). Every recorded trace labels itself this way, for free: the
//! labels are what `memlens fit` learns value weights from, and what the web app's Labels view
//! suggests.
//!
//! ```
//! use memlens_core::builder::{Message, TraceBuilder};
//! use memlens_core::hindsight::hindsight_labels;
//! use memlens_core::references::detect;
//! use memlens_core::tokens::{count_trace, TokenCounter};
//!
//! let mut b = TraceBuilder::new("demo", "example");
//! b.push_message(Message::text("user", "My order number is ZX-40412. Where is it?"), None);
//! b.push_message(Message::text("assistant", "Looking up ZX-40412."), None);
//! b.push_message(Message::text("user", "Thanks. Also, hello!"), None);
//! b.push_message(Message::text("assistant", "Hello."), None);
//! b.reconstruct_calls();
//! let (mut trace, _) = b.finish();
//! count_trace(&mut trace, &TokenCounter::for_model(None));
//!
//! let labels = hindsight_labels(&trace, &detect(&trace));
//! // The first user message at the first call: its order number is used by that call's reply.
//! let first = labels.iter().find(|l| l.call == 0).unwrap();
//! assert_eq!((first.next_use, first.calls_until_use()), (Some(0), Some(0)));
//! // At the second call nothing uses it any more.
//! let later = labels.iter().find(|l| l.call == 1 && l.chunk == first.chunk).unwrap();
//! assert!(!later.used_later());
//! ```

use crate::model::{Category, ChunkId, Trace};
use crate::references::AccessGraph;
use crate::value::Label;
use serde::{Deserialize, Serialize};

/// One chunk at one call that carried it in its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HindsightLabel {
    /// The chunk.
    pub chunk: ChunkId,
    /// The call (its index) whose input carried the chunk.
    pub call: u32,
    /// The first call at or after `call` whose output used the chunk (`None`: none did).
    pub next_use: Option<u32>,
    /// How many calls at or after `call` used it.
    pub uses_after: u32,
}

impl HindsightLabel {
    /// Whether this call or a later one used the chunk: dropping it here would have cost a miss
    /// (unless the agent itself stopped sending it before then).
    pub fn used_later(&self) -> bool {
        self.next_use.is_some()
    }

    /// Calls from this one to the next use (0: this call's own output used it).
    pub fn calls_until_use(&self) -> Option<u32> {
        self.next_use.map(|u| u - self.call)
    }
}

/// Every (chunk, call) pair of the trace's calls' inputs, in call order and, within a call, in
/// the order of its input, with what the access graph says of its later use.
pub fn hindsight_labels(trace: &Trace, graph: &AccessGraph) -> Vec<HindsightLabel> {
    let mut labels = Vec::with_capacity(trace.calls.iter().map(|c| c.input.len()).sum());
    for call in &trace.calls {
        for &chunk in &call.input {
            // `uses_of` is sorted by call: the uses at or after this call are its tail.
            let uses = graph.uses_of(chunk);
            let later = &uses[uses.partition_point(|&u| u < call.index)..];
            labels.push(HindsightLabel {
                chunk,
                call: call.index,
                next_use: later.first().copied(),
                uses_after: later.len() as u32,
            });
        }
    }
    labels
}

/// The label hindsight suggests for a whole chunk, from the first call that carried it
/// (`first_call`) and the calls whose outputs used it (`used_at`, as the analysis' chunk table
/// lists them): [`Label::Important`] when that call or a later one used it (dropping it there
/// would have cost a miss), [`Label::Useless`] when none did. `None` for a chunk no call carried,
/// and for the system prompt, which every policy keeps whatever its use. What the web app's
/// Labels view suggests; the same as [`hindsight_labels`] at the chunk's first call.
///
/// ```
/// use memlens_core::hindsight::suggested_label;
/// use memlens_core::model::Category;
/// use memlens_core::value::Label;
/// assert_eq!(suggested_label(Category::ToolResult, Some(2), &[4]), Some(Label::Important));
/// assert_eq!(suggested_label(Category::ToolResult, Some(2), &[]), Some(Label::Useless));
/// assert_eq!(suggested_label(Category::System, Some(0), &[]), None);
/// ```
pub fn suggested_label(
    category: Category,
    first_call: Option<u32>,
    used_at: &[u32],
) -> Option<Label> {
    if category == Category::System {
        return None;
    }
    let first = first_call?;
    Some(if used_at.iter().any(|&u| u >= first) {
        Label::Important
    } else {
        Label::Useless
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{Message, TraceBuilder};
    use crate::references::detect;
    use crate::tokens::{count_trace, TokenCounter};

    /// A tool result whose booking code the assistant quotes two calls later.
    fn trace() -> Trace {
        let mut b = TraceBuilder::new("t", "test");
        b.push_message(Message::text("system", "You are a travel agent."), None);
        b.push_message(Message::text("user", "Find my booking for Lisbon."), None);
        b.push_message(Message::text("assistant", "Searching."), None);
        b.push_message(
            Message::text("user", "The system says booking code QX7731B, seat 14C."),
            None,
        );
        b.push_message(Message::text("assistant", "Noted."), None);
        b.push_message(Message::text("user", "What was my seat again?"), None);
        b.push_message(
            Message::text("assistant", "Seat 14C, booking QX7731B."),
            None,
        );
        b.reconstruct_calls();
        let (mut trace, _) = b.finish();
        count_trace(&mut trace, &TokenCounter::for_model(None));
        trace
    }

    #[test]
    fn labels_say_when_a_chunk_is_next_used() {
        let trace = trace();
        let graph = detect(&trace);
        let labels = hindsight_labels(&trace, &graph);
        // One label per chunk per call carrying it.
        let pairs: usize = trace.calls.iter().map(|c| c.input.len()).sum();
        assert_eq!(labels.len(), pairs);
        let booking = trace
            .chunks
            .iter()
            .find(|c| c.content.contains("QX7731B"))
            .expect("the booking message")
            .id;
        let last = trace.calls.len() as u32 - 1;
        for label in labels.iter().filter(|l| l.chunk == booking) {
            // Every call carrying the booking message until the reply that quotes it: used.
            assert_eq!(label.next_use, Some(last), "{label:?}");
            assert_eq!(label.calls_until_use(), Some(last - label.call));
            assert_eq!(label.uses_after, 1);
        }
        // The system prompt is never quoted: no later use at any call.
        let system = trace.chunks[0].id;
        assert!(labels
            .iter()
            .filter(|l| l.chunk == system)
            .all(|l| !l.used_later()));
        // Agrees with the graph's own next-use query.
        for l in &labels {
            let next = graph.next_use_after(l.chunk, l.call.wrapping_sub(1));
            let next = if l.call == 0 {
                graph.uses_of(l.chunk).first().copied()
            } else {
                next
            };
            assert_eq!(l.next_use, next, "{l:?}");
        }
    }
}
