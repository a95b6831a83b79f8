//! The worker: holds the imported traces and answers [`Request`]s with the core's results. Each
//! kind of request has its function in a module by job: `load` (imports, following, export),
//! `analysis` (analysis, call breakdowns, replays, the report), `policy` (TOML policies), `bench`
//! (the protocol measurement, in the `measure` build only); `assets` fetches the core's tables,
//! `gunzip` decompresses.

use crate::protocol::{LiveStatus, Request, Response};
use memlens_core::cost::PriceTable;
use memlens_core::references::{detect, AccessGraph};
use memlens_core::Trace;
use memlens_import::follow::Follower;
use std::cell::RefCell;
use std::collections::HashMap;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

mod analysis;
mod assets;
#[cfg(feature = "measure")]
mod bench;
mod gunzip;
mod load;
mod policy;

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
    memlens_core::assets::set_loader(assets::load_asset);
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

/// Trace `index` and its access graph (computed on first use).
fn trace_and_graph(state: &mut State, index: usize) -> Result<(&Trace, &AccessGraph), String> {
    graph_of(state, index)?;
    let state = &*state;
    Ok((trace_of(state, index)?, &state.graphs[&index]))
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
        #[cfg(feature = "measure")]
        Request::ProtocolBench { .. } => "protocol measurement",
    };
    let result = STATE.with(|s| {
        let mut state = s.borrow_mut();
        answer(scope, &mut state, request, &payload)
    });
    let response = result
        .map(assets::with_asset_failures)
        .unwrap_or_else(|message| Response::Error {
            during: during.into(),
            message,
        });
    post(scope, &response);
}

/// The answer to `request`, from the function of its kind.
fn answer(
    scope: &DedicatedWorkerGlobalScope,
    state: &mut State,
    request: Request,
    payload: &JsValue,
) -> Result<Response, String> {
    let prices = state.prices.get_or_insert_with(PriceTable::builtin).clone();
    let prices = &prices;
    match request {
        Request::Import { name, model } => {
            load::import_file(scope, state, prices, (name, model), payload)
        }
        Request::ImportFiles { names, model } => {
            load::import_files(scope, state, prices, (names, model), payload)
        }
        Request::Follow {
            name,
            model,
            refresh,
        } => load::follow(scope, state, prices, (name, model), refresh, payload),
        Request::Append => load::append(state, prices, payload),
        Request::Export { redact } => Ok(load::export(state, redact)),
        Request::Analyze { trace, options } => analysis::analysis(state, prices, trace, &options),
        #[cfg(feature = "measure")]
        Request::ProtocolBench { trace, rounds } => bench::answer(state, prices, trace, rounds),
        Request::ParsePolicy { text } => Ok(Response::Policy {
            json: policy::toml_policy_as_json(&text),
            text,
        }),
        Request::Simulate {
            trace,
            policy,
            budget,
        } => analysis::simulate(state, prices, trace, &policy, budget),
        Request::Sweep {
            trace,
            policy,
            budgets,
        } => analysis::sweep(state, prices, trace, &policy, &budgets),
        Request::Compare {
            trace,
            policies,
            budget,
        } => analysis::compare(state, prices, trace, &policies, budget),
        Request::Replays {
            trace,
            policies,
            budgets,
        } => analysis::replays(state, prices, trace, &policies, &budgets),
        Request::Report {
            trace,
            options,
            source,
        } => {
            let (t, g) = trace_and_graph(state, trace)?;
            analysis::report(t, g, prices, &options, &source)
        }
        Request::Diff {
            trace,
            policy,
            budget,
            call,
        } => analysis::diff(state, prices, trace, (&policy, budget), call),
        Request::CallView { trace, call } => analysis::call(state, prices, trace, call),
    }
}
