//! The page: state, the worker bridge, loading (drop, open, paste, sample, `#url=`), keyboard,
//! theme and the URL hash. The views are in the submodules.

mod calls;
mod files;
pub mod fmt;
mod heatmap;
mod labels;
mod live;
mod order;
mod projection;
mod sim;
mod split;
mod views;

use crate::protocol::{Request, Response};
use gloo_storage::{LocalStorage as BrowserStorage, Storage as _};
use leptos::ev;
use leptos::prelude::*;
use memlens_core::analysis::{
    Analysis, AnalysisOptions, CallView, ContextDiff, SimView, TraceEntry,
};
use memlens_core::value::Label;
use std::collections::BTreeMap;
use std::sync::Arc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The sample trace (written for MemLens: an OpenAI-format support agent with tool calls).
pub const SAMPLE: &str = include_str!("../../sample/support-agent.json");
/// The sample's file name.
pub const SAMPLE_NAME: &str = "sample-support-agent.json";

/// The most bytes of trace files one tab takes in a load. The worker's WebAssembly memory is at
/// most 4 GiB and importing takes about three times the file (RELIABILITY.md), so a larger load
/// would run the tab out of memory half-way: it is refused up front, pointing to the CLI.
pub const MAX_LOAD_BYTES: f64 = 1024.0 * 1024.0 * 1024.0;

/// Why a load of these files (name, `File`/`Blob`, bytes or text) is refused, if it is.
fn too_large(files: &[(String, JsValue)]) -> Option<String> {
    let sizes: Vec<(&str, f64)> = files
        .iter()
        .map(|(name, payload)| {
            let size = match payload.dyn_ref::<web_sys::Blob>() {
                Some(blob) => blob.size(),
                None => payload.as_string().map_or(0.0, |s| s.len() as f64),
            };
            (name.as_str(), size)
        })
        .collect();
    let total: f64 = sizes.iter().map(|(_, s)| s).sum();
    if total <= MAX_LOAD_BYTES {
        return None;
    }
    let gb = |b: f64| format!("{:.1} GB", b / 1e9);
    let what = match sizes.as_slice() {
        [(name, size)] => format!("{name} is {}", gb(*size)),
        _ => format!("these {} files are {} together", sizes.len(), gb(total)),
    };
    Some(format!(
        "{what}: a browser tab can analyze up to {} at a time (its WebAssembly memory is at most 4 GB \
         and importing takes about three times the file). Use the command line instead: \
         memlens inspect FILE reads files as large as the machine's memory.",
        gb(MAX_LOAD_BYTES)
    ))
}

/// The views, in keyboard order (1-8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Key numbers and the growth chart.
    Overview,
    /// The chunk table.
    Chunks,
    /// Value heatmap.
    Heatmap,
    /// Cost attribution.
    Cost,
    /// Calls: each call's input broken down, and why its cached prefix ended.
    Calls,
    /// Access graph.
    Graph,
    /// Policy simulator.
    Simulator,
    /// Labels and weight fitting.
    Labels,
}

impl View {
    /// Every view in order.
    pub const ALL: [View; 8] = [
        View::Overview,
        View::Chunks,
        View::Heatmap,
        View::Cost,
        View::Calls,
        View::Graph,
        View::Simulator,
        View::Labels,
    ];

    /// Name in the URL and the tabs' ids.
    pub fn slug(self) -> &'static str {
        match self {
            View::Overview => "overview",
            View::Chunks => "chunks",
            View::Heatmap => "heatmap",
            View::Cost => "cost",
            View::Calls => "calls",
            View::Graph => "graph",
            View::Simulator => "simulator",
            View::Labels => "labels",
        }
    }

    /// Tab title.
    pub fn title(self) -> &'static str {
        match self {
            View::Overview => "Overview",
            View::Chunks => "Chunks",
            View::Heatmap => "Value heatmap",
            View::Cost => "Cost",
            View::Calls => "Calls",
            View::Graph => "Access graph",
            View::Simulator => "Policy simulator",
            View::Labels => "Labels",
        }
    }

    fn from_slug(s: &str) -> Option<View> {
        View::ALL.into_iter().find(|v| v.slug() == s)
    }
}

/// A loaded file.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// File name.
    pub name: String,
    /// Importer.
    pub format: String,
    /// The traces.
    pub traces: Vec<TraceEntry>,
    /// Kept warnings.
    pub warnings: Vec<String>,
    /// All warnings.
    pub warning_count: usize,
    /// Size.
    pub bytes: u64,
    /// Import time in the worker, ms.
    pub millis: f64,
}

/// One trace's analysis and its chunks' content.
#[derive(Debug, Clone, PartialEq)]
pub struct Data {
    /// Index of the trace in the file.
    pub trace: usize,
    /// The analysis.
    pub analysis: Analysis,
    /// Chunk contents, indexed like the chunks.
    pub contents: Vec<String>,
}

/// Import progress.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Stage.
    pub stage: String,
    /// Percent.
    pub percent: u32,
    /// Bytes.
    pub bytes: u64,
    /// When the load started (ms since epoch).
    pub started: f64,
}

/// The app's state: signals, shared through the context.
#[derive(Clone, Copy)]
pub struct Ctx {
    worker: StoredValue<Option<web_sys::Worker>, LocalStorage>,
    /// The worker's `message` and `error` listeners: replaced (and so removed) with the worker
    /// when it is restarted.
    worker_listeners: StoredValue<Vec<gloo_events::EventListener>, LocalStorage>,
    queue: StoredValue<Vec<js_sys::Object>, LocalStorage>,
    ready: RwSignal<bool>,
    /// Import progress while loading.
    pub progress: RwSignal<Option<Progress>>,
    /// A running request other than import ("simulating…").
    pub busy: RwSignal<Option<String>>,
    /// The last error, shown until dismissed.
    pub error: RwSignal<Option<String>>,
    /// The loaded file.
    pub loaded: RwSignal<Option<Arc<Loaded>>>,
    /// The selected trace.
    pub trace: RwSignal<Option<usize>>,
    /// Its analysis.
    pub data: RwSignal<Option<Arc<Data>>>,
    /// Current view.
    pub view: RwSignal<View>,
    /// The chunk open in the detail panel.
    pub chunk: RwSignal<Option<u32>>,
    /// Simulator: policy text (JSON or TOML).
    pub policy_text: RwSignal<String>,
    /// Simulator: the policy text read (`None` while the worker reads a TOML text).
    pub policy: RwSignal<Option<Result<memlens_core::policy::PolicyConfig, String>>>,
    /// Simulator: built-in policy chosen (or "custom").
    pub policy_name: RwSignal<String>,
    /// Simulator: budget.
    pub budget: RwSignal<u32>,
    /// Last replay.
    pub sim: RwSignal<Option<SimView>>,
    /// Last sweep.
    pub sweep: RwSignal<Vec<SimView>>,
    /// Last comparison.
    pub compare: RwSignal<Vec<SimView>>,
    /// The simulator's frontier: `(policy, budget, totals)` of every policy at every budget.
    pub frontier: RwSignal<Vec<(String, u32, memlens_core::simulate::Totals)>>,
    /// Last context diff.
    pub diff: RwSignal<Option<ContextDiff>>,
    /// The call open in the Calls view, and its breakdown once the worker sent it.
    pub call: RwSignal<Option<u32>>,
    /// The breakdown of `call`.
    pub call_view: RwSignal<Option<Arc<CallView>>>,
    /// How many calls ahead the overview projects (kept across views).
    pub projection_next: RwSignal<u32>,
    /// Labels of the current trace, by chunk key.
    pub labels: RwSignal<BTreeMap<String, Label>>,
    /// Value settings for analysis.
    pub options: RwSignal<AnalysisOptions>,
    /// Help overlay open.
    pub help: RwSignal<bool>,
    /// A file is dragged over the page.
    pub dragging: RwSignal<bool>,
    /// "light" or "dark".
    pub theme: RwSignal<String>,
    /// The trace picker is open.
    pub picker: RwSignal<bool>,
    /// Analysis time of the current trace, ms.
    pub analysis_millis: RwSignal<f64>,
    /// URL given with `#url=` (kept in the hash).
    pub source_url: RwSignal<Option<String>>,
    /// Trace index asked for by the hash, applied once the file is loaded.
    pending_trace: StoredValue<Option<usize>>,
    /// "Count and price as" model override (empty: the trace's own).
    pub model: RwSignal<String>,
    /// The last files loaded (names and contents), to re-import with another model.
    last: StoredValue<Vec<(String, JsValue)>, LocalStorage>,
    /// Export: replace secrets with placeholders first.
    pub redact: RwSignal<bool>,
    /// What the last redacted export replaced.
    pub redaction: RwSignal<Option<String>>,
    /// The file followed as it grows.
    followed: StoredValue<Option<live::Followed>, LocalStorage>,
    /// The live badge (`None`: not following).
    pub live: RwSignal<Option<live::Badge>>,
}

/// The app's state.
pub fn ctx() -> Ctx {
    expect_context::<Ctx>()
}

fn window() -> Option<web_sys::Window> {
    web_sys::window()
}

impl Ctx {
    fn new() -> Ctx {
        Ctx {
            worker: StoredValue::new_local(None),
            worker_listeners: StoredValue::new_local(Vec::new()),
            queue: StoredValue::new_local(Vec::new()),
            ready: RwSignal::new(false),
            progress: RwSignal::new(None),
            busy: RwSignal::new(None),
            error: RwSignal::new(None),
            loaded: RwSignal::new(None),
            trace: RwSignal::new(None),
            data: RwSignal::new(None),
            view: RwSignal::new(View::Overview),
            chunk: RwSignal::new(None),
            policy_text: RwSignal::new(
                memlens_core::policy::PolicyConfig::builtin("value")
                    .map(|p| p.to_json())
                    .unwrap_or_default(),
            ),
            policy: RwSignal::new(None),
            policy_name: RwSignal::new("value".into()),
            budget: RwSignal::new(4000),
            sim: RwSignal::new(None),
            sweep: RwSignal::new(Vec::new()),
            compare: RwSignal::new(Vec::new()),
            frontier: RwSignal::new(Vec::new()),
            diff: RwSignal::new(None),
            call: RwSignal::new(None),
            call_view: RwSignal::new(None),
            projection_next: RwSignal::new(10),
            labels: RwSignal::new(BTreeMap::new()),
            options: RwSignal::new(AnalysisOptions {
                max_heatmap_rows: heatmap::HEAT_MAX_ROWS,
                ..AnalysisOptions::default()
            }),
            help: RwSignal::new(false),
            dragging: RwSignal::new(false),
            theme: RwSignal::new("light".into()),
            picker: RwSignal::new(false),
            analysis_millis: RwSignal::new(0.0),
            source_url: RwSignal::new(None),
            pending_trace: StoredValue::new(None),
            model: RwSignal::new(String::new()),
            last: StoredValue::new_local(Vec::new()),
            redact: RwSignal::new(true),
            redaction: RwSignal::new(None),
            followed: StoredValue::new_local(None),
            live: RwSignal::new(None),
        }
    }

    /// Keeps the selected trace selected across the next import (a re-read of the same file).
    pub fn keep_trace(&self) {
        self.pending_trace.set_value(self.trace.get_untracked());
    }

    /// Sends a request to the worker (queued until it is ready).
    pub fn send(&self, request: &Request, payload: JsValue) {
        let Ok(json) = serde_json::to_string(request) else {
            self.error.set(Some("cannot encode the request".into()));
            return;
        };
        let message = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&message, &"json".into(), &json.into());
        let _ = js_sys::Reflect::set(&message, &"payload".into(), &payload);
        if self.ready.get_untracked() {
            self.worker.with_value(|w| {
                if let Some(w) = w {
                    if w.post_message(&message).is_err() {
                        self.error
                            .set(Some("the worker did not take the request".into()));
                    }
                }
            });
        } else {
            self.queue.update_value(|q| q.push(message));
        }
    }

    /// Reads the simulator's policy text into [`Ctx::policy`]: JSON here, TOML in the worker
    /// (the page is built without TOML's parser; `Response::Policy` brings the answer).
    pub fn read_policy(&self, text: &str) {
        use memlens_core::policy::PolicyConfig;
        if text.trim_start().starts_with('{') {
            self.policy
                .set(Some(PolicyConfig::parse(text).map_err(|e| e.to_string())));
        } else {
            self.policy.set(None);
            self.send(
                &Request::ParsePolicy {
                    text: text.to_string(),
                },
                JsValue::UNDEFINED,
            );
        }
    }

    /// Imports a file's content (a `File`, bytes or a string) in the worker.
    pub fn load(&self, name: String, payload: JsValue) {
        self.load_files(vec![(name, payload)]);
    }

    /// Imports files as one set (several dropped files, a folder): one file is a plain import;
    /// several are imported together and their traces linked (a session and its subagents).
    pub fn load_files(&self, files: Vec<(String, JsValue)>) {
        if files.is_empty() {
            return;
        }
        if let Some(why) = too_large(&files) {
            self.error.set(Some(why));
            return;
        }
        self.error.set(None);
        self.redaction.set(None);
        self.start_progress("starting".into());
        self.last.set_value(files.clone());
        let model = self.model_override();
        if files.len() == 1 {
            let Some((name, payload)) = files.into_iter().next() else {
                return;
            };
            self.send(&Request::Import { name, model }, payload);
        } else {
            let (names, payloads): (Vec<String>, Vec<JsValue>) = files.into_iter().unzip();
            let array: js_sys::Array = payloads.into_iter().collect();
            self.send(&Request::ImportFiles { names, model }, array.into());
        }
    }

    /// Shows the progress bar at its start, at `stage`.
    pub fn start_progress(&self, stage: String) {
        self.progress.set(Some(Progress {
            stage,
            percent: 0,
            bytes: 0,
            started: js_sys::Date::now(),
        }));
    }

    /// The model box's override (`--model`), if it names one.
    pub fn model_override(&self) -> Option<String> {
        Some(self.model.get_untracked())
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
    }

    /// Imports the last files again (after the model override changed), keeping the trace.
    pub fn reload(&self) {
        let files = self.last.get_value();
        if !files.is_empty() {
            self.keep_trace();
            self.load_files(files);
        }
    }

    /// Asks the worker for the loaded traces in the native format (redacted when chosen).
    pub fn export_traces(&self) {
        self.busy.set(Some("exporting…".into()));
        self.send(
            &Request::Export {
                redact: self.redact.get_untracked(),
            },
            JsValue::UNDEFINED,
        );
    }

    /// Writes the static report of the analyzed trace (what `memlens report FILE --trace ID`
    /// writes): the worker replays the report's policies at its budgets and draws it.
    pub fn export_report(&self) {
        let Some(trace) = self.trace.get_untracked() else {
            return;
        };
        let source = self
            .loaded
            .get_untracked()
            .map(|l| l.name.rsplit('/').next().unwrap_or(&l.name).to_string())
            .unwrap_or_default();
        self.busy.set(Some("replaying for the report…".into()));
        self.send(
            &Request::Report {
                trace,
                options: self.options.get_untracked(),
                source,
            },
            JsValue::UNDEFINED,
        );
    }

    /// Loads the bundled sample.
    pub fn load_sample(&self) {
        self.load(SAMPLE_NAME.into(), JsValue::from_str(SAMPLE));
    }

    /// Selects a trace and asks for its analysis.
    pub fn select_trace(&self, index: usize) {
        self.trace.set(Some(index));
        self.picker.set(false);
        self.chunk.set(None);
        self.sim.set(None);
        self.sweep.set(Vec::new());
        self.compare.set(Vec::new());
        self.frontier.set(Vec::new());
        self.diff.set(None);
        self.labels.set(labels::load(self));
        self.busy.set(Some("analyzing the trace…".into()));
        self.send(
            &Request::Analyze {
                trace: index,
                options: self.options.get_untracked(),
            },
            JsValue::UNDEFINED,
        );
    }

    /// Re-runs the analysis of the current trace (after the value settings changed).
    pub fn reanalyze(&self) {
        if let Some(index) = self.trace.get_untracked() {
            self.busy.set(Some("analyzing the trace…".into()));
            self.send(
                &Request::Analyze {
                    trace: index,
                    options: self.options.get_untracked(),
                },
                JsValue::UNDEFINED,
            );
        }
    }

    fn on_response(&self, response: Response) {
        match response {
            // Only `scripts/web.sh measure` asks for it, from a worker of its own.
            Response::ProtocolBench { .. } => {}
            Response::Policy { text, json } => {
                if self.policy_text.with_untracked(|t| *t == text) {
                    self.policy
                        .set(Some(json.and_then(|j| policy_from_toml_json(&j))));
                }
            }
            Response::Ready => {
                self.ready.set(true);
                // The page is usable: fetch the other views' code now, not when first opened.
                split::prefetch();
                let queued = self.queue.try_update_value(std::mem::take);
                self.worker.with_value(|w| {
                    if let Some(w) = w {
                        for m in queued.unwrap_or_default() {
                            let _ = w.post_message(&m);
                        }
                    }
                });
                if let Some(body) = window().and_then(|w| w.document()).and_then(|d| d.body()) {
                    let _ = body.set_attribute("data-worker", "ready");
                }
            }
            Response::Progress {
                stage,
                percent,
                bytes,
            } => self.progress.update(|p| {
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
                self.progress.set(None);
                live::on_loaded(*self, live);
                let n = traces.len();
                self.data.set(None);
                self.trace.set(None);
                self.loaded.set(Some(Arc::new(Loaded {
                    name,
                    format,
                    traces,
                    warnings,
                    warning_count,
                    bytes,
                    millis,
                })));
                let wanted = self.pending_trace.try_update_value(Option::take).flatten();
                match (n, wanted) {
                    // A followed file may not hold a trace yet: the badge says it is waiting.
                    (0, _) if live.is_some() => {}
                    (0, _) => self
                        .error
                        .set(Some("the file was read but holds no trace".into())),
                    (_, Some(i)) if i < n => self.select_trace(i),
                    (1, _) => self.select_trace(0),
                    _ => self.picker.set(true),
                }
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
                live::on_appended(*self, live, records, millis);
                let n = traces.len();
                self.loaded.update(|l| {
                    if let Some(l) = l {
                        let mut next = Loaded::clone(l);
                        next.traces = traces;
                        next.warnings = warnings;
                        next.warning_count = warning_count;
                        next.bytes = live.bytes;
                        *l = Arc::new(next);
                    }
                });
                match self.trace.get_untracked() {
                    // The views follow the trace they show; its analysis is redone.
                    Some(t) if changed.contains(&t) => self.send(
                        &Request::Analyze {
                            trace: t,
                            options: self.options.get_untracked(),
                        },
                        JsValue::UNDEFINED,
                    ),
                    Some(_) => {}
                    None if n == 1 => self.select_trace(0),
                    None if n > 1 => self.picker.set(true),
                    None => {}
                }
            }
            Response::Analysis {
                trace,
                analysis,
                contents,
                millis,
            } => {
                self.busy.set(None);
                if self.trace.get_untracked() == Some(trace) {
                    self.analysis_millis.set(millis);
                    // An open call view belongs to the previous analysis (another trace, or
                    // other settings): ask again for the same call.
                    self.call_view.set(None);
                    if let Some(call) = self.call.get_untracked() {
                        self.send(&Request::CallView { trace, call }, JsValue::UNDEFINED);
                    }
                    self.data.set(Some(Arc::new(Data {
                        trace,
                        analysis: *analysis,
                        contents,
                    })));
                }
            }
            Response::Sim { view } => {
                self.busy.set(None);
                self.sim.set(Some(view));
            }
            Response::Sweep { views } => {
                self.busy.set(None);
                self.sweep.set(views);
            }
            Response::Compare { views } => {
                self.busy.set(None);
                self.compare.set(views);
            }
            Response::Diff { diff } => {
                self.busy.set(None);
                self.diff.set(diff);
            }
            Response::CallView { view } => {
                self.busy.set(None);
                // A late answer for a call no longer selected is dropped.
                if view.as_ref().map(|v| v.index) == self.call.get_untracked() {
                    self.call_view.set(view.map(|v| Arc::new(*v)));
                }
            }
            Response::Replays { trace, results } => {
                self.busy.set(None);
                if self.trace.get_untracked() == Some(trace) {
                    self.frontier.set(results);
                }
            }
            Response::Report { html, file_name } => {
                self.busy.set(None);
                sim::download(&file_name, &html, "text/html");
            }
            Response::Exported { text, redaction } => {
                self.busy.set(None);
                let base = self
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
                sim::download(
                    &format!("{stem}{suffix}.memlens.jsonl"),
                    &text,
                    "application/x-ndjson",
                );
                self.redaction.set(redaction);
            }
            Response::Error { during, message } => {
                self.busy.set(None);
                self.progress.set(None);
                let what = match during.as_str() {
                    "import" => "Could not read this file",
                    "analyze" => "Could not analyze this trace",
                    "follow" | "live update" => {
                        // What was read stays loaded; the file must be fixed and followed again.
                        live::stop(*self);
                        "Stopped following the file"
                    }
                    _ => "The request failed",
                };
                self.error.set(Some(format!("{what}: {message}")));
            }
        }
    }

    fn spawn_worker(&self) {
        let worker = match make_worker() {
            Ok(w) => w,
            Err(e) => {
                self.error
                    .set(Some(format!("cannot start the worker: {e}")));
                return;
            }
        };
        let this = *self;
        let onmessage = gloo_events::EventListener::new(&worker, "message", move |ev| {
            let Some(text) = ev
                .dyn_ref::<web_sys::MessageEvent>()
                .and_then(|m| m.data().as_string())
            else {
                return;
            };
            match serde_json::from_str::<Response>(&text) {
                Ok(r) => this.on_response(r),
                Err(e) => this
                    .error
                    .set(Some(format!("unreadable reply from the worker: {e}"))),
            }
        });
        let onerror = gloo_events::EventListener::new(&worker, "error", move |ev| {
            let detail = js_sys::Reflect::get(ev, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
                .unwrap_or_else(|| "unknown error".into());
            this.progress.set(None);
            this.busy.set(None);
            this.error.set(Some(format!(
                "The worker stopped ({detail}). It is restarted; load the file again."
            )));
            this.ready.set(false);
            this.worker.update_value(|w| {
                if let Some(w) = w.take() {
                    w.terminate();
                }
            });
            // Not from inside this listener's own call: the restart replaces (drops) it.
            wasm_bindgen_futures::spawn_local(async move { this.spawn_worker() });
        });
        self.worker_listeners.set_value(vec![onmessage, onerror]);
        self.worker.set_value(Some(worker));
    }
}

/// Starts the worker from `worker.js` / `worker_bg.wasm` next to the page (Trunk's worker
/// output), through a small blob script so that relative paths work under any sub-path. The
/// script also tells the worker where the tables it fetches on first use are (`assets/`): a blob
/// worker's own URL is no base for relative paths.
fn make_worker() -> Result<web_sys::Worker, String> {
    let document = window().and_then(|w| w.document()).ok_or("no document")?;
    let base = document
        .base_uri()
        .map_err(|e| format!("{e:?}"))?
        .unwrap_or_default();
    let url = |file: &str| -> Result<String, String> {
        web_sys::Url::new_with_base(file, &base)
            .map(|u| u.href())
            .map_err(|e| format!("{e:?}"))
    };
    let (js, wasm, assets) = (url("worker.js")?, url("worker_bg.wasm")?, url("assets/")?);
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let script = format!(
        "self.memlensAssets={};importScripts({});wasm_bindgen({});",
        quote(&assets),
        quote(&js),
        quote(&wasm)
    );
    let parts = js_sys::Array::new();
    parts.push(&JsValue::from_str(&script));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("text/javascript");
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options)
        .map_err(|e| format!("{e:?}"))?;
    let blob_url =
        web_sys::Url::create_object_url_with_blob(&blob).map_err(|e| format!("{e:?}"))?;
    web_sys::Worker::new(&blob_url).map_err(|e| format!("{e:?}"))
}

/// Reads `name=value` pairs from the hash and the query string.
fn url_params() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(location) = window().map(|w| w.location()) else {
        return out;
    };
    for part in [
        location.search().unwrap_or_default(),
        location.hash().unwrap_or_default(),
    ] {
        let trimmed = part.trim_start_matches(['?', '#']);
        for pair in trimmed.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = js_sys::decode_uri_component(v)
                .ok()
                .and_then(|s| s.as_string())
                .unwrap_or_else(|| v.to_string());
            out.insert(k.to_string(), v);
        }
    }
    out
}

fn encode(s: &str) -> String {
    js_sys::encode_uri_component(s).into()
}

/// Fetches `#url=` (the only request the app makes, and only when asked).
fn fetch_url(ctx: Ctx, url: String) {
    ctx.start_progress(format!("downloading {url}"));
    wasm_bindgen_futures::spawn_local(async move {
        let result: Result<js_sys::Uint8Array, String> = async {
            let w = window().ok_or("no window")?;
            let response = wasm_bindgen_futures::JsFuture::from(w.fetch_with_str(&url))
                .await
                .map_err(|e| format!("{e:?}"))?;
            let response: web_sys::Response = response.dyn_into().map_err(|_| "not a response")?;
            if !response.ok() {
                return Err(format!("HTTP {}", response.status()));
            }
            let buffer = wasm_bindgen_futures::JsFuture::from(
                response.array_buffer().map_err(|e| format!("{e:?}"))?,
            )
            .await
            .map_err(|e| format!("{e:?}"))?;
            Ok(js_sys::Uint8Array::new(&buffer))
        }
        .await;
        match result {
            Ok(bytes) => {
                let name = url.rsplit('/').next().unwrap_or("download").to_string();
                ctx.load(name, bytes.into());
            }
            Err(e) => {
                ctx.progress.set(None);
                ctx.error
                    .set(Some(format!("Could not download {url}: {e}")));
            }
        }
    });
}

fn is_editable(target: Option<web_sys::EventTarget>) -> bool {
    target
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|e| matches!(e.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"))
}

fn click_open() {
    files::click_input("file-input");
}

/// Where the chosen theme is remembered.
const THEME_KEY: &str = "memlens.theme";

fn set_theme(theme: &str) {
    if let Some(root) = window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
    {
        let _ = root.set_attribute("data-theme", theme);
    }
}

/// Mounts the app.
pub fn run() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

#[component]
fn App() -> impl IntoView {
    let ctx = Ctx::new();
    provide_context(ctx);
    ctx.spawn_worker();

    // Theme: remembered, else the system's.
    let initial = BrowserStorage::get::<String>(THEME_KEY)
        .ok()
        .filter(|t| t == "dark" || t == "light")
        .unwrap_or_else(|| {
            let dark = window()
                .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
                .is_some_and(|m| m.matches());
            if dark { "dark" } else { "light" }.to_string()
        });
    ctx.theme.set(initial);
    Effect::new(move |_| set_theme(&ctx.theme.get()));
    // The policy text is read whenever it changes (typed, chosen, loaded from a file or the URL).
    Effect::new(move |_| ctx.policy_text.with(|text| ctx.read_policy(text)));

    // URL state.
    let params = url_params();
    if let Some(v) = params.get("view").and_then(|v| View::from_slug(v)) {
        ctx.view.set(v);
    }
    if let Some(t) = params.get("trace").and_then(|t| t.parse().ok()) {
        ctx.pending_trace.set_value(Some(t));
    }
    if let Some(b) = params.get("budget").and_then(|b| b.parse().ok()) {
        ctx.budget.set(b);
    }
    if let Some(p) = params.get("policy") {
        if let Ok(config) = memlens_core::policy::PolicyConfig::builtin(p) {
            ctx.policy_name.set(p.clone());
            ctx.policy_text.set(config.to_json());
        }
    }
    if let Some(url) = params.get("url").filter(|u| !u.is_empty()) {
        ctx.source_url.set(Some(url.clone()));
        fetch_url(ctx, url.clone());
    } else if params.contains_key("sample") {
        ctx.load_sample();
    }
    Effect::new(move |_| {
        let mut hash = format!("#view={}", ctx.view.get().slug());
        if let Some(t) = ctx.trace.get() {
            hash.push_str(&format!("&trace={t}"));
        }
        hash.push_str(&format!(
            "&policy={}&budget={}",
            encode(&ctx.policy_name.get()),
            ctx.budget.get()
        ));
        if let Some(u) = ctx.source_url.get() {
            hash.push_str(&format!("&url={}", encode(&u)));
        }
        if let Some(h) = window().and_then(|w| w.history().ok()) {
            let _ = h.replace_state_with_url(&JsValue::NULL, "", Some(&hash));
        }
    });

    // Keyboard.
    let keys = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        let key = e.key();
        if (e.ctrl_key() || e.meta_key()) && key.eq_ignore_ascii_case("o") {
            e.prevent_default();
            click_open();
            return;
        }
        if key == "Escape" {
            ctx.help.set(false);
            ctx.picker.set(false);
            ctx.chunk.set(None);
            return;
        }
        if is_editable(e.target()) || e.ctrl_key() || e.meta_key() || e.alt_key() {
            return;
        }
        if key == "?" {
            ctx.help.update(|h| *h = !*h);
        } else if let Some(d) = key.chars().next().and_then(|c| c.to_digit(10)) {
            if key.len() == 1 && (1..=View::ALL.len() as u32).contains(&d) {
                ctx.view.set(View::ALL[d as usize - 1]);
            }
        }
    });
    // Drop anywhere.
    let over = window_event_listener(ev::dragover, move |e: web_sys::DragEvent| {
        e.prevent_default();
        ctx.dragging.set(true);
    });
    let leave = window_event_listener(ev::dragleave, move |e: web_sys::DragEvent| {
        if e.related_target().is_none() {
            ctx.dragging.set(false);
        }
    });
    let drop = window_event_listener(ev::drop, move |e: web_sys::DragEvent| {
        e.prevent_default();
        ctx.dragging.set(false);
        if let Some(transfer) = e.data_transfer() {
            ctx.source_url.set(None);
            files::load_dropped(ctx, &transfer);
        }
    });
    // Paste JSON anywhere outside a text field.
    let paste = window_event_listener(ev::paste, move |e: web_sys::ClipboardEvent| {
        if is_editable(e.target()) {
            return;
        }
        if let Some(text) = e
            .clipboard_data()
            .and_then(|d| d.get_data("text").ok())
            .filter(|t| !t.trim().is_empty())
        {
            e.prevent_default();
            ctx.source_url.set(None);
            ctx.load("pasted.json".into(), JsValue::from_str(&text));
        }
    });
    on_cleanup(move || {
        keys.remove();
        over.remove();
        leave.remove();
        drop.remove();
        paste.remove();
    });

    let on_file = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        if let Some(list) = input.files() {
            ctx.source_url.set(None);
            files::load_list(ctx, &list);
        }
        input.set_value("");
    };
    let toggle_theme = move |_| {
        let next = if ctx.theme.get_untracked() == "dark" {
            "light"
        } else {
            "dark"
        };
        // Not remembered if storage is unavailable: the theme still switches.
        let _ = BrowserStorage::set(THEME_KEY, next);
        ctx.theme.set(next.into());
    };

    view! {
        <header class="top">
            <span class="brand">"MemLens"</span>
            <button id="open" on:click=move |_| click_open() title="Open a trace file (Ctrl/Cmd+O)">"Open…"</button>
            <input id="file-input" type="file" multiple accept=".json,.jsonl,.ndjson,.traj,application/json" on:change=on_file hidden/>
            <button id="open-folder" on:click=move |_| files::click_input("folder-input") title="Open a folder: a Claude Code project folder, sessions with their subagents">"Folder…"</button>
            <input id="folder-input" type="file" prop:webkitdirectory=true multiple on:change=on_file hidden/>
            <button id="load-sample" on:click=move |_| { ctx.source_url.set(None); ctx.load_sample() }>"Load sample"</button>
            <FileBadge/>
            <live::LiveControls/>
            <span class="spacer"></span>
            <label class="muted" title="Count and price as this model, whatever the trace says (like memlens --model)">"model "
                <input id="model" list="models" placeholder="as in the trace" size="14" prop:value=move || ctx.model.get()
                    on:change=move |ev| { ctx.model.set(event_target_value(&ev)); ctx.reload(); }/>
            </label>
            <datalist id="models">
                <option value="gpt-4o"/><option value="gpt-4o-mini"/><option value="gpt-4.1"/><option value="o3"/>
                <option value="gpt-5"/><option value="claude-sonnet-4-5"/><option value="claude-opus-4-1"/>
            </datalist>
            <button id="theme" on:click=toggle_theme title="Light / dark">
                {move || if ctx.theme.get() == "dark" { "☀ Light" } else { "☾ Dark" }}
            </button>
            <button id="help-button" on:click=move |_| ctx.help.update(|h| *h = !*h) title="Keyboard shortcuts (?)">"?"</button>
        </header>
        <ErrorBanner/>
        <ProgressBar/>
        <Show when=move || ctx.loaded.get().is_some() fallback=Landing>
            <Tabs/>
            <main class="view">{move || views::current(ctx.view.get())}</main>
        </Show>
        <Show when=move || ctx.picker.get()>
            <Picker/>
        </Show>
        <Show when=move || ctx.help.get()>
            <Help/>
        </Show>
        <Show when=move || ctx.dragging.get()>
            <div class="drop-overlay"><div>"Drop the trace file to analyze it — it stays in this browser."</div></div>
        </Show>
        <Show when=move || ctx.busy.get().is_some()>
            <div class="busy" id="busy">{move || ctx.busy.get().unwrap_or_default()}</div>
        </Show>
    }
}

#[component]
fn FileBadge() -> impl IntoView {
    let ctx = ctx();
    move || {
        ctx.loaded.get().map(|l| {
            let trace = ctx.trace.get().and_then(|i| l.traces.get(i)).map(|t| t.id.clone());
            let many = l.traces.len() > 1;
            view! {
                <span class="file" id="file-badge">
                    <b>{l.name.clone()}</b>" · "{l.format.clone()}" · "
                    <span id="trace-count">{l.traces.len()}</span>{if many { " traces" } else { " trace" }}
                    {l.warning_count.gt(&0).then(|| view! {
                        <details class="warnings" id="warnings">
                            <summary>{format!("{} warning(s)", l.warning_count)}</summary>
                            <ul>{l.warnings.iter().map(|w| view! { <li>{w.clone()}</li> }).collect_view()}</ul>
                            {(l.warning_count > l.warnings.len()).then(|| view! {
                                <p>{format!("… and {} more", l.warning_count - l.warnings.len())}</p>
                            })}
                        </details>
                    })}
                </span>
                {many.then(|| view! {
                    <button id="pick-trace" on:click=move |_| ctx.picker.set(true)>
                        {trace.unwrap_or_else(|| "Choose a trace".into())}" ▾"
                    </button>
                })}
                <span class="export">
                    <label title="Replace API keys, bearer tokens, URL passwords, e-mail addresses and high-entropy secrets with stable placeholders in the exported file (what memlens convert --redact does)">
                        <input type="checkbox" id="redact" prop:checked=move || ctx.redact.get()
                            on:change=move |ev| ctx.redact.set(event_target_checked(&ev))/>
                        " redact secrets"
                    </label>
                    <button id="export-trace" on:click=move |_| ctx.export_traces()
                        title="Download the loaded traces in the native MemLens format, to share or to open again">"Export traces"</button>
                    {move || ctx.redaction.get().map(|r| view! { <span class="muted" id="redaction">{r}</span> })}
                    <button id="export-report" on:click=move |_| ctx.export_report()
                        prop:disabled=move || ctx.data.with(Option::is_none)
                        title="Download this trace's report: one self-contained HTML page (what memlens report writes)">"Report"</button>
                </span>
            }
        })
    }
}

#[component]
fn ErrorBanner() -> impl IntoView {
    let ctx = ctx();
    move || {
        ctx.error.get().map(|e| {
            view! {
                <div class="error" id="error" role="alert">
                    <span>{e}</span>
                    <button on:click=move |_| ctx.error.set(None)>"Dismiss"</button>
                </div>
            }
        })
    }
}

#[component]
fn ProgressBar() -> impl IntoView {
    let ctx = ctx();
    move || {
        ctx.progress.get().map(|p| {
            let secs = ((js_sys::Date::now() - p.started) / 1000.0).max(0.001);
            let rate = if p.bytes > 0 {
                format!(
                    " · {} · {:.1} s ({:.1} MB/s so far)",
                    fmt::mb(p.bytes),
                    secs,
                    p.bytes as f64 / 1e6 / secs
                )
            } else {
                String::new()
            };
            view! {
                <div class="progress" id="progress">
                    <div class="bar"><div class="fill" style:width=format!("{}%", p.percent)></div></div>
                    <span>{format!("{}% · {}{}", p.percent, p.stage, rate)}</span>
                </div>
            }
        })
    }
}

#[component]
fn Landing() -> impl IntoView {
    let ctx = ctx();
    let text = RwSignal::new(String::new());
    view! {
        <section class="landing">
            <h1>"See where your agent's context and money go."</h1>
            <p>"Drop a trace file anywhere on this page, press "<kbd>"Ctrl/Cmd+O"</kbd>", paste JSON, or "
                <button class="link" on:click=move |_| ctx.load_sample()>"load the sample"</button>
                ". Everything runs in this browser: the file is never uploaded."</p>
            <p class="formats">"Reads OpenAI and Anthropic message logs, Claude Code, Codex CLI and Gemini CLI sessions (drop a project folder: sessions with their subagents), OpenHands, SWE-agent and mini-swe-agent trajectories, OpenTelemetry GenAI and OpenInference spans, Langfuse and LangSmith exports, tau-bench, LoCoMo and the native MemLens format, detected automatically."</p>
            <textarea id="paste" placeholder="…or paste a trace here" prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <button id="paste-load" on:click=move |_| {
                let t = text.get_untracked();
                if !t.trim().is_empty() { ctx.load("pasted.json".into(), JsValue::from_str(&t)); }
            }>"Analyze pasted text"</button>
        </section>
    }
}

#[component]
fn Tabs() -> impl IntoView {
    let ctx = ctx();
    view! {
        <nav class="tabs">
            {View::ALL.into_iter().enumerate().map(|(i, v)| view! {
                <button id=format!("tab-{}", v.slug()) class:active=move || ctx.view.get() == v
                    on:click=move |_| ctx.view.set(v) title=format!("{} ({})", v.title(), i + 1)>
                    <kbd>{i + 1}</kbd>" "{v.title()}
                </button>
            }).collect_view()}
        </nav>
    }
}

#[component]
fn Picker() -> impl IntoView {
    let ctx = ctx();
    let query = RwSignal::new(String::new());
    let rows = move || {
        let q = query.get().to_lowercase();
        ctx.loaded.get().map(|l| {
            l.traces
                .iter()
                .filter(|t| q.is_empty() || t.id.to_lowercase().contains(&q))
                .take(500)
                .map(|t| {
                    let i = t.index;
                    view! {
                        <tr class="pick" on:click=move |_| ctx.select_trace(i)>
                            <td>{t.id.clone()}</td>
                            <td class="num">{t.calls}</td>
                            <td class="num">{fmt::int(t.counted_input_tokens)}</td>
                            <td class="num">{fmt::usd(t.cost_usd)}</td>
                        </tr>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <div class="modal" id="picker">
            <div class="panel">
                <h2>"Choose a trace"</h2>
                <input id="picker-search" type="search" placeholder="Search trace ids"
                    prop:value=move || query.get() on:input=move |ev| query.set(event_target_value(&ev))/>
                {move || {
                    let q = query.get().to_lowercase();
                    ctx.loaded.get().map(|l| {
                        let n = l.traces.iter().filter(|t| q.is_empty() || t.id.to_lowercase().contains(&q)).count();
                        let shown = n.min(500);
                        view! { <p class="muted" id="picker-count">{if shown < n { format!("showing {shown} of {n} matching traces: search to narrow") } else { format!("{n} trace(s)") }}</p> }
                    })
                }}
                <div class="scroll">
                    <table>
                        <thead><tr><th>"trace"</th><th>"calls"</th><th>"input tokens sent"</th><th>"cost"</th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
                <button on:click=move |_| ctx.picker.set(false)>"Close"</button>
            </div>
        </div>
    }
}

#[component]
fn Help() -> impl IntoView {
    let ctx = ctx();
    view! {
        <div class="modal" id="help" on:click=move |_| ctx.help.set(false)>
            <div class="panel">
                <h2>"Keyboard shortcuts"</h2>
                <table>
                    <tr><td><kbd>"?"</kbd></td><td>"this help"</td></tr>
                    <tr><td><kbd>"1"</kbd>" … "<kbd>"7"</kbd></td><td>"switch views (overview, chunks, heatmap, cost, graph, simulator, labels)"</td></tr>
                    <tr><td><kbd>"Ctrl/Cmd+O"</kbd></td><td>"open a trace file"</td></tr>
                    <tr><td><kbd>"Ctrl/Cmd+V"</kbd></td><td>"paste a trace (JSON) outside a text field"</td></tr>
                    <tr><td><kbd>"Esc"</kbd></td><td>"close panels"</td></tr>
                </table>
                <p>"Links: "<code>"#url=https://…"</code>" loads a file from a URL (the only request the app ever makes); the hash also keeps the view, trace, policy and budget."</p>
            </div>
        </div>
    }
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
