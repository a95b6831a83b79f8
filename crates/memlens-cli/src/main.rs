//! `memlens`: inspect agent traces from the command line, and decide and measure what to keep.
//!
//! ```text
//! memlens inspect trace.json [--format F] [--json] [--calls] [--model M] [--prices FILE]
//! memlens convert trace.json -o trace.memlens.jsonl [--redact]
//! memlens export-columns traces/ -o out/ [--budgets 4000 --policies window,value]
//! memlens labels-from-hindsight traces/ [-o labels.parquet]
//! memlens fit traces/ --budget 4000 [--max-miss-rate 0.01] [-o fitted.toml]
//! memlens formats
//! memlens simulate trace.json --policy value --budget 8000 [--json]
//! memlens sweep trace.json --policy window --budgets 2000,4000,8000 [--json]
//! memlens compare trace.json --policies value,window,oracle --budget 8000 [--json]
//! memlens report trace.json -o report.html [--budgets 2000,4000,8000] [--trace ID]
//! memlens bench-evidence locomo10.json [--budgets 1000,2000,4000,8000]
//! memlens policies [NAME]
//! ```
//!
//! This file holds the command line's definitions and the dispatch; each command runs in its
//! own module, and what several share (reading inputs, writing files, stdout) in small ones.

use clap::{Parser, Subcommand};
use input::Inputs;
use problems::report_unreadable;
use std::path::PathBuf;
use std::process::ExitCode;

mod atomic;
mod bench_evidence;
mod calls;
mod columns;
mod convert;
mod fit;
mod human;
mod input;
mod inspect;
mod lists;
mod out;
mod problems;
mod report;
mod sim;

#[derive(Parser)]
#[command(
    name = "memlens",
    version,
    about = "See and manage what your LLM agent re-sends every call"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Tokens, cost and cache breaks of traces: calls, chunks, categories, costliest chunks.
    ///
    /// Calls, chunks, tokens by category, reported vs. counted input tokens (with the unrecorded
    /// item for context the log does not hold), cost, the costliest chunks.
    ///
    /// Example: memlens inspect ~/.claude/projects/my-project --calls
    Inspect {
        #[command(flatten)]
        inputs: Inputs,
        /// Print one JSON document instead of tables.
        #[arg(long)]
        json: bool,
        /// How many costliest chunks to list.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// With --json: include every chunk (key, category, tokens, content).
        #[arg(long)]
        chunks: bool,
        /// List every call: its input, what it shared with the previous call (the cacheable
        /// prefix), where and why that prefix ended (an edited system prompt or tool list, an
        /// edited or removed message, a compaction, an idle gap past the cache TTL), the tokens
        /// re-sent after it and what the miss cost.
        #[arg(long)]
        calls: bool,
    },
    /// Convert a trace file to the native MemLens JSON Lines format.
    ///
    /// Example: memlens convert run.traj.json -o run.memlens.jsonl --redact
    Convert {
        /// The trace file.
        file: PathBuf,
        /// Output file.
        #[arg(short, long)]
        output: PathBuf,
        /// Skip format sniffing.
        #[arg(long)]
        format: Option<String>,
        /// Count as this model.
        #[arg(long)]
        model: Option<String>,
        /// Replace API keys, bearer tokens, passwords, e-mail addresses and high-entropy secrets
        /// with stable placeholders (tokens are recounted; both counts are reported).
        #[arg(long)]
        redact: bool,
    },
    /// Write the traces' tables as Parquet (traces, calls, chunks).
    ///
    /// Writes traces.parquet, calls.parquet and chunks.parquet in the output folder (columns in
    /// docs/columns.md).
    ///
    /// Example: memlens export-columns traces/ -o out/ --budgets 4000 --policies window,value
    ExportColumns {
        #[command(flatten)]
        inputs: Inputs,
        /// The folder to write the files into (created if missing).
        #[arg(short, long)]
        output: PathBuf,
        /// With --budgets: also write simulations.parquet, each trace replayed under these
        /// comma-separated policies (names or files; `all`: every built-in) at each budget.
        #[arg(long, value_delimiter = ',', requires = "budgets")]
        policies: Vec<String>,
        /// Comma-separated token budgets for simulations.parquet.
        #[arg(long, value_delimiter = ',', requires = "policies")]
        budgets: Vec<u32>,
    },
    /// Which chunk a later call used, for every chunk at every call (CSV or Parquet).
    ///
    /// For every chunk at every call that carried it: whether that call or a later one used it, and
    /// how soon (the access graph's hindsight; columns in docs/columns.md). CSV on standard output,
    /// or to `-o` (`.parquet`: Parquet).
    ///
    /// Example: memlens labels-from-hindsight traces/ -o labels.parquet
    LabelsFromHindsight {
        #[command(flatten)]
        inputs: Inputs,
        /// The file to write (replaced atomically): Parquet when it ends in `.parquet`, CSV
        /// otherwise.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Learn a policy from the traces' hindsight, with held-out figures.
    ///
    /// Learns value weights from which chunks later steps used and chooses a value threshold by
    /// replay: the most input tokens saved with misses in at most --max-miss-rate of calls, and no
    /// more than the base policy's own share, in --confidence of resamplings. Prints k-fold figures
    /// by trace (train and validation, beside the base policy) and the weights' change; -o writes
    /// the policy fitted on every trace (`.toml` or JSON), which `simulate --policy`, the web app,
    /// npm and Python read. The algorithm: crates/memlens-fit.
    ///
    /// Example: memlens fit traces/ --budget 4000 --max-miss-rate 0.01 -o fitted.toml
    Fit {
        #[command(flatten)]
        inputs: Inputs,
        /// The policy to fit (a built-in name or a policy file): its strategy, protection and
        /// compression are kept.
        #[arg(long, default_value = "value")]
        policy: String,
        /// The token budget the policy runs at.
        #[arg(long, default_value_t = 4000)]
        budget: u32,
        /// The ceiling: the share of calls with a miss allowed on the training traces.
        #[arg(long, default_value_t = 0.01)]
        max_miss_rate: f64,
        /// Allow more calls with a miss than the base policy has on the training traces (up to
        /// --max-miss-rate); by default the ceiling is lowered to the base's share.
        #[arg(long)]
        allow_more_misses: bool,
        /// The share of resamplings of the training traces (drawn with replacement) the ceiling
        /// must hold in, besides the traces themselves; 0: the traces only.
        #[arg(long, default_value_t = 0.9)]
        confidence: f64,
        /// Never drop JSON fields of tool results (by default the fields no later step of the
        /// training traces read are tried: `[tools.NAME] drop_fields`).
        #[arg(long)]
        keep_all_fields: bool,
        /// Cross-validation folds (traces dealt in turn; 0 or 1: no cross-validation).
        #[arg(long, default_value_t = 5)]
        folds: usize,
        /// Write the policy fitted on every trace here (replaced atomically).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Print one JSON document instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// List the formats MemLens reads.
    Formats,
    /// Replay traces under a policy and budget: tokens and dollars saved, misses, violations.
    ///
    /// Example: memlens simulate run.json --policy value --budget 8000
    Simulate {
        #[command(flatten)]
        inputs: Inputs,
        /// A built-in policy name (see `memlens policies`) or a JSON/TOML policy file.
        #[arg(long, default_value = "value")]
        policy: String,
        /// Token budget for each call's context (overrides the policy's).
        #[arg(long)]
        budget: Option<u32>,
        /// Also report the summaries the policy made, as compactions: what each kept of the
        /// chunks it replaced, and the later calls that needed something it lost.
        #[arg(long)]
        summaries: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Replay under one policy at several budgets (budget vs. cost and misses).
    ///
    /// Example: memlens sweep run.json --policy window --budgets 1000,2000,4000,8000
    Sweep {
        #[command(flatten)]
        inputs: Inputs,
        /// Policy name or file.
        #[arg(long, default_value = "value")]
        policy: String,
        /// Comma-separated budgets.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "1000,2000,4000,8000,16000"
        )]
        budgets: Vec<u32>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Replay several policies on the same traces side by side.
    ///
    /// Example: memlens compare traces/ --policies window,value,oracle --budgets 16000,32000
    Compare {
        #[command(flatten)]
        inputs: Inputs,
        /// Comma-separated policy names or files (default: every built-in policy).
        #[arg(long, value_delimiter = ',')]
        policies: Vec<String>,
        /// Token budget.
        #[arg(long, conflicts_with = "budgets")]
        budget: Option<u32>,
        /// Comma-separated budgets: every policy at each.
        #[arg(long, value_delimiter = ',')]
        budgets: Vec<u32>,
        /// Mark the rows on the frontier of tokens saved against calls with a miss (budgets
        /// 2000,4000,8000 unless given), best savings first.
        #[arg(long)]
        frontier: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write one self-contained HTML page of the traces' figures and policies.
    ///
    /// No scripts, nothing loaded; charts as inline SVG: the traces' figures, growth by category,
    /// cost by tool, the value heatmap, where the prompt cache broke, compactions, and policies
    /// compared at the chosen budgets.
    ///
    /// Example: memlens report run.json -o report.html
    Report {
        #[command(flatten)]
        inputs: Inputs,
        /// The HTML file to write (replaced atomically).
        #[arg(short, long)]
        output: PathBuf,
        /// Comma-separated policies to compare (names or files; `all`: every built-in;
        /// default: window, value, value-compress, recall, oracle).
        #[arg(long, value_delimiter = ',')]
        policies: Vec<String>,
        /// Comma-separated budgets to compare the policies at (`--budgets none`: no comparison).
        #[arg(long, value_delimiter = ',', default_value = "2000,4000,8000")]
        budgets: Vec<String>,
        /// Show this trace in detail (repeatable; default: the costliest ones).
        #[arg(long = "trace")]
        traces: Vec<String>,
        /// How many of the costliest traces to show in detail when no --trace is given.
        #[arg(long, default_value_t = 3)]
        detail: usize,
    },
    /// Evidence benchmark on LoCoMo: which strategies keep every evidence turn within a budget.
    ///
    /// Example: memlens bench-evidence ../shared/data/locomo/locomo10.json --budgets 1000,4000
    BenchEvidence {
        /// The LoCoMo file (locomo10.json).
        file: PathBuf,
        /// Comma-separated token budgets.
        #[arg(long, value_delimiter = ',', default_value = "1000,2000,4000,8000")]
        budgets: Vec<u32>,
        /// Also benchmark these policies (built-in names or policy files, e.g. one `memlens fit`
        /// wrote), after the built-in strategies.
        #[arg(long = "policy")]
        policies: Vec<String>,
        /// Print one JSON document instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// List the built-in policies, or print one as JSON (to start a policy file from).
    ///
    /// Example: memlens policies value > my-policy.json
    Policies {
        /// Print this built-in policy as JSON.
        name: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("memlens: error: {message}");
            ExitCode::from(2)
        }
    }
}

/// Runs one command: its exit status, or the error that stopped it (status 2 in `main`).
fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::Simulate {
            inputs,
            policy,
            budget,
            summaries,
            json,
        } => sim::simulate_cmd(&sim::SimArgs { inputs, json }, &policy, budget, summaries)
            .map(|errors| report_unreadable(&errors)),
        Command::Sweep {
            inputs,
            policy,
            budgets,
            json,
        } => sim::sweep_cmd(&sim::SimArgs { inputs, json }, &policy, &budgets)
            .map(|errors| report_unreadable(&errors)),
        Command::Compare {
            inputs,
            policies,
            budget,
            budgets,
            frontier,
            json,
        } => sim::compare_cmd(
            &sim::SimArgs { inputs, json },
            &policies,
            budget,
            &budgets,
            frontier,
        )
        .map(|errors| report_unreadable(&errors)),
        Command::BenchEvidence {
            file,
            budgets,
            policies,
            json,
        } => bench_evidence::run(&file, &budgets, &policies, json),
        Command::Report {
            inputs,
            output,
            policies,
            budgets,
            traces,
            detail,
        } => report::run(&report::ReportArgs {
            inputs,
            output,
            policies,
            budgets: report::parse_budgets(&budgets)?,
            traces,
            detail,
        })
        .map(|errors| report_unreadable(&errors)),
        Command::Policies { name } => lists::policies(name.as_deref()),
        Command::ExportColumns {
            inputs,
            output,
            policies,
            budgets,
        } => columns::export_cmd(&inputs, &output, &policies, &budgets),
        Command::LabelsFromHindsight { inputs, output } => {
            columns::labels_cmd(&inputs, output.as_deref())
        }
        Command::Fit {
            inputs,
            policy,
            budget,
            max_miss_rate,
            allow_more_misses,
            confidence,
            keep_all_fields,
            folds,
            output,
            json,
        } => fit::run(fit::FitArgs {
            inputs: &inputs,
            policy: &policy,
            budget,
            max_miss_rate,
            allow_more_misses,
            confidence,
            keep_all_fields,
            folds,
            output: output.as_deref(),
            json,
        }),
        Command::Formats => Ok(lists::formats()),
        Command::Convert {
            file,
            output,
            format,
            model,
            redact,
        } => convert::run(&file, &output, format, model, redact),
        Command::Inspect {
            inputs,
            json,
            top,
            chunks,
            calls,
        } => inspect::run(&inputs, json, top, chunks, calls),
    }
}
