//! The worker's loads: one file, a set of files (a folder, a session and its subagents), a file
//! followed as it grows and the bytes appended to it; and the loaded traces written back out in
//! the native format (exported).

use super::{gunzip, now, payload_bytes, progress, State};
use crate::protocol::Response;
use memlens_core::analysis::trace_entries;
use memlens_core::cost::PriceTable;
use memlens_import::follow::{is_followable, Follower};
use memlens_import::{import, import_many, FileInput, Import, ImportOptions};
use wasm_bindgen::prelude::*;
use web_sys::DedicatedWorkerGlobalScope;

/// A file's name and the model it is counted as (`None`: its own).
type Named = (String, Option<String>);

/// One import of several files' results: their traces in order, each failed file a warning
/// (the set fails only when no file could be read).
fn merge_imports(
    results: Vec<Result<Import, memlens_import::ImportError>>,
) -> Result<(Import, Vec<String>), String> {
    let mut formats: Vec<&'static str> = Vec::new();
    let mut traces = Vec::new();
    let mut warnings = Vec::new();
    let mut warning_count = 0;
    let mut warning_kinds = std::collections::BTreeMap::new();
    let mut failed = Vec::new();
    for result in results {
        match result {
            Ok(i) => {
                if !formats.contains(&i.format) {
                    formats.push(i.format);
                }
                traces.extend(i.traces);
                warnings.extend(i.warnings);
                warning_count += i.warning_count;
                for (kind, n) in i.warning_kinds {
                    *warning_kinds.entry(kind).or_insert(0) += n;
                }
            }
            Err(e) => failed.push(e),
        }
    }
    if formats.is_empty() {
        let all: Vec<String> = failed.iter().map(ToString::to_string).collect();
        return Err(all.join("; "));
    }
    let result = Import {
        format: if formats.len() > 1 {
            "mixed"
        } else {
            formats[0]
        },
        traces,
        warnings,
        warning_count,
        warning_kinds,
    };
    // Files that could not be read are reported as warnings; the error names the file.
    let failed = failed.iter().map(|e| format!("not loaded: {e}")).collect();
    Ok((result, failed))
}

/// Keeps an import's traces and says what was loaded; `failed` lists files of a set that could
/// not be read (shown first among the warnings).
fn loaded(
    scope: &DedicatedWorkerGlobalScope,
    state: &mut State,
    prices: &PriceTable,
    (name, model): (String, Option<String>),
    (result, failed): (Import, Vec<String>),
    size: u64,
    start: f64,
) -> Response {
    progress(scope, "pricing each trace", 85, size);
    let traces = trace_entries(&result.traces, prices);
    state.traces = result.traces;
    state.follower = None;
    state.parsed = None;
    state.model = model;
    state.graphs.clear();
    let warning_count = result.warning_count + failed.len();
    let mut warnings = failed;
    warnings.extend(result.warnings.iter().map(ToString::to_string));
    Response::Loaded {
        name,
        format: result.format.to_string(),
        traces,
        warnings,
        warning_count,
        bytes: size,
        millis: now() - start,
        live: None,
    }
}

/// `Request::Import`: one file (`payload`: a `File`, bytes or text).
pub(super) fn import_file(
    scope: &DedicatedWorkerGlobalScope,
    state: &mut State,
    prices: &PriceTable,
    (name, model): Named,
    payload: &JsValue,
) -> Result<Response, String> {
    let start = now();
    progress(scope, "reading the file", 5, 0);
    let bytes = payload_bytes(payload)?;
    let size = bytes.len() as u64;
    progress(scope, "parsing and counting tokens", 25, size);
    let options = ImportOptions {
        format: None,
        model: model.clone(),
    };
    let result = import(&name, &bytes, &options).map_err(|e| e.to_string())?;
    drop(bytes);
    let result = (result, Vec::new());
    Ok(loaded(
        scope,
        state,
        prices,
        (name, model),
        result,
        size,
        start,
    ))
}

/// `Request::ImportFiles`: files imported as one set (`payload`: an array of them, gzipped ones
/// already decompressed by `gunzip`).
pub(super) fn import_files(
    scope: &DedicatedWorkerGlobalScope,
    state: &mut State,
    prices: &PriceTable,
    (names, model): (Vec<String>, Option<String>),
    payload: &JsValue,
) -> Result<Response, String> {
    let start = now();
    let items = js_sys::Array::from(payload);
    if items.length() as usize != names.len() || names.is_empty() {
        return Err(format!(
            "{} file name(s) for {} file(s)",
            names.len(),
            items.length()
        ));
    }
    let gunzip::SetRead {
        files: contents,
        failed,
    } = gunzip::read_set(scope, &names, &items)?;
    let size: u64 = contents.iter().map(|(_, b)| b.len() as u64).sum();
    progress(scope, "parsing and counting tokens", 25, size);
    let files: Vec<FileInput<'_>> = contents
        .iter()
        .map(|(name, bytes)| FileInput { name, bytes })
        .collect();
    let options = ImportOptions {
        format: None,
        model: model.clone(),
    };
    let mut results = import_many(&files, &options);
    drop(files);
    drop(contents);
    // Gzipped files that did not decompress: not loaded, like those that did not import.
    results.extend(failed.into_iter().map(Err));
    let result = merge_imports(results)?;
    let label = if names.len() == 1 {
        names[0].clone()
    } else {
        format!("{} files", names.len())
    };
    Ok(loaded(
        scope,
        state,
        prices,
        (label, model),
        result,
        size,
        start,
    ))
}

/// `Request::Follow`: a file to follow as it grows, read now (again, if `refresh`): JSON Lines
/// formats incrementally from here on, others whole at every change.
pub(super) fn follow(
    scope: &DedicatedWorkerGlobalScope,
    state: &mut State,
    prices: &PriceTable,
    (name, model): Named,
    refresh: bool,
    payload: &JsValue,
) -> Result<Response, String> {
    let start = now();
    let bytes = payload_bytes(payload)?;
    let size = bytes.len() as u64;
    let parsed = if refresh {
        state.parsed.unwrap_or(0)
    } else {
        0
    } + size;
    let options = ImportOptions {
        format: None,
        model: model.clone(),
    };
    if is_followable(&bytes[..bytes.len().min(1 << 16)]) {
        let mut follower = Follower::new(&name, &options);
        follower.push(&bytes).map_err(|e| e.to_string())?;
        drop(bytes);
        let (warnings, warning_count) = follower.warnings();
        let warnings = warnings.iter().map(ToString::to_string).collect();
        let traces = trace_entries(follower.traces(), prices);
        let format = follower.format().unwrap_or("memlens");
        state.traces = Vec::new();
        state.follower = Some(follower);
        state.model = model;
        state.graphs.clear();
        state.parsed = Some(parsed);
        Ok(Response::Loaded {
            name,
            format: format.into(),
            traces,
            warnings,
            warning_count,
            bytes: size,
            millis: now() - start,
            live: state.live(size),
        })
    } else {
        let result = import(&name, &bytes, &options).map_err(|e| e.to_string())?;
        drop(bytes);
        let mut response = loaded(
            scope,
            state,
            prices,
            (name, model),
            (result, Vec::new()),
            size,
            start,
        );
        state.parsed = Some(parsed);
        if let Response::Loaded { live, .. } = &mut response {
            *live = state.live(size);
        }
        Ok(response)
    }
}

/// `Request::Append`: the bytes appended to the followed file.
pub(super) fn append(
    state: &mut State,
    prices: &PriceTable,
    payload: &JsValue,
) -> Result<Response, String> {
    let start = now();
    let bytes = payload_bytes(payload)?;
    let follower = state
        .follower
        .as_mut()
        .ok_or("no file is being followed incrementally")?;
    let update = follower.push(&bytes).map_err(|e| e.to_string())?;
    let (warnings, warning_count) = follower.warnings();
    let warnings = warnings.iter().map(ToString::to_string).collect();
    let traces = trace_entries(follower.traces(), prices);
    for index in &update.changed {
        state.graphs.remove(index);
    }
    state.parsed = Some(state.parsed.unwrap_or(0) + bytes.len() as u64);
    let live = state.live(0).ok_or("not following a file")?;
    Ok(Response::Appended {
        traces,
        changed: update.changed,
        records: update.records,
        live,
        warnings,
        warning_count,
        millis: now() - start,
    })
}

/// `Request::Export`: the loaded traces in the native format, secrets replaced if `redact`.
pub(super) fn export(state: &State, redact: bool) -> Response {
    if !redact {
        return Response::Exported {
            text: memlens_import::native::write(state.traces()),
            redaction: None,
        };
    }
    // A copy: the loaded traces stay as they are.
    let mut traces = state.traces().to_vec();
    let summary = memlens_core::redact::redact_traces(&mut traces, state.model.as_deref());
    Response::Exported {
        text: memlens_import::native::write(&traces),
        redaction: Some(summary.describe()),
    }
}
