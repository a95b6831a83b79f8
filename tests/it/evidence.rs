//! The evidence benchmark on the real LoCoMo file: question selection, the reference (anchor)
//! numbers, budgets, the oracle bound and determinism. See `docs/bench-evidence.md`.

use crate::{import_path, root};
use memlens_core::Trace;
use memlens_evidence::{
    self as evidence, Analyzer, Benchmark, Bm25, ContextBuilder, Oracle, Recency, Row,
};
use std::sync::OnceLock;

const BUDGETS: [u32; 4] = evidence::ANCHOR_BUDGETS;

fn traces() -> &'static [Trace] {
    static TRACES: OnceLock<Vec<Trace>> = OnceLock::new();
    TRACES.get_or_init(|| {
        let path = root().join("../shared/data/locomo/locomo10.json");
        assert!(path.exists(), "{} is missing", path.display());
        import_path(&path).expect("LoCoMo imports").traces
    })
}

fn builders() -> Vec<Box<dyn ContextBuilder>> {
    vec![
        Box::new(Recency),
        Box::new(Bm25::new()),
        Box::new(Bm25::adjacent()),
        Box::new(Oracle),
    ]
}

fn rows() -> &'static [Row] {
    static ROWS: OnceLock<Vec<Row>> = OnceLock::new();
    ROWS.get_or_init(|| evidence::run(traces(), &mut builders(), &BUDGETS))
}

#[test]
fn locomo_scores_1535_questions() {
    let bench = Benchmark::new(traces());
    // 1,540 questions in categories 1-4; 4 have no evidence and 1 cites only "D30:05".
    assert_eq!(bench.questions().len(), 1535);
    let per_category: Vec<usize> = (1..=4)
        .map(|c| bench.questions().iter().filter(|q| q.category == c).count())
        .collect();
    assert_eq!(per_category.iter().sum::<usize>(), 1535);
    assert!(rows().iter().all(|r| r.questions == 1535));
    for r in rows() {
        let n: usize = r.by_category.values().map(|c| c.questions).sum();
        assert_eq!(n, 1535);
        assert_eq!(r.by_category.len(), 4);
    }
}

#[test]
fn recency_and_bm25_reproduce_the_anchors() {
    let mut checked = 0;
    for anchor in evidence::ANCHORS {
        // The dense (MiniLM) anchor needs a neural model: quoted, not run.
        let Some(policy) = anchor.reproduced_by else {
            continue;
        };
        checked += 1;
        for (budget, want) in BUDGETS.iter().zip(anchor.all_evidence) {
            let row = rows()
                .iter()
                .find(|r| r.policy == policy && r.budget == *budget)
                .expect("row");
            assert!(
                (row.all_evidence - want).abs() <= 0.02,
                "{policy} at {budget}: {:.3}, anchor {want:.3}",
                row.all_evidence
            );
        }
    }
    assert_eq!(checked, 3);
}

#[test]
fn the_oracle_bounds_every_row_and_scores_are_sane() {
    for r in rows() {
        let oracle = rows()
            .iter()
            .find(|o| o.policy == "oracle" && o.budget == r.budget)
            .expect("oracle row");
        assert!(
            oracle.all_evidence >= r.all_evidence,
            "{} {}",
            r.policy,
            r.budget
        );
        assert!(
            oracle.turn_recall >= r.turn_recall,
            "{} {}",
            r.policy,
            r.budget
        );
        for (cat, score) in &r.by_category {
            assert!(oracle.by_category[cat].all_evidence >= score.all_evidence);
            assert!(score.all_evidence <= score.turn_recall + 1e-12);
        }
        assert!(
            r.all_evidence <= r.turn_recall + 1e-12,
            "{} {}",
            r.policy,
            r.budget
        );
        assert!((0.0..=1.0).contains(&r.all_evidence));
        assert_eq!(r.over_budget, 0, "{} {}", r.policy, r.budget);
        assert!(r.mean_context_tokens <= f64::from(r.budget));
    }
    // On this data more budget never lowers a rate (greedy skipping does not guarantee it per
    // question).
    for pair in rows().windows(2) {
        if pair[0].policy == pair[1].policy {
            assert!(
                pair[1].all_evidence >= pair[0].all_evidence,
                "{}",
                pair[0].policy
            );
        }
    }
}

#[test]
fn every_context_respects_the_budget() {
    let bench = Benchmark::new(traces());
    let mut all = builders();
    all.push(Box::new(Bm25::adjacent().with_analyzer(Analyzer::Terms)));
    // Every question at a budget that is not a round number, plus tiny budgets on a sample.
    for b in all.iter_mut() {
        for (k, q) in bench.questions().iter().enumerate() {
            let conv = &bench.conversations()[q.conversation];
            let budgets: &[u32] = if k % 50 == 0 {
                &[0, 7, 60, 1500]
            } else {
                &[1500]
            };
            for &budget in budgets {
                let ctx = bench.context(b.as_mut(), q, budget);
                assert!(
                    conv.context_tokens(&ctx) <= u64::from(budget),
                    "{} at {budget}",
                    b.name()
                );
                assert!(ctx.iter().all(|&i| i < conv.len()));
            }
        }
    }
}

#[test]
fn runs_are_deterministic() {
    let again = evidence::run(traces(), &mut builders(), &BUDGETS);
    assert_eq!(again, rows());
}
