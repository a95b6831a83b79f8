//! Gzipped trace files (`x.traj.json.gz`, `x.jsonl.gz`), named or in a folder, read as their
//! plain copies do; a broken or oversized one is an error naming it (the fixtures are
//! tests/fixtures/web/*.gz, gzipped copies of tests/fixtures/{mini-swe-agent,openai} files).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
}

/// Each gzipped fixture and the file it is a copy of.
const PAIRS: [(&str, &str); 2] = [
    (
        "web/v2-toolcall.traj.json.gz",
        "mini-swe-agent/v2-toolcall.traj.json",
    ),
    ("web/cache-breaks.jsonl.gz", "openai/cache-breaks.jsonl"),
];

fn memlens(args: &[&str], max_input_bytes: Option<u64>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_memlens"));
    command.args(args);
    if let Some(n) = max_input_bytes {
        command.env("MEMLENS_MAX_INPUT_BYTES", n.to_string());
    }
    command.output().expect("run memlens")
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `inspect --json`'s traces, less the file names (which differ by `.gz`).
fn figures(paths: &[&Path]) -> Vec<Value> {
    let mut args = vec!["inspect", "--json"];
    args.extend(paths.iter().map(|p| path_str(p)));
    let o = memlens(&args, None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let mut traces = v["traces"].as_array().expect("traces").clone();
    for t in &mut traces {
        t.as_object_mut().expect("a trace").remove("file");
    }
    assert!(!traces.is_empty());
    traces
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memlens-gz-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A folder of the gzipped fixtures (and a gzipped sidecar, which is not a trace), and one of
/// their plain copies.
fn folders(name: &str) -> (PathBuf, PathBuf) {
    let (gz, plain) = (
        scratch(&format!("{name}-gz")),
        scratch(&format!("{name}-plain")),
    );
    for (packed, original) in PAIRS {
        let file = |p: &str| Path::new(p).file_name().expect("a file name").to_owned();
        std::fs::copy(fixture(packed), gz.join(file(packed))).expect("copy");
        std::fs::copy(fixture(original), plain.join(file(original))).expect("copy");
    }
    // Claude Code's sidecar, gzipped with the rest: still skipped (read, it would fail).
    std::fs::copy(
        fixture("web/cache-breaks.jsonl.gz"),
        gz.join("agent-1.meta.json.gz"),
    )
    .expect("copy");
    (gz, plain)
}

#[test]
fn a_gzipped_file_gives_the_figures_of_its_plain_copy() {
    for (packed, original) in PAIRS {
        assert_eq!(
            figures(&[&fixture(packed)]),
            figures(&[&fixture(original)]),
            "{packed}"
        );
    }
}

#[test]
fn a_folder_of_gzipped_files_gives_the_figures_of_the_plain_folder() {
    let (gz, plain) = folders("folder");
    let traces = figures(&[&gz]);
    assert_eq!(traces.len(), 2);
    assert_eq!(traces, figures(&[&plain]));
    let _ = std::fs::remove_dir_all(gz);
    let _ = std::fs::remove_dir_all(plain);
}

#[test]
fn a_truncated_gzip_file_is_named_and_the_others_still_read() {
    let (dir, plain) = folders("truncated");
    let whole = std::fs::read(fixture("web/v2-toolcall.traj.json.gz")).expect("fixture");
    let cut = dir.join("cut.traj.json.gz");
    std::fs::write(&cut, &whole[..whole.len() / 2]).expect("write");
    // In a folder: named among the errors, the other files read, exit status 1.
    let o = memlens(&["inspect", "--json", path_str(&dir)], None);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(v["traces"].as_array().map(Vec::len), Some(2));
    let errors = v["errors"].to_string();
    assert!(errors.contains("cut.traj.json.gz"), "{errors}");
    assert!(errors.contains("corrupt or truncated"), "{errors}");
    // Alone: the same one-line error as any unreadable trace file (malformed/truncated.json),
    // no panic, and never a hang on the missing end.
    let o = memlens(&["inspect", path_str(&cut)], None);
    let plain_truncated = memlens(
        &["inspect", path_str(&fixture("malformed/truncated.json"))],
        None,
    );
    assert_eq!(o.status.code(), plain_truncated.status.code());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("memlens: error: {}: ", cut.display())),
        "{stderr}"
    );
    // A command that reads one file exits 2 on it, as on any unreadable file.
    let out = dir.join("out.jsonl");
    let o = memlens(&["convert", path_str(&cut), "-o", path_str(&out)], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cut.traj.json.gz"));
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(plain);
}

/// The memory limit holds for what a file decompresses to, not only its size on disk: a small
/// file that inflates past it (a gzip bomb, here a limit between the two sizes) is refused.
#[test]
fn a_gzip_file_that_decompresses_past_the_limit_is_refused() {
    let (packed, original) = PAIRS[1];
    let on_disk = std::fs::metadata(fixture(packed)).expect("fixture").len();
    let inflated = std::fs::metadata(fixture(original)).expect("fixture").len();
    assert!(on_disk < inflated);
    let limit = Some((on_disk + inflated) / 2);
    let o = memlens(&["inspect", path_str(&fixture(packed))], limit);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("cache-breaks.jsonl.gz: decompressed, it is more than this machine"),
        "{stderr}"
    );
    assert!(stderr.contains("MEMLENS_MAX_INPUT_BYTES"), "{stderr}");
    // The plain copy is refused by its size alone; within the limit the gzipped file reads.
    let o = memlens(&["inspect", path_str(&fixture(original))], limit);
    assert_eq!(o.status.code(), Some(1));
    let o = memlens(&["inspect", path_str(&fixture(packed))], Some(inflated));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The real set (../shared, beside the repository; skipped where it is absent): a folder of 99
/// gzipped mini-swe-agent runs reads as 99 traces, none failing.
#[test]
fn the_gzipped_mini_swe_agent_folder_reads_as_99_traces() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/traces/mini-swe-agent-deepseek");
    if !dir.is_dir() {
        eprintln!("skipped: {} is absent", dir.display());
        return;
    }
    let o = memlens(&["inspect", "--json", path_str(&dir)], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(v["traces"].as_array().map(Vec::len), Some(99));
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(0));
}
