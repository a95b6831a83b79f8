//! The visible coding-agent set (`../shared/data/traces/mini-swe-agent-deepseek`, 99 gzipped
//! mini-swe-agent runs on SWE-bench Verified tasks) under every built-in policy: every invariant
//! kept, and what each policy does, as a snapshot. A stride of the runs keeps the debug build's
//! replays short; the whole set's figures are in BENCHMARKS.md, "Policies" (issue 52).

use memlens_core::cost::PriceTable;
use memlens_core::policy::PolicyConfig;
use memlens_core::simulate::simulate;
use memlens_core::Trace;
use std::path::PathBuf;

/// Every `step`-th run of the set, by file name.
fn coding_runs(step: usize) -> Vec<Trace> {
    let dir = crate::root().join("../shared/data/traces/mini-swe-agent-deepseek");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".traj.json.gz"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 99);
    files
        .iter()
        .step_by(step)
        .flat_map(|f| {
            crate::import_path(f)
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
                .traces
        })
        .collect()
}

#[test]
fn coding_runs_keep_every_invariant_under_memlens_policies_and_masking() {
    let traces = coding_runs(8);
    assert_eq!(traces.len(), 13);
    let prices = PriceTable::builtin();
    let mut table = String::from(
        "policy                           budget     sent     saved%  misses violations over\n",
    );
    for name in memlens_core::policy::BUILTIN {
        let policy = PolicyConfig::builtin(name).expect("built-in");
        let r = simulate(&traces, &policy, 16_000, &prices).expect("simulates");
        let t = &r.totals;
        // Tool results here are the environment's outputs, each tied to the action that asked
        // for it: no policy that keeps invariants splits one off. The other incumbents' counts
        // are their libraries' behaviour (LangChain's `start_on="human"` drops the task, the
        // run's one user message, once the history is trimmed), in the snapshot.
        let keeps_invariants = crate::policies::memlens_policies().contains(name)
            || name.starts_with("swe-agent-observation-masking");
        if keeps_invariants {
            assert_eq!(t.violations, 0, "{name}");
        }
        table.push_str(&format!(
            "{:<32} {:>6} {:>10} {:>6.1} {:>7} {:>10} {:>5}\n",
            name,
            r.budget,
            t.input_tokens,
            t.saved_tokens as f64 * 100.0 / t.full_input_tokens as f64,
            t.misses,
            t.violations,
            t.over_budget_calls
        ));
    }
    insta::assert_snapshot!(table);
}
