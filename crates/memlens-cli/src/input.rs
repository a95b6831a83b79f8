//! Reading the inputs: the arguments naming them, files (gzipped ones decompressed) within the
//! machine's memory, the trace files of a folder, and the price table.

use memlens_core::cost::PriceTable;
use memlens_core::Trace;
use memlens_import::{gzip, import, Import, ImportError, ImportOptions};
use std::path::{Path, PathBuf};

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

/// The built-in price table with the user's overrides.
fn load_prices(path: Option<&Path>) -> Result<PriceTable, String> {
    let mut table = PriceTable::builtin();
    if let Some(path) = path {
        let text = String::from_utf8(read(path)?)
            .map_err(|e| format!("{}: not UTF-8: {e}", path.display()))?;
        let user = PriceTable::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        table.merge(user);
    }
    Ok(table)
}

/// Reads an input file, refusing one larger than the machine can hold (see [`max_input_bytes`])
/// with a message instead of running out of memory. A gzipped file (`x.traj.json.gz`) comes back
/// decompressed, its decompressed size held to the same limit: a gzip bomb is refused too.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let (limit, why) = max_input_bytes();
    let too_large = |what: String| {
        format!(
            "{}: {what} more than this machine can hold to analyze ({}: {why}); \
             set MEMLENS_MAX_INPUT_BYTES to try anyway, or split the file",
            path.display(),
            human_size(limit),
        )
    };
    if size > limit {
        return Err(too_large(format!("{} is", human_size(size))));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !gzip::is_gzip(&bytes) {
        return Ok(bytes);
    }
    match gzip::decompress(&path.display().to_string(), &bytes, limit) {
        Ok(plain) => Ok(plain.into_owned()),
        Err(ImportError::TooLarge { .. }) => Err(too_large("decompressed, it is".into())),
        Err(e) => Err(e.to_string()),
    }
}

/// `n` bytes in MB (rounded up), or in bytes below 1 MB (a limit set that low in a test).
fn human_size(n: u64) -> String {
    if n < 1 << 20 {
        format!("{n} bytes")
    } else {
        format!("{} MB", n.div_ceil(1 << 20))
    }
}

/// The largest input file read, in bytes, and why. Importing takes about three times the file's
/// size in memory (measured: 36 MB of tau-bench JSON peaks at 101 MB over the tokenizer's 58 MB,
/// RELIABILITY.md), so the limit is a third of the memory available when the first file is
/// read (`MemAvailable` in `/proc/meminfo`), 4 GiB where that is not known, or
/// `MEMLENS_MAX_INPUT_BYTES` (the rule is `memlens_import::gzip::limit_for_memory`, which the
/// Python package applies too). Found once per run: a folder of many files reads it once.
fn max_input_bytes() -> (u64, &'static str) {
    static LIMIT: std::sync::OnceLock<(u64, &'static str)> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        gzip::limit_for_memory(
            std::env::var("MEMLENS_MAX_INPUT_BYTES").ok().as_deref(),
            std::fs::read_to_string("/proc/meminfo").ok().as_deref(),
        )
    })
}

/// File extensions read from a directory (a file named on the command line is always read), each
/// also gzipped (`.json.gz`).
const TRACE_EXTENSIONS: [&str; 4] = ["json", "jsonl", "ndjson", "traj"];

/// The files named, with each directory replaced by the trace files under it (recursively, in
/// path order, hidden entries skipped): a Claude Code project folder gives every session and
/// its subagents' files.
pub(crate) fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            let before = out.len();
            walk(path, &mut out)?;
            if out.len() == before {
                return Err(format!(
                    "{}: no trace files (.{}, gzipped or not) in this directory",
                    path.display(),
                    TRACE_EXTENSIONS.join(", .")
                ));
            }
        } else {
            out.push(path.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.'))
        })
        .collect();
    // Each session just before its own folder (`<uuid>.jsonl`, then `<uuid>/subagents/`): a
    // directory sorts by its name and a slash, as the web app orders a dropped folder's paths.
    paths.sort_by_cached_key(|p| {
        let mut key = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if p.is_dir() {
            key.push('/');
        }
        key
    });
    for path in paths {
        if path.is_dir() {
            walk(&path, out)?;
        } else if is_trace_file(&path) {
            out.push(path);
        }
    }
    Ok(())
}

/// Whether a file found in a folder is read as a trace: by its extension, gzipped or not (people
/// archive logs as `x.traj.json.gz`), less the sidecars agents write beside their transcripts
/// (Claude Code's `agent-<id>.meta.json`: the subagent's type and description, not a
/// conversation).
pub(crate) fn is_trace_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let name = name.to_ascii_lowercase();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    !name.ends_with(".meta.json")
        && name
            .rsplit_once('.')
            .is_some_and(|(_, ext)| TRACE_EXTENSIONS.contains(&ext))
}

/// What [`import_files`] read: each file's import by name, and the files that failed.
pub(crate) struct ImportedFiles {
    pub imports: Vec<(String, Import)>,
    pub errors: Vec<String>,
}

/// Reads and imports files one at a time (each file's bytes are dropped once imported), then
/// links traces across them (a subagent's trace to the call of its parent session that started
/// it). Per-file errors are returned beside the imports.
pub(crate) fn import_files(
    paths: &[PathBuf],
    options: &ImportOptions,
) -> Result<ImportedFiles, String> {
    let mut imports: Vec<(String, Import)> = Vec::new();
    let mut errors = Vec::new();
    for path in expand_paths(paths)? {
        let name = path.display().to_string();
        match read(&path).and_then(|b| import(&name, &b, options).map_err(|e| e.to_string())) {
            Ok(result) => imports.push((name, result)),
            Err(e) => errors.push(e),
        }
    }
    let mut traces: Vec<&mut Trace> = imports
        .iter_mut()
        .flat_map(|(_, i)| i.traces.iter_mut())
        .collect();
    memlens_import::link_traces(&mut traces);
    Ok(ImportedFiles { imports, errors })
}

#[cfg(test)]
mod tests {
    use super::is_trace_file;
    use std::path::Path;

    #[test]
    fn gzipped_traces_are_trace_files_and_gzipped_sidecars_are_not() {
        for name in [
            "a.traj.json.gz",
            "s.jsonl.gz",
            "S.JSONL.GZ",
            "x.traj.gz",
            "a.json",
        ] {
            assert!(is_trace_file(Path::new(name)), "{name}");
        }
        for name in [
            "agent-1.meta.json.gz",
            "agent-1.meta.json",
            "notes.txt.gz",
            "a.gz",
        ] {
            assert!(!is_trace_file(Path::new(name)), "{name}");
        }
    }
}
