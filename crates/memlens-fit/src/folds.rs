//! k-fold cross-validation by trace: the figures a user reads, on traces the fit did not see.

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
    if folds < 2 || cases.len() < folds {
        return Err(FitError::TooFewTraces {
            folds,
            traces: cases.len(),
        });
    }
    let mut out = Vec::with_capacity(folds);
    for index in 0..folds {
        // Trace i is held out in fold i % folds.
        let (mut train, mut validation) = (Vec::new(), Vec::new());
        for (i, case) in cases.iter().enumerate() {
            if i % folds == index {
                validation.push(case);
            } else {
                train.push(case);
            }
        }
        let fitted = fit(&train, options, prices)?;
        out.push(Fold {
            index,
            validation: evaluate(&validation, &fitted.policy, options.budget, prices)?,
            base_validation: evaluate(&validation, &options.base, options.budget, prices)?,
            fitted,
        });
    }
    Ok(out)
}
