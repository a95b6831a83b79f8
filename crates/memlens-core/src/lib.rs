//! MemLens core: the trace model, exact token counts and cost.
//!
//! Pure: no I/O, no clock, no web APIs. It builds for native and `wasm32-unknown-unknown` alike;
//! hosts (the CLI, the web app, the npm package) hand it values and get values back.
//!
//! ```
//! use memlens_core::builder::{Message, TraceBuilder};
//! use memlens_core::{cost::PriceTable, report, tokens};
//!
//! let mut b = TraceBuilder::new("demo", "example");
//! b.set_model(Some("gpt-4o".into()));
//! b.push_message(Message::text("system", "You are terse."), None);
//! b.push_message(Message::text("user", "Capital of France?"), None);
//! b.push_message(Message::text("assistant", "Paris."), None);
//! b.reconstruct_calls();
//! let (mut trace, warnings) = b.finish();
//! assert!(warnings.is_empty());
//! let counter = tokens::TokenCounter::for_model(trace.main_model());
//! tokens::count_trace(&mut trace, &counter);
//!
//! let summary = report::summarize(&trace, &PriceTable::builtin(), 10);
//! assert_eq!(summary.figures.calls, 1);
//! // The call's input: system + user, each with 3 framing tokens + 1 role token, plus 3 priming.
//! assert_eq!(summary.figures.counted_input_tokens, (3 + 1 + 4) + (3 + 1 + 4) + 3);
//! assert!(summary.figures.cost_usd.is_some());
//! ```

pub mod analysis;
pub mod assets;
pub mod builder;
pub mod compaction;
pub mod cost;
pub mod diff;
pub mod hindsight;
pub mod model;
pub mod policy;
pub mod recall;
pub mod redact;
pub mod references;
pub mod report;
pub mod retrieval;
pub mod simulate;
pub mod text;
pub mod time;
pub mod tokens;
pub mod unrecorded;
pub mod value;

pub use model::{
    Call, Category, Chunk, ChunkId, ChunkMeta, Compaction, Probe, SourcePos, ToolPair, Trace,
    TraceLink, Usage,
};
