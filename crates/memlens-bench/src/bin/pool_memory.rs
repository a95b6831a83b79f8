//! The live pool's memory over a long run: tau-bench messages fed in order as an agent would
//! (the context asked for before every assistant message), with the heap measured exactly by a
//! counting allocator at checkpoints (and the run's time so far: adds, contexts and trace lines).
//! One JSON line per checkpoint.
//!
//! ```text
//! pool_memory POLICY MESSAGES TAU_BENCH_FILE [--no-history] [--trace FILE]
//! ```
//!
//! `--no-history` runs the pool with `keep_history: false`; `--trace FILE` appends the trace
//! lines to FILE after every step, as the npm and Python pools do with a trace file (without it,
//! a pool that does not keep its history releases what it gives up at once).

use cap::Cap;
use memlens_core::policy::PolicyConfig;
use memlens_pool::{Pool, PoolOptions};
use std::alloc::System;
use std::io::Write;

#[path = "../tau_stream.rs"]
mod tau_stream;

#[global_allocator]
static HEAP: Cap<System> = Cap::new(System, usize::MAX);

fn main() -> Result<(), String> {
    let usage = "usage: pool_memory POLICY MESSAGES TAU_BENCH_FILE [--no-history] [--trace FILE]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [policy, messages, file, rest @ ..] = args.as_slice() else {
        return Err(usage.into());
    };
    let messages: usize = messages.parse().map_err(|e| format!("MESSAGES: {e}"))?;
    let mut keep_history = true;
    let mut trace = None;
    let mut rest = rest.iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--no-history" => keep_history = false,
            "--trace" => trace = Some(rest.next().ok_or(usage)?.clone()),
            _ => return Err(usage.into()),
        }
    }
    let (system, stream) = tau_stream::read(file)?;
    let mut out = match &trace {
        Some(path) => Some(std::fs::File::create(path).map_err(|e| format!("{path}: {e}"))?),
        None => None,
    };
    // Everything the run needs before the pool exists (the messages to feed, the vocabulary):
    // the pool's own memory is measured against it.
    let probe = Pool::new(options(policy, true)?).map_err(|e| e.to_string())?;
    drop(probe);
    let base = HEAP.allocated();
    let mut pool = Pool::new(options(policy, keep_history)?).map_err(|e| e.to_string())?;
    let mut append = |pool: &mut Pool| -> Result<(), String> {
        if let Some(f) = out.as_mut() {
            let lines = pool.trace_lines(false).map_err(|e| e.to_string())?;
            f.write_all(lines.as_bytes()).map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    pool.add(system).map_err(|e| e.to_string())?;
    append(&mut pool)?;
    let mut peak = 0usize;
    let start = std::time::Instant::now();
    let mut next_checkpoint = 1000;
    let mut context_tokens = 0u64;
    for i in 0..messages {
        let message = &stream[i % stream.len()];
        if message["role"] == "assistant" {
            let ctx = pool.context(None);
            context_tokens = ctx.tokens;
            append(&mut pool)?;
        }
        pool.add(message.clone()).map_err(|e| e.to_string())?;
        append(&mut pool)?;
        peak = peak.max(HEAP.allocated().saturating_sub(base));
        if i + 1 == next_checkpoint || i + 1 == messages {
            let stats = pool.stats();
            println!(
                "{{\"policy\":\"{policy}\",\"keep_history\":{keep_history},\"trace\":{},\"messages\":{},\"calls\":{},\"heap_bytes\":{},\"peak_heap_bytes\":{peak},\"bytes_per_message\":{:.0},\"context_tokens\":{context_tokens},\"seconds\":{:.2}}}",
                trace.is_some(),
                i + 1,
                stats.calls,
                HEAP.allocated().saturating_sub(base),
                HEAP.allocated().saturating_sub(base) as f64 / (i + 1) as f64,
                start.elapsed().as_secs_f64(),
            );
            next_checkpoint *= 10;
        }
    }
    Ok(())
}

fn options(policy: &str, keep_history: bool) -> Result<PoolOptions, String> {
    Ok(PoolOptions {
        model: Some("gpt-4o".into()),
        budget: 8000,
        policy: PolicyConfig::builtin(policy).map_err(|e| e.to_string())?,
        summarizer: false,
        dialect: None,
        keep_history,
    })
}
