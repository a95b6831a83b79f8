//! Holding the ceiling on the share of calls with a miss: on the training traces and in
//! resamplings of them, and below the edge where the ceiling is zero.

use memlens_core::value::splitmix64;

use crate::Candidate;

/// The ceiling a candidate is held to ([`within_ceiling`]): the share of calls with a miss
/// allowed, and in what share of the resamplings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ceiling {
    /// At most this share of calls with a miss.
    pub share: f64,
    /// In at least this share of [`RESAMPLES`] resamplings ([`crate::FitOptions::confidence`]).
    pub confidence: f64,
}

impl Ceiling {
    /// Whether `c`'s replay is within the ceiling.
    pub fn holds(&self, c: &Candidate) -> bool {
        within_ceiling(&c.per_trace, self.share, self.confidence)
    }
}

/// The candidate that saves the most among those `within` the ceiling (fewer misses on a tie),
/// else the one with the fewest calls with a miss (more saved on a tie).
pub(crate) fn choose(
    candidates: &[Candidate],
    within: impl Fn(&Candidate) -> bool,
) -> Option<&Candidate> {
    candidates
        .iter()
        .filter(|c| within(c))
        .max_by(|a, b| {
            a.outcome
                .saved()
                .total_cmp(&b.outcome.saved())
                .then(b.outcome.miss_rate().total_cmp(&a.outcome.miss_rate()))
        })
        .or_else(|| {
            candidates.iter().min_by(|a, b| {
                a.outcome
                    .miss_rate()
                    .total_cmp(&b.outcome.miss_rate())
                    .then(b.outcome.saved().total_cmp(&a.outcome.saved()))
            })
        })
}

/// Resamplings of the training traces [`crate::FitOptions::confidence`] counts.
pub const RESAMPLES: usize = 400;

/// Whether the share of calls with a miss is within `ceiling` over all traces (`per_trace`:
/// calls and calls with a miss of each) and in at least `confidence` of [`RESAMPLES`]
/// resamplings of the traces with replacement. Traces, not calls, are drawn: a trace's misses
/// come in runs (one id given up is missed at every later call that quotes it). The draws are a
/// fixed splitmix64 sequence, so a fit is reproducible.
pub fn within_ceiling(per_trace: &[(u64, u64)], ceiling: f64, confidence: f64) -> bool {
    let fits = |calls: u64, missed: u64| missed as f64 <= ceiling * calls as f64;
    let (calls, missed) = per_trace
        .iter()
        .fold((0, 0), |(c, m), &(tc, tm)| (c + tc, m + tm));
    if !fits(calls, missed) {
        return false;
    }
    if confidence <= 0.0 || per_trace.is_empty() {
        return true;
    }
    let n = per_trace.len() as u64;
    let mut state: u64 = 0x5EED_F17E;
    let mut held = 0usize;
    for _ in 0..RESAMPLES {
        let (mut c, mut m) = (0, 0);
        for _ in 0..n {
            let z = splitmix64(state);
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            // Multiply-shift onto 0..n: no modulo bias worth the name at these sizes.
            let i = ((z >> 32) * n) >> 32;
            let (tc, tm) = per_trace[i as usize];
            c += tc;
            m += tm;
        }
        held += usize::from(fits(c, m));
    }
    held as f64 >= confidence * RESAMPLES as f64
}
