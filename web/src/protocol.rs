//! Messages between the page and the worker, as JSON text.

use memlens_core::analysis::{
    Analysis, AnalysisOptions, CallView, ContextDiff, SimView, TraceEntry,
};
use memlens_core::policy::PolicyConfig;
use serde::{Deserialize, Serialize};

/// What the page asks the worker. Externally tagged (`{"import": {...}}`, `"append"`), as
/// [`Response`] is, for the same reason.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
    /// Follow a file an agent is still writing: import what it holds now (a `File` beside the
    /// JSON) and keep reading it as it grows. JSON Lines (MemLens, a Claude Code session, a Codex
    /// rollout...) is then read incrementally ([`Request::Append`]); a file that is one JSON
    /// document is imported whole and read again on change (`refresh`: such a re-read, which
    /// keeps the count of bytes parsed going).
    Follow {
        /// File name, for messages.
        name: String,
        /// Count and price as this model (like `--model`).
        #[serde(default)]
        model: Option<String>,
        /// A re-read of the file already followed (formats read whole).
        #[serde(default)]
        refresh: bool,
    },
    /// The bytes appended to the followed file since the last read (a `Blob` beside the JSON).
    Append,
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
    /// Turn a policy written in TOML into JSON text. The page reads JSON policies itself; TOML's
    /// parser is built into the worker only, which keeps it off the page's first paint.
    ParsePolicy {
        /// The policy text.
        text: String,
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
    /// Replays of every policy at every budget, totals only: the simulator's frontier of tokens
    /// saved against calls with a miss (what `memlens compare --frontier` marks).
    Replays {
        /// Index of the trace.
        trace: usize,
        /// The policies.
        policies: Vec<PolicyConfig>,
        /// The budgets.
        budgets: Vec<u32>,
    },
    /// The static report of one trace, as `memlens report FILE --trace ID` writes it: the worker
    /// analyzes, replays the report's policies at its budgets and draws the page (its text
    /// measured as the CLI measures it, so the file is the CLI's).
    Report {
        /// Index of the trace.
        trace: usize,
        /// The analysis options the page shows the trace with.
        options: AnalysisOptions,
        /// The file's name, the report's title.
        source: String,
    },
    /// One call's input broken down, and its change from the previous call.
    CallView {
        /// Index of the trace.
        trace: usize,
        /// The call.
        call: u32,
    },
    /// Measures this protocol against serde-wasm-bindgen on one trace's analysis reply (the
    /// largest message): encode, `structuredClone` (what `postMessage` does) and decode, each
    /// way, `rounds` times. Only in the `measure` build (`scripts/web.sh measure`), not the
    /// shipped one.
    #[cfg(feature = "measure")]
    ProtocolBench {
        /// Index of the trace.
        trace: usize,
        /// Rounds (medians are reported).
        rounds: u32,
    },
}

/// Median times of one way of sending a reply, milliseconds.
#[cfg(feature = "measure")]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PhaseTimes {
    /// Rust value to a JS value (a string, or an object tree).
    pub encode_ms: f64,
    /// `structuredClone` of that value: the copy `postMessage` makes.
    pub clone_ms: f64,
    /// The JS value back to the Rust value.
    pub decode_ms: f64,
}

/// How a followed file is read, and how much of it has been.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LiveStatus {
    /// Read incrementally (MemLens JSON Lines): only appended bytes are parsed. Otherwise the
    /// file is imported whole again on change.
    pub incremental: bool,
    /// Records read so far (incremental only).
    pub records: usize,
    /// The file's bytes received so far.
    pub bytes: u64,
    /// Bytes the worker has parsed since following began: equal to `bytes` when nothing was
    /// read twice.
    pub parsed: u64,
}

/// What the worker answers. Externally tagged (`{"loaded": {...}}`, `"ready"`): an internally
/// tagged enum is read by buffering the whole message into serde's `Content` first, which
/// instantiates every payload type's `Deserialize` a second time (measured: BENCHMARKS.md, "Web
/// app", issue 14, 2026-12-04).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    /// The worker is ready for requests.
    Ready,
    /// [`Request::ParsePolicy`]'s answer, with the text it read (the page drops the answer to a
    /// text edited since).
    Policy {
        /// The text read.
        text: String,
        /// The TOML table as JSON text (which the page reads as a policy), or why the text is not
        /// TOML.
        json: Result<String, String>,
    },
    /// [`Request::ProtocolBench`]'s medians.
    #[cfg(feature = "measure")]
    ProtocolBench {
        /// The reply's JSON text, bytes.
        json_bytes: usize,
        /// JSON text (this protocol).
        json: PhaseTimes,
        /// serde-wasm-bindgen (`Serializer::json_compatible`).
        serde_wasm_bindgen: PhaseTimes,
    },
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
        /// Set when the file is followed as it grows.
        #[serde(default)]
        live: Option<LiveStatus>,
    },
    /// A followed file grew: what the appended bytes added.
    Appended {
        /// Every trace, with the new figures.
        traces: Vec<TraceEntry>,
        /// Indices of the traces that changed or were started.
        changed: Vec<usize>,
        /// Records read from the appended bytes.
        records: usize,
        /// The follow's state after it.
        live: LiveStatus,
        /// Warnings so far (at most 200 kept), and all of them.
        warnings: Vec<String>,
        /// All warnings.
        warning_count: usize,
        /// Time to read the appended bytes and update the traces, milliseconds.
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
    /// The static report: one HTML page.
    Report {
        /// The page.
        html: String,
        /// The name to download it as (`ID.report.html`).
        file_name: String,
    },
    /// Each policy's totals at each budget, policy by policy.
    Replays {
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
