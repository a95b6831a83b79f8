//! One call's input broken down by chunk and by component (the analyzer's call view): tokens,
//! the part served from the cached prefix, cost, new at this call or carried, and how the input
//! changed from the previous call ([`crate::diff`]).

use crate::cost::{trace_cost, PriceTable};
use crate::diff::{call_change, members, CallChange};
use crate::model::{Category, Chunk, Trace};
use crate::tokens::REPLY_PRIMING_TOKENS;
use serde::{Deserialize, Serialize};

/// A part of a call's input: the system prompt, the tool definitions, one tool's results, ...
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Component {
    /// `system`, `tool definitions`, `tool calls`, `tool results: NAME`, `user`, `assistant`,
    /// `reasoning`, `summary`, `preference`, or the source's own kind (`image`, ...).
    pub name: String,
    /// Chunks of this component in the input.
    pub chunks: usize,
    /// Their tokens.
    pub tokens: u64,
    /// Of those, tokens inside the cached prefix.
    pub cached_tokens: u64,
    /// Of those, tokens of chunks the previous call's input did not have.
    pub new_tokens: u64,
    /// Their input cost at this call (cache-aware), `None` when unpriced.
    pub cost_usd: Option<f64>,
}

/// One chunk of a call's input, in input order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallChunk {
    /// Index in the trace's chunks.
    pub id: u32,
    /// Its component's name.
    pub component: String,
    /// Tokens.
    pub tokens: u32,
    /// Of those, tokens inside the cached prefix.
    pub cached_tokens: u64,
    /// True when the previous call's input did not have it (every chunk of the first call).
    pub new: bool,
    /// Its input cost at this call (cache-aware), `None` when unpriced.
    pub cost_usd: Option<f64>,
}

/// One call's input, broken down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallView {
    /// Call index.
    pub index: u32,
    /// Counted input tokens: the chunks plus the reply priming.
    pub input_tokens: u64,
    /// The reply priming counted once per call.
    pub priming_tokens: u64,
    /// Reported input tokens, when the trace has usage.
    pub reported_input: Option<u64>,
    /// Input tokens served from cache (reported, or modeled from the shared prefix).
    pub cached_input: u64,
    /// The call's cost (input and output), `None` when unpriced.
    pub cost_usd: Option<f64>,
    /// Components, largest first.
    pub components: Vec<Component>,
    /// Chunks, in input order.
    pub chunks: Vec<CallChunk>,
    /// How the input changed from the previous call, and why its cached prefix ended.
    pub change: CallChange,
}

/// The component a chunk belongs to.
pub fn component_of(chunk: &Chunk) -> String {
    match chunk.category {
        Category::ToolResult => format!(
            "tool results: {}",
            chunk.meta.tool_name.as_deref().unwrap_or("unnamed tool")
        ),
        Category::ToolCall => "tool calls".into(),
        Category::Unrecorded => "not in the log".into(),
        Category::Other => match chunk.meta.kind.as_deref() {
            Some(crate::model::TOOL_DEFINITIONS_KIND) => "tool definitions".into(),
            Some(kind) => kind.replace('_', " "),
            None => "other".into(),
        },
        category => category.as_str().into(),
    }
}

/// The call view of call `index`; `None` when the trace has no such call.
pub fn call_view(trace: &Trace, prices: &PriceTable, index: u32) -> Option<CallView> {
    let i = index as usize;
    let call = trace.calls.get(i)?;
    let cost = trace_cost(trace, prices);
    let call_cost = cost.calls.get(i)?;
    let change = call_change(trace, prices, i)?;
    let price = call
        .model
        .as_deref()
        .or(trace.main_model())
        .and_then(|m| prices.lookup(m))
        .map(|(_, p)| p);
    let previous: &[_] = i
        .checked_sub(1)
        .and_then(|p| trace.calls.get(p))
        .map_or(&[], |c| &c.input);
    let in_previous = members(trace, previous);
    // The first `cached_input` tokens of the input are the cached prefix (as `trace_cost`
    // attributes cost).
    let mut position = 0u64;
    let mut chunks = Vec::with_capacity(call.input.len());
    let mut components: Vec<Component> = Vec::new();
    for &id in &call.input {
        let chunk = trace.chunk(id);
        let tokens = u64::from(chunk.tokens);
        let cached = call_cost.cached_input.saturating_sub(position).min(tokens);
        position += tokens;
        let new = !in_previous.get(id.index()).copied().unwrap_or(false);
        let cost_usd = price.and_then(|p| p.input_usd(tokens, cached));
        let name = component_of(chunk);
        match components.iter_mut().find(|c| c.name == name) {
            Some(c) => {
                c.chunks += 1;
                c.tokens += tokens;
                c.cached_tokens += cached;
                c.new_tokens += if new { tokens } else { 0 };
                c.cost_usd = c.cost_usd.zip(cost_usd).map(|(a, b)| a + b);
            }
            None => components.push(Component {
                name: name.clone(),
                chunks: 1,
                tokens,
                cached_tokens: cached,
                new_tokens: if new { tokens } else { 0 },
                cost_usd,
            }),
        }
        chunks.push(CallChunk {
            id: id.0,
            component: name,
            tokens: chunk.tokens,
            cached_tokens: cached,
            new,
            cost_usd,
        });
    }
    components.sort_by(|a, b| b.tokens.cmp(&a.tokens).then(a.name.cmp(&b.name)));
    Some(CallView {
        index: call.index,
        input_tokens: call_cost.counted.input,
        priming_tokens: u64::from(REPLY_PRIMING_TOKENS),
        reported_input: call_cost.reported_input,
        cached_input: call_cost.cached_input,
        cost_usd: call_cost.cost_usd,
        components,
        chunks,
        change,
    })
}
