//! `memlens inspect`: each file's calls, chunks, tokens by category, reported against counted
//! input tokens, cost and costliest chunks, as tables (`human.rs`) or one JSON document.

use crate::calls;
use crate::human;
use crate::input::{ImportedFiles, Inputs};
use crate::out;
use crate::problems::print_warnings;
use memlens_core::cost::PriceTable;
use memlens_core::diff::call_changes;
use memlens_core::report::{summarize, TraceSummary};
use memlens_core::Trace;
use memlens_import::Import;
use serde::Serialize;
use std::process::ExitCode;

/// Reads the inputs and prints their report: the `top` costliest chunks, with `--json` every
/// chunk (`chunks`) and every call (`calls`) too. Exit status 1 when an input could not be read.
pub(crate) fn run(
    inputs: &Inputs,
    json: bool,
    top: usize,
    chunks: bool,
    calls: bool,
) -> Result<ExitCode, String> {
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
