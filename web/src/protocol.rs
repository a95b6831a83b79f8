//! Messages between the page and the worker, as JSON text.

use memlens_core::analysis::{Analysis, AnalysisOptions, ContextDiff, SimView, TraceEntry};
use memlens_core::policy::PolicyConfig;
use serde::{Deserialize, Serialize};

/// What the page asks the worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Request {
    /// Import a file. Its content travels beside the JSON: a `File`, a `Uint8Array` or a string.
    Import {
        /// File name, for messages.
        name: String,
        /// Count and price as this model, whatever the trace says (like `--model`).
        #[serde(default)]
        model: Option<String>,
    },
    /// Analyze one trace of the imported file.
    Analyze {
        /// Index of the trace.
        trace: usize,
        /// Value settings.
        options: AnalysisOptions,
    },
    /// Replay one trace under a policy.
    Simulate {
        /// Index of the trace.
        trace: usize,
        /// The policy.
        policy: PolicyConfig,
        /// Budget.
        budget: u32,
    },
    /// Replay under one policy at several budgets.
    Sweep {
        /// Index of the trace.
        trace: usize,
        /// The policy.
        policy: PolicyConfig,
        /// Budgets.
        budgets: Vec<u32>,
    },
    /// Replay several policies at one budget.
    Compare {
        /// Index of the trace.
        trace: usize,
        /// The policies.
        policies: Vec<PolicyConfig>,
        /// Budget.
        budget: u32,
    },
    /// The context a policy would send at one call.
    Diff {
        /// Index of the trace.
        trace: usize,
        /// The policy.
        policy: PolicyConfig,
        /// Budget.
        budget: u32,
        /// The call.
        call: u32,
    },
}

/// What the worker answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Response {
    /// The worker is ready for requests.
    Ready,
    /// Import progress.
    Progress {
        /// What it is doing.
        stage: String,
        /// Percent done (by stage).
        percent: u32,
        /// Bytes of the file.
        bytes: u64,
    },
    /// A file was imported.
    Loaded {
        /// File name.
        name: String,
        /// The importer used.
        format: String,
        /// One line per trace.
        traces: Vec<TraceEntry>,
        /// Warnings (at most 200 kept).
        warnings: Vec<String>,
        /// All warnings.
        warning_count: usize,
        /// File size.
        bytes: u64,
        /// Time to read and import, milliseconds.
        millis: f64,
    },
    /// A trace's analysis, with every chunk's full content (indexed like the chunks).
    Analysis {
        /// Index of the trace.
        trace: usize,
        /// The analysis.
        analysis: Box<Analysis>,
        /// Chunk contents.
        contents: Vec<String>,
        /// Time to analyze, milliseconds.
        millis: f64,
    },
    /// A replay.
    Sim {
        /// The replay.
        view: SimView,
    },
    /// A sweep: one replay per budget.
    Sweep {
        /// The replays.
        views: Vec<SimView>,
    },
    /// A comparison: one replay per policy.
    Compare {
        /// The replays.
        views: Vec<SimView>,
    },
    /// A context diff.
    Diff {
        /// The diff (`None`: no such call).
        diff: Option<ContextDiff>,
    },
    /// A request failed; the previous state stands.
    Error {
        /// What failed (`import`, `analyze`, `simulate`, ...).
        during: String,
        /// A readable message.
        message: String,
    },
}
