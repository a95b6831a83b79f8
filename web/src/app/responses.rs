//! What the worker's replies do to the page: each [`Response`] kind updates the state (and, for
//! some, downloads a file or asks for more).

use super::download::download;
use super::live;
use super::split;
use super::state::{Ctx, Data, Loaded, Progress};
use crate::protocol::{LiveStatus, Request, Response};
use leptos::prelude::*;
use memlens_core::analysis::{Analysis, TraceEntry};
use std::sync::Arc;
use wasm_bindgen::JsValue;

/// Handles one reply of the worker (the bridge's handler).
pub fn on_response(ctx: Ctx, response: Response) {
    match response {
        // Only `scripts/web.sh measure` asks for it, from a worker of its own.
        #[cfg(feature = "measure")]
        Response::ProtocolBench { .. } => {}
        Response::Policy { text, json } => {
            if ctx.policy_text.with_untracked(|t| *t == text) {
                ctx.policy
                    .set(Some(json.and_then(|j| policy_from_toml_json(&j))));
            }
        }
        Response::Ready => on_ready(ctx),
        Response::Progress {
            stage,
            percent,
            bytes,
        } => ctx.progress.update(|p| {
            let started = p.as_ref().map_or_else(js_sys::Date::now, |p| p.started);
            *p = Some(Progress {
                stage,
                percent,
                bytes,
                started,
            });
        }),
        Response::Loaded {
            name,
            format,
            traces,
            warnings,
            warning_count,
            bytes,
            millis,
            live,
        } => {
            let loaded = Loaded {
                name,
                format,
                traces,
                warnings,
                warning_count,
                bytes,
                millis,
            };
            on_loaded(ctx, loaded, live);
        }
        Response::Appended {
            traces,
            changed,
            records,
            live,
            warnings,
            warning_count,
            millis,
        } => {
            live::on_appended(ctx, live, records, millis);
            on_appended(ctx, traces, &changed, (warnings, warning_count), live);
        }
        Response::Analysis {
            trace,
            analysis,
            contents,
            millis,
        } => on_analysis(ctx, trace, analysis, contents, millis),
        other => on_result(ctx, other),
    }
}

/// The replies to the simulator's, the Calls view's and the exports' requests: the busy note
/// goes, the result is kept (or downloaded), an error shown.
fn on_result(ctx: Ctx, response: Response) {
    ctx.busy.set(None);
    match response {
        Response::Sim { view } => ctx.sim.set(Some(view)),
        Response::Sweep { views } => ctx.sweep.set(views),
        Response::Compare { views } => ctx.compare.set(views),
        Response::Diff { diff } => ctx.diff.set(diff),
        // A late answer for a call no longer selected is dropped.
        Response::CallView { view }
            if view.as_ref().map(|v| v.index) == ctx.call.get_untracked() =>
        {
            ctx.call_view.set(view.map(|v| Arc::new(*v)))
        }
        // A frontier of another trace is dropped.
        Response::Replays { trace, results } if ctx.trace.get_untracked() == Some(trace) => {
            ctx.frontier.set(results)
        }
        Response::Report { html, file_name } => download(&file_name, &html, "text/html"),
        Response::Exported { text, redaction } => on_exported(ctx, &text, redaction),
        Response::Error { during, message } => on_error(ctx, &during, &message),
        // Late answers (above), and the replies `on_response` handles.
        _ => {}
    }
}

fn on_ready(ctx: Ctx) {
    ctx.ready.set(true);
    // The page is usable: fetch the other views' code now, not when first opened.
    split::prefetch();
    ctx.flush_queue();
    if let Some(body) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.body())
    {
        let _ = body.set_attribute("data-worker", "ready");
    }
}

fn on_loaded(ctx: Ctx, loaded: Loaded, live: Option<LiveStatus>) {
    ctx.progress.set(None);
    live::on_loaded(ctx, live);
    let n = loaded.traces.len();
    ctx.data.set(None);
    ctx.trace.set(None);
    ctx.loaded.set(Some(Arc::new(loaded)));
    let wanted = ctx.pending_trace.try_update_value(Option::take).flatten();
    match (n, wanted) {
        // A followed file may not hold a trace yet: the badge says it is waiting.
        (0, _) if live.is_some() => {}
        (0, _) => ctx
            .error
            .set(Some("the file was read but holds no trace".into())),
        (_, Some(i)) if i < n => ctx.select_trace(i),
        (1, _) => ctx.select_trace(0),
        _ => ctx.picker.set(true),
    }
}

/// The followed file grew: its traces replace the loaded ones, and the trace shown is analyzed
/// again if it `changed`.
fn on_appended(
    ctx: Ctx,
    traces: Vec<TraceEntry>,
    changed: &[usize],
    (warnings, warning_count): (Vec<String>, usize),
    live: LiveStatus,
) {
    let n = traces.len();
    ctx.loaded.update(|l| {
        if let Some(l) = l {
            let mut next = Loaded::clone(l);
            next.traces = traces;
            next.warnings = warnings;
            next.warning_count = warning_count;
            next.bytes = live.bytes;
            *l = Arc::new(next);
        }
    });
    match ctx.trace.get_untracked() {
        // The views follow the trace they show; its analysis is redone.
        Some(t) if changed.contains(&t) => ctx.send(
            &Request::Analyze {
                trace: t,
                options: ctx.options.get_untracked(),
            },
            JsValue::UNDEFINED,
        ),
        Some(_) => {}
        None if n == 1 => ctx.select_trace(0),
        None if n > 1 => ctx.picker.set(true),
        None => {}
    }
}

fn on_analysis(
    ctx: Ctx,
    trace: usize,
    analysis: Box<Analysis>,
    contents: Vec<String>,
    millis: f64,
) {
    ctx.busy.set(None);
    if ctx.trace.get_untracked() == Some(trace) {
        ctx.analysis_millis.set(millis);
        // An open call view belongs to the previous analysis (another trace, or
        // other settings): ask again for the same call.
        ctx.call_view.set(None);
        if let Some(call) = ctx.call.get_untracked() {
            ctx.send(&Request::CallView { trace, call }, JsValue::UNDEFINED);
        }
        ctx.data.set(Some(Arc::new(Data {
            trace,
            analysis: *analysis,
            contents,
        })));
    }
}

/// Downloads the exported traces, named after the loaded file.
fn on_exported(ctx: Ctx, text: &str, redaction: Option<String>) {
    let base = ctx
        .loaded
        .get_untracked()
        .map(|l| l.name.clone())
        .unwrap_or_else(|| "traces".into());
    let stem = base
        .rsplit('/')
        .next()
        .unwrap_or(&base)
        .trim_end_matches(".jsonl")
        .trim_end_matches(".json")
        .replace(' ', "-");
    let suffix = if redaction.is_some() { ".redacted" } else { "" };
    download(
        &format!("{stem}{suffix}.memlens.jsonl"),
        text,
        "application/x-ndjson",
    );
    ctx.redaction.set(redaction);
}

fn on_error(ctx: Ctx, during: &str, message: &str) {
    ctx.progress.set(None);
    let what = match during {
        "import" => "Could not read this file",
        "analyze" => "Could not analyze this trace",
        "follow" | "live update" => {
            // What was read stays loaded; the file must be fixed and followed again.
            live::stop(ctx);
            "Stopped following the file"
        }
        _ => "The request failed",
    };
    ctx.error.set(Some(format!("{what}: {message}")));
}

/// A TOML policy the worker wrote as JSON ([`Response::Policy`]), read as a policy. Errors read
/// as TOML's: without a position, which would be in JSON the user never saw.
fn policy_from_toml_json(json: &str) -> Result<memlens_core::policy::PolicyConfig, String> {
    use memlens_core::policy::{PolicyConfig, PolicyError};
    PolicyConfig::from_json(json).map_err(|e| match e {
        PolicyError::Parse { message, .. } => {
            let message = match message.rfind(" at line ") {
                Some(at) => message[..at].to_string(),
                None => message,
            };
            PolicyError::Parse {
                syntax: "toml",
                message,
            }
            .to_string()
        }
        other => other.to_string(),
    })
}
