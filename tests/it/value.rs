//! The value engine on real data: do values agree with what mattered, and does fitting weights
//! from labels help?

use memlens_core::references::detect;
use memlens_core::value::{agreement, fit_weights, score_trace, Factors, Label, ValueConfig};
use memlens_core::Trace;

fn locomo() -> Vec<Trace> {
    let path = crate::root().join("../shared/data/locomo/locomo10.json");
    crate::import_path(&path).expect("LoCoMo imports").traces
}

/// For a sample of LoCoMo questions: factors of every turn at the end of the conversation with the
/// question as the query, labelled important when the turn is evidence for it.
fn samples(traces: &[Trace], config: &ValueConfig) -> Vec<(Factors, Label)> {
    let mut out = Vec::new();
    for trace in traces {
        let graph = detect(trace);
        let uses: Vec<u32> = trace.chunks.iter().map(|c| graph.use_count(c.id)).collect();
        let at = trace.calls.len() as u32;
        for probe in trace
            .probes
            .iter()
            .filter(|p| !p.evidence_chunks.is_empty())
            .step_by(10)
        {
            let values = score_trace(trace, config, &uses, at, Some(&probe.question));
            for v in values {
                let label = if probe.evidence_chunks.contains(&v.chunk) {
                    Label::Important
                } else {
                    Label::Useless
                };
                out.push((v.factors, label));
            }
        }
    }
    out
}

#[test]
fn locomo_evidence_ranks_high_and_weights_fitted_on_labels_generalize() {
    let traces = locomo();
    let research = ValueConfig::preset("research").expect("preset");
    // Fit on five conversations, measure on the other five.
    let (train, test) = traces.split_at(5);
    let train = samples(train, &research);
    let test = samples(test, &research);
    assert!(test.iter().any(|(_, l)| *l == Label::Important));
    let before = agreement(&test, &research);
    let fitted = fit_weights(&train, &research);
    let tuned = ValueConfig {
        weights: fitted.weights.clone(),
        ..research.clone()
    };
    let after = agreement(&test, &tuned);
    eprintln!(
        "LoCoMo evidence vs value on held-out conversations: AUC {:.3} with the research preset, {:.3} with weights fitted on the others",
        before.auc, after.auc
    );
    // An evidence turn outranks a random other turn most of the time (relevance to the question
    // carries it), and weights fitted on other conversations' labels do not make it worse.
    assert!(before.auc > 0.7, "{}", before.auc);
    assert!(
        after.auc >= before.auc - 0.02,
        "{} < {}",
        after.auc,
        before.auc
    );
}
