//! The worker: holds the imported traces and answers [`Request`]s with the core's results.

use crate::protocol::{Request, Response};
use memlens_core::analysis::{analyze, context_at, simulate_view, trace_entries};
use memlens_core::cost::PriceTable;
use memlens_core::references::{detect, AccessGraph};
use memlens_core::Trace;
use memlens_import::{import, ImportOptions};
use std::cell::RefCell;
use std::collections::HashMap;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

#[derive(Default)]
struct State {
    traces: Vec<Trace>,
    graphs: HashMap<usize, AccessGraph>,
    prices: Option<PriceTable>,
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
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let reply_to = scope.clone();
    let onmessage = Closure::<dyn Fn(MessageEvent)>::new(move |ev: MessageEvent| {
        let data = ev.data();
        let json = js_sys::Reflect::get(&data, &"json".into())
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default();
        let payload = js_sys::Reflect::get(&data, &"payload".into()).unwrap_or(JsValue::UNDEFINED);
        match serde_json::from_str::<Request>(&json) {
            Ok(request) => handle(&reply_to, request, payload),
            Err(e) => post(
                &reply_to,
                &Response::Error {
                    during: "request".into(),
                    message: format!("bad request: {e}"),
                },
            ),
        }
    });
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    onmessage.forget();
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

fn trace_of(state: &State, index: usize) -> Result<&Trace, String> {
    state
        .traces
        .get(index)
        .ok_or_else(|| format!("no trace {index} in the loaded file"))
}

fn graph_of(state: &mut State, index: usize) -> Result<(), String> {
    let trace = state
        .traces
        .get(index)
        .ok_or_else(|| format!("no trace {index} in the loaded file"))?;
    state.graphs.entry(index).or_insert_with(|| detect(trace));
    Ok(())
}

fn handle(scope: &DedicatedWorkerGlobalScope, request: Request, payload: JsValue) {
    let during = match &request {
        Request::Import { .. } => "import",
        Request::Analyze { .. } => "analyze",
        Request::Simulate { .. } => "simulate",
        Request::Sweep { .. } => "sweep",
        Request::Compare { .. } => "compare",
        Request::Diff { .. } => "diff",
    };
    let result = STATE.with(|s| {
        let mut state = s.borrow_mut();
        answer(scope, &mut state, request, &payload)
    });
    let response = result.unwrap_or_else(|message| Response::Error {
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
            post(
                scope,
                &Response::Progress {
                    stage: "reading the file".into(),
                    percent: 5,
                    bytes: 0,
                },
            );
            let bytes = payload_bytes(payload)?;
            let size = bytes.len() as u64;
            post(
                scope,
                &Response::Progress {
                    stage: "parsing and counting tokens".into(),
                    percent: 25,
                    bytes: size,
                },
            );
            let result = import(
                &name,
                &bytes,
                &ImportOptions {
                    format: None,
                    model,
                },
            )
            .map_err(|e| e.to_string())?;
            drop(bytes);
            post(
                scope,
                &Response::Progress {
                    stage: "pricing each trace".into(),
                    percent: 85,
                    bytes: size,
                },
            );
            let traces = trace_entries(&result.traces, &prices);
            state.traces = result.traces;
            state.graphs.clear();
            Ok(Response::Loaded {
                name,
                format: result.format.to_string(),
                traces,
                warnings: result.warnings.iter().map(ToString::to_string).collect(),
                warning_count: result.warning_count,
                bytes: size,
                millis: now() - start,
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
        Request::Simulate {
            trace,
            policy,
            budget,
        } => {
            graph_of(state, trace)?;
            let (t, g) = (trace_of(state, trace)?, &state.graphs[&trace]);
            let view = simulate_view(t, g, &policy, budget, &prices).map_err(|e| e.to_string())?;
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
    }
}
