//! How far below the training traces' edge a value threshold is kept where the ceiling is zero.
//!
//! Above a zero ceiling, [`crate::within_ceiling`] resamples the training traces, so a threshold
//! that only just fits them is caught. At a zero ceiling (the base policy missed nothing on them)
//! every resampling of a candidate without a miss has none: the test cannot tell how near the
//! edge a threshold is, and the highest threshold without a miss in training is set by whichever
//! trace happened to bind it. Traces outside the training set bind it too, lower. So the edge is
//! found again with each of k folds of the training traces left out: where leaving a fold out
//! moves it up to a threshold that misses in that fold, the edge on k - 1 folds sat that much
//! above the edge on all k, and the edge on all k sits above the edge of traces never seen. The
//! delete-a-group jackknife estimates that bias as k - 1 times the move; the threshold is kept
//! that far below the edge (the largest move over the folds). Where every fold's traces agree
//! with the rest (the edge is bound in more than one fold, or the thresholds above it miss
//! nowhere new), the margin is zero. Finding it costs no replay: every candidate threshold's
//! per-trace outcome is known; the fit replays the lowered threshold once.
//!
//! ```
//! use memlens_fit::{edge_margin, ThresholdRun};
//!
//! // Ten traces of one call each, five folds (trace i in fold i % 5). At 0.40 trace 7 misses,
//! // at 0.45 trace 3 too: the edge is 0.35, bound by trace 7 alone.
//! let clean = [(1, 0); 10];
//! let mut one = clean;
//! one[7] = (1, 1);
//! let mut two = one;
//! two[3] = (1, 1);
//! let runs = [
//!     ThresholdRun { threshold: 0.35, per_trace: &clean },
//!     ThresholdRun { threshold: 0.40, per_trace: &one },
//!     ThresholdRun { threshold: 0.45, per_trace: &two },
//! ];
//! // Without fold 2 (traces 2 and 7) the edge would have been 0.40, which misses in fold 2:
//! // a move of 0.05, four times over.
//! assert!((edge_margin(&runs, 0.35, 5) - 0.20).abs() < 1e-6);
//! ```

use serde::Serialize;

/// One candidate threshold's replay of the training traces (the other settings alike).
#[derive(Debug, Clone, Copy)]
pub struct ThresholdRun<'a> {
    /// The value threshold.
    pub threshold: f32,
    /// Calls and calls with a miss in each training trace, in the fit's order (trace `i` in
    /// fold `i % folds`).
    pub per_trace: &'a [(u64, u64)],
}

/// The threshold [`crate::fit`] chose at a zero ceiling, and how far below it the policy's is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EdgeMargin {
    /// The highest-saving threshold without a miss on the training traces.
    pub edge: f32,
    /// k - 1 times the most the edge moved up when one of k folds of the training traces was
    /// left out and the threshold it moved to missed in that fold.
    pub margin: f32,
    /// The edge less the margin (`None`: no threshold), replayed; the policy's threshold where
    /// that replay has no miss either.
    pub threshold: Option<f32>,
}

/// The margin below `edge` (the threshold chosen on every training trace): over `folds` folds of
/// the traces, the most the highest threshold of `runs` with no miss outside a fold exceeds
/// `edge` while missing inside that fold, times `folds - 1`; zero when no fold does that (or
/// with fewer than two folds or traces). `runs` are one candidate's replays at each threshold
/// tried.
pub fn edge_margin(runs: &[ThresholdRun], edge: f32, folds: usize) -> f32 {
    let traces = runs.first().map_or(0, |r| r.per_trace.len());
    let folds = folds.min(traces);
    if folds < 2 {
        return 0.0;
    }
    let mut moved = 0.0f32;
    for fold in 0..folds {
        // No miss in the traces inside (or outside) the fold.
        let clean = |run: &ThresholdRun, inside: bool| {
            run.per_trace
                .iter()
                .enumerate()
                .filter(|(i, _)| (i % folds == fold) == inside)
                .all(|(_, &(_, missed))| missed == 0)
        };
        let moved_to = runs
            .iter()
            .filter(|r| clean(r, false))
            .max_by(|a, b| a.threshold.total_cmp(&b.threshold));
        if let Some(moved_to) = moved_to {
            if moved_to.threshold > edge && !clean(moved_to, true) {
                moved = moved.max(moved_to.threshold - edge);
            }
        }
    }
    // Leaving out a fold (a k-th of the traces) moved the edge this far; the traces never seen
    // are further out. The delete-a-group jackknife's bias estimate scales such a move by k - 1.
    moved * (folds - 1) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per-trace outcomes of ten one-call traces, with misses in the traces listed.
    fn missing_in(traces: &[usize]) -> Vec<(u64, u64)> {
        (0..10)
            .map(|i| (1, u64::from(traces.contains(&i))))
            .collect()
    }

    #[test]
    fn an_edge_bound_in_two_folds_keeps_no_margin() {
        // At 0.40 traces 7 (fold 2) and 8 (fold 3) both miss: leaving either fold out, the
        // other still binds the edge at 0.35.
        let (clean, two) = (missing_in(&[]), missing_in(&[7, 8]));
        let runs = [
            ThresholdRun {
                threshold: 0.35,
                per_trace: &clean,
            },
            ThresholdRun {
                threshold: 0.40,
                per_trace: &two,
            },
        ];
        assert_eq!(edge_margin(&runs, 0.35, 5), 0.0);
    }

    #[test]
    fn an_edge_one_fold_binds_is_kept_below_by_as_far_as_leaving_it_out_moves_it() {
        // Trace 7 alone misses at 0.37 and above; the next miss elsewhere (trace 1, fold 1) is
        // at 0.45. Without fold 2 the edge is 0.40, 0.04 above 0.36: four times that.
        let (clean, seven, both) = (missing_in(&[]), missing_in(&[7]), missing_in(&[1, 7]));
        let runs: Vec<ThresholdRun> = [
            (0.30, &clean),
            (0.35, &clean),
            (0.36, &clean),
            (0.37, &seven),
            (0.40, &seven),
            (0.45, &both),
        ]
        .into_iter()
        .map(|(threshold, per_trace)| ThresholdRun {
            threshold,
            per_trace,
        })
        .collect();
        assert!((edge_margin(&runs, 0.36, 5) - 0.16).abs() < 1e-6);
        // With two folds (traces 1, 7 in fold 1), leaving fold 1 out moves it to the top, 0.45.
        assert!((edge_margin(&runs, 0.36, 2) - 0.09).abs() < 1e-6);
        // With only one fold there is nothing to leave out.
        assert_eq!(edge_margin(&runs, 0.36, 1), 0.0);
    }

    #[test]
    fn no_threshold_above_the_edge_means_no_margin() {
        let clean = missing_in(&[]);
        let runs = [ThresholdRun {
            threshold: 0.5,
            per_trace: &clean,
        }];
        assert_eq!(edge_margin(&runs, 0.5, 5), 0.0);
        assert_eq!(edge_margin(&[], 0.5, 5), 0.0);
    }
}
