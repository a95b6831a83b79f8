//! `Request::ProtocolBench` (only `scripts/web.sh measure` asks for it): the JSON text protocol
//! against serde-wasm-bindgen's object trees, timed on a real analysis reply.

use super::{now, trace_of, State};
use crate::protocol::{PhaseTimes, Response};
use memlens_core::analysis::analyze;
use memlens_core::cost::PriceTable;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Times both protocols on the analysis reply of trace `trace`, over `rounds` rounds (1-50).
pub(super) fn answer(
    state: &State,
    prices: &PriceTable,
    trace: usize,
    rounds: u32,
) -> Result<Response, String> {
    let t = trace_of(state, trace)?;
    let reply = Response::Analysis {
        trace,
        analysis: Box::new(analyze(t, prices, &Default::default())),
        contents: t.chunks.iter().map(|c| c.content.clone()).collect(),
        millis: 0.0,
    };
    protocol_bench(&reply, rounds.clamp(1, 50))
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
