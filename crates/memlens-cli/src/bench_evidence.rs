//! `memlens bench-evidence LOCOMO.json [--budgets 1000,2000,4000,8000] [--json]`: the evidence
//! benchmark (see `docs/bench-evidence.md` and `memlens_evidence`). Imports the file, runs
//! every strategy of [`builders`] at every budget, times each row, prints the all-evidence rates
//! beside the reference (anchor) numbers.

use crate::input::read;
use crate::out::{out, outln};
use memlens_core::tokens::encoding_for_model;
use memlens_evidence::{
    Benchmark, Bm25, ContextBuilder, Oracle, PolicyBuilder, Recency, Row, ANCHORS, ANCHOR_BUDGETS,
    SCORED_CATEGORIES,
};
use memlens_import::{import, ImportOptions};
use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// The strategies benchmarked, in display order, then the user's own policies (`--policy`: a
/// fitted policy checked on conversations it was not fitted on). Add a strategy (e.g. a MemLens
/// policy wrapped as a `ContextBuilder`) with one line here.
pub fn builders(extra: &[memlens_core::policy::PolicyConfig]) -> Vec<Box<dyn ContextBuilder>> {
    let mut out: Vec<Box<dyn ContextBuilder>> = vec![
        Box::new(Recency),
        Box::new(Bm25::new()),
        Box::new(Bm25::adjacent()),
        Box::new(Oracle),
        // MemLens' policies, replayed through the engine turn by turn, the question as query.
        Box::new(PolicyBuilder::new(policy("window"))),
        Box::new(PolicyBuilder::new(policy("value"))),
        Box::new(PolicyBuilder::new(policy("value-offload"))),
        Box::new(PolicyBuilder::new(policy("recall"))),
        // MemLens recall (memlens_core::recall via memlens_evidence::recall, docs/recall.md) and its ablations.
        Box::new(memlens_evidence::recall::MemLensRecall::new()),
    ];
    out.extend(
        memlens_evidence::recall::MemLensRecall::ablations()
            .into_iter()
            .map(|b| Box::new(b) as Box<dyn ContextBuilder>),
    );
    out.extend(
        extra
            .iter()
            .map(|p| Box::new(PolicyBuilder::new(p.clone())) as Box<dyn ContextBuilder>),
    );
    out
}

fn policy(name: &str) -> memlens_core::policy::PolicyConfig {
    memlens_core::policy::PolicyConfig::builtin(name)
        .expect("the benchmark names built-in policies")
}

/// One row of `--json` output: the core's row plus its speed.
#[derive(Serialize)]
struct RowOut {
    #[serde(flatten)]
    row: Row,
    /// Questions answered per second by this strategy at this budget (context building and
    /// scoring; preparation excluded).
    questions_per_second: f64,
}

#[derive(Serialize)]
struct AnchorOut {
    strategy: &'static str,
    /// The row that reproduces it, or null for "anchor (not run)".
    reproduced_by: Option<&'static str>,
    budgets: [u32; 4],
    all_evidence: [f64; 4],
}

#[derive(Serialize)]
struct JsonOut {
    file: String,
    conversations: usize,
    turns: usize,
    questions: usize,
    encoding: &'static str,
    recall_averaging: &'static str,
    import_ms: f64,
    prepare_ms: f64,
    rows: Vec<RowOut>,
    anchors: Vec<AnchorOut>,
    recall_index: IndexOut,
}

/// The MemLens recall index over every conversation: built turn by turn (`RecallIndex::add`).
#[derive(Serialize)]
struct IndexOut {
    /// Time to add every turn of every conversation.
    build_ms: f64,
    /// Microseconds per turn added.
    add_us_per_turn: f64,
    /// Heap bytes of all the indices together (`RecallIndex::heap_bytes`).
    heap_bytes: usize,
    /// Heap bytes per turn indexed.
    bytes_per_turn: f64,
    /// Largest conversation: turns and heap bytes.
    largest_turns: usize,
    largest_heap_bytes: usize,
}

/// Runs the benchmark on `file` at `budgets` and prints a table, or JSON with `json`.
pub fn run(
    file: &Path,
    budgets: &[u32],
    policies: &[String],
    json: bool,
) -> Result<ExitCode, String> {
    let extra = policies
        .iter()
        .map(|p| crate::sim::resolve_policy(p))
        .collect::<Result<Vec<_>, _>>()?;
    if budgets.is_empty() {
        return Err("--budgets: give at least one budget".into());
    }
    let bytes = read(file)?;
    let name = file.display().to_string();
    let started = Instant::now();
    let imported = import(&name, &bytes, &ImportOptions::default()).map_err(|e| e.to_string())?;
    let import_ms = ms(started);
    let started = Instant::now();
    let bench = Benchmark::new(&imported.traces);
    let prepare_ms = ms(started);
    let questions = bench.questions().len();
    if questions == 0 {
        return Err(format!(
            "{name}: no scored questions (needs LoCoMo-style questions in categories 1-4 whose \
             evidence names dialogue turns)"
        ));
    }
    let started = Instant::now();
    let indices: Vec<_> = bench
        .conversations()
        .iter()
        .map(memlens_evidence::recall::index_conversation)
        .collect();
    let build_ms = ms(started);
    let turns: usize = indices.iter().map(|ix| ix.len()).sum();
    let heap_bytes: usize = indices.iter().map(|ix| ix.heap_bytes()).sum();
    let largest = indices.iter().max_by_key(|ix| ix.len());
    let recall_index = IndexOut {
        build_ms,
        add_us_per_turn: build_ms * 1000.0 / turns.max(1) as f64,
        heap_bytes,
        bytes_per_turn: heap_bytes as f64 / turns.max(1) as f64,
        largest_turns: largest.map_or(0, |ix| ix.len()),
        largest_heap_bytes: largest.map_or(0, |ix| ix.heap_bytes()),
    };
    drop(indices);
    let mut rows = Vec::new();
    for mut builder in builders(&extra) {
        for &budget in budgets {
            let started = Instant::now();
            let row = bench.row(builder.as_mut(), budget);
            let seconds = started.elapsed().as_secs_f64();
            rows.push(RowOut {
                row,
                questions_per_second: questions as f64 / seconds.max(1e-9),
            });
        }
    }
    let out = JsonOut {
        file: name,
        conversations: bench.conversations().len(),
        turns: bench.conversations().iter().map(|c| c.len()).sum(),
        questions,
        encoding: encoding_for_model(imported.traces.first().and_then(|t| t.main_model()))
            .encoding
            .name(),
        recall_averaging: "macro",
        import_ms,
        prepare_ms,
        rows,
        anchors: ANCHORS
            .iter()
            .map(|a| AnchorOut {
                strategy: a.strategy,
                reproduced_by: a.reproduced_by,
                budgets: ANCHOR_BUDGETS,
                all_evidence: a.all_evidence,
            })
            .collect(),
        recall_index,
    };
    if json {
        crate::out::json(&out)?;
    } else {
        print_tables(&out, budgets);
    }
    Ok(ExitCode::SUCCESS)
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn policies(out: &JsonOut) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for r in &out.rows {
        if !names.contains(&r.row.policy.as_str()) {
            names.push(&r.row.policy);
        }
    }
    names
}

fn cell<'a>(out: &'a JsonOut, policy: &str, budget: u32) -> Option<&'a RowOut> {
    out.rows
        .iter()
        .find(|r| r.row.policy == policy && r.row.budget == budget)
}

fn header(first: &str, budgets: &[u32]) {
    out!("{first:<34}");
    for b in budgets {
        out!(" {b:>8}");
    }
    outln!();
}

/// Every table, after a heading: the file's conversations, turns and questions, and how long
/// importing and preparing took.
fn print_tables(out: &JsonOut, budgets: &[u32]) {
    outln!(
        "{}: {} conversations, {} turns, {} questions (categories 1-4 with evidence that resolves \
         to a turn); {} tokens",
        out.file,
        out.conversations,
        out.turns,
        out.questions,
        out.encoding
    );
    outln!(
        "import {:.0} ms, preparation {:.0} ms",
        out.import_ms,
        out.prepare_ms
    );
    print_all_evidence(out, budgets);
    print_turn_recall(out, budgets);
    print_by_category(out, budgets);
    // The per-conversation comparison: MemLens recall against BM25 with adjacent turns.
    let ours = "memlens-recall";
    let theirs = "bm25-adjacent";
    print_per_conversation(out, budgets, ours, theirs);
    print_recall_index(out, ours);
    print_speed(out, budgets);
}

/// The all-evidence rate of each policy at each budget, then the published anchors'.
fn print_all_evidence(out: &JsonOut, budgets: &[u32]) {
    outln!("\nAll-evidence rate: share of questions whose every evidence turn is in the context");
    header("policy \\ budget (tokens)", budgets);
    for policy in policies(out) {
        out!("{policy:<34}");
        for &b in budgets {
            match cell(out, policy, b) {
                Some(r) => out!(" {:>8.3}", r.row.all_evidence),
                None => out!(" {:>8}", "-"),
            }
        }
        outln!();
    }
    for a in &ANCHORS {
        let label = match a.reproduced_by {
            Some(name) => format!("anchor: {name}"),
            None => "anchor (not run): dense MiniLM".to_string(),
        };
        out!("{label:<34}");
        for &b in budgets {
            match ANCHOR_BUDGETS.iter().position(|&x| x == b) {
                Some(i) => out!(" {:>8.3}", a.all_evidence[i]),
                None => out!(" {:>8}", "-"),
            }
        }
        outln!();
    }
}

/// The evidence-turn recall of each policy at each budget.
fn print_turn_recall(out: &JsonOut, budgets: &[u32]) {
    outln!("\nEvidence-turn recall (macro: mean over questions of the share of their turns kept)");
    header("policy \\ budget (tokens)", budgets);
    for policy in policies(out) {
        out!("{policy:<34}");
        for &b in budgets {
            match cell(out, policy, b) {
                Some(r) => out!(" {:>8.3}", r.row.turn_recall),
                None => out!(" {:>8}", "-"),
            }
        }
        outln!();
    }
}

/// The all-evidence rate of each policy by question category.
fn print_by_category(out: &JsonOut, budgets: &[u32]) {
    outln!("\nAll-evidence rate by question category");
    header("policy, category (questions)", budgets);
    for policy in policies(out) {
        for c in SCORED_CATEGORIES {
            let key = c.to_string();
            let n = cell(out, policy, budgets[0])
                .and_then(|r| r.row.by_category.get(&key))
                .map_or(0, |s| s.questions);
            out!("{:<34}", format!("{policy}, {c} ({n})"));
            for &b in budgets {
                match cell(out, policy, b).and_then(|r| r.row.by_category.get(&key)) {
                    Some(s) => out!(" {:>8.3}", s.all_evidence),
                    None => out!(" {:>8}", "-"),
                }
            }
            outln!();
        }
    }
}

/// The all-evidence rate of `ours` minus that of `theirs`, in each conversation.
fn print_per_conversation(out: &JsonOut, budgets: &[u32], ours: &str, theirs: &str) {
    outln!(
        "\nPer conversation: all-evidence rate of {ours} minus {theirs} (does the gain hold in \
         every conversation?)"
    );
    header("conversation", budgets);
    for c in 0..out.conversations {
        out!("{:<34}", format!("{c}"));
        for &b in budgets {
            let rate =
                |p: &str| cell(out, p, b).and_then(|r| r.row.by_conversation.get(c).copied());
            match (rate(ours), rate(theirs)) {
                (Some(x), Some(y)) => out!(" {:>+8.3}", x - y),
                _ => out!(" {:>8}", "-"),
            }
        }
        outln!();
    }
}

/// The time and memory `ours`' recall index took.
fn print_recall_index(out: &JsonOut, ours: &str) {
    let ix = &out.recall_index;
    outln!(
        "\nRecall index ({ours}): built turn by turn in {:.1} ms ({:.1} µs per turn added); heap \
         {:.0} KB for {} turns ({:.0} bytes per turn; largest conversation {} turns, {:.0} KB)",
        ix.build_ms,
        ix.add_us_per_turn,
        ix.heap_bytes as f64 / 1024.0,
        out.turns,
        ix.bytes_per_turn,
        ix.largest_turns,
        ix.largest_heap_bytes as f64 / 1024.0
    );
}

/// Questions per second of each policy at each budget.
fn print_speed(out: &JsonOut, budgets: &[u32]) {
    outln!("\nSpeed: questions per second (context building and scoring, one thread)");
    header("policy \\ budget (tokens)", budgets);
    for policy in policies(out) {
        out!("{policy:<34}");
        for &b in budgets {
            match cell(out, policy, b) {
                Some(r) => out!(" {:>8.0}", r.questions_per_second),
                None => out!(" {:>8}", "-"),
            }
        }
        outln!();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_have_unique_names_and_cover_the_runnable_anchors() {
        let names: Vec<String> = builders(&[]).iter().map(|b| b.name()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for a in ANCHORS {
            if let Some(name) = a.reproduced_by {
                assert!(names.iter().any(|n| n == name), "{name} missing");
            }
        }
        assert!(names.iter().any(|n| n == "oracle"));
    }
}
