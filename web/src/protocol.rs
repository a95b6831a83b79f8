//! Messages between the page and the worker, as JSON text.

use memlens_core::analysis::{
    Analysis, AnalysisOptions, CallView, ContextDiff, SimView, TraceEntry,
};
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
    /// Import several files as one set (a Claude Code project folder, a session with its
    /// subagents' files): their traces are listed together and a subagent's trace is linked to
    /// the parent call that started it. The contents travel beside the JSON as an array, in the
    /// order of `names`.
    ImportFiles {
        /// File names (paths relative to a dropped folder), for messages.
        names: Vec<String>,
        /// Count and price as this model (like `--model`).
        #[serde(default)]
        model: Option<String>,
    },
    /// The loaded traces in the native format (what `memlens convert` writes), for download.
    Export {
        /// Replace secrets with placeholders first (what `memlens convert --redact` does); the
        /// loaded traces themselves are left as they are.
        redact: bool,
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
    /// Replays for the static report: every policy at every budget (what `memlens report`
    /// compares).
    ReportReplays {
        /// Index of the trace.
        trace: usize,
        /// The policies.
        policies: Vec<PolicyConfig>,
        /// The budgets.
        budgets: Vec<u32>,
    },
    /// One call's input broken down, and its change from the previous call.
    CallView {
        /// Index of the trace.
        trace: usize,
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
    /// The report's replays: each policy's totals at each budget, policy by policy.
    ReportReplays {
        /// Index of the trace.
        trace: usize,
        /// `(policy, budget, totals)`.
        results: Vec<(String, u32, memlens_core::simulate::Totals)>,
    },
    /// A context diff.
    Diff {
        /// The diff (`None`: no such call).
        diff: Option<ContextDiff>,
    },
    /// A call view (`None`: no such call).
    CallView {
        /// The view.
        view: Option<Box<CallView>>,
    },
    /// The loaded traces in the native format.
    Exported {
        /// The file's text (native JSON Lines).
        text: String,
        /// What redaction replaced, as one line (`None` when not asked for).
        redaction: Option<String>,
    },
    /// A request failed; the previous state stands.
    Error {
        /// What failed (`import`, `analyze`, `simulate`, ...).
        during: String,
        /// A readable message.
        message: String,
    },
}
