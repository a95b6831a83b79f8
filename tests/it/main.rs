//! The one integration-test binary: importer fixtures and snapshots, malformed input, properties,
//! and checks on the real data in `../shared/data`.

mod accounting;
mod cjk;
mod coding_runs;
mod diff;
mod evidence;
mod fixtures;
mod follow;
mod import_atif;
mod import_claude_code;
mod import_codex_gemini;
mod import_openhands_swe;
mod import_tracing_exports;
mod policies;
mod pool;
mod properties;
mod real_data;
mod real_files;
mod recall;
mod references;
mod report;
mod tokens;
mod value;

use memlens_core::Trace;
use memlens_import::{import, Import, ImportError, ImportOptions};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Imports a file from disk with default options.
pub fn import_path(path: &Path) -> Result<Import, ImportError> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    import(&name, &bytes, &ImportOptions::default())
}

fn preview(s: &str) -> String {
    memlens_core::report::preview(s, 60)
}

/// A stable, readable rendering of an import for snapshots.
pub fn render(result: &Result<Import, ImportError>) -> String {
    let mut out = String::new();
    let result = match result {
        Err(e) => return format!("error: {e}\n"),
        Ok(r) => r,
    };
    let _ = writeln!(out, "format: {}", result.format);
    for w in &result.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for t in &result.traces {
        render_trace(&mut out, t);
    }
    out
}

fn render_trace(out: &mut String, t: &Trace) {
    let _ = writeln!(out, "\ntrace {} ({}) model={:?}", t.id, t.format, t.model);
    for (k, v) in &t.attributes {
        let _ = writeln!(out, "  attribute {k}={v}");
    }
    if let Some(p) = &t.parent {
        let _ = writeln!(
            out,
            "  parent trace={} call={:?} tool_call_id={:?}",
            p.trace, p.call, p.tool_call_id
        );
    }
    for c in &t.chunks {
        let m = &c.meta;
        let mut meta = Vec::new();
        for (name, v) in [
            ("role", &m.role),
            ("speaker", &m.speaker),
            ("tool", &m.tool_name),
            ("call_id", &m.tool_call_id),
            ("dia", &m.dia_id),
            ("date", &m.session_date),
            ("kind", &m.kind),
        ] {
            if let Some(v) = v {
                meta.push(format!("{name}={v}"));
            }
        }
        if let Some(l) = m.latency_ms {
            meta.push(format!("latency_ms={l}"));
        }
        let _ = writeln!(
            out,
            "  chunk {} {} tokens={}/{} [{}] {:?}",
            c.key,
            c.category,
            c.content_tokens,
            c.tokens,
            meta.join(" "),
            preview(&c.content)
        );
    }
    for call in &t.calls {
        let keys = |ids: &[memlens_core::ChunkId]| {
            ids.iter()
                .map(|&i| t.chunk(i).key.as_str())
                .collect::<Vec<_>>()
                .join(",")
        };
        let _ = writeln!(
            out,
            "  call {} model={:?} in=[{}] out=[{}] usage={:?}",
            call.index,
            call.model,
            keys(&call.input),
            keys(&call.output),
            call.usage
        );
    }
    for p in &t.tool_pairs {
        let key = |id: Option<memlens_core::ChunkId>| {
            id.map_or("-".to_string(), |i| t.chunk(i).key.clone())
        };
        let _ = writeln!(
            out,
            "  pair {} call={} result={}",
            p.id,
            key(p.call),
            key(p.result)
        );
    }
    for p in &t.probes {
        let _ = writeln!(
            out,
            "  probe {:?} answer={:?} evidence={:?} resolved={} category={:?}",
            p.question,
            p.answer,
            p.evidence,
            p.evidence_chunks.len(),
            p.category
        );
    }
    for c in &t.compactions {
        let keys: Vec<&str> = c
            .replaced
            .iter()
            .map(|&i| t.chunk(i).key.as_str())
            .collect();
        let _ = writeln!(
            out,
            "  compaction before_call={} trigger={:?} reported={:?}->{:?} replaced=[{}] summary={}",
            c.first_call,
            c.trigger,
            c.reported_tokens_before,
            c.reported_tokens_after,
            keys.join(","),
            c.summary
                .map_or("-".to_string(), |i| t.chunk(i).key.clone())
        );
    }
}
