//! Times import + tokenize of a trace file in-process, the tokenizer already built, and prints
//! one JSON line: `scripts/bench/bench_import.py` compares it with Python tiktoken in the same run.
//!
//! ```text
//! memlens-bench FILE [RUNS]      # import + tokenize timings
//! memlens-bench --memory FILE    # peak resident memory of one import + summary (Linux)
//! memlens-bench --engine POLICY HISTORY   # per-turn cost of the policy engine (add + context)
//! memlens-bench --pool POLICY HISTORY FILE # the npm pool natively, fed FILE's tau-bench messages
//! ```
//!
//! `--pool`'s POLICY is a built-in name or a policy file (JSON or TOML, e.g. one `memlens fit`
//! wrote). A turn is one message added and one context; after each, `Pool::prepare` runs (as
//! while an agent waits for the model) and is timed apart: `cpu_mean_us` is the turn's mean
//! plus the preparation's, all the work a turn brings.

use memlens_core::tokens::TokenCounter;
use memlens_import::{import, ImportOptions};
use std::time::Instant;

mod tau_stream;

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut path = args
        .next()
        .ok_or("usage: memlens-bench FILE [RUNS] | --memory FILE")?;
    if path == "--engine" {
        let policy = args
            .next()
            .ok_or("usage: memlens-bench --engine POLICY HISTORY")?;
        let history: u32 = args
            .next()
            .ok_or("usage: memlens-bench --engine POLICY HISTORY")?
            .parse()
            .map_err(|e| format!("HISTORY: {e}"))?;
        return engine_turns(&policy, history);
    }
    if path == "--pool" {
        let usage = "usage: memlens-bench --pool POLICY HISTORY TAU_BENCH_FILE";
        let policy = args.next().ok_or(usage)?;
        let history: usize = args
            .next()
            .ok_or(usage)?
            .parse()
            .map_err(|e| format!("HISTORY: {e}"))?;
        let file = args.next().ok_or(usage)?;
        return pool_turns(&policy, history, &file);
    }
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

/// The synthetic conversation `scripts/bench/bench_engine.py` builds too: a user turn, an assistant
/// turn, and every fourth turn a tool call with its result. Counted with o200k like a real trace.
fn synthetic(i: u32) -> memlens_core::Chunk {
    use memlens_core::{Category, Chunk, ChunkId, ChunkMeta};
    let (category, role, content) = match i % 8 {
        0 | 4 => (Category::User, "user", format!("Customer message {i}: my order ORD{i} has not arrived, please check.")),
        5 => (Category::ToolCall, "assistant", format!("{{\"order_id\": \"ORD{}\"}}", i - 1)),
        6 => (Category::ToolResult, "tool", format!("{{\"order_id\": \"ORD{}\", \"status\": \"in transit\", \"eta\": \"2025-03-{:02}\"}}", i - 2, i % 28 + 1)),
        _ => (Category::Assistant, "assistant", format!("Order ORD{} is in transit and should arrive soon (turn {i}).", i.saturating_sub(1))),
    };
    let tool = matches!(category, Category::ToolCall | Category::ToolResult);
    let counter = TokenCounter::for_model(Some("gpt-4o"));
    let content_tokens = counter.count(&content);
    Chunk {
        id: ChunkId(i + 1),
        key: format!("m{i}"),
        category,
        tokens: content_tokens + 4,
        content_tokens,
        content,
        starts_message: true,
        meta: ChunkMeta {
            role: Some(role.into()),
            tool_call_id: tool.then(|| format!("call_{}", i - i % 8)),
            tool_name: tool.then(|| "lookup_order".to_string()),
            ..ChunkMeta::default()
        },
    }
}

/// Per-turn cost of `add` + `context` with `history` messages already in the pool, budget 8,000:
/// prints one JSON line with the median over 200 turns, in microseconds.
fn engine_turns(policy: &str, history: u32) -> Result<(), String> {
    use memlens_core::policy::{Engine, EngineOptions, PolicyConfig};
    let config = PolicyConfig::builtin(policy).map_err(|e| e.to_string())?;
    let mut engine = Engine::new(
        config,
        EngineOptions {
            budget: 8000,
            input_usd_per_mtok: Some(2.5),
        },
        TokenCounter::for_model(Some("gpt-4o")),
    )
    .map_err(|e| e.to_string())?;
    let mut system = synthetic(0);
    system.id = memlens_core::ChunkId(0);
    system.category = memlens_core::Category::System;
    system.content = "You are a support agent for Acme. Be brief.".into();
    engine.add(&system);
    for i in 1..=history {
        engine.add(&synthetic(i));
        if i % 2 == 0 {
            let _ = engine.context(None);
        }
    }
    let turns: Vec<memlens_core::Chunk> = (history + 1..=history + 200).map(synthetic).collect();
    let mut times = Vec::with_capacity(turns.len());
    for chunk in &turns {
        let start = Instant::now();
        engine.add(chunk);
        let d = engine.context(None);
        times.push(start.elapsed().as_secs_f64() * 1e6);
        std::hint::black_box(d.tokens);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{{\"policy\":\"{policy}\",\"history\":{history},\"median_us\":{}}}",
        times[times.len() / 2]
    );
    Ok(())
}

/// Per-turn cost of the npm package's pool natively (`add` of a message object + `context`),
/// fed the tau-bench messages in order like `scripts/bench/bench_npm.mjs`: one JSON line, the mean over 300
/// turns in microseconds (and without the first), the median (as `scripts/bench/bench_npm.mjs` reports), the
/// 99th percentile and the slowest. The difference to the Node figure is the wasm and JS boundary.
fn pool_turns(policy: &str, history: usize, file: &str) -> Result<(), String> {
    use memlens_core::policy::PolicyConfig;
    use memlens_pool::{Pool, PoolOptions};
    let (system, stream) = tau_stream::read(file)?;
    let mut pool = Pool::new(PoolOptions {
        model: Some("gpt-4o".into()),
        budget: 8000,
        policy: if std::path::Path::new(policy).is_file() {
            let text = std::fs::read_to_string(policy).map_err(|e| format!("{policy}: {e}"))?;
            PolicyConfig::parse(&text).map_err(|e| format!("{policy}: {e}"))?
        } else {
            PolicyConfig::builtin(policy).map_err(|e| e.to_string())?
        },
        summarizer: false,
        dialect: None,
        keep_history: true,
    })
    .map_err(|e| e.to_string())?;
    pool.add(system).map_err(|e| e.to_string())?;
    let mut i = 0;
    while i < history {
        pool.add(stream[i % stream.len()].clone())
            .map_err(|e| e.to_string())?;
        i += 1;
    }
    pool.context(None);
    let turns: usize = std::env::var("MEMLENS_BENCH_TURNS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(300);
    let mut times = Vec::with_capacity(turns);
    // Each turn's add and context apart, with the chunks the pool holds after it: the slowest
    // turns are listed (to stderr) to tell a one-off (a table growing) from a steady cost.
    let mut turns_seen: Vec<(f64, f64, u32)> = Vec::with_capacity(turns);
    // How many messages the context held, on average: the per-turn cost follows it (ranking and
    // rendering walk the context), and at the same budget it differs with the history's content.
    let mut context_messages = 0usize;
    // What the pool does while the agent waits for the model (`Pool::prepare`, as the npm
    // package calls it after each context): timed apart, since no turn waits for it.
    let mut prepare = Vec::with_capacity(turns);
    for _ in 0..turns {
        let message = stream[i % stream.len()].clone();
        let start = Instant::now();
        pool.add(message).map_err(|e| e.to_string())?;
        let added = start.elapsed().as_secs_f64() * 1e6;
        let context = pool.context(None);
        context_messages += context.items.len();
        std::hint::black_box(context.tokens);
        let total = start.elapsed().as_secs_f64() * 1e6;
        times.push(total);
        turns_seen.push((added, total - added, pool.stats().chunks));
        let start = Instant::now();
        pool.prepare();
        prepare.push(start.elapsed().as_secs_f64() * 1e6);
        i += 1;
    }
    let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
    let prepare_mean = prepare.iter().sum::<f64>() / prepare.len().max(1) as f64;
    prepare.sort_by(f64::total_cmp);
    let prepare_median = prepare.get(prepare.len() / 2).copied().unwrap_or(0.0);
    // The first turn after the history was added in one go pays for the first eviction of
    // nearly all of it (its items compacted away): a one-off a live agent never sees.
    let rest = &times[1.min(times.len())..];
    let mean_after_first = rest.iter().sum::<f64>() / rest.len().max(1) as f64;
    let mut slowest: Vec<usize> = (0..turns_seen.len()).collect();
    slowest.sort_by(|&a, &b| times[b].total_cmp(&times[a]));
    for &t in slowest.iter().take(5) {
        let (add, context, chunks) = turns_seen[t];
        eprintln!(
            "slow turn {t}: add {add:.0} µs, context {context:.0} µs, {chunks} chunks after it"
        );
    }
    // The median of each half apart: where a turn's time goes (adding the message: counting,
    // analysis, indexes; or deciding the context).
    let median_of = |part: fn(&(f64, f64, u32)) -> f64| {
        let mut v: Vec<f64> = turns_seen.iter().map(part).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let (add_median, context_median) = (median_of(|t| t.0), median_of(|t| t.1));
    times.sort_by(f64::total_cmp);
    let at = |q: f64| {
        times
            .get(((times.len() as f64 * q) as usize).min(times.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
    println!(
        "{{\"policy\":\"{policy}\",\"history\":{history},\"mean_us\":{mean:.1},\"mean_after_first_us\":{mean_after_first:.1},\"median_us\":{:.1},\"p99_us\":{:.1},\"max_us\":{:.1},\"context_messages_mean\":{:.1},\"add_median_us\":{add_median:.1},\"context_median_us\":{context_median:.1},\"prepare_median_us\":{prepare_median:.1},\"prepare_mean_us\":{prepare_mean:.1},\"cpu_mean_us\":{:.1}}}",
        at(0.5),
        at(0.99),
        at(1.0),
        context_messages as f64 / turns.max(1) as f64,
        mean + prepare_mean
    );
    Ok(())
}
