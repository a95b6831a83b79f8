//! `memlens export-columns`: the per-trace, per-call and per-chunk tables (memlens-columns) as
//! Parquet files, for DuckDB, Polars, ClickHouse or a warehouse; and `memlens
//! labels-from-hindsight`'s table, as Parquet or CSV.

use crate::atomic::write_atomically;
use crate::input::{ImportedFiles, Inputs};
use crate::out::{self, outln};
use crate::problems::report_unreadable;
use crate::sim::resolve_policies;
use arrow_array::RecordBatch;
use memlens_columns::{simulations, Tables};

use memlens_core::policy::PolicyConfig;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `memlens export-columns`: writes the tables (with `policies` named on the command line
/// replayed at `budgets`, when given), then lists each file written with its rows.
pub(crate) fn export_cmd(
    inputs: &Inputs,
    output: &Path,
    policies: &[String],
    budgets: &[u32],
) -> Result<ExitCode, String> {
    let policies = resolve_policies(policies, &[])?;
    let written = export(inputs, output, &policies, budgets)?;
    let code = report_unreadable(&written.errors);
    for (path, rows) in &written.files {
        outln!("{}: {rows} row(s)", path.display());
    }
    Ok(code)
}

/// `memlens labels-from-hindsight`: the labels written to `output` (and its rows listed), or
/// printed as CSV.
pub(crate) fn labels_cmd(inputs: &Inputs, output: Option<&Path>) -> Result<ExitCode, String> {
    let labels = hindsight_labels(inputs, output)?;
    let code = report_unreadable(&labels.errors);
    match output {
        Some(path) => outln!("{}: {} row(s)", path.display(), labels.rows),
        None => out::bytes(&labels.csv),
    }
    Ok(code)
}

/// What was written: the files and their row counts, and the inputs that could not be read.
struct Written {
    pub files: Vec<(PathBuf, usize)>,
    pub errors: Vec<String>,
}

/// Imports the inputs, builds the tables and writes `<output>/{traces,calls,chunks}.parquet`,
/// and `simulations.parquet` when policies and budgets are given. Each file is written to a
/// temporary name and renamed, so a reader never sees half a file.
fn export(
    inputs: &Inputs,
    output: &Path,
    policies: &[PolicyConfig],
    budgets: &[u32],
) -> Result<Written, String> {
    let (table, ImportedFiles { imports, errors }) = inputs.read()?;
    if imports.is_empty() {
        return Err(format!("no trace could be read: {}", errors.join("; ")));
    }
    let traces = || {
        imports
            .iter()
            .flat_map(|(name, i)| i.traces.iter().map(move |t| (name.as_str(), t)))
    };
    let tables =
        Tables::build(traces(), &table).map_err(|e| format!("building the tables: {e}"))?;
    let mut batches: Vec<(&str, RecordBatch)> = tables
        .batches()
        .into_iter()
        .map(|(name, batch)| (name, batch.clone()))
        .collect();
    if !policies.is_empty() && !budgets.is_empty() {
        let batch = simulations(traces(), policies, budgets, &table).map_err(|e| e.to_string())?;
        batches.push(("simulations", batch));
    }
    std::fs::create_dir_all(output).map_err(|e| format!("{}: {e}", output.display()))?;
    let mut written = Vec::new();
    for (name, batch) in &batches {
        let path = output.join(format!("{name}.parquet"));
        write_atomically(
            &path,
            &parquet_bytes(batch).map_err(|e| format!("{}: {e}", path.display()))?,
        )?;
        written.push((path, batch.num_rows()));
    }
    Ok(Written {
        files: written,
        errors,
    })
}

/// One batch as a Parquet file (Snappy-compressed pages).
fn parquet_bytes(batch: &RecordBatch) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(properties))?;
    writer.write(batch)?;
    writer.into_inner()
}

/// `labels-from-hindsight`'s result: the CSV text when no file was asked for, the rows written,
/// and the inputs that could not be read.
struct Labels {
    pub csv: Vec<u8>,
    pub rows: usize,
    pub errors: Vec<String>,
}

/// Imports the inputs and makes their hindsight labels table: written to `output` (Parquet for
/// a `.parquet` name, CSV otherwise; atomically), or returned as CSV text.
fn hindsight_labels(inputs: &Inputs, output: Option<&Path>) -> Result<Labels, String> {
    let (_, ImportedFiles { imports, errors }) = inputs.read()?;
    if imports.is_empty() {
        return Err(format!("no trace could be read: {}", errors.join("; ")));
    }
    let traces = imports
        .iter()
        .flat_map(|(name, i)| i.traces.iter().map(move |t| (name.as_str(), t)));
    let batch = memlens_columns::hindsight_labels(traces)
        .map_err(|e| format!("building the labels: {e}"))?;
    let parquet = output.is_some_and(|p| p.extension().is_some_and(|e| e == "parquet"));
    let bytes = if parquet {
        parquet_bytes(&batch).map_err(|e| e.to_string())
    } else {
        csv_bytes(&batch).map_err(|e| e.to_string())
    };
    let bytes = bytes.map_err(|e| format!("writing the labels: {e}"))?;
    let rows = batch.num_rows();
    match output {
        Some(path) => {
            write_atomically(path, &bytes)?;
            Ok(Labels {
                csv: Vec::new(),
                rows,
                errors,
            })
        }
        None => Ok(Labels {
            csv: bytes,
            rows,
            errors,
        }),
    }
}

/// One batch as CSV with a header row (nulls as empty fields).
fn csv_bytes(batch: &RecordBatch) -> Result<Vec<u8>, arrow_schema::ArrowError> {
    let mut writer = arrow_csv::WriterBuilder::new()
        .with_header(true)
        .build(Vec::new());
    writer.write(batch)?;
    Ok(writer.into_inner())
}
