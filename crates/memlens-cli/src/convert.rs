//! `memlens convert`: a trace file in any format read, written as native MemLens JSON Lines
//! (optionally with its secrets redacted).

use crate::atomic::write_atomically;
use crate::input::read;
use crate::problems::print_warnings;
use memlens_import::{import, ImportOptions};
use std::path::Path;
use std::process::ExitCode;

/// Imports `file` (as `format`, counted as `model` when given), redacts it when asked and
/// writes it to `output`.
pub(crate) fn run(
    file: &Path,
    output: &Path,
    format: Option<String>,
    model: Option<String>,
    redact: bool,
) -> Result<ExitCode, String> {
    let bytes = read(file)?;
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
        let summary = memlens_core::redact::redact_traces(&mut result.traces, model.as_deref());
        eprintln!("{}", summary.describe());
    }
    // Atomically: an interrupted convert never leaves half a trace file behind.
    write_atomically(
        output,
        memlens_import::native::write(&result.traces).as_bytes(),
    )?;
    eprintln!(
        "wrote {} trace(s) to {}",
        result.traces.len(),
        output.display()
    );
    Ok(ExitCode::SUCCESS)
}
