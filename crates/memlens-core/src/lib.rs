//! MemLens core: the trace model, exact token counts and cost.
//!
//! Pure: no I/O, no clock, no web APIs. It builds for native and `wasm32-unknown-unknown` alike;
//! hosts (the CLI, the web app, the npm package) hand it values and get values back.
//!
//! What is where (each module's own documentation says more):
//! - **The trace**: `model` (traces, calls whose inputs are chunk references, compactions, a
//!   subagent's parent link) and `builder` (`TraceBuilder`, what the importers write with);
//!   `time` (trace timestamps to seconds: the core reads no clock).
//! - **Counting and cost**: `tokens` (tiktoken's vocabularies and merges, its pre-tokenizer
//!   regexes written out as forward scans in `tokens/pretokenize.rs`), `cost`, `unrecorded` (one
//!   item for the context a log does not hold, estimated from reported usage and kept like the
//!   system prompt), `assets` (the vocabularies and the word-vector table: compiled in with the
//!   `embedded-assets` feature, which the hosts turn on and the library crates leave off, or
//!   fetched by the host's loader on first use, as the web worker does; counts fall back to a
//!   marked estimate when a table cannot be had).
//! - **Reading a run**: `diff` (what changed between two calls' inputs, why each call's cacheable
//!   prefix ended, what the break cost), `compaction` (what each compaction's summary kept of the
//!   chunks it replaced, the later misses it caused), `redact` (secrets to stable placeholders,
//!   then a recount), `report` (`summarize`: what `memlens inspect` prints), `analysis` (the one
//!   source of the web app's figures).
//! - **What was used**: `references` (which later outputs used which chunks: the access graph),
//!   `hindsight` (per chunk, per call carrying it: whether that call or a later one used it, and
//!   how soon; the labels `memlens fit` learns from, and `suggested_label`, the Labels view's
//!   suggestion per chunk).
//! - **Deciding**: `value` (factors, weights, presets, label fitting); `text` (the one word
//!   splitter: English words, CJK runs as character bigrams) and `retrieval` (the analyzer,
//!   incremental BM25, a query's matches kept across calls for the ranking); `recall` (retrieval
//!   without a neural model, incremental: BM25 on Snowball stems, feedback, passage smoothing,
//!   static GloVe word vectors from `data/word-vectors.bin`; the engine's archive switches to its
//!   light variant once a trace has tool calls); `policy`: the config, the incremental engine's
//!   bookkeeping in `engine/` (a context that only appends to the latest, no item changed since,
//!   extends that one's entries: `Engine::context_after`), one file per strategy in `strategy/`
//!   behind the `Strategy` trait (the order units go in, worked out only as far as a rule walks
//!   it: `strategy/ranked.rs`), compression (`compress.rs`: lossy compactions, and the lossless
//!   JSON forms: minified, and TOON through the `toon-format` crate, each TOON text read back and
//!   compared), the invariant checks (`validate`).
//! - **Replaying**: `simulate` (the one replay loop `replay`, misses, cache-aware cost,
//!   `on_frontier` for `compare --frontier` and the web simulator).
//!
//! Policies are read from JSON always, and from TOML with the `toml` feature (on for every host
//! but the web page, whose worker reads TOML for it).
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
mod memo;
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
