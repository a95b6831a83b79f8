//! Weights from labelled chunks (logistic regression, in-crate and deterministic) and how well
//! weights agree with labels.

use super::factors::{clamp01, sanitize_weight, Factors, Label};
use super::{ValueConfig, Weights};
use serde::{Deserialize, Serialize};

/// How well weights agree with labels.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FitReport {
    /// The weights measured (fitted by [`fit_weights`], given to [`agreement`]).
    pub weights: Weights,
    /// Values at or above this are predicted important.
    pub threshold: f32,
    /// Of the chunks predicted important, the share labelled important (1 when none is predicted
    /// and none is labelled).
    pub precision: f32,
    /// Of the chunks labelled important, the share predicted important (1 when none is labelled).
    pub recall: f32,
    /// Share of samples predicted right.
    pub accuracy: f32,
    /// Probability that an important chunk has a higher value than a useless one (ties count
    /// half): agreement of the ranking, whatever the threshold. 0.5 when a class is missing.
    pub auc: f32,
    /// Number of samples.
    pub samples: usize,
}

/// Number of fitted features: every factor but `pinned`.
pub(super) const FIT_FEATURES: usize = 7;
/// Full-batch gradient steps of [`fit_weights`].
pub const FIT_STEPS: usize = 2000;
const FIT_LEARNING_RATE: f64 = 0.5;
const FIT_L2: f64 = 1e-3;

/// Learns weights from labelled chunks by logistic regression, in-crate and deterministic.
///
/// - Features: the factors except `pinned`, redundancy as `1 - redundancy` (as the value uses
///   them), standardized; target: important = 1, useless = 0; classes weighted to equal total
///   weight. Coefficients start at 0; [`FIT_STEPS`] full-batch gradient steps (rate 0.5, L2 1e-3).
/// - Mapping back: coefficients are unstandardized; a negative coefficient becomes weight 0
///   (weights cannot be negative: the feature is replaced by its mean, folded into the bias); the
///   rest are scaled so they sum to the base config's weights (pinned excluded). `pinned` keeps the
///   base weight: it is an explicit signal, not learnable from labels (compute the samples'
///   factors before applying labels, or the pinned factor leaks them).
/// - Threshold: the logistic decision boundary `Σ θ x + b = 0` expressed as a value (for an
///   unpinned chunk). Precision, recall and accuracy are measured with the learned weights at that
///   threshold. If no coefficient is positive, the base weights are returned with their agreement.
pub fn fit_weights(samples: &[(Factors, Label)], base: &ValueConfig) -> FitReport {
    let n = samples.len();
    let positives = samples
        .iter()
        .filter(|(_, l)| *l == Label::Important)
        .count();
    if n == 0 || positives == 0 || positives == n {
        return agreement(samples, base);
    }
    let xs: Vec<[f64; FIT_FEATURES]> = samples
        .iter()
        .map(|(f, _)| {
            let t = f.terms();
            [t[0], t[1], t[2], t[3], t[4], t[5], t[6]]
        })
        .collect();
    let ys: Vec<f64> = samples
        .iter()
        .map(|(_, l)| if *l == Label::Important { 1.0 } else { 0.0 })
        .collect();
    // Class weights: each class carries half the total weight.
    let w_pos = n as f64 / (2.0 * positives as f64);
    let w_neg = n as f64 / (2.0 * (n - positives) as f64);
    let sample_w: Vec<f64> = ys
        .iter()
        .map(|&y| if y > 0.5 { w_pos } else { w_neg })
        .collect();

    let mut mean = [0.0f64; FIT_FEATURES];
    let mut sd = [0.0f64; FIT_FEATURES];
    for x in &xs {
        for j in 0..FIT_FEATURES {
            mean[j] += x[j] / n as f64;
        }
    }
    for x in &xs {
        for j in 0..FIT_FEATURES {
            sd[j] += (x[j] - mean[j]).powi(2) / n as f64;
        }
    }
    let sd = sd.map(f64::sqrt);
    let z: Vec<[f64; FIT_FEATURES]> = xs
        .iter()
        .map(|x| {
            let mut z = [0.0; FIT_FEATURES];
            for j in 0..FIT_FEATURES {
                z[j] = if sd[j] > 1e-9 {
                    (x[j] - mean[j]) / sd[j]
                } else {
                    0.0
                };
            }
            z
        })
        .collect();

    let mut theta = [0.0f64; FIT_FEATURES];
    let mut bias = 0.0f64;
    for _ in 0..FIT_STEPS {
        let mut grad = [0.0f64; FIT_FEATURES];
        let mut grad_b = 0.0;
        for ((z, &y), &w) in z.iter().zip(&ys).zip(&sample_w) {
            let margin = bias + theta.iter().zip(z).map(|(t, x)| t * x).sum::<f64>();
            let err = w * (sigmoid(margin) - y);
            for j in 0..FIT_FEATURES {
                grad[j] += err * z[j];
            }
            grad_b += err;
        }
        for j in 0..FIT_FEATURES {
            theta[j] -= FIT_LEARNING_RATE * (grad[j] / n as f64 + FIT_L2 * theta[j]);
        }
        bias -= FIT_LEARNING_RATE * grad_b / n as f64;
    }

    // Back to raw features: margin = b_raw + Σ θ_raw x.
    let mut raw = [0.0f64; FIT_FEATURES];
    let mut b_raw = bias;
    for j in 0..FIT_FEATURES {
        if sd[j] > 1e-9 {
            raw[j] = theta[j] / sd[j];
            b_raw -= theta[j] * mean[j] / sd[j];
        }
    }
    // Negative coefficients cannot be weights: replace those features by their means.
    for j in 0..FIT_FEATURES {
        if raw[j] < 0.0 {
            b_raw += raw[j] * mean[j];
            raw[j] = 0.0;
        }
    }
    let raw_sum: f64 = raw.iter().sum();
    if raw_sum <= 1e-12 || !raw_sum.is_finite() {
        return agreement(samples, base);
    }
    let base_w = base.weights.to_array().map(sanitize_weight);
    let base_sum: f64 = base_w[..FIT_FEATURES].iter().sum();
    let scale = if base_sum > 0.0 { base_sum } else { 1.0 } / raw_sum;
    let mut learned = [0.0f32; 8];
    for j in 0..FIT_FEATURES {
        learned[j] = (raw[j] * scale) as f32;
    }
    learned[7] = base_w[7] as f32;
    let weights = Weights::from_array(learned);
    // Σ θ x ≥ -b  ⇔  value ≥ -b·scale / (Σ w + w_pinned) for an unpinned chunk.
    let total: f64 = learned.iter().map(|&w| f64::from(w)).sum();
    let threshold = clamp01(-b_raw * scale / total);
    measure(samples, weights, threshold)
}

/// How well a config's weights agree with labels: precision, recall and accuracy of "value at or
/// above the threshold" against "labelled important", at the threshold that maximizes accuracy on
/// these samples (ties: the one nearest 0.5), and the threshold-free AUC.
pub fn agreement(samples: &[(Factors, Label)], config: &ValueConfig) -> FitReport {
    let values: Vec<f32> = samples
        .iter()
        .map(|(f, _)| f.value(&config.weights))
        .collect();
    let mut cuts: Vec<f32> = values.clone();
    cuts.push(0.5);
    cuts.push(f32::INFINITY);
    cuts.sort_by(f32::total_cmp);
    cuts.dedup();
    let mut best = (0usize, f32::INFINITY, 0.5f32);
    for &cut in &cuts {
        let right = samples
            .iter()
            .zip(&values)
            .filter(|((_, l), &v)| (v >= cut) == (*l == Label::Important))
            .count();
        let distance = (cut - 0.5).abs();
        if right > best.0 || (right == best.0 && distance < best.1) {
            best = (right, distance, cut);
        }
    }
    let threshold = if best.2.is_finite() { best.2 } else { 1.0 };
    measure(samples, config.weights.clone(), threshold)
}

fn measure(samples: &[(Factors, Label)], weights: Weights, threshold: f32) -> FitReport {
    let (mut tp, mut fp, mut tn, mut fn_) = (0usize, 0usize, 0usize, 0usize);
    let mut scored: Vec<(f32, bool)> = Vec::with_capacity(samples.len());
    for (f, l) in samples {
        let v = f.value(&weights);
        let important = *l == Label::Important;
        scored.push((v, important));
        match (v >= threshold, important) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, false) => tn += 1,
            (false, true) => fn_ += 1,
        }
    }
    let ratio = |a: usize, b: usize, empty: f32| {
        if b == 0 {
            empty
        } else {
            a as f32 / b as f32
        }
    };
    let positives = tp + fn_;
    FitReport {
        weights,
        threshold,
        precision: ratio(tp, tp + fp, if positives == 0 { 1.0 } else { 0.0 }),
        recall: ratio(tp, positives, 1.0),
        accuracy: ratio(tp + tn, samples.len(), 0.0),
        auc: auc(&mut scored),
        samples: samples.len(),
    }
}

/// Mann-Whitney AUC with average ranks for ties.
fn auc(scored: &mut [(f32, bool)]) -> f32 {
    let pos = scored.iter().filter(|s| s.1).count();
    let neg = scored.len() - pos;
    if pos == 0 || neg == 0 {
        return 0.5;
    }
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum = 0.0f64;
    let mut i = 0;
    while i < scored.len() {
        let mut j = i;
        while j + 1 < scored.len() && scored[j + 1].0 == scored[i].0 {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their average.
        let avg = (i + j + 2) as f64 / 2.0;
        rank_sum += avg * scored[i..=j].iter().filter(|s| s.1).count() as f64;
        i = j + 1;
    }
    let u = rank_sum - (pos * (pos + 1)) as f64 / 2.0;
    (u / (pos as f64 * neg as f64)) as f32
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}
