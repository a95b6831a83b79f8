//! MemLens for JavaScript: the thin wasm-bindgen layer under the npm package `memlens`.
//!
//! One handle type ([`RawPool`], wrapped by the package's `MemoryPool`), options in, plain objects
//! out; token counting and trace analysis as functions. The logic lives in `memlens-pool` (the
//! binding-neutral pool the Python package wraps too) and in the core; this file only converts
//! values and turns errors into JavaScript `Error`s. Never a trap: bad input is an `Err`.
//!
//! Messages and options come in through serde-wasm-bindgen as `serde_json` values. Its allocator is
//! talc; `prepare` also grows the memory ahead, so talc's page-at-a-time growth does not fall
//! inside a turn. `packages/memlens` wraps it in JavaScript (`MemoryPool`, types in `index.d.ts`):
//! after each context it schedules `RawPool.prepare`, the queued value work, for when the caller
//! yields; the context's message references come through one array the pool keeps; a context that
//! extends the latest comes as the number of messages kept and the references of the rest, and the
//! package extends the list it kept.

use memlens_core::analysis::{self, Analysis, AnalysisOptions};
use memlens_core::policy::{PolicyConfig, BUILTIN};
use memlens_import::live::{self, Dialect};
use memlens_import::{import, ImportOptions};
use memlens_pool::{
    budget_from_f64, label_from_str, parse_timestamp, policy_from_value, AddOptions, Pool,
    PoolOptions, Rendered,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use wasm_bindgen::prelude::*;

// Talc instead of Rust's default wasm allocator (dlmalloc): a turn allocates and frees small
// vectors throughout, and in Node the allocator was a tenth of a value turn (BENCHMARKS.md, "Live
// pool").
#[cfg(all(not(target_feature = "atomics"), target_family = "wasm"))]
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// Grows the module's memory ahead of need, while the agent waits (from `prepare`). Talc grows
/// it by what the one allocation that found no room needs, a 64 KiB page or so at a time, and in
/// Node a grow inside a turn took a few tenths of a millisecond (BENCHMARKS.md, "Live pool"). When
/// the memory grew since the last call, a block of an eighth of it (1 MiB at least) is allocated
/// and freed: the allocator grows once, and the block stays free memory for the allocations to
/// come.
fn grow_memory_ahead() {
    #[cfg(target_arch = "wasm32")]
    {
        use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
        /// The module's memory in pages after the latest grow ahead.
        static MEMORY_PAGES: AtomicUsize = AtomicUsize::new(0);
        let pages = core::arch::wasm32::memory_size::<0>();
        if pages > MEMORY_PAGES.load(Relaxed) {
            let bytes = (pages * 65536 / 8).max(1 << 20);
            // Fallible: near the memory's limit the block is not had, and nothing else changes.
            let mut block: Vec<u8> = Vec::new();
            if block.try_reserve_exact(bytes).is_ok() {
                // Kept opaque: an allocation nothing reads could be left out by the optimizer.
                drop(std::hint::black_box(block));
            }
            MEMORY_PAGES.store(core::arch::wasm32::memory_size::<0>(), Relaxed);
        }
    }
}

fn js_err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

fn serializer() -> serde_wasm_bindgen::Serializer {
    serde_wasm_bindgen::Serializer::json_compatible()
}

/// How deep a value handed over from JavaScript may nest: serde_json's limit for JSON text. The
/// conversion recurses, so an object nested 100,000 levels deep would overflow the wasm stack (a
/// trap that leaves the module unusable); deeper values are refused first, by a walk that does
/// not recurse.
const MAX_DEPTH: usize = 128;

/// A JavaScript value converted for Rust after its depth is checked; `what` names it in errors
/// ("invalid message: ...").
fn from_js<T: serde::de::DeserializeOwned>(value: JsValue, what: &str) -> Result<T, JsError> {
    let mut stack = vec![(value.clone(), 1usize)];
    while let Some((v, depth)) = stack.pop() {
        let children = if js_sys::Array::is_array(&v) {
            js_sys::Array::from(&v)
        } else if v.is_object() {
            js_sys::Object::values(v.unchecked_ref())
        } else {
            continue;
        };
        if depth > MAX_DEPTH {
            return Err(JsError::new(&format!(
                "invalid {what}: nested more than {MAX_DEPTH} levels deep"
            )));
        }
        stack.extend(children.iter().map(|c| (c, depth + 1)));
    }
    serde_wasm_bindgen::from_value(value).map_err(|e| JsError::new(&format!("invalid {what}: {e}")))
}

/// A JSON text refused: serde_json's nesting limit worded as [`from_js`] words its own.
fn invalid_json(what: &str, e: &serde_json::Error) -> JsError {
    if e.to_string().starts_with("recursion limit exceeded") {
        JsError::new(&format!(
            "invalid {what}: nested more than {MAX_DEPTH} levels deep"
        ))
    } else {
        JsError::new(&format!("invalid {what}: {e}"))
    }
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    value.serialize(&serializer()).map_err(js_err)
}

/// Reads a policy (see [`policy_from_value`]).
fn policy_from(value: &Value) -> Result<PolicyConfig, JsError> {
    policy_from_value(value).map_err(js_err)
}

/// `add`'s options as the package hands them over (see [`RawPool::add_json`]).
fn add_options(
    time_ms: Option<f64>,
    time_text: Option<String>,
    latency_ms: Option<f64>,
    preference: Option<bool>,
) -> Result<AddOptions, JsError> {
    let timestamp = match (time_ms, time_text) {
        (_, Some(text)) => Some(parse_timestamp(&text).map_err(js_err)?),
        (ms, None) => ms.map(|ms| ms / 1000.0),
    };
    Ok(AddOptions {
        timestamp,
        latency_ms,
        preference: preference.unwrap_or(false),
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawOptions {
    model: Option<String>,
    budget: Option<f64>,
    #[serde(default)]
    policy: Value,
    #[serde(default)]
    summarizer: bool,
    dialect: Option<Dialect>,
    #[serde(default = "keep")]
    keep_history: bool,
}

fn keep() -> bool {
    true
}

/// The live memory pool (see `MemoryPool` in the package's docs).
#[wasm_bindgen]
pub struct RawPool {
    pool: Pool,
    /// The latest context's `refs` (see [`RawPool::context_json`]).
    refs: Vec<u32>,
    /// The patched messages of the latest context, as the package holds them: the next context
    /// names a patch it sends again unchanged (the pool shares it: `Arc::ptr_eq`) instead of
    /// serializing it for the package to parse again.
    sent_patches: HashMap<u32, Arc<Value>>,
}

#[wasm_bindgen]
impl RawPool {
    /// `{model?, budget, policy?, summarizer?: boolean, dialect?: "openai" | "anthropic",
    /// keepHistory?: boolean}`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<RawPool, JsError> {
        let o: RawOptions = from_js(options, "options")?;
        let budget = budget_from_f64(o.budget).map_err(js_err)?;
        let pool = Pool::new(PoolOptions {
            model: o.model,
            budget,
            policy: policy_from(&o.policy)?,
            summarizer: o.summarizer,
            dialect: o.dialect,
            keep_history: o.keep_history,
        })
        .map_err(js_err)?;
        Ok(RawPool {
            pool,
            refs: Vec::new(),
            sent_patches: HashMap::new(),
        })
    }

    /// Adds one message object; returns its chunk ids. The package calls
    /// [`RawPool::add_json`] instead, and this only for what `JSON.stringify` cannot write (a
    /// cycle, a `BigInt`, a value too deep), which it refuses with a clear error. The options
    /// are [`RawPool::add_json`]'s.
    pub fn add(
        &mut self,
        message: JsValue,
        time_ms: Option<f64>,
        time_text: Option<String>,
        latency_ms: Option<f64>,
        preference: Option<bool>,
    ) -> Result<Vec<u32>, JsError> {
        let value: Value = from_js(message, "message")?;
        let options = add_options(time_ms, time_text, latency_ms, preference)?;
        self.pool.add_with(value, options).map_err(js_err)
    }

    /// Adds one message given as JSON text (`JSON.stringify(message)`, what the provider's API
    /// is sent); returns its chunk ids. One string crosses the boundary instead of a call per
    /// field of the object (a fifth of a turn's cost in Node went to converting objects), and
    /// serde_json's own nesting limit (128) refuses values too deep without recursing further.
    /// Its time: `time_ms` (epoch milliseconds: the caller's `Date` or number, else the
    /// package's clock) or `time_text` (ISO 8601, read as the importers read trace times);
    /// neither: none. `latency_ms` and `preference`: see `memlens_pool::AddOptions`.
    #[wasm_bindgen(js_name = addJson)]
    pub fn add_json(
        &mut self,
        message: &str,
        time_ms: Option<f64>,
        time_text: Option<String>,
        latency_ms: Option<f64>,
        preference: Option<bool>,
    ) -> Result<Vec<u32>, JsError> {
        let value: Value =
            serde_json::from_str(message).map_err(|e| invalid_json("message", &e))?;
        let options = add_options(time_ms, time_text, latency_ms, preference)?;
        self.pool.add_with(value, options).map_err(js_err)
    }

    /// Decides the next context, as JSON text the package parses: `{extras, kept, tokens,
    /// fullTokens, overBudget, compressed, evicted, retrieved, releasedMessages}`; its `refs`
    /// come apart, from [`RawPool::fill_context_refs`]. The context is the first `kept`
    /// messages of the previous context (it only appends to that one: 0 when it does not), then
    /// one message per ref. `refs[i] < 2^31` is the index of a message
    /// sent unchanged, otherwise `extras[refs[i] - 2^31]` is a patched message, a summary to
    /// produce, or `{kind: "samePatch", message}`: the patched message the previous context sent
    /// for that message, unchanged (the package keeps them). Unchanged messages are never copied
    /// across the boundary; the rest crosses as one string (`JSON.parse` builds the objects
    /// faster than a call per field).
    #[wasm_bindgen(js_name = contextJson)]
    pub fn context_json(&mut self, query: Option<String>) -> Result<String, JsError> {
        let ctx = self.pool.context(query.as_deref());
        let refs = &mut self.refs;
        refs.clear();
        let mut extras = Vec::new();
        // An extended context: the package keeps the latest list it built, so only the items
        // after the kept ones cross (the kept part's patches stay as sent).
        let kept = ctx.extends;
        let mut previous = if kept > 0 {
            HashMap::new()
        } else {
            std::mem::take(&mut self.sent_patches)
        };
        for item in ctx.items.get(kept..).unwrap_or_default() {
            match item {
                Rendered::Original { message } => refs.push(*message),
                other => {
                    refs.push(0x8000_0000 | extras.len() as u32);
                    extras.push(match other {
                        Rendered::Patched { message, value } => {
                            let same = previous
                                .remove(message)
                                .is_some_and(|sent| Arc::ptr_eq(&sent, value));
                            self.sent_patches.insert(*message, Arc::clone(value));
                            if same {
                                Extra::SamePatch {
                                    kind: "samePatch",
                                    message: *message,
                                }
                            } else {
                                Extra::Rendered(other)
                            }
                        }
                        _ => Extra::Rendered(other),
                    });
                }
            }
        }
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Extra<'a> {
            Rendered(&'a Rendered),
            SamePatch { kind: &'static str, message: u32 },
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Out<'a> {
            extras: Vec<Extra<'a>>,
            kept: usize,
            tokens: u64,
            full_tokens: u64,
            over_budget: bool,
            compressed: &'a [u32],
            evicted: &'a [u32],
            retrieved: &'a [u32],
            released_messages: &'a [u32],
        }
        serde_json::to_string(&Out {
            extras,
            kept,
            tokens: ctx.tokens,
            full_tokens: ctx.full_tokens,
            over_budget: ctx.over_budget,
            compressed: &ctx.compressed,
            evicted: &ctx.evicted,
            retrieved: &ctx.retrieved,
            released_messages: &ctx.released_messages,
        })
        .map_err(js_err)
    }

    /// Copies the latest context's `refs` into `out` when it has room for them; returns how
    /// many there are (when more than `out.length`, nothing was copied: call again with a
    /// larger array): one copy of the numbers instead of parsing them from the JSON text, where
    /// they were most of it (a value context holds hundreds of messages). The package keeps one
    /// array for every context: a new `Uint32Array` per context left a buffer for the garbage
    /// collector each turn (BENCHMARKS.md, "Live pool").
    #[wasm_bindgen(js_name = fillContextRefs)]
    pub fn fill_context_refs(&self, out: &mut [u32]) -> u32 {
        if let Some(head) = out.get_mut(..self.refs.len()) {
            head.copy_from_slice(&self.refs);
        }
        self.refs.len() as u32
    }

    /// Does now the value work the next context would do first (`Pool::prepare`): the package
    /// calls it after each context, once the agent's code has yielded.
    pub fn prepare(&mut self) {
        self.pool.prepare();
        grow_memory_ahead();
    }

    /// Running totals.
    pub fn stats(&self) -> Result<JsValue, JsError> {
        to_js(&self.pool.stats())
    }

    /// Why a chunk is (not) in the latest context, with its value factors.
    pub fn explain(&mut self, chunk: u32) -> Result<JsValue, JsError> {
        to_js(&self.pool.explain(chunk).map_err(js_err)?)
    }

    /// Switches to another policy (built-in name, JSON or TOML text, or object), keeping the
    /// run: the next context is the one the new policy would have decided from the start.
    #[wasm_bindgen(js_name = setPolicy)]
    pub fn set_policy(&mut self, policy: JsValue) -> Result<(), JsError> {
        let value: Value = from_js(policy, "policy")?;
        self.pool.set_policy(policy_from(&value)?).map_err(js_err)
    }

    /// Sets the host scorer's value of a chunk (a number in `[0, 1]`, or `null` to clear).
    #[wasm_bindgen(js_name = setValue)]
    pub fn set_value(&mut self, chunk: u32, value: Option<f64>) -> Result<(), JsError> {
        self.pool
            .set_value(chunk, value.map(|v| v as f32))
            .map_err(js_err)
    }

    /// Labels a chunk: `"important"`, `"useless"`, or `null` to clear.
    pub fn label(&mut self, chunk: u32, label: Option<String>) -> Result<(), JsError> {
        let label = label_from_str(label.as_deref()).map_err(js_err)?;
        self.pool.label(chunk, label).map_err(js_err)
    }

    /// Records the provider's usage object (OpenAI or Anthropic shape) for the latest call.
    #[wasm_bindgen(js_name = recordUsage)]
    pub fn record_usage(&mut self, usage: JsValue) -> Result<(), JsError> {
        let value: Value = from_js(usage, "usage")?;
        self.pool
            .record_usage(live::parse_usage(&value).map_err(js_err)?);
        Ok(())
    }

    /// The run so far in the native MemLens format (JSON Lines).
    #[wasm_bindgen(js_name = exportTrace)]
    pub fn export_trace(&self) -> Result<String, JsError> {
        self.pool.export().map_err(js_err)
    }

    /// The native-format lines not returned before (see `Pool::trace_lines`).
    #[wasm_bindgen(js_name = traceLines)]
    pub fn trace_lines(&mut self, finish: bool) -> Result<String, JsError> {
        self.pool.trace_lines(finish).map_err(js_err)
    }

    /// Tokens of a text with this pool's encoding.
    #[wasm_bindgen(js_name = countTokens)]
    pub fn count_tokens(&self, text: &str) -> u32 {
        self.pool.counter().count(text)
    }
}

/// Exact token count of `text` for a model (or an encoding name); unknown models are an error.
#[wasm_bindgen(js_name = countTokens)]
pub fn count_tokens(text: &str, model: Option<String>) -> Result<u32, JsError> {
    let counter = memlens_pool::counter_for(model.as_deref()).map_err(js_err)?;
    Ok(counter.count(text))
}

/// The built-in policy names.
#[wasm_bindgen(js_name = builtinPolicies)]
pub fn builtin_policies() -> Vec<String> {
    BUILTIN.iter().map(|s| s.to_string()).collect()
}

/// A policy (built-in name, JSON or TOML text, or object) as a plain object: validates it and
/// shows every setting with its default.
#[wasm_bindgen(js_name = policyConfig)]
pub fn policy_config(policy: JsValue) -> Result<JsValue, JsError> {
    let value: Value = from_js(policy, "policy")?;
    let config = policy_from(&value)?;
    let json: Value = serde_json::from_str(&config.to_json()).map_err(js_err)?;
    to_js(&json)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AnalyzeOptions {
    format: Option<String>,
    model: Option<String>,
    file_name: Option<String>,
    /// Analyze only the trace with this index (default: every trace).
    trace: Option<usize>,
}

/// Imports a trace file (bytes) and analyzes it as the web app does: per trace, the summary
/// numbers, per-call tokens by category, chunk rows with value factors and attributed cost, the
/// value heatmap and the access graph (`memlens_core::analysis`), with the format and warnings.
#[wasm_bindgen(js_name = analyzeTrace)]
pub fn analyze_trace(bytes: &[u8], options: JsValue) -> Result<JsValue, JsError> {
    let o: AnalyzeOptions = if options.is_undefined() || options.is_null() {
        AnalyzeOptions::default()
    } else {
        serde_wasm_bindgen::from_value(options)
            .map_err(|e| JsError::new(&format!("invalid options: {e}")))?
    };
    let file = o.file_name.unwrap_or_else(|| "trace".into());
    let result = import(
        &file,
        bytes,
        &ImportOptions {
            format: o.format,
            model: o.model,
        },
    )
    .map_err(js_err)?;
    let prices = memlens_pool::prices();
    let traces: Vec<&memlens_core::Trace> = match o.trace {
        None => result.traces.iter().collect(),
        Some(i) => vec![result.traces.get(i).ok_or_else(|| {
            JsError::new(&format!(
                "invalid options: trace {i} does not exist ({} traces in {file})",
                result.traces.len()
            ))
        })?],
    };
    let options = AnalysisOptions::default();
    let analyses: Vec<Analysis> = traces
        .into_iter()
        .map(|t| analysis::analyze(t, prices, &options))
        .collect();
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Out<'a> {
        format: &'a str,
        traces: Vec<Analysis>,
        warnings: &'a [memlens_import::Warning],
        warning_count: usize,
    }
    to_js(&Out {
        format: result.format,
        traces: analyses,
        warnings: &result.warnings,
        warning_count: result.warning_count,
    })
}
