//! The tables for hosts that speak Arrow (the Python package, and through it Spark's
//! `mapInArrow`): a batch of trace files in, the tables out, both as Arrow IPC streams, so a host
//! hands over a whole batch at once and no row becomes a host object.

use crate::{simulations, ColumnsError, Tables, Wanted};
use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch, StringArray};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{ArrowError, DataType, Field, Schema};
use arrow_select::concat::concat_batches;
use memlens_core::cost::PriceTable;
use memlens_core::policy::PolicyConfig;
use memlens_core::Trace;
use memlens_import::{import, ImportOptions};
use std::sync::Arc;

/// What to make of the input batch.
#[derive(Debug, Clone, Default)]
pub struct IpcRequest {
    /// Read every file as this format (`None`: sniffed, as the CLI does).
    pub format: Option<String>,
    /// Count and price as this model.
    pub model: Option<String>,
    /// With `budgets`: also the simulations table.
    pub policies: Vec<PolicyConfig>,
    /// Budgets for the simulations table.
    pub budgets: Vec<u32>,
    /// The tables to make, by name (`traces`, `calls`, `chunks`, `simulations`); empty: the
    /// three of [`TABLE_NAMES`], and `simulations` when policies and budgets are given. A host
    /// that wants one table names it: the per-trace table alone costs what `memlens inspect`
    /// does, simulations alone need no analysis. `errors` always comes back.
    pub tables: Vec<String>,
}

impl IpcRequest {
    /// The tables asked for: the three, and whether to simulate.
    fn wanted(&self) -> Result<(Wanted, bool), ColumnsError> {
        let can_simulate = !self.policies.is_empty() && !self.budgets.is_empty();
        if self.tables.is_empty() {
            return Ok((Wanted::ALL, can_simulate));
        }
        let (mut wanted, mut simulate) = (Wanted::NONE, false);
        for name in &self.tables {
            match name.as_str() {
                "traces" => wanted.traces = true,
                "calls" => wanted.calls = true,
                "chunks" => wanted.chunks = true,
                "errors" => {}
                "simulations" if can_simulate => simulate = true,
                "simulations" => {
                    return Err(input_error(
                        "the simulations table needs at least one policy and one budget",
                    ))
                }
                other => {
                    return Err(input_error(&format!(
                        "no table `{other}`: one of traces, calls, chunks, simulations, errors"
                    )))
                }
            }
        }
        Ok((wanted, simulate))
    }
}

/// The input: an Arrow IPC stream whose batches have a `trace` column (the file's bytes, binary
/// or string) and a `name` column (string, the `source` of its rows). Returns the tables as Arrow
/// IPC streams, by name, in this order: those of `traces`, `calls`, `chunks` and `simulations`
/// that were asked for ([`IpcRequest::tables`]) and `errors` (`source`, `error`: the inputs that
/// could not be read; the others still are).
pub fn tables_from_ipc(
    input: &[u8],
    request: &IpcRequest,
    prices: &PriceTable,
) -> Result<Vec<(&'static str, Vec<u8>)>, ColumnsError> {
    let (wanted, simulate) = request.wanted()?;
    let reader = StreamReader::try_new(input, None)?;
    let options = ImportOptions {
        format: request.format.clone(),
        model: request.model.clone(),
    };
    let mut slices = Slices {
        wanted,
        simulate,
        request,
        prices,
        pending: Vec::new(),
        pending_traces: 0,
        parts: Default::default(),
    };
    let mut errors: (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for batch in reader {
        let batch = batch?;
        let names = string_column(&batch, "name")?;
        let traces = batch
            .column_by_name("trace")
            .ok_or_else(|| input_error("no `trace` column"))?;
        for row in 0..batch.num_rows() {
            let name = names.value(row).to_string();
            // Read from the batch in place: the files are not copied before they are imported.
            let bytes: &[u8] = match traces.data_type() {
                _ if traces.is_null(row) => &[],
                DataType::Binary => traces.as_binary::<i32>().value(row),
                DataType::LargeBinary => traces.as_binary::<i64>().value(row),
                DataType::Utf8 => traces.as_string::<i32>().value(row).as_bytes(),
                DataType::LargeUtf8 => traces.as_string::<i64>().value(row).as_bytes(),
                other => {
                    return Err(input_error(&format!(
                        "`trace` is {other}, not binary or string"
                    )))
                }
            };
            match import(&name, bytes, &options) {
                Ok(i) => slices.push(name, i.traces)?,
                Err(e) => {
                    errors.0.push(name);
                    errors.1.push(e.to_string());
                }
            }
        }
    }
    // The last slice, also when empty: every table asked for then has its schema.
    slices.flush()?;
    let mut out = Vec::new();
    let names = ["traces", "calls", "chunks", "simulations"];
    let asked = [wanted.traces, wanted.calls, wanted.chunks, simulate];
    for ((name, parts), asked) in names.into_iter().zip(&slices.parts).zip(asked) {
        if asked {
            let schema = parts
                .first()
                .map(RecordBatch::schema)
                .ok_or_else(|| input_error("a table asked for was not built"))?;
            out.push((name, stream(&concat_batches(&schema, parts)?)?));
        }
    }
    let schema = Schema::new(vec![
        Field::new("source", DataType::Utf8, false),
        Field::new("error", DataType::Utf8, false),
    ]);
    let errors = RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(StringArray::from(errors.0)),
            Arc::new(StringArray::from(errors.1)),
        ],
    )?;
    out.push(("errors", stream(&errors)?));
    Ok(out)
}

/// Imported traces this many at a time: their tables are built and the traces dropped slice by
/// slice, so a worker holds at most a slice of imported traces (several times their files' size)
/// beside the input batch, however many rows Spark puts in a batch.
const SLICE_TRACES: usize = 256;

/// The tables built so far, and the imported traces not yet in them.
struct Slices<'r> {
    wanted: Wanted,
    simulate: bool,
    request: &'r IpcRequest,
    prices: &'r PriceTable,
    pending: Vec<(String, Vec<Trace>)>,
    pending_traces: usize,
    /// Per table (traces, calls, chunks, simulations): one batch per slice.
    parts: [Vec<RecordBatch>; 4],
}

impl Slices<'_> {
    fn push(&mut self, name: String, traces: Vec<Trace>) -> Result<(), ColumnsError> {
        self.pending_traces += traces.len();
        self.pending.push((name, traces));
        if self.pending_traces >= SLICE_TRACES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ColumnsError> {
        let pending = std::mem::take(&mut self.pending);
        self.pending_traces = 0;
        let rows = || {
            pending
                .iter()
                .flat_map(|(name, traces)| traces.iter().map(move |t| (name.as_str(), t)))
        };
        if self.wanted.any() {
            let tables = Tables::build_only(rows(), self.prices, self.wanted)?;
            self.parts[0].push(tables.traces);
            self.parts[1].push(tables.calls);
            self.parts[2].push(tables.chunks);
        }
        if self.simulate {
            let batch = simulations(
                rows(),
                &self.request.policies,
                &self.request.budgets,
                self.prices,
            )?;
            self.parts[3].push(batch);
        }
        Ok(())
    }
}

fn input_error(what: &str) -> ColumnsError {
    ColumnsError::Input(what.to_string())
}

fn string_column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a StringArray, ColumnsError> {
    batch
        .column_by_name(name)
        .ok_or_else(|| input_error(&format!("no `{name}` column")))?
        .as_string_opt::<i32>()
        .ok_or_else(|| input_error(&format!("`{name}` is not a string column")))
}

/// One batch as an Arrow IPC stream.
fn stream(batch: &RecordBatch) -> Result<Vec<u8>, ArrowError> {
    let mut writer = StreamWriter::try_new(Vec::new(), &batch.schema())?;
    writer.write(batch)?;
    writer.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::BinaryArray;

    fn read(stream: &[u8]) -> Vec<RecordBatch> {
        StreamReader::try_new(stream, None)
            .expect("an IPC stream")
            .map(|b| b.expect("a batch"))
            .collect()
    }

    #[test]
    fn a_batch_of_files_gives_the_tables_and_the_files_that_failed() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/");
        let names = [
            "anthropic/log.jsonl",
            "tau-bench/two-trajectories.json",
            "malformed/truncated.json",
        ];
        let files: Vec<Vec<u8>> = names
            .iter()
            .map(|n| std::fs::read(format!("{root}{n}")).expect("fixture"))
            .collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8, false),
            Field::new("trace", DataType::Binary, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(names.to_vec())),
                Arc::new(BinaryArray::from_iter_values(files.iter())),
            ],
        )
        .expect("a batch");
        let input = stream(&batch).expect("an input stream");
        let policies = vec![PolicyConfig::builtin("window").expect("built in")];
        let request = IpcRequest {
            policies,
            budgets: vec![500, 2000],
            ..IpcRequest::default()
        };
        let prices = PriceTable::builtin();
        let out = tables_from_ipc(&input, &request, &prices).expect("tables");
        let names_out: Vec<&str> = out.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names_out,
            ["traces", "calls", "chunks", "simulations", "errors"]
        );

        // The same tables as built directly from the files that import.
        let imported: Vec<(&str, Vec<Trace>)> = names[..2]
            .iter()
            .zip(&files)
            .map(|(n, f)| {
                (
                    *n,
                    import(n, f, &ImportOptions::default())
                        .expect("imports")
                        .traces,
                )
            })
            .collect();
        let rows = || {
            imported
                .iter()
                .flat_map(|(n, ts)| ts.iter().map(move |t| (*n, t)))
        };
        let direct = Tables::build(rows(), &prices).expect("tables");
        for ((name, bytes), (_, want)) in out.iter().zip(direct.batches()) {
            assert_eq!(read(bytes), vec![want.clone()], "{name}");
        }
        let sims = read(&out[3].1);
        let want = simulations(rows(), &request.policies, &request.budgets, &prices).expect("sims");
        assert_eq!(sims, vec![want]);
        let errors = read(&out[4].1);
        assert_eq!(errors[0].num_rows(), 1);
        let source = errors[0].column(0).as_string::<i32>().value(0).to_string();
        let error = errors[0].column(1).as_string::<i32>().value(0).to_string();
        assert_eq!(source, "malformed/truncated.json");
        assert!(error.contains("truncated.json"), "{error}");

        // One table asked for: that table (the same rows) and the errors, nothing else.
        for (i, table) in ["traces", "calls", "chunks", "simulations"]
            .iter()
            .enumerate()
        {
            let one = IpcRequest {
                tables: vec![table.to_string()],
                ..request.clone()
            };
            let got = tables_from_ipc(&input, &one, &prices).expect("tables");
            let names: Vec<&str> = got.iter().map(|(n, _)| *n).collect();
            assert_eq!(names, [*table, "errors"]);
            assert_eq!(read(&got[0].1), read(&out[i].1), "{table}");
        }
        let unknown = IpcRequest {
            tables: vec!["sessions".to_string()],
            ..request.clone()
        };
        let e = tables_from_ipc(&input, &unknown, &prices).expect_err("refused");
        assert!(e.to_string().contains("no table `sessions`"), "{e}");
        let no_policy = IpcRequest {
            tables: vec!["simulations".to_string()],
            ..IpcRequest::default()
        };
        let e = tables_from_ipc(&input, &no_policy, &prices).expect_err("refused");
        assert!(e.to_string().contains("needs at least one policy"), "{e}");

        // A batch without the columns: an error that says which.
        let wrong = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("name", DataType::Utf8, false)])),
            vec![Arc::new(StringArray::from(vec!["x"]))],
        )
        .expect("a batch");
        let e = tables_from_ipc(&stream(&wrong).expect("stream"), &request, &prices)
            .expect_err("refused");
        assert_eq!(e.to_string(), "input: no `trace` column");
        assert!(tables_from_ipc(b"not arrow", &request, &prices).is_err());
    }

    #[test]
    fn a_batch_larger_than_a_slice_gives_the_same_tables() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/");
        let file =
            std::fs::read(format!("{root}tau-bench/two-trajectories.json")).expect("fixture");
        // 300 files of two trajectories: two slices and a part.
        let names: Vec<String> = (0..300).map(|i| format!("tau-{i}.json")).collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8, false),
            Field::new("trace", DataType::Binary, false),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(names.clone())),
                Arc::new(BinaryArray::from_iter_values(names.iter().map(|_| &file))),
            ],
        )
        .expect("a batch");
        let request = IpcRequest {
            policies: vec![PolicyConfig::builtin("window").expect("built in")],
            budgets: vec![500],
            ..IpcRequest::default()
        };
        let prices = PriceTable::builtin();
        let out =
            tables_from_ipc(&stream(&batch).expect("a stream"), &request, &prices).expect("tables");
        let imported: Vec<(&str, Vec<Trace>)> = names
            .iter()
            .map(|n| {
                let traces = import(n, &file, &ImportOptions::default()).expect("imports");
                (n.as_str(), traces.traces)
            })
            .collect();
        let rows = || {
            imported
                .iter()
                .flat_map(|(n, ts)| ts.iter().map(move |t| (*n, t)))
        };
        assert!(rows().count() > 2 * SLICE_TRACES);
        let direct = Tables::build(rows(), &prices).expect("tables");
        for ((name, bytes), (_, want)) in out.iter().zip(direct.batches()) {
            assert_eq!(read(bytes), vec![want.clone()], "{name}");
        }
        let sims = simulations(rows(), &request.policies, &request.budgets, &prices).expect("sims");
        assert_eq!(read(&out[3].1), vec![sims]);
    }
}
