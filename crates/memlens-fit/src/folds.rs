//! k-fold cross-validation by trace: the figures a user reads, on traces the fit did not see.
//! The k fits on the folds and the fit on every trace are independent: where the host has
//! threads they run side by side ([`fit_and_validate`]), the results the same as one by one.

use memlens_core::cost::PriceTable;

use crate::{evaluate, fit, Case, FitError, FitOptions, Fitted, Outcome};

/// One fold of [`cross_validate`]: fitted on the other folds, measured on this one.
#[derive(Debug, Clone)]
pub struct Fold {
    /// The fold's number (0-based): traces `i` with `i % folds == index` are held out.
    pub index: usize,
    /// The fit on the other folds.
    pub fitted: Fitted,
    /// The fitted policy on the held-out traces.
    pub validation: Outcome,
    /// The base policy on the held-out traces.
    pub base_validation: Outcome,
}

/// k-fold cross-validation by trace: trace `i` (in the order given) is in fold `i % folds`.
pub fn cross_validate(
    cases: &[Case],
    folds: usize,
    options: &FitOptions,
    prices: &PriceTable,
) -> Result<Vec<Fold>, FitError> {
    check_folds(cases, folds)?;
    in_parallel(folds, |index| fold(cases, folds, index, options, prices))
        .into_iter()
        .collect()
}

/// The fit on every case and, with `folds` >= 2, its k-fold cross-validation: the k + 1 fits
/// at once where the host has threads.
pub fn fit_and_validate(
    cases: &[Case],
    folds: usize,
    options: &FitOptions,
    prices: &PriceTable,
) -> Result<(Fitted, Vec<Fold>), FitError> {
    let k = if folds >= 2 {
        check_folds(cases, folds)?;
        folds
    } else {
        0
    };
    let all: Vec<&Case> = cases.iter().collect();
    // Job 0 is the fit on every case (the longest: first, so it is never left for last).
    let mut jobs = in_parallel(k + 1, |job| match job {
        0 => fit(&all, options, prices).map(Job::All),
        i => fold(cases, folds, i - 1, options, prices).map(Job::Fold),
    })
    .into_iter();
    let Some(Job::All(fitted)) = jobs.next().transpose()? else {
        return Err(FitError::NoCalls);
    };
    let mut out = Vec::with_capacity(k);
    for job in jobs {
        if let Job::Fold(f) = job? {
            out.push(f);
        }
    }
    Ok((fitted, out))
}

enum Job {
    All(Fitted),
    Fold(Fold),
}

fn check_folds(cases: &[Case], folds: usize) -> Result<(), FitError> {
    if folds < 2 || cases.len() < folds {
        return Err(FitError::TooFewTraces {
            folds,
            traces: cases.len(),
        });
    }
    Ok(())
}

/// Fold `index` of `folds`: fitted without trace i where i % folds == index, measured on them.
fn fold(
    cases: &[Case],
    folds: usize,
    index: usize,
    options: &FitOptions,
    prices: &PriceTable,
) -> Result<Fold, FitError> {
    let (mut train, mut validation) = (Vec::new(), Vec::new());
    for (i, case) in cases.iter().enumerate() {
        if i % folds == index {
            validation.push(case);
        } else {
            train.push(case);
        }
    }
    let fitted = fit(&train, options, prices)?;
    Ok(Fold {
        index,
        validation: evaluate(&validation, &fitted.policy, options.budget, prices)?,
        base_validation: evaluate(&validation, &options.base, options.budget, prices)?,
        fitted,
    })
}

/// `job(0..n)` in order, on up to as many threads as the host has (one by one in wasm32).
fn in_parallel<T: Send>(n: usize, job: impl Fn(usize) -> T + Sync) -> Vec<T> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let threads = std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .min(n);
        if threads > 1 {
            let next = std::sync::atomic::AtomicUsize::new(0);
            let mut done: Vec<(usize, T)> = std::thread::scope(|s| {
                let workers: Vec<_> = (0..threads)
                    .map(|_| {
                        s.spawn(|| {
                            let mut mine = Vec::new();
                            loop {
                                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                if i >= n {
                                    return mine;
                                }
                                mine.push((i, job(i)));
                            }
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            });
            done.sort_by_key(|(i, _)| *i);
            return done.into_iter().map(|(_, t)| t).collect();
        }
    }
    (0..n).map(job).collect()
}
