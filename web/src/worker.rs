//! The worker: holds the imported traces and answers [`Request`]s with the core's results.

use crate::protocol::{LiveStatus, PhaseTimes, Request, Response};
use memlens_core::analysis::{
    analyze, call_view, context_at, simulate_view, simulated_compactions, trace_entries,
    AnalysisOptions,
};
use memlens_core::assets::Asset;
use memlens_core::cost::PriceTable;
use memlens_core::policy::PolicyConfig;
use memlens_core::references::{detect, AccessGraph};
use memlens_core::Trace;
use memlens_import::follow::{is_followable, Follower};
use memlens_import::{import, import_many, FileInput, Import, ImportOptions};
use std::cell::RefCell;
use std::collections::HashMap;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

mod gunzip;

#[derive(Default)]
struct State {
    /// The traces of an import (empty while a file is followed incrementally).
    traces: Vec<Trace>,
    /// A file followed as it grows (JSON Lines: MemLens, Claude Code, Codex...): it holds the
    /// traces.
    follower: Option<Follower>,
    /// Bytes parsed since following began (`None`: not following).
    parsed: Option<u64>,
    /// The model the traces were counted as (`None`: their own), for recounting after redaction.
    model: Option<String>,
    graphs: HashMap<usize, AccessGraph>,
    prices: Option<PriceTable>,
}

impl State {
    fn traces(&self) -> &[Trace] {
        match &self.follower {
            Some(f) => f.traces(),
            None => &self.traces,
        }
    }

    /// The live badge's figures; `file_size`: the size of a file read whole (not incrementally).
    fn live(&self, file_size: u64) -> Option<LiveStatus> {
        let parsed = self.parsed?;
        Some(match &self.follower {
            Some(f) => LiveStatus {
                incremental: true,
                records: f.records(),
                bytes: f.bytes(),
                parsed,
            },
            None => LiveStatus {
                incremental: false,
                records: 0,
                bytes: file_size,
                parsed,
            },
        })
    }
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
    /// Tables that could not be fetched, as warnings for every load that used them.
    static ASSET_FAILURES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Fetches a table the core reads on first use ([`memlens_core::assets`]: a tokenizer
/// vocabulary, the word vectors) from the app's own `assets/` folder (Trunk copies it there from
/// target/web-assets/, gathered by scripts/web_assets.py). Synchronous, which a worker
/// may do, so the core's counting stays synchronous; a same-origin static file, no user data.
fn load_asset(asset: Asset) -> Result<Vec<u8>, String> {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let what = match asset {
        Asset::WordVectors => "the word vectors",
        _ => "the tokenizer",
    };
    progress(
        &scope,
        &format!("loading {what} ({}, first use)", asset.file_name()),
        25,
        0,
    );
    // The folder's URL, set by the page's worker script (`make_worker`).
    let folder = js_sys::Reflect::get(&scope, &"memlensAssets".into())
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_else(|| "assets/".into());
    let result = fetch_sync(&format!("{folder}{}", asset.file_name()));
    if let Err(e) = &result {
        let effect = match asset {
            Asset::WordVectors => "retrieval matches words only, without word vectors",
            _ => "token counts are estimates (1 token per 4 bytes)",
        };
        let warning = format!("{} could not be loaded ({e}): {effect}", asset.file_name());
        ASSET_FAILURES.with(|f| f.borrow_mut().push(warning));
    }
    result
}

fn fetch_sync(url: &str) -> Result<Vec<u8>, String> {
    // A DOMException's message ("Failed to load ..."), not its stack.
    let js = |e: JsValue| match e.dyn_ref::<js_sys::Error>() {
        Some(e) => String::from(e.message()),
        None => format!("{e:?}"),
    };
    let xhr = web_sys::XmlHttpRequest::new().map_err(js)?;
    xhr.open_with_async("GET", url, false).map_err(js)?;
    xhr.set_response_type(web_sys::XmlHttpRequestResponseType::Arraybuffer);
    xhr.send().map_err(js)?;
    match xhr.status().map_err(js)? {
        200 => Ok(js_sys::Uint8Array::new(&xhr.response().map_err(js)?).to_vec()),
        status => Err(format!("HTTP {status} for {url}")),
    }
}

/// Adds the tables that could not be fetched to a load's warnings.
fn with_asset_failures(mut response: Response) -> Response {
    let failures = ASSET_FAILURES.with(|f| f.borrow().clone());
    if let Response::Loaded {
        warnings,
        warning_count,
        ..
    }
    | Response::Appended {
        warnings,
        warning_count,
        ..
    } = &mut response
    {
        *warning_count += failures.len();
        warnings.splice(0..0, failures);
    }
    response
}

fn now() -> f64 {
    js_sys::Date::now()
}

fn post(scope: &DedicatedWorkerGlobalScope, response: &Response) {
    let text = serde_json::to_string(response).unwrap_or_else(|e| {
        format!(r#"{{"kind":"error","during":"reply","message":"cannot encode the reply: {e}"}}"#)
    });
    if scope.post_message(&JsValue::from_str(&text)).is_err() {
        web_sys::console::error_1(&"memlens worker: post_message failed".into());
    }
}

/// Starts the worker: installs the message handler and says it is ready.
pub fn run() {
    console_error_panic_hook::set_once();
    memlens_core::assets::set_loader(load_asset);
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let reply_to = scope.clone();
    // The worker's one listener, for its whole life.
    gloo_events::EventListener::new(&scope, "message", move |ev| {
        let Some(ev) = ev.dyn_ref::<MessageEvent>() else {
            return;
        };
        let data = ev.data();
        let json = js_sys::Reflect::get(&data, &"json".into())
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default();
        let payload = js_sys::Reflect::get(&data, &"payload".into()).unwrap_or(JsValue::UNDEFINED);
        match serde_json::from_str::<Request>(&json) {
            Ok(request) => gunzip::dispatch(&reply_to, request, payload),
            Err(e) => post(
                &reply_to,
                &Response::Error {
                    during: "request".into(),
                    message: format!("bad request: {e}"),
                },
            ),
        }
    })
    .forget();
    post(&scope, &Response::Ready);
}

/// The bytes of a `File`/`Blob`, a `Uint8Array`/`ArrayBuffer` or a string.
fn payload_bytes(payload: &JsValue) -> Result<Vec<u8>, String> {
    if let Some(s) = payload.as_string() {
        return Ok(s.into_bytes());
    }
    if let Some(blob) = payload.dyn_ref::<web_sys::Blob>() {
        let reader = web_sys::FileReaderSync::new().map_err(|e| format!("{e:?}"))?;
        let buffer = reader
            .read_as_array_buffer(blob)
            .map_err(|e| format!("cannot read the file: {e:?}"))?;
        return Ok(js_sys::Uint8Array::new(&buffer).to_vec());
    }
    if let Some(array) = payload.dyn_ref::<js_sys::Uint8Array>() {
        return Ok(array.to_vec());
    }
    if let Some(buffer) = payload.dyn_ref::<js_sys::ArrayBuffer>() {
        return Ok(js_sys::Uint8Array::new(buffer).to_vec());
    }
    Err("no file content was given".into())
}

fn progress(scope: &DedicatedWorkerGlobalScope, stage: &str, percent: u32, bytes: u64) {
    post(
        scope,
        &Response::Progress {
            stage: stage.into(),
            percent,
            bytes,
        },
    );
}

/// One import of several files' results: their traces in order, each failed file a warning
/// (the set fails only when no file could be read).
fn merge_imports(
    results: Vec<Result<Import, memlens_import::ImportError>>,
) -> Result<(Import, Vec<String>), String> {
    let mut formats: Vec<&'static str> = Vec::new();
    let mut traces = Vec::new();
    let mut warnings = Vec::new();
    let mut warning_count = 0;
    let mut warning_kinds = std::collections::BTreeMap::new();
    let mut failed = Vec::new();
    for result in results {
        match result {
            Ok(i) => {
                if !formats.contains(&i.format) {
                    formats.push(i.format);
                }
                traces.extend(i.traces);
                warnings.extend(i.warnings);
                warning_count += i.warning_count;
                for (kind, n) in i.warning_kinds {
                    *warning_kinds.entry(kind).or_insert(0) += n;
                }
            }
            Err(e) => failed.push(e),
        }
    }
    if formats.is_empty() {
        let all: Vec<String> = failed.iter().map(ToString::to_string).collect();
        return Err(all.join("; "));
    }
    let result = Import {
        format: if formats.len() > 1 {
            "mixed"
        } else {
            formats[0]
        },
        traces,
        warnings,
        warning_count,
        warning_kinds,
    };
    // Files that could not be read are reported as warnings; the error names the file.
    let failed = failed.iter().map(|e| format!("not loaded: {e}")).collect();
    Ok((result, failed))
}

/// Keeps an import's traces and says what was loaded; `failed` lists files of a set that could
/// not be read (shown first among the warnings).
fn loaded(
    scope: &DedicatedWorkerGlobalScope,
    state: &mut State,
    prices: &PriceTable,
    (name, model): (String, Option<String>),
    (result, failed): (Import, Vec<String>),
    size: u64,
    start: f64,
) -> Response {
    progress(scope, "pricing each trace", 85, size);
    let traces = trace_entries(&result.traces, prices);
    state.traces = result.traces;
    state.follower = None;
    state.parsed = None;
    state.model = model;
    state.graphs.clear();
    let warning_count = result.warning_count + failed.len();
    let mut warnings = failed;
    warnings.extend(result.warnings.iter().map(ToString::to_string));
    Response::Loaded {
        name,
        format: result.format.to_string(),
        traces,
        warnings,
        warning_count,
        bytes: size,
        millis: now() - start,
        live: None,
    }
}

fn trace_of(state: &State, index: usize) -> Result<&Trace, String> {
    state
        .traces()
        .get(index)
        .ok_or_else(|| format!("no trace {index} in the loaded file"))
}

fn graph_of(state: &mut State, index: usize) -> Result<(), String> {
    if state.graphs.contains_key(&index) {
        return Ok(());
    }
    let trace = state
        .traces()
        .get(index)
        .ok_or_else(|| format!("no trace {index} in the loaded file"))?;
    let graph = detect(trace);
    state.graphs.insert(index, graph);
    Ok(())
}

/// The static report of one trace, as `memlens report FILE --trace ID` writes it: the report's
/// default policies replayed at its default budgets.
fn report(
    trace: &Trace,
    graph: &AccessGraph,
    prices: &PriceTable,
    options: &AnalysisOptions,
    source: &str,
) -> Result<Response, String> {
    let analysis = analyze(trace, prices, options);
    let mut comparison = Vec::new();
    for name in memlens_report::DEFAULT_POLICIES {
        let policy = PolicyConfig::builtin(name).map_err(|e| e.to_string())?;
        for budget in memlens_report::DEFAULT_BUDGETS {
            let v =
                simulate_view(trace, graph, &policy, budget, prices).map_err(|e| e.to_string())?;
            comparison.push(memlens_report::PolicyResult {
                policy: v.policy,
                budget: v.budget,
                totals: v.totals,
            });
        }
    }
    let html = memlens_report::render(&memlens_report::ReportInput {
        source,
        traces: std::slice::from_ref(&analysis),
        detail: &[0],
        comparison: &comparison,
        generator: concat!("memlens ", env!("CARGO_PKG_VERSION")),
    });
    let stem = analysis.summary.figures.id.replace(['/', ' '], "-");
    Ok(Response::Report {
        html,
        file_name: format!("{stem}.report.html"),
    })
}

fn handle(scope: &DedicatedWorkerGlobalScope, request: Request, payload: JsValue) {
    let during = match &request {
        Request::Import { .. } | Request::ImportFiles { .. } => "import",
        Request::Follow { .. } => "follow",
        Request::Append => "live update",
        Request::Export { .. } => "export",
        Request::Analyze { .. } => "analyze",
        Request::ParsePolicy { .. } => "policy",
        Request::Simulate { .. } => "simulate",
        Request::Sweep { .. } => "sweep",
        Request::Compare { .. } => "compare",
        Request::Diff { .. } => "diff",
        Request::CallView { .. } => "call view",
        Request::Replays { .. } => "frontier",
        Request::Report { .. } => "report",
        Request::ProtocolBench { .. } => "protocol measurement",
    };
    let result = STATE.with(|s| {
        let mut state = s.borrow_mut();
        answer(scope, &mut state, request, &payload)
    });
    let response = result
        .map(with_asset_failures)
        .unwrap_or_else(|message| Response::Error {
            during: during.into(),
            message,
        });
    post(scope, &response);
}

fn answer(
    scope: &DedicatedWorkerGlobalScope,
    state: &mut State,
    request: Request,
    payload: &JsValue,
) -> Result<Response, String> {
    let prices = state.prices.get_or_insert_with(PriceTable::builtin).clone();
    match request {
        Request::Import { name, model } => {
            let start = now();
            progress(scope, "reading the file", 5, 0);
            let bytes = payload_bytes(payload)?;
            let size = bytes.len() as u64;
            progress(scope, "parsing and counting tokens", 25, size);
            let options = ImportOptions {
                format: None,
                model: model.clone(),
            };
            let result = import(&name, &bytes, &options).map_err(|e| e.to_string())?;
            drop(bytes);
            let result = (result, Vec::new());
            Ok(loaded(
                scope,
                state,
                &prices,
                (name, model),
                result,
                size,
                start,
            ))
        }
        Request::ImportFiles { names, model } => {
            let start = now();
            let items = js_sys::Array::from(payload);
            if items.length() as usize != names.len() || names.is_empty() {
                return Err(format!(
                    "{} file name(s) for {} file(s)",
                    names.len(),
                    items.length()
                ));
            }
            let gunzip::SetRead {
                files: contents,
                failed,
            } = gunzip::read_set(scope, &names, &items)?;
            let size: u64 = contents.iter().map(|(_, b)| b.len() as u64).sum();
            progress(scope, "parsing and counting tokens", 25, size);
            let files: Vec<FileInput<'_>> = contents
                .iter()
                .map(|(name, bytes)| FileInput { name, bytes })
                .collect();
            let options = ImportOptions {
                format: None,
                model: model.clone(),
            };
            let mut results = import_many(&files, &options);
            drop(files);
            drop(contents);
            // Gzipped files that did not decompress: not loaded, like those that did not import.
            results.extend(failed.into_iter().map(Err));
            let result = merge_imports(results)?;
            let label = if names.len() == 1 {
                names[0].clone()
            } else {
                format!("{} files", names.len())
            };
            Ok(loaded(
                scope,
                state,
                &prices,
                (label, model),
                result,
                size,
                start,
            ))
        }
        Request::Follow {
            name,
            model,
            refresh,
        } => {
            let start = now();
            let bytes = payload_bytes(payload)?;
            let size = bytes.len() as u64;
            let parsed = if refresh {
                state.parsed.unwrap_or(0)
            } else {
                0
            } + size;
            let options = ImportOptions {
                format: None,
                model: model.clone(),
            };
            if is_followable(&bytes[..bytes.len().min(1 << 16)]) {
                let mut follower = Follower::new(&name, &options);
                follower.push(&bytes).map_err(|e| e.to_string())?;
                drop(bytes);
                let (warnings, warning_count) = follower.warnings();
                let warnings = warnings.iter().map(ToString::to_string).collect();
                let traces = trace_entries(follower.traces(), &prices);
                let format = follower.format().unwrap_or("memlens");
                state.traces = Vec::new();
                state.follower = Some(follower);
                state.model = model;
                state.graphs.clear();
                state.parsed = Some(parsed);
                Ok(Response::Loaded {
                    name,
                    format: format.into(),
                    traces,
                    warnings,
                    warning_count,
                    bytes: size,
                    millis: now() - start,
                    live: state.live(size),
                })
            } else {
                let result = import(&name, &bytes, &options).map_err(|e| e.to_string())?;
                drop(bytes);
                let mut response = loaded(
                    scope,
                    state,
                    &prices,
                    (name, model),
                    (result, Vec::new()),
                    size,
                    start,
                );
                state.parsed = Some(parsed);
                if let Response::Loaded { live, .. } = &mut response {
                    *live = state.live(size);
                }
                Ok(response)
            }
        }
        Request::Append => {
            let start = now();
            let bytes = payload_bytes(payload)?;
            let follower = state
                .follower
                .as_mut()
                .ok_or("no file is being followed incrementally")?;
            let update = follower.push(&bytes).map_err(|e| e.to_string())?;
            let (warnings, warning_count) = follower.warnings();
            let warnings = warnings.iter().map(ToString::to_string).collect();
            let traces = trace_entries(follower.traces(), &prices);
            for index in &update.changed {
                state.graphs.remove(index);
            }
            state.parsed = Some(state.parsed.unwrap_or(0) + bytes.len() as u64);
            let live = state.live(0).ok_or("not following a file")?;
            Ok(Response::Appended {
                traces,
                changed: update.changed,
                records: update.records,
                live,
                warnings,
                warning_count,
                millis: now() - start,
            })
        }
        Request::Export { redact: false } => Ok(Response::Exported {
            text: memlens_import::native::write(state.traces()),
            redaction: None,
        }),
        Request::Export { redact: true } => {
            // A copy: the loaded traces stay as they are.
            let mut traces = state.traces().to_vec();
            let summary = memlens_core::redact::redact_traces(&mut traces, state.model.as_deref());
            Ok(Response::Exported {
                text: memlens_import::native::write(&traces),
                redaction: Some(summary.describe()),
            })
        }
        Request::Analyze { trace, options } => {
            let start = now();
            let t = trace_of(state, trace)?;
            let analysis = analyze(t, &prices, &options);
            let contents = t.chunks.iter().map(|c| c.content.clone()).collect();
            Ok(Response::Analysis {
                trace,
                analysis: Box::new(analysis),
                contents,
                millis: now() - start,
            })
        }
        Request::ProtocolBench { trace, rounds } => {
            let t = trace_of(state, trace)?;
            let reply = Response::Analysis {
                trace,
                analysis: Box::new(analyze(t, &prices, &Default::default())),
                contents: t.chunks.iter().map(|c| c.content.clone()).collect(),
                millis: 0.0,
            };
            protocol_bench(&reply, rounds.clamp(1, 50))
        }
        Request::ParsePolicy { text } => Ok(Response::Policy {
            json: toml_policy_as_json(&text),
            text,
        }),
        Request::Simulate {
            trace,
            policy,
            budget,
        } => {
            graph_of(state, trace)?;
            let (t, g) = (trace_of(state, trace)?, &state.graphs[&trace]);
            let mut view =
                simulate_view(t, g, &policy, budget, &prices).map_err(|e| e.to_string())?;
            view.summaries =
                simulated_compactions(t, g, &policy, budget, &prices).map_err(|e| e.to_string())?;
            Ok(Response::Sim { view })
        }
        Request::Sweep {
            trace,
            policy,
            budgets,
        } => {
            graph_of(state, trace)?;
            let (t, g) = (trace_of(state, trace)?, &state.graphs[&trace]);
            let views = budgets
                .iter()
                .map(|&b| simulate_view(t, g, &policy, b, &prices))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            Ok(Response::Sweep { views })
        }
        Request::Compare {
            trace,
            policies,
            budget,
        } => {
            graph_of(state, trace)?;
            let (t, g) = (trace_of(state, trace)?, &state.graphs[&trace]);
            let views = policies
                .iter()
                .map(|p| simulate_view(t, g, p, budget, &prices))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            Ok(Response::Compare { views })
        }
        Request::Replays {
            trace,
            policies,
            budgets,
        } => {
            graph_of(state, trace)?;
            let (t, g) = (trace_of(state, trace)?, &state.graphs[&trace]);
            let mut results = Vec::with_capacity(policies.len() * budgets.len());
            for p in &policies {
                for &budget in &budgets {
                    let v = simulate_view(t, g, p, budget, &prices).map_err(|e| e.to_string())?;
                    results.push((v.policy, v.budget, v.totals));
                }
            }
            Ok(Response::Replays { trace, results })
        }
        Request::Report {
            trace,
            options,
            source,
        } => {
            graph_of(state, trace)?;
            let (t, g) = (trace_of(state, trace)?, &state.graphs[&trace]);
            report(t, g, &prices, &options, &source)
        }
        Request::Diff {
            trace,
            policy,
            budget,
            call,
        } => {
            graph_of(state, trace)?;
            let (t, g) = (trace_of(state, trace)?, &state.graphs[&trace]);
            let diff =
                context_at(t, g, &policy, budget, &prices, call).map_err(|e| e.to_string())?;
            Ok(Response::Diff { diff })
        }
        Request::CallView { trace, call } => {
            let t = trace_of(state, trace)?;
            let view = call_view(t, &prices, call).map(Box::new);
            Ok(Response::CallView { view })
        }
    }
}

/// `performance.now()` of the worker (sub-millisecond, unlike `Date.now()`).
fn perf_now() -> f64 {
    let global = js_sys::global();
    js_sys::Reflect::get(&global, &"performance".into())
        .and_then(|p| {
            let now: js_sys::Function = js_sys::Reflect::get(&p, &"now".into())?.dyn_into()?;
            now.call0(&p)
        })
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or_else(now)
}

/// `structuredClone(value)`: the copy `postMessage` makes of a message.
fn structured_clone(value: &JsValue) -> Result<JsValue, String> {
    let clone: js_sys::Function =
        js_sys::Reflect::get(&js_sys::global(), &"structuredClone".into())
            .and_then(|f| f.dyn_into())
            .map_err(|_| "no structuredClone in this worker".to_string())?;
    clone
        .call1(&JsValue::NULL, value)
        .map_err(|e| format!("structuredClone: {e:?}"))
}

/// Times the JSON text protocol and serde-wasm-bindgen on `reply`, checking that both give the
/// reply back unchanged.
fn protocol_bench(reply: &Response, rounds: u32) -> Result<Response, String> {
    use serde::Serialize as _;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (mut json, mut swb) = ([vec![], vec![], vec![]], [vec![], vec![], vec![]]);
    let mut json_bytes = 0;
    for _ in 0..rounds {
        let t0 = perf_now();
        let text = serde_json::to_string(reply).map_err(|e| e.to_string())?;
        let t1 = perf_now();
        let cloned = structured_clone(&JsValue::from_str(&text))?;
        let t2 = perf_now();
        let back: Response = serde_json::from_str(&cloned.as_string().unwrap_or_default())
            .map_err(|e| format!("JSON: {e}"))?;
        let t3 = perf_now();
        json_bytes = text.len();
        for (list, ms) in json.iter_mut().zip([t1 - t0, t2 - t1, t3 - t2]) {
            list.push(ms);
        }
        let same_json = serde_json::to_string(&back).map_err(|e| e.to_string())? == text;

        let t0 = perf_now();
        let value = reply
            .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
            .map_err(|e| format!("serde-wasm-bindgen: {e}"))?;
        let t1 = perf_now();
        let cloned = structured_clone(&value)?;
        let t2 = perf_now();
        let back: Response = serde_wasm_bindgen::from_value(cloned)
            .map_err(|e| format!("serde-wasm-bindgen: {e}"))?;
        let t3 = perf_now();
        for (list, ms) in swb.iter_mut().zip([t1 - t0, t2 - t1, t3 - t2]) {
            list.push(ms);
        }
        let same_swb = serde_json::to_string(&back).map_err(|e| e.to_string())? == text;
        if !(same_json && same_swb) {
            return Err("a protocol did not give the reply back unchanged".into());
        }
    }
    let times = |[e, c, d]: [Vec<f64>; 3]| PhaseTimes {
        encode_ms: median(e),
        clone_ms: median(c),
        decode_ms: median(d),
    };
    Ok(Response::ProtocolBench {
        json_bytes,
        json: times(json),
        serde_wasm_bindgen: times(swb),
    })
}

/// A TOML policy as JSON text, for the page to read (`Ctx::read_policy`): the worker parses
/// TOML into a table and writes the table as JSON, so neither side instantiates toml's
/// deserializer for every policy type (memlens-core's `from_toml`, which the CLI uses, does:
/// three times the code). A number that is not finite (`inf`, `nan`, a literal too large) is
/// refused here, with its path: JSON would write it as `null`.
#[cfg(feature = "toml")]
fn toml_policy_as_json(text: &str) -> Result<String, String> {
    let invalid = |message: String| format!("invalid policy (toml): {message}");
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| invalid(e.to_string()))?;
    if let Some(path) = non_finite_float(&toml::Value::Table(table.clone()), "") {
        return Err(invalid(format!("{path} is not a finite number")));
    }
    serde_json::to_string(&table).map_err(|e| invalid(e.to_string()))
}

/// Without the `toml` feature (the page's build, which never reads TOML itself).
#[cfg(not(feature = "toml"))]
fn toml_policy_as_json(_text: &str) -> Result<String, String> {
    Err("invalid policy (toml): this build reads JSON policies only".into())
}

/// The dotted path of the first float in `v` that is not finite.
#[cfg(feature = "toml")]
fn non_finite_float(v: &toml::Value, path: &str) -> Option<String> {
    let at = |key: &str| match path {
        "" => key.to_string(),
        _ => format!("{path}.{key}"),
    };
    match v {
        toml::Value::Float(f) if !f.is_finite() => Some(path.to_string()),
        toml::Value::Table(t) => t.iter().find_map(|(k, v)| non_finite_float(v, &at(k))),
        toml::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| non_finite_float(v, &format!("{path}[{i}]"))),
        _ => None,
    }
}
