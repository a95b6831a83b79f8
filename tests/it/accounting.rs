//! Numbers that add up, on every fixture: a policy at a budget above the whole trace saves
//! nothing and breaks nothing; where calls report usage, what MemLens counts, the unrecorded
//! item and the counting difference add up to what was billed, and the item carries what the
//! log does not hold.

use crate::{import_path, root};
use memlens_core::cost::{trace_cost, PriceTable};
use memlens_core::policy::{PolicyConfig, BUILTIN};
use memlens_core::simulate::simulate;
use memlens_core::{Category, Trace};
use std::path::PathBuf;

/// Every fixture that imports (not the malformed ones, nor those named for their error).
fn fixtures() -> Vec<(PathBuf, Vec<Trace>)> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("tests/fixtures"))
        .expect("fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        if matches!(name.as_deref(), Some("malformed" | "web" | "real" | "fuzz")) {
            continue;
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("fixture dir")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e != "md"))
            .collect();
        files.sort();
        for path in files {
            if let Ok(import) = import_path(&path) {
                out.push((path, import.traces));
            }
        }
    }
    out
}

#[test]
fn every_budget_bound_policy_above_the_trace_saves_nothing_on_every_fixture() {
    let prices = PriceTable::builtin();
    let fixtures = fixtures();
    assert!(fixtures.len() > 40, "{} fixtures", fixtures.len());
    for (path, traces) in &fixtures {
        for name in BUILTIN {
            let policy = PolicyConfig::builtin(name).expect("built-in");
            // 1,000,000 is far above any fixture's largest call over the policy's share.
            if policy.untouched_below().is_none() {
                continue;
            }
            let traces: Vec<Trace> = traces
                .iter()
                .filter(|t| !crate::policies::langchain_drops_at_any_budget(name, t))
                .cloned()
                .collect();
            let report = simulate(&traces, &policy, 1_000_000, &prices).expect("simulates");
            let t = &report.totals;
            assert_eq!(
                (t.saved_tokens, t.violations),
                (0, 0),
                "{name} on {}: saved {} tokens, {} violations",
                path.display(),
                t.saved_tokens,
                t.violations
            );
        }
    }
}

/// Per call with reported input: counted (the item included) plus the counting difference is
/// the reported figure; on the first call that reports input, what was billed is accounted for
/// by the log and the item (the difference 0), or, with no item, the log alone explains it to
/// within 1% (counting noise) or more than explains it (a tokenizer that counts fewer).
#[test]
fn reported_input_is_counted_plus_unrecorded_plus_the_counting_difference() {
    let prices = PriceTable::builtin();
    let mut reported_calls = 0;
    for (path, traces) in fixtures() {
        for trace in &traces {
            let cost = trace_cost(trace, &prices);
            let mut first = true;
            for c in cost.calls.iter().filter(|c| c.reported_input.is_some()) {
                let reported = c.reported_input.unwrap_or(0);
                reported_calls += 1;
                let diff = c.input_diff.unwrap_or(0);
                assert_eq!(
                    c.counted.input as i64 + diff,
                    reported as i64,
                    "{} call {}",
                    path.display(),
                    c.index
                );
                if first && reported > 0 {
                    let explained = if c.unrecorded > 0 {
                        diff == 0
                    } else {
                        diff * 100 < reported as i64
                    };
                    assert!(explained, "{} call {}: {c:?}", path.display(), c.index);
                }
                first &= reported == 0;
            }
            let items = trace
                .chunks
                .iter()
                .filter(|c| c.category == Category::Unrecorded)
                .count();
            let reported = trace
                .calls
                .iter()
                .any(|c| c.usage.and_then(|u| u.input_tokens).is_some_and(|r| r > 0));
            if !reported {
                assert_eq!(
                    items,
                    0,
                    "{}: an item with nothing reported",
                    path.display()
                );
            }
        }
    }
    assert!(reported_calls > 50, "{reported_calls} calls report usage");
}
