//! MemLens' columnar tables: what `memlens inspect` reports of a set of traces, as three Arrow
//! record batches — one row per trace, per call and per chunk — for the tools teams already query
//! (DuckDB, Polars, ClickHouse, a warehouse, Spark).
//!
//! `memlens export-columns` writes them as Parquet files; the Python package's Spark functions
//! return the same schemas. The columns are documented in `docs/columns.md` (checked against
//! [`Tables::schemas`] by a test). Integers are `Int64` (Spark has no unsigned types), token
//! counts are exact as counted, costs are USD (`null` when the model is unpriced).
//!
//! [`Tables::build`] makes the three batches from `memlens_core::analysis::analyze`'s rows (or
//! only the per-trace summary when that is all a host asks for: [`Wanted`]); [`simulations`] is
//! the table of policy replays (one access graph per trace for all its replays) and
//! [`hindsight_labels`] the table `memlens labels-from-hindsight` writes. [`ipc`] takes a batch
//! of trace files as an Arrow IPC stream and returns the tables asked for the same way: the
//! Python package's and Spark's path.
//!
//! ```
//! use memlens_columns::Tables;
//! use memlens_core::cost::PriceTable;
//!
//! let text = br#"{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"}]}"#;
//! let imported = memlens_import::import("chat.json", text, &Default::default()).unwrap();
//! let tables = Tables::build(imported.traces.iter().map(|t| ("chat.json", t)), &PriceTable::builtin())
//!     .unwrap();
//! assert_eq!(tables.traces.num_rows(), 1);
//! assert_eq!(tables.calls.num_rows(), 1);
//! assert_eq!(tables.chunks.num_rows(), 2);
//! ```

pub mod ipc;

use arrow_array::{
    ArrayRef, BooleanArray, Float32Array, Float64Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use memlens_core::analysis::{analyze, AnalysisOptions, CallRow, ChunkRow};
use memlens_core::cost::PriceTable;
use memlens_core::model::Category;
use memlens_core::policy::{PolicyConfig, PolicyError};
use memlens_core::references::detect;
use memlens_core::report::{summarize, TraceFigures};
use memlens_core::simulate::simulate_trace;
use memlens_core::Trace;
use std::sync::Arc;

/// The three tables of a set of traces.
#[derive(Debug, Clone)]
pub struct Tables {
    /// One row per trace: its figures as `memlens inspect --json` reports them.
    pub traces: RecordBatch,
    /// One row per LLM call: counted and reported input, cache, cost, why the cached prefix ended.
    pub calls: RecordBatch,
    /// One row per distinct chunk: category, tool, tokens, calls carried, attributed cost, value.
    pub chunks: RecordBatch,
}

/// The tables' names, in the order of [`Tables::batches`] (the Parquet files are `<name>.parquet`).
pub const TABLE_NAMES: [&str; 3] = ["traces", "calls", "chunks"];

/// Which of the three tables to make; those left out come back with no rows. The per-trace table
/// alone costs what `memlens inspect` does; calls and chunks need the whole analysis (values,
/// the access graph).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    /// The per-trace table.
    pub traces: bool,
    /// The per-call table.
    pub calls: bool,
    /// The per-chunk table.
    pub chunks: bool,
}

impl Wanted {
    /// All three tables.
    pub const ALL: Wanted = Wanted {
        traces: true,
        calls: true,
        chunks: true,
    };
    /// None of them (only simulations or errors are wanted).
    pub const NONE: Wanted = Wanted {
        traces: false,
        calls: false,
        chunks: false,
    };

    /// Whether any of the three is wanted.
    pub fn any(self) -> bool {
        self.traces || self.calls || self.chunks
    }
}

impl Tables {
    /// The tables of `traces`, each given with the name of the source it came from (a file name;
    /// the `source` column), counted already (as importers return them).
    pub fn build<'a>(
        traces: impl IntoIterator<Item = (&'a str, &'a Trace)>,
        prices: &PriceTable,
    ) -> Result<Tables, ArrowError> {
        Tables::build_only(traces, prices, Wanted::ALL)
    }

    /// [`Tables::build`] of the `wanted` tables only: the others have no rows.
    pub fn build_only<'a>(
        traces: impl IntoIterator<Item = (&'a str, &'a Trace)>,
        prices: &PriceTable,
        wanted: Wanted,
    ) -> Result<Tables, ArrowError> {
        let mut t = TraceRows::default();
        let mut c = CallRows::default();
        let mut k = ChunkRows::default();
        // No heatmap and short previews: only the rows' figures are used.
        let options = AnalysisOptions {
            max_heatmap_rows: 0,
            preview_chars: 0,
            ..AnalysisOptions::default()
        };
        for (source, trace) in traces {
            if !wanted.any() {
                continue;
            }
            // The per-trace figures alone are a summary (what `memlens inspect` computes); the
            // other tables need the analysis.
            let analysis =
                (wanted.calls || wanted.chunks).then(|| analyze(trace, prices, &options));
            let summary;
            let (f, total_tokens) = match &analysis {
                Some(a) => (&a.summary.figures, a.summary.total_tokens),
                None => {
                    summary = summarize(trace, prices, 0);
                    (&summary.figures, summary.tokens.total)
                }
            };
            if wanted.traces {
                t.push(source, trace, f, total_tokens);
            }
            let Some(analysis) = &analysis else {
                continue;
            };
            if wanted.calls {
                for row in &analysis.calls {
                    c.push(source, &f.id, row);
                }
            }
            if wanted.chunks {
                for row in &analysis.chunks {
                    k.push(source, &f.id, row);
                }
            }
        }
        Ok(Tables {
            traces: t.finish()?,
            calls: c.finish()?,
            chunks: k.finish()?,
        })
    }
}

impl TraceRows {
    fn push(&mut self, source: &str, trace: &Trace, f: &TraceFigures, total_tokens: u64) {
        let t = self;
        t.source.push(source.to_string());
        t.trace_id.push(f.id.clone());
        t.format.push(f.format.clone());
        t.model.push(f.model.clone());
        t.encoding.push(f.encoding.name().to_string());
        t.tokens_estimated.push(f.tokens_estimated);
        t.calls.push(int(f.calls as u64));
        t.chunks.push(int(f.chunks as u64));
        t.total_tokens.push(int(total_tokens));
        // One pass over the chunks for every category's tokens.
        let mut tokens = [0u64; Category::ALL.len()];
        for chunk in &trace.chunks {
            if let Some(i) = Category::ALL.iter().position(|&c| c == chunk.category) {
                tokens[i] += u64::from(chunk.tokens);
            }
        }
        for (column, n) in t.by_category.iter_mut().zip(tokens) {
            column.push(int(n));
        }
        t.peak_input_tokens.push(int(f.peak_input_tokens));
        t.context_window.push(f.context_window.map(int));
        t.counted_input_tokens.push(int(f.counted_input_tokens));
        t.reported_input_tokens
            .push(f.reported_input_tokens.map(int));
        t.counted_input_tokens_where_reported
            .push(f.counted_input_tokens_where_reported.map(int));
        t.unrecorded_input_tokens
            .push(int(f.unrecorded_input_tokens));
        t.counted_output_tokens.push(int(f.counted_output_tokens));
        t.orphan_tool_results
            .push(int(f.orphan_tool_results as u64));
        t.unanswered_tool_calls
            .push(int(f.unanswered_tool_calls as u64));
        t.priced_as.push(f.priced_as.clone());
        t.cost_usd.push(f.cost_usd);
    }
}

impl CallRows {
    fn push(&mut self, source: &str, trace_id: &str, row: &CallRow) {
        let c = self;
        c.source.push(source.to_string());
        c.trace_id.push(trace_id.to_string());
        c.call.push(i64::from(row.index));
        c.input_tokens.push(int(row.input_tokens));
        c.reported_input_tokens.push(row.reported_input.map(int));
        c.unrecorded_tokens.push(int(row.unrecorded_tokens));
        c.cached_input_tokens.push(int(row.cached_input));
        c.output_tokens.push(int(row.output_tokens));
        c.framing_tokens.push(int(row.framing));
        c.cost_usd.push(row.cost_usd);
        c.prefix_cause.push(row.cause.as_str().to_string());
        c.prefix_break_at.push(row.break_at.map(i64::from));
        c.resent_tokens.push(int(row.resent_tokens));
        c.miss_usd.push(row.miss_usd);
    }
}

impl ChunkRows {
    fn push(&mut self, source: &str, trace_id: &str, row: &ChunkRow) {
        let k = self;
        k.source.push(source.to_string());
        k.trace_id.push(trace_id.to_string());
        k.chunk.push(i64::from(row.id));
        k.key.push(row.key.clone());
        k.category.push(row.category.as_str().to_string());
        k.tool_name.push(row.tool_name.clone());
        k.tokens.push(i64::from(row.tokens));
        k.content_tokens.push(i64::from(row.content_tokens));
        k.calls_carried.push(i64::from(row.calls_carried));
        k.token_calls.push(int(row.token_calls));
        k.cost_usd.push(row.cost_usd);
        k.value.push(row.value);
        k.references.push(i64::from(row.references));
        k.first_call.push(row.first_call.map(i64::from));
        k.last_call.push(row.last_call.map(i64::from));
    }
}

impl Tables {
    /// The three batches, named as [`TABLE_NAMES`].
    pub fn batches(&self) -> [(&'static str, &RecordBatch); 3] {
        [
            (TABLE_NAMES[0], &self.traces),
            (TABLE_NAMES[1], &self.calls),
            (TABLE_NAMES[2], &self.chunks),
        ]
    }

    /// The three schemas, named as [`TABLE_NAMES`] (those of an empty set of traces).
    pub fn schemas() -> [(&'static str, SchemaRef); 3] {
        let empty = Tables::build(std::iter::empty(), &PriceTable::builtin())
            .expect("empty columns of the declared types make a batch");
        empty.batches().map(|(name, batch)| (name, batch.schema()))
    }
}

/// Why the simulation table could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ColumnsError {
    /// A policy the engine refuses (its message names the policy and the field).
    #[error("policy {policy}: {source}")]
    Policy {
        /// The policy's name.
        policy: String,
        /// What the engine said.
        source: PolicyError,
    },
    /// The input batch is not what [`ipc::tables_from_ipc`] reads.
    #[error("input: {0}")]
    Input(String),
    /// Arrow refused the columns or the input stream.
    #[error(transparent)]
    Arrow(#[from] ArrowError),
}

/// One row per trace × policy × budget: the policy's replay of the trace at that budget, with the
/// totals `memlens simulate --json` reports for the trace (tokens sent and saved, cost, misses,
/// invariant violations, calls over budget). Policies in the given order, budgets within each.
pub fn simulations<'a>(
    traces: impl IntoIterator<Item = (&'a str, &'a Trace)>,
    policies: &[PolicyConfig],
    budgets: &[u32],
    prices: &PriceTable,
) -> Result<RecordBatch, ColumnsError> {
    let mut r = SimRows::default();
    for (source, trace) in traces {
        // One access graph per trace for all its simulations (`simulate` would find it in each).
        let graph = detect(trace);
        for policy in policies {
            for &budget in budgets {
                let sim =
                    simulate_trace(trace, &graph, policy, budget, prices).map_err(|source| {
                        ColumnsError::Policy {
                            policy: policy.name.clone(),
                            source,
                        }
                    })?;
                let t = &sim.totals;
                r.source.push(source.to_string());
                r.trace_id.push(trace.id.clone());
                r.policy.push(policy.name.clone());
                r.budget.push(i64::from(budget));
                r.calls.push(int(t.calls));
                r.input_tokens.push(int(t.input_tokens));
                r.full_input_tokens.push(int(t.full_input_tokens));
                r.saved_tokens.push(t.saved_tokens);
                r.cost_usd.push(t.cost_usd);
                r.full_cost_usd.push(t.full_cost_usd);
                r.saved_usd.push(t.saved_usd);
                r.summary_cost_usd.push(t.summary_cost_usd);
                r.misses.push(int(t.misses));
                r.calls_with_misses.push(int(t.calls_with_misses));
                r.violations.push(int(t.violations));
                r.over_budget_calls.push(int(t.over_budget_calls));
                r.compressions.push(int(t.compressions));
                r.retrievals.push(int(t.retrievals));
            }
        }
    }
    Ok(r.finish()?)
}

/// The schema of [`simulations`] (that of an empty set of traces).
pub fn simulations_schema() -> SchemaRef {
    SimRows::default()
        .finish()
        .expect("empty columns of the declared types make a batch")
        .schema()
}

/// Counts never reach 2^63; saturate rather than wrap if one did.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Columns of one batch, each with its field, in order.
#[derive(Default)]
struct Columns {
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
}

impl Columns {
    fn push(&mut self, name: &str, data_type: DataType, nullable: bool, array: ArrayRef) {
        self.fields.push(Field::new(name, data_type, nullable));
        self.arrays.push(array);
    }
    fn text(&mut self, name: &str, values: Vec<String>) {
        self.push(
            name,
            DataType::Utf8,
            false,
            Arc::new(StringArray::from(values)),
        );
    }
    fn opt_text(&mut self, name: &str, values: Vec<Option<String>>) {
        self.push(
            name,
            DataType::Utf8,
            true,
            Arc::new(StringArray::from(values)),
        );
    }
    fn int(&mut self, name: &str, values: Vec<i64>) {
        self.push(
            name,
            DataType::Int64,
            false,
            Arc::new(Int64Array::from(values)),
        );
    }
    fn opt_int(&mut self, name: &str, values: Vec<Option<i64>>) {
        self.push(
            name,
            DataType::Int64,
            true,
            Arc::new(Int64Array::from(values)),
        );
    }
    fn opt_f64(&mut self, name: &str, values: Vec<Option<f64>>) {
        self.push(
            name,
            DataType::Float64,
            true,
            Arc::new(Float64Array::from(values)),
        );
    }
    fn f64(&mut self, name: &str, values: Vec<f64>) {
        self.push(
            name,
            DataType::Float64,
            false,
            Arc::new(Float64Array::from(values)),
        );
    }
    fn f32(&mut self, name: &str, values: Vec<f32>) {
        self.push(
            name,
            DataType::Float32,
            false,
            Arc::new(Float32Array::from(values)),
        );
    }
    fn bool(&mut self, name: &str, values: Vec<bool>) {
        self.push(
            name,
            DataType::Boolean,
            false,
            Arc::new(BooleanArray::from(values)),
        );
    }
    fn finish(self) -> Result<RecordBatch, ArrowError> {
        RecordBatch::try_new(Arc::new(Schema::new(self.fields)), self.arrays)
    }
}

#[derive(Default)]
struct TraceRows {
    source: Vec<String>,
    trace_id: Vec<String>,
    format: Vec<String>,
    model: Vec<Option<String>>,
    encoding: Vec<String>,
    tokens_estimated: Vec<bool>,
    calls: Vec<i64>,
    chunks: Vec<i64>,
    total_tokens: Vec<i64>,
    by_category: [Vec<i64>; Category::ALL.len()],
    peak_input_tokens: Vec<i64>,
    context_window: Vec<Option<i64>>,
    counted_input_tokens: Vec<i64>,
    reported_input_tokens: Vec<Option<i64>>,
    counted_input_tokens_where_reported: Vec<Option<i64>>,
    unrecorded_input_tokens: Vec<i64>,
    counted_output_tokens: Vec<i64>,
    orphan_tool_results: Vec<i64>,
    unanswered_tool_calls: Vec<i64>,
    priced_as: Vec<Option<String>>,
    cost_usd: Vec<Option<f64>>,
}

impl TraceRows {
    fn finish(self) -> Result<RecordBatch, ArrowError> {
        let mut c = Columns::default();
        c.text("source", self.source);
        c.text("trace_id", self.trace_id);
        c.text("format", self.format);
        c.opt_text("model", self.model);
        c.text("encoding", self.encoding);
        c.bool("tokens_estimated", self.tokens_estimated);
        c.int("calls", self.calls);
        c.int("chunks", self.chunks);
        c.int("total_tokens", self.total_tokens);
        for (category, values) in Category::ALL.into_iter().zip(self.by_category) {
            c.int(&format!("tokens_{}", category.as_str()), values);
        }
        c.int("peak_input_tokens", self.peak_input_tokens);
        c.opt_int("context_window", self.context_window);
        c.int("counted_input_tokens", self.counted_input_tokens);
        c.opt_int("reported_input_tokens", self.reported_input_tokens);
        c.opt_int(
            "counted_input_tokens_where_reported",
            self.counted_input_tokens_where_reported,
        );
        c.int("unrecorded_input_tokens", self.unrecorded_input_tokens);
        c.int("counted_output_tokens", self.counted_output_tokens);
        c.int("orphan_tool_results", self.orphan_tool_results);
        c.int("unanswered_tool_calls", self.unanswered_tool_calls);
        c.opt_text("priced_as", self.priced_as);
        c.opt_f64("cost_usd", self.cost_usd);
        c.finish()
    }
}

#[derive(Default)]
struct CallRows {
    source: Vec<String>,
    trace_id: Vec<String>,
    call: Vec<i64>,
    input_tokens: Vec<i64>,
    reported_input_tokens: Vec<Option<i64>>,
    unrecorded_tokens: Vec<i64>,
    cached_input_tokens: Vec<i64>,
    output_tokens: Vec<i64>,
    framing_tokens: Vec<i64>,
    cost_usd: Vec<Option<f64>>,
    prefix_cause: Vec<String>,
    prefix_break_at: Vec<Option<i64>>,
    resent_tokens: Vec<i64>,
    miss_usd: Vec<Option<f64>>,
}

impl CallRows {
    fn finish(self) -> Result<RecordBatch, ArrowError> {
        let mut c = Columns::default();
        c.text("source", self.source);
        c.text("trace_id", self.trace_id);
        c.int("call", self.call);
        c.int("input_tokens", self.input_tokens);
        c.opt_int("reported_input_tokens", self.reported_input_tokens);
        c.int("unrecorded_tokens", self.unrecorded_tokens);
        c.int("cached_input_tokens", self.cached_input_tokens);
        c.int("output_tokens", self.output_tokens);
        c.int("framing_tokens", self.framing_tokens);
        c.opt_f64("cost_usd", self.cost_usd);
        c.text("prefix_cause", self.prefix_cause);
        c.opt_int("prefix_break_at", self.prefix_break_at);
        c.int("resent_tokens", self.resent_tokens);
        c.opt_f64("miss_usd", self.miss_usd);
        c.finish()
    }
}

#[derive(Default)]
struct ChunkRows {
    source: Vec<String>,
    trace_id: Vec<String>,
    chunk: Vec<i64>,
    key: Vec<String>,
    category: Vec<String>,
    tool_name: Vec<Option<String>>,
    tokens: Vec<i64>,
    content_tokens: Vec<i64>,
    calls_carried: Vec<i64>,
    token_calls: Vec<i64>,
    cost_usd: Vec<Option<f64>>,
    value: Vec<f32>,
    references: Vec<i64>,
    first_call: Vec<Option<i64>>,
    last_call: Vec<Option<i64>>,
}

impl ChunkRows {
    fn finish(self) -> Result<RecordBatch, ArrowError> {
        let mut c = Columns::default();
        c.text("source", self.source);
        c.text("trace_id", self.trace_id);
        c.int("chunk", self.chunk);
        c.text("key", self.key);
        c.text("category", self.category);
        c.opt_text("tool_name", self.tool_name);
        c.int("tokens", self.tokens);
        c.int("content_tokens", self.content_tokens);
        c.int("calls_carried", self.calls_carried);
        c.int("token_calls", self.token_calls);
        c.opt_f64("cost_usd", self.cost_usd);
        c.f32("value", self.value);
        c.int("references", self.references);
        c.opt_int("first_call", self.first_call);
        c.opt_int("last_call", self.last_call);
        c.finish()
    }
}

#[derive(Default)]
struct SimRows {
    source: Vec<String>,
    trace_id: Vec<String>,
    policy: Vec<String>,
    budget: Vec<i64>,
    calls: Vec<i64>,
    input_tokens: Vec<i64>,
    full_input_tokens: Vec<i64>,
    saved_tokens: Vec<i64>,
    cost_usd: Vec<Option<f64>>,
    full_cost_usd: Vec<Option<f64>>,
    saved_usd: Vec<Option<f64>>,
    summary_cost_usd: Vec<f64>,
    misses: Vec<i64>,
    calls_with_misses: Vec<i64>,
    violations: Vec<i64>,
    over_budget_calls: Vec<i64>,
    compressions: Vec<i64>,
    retrievals: Vec<i64>,
}

impl SimRows {
    fn finish(self) -> Result<RecordBatch, ArrowError> {
        let mut c = Columns::default();
        c.text("source", self.source);
        c.text("trace_id", self.trace_id);
        c.text("policy", self.policy);
        c.int("budget", self.budget);
        c.int("calls", self.calls);
        c.int("input_tokens", self.input_tokens);
        c.int("full_input_tokens", self.full_input_tokens);
        c.int("saved_tokens", self.saved_tokens);
        c.opt_f64("cost_usd", self.cost_usd);
        c.opt_f64("full_cost_usd", self.full_cost_usd);
        c.opt_f64("saved_usd", self.saved_usd);
        c.f64("summary_cost_usd", self.summary_cost_usd);
        c.int("misses", self.misses);
        c.int("calls_with_misses", self.calls_with_misses);
        c.int("violations", self.violations);
        c.int("over_budget_calls", self.over_budget_calls);
        c.int("compressions", self.compressions);
        c.int("retrievals", self.retrievals);
        c.finish()
    }
}

/// One row per chunk per call that carried it: whether that call or a later one used it, and how
/// soon ([`memlens_core::hindsight`]): the labels `memlens labels-from-hindsight` writes.
pub fn hindsight_labels<'a>(
    traces: impl IntoIterator<Item = (&'a str, &'a Trace)>,
) -> Result<RecordBatch, ArrowError> {
    let mut r = LabelRows::default();
    for (source, trace) in traces {
        let graph = detect(trace);
        for label in memlens_core::hindsight::hindsight_labels(trace, &graph) {
            let chunk = trace.chunk(label.chunk);
            r.source.push(source.to_string());
            r.trace_id.push(trace.id.clone());
            r.call.push(i64::from(label.call));
            r.chunk.push(i64::from(chunk.id.0));
            r.key.push(chunk.key.clone());
            r.category.push(chunk.category.as_str().to_string());
            r.tool_name.push(chunk.meta.tool_name.clone());
            r.tokens.push(i64::from(chunk.tokens));
            r.used_later.push(label.used_later());
            r.next_use_call.push(label.next_use.map(i64::from));
            r.calls_until_use
                .push(label.calls_until_use().map(i64::from));
            r.uses_after.push(i64::from(label.uses_after));
        }
    }
    r.finish()
}

/// The schema of [`hindsight_labels`] (that of an empty set of traces).
pub fn hindsight_labels_schema() -> SchemaRef {
    LabelRows::default()
        .finish()
        .expect("empty columns of the declared types make a batch")
        .schema()
}

#[derive(Default)]
struct LabelRows {
    source: Vec<String>,
    trace_id: Vec<String>,
    call: Vec<i64>,
    chunk: Vec<i64>,
    key: Vec<String>,
    category: Vec<String>,
    tool_name: Vec<Option<String>>,
    tokens: Vec<i64>,
    used_later: Vec<bool>,
    next_use_call: Vec<Option<i64>>,
    calls_until_use: Vec<Option<i64>>,
    uses_after: Vec<i64>,
}

impl LabelRows {
    fn finish(self) -> Result<RecordBatch, ArrowError> {
        let mut c = Columns::default();
        c.text("source", self.source);
        c.text("trace_id", self.trace_id);
        c.int("call", self.call);
        c.int("chunk", self.chunk);
        c.text("key", self.key);
        c.text("category", self.category);
        c.opt_text("tool_name", self.tool_name);
        c.int("tokens", self.tokens);
        c.bool("used_later", self.used_later);
        c.opt_int("next_use_call", self.next_use_call);
        c.opt_int("calls_until_use", self.calls_until_use);
        c.int("uses_after", self.uses_after);
        c.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/columns.md's tables: per `## <table>.parquet` section, (column, type) in order.
    fn documented() -> Vec<(String, Vec<(String, String)>)> {
        let doc = include_str!("../../../docs/columns.md");
        let mut tables: Vec<(String, Vec<(String, String)>)> = Vec::new();
        for line in doc.lines() {
            if let Some(name) = line
                .strip_prefix("## ")
                .and_then(|l| l.strip_suffix(".parquet"))
            {
                tables.push((name.to_string(), Vec::new()));
            } else if let (Some(row), Some((_, columns))) =
                (line.strip_prefix("| `"), tables.last_mut())
            {
                let mut cells = row.split(" | ");
                let name = cells.next().unwrap_or("").trim_end_matches('`');
                let ty = cells.next().unwrap_or("");
                columns.push((name.to_string(), ty.to_string()));
            }
        }
        tables
    }

    fn doc_type(field: &Field) -> String {
        let ty = match field.data_type() {
            DataType::Utf8 => "string",
            DataType::Int64 => "int64",
            DataType::Float64 => "float64",
            DataType::Float32 => "float32",
            DataType::Boolean => "bool",
            other => panic!(
                "{}: a type docs/columns.md has no name for: {other}",
                field.name()
            ),
        };
        match field.is_nullable() {
            true => format!("{ty}, null"),
            false => ty.to_string(),
        }
    }

    #[test]
    fn docs_list_every_column() {
        let simulations = ("simulations", simulations_schema());
        let labels = ("hindsight_labels", hindsight_labels_schema());
        let code: Vec<(String, Vec<(String, String)>)> = Tables::schemas()
            .into_iter()
            .chain([simulations, labels])
            .map(|(name, schema)| {
                let columns = schema
                    .fields()
                    .iter()
                    .map(|f| (f.name().clone(), doc_type(f)))
                    .collect();
                (name.to_string(), columns)
            })
            .collect();
        assert_eq!(documented(), code);
    }
}
