//! `memlens`: inspect agent traces from the command line.
//!
//! ```text
//! memlens inspect trace.json [--format F] [--json] [--model M] [--prices FILE]
//! memlens convert trace.json -o trace.memlens.jsonl
//! memlens formats
//! memlens simulate trace.json --policy value --budget 8000 [--json]
//! memlens sweep trace.json --policy window --budgets 2000,4000,8000 [--json]
//! memlens compare trace.json --policies value,window,oracle --budget 8000 [--json]
//! memlens report trace.json -o report.html [--budgets 2000,4000,8000] [--trace ID]
//! ```

use clap::{Parser, Subcommand};
use memlens_core::cost::PriceTable;
use memlens_core::diff::call_changes;
use memlens_core::report::{summarize, TraceSummary};
use memlens_core::Trace;
use memlens_import::{import, Import, ImportOptions, IMPORTERS};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod bench_evidence;
mod calls;
mod columns;
mod fit;
mod fmt;
mod human;
mod input;
mod out;
mod report;
mod sim;

pub(crate) use input::{import_files, read, ImportedFiles};
use out::outln;

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

/// The traces a command reads, and how to read and price them.
#[derive(clap::Args)]
pub(crate) struct Inputs {
    /// Trace files or folders of them (any supported format; see `memlens formats`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Skip format sniffing and read the files as this format.
    #[arg(long)]
    pub format: Option<String>,
    /// Count and price as this model, whatever the trace says.
    #[arg(long)]
    pub model: Option<String>,
    /// A price table (JSON, like data/prices.json) whose entries override the built-in ones.
    #[arg(long)]
    pub prices: Option<PathBuf>,
}

impl Inputs {
    /// The price table, then the files imported (per-file errors beside the imports).
    pub(crate) fn read(&self) -> Result<(PriceTable, ImportedFiles), String> {
        let table = load_prices(self.prices.as_deref())?;
        let options = ImportOptions {
            format: self.format.clone(),
            model: self.model.clone(),
        };
        Ok((table, import_files(&self.files, &options)?))
    }
}

#[derive(Subcommand)]
enum Command {
    /// Calls, chunks, tokens by category, reported vs. counted input tokens, cost, costliest chunks.
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
    /// Write the per-trace, per-call and per-chunk tables as Parquet files (traces.parquet,
    /// calls.parquet, chunks.parquet in the output folder; columns in docs/columns.md).
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
    /// For every chunk at every call that carried it: whether that call or a later one used it,
    /// and how soon (the access graph's hindsight; columns in docs/columns.md). CSV on standard
    /// output, or to `-o` (`.parquet`: Parquet).
    LabelsFromHindsight {
        #[command(flatten)]
        inputs: Inputs,
        /// The file to write (replaced atomically): Parquet when it ends in `.parquet`, CSV
        /// otherwise.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Learn a policy's value weights from the traces' hindsight (which chunks later steps
    /// used) and choose its value threshold by replay: the most input tokens saved with misses in
    /// at most --max-miss-rate of calls, and no more than the base policy's own share, in
    /// --confidence of resamplings of the traces. Prints k-fold figures by trace (train and
    /// validation, beside the base policy) and the weights' change; -o writes the policy fitted
    /// on every trace (`.toml` or JSON), which `simulate --policy`, the web app, npm and Python
    /// read.
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
    /// Write one self-contained HTML page (no scripts, nothing loaded; charts as inline SVG):
    /// the traces' figures, growth by category, cost by tool, the value heatmap, where the
    /// prompt cache broke, compactions, and policies compared at the chosen budgets.
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
    Policies {
        /// Print this built-in policy as JSON.
        name: Option<String>,
    },
}

/// The built-in price table with the user's overrides.
pub(crate) fn load_prices(path: Option<&Path>) -> Result<PriceTable, String> {
    let mut table = PriceTable::builtin();
    if let Some(path) = path {
        let text = String::from_utf8(read(path)?)
            .map_err(|e| format!("{}: not UTF-8: {e}", path.display()))?;
        let user = PriceTable::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        table.merge(user);
    }
    Ok(table)
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

/// One chunk in `--json --chunks` output.
#[derive(Serialize)]
struct ChunkRow<'a> {
    key: &'a str,
    category: memlens_core::Category,
    content_tokens: u32,
    tokens: u32,
    content: &'a str,
}

#[derive(Serialize)]
struct TraceOut<'a> {
    file: String,
    #[serde(flatten)]
    summary: TraceSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    chunk_list: Option<Vec<ChunkRow<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    call_list: Option<Vec<calls::CallRow>>,
}

#[derive(Serialize)]
struct JsonOut<'a> {
    traces: Vec<TraceOut<'a>>,
    warnings: Vec<String>,
    warning_count: usize,
    /// Every warning by kind (`memlens_import::warning_kind`), over all the files.
    warning_kinds: std::collections::BTreeMap<String, usize>,
    errors: Vec<String>,
    prices_source: String,
}

/// Writes to a temporary file beside `path`, then renames it over `path`: a reader never sees
/// half a report, and a failed write leaves the old one.
/// Prints the inputs that could not be read (the others were): exit status 1 when there are
/// any, 0 when not.
fn report_unreadable(errors: &[String]) -> ExitCode {
    for e in errors {
        eprintln!("memlens: error: {e}");
    }
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let name = path
        .file_name()
        .ok_or_else(|| format!("{}: not a file name", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    // The error names the file asked for (the temporary name means nothing to the user).
    std::fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

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
        } => {
            let budgets = parse_budgets(&budgets)?;
            let errors = report::run(&report::ReportArgs {
                inputs,
                output,
                policies,
                budgets,
                traces,
                detail,
            })?;
            Ok(report_unreadable(&errors))
        }
        Command::Policies { name } => {
            match name {
                Some(name) => {
                    let p = memlens_core::policy::PolicyConfig::builtin(&name)
                        .map_err(|e| e.to_string())?;
                    outln!("{}", p.to_json());
                }
                None => {
                    for name in memlens_core::policy::BUILTIN {
                        outln!("{name}");
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::ExportColumns {
            inputs,
            output,
            policies,
            budgets,
        } => {
            let policies = sim::resolve_policies(&policies, &[])?;
            let written = columns::export(&inputs, &output, &policies, &budgets)?;
            let code = report_unreadable(&written.errors);
            for (path, rows) in &written.files {
                outln!("{}: {rows} row(s)", path.display());
            }
            Ok(code)
        }
        Command::LabelsFromHindsight { inputs, output } => {
            let labels = columns::hindsight_labels(&inputs, output.as_deref())?;
            let code = report_unreadable(&labels.errors);
            match &output {
                Some(path) => outln!("{}: {} row(s)", path.display(), labels.rows),
                None => out::bytes(&labels.csv),
            }
            Ok(code)
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
        } => {
            if !(0.0..=1.0).contains(&max_miss_rate) {
                return Err(format!("--max-miss-rate {max_miss_rate}: a share, 0 to 1"));
            }
            if !(0.0..=1.0).contains(&confidence) {
                return Err(format!("--confidence {confidence}: a share, 0 to 1"));
            }
            let errors = fit::fit_cmd(fit::FitArgs {
                inputs: &inputs,
                base: sim::resolve_policy(&policy)?,
                budget,
                max_miss_rate,
                allow_more_misses,
                confidence,
                keep_all_fields,
                folds,
                output: output.as_deref(),
                json,
            })?;
            Ok(report_unreadable(&errors))
        }
        Command::Formats => {
            for i in IMPORTERS {
                outln!("{:<15} {}", i.name(), i.description());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Convert {
            file,
            output,
            format,
            model,
            redact,
        } => {
            let bytes = read(&file)?;
            let mut result = import(
                &file.display().to_string(),
                &bytes,
                &ImportOptions {
                    format,
                    model: model.clone(),
                },
            )
            .map_err(|e| e.to_string())?;
            drop(bytes);
            print_warnings(&result);
            if redact {
                let summary =
                    memlens_core::redact::redact_traces(&mut result.traces, model.as_deref());
                eprintln!("{}", summary.describe());
            }
            // Atomically: an interrupted convert never leaves half a trace file behind.
            write_atomically(
                &output,
                memlens_import::native::write(&result.traces).as_bytes(),
            )?;
            eprintln!(
                "wrote {} trace(s) to {}",
                result.traces.len(),
                output.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Inspect {
            inputs,
            json,
            top,
            chunks,
            calls,
        } => {
            let (table, ImportedFiles { imports, errors }) = inputs.read()?;
            if json {
                print_json(&imports, &errors, &table, top, chunks, calls)?;
            } else {
                for e in &errors {
                    eprintln!("memlens: error: {e}");
                }
                for (name, result) in &imports {
                    let summaries: Vec<TraceSummary> = result
                        .traces
                        .iter()
                        .map(|t| summarize(t, &table, top))
                        .collect();
                    human::print_file(name, result, &summaries, top);
                    if calls {
                        for trace in result.traces.iter().take(human::TRACE_ROWS) {
                            let changes = call_changes(trace, &table);
                            calls::print(trace, &calls::rows(trace, &changes));
                        }
                    }
                    print_warnings(result);
                }
            }
            Ok(if errors.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

/// `--budgets 2000,4000` as numbers; `none` for no budget at all.
fn parse_budgets(values: &[String]) -> Result<Vec<u32>, String> {
    if values.len() == 1 && values[0] == "none" {
        return Ok(Vec::new());
    }
    values
        .iter()
        .map(|v| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("--budgets: {v:?} is not a token count (or `none`)"))
        })
        .collect()
}

/// The first warnings in full, then, when there were more, every kind with its count (all of
/// them, also those past the ones an import keeps).
fn print_warnings(result: &Import) {
    const SHOWN: usize = 10;
    for w in result.warnings.iter().take(SHOWN) {
        eprintln!("warning: {w}");
    }
    if result.warning_count > SHOWN {
        eprintln!(
            "warning: {} warning(s) in all, by kind:",
            result.warning_count
        );
        let mut kinds: Vec<(&String, &usize)> = result.warning_kinds.iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (kind, n) in kinds {
            eprintln!("warning: {n:>7} x {kind}");
        }
    }
}

fn chunk_rows(trace: &Trace) -> Vec<ChunkRow<'_>> {
    trace
        .chunks
        .iter()
        .map(|c| ChunkRow {
            key: &c.key,
            category: c.category,
            content_tokens: c.content_tokens,
            tokens: c.tokens,
            content: &c.content,
        })
        .collect()
}

fn print_json(
    imports: &[(String, Import)],
    errors: &[String],
    table: &PriceTable,
    top: usize,
    chunks: bool,
    calls: bool,
) -> Result<(), String> {
    let mut out = JsonOut {
        traces: Vec::new(),
        warnings: Vec::new(),
        warning_count: 0,
        warning_kinds: Default::default(),
        errors: errors.to_vec(),
        prices_source: format!("{} ({})", table.source, table.retrieved),
    };
    for (name, result) in imports {
        out.warnings
            .extend(result.warnings.iter().map(ToString::to_string));
        out.warning_count += result.warning_count;
        for (kind, n) in &result.warning_kinds {
            *out.warning_kinds.entry(kind.clone()).or_insert(0) += n;
        }
        for trace in &result.traces {
            out.traces.push(TraceOut {
                file: name.clone(),
                summary: summarize(trace, table, top),
                chunk_list: chunks.then(|| chunk_rows(trace)),
                call_list: calls.then(|| calls::rows(trace, &call_changes(trace, table))),
            });
        }
    }
    out::json(&out)
}
