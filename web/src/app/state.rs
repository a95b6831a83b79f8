//! The app's state: the views, what is loaded and analyzed, and every signal of the page, shared
//! through the context ([`Ctx`]). The methods that talk to the worker are where their job is
//! (`bridge`, `requests`, `load`, `responses`).

use crate::protocol::LiveStatus;
use gloo_timers::callback::Interval;
use leptos::prelude::*;
use memlens_core::analysis::{
    Analysis, AnalysisOptions, CallView, ContextDiff, SimView, TraceEntry,
};
use memlens_core::value::Label;
use std::collections::BTreeMap;
use std::sync::Arc;
use wasm_bindgen::JsValue;

/// Heatmap rows drawn (and asked of the analysis).
pub const HEAT_MAX_ROWS: usize = 4000;

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

    pub(super) fn from_slug(s: &str) -> Option<View> {
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

/// The followed file, as the page knows it (`live` follows it).
pub struct Followed {
    pub(super) handle: JsValue,
    pub(super) name: String,
    /// Bytes already sent to the worker.
    pub(super) sent: f64,
    /// `lastModified` of the last read.
    pub(super) modified: f64,
    /// Read incrementally (`None` until the worker has imported the first read).
    pub(super) incremental: Option<bool>,
    /// A read of the file is under way (a slow `getFile` must not start a second).
    pub(super) reading: bool,
    pub(super) _timer: Interval,
}

/// What the live badge shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Badge {
    /// The worker's figures.
    pub status: LiveStatus,
    /// Reads that found the file grown (or changed).
    pub updates: u32,
    /// Records the last update added.
    pub last_records: usize,
    /// When the last update arrived (ms since epoch).
    pub at: f64,
    /// The worker's time for the last update, ms.
    pub millis: f64,
}

/// The app's state: signals, shared through the context.
#[derive(Clone, Copy)]
pub struct Ctx {
    pub(super) worker: StoredValue<Option<web_sys::Worker>, LocalStorage>,
    /// The worker's `message` and `error` listeners: replaced (and so removed) with the worker
    /// when it is restarted.
    pub(super) worker_listeners: StoredValue<Vec<gloo_events::EventListener>, LocalStorage>,
    pub(super) queue: StoredValue<Vec<js_sys::Object>, LocalStorage>,
    pub(super) ready: RwSignal<bool>,
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
    pub(super) pending_trace: StoredValue<Option<usize>>,
    /// "Count and price as" model override (empty: the trace's own).
    pub model: RwSignal<String>,
    /// The last files loaded (names and contents), to re-import with another model.
    pub(super) last: StoredValue<Vec<(String, JsValue)>, LocalStorage>,
    /// Export: replace secrets with placeholders first.
    pub redact: RwSignal<bool>,
    /// What the last redacted export replaced.
    pub redaction: RwSignal<Option<String>>,
    /// The file followed as it grows.
    pub(super) followed: StoredValue<Option<Followed>, LocalStorage>,
    /// The live badge (`None`: not following).
    pub live: RwSignal<Option<Badge>>,
}

/// The app's state.
pub fn ctx() -> Ctx {
    expect_context::<Ctx>()
}

impl Ctx {
    pub(super) fn new() -> Ctx {
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
                max_heatmap_rows: HEAT_MAX_ROWS,
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
}
