//! What the page asks the worker for, besides loading files: a trace's analysis, the exports
//! (traces, report) and the reading of a TOML policy.

use super::label_store;
use super::state::Ctx;
use crate::protocol::Request;
use leptos::prelude::*;
use wasm_bindgen::JsValue;

impl Ctx {
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
        self.labels.set(label_store::load(self));
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
}
