//! Times import + tokenize of a trace file in-process, the tokenizer already built, and prints
//! one JSON line: `scripts/bench_import.py` compares it with Python tiktoken in the same run.
//!
//! ```text
//! memlens-bench FILE [RUNS]      # import + tokenize timings
//! memlens-bench --memory FILE    # peak resident memory of one import + summary (Linux)
//! ```

use memlens_core::tokens::TokenCounter;
use memlens_import::{import, ImportOptions};
use std::time::Instant;

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut path = args
        .next()
        .ok_or("usage: memlens-bench FILE [RUNS] | --memory FILE")?;
    if path == "--memory" {
        path = args.next().ok_or("usage: memlens-bench --memory FILE")?;
        return peak_memory(&path);
    }
    let runs: usize = args
        .next()
        .map_or(Ok(7), |r| r.parse())
        .map_err(|e| format!("RUNS: {e}"))?;
    let bytes = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let options = ImportOptions {
        model: Some("gpt-4o".into()),
        ..ImportOptions::default()
    };
    let start = Instant::now();
    let _ = TokenCounter::for_model(Some("gpt-4o")).count("warm up");
    let encoder_s = start.elapsed().as_secs_f64();
    let mut times = Vec::with_capacity(runs);
    let mut text_bytes = 0usize;
    let mut tokens = 0u64;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let result = import(&path, &bytes, &options).map_err(|e| e.to_string())?;
        times.push(start.elapsed().as_secs_f64());
        let chunks = result.traces.iter().flat_map(|t| &t.chunks);
        text_bytes = chunks.clone().map(|c| c.content.len()).sum();
        tokens = chunks.map(|c| u64::from(c.content_tokens)).sum();
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "{{\"file_bytes\":{},\"text_bytes\":{text_bytes},\"tokens\":{tokens},\"runs\":{},\"median_s\":{median},\"min_s\":{},\"encoder_build_s\":{encoder_s}}}",
        bytes.len(),
        times.len(),
        times[0]
    );
    Ok(())
}

/// Imports and summarizes `path` once, as `memlens inspect` does, then prints the process' peak
/// resident memory. Read from /proc/self/status (VmHWM), which is reset at exec: unlike the
/// parent's rusage it does not include the memory of whatever spawned this process.
fn peak_memory(path: &str) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let result = import(path, &bytes, &ImportOptions::default()).map_err(|e| e.to_string())?;
    let prices = memlens_core::cost::PriceTable::builtin();
    let summaries: Vec<_> = result
        .traces
        .iter()
        .map(|t| memlens_core::report::summarize(t, &prices, 10))
        .collect();
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("/proc/self/status: {e}"))?;
    let hwm_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no VmHWM in /proc/self/status")?;
    println!(
        "{{\"file_bytes\":{},\"traces\":{},\"peak_rss_bytes\":{}}}",
        bytes.len(),
        summaries.len(),
        hwm_kb * 1024
    );
    Ok(())
}
