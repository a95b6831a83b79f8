//! The fit's own tests: the samples, the candidates replayed, the ceiling and cross-validation.

use super::*;
use crate::ceiling::choose;
use memlens_core::builder::{Message, TraceBuilder};
use memlens_core::model::Category;
use memlens_core::policy::RunKind;
use memlens_core::tokens::{count_trace, TokenCounter};
use memlens_core::value::{Label, ValueConfig};

/// A support chat: each user turn gives a code that the next reply quotes; chatter between.
fn trace(seed: u32) -> Trace {
    let mut b = TraceBuilder::new(format!("t{seed}"), "test");
    b.push_message(Message::text("system", "You are a support agent."), None);
    for i in 0..12 {
        let code = format!("ZK{}{:03}", seed, i * 7 + 11);
        b.push_message(
            Message::text(
                "user",
                format!("Ticket {code}: my router drops the line at night."),
            ),
            None,
        );
        b.push_message(
            Message::text("assistant", format!("Checking ticket {code}.")),
            None,
        );
        b.push_message(
            Message::text(
                "user",
                "Thanks, and the weather here is lovely today by the way.",
            ),
            None,
        );
        b.push_message(Message::text("assistant", "Glad to hear it!"), None);
    }
    b.reconstruct_calls();
    let (mut trace, _) = b.finish();
    count_trace(&mut trace, &TokenCounter::for_model(None));
    trace
}

#[test]
fn samples_are_labelled_by_later_use() {
    let t = trace(1);
    let cases = cases(std::slice::from_ref(&t));
    let samples = samples(&cases[0], &ValueConfig::default());
    let pairs: usize = t
        .calls
        .iter()
        .map(|c| {
            c.input
                .iter()
                .filter(|&&id| t.chunk(id).category != Category::System)
                .count()
        })
        .sum();
    assert_eq!(samples.len(), pairs);
    let important = samples
        .iter()
        .filter(|(_, l)| *l == Label::Important)
        .count();
    assert!(important > 0 && important < samples.len(), "{important}");
}

#[test]
fn the_fit_is_never_worse_than_the_base_on_its_training_traces() {
    let traces: Vec<Trace> = (0..4).map(trace).collect();
    let cases = cases(&traces);
    let refs: Vec<&Case> = cases.iter().collect();
    let options = FitOptions {
        budget: 300,
        max_miss_rate: 0.5,
        ..FitOptions::default()
    };
    let fitted = fit(&refs, &options, &PriceTable::builtin()).expect("fits");
    // The base's weights without a threshold are among the candidates, and the base is within
    // this ceiling: the chosen one is within it too and saves at least as much.
    assert!(
        fitted.base_train.miss_rate() <= options.max_miss_rate,
        "{:?}",
        fitted.base_train
    );
    assert!(fitted.within_ceiling);
    assert!(fitted.train.saved() >= fitted.base_train.saved());
    assert!(fitted.train.miss_rate() <= fitted.ceiling);
    let grid = 2
        * (1 + options.size_exponents.len())
        * (1 + options.thresholds.len())
        * (1 + options.cleanups.len());
    // The grid, then finer thresholds above its best where it had one within the ceiling,
    // then the best of those with the echoed replies evicted (the only such candidate).
    let (echoed, rest) = fitted.candidates.split_last().expect("candidates");
    assert!(echoed.echoed_replies);
    assert!(rest.iter().all(|c| !c.echoed_replies));
    let best = choose(rest, |c| within_ceiling(&c.per_trace, fitted.ceiling, 0.9));
    let best = best.expect("a best candidate");
    assert_eq!(
        (echoed.weights, echoed.threshold, echoed.size_exponent),
        (best.weights, best.threshold, best.size_exponent)
    );
    let finer = &rest[grid..];
    assert!(finer.is_empty() || finer.len() == options.threshold_steps);
    for c in finer {
        let t = c.threshold.expect("a finer threshold");
        assert!(!options.thresholds.contains(&t), "{t} is on the grid");
    }
    // The chosen policy replays to the figures the fit reported.
    let again = evaluate(
        &refs,
        &fitted.policy,
        options.budget,
        &PriceTable::builtin(),
    )
    .expect("replays");
    assert_eq!(again, fitted.train);
    // Its value settings are the policy's own now (no preset), the weights the chosen ones.
    assert_eq!(fitted.policy.value_preset, None);
    let chosen = match fitted.weights_from {
        WeightsFrom::Fitted => &fitted.regression.weights,
        WeightsFrom::Base => &fitted.base_weights,
    };
    assert_eq!(&fitted.policy.value.weights, chosen);
    // Support chats: a threshold, where one was chosen, acts in conversations only.
    assert_eq!(run_kind(&traces), RunKind::Conversation);
    assert_eq!(
        fitted.policy.value_threshold.is_some(),
        fitted.policy.value_threshold_runs == RunKind::Conversation,
        "{:?}",
        fitted.policy
    );
}

#[test]
fn lossless_json_forms_are_candidates_where_the_tool_results_are_json() {
    let mut b = TraceBuilder::new("json", "test");
    b.push_message(Message::text("system", "You are a travel agent."), None);
    for i in 0..4 {
        b.push_message(Message::text("user", format!("Flights for day {i}?")), None);
        let flights = r#"[{"flight_number": "HAT069", "origin": "JFK", "price": 121}, {"flight_number": "HAT083", "origin": "JFK", "price": 100}]"#;
        b.push_message(Message::text("tool", flights), None);
        b.push_message(Message::text("assistant", "HAT083 costs 100."), None);
    }
    b.reconstruct_calls();
    let (mut trace, _) = b.finish();
    count_trace(&mut trace, &TokenCounter::for_model(None));
    let traces = [trace, self::trace(1)];
    assert_eq!(run_kind(&traces[..1]), RunKind::Agent);
    assert_eq!(run_kind(&traces), RunKind::Any);
    assert_eq!(run_kind(&[]), RunKind::Any);
    let mostly = [traces[0].clone(), traces[0].clone(), traces[1].clone()];
    assert_eq!(run_kind(&mostly), RunKind::Agent);
    let cases = cases(&traces);
    let refs: Vec<&Case> = cases.iter().collect();
    let options = FitOptions {
        budget: 100_000,
        thresholds: vec![],
        size_exponents: vec![],
        cleanups: vec![],
        // The JSON forms alone are counted here.
        try_echoed_replies: false,
        ..FitOptions::default()
    };
    let fitted = fit(&refs, &options, &PriceTable::builtin()).expect("fits");
    // Two weights x as sent, minified, and the fewer of minified and TOON: nothing is
    // evicted under this budget, so the lossless forms save tokens with no miss, and TOON's
    // table (the keys written once) saves the most.
    assert_eq!(fitted.candidates.len(), 6);
    let saved = |minify: bool, toon: bool| {
        let c = fitted
            .candidates
            .iter()
            .find(|c| (c.minify_json, c.toon_json) == (minify, toon))
            .expect("the form was tried");
        c.outcome.saved()
    };
    assert!(saved(false, false) == 0.0 && 0.0 < saved(true, false));
    assert!(saved(true, false) < saved(true, true));
    assert!(fitted.policy.compress.minify_json && fitted.policy.compress.toon_json);
    assert!(fitted.train.saved() > 0.0 && fitted.base_train.saved() == 0.0);
    assert_eq!(fitted.train.miss_rate(), 0.0);
    // Not offered when the base minifies already, or when no result is JSON.
    let mut base = options.base.clone();
    base.compress.minify_json = true;
    let with = FitOptions {
        base,
        ..options.clone()
    };
    assert_eq!(
        fit(&refs, &with, &PriceTable::builtin())
            .expect("fits")
            .candidates
            .len(),
        2
    );
    let plain = [self::trace(2)];
    let plain = super::cases(&plain);
    let plain: Vec<&Case> = plain.iter().collect();
    assert_eq!(
        fit(&plain, &options, &PriceTable::builtin())
            .expect("fits")
            .candidates
            .len(),
        2
    );
}

#[test]
fn the_ceiling_holds_in_resamplings_of_the_traces() {
    // 20 traces of 10 calls, misses in 2 calls of one trace: 1% of the calls, within a 1%
    // ceiling on these traces, but over it whenever a resampling draws that trace twice
    // (about a quarter of them).
    let mut runs = vec![(10, 0); 20];
    runs[7] = (10, 2);
    assert!(within_ceiling(&runs, 0.01, 0.0));
    assert!(!within_ceiling(&runs, 0.01, 0.9));
    assert!(within_ceiling(&runs, 0.01, 0.6));
    assert!(!within_ceiling(&runs, 0.005, 0.0));
    // No miss at all holds at a zero ceiling, in every resampling.
    assert!(within_ceiling(&[(10, 0); 5], 0.0, 1.0));
    assert!(!within_ceiling(&[(10, 0), (10, 1)], 0.0, 0.0));
    // Misses spread over every trace hold in every resampling.
    assert!(within_ceiling(&[(100, 1); 30], 0.01, 1.0));
    assert!(within_ceiling(&[], 0.01, 0.9));
}

#[test]
fn the_ceiling_is_lowered_to_the_base_policys_own_misses() {
    // Each reply quotes the ticket given two user turns before: a budget that keeps only
    // the latest turns misses it.
    let late = |seed: u32| {
        let mut b = TraceBuilder::new(format!("late{seed}"), "test");
        b.push_message(Message::text("system", "You are a support agent."), None);
        let code = |i: u32| format!("ZK{seed}{:03}", i * 7 + 11);
        for i in 0..12 {
            let text = format!("Ticket {}: my router drops the line at night.", code(i));
            b.push_message(Message::text("user", text), None);
            let quoted = code(i.saturating_sub(2));
            let reply = format!("Ticket {quoted} is fixed; the weather is lovely today.");
            b.push_message(Message::text("assistant", reply), None);
        }
        b.reconstruct_calls();
        let (mut trace, _) = b.finish();
        count_trace(&mut trace, &TokenCounter::for_model(None));
        trace
    };
    let traces: Vec<Trace> = (0..4).map(late).collect();
    let cases = cases(&traces);
    let refs: Vec<&Case> = cases.iter().collect();
    let options = FitOptions {
        budget: 120,
        max_miss_rate: 0.9,
        thresholds: vec![0.3, 0.5],
        size_exponents: vec![],
        cleanups: vec![],
        ..FitOptions::default()
    };
    let lowered = fit(&refs, &options, &PriceTable::builtin()).expect("fits");
    let base = lowered.base_train.miss_rate();
    assert!(
        base > 0.0 && base < 0.9,
        "{base}: the test needs some misses"
    );
    assert_eq!(lowered.ceiling, base);
    assert!(lowered.within_ceiling && lowered.train.miss_rate() <= base);
    // A candidate with more misses than the base saves more, and is taken when allowed.
    let user = fit(
        &refs,
        &FitOptions {
            no_more_misses_than_base: false,
            ..options.clone()
        },
        &PriceTable::builtin(),
    )
    .expect("fits");
    assert_eq!(user.ceiling, 0.9);
    assert!(user.train.miss_rate() > base, "{:?}", user.train);
    assert!(user.train.saved() > lowered.train.saved());
}

#[test]
fn at_a_zero_ceiling_a_threshold_one_trace_binds_is_kept_below_its_edge() {
    // Nine chats whose turns nothing later quotes, and one whose last reply quotes the code
    // its first user turn gave: only that trace misses, and only at thresholds above the
    // code's value. It binds the edge alone: without its fold, every threshold tried is
    // clean.
    let chat = |seed: u32, quoted: bool| {
        let mut b = TraceBuilder::new(format!("chat{seed}"), "test");
        b.push_message(Message::text("system", "You are a support agent."), None);
        let first = if quoted {
            "My booking code is QX7731, for the record."
        } else {
            "Hello there, I just wanted to chat a little."
        };
        b.push_message(Message::text("user", first), None);
        b.push_message(Message::text("assistant", "Noted."), None);
        for i in 0..10 {
            let text = format!("Thanks, the weather is lovely today, day {seed} {i}.");
            b.push_message(Message::text("user", text), None);
            b.push_message(Message::text("assistant", "Glad to hear it!"), None);
        }
        b.push_message(Message::text("user", "What was it again?"), None);
        let last = if quoted {
            "It is QX7731."
        } else {
            "Nothing much."
        };
        b.push_message(Message::text("assistant", last), None);
        b.reconstruct_calls();
        let (mut trace, _) = b.finish();
        count_trace(&mut trace, &TokenCounter::for_model(None));
        trace
    };
    let traces: Vec<Trace> = (0..10).map(|i| chat(i, i == 9)).collect();
    let cases = cases(&traces);
    let refs: Vec<&Case> = cases.iter().collect();
    let options = FitOptions {
        budget: 100_000,
        // The threshold acts from the first call, under this budget the only rule that does.
        base: PolicyConfig {
            act_from: None,
            ..PolicyConfig::builtin("value").expect("built in")
        },
        // The quoted code is worth more than the default grid's top (0.6) here.
        thresholds: (1..=19).map(|i| i as f32 * 0.05).collect(),
        size_exponents: vec![],
        cleanups: vec![],
        field_drop_shares: vec![],
        try_echoed_replies: false,
        ..FitOptions::default()
    };
    let prices = PriceTable::builtin();
    let at_edge = fit(
        &refs,
        &FitOptions {
            edge_folds: 0,
            ..options.clone()
        },
        &prices,
    )
    .expect("fits");
    // Nothing is evicted under this budget but by a threshold: the base misses nothing.
    assert_eq!(at_edge.ceiling, 0.0);
    assert!(at_edge.within_ceiling && at_edge.edge.is_none());
    let edge = at_edge
        .policy
        .value_threshold
        .expect("some threshold is clean on every trace");
    let above = at_edge
        .candidates
        .iter()
        .filter(|c| c.threshold.is_some_and(|t| t > edge))
        .filter(|c| c.per_trace[9].1 > 0);
    assert!(above.count() > 0, "the quoting trace misses above {edge}");

    let kept_below = fit(&refs, &options, &prices).expect("fits");
    let margin = kept_below.edge.expect("a margin");
    assert_eq!(margin.edge, edge);
    // Without fold 4 (traces 4 and 9) the highest threshold tried is clean: the margin is
    // four times that move.
    let highest = (kept_below.candidates.iter())
        .filter_map(|c| c.threshold)
        .fold(0.0f32, f32::max);
    assert!(
        (margin.margin - 4.0 * (highest - edge)).abs() < 1e-5,
        "{margin:?}"
    );
    assert_eq!(kept_below.policy.value_threshold, margin.threshold);
    assert!(margin.threshold.is_none_or(|t| t < edge));
    assert_eq!(kept_below.train.calls_with_misses, 0);
    assert!(kept_below.train.saved() <= at_edge.train.saved());
}

/// A small grid (two thresholds, one size exponent) at budget 300: folds in seconds.
fn small_grid() -> FitOptions {
    FitOptions {
        budget: 300,
        thresholds: vec![0.2, 0.4],
        size_exponents: vec![0.0],
        ..FitOptions::default()
    }
}

#[test]
fn cross_validation_holds_out_every_trace_once() {
    let traces: Vec<Trace> = (0..6).map(trace).collect();
    let cases = cases(&traces);
    let options = small_grid();
    let folds = cross_validate(&cases, 3, &options, &PriceTable::builtin()).expect("folds");
    assert_eq!(folds.len(), 3);
    let held = total(folds.iter().map(|f| f.validation));
    assert_eq!(held.traces, traces.len());
    let all: Vec<&Case> = cases.iter().collect();
    let everything =
        evaluate(&all, &options.base, options.budget, &PriceTable::builtin()).expect("replays");
    let base_held = total(folds.iter().map(|f| f.base_validation));
    assert_eq!(
        base_held, everything,
        "the base's folds add up to the whole"
    );
    assert!(matches!(
        cross_validate(&cases[..2], 3, &options, &PriceTable::builtin()),
        Err(FitError::TooFewTraces {
            folds: 3,
            traces: 2
        })
    ));
}

#[test]
fn fits_side_by_side_equal_fits_one_by_one() {
    let traces: Vec<Trace> = (0..6).map(trace).collect();
    let cases = cases(&traces);
    let options = small_grid();
    let prices = PriceTable::builtin();
    let (fitted, folds) = fit_and_validate(&cases, 3, &options, &prices).expect("fits");
    let all: Vec<&Case> = cases.iter().collect();
    let alone = fit(&all, &options, &prices).expect("fit");
    assert_eq!(format!("{fitted:?}"), format!("{alone:?}"));
    for (i, fold) in folds.iter().enumerate() {
        let train: Vec<&Case> = (0..cases.len())
            .filter(|j| j % 3 != i)
            .map(|j| &cases[j])
            .collect();
        let one = fit(&train, &options, &prices).expect("fold fit");
        assert_eq!(fold.index, i);
        assert_eq!(format!("{:?}", fold.fitted), format!("{one:?}"));
    }
    let (_, none) = fit_and_validate(&cases, 0, &options, &prices).expect("no folds");
    assert!(none.is_empty());
}
