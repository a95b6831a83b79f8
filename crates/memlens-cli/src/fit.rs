//! `memlens fit`: value weights and a value threshold learned from the traces' hindsight
//! (memlens-fit), cross-validated by trace, written as a policy file.

use crate::atomic::write_atomically;
use crate::input::{ImportedFiles, Inputs};
use crate::out::{self, outln};
use crate::problems::report_unreadable;
use crate::sim::resolve_policy;
use memlens_core::cost::PriceTable;
use memlens_core::policy::{PolicyConfig, RunKind};
use memlens_core::value::Factors;
use memlens_core::Trace;
use memlens_fit::{
    cases, fit_and_validate, total, EdgeMargin, FieldDrops, FitOptions, Fitted, Fold, Outcome,
    WeightsFrom,
};
use memlens_report::fmt::truncate;
use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;

/// What `fit` was asked.
pub(crate) struct FitArgs<'a> {
    pub inputs: &'a Inputs,
    /// The policy to fit: a built-in name or a policy file.
    pub policy: &'a str,
    pub budget: u32,
    pub max_miss_rate: f64,
    pub allow_more_misses: bool,
    pub confidence: f64,
    pub keep_all_fields: bool,
    pub folds: usize,
    pub output: Option<&'a Path>,
    pub json: bool,
}

#[derive(Serialize)]
struct FoldRow {
    fold: usize,
    train: Outcome,
    validation: Outcome,
    base_validation: Outcome,
    weights: WeightsFrom,
    threshold: Option<f32>,
    size_exponent: Option<f32>,
    cleanup: Option<memlens_core::policy::Cleanup>,
    minify_json: bool,
    toon_json: bool,
    /// Whether the assistant's echoed replies are evicted (`evict_echoed_replies`).
    echoed_replies: bool,
    /// JSON fields dropped from tool results, over all tools.
    fields_dropped: usize,
    /// The threshold's edge on the fold's training traces and the margin kept below it (a
    /// zero ceiling only).
    edge: Option<EdgeMargin>,
}

#[derive(Serialize)]
struct Report<'a> {
    base: &'a str,
    budget: u32,
    max_miss_rate: f64,
    confidence: f64,
    /// The ceiling the fit on every trace applied (lowered to the base's share of calls with a
    /// miss unless more were allowed).
    ceiling: f64,
    traces: usize,
    folds: Vec<FoldRow>,
    validation: Outcome,
    base_validation: Outcome,
    /// The fit on every trace: the policy written.
    policy: &'a PolicyConfig,
    weights_from: WeightsFrom,
    train: Outcome,
    base_train: Outcome,
    within_ceiling: bool,
    auc: f32,
    samples: usize,
    /// The JSON fields the fit on every trace dropped and the replays that chose them.
    field_drops: &'a FieldDrops,
    /// The fit on every trace's threshold edge and margin (a zero ceiling only).
    edge: Option<EdgeMargin>,
}

/// `memlens fit`: checks the shares asked, resolves the base policy and runs the fit; exit
/// status 1 when an input could not be read.
pub(crate) fn run(args: FitArgs) -> Result<ExitCode, String> {
    if !(0.0..=1.0).contains(&args.max_miss_rate) {
        return Err(format!(
            "--max-miss-rate {}: a share, 0 to 1",
            args.max_miss_rate
        ));
    }
    if !(0.0..=1.0).contains(&args.confidence) {
        return Err(format!("--confidence {}: a share, 0 to 1", args.confidence));
    }
    let base = resolve_policy(args.policy)?;
    let errors = fit_cmd(&args, &base)?;
    Ok(report_unreadable(&errors))
}

/// Runs the fit; prints the folds' train and validation figures and the weights' change from
/// the base, writes the policy when asked. Returns the errors of inputs that could not be read.
fn fit_cmd(args: &FitArgs, base: &PolicyConfig) -> Result<Vec<String>, String> {
    let (prices, traces, errors) = read_traces(args.inputs)?;
    let options = fit_options(args, base);
    let cases = cases(&traces);
    let (fitted, folds) =
        fit_and_validate(&cases, args.folds, &options, &prices).map_err(|e| e.to_string())?;
    let rows = fold_rows(&folds);

    if let Some(path) = args.output {
        write_policy(path, &fitted.policy)?;
    }
    if args.json {
        print_json(args, base, traces.len(), rows, &fitted)?;
        return Ok(errors);
    }
    print_heading(args, base, traces.len(), rows.len());
    print_folds(base, &rows);
    outln!();
    print_fitted(base, &fitted);
    if let Some(path) = args.output {
        outln!("wrote {}", path.display());
    }
    Ok(errors)
}

/// The price table, the traces with a call, and the inputs that could not be read; an error
/// when no trace with a call could be read.
fn read_traces(inputs: &Inputs) -> Result<(PriceTable, Vec<Trace>, Vec<String>), String> {
    let (prices, ImportedFiles { imports, errors }) = inputs.read()?;
    let traces: Vec<_> = imports
        .into_iter()
        .flat_map(|(_, i)| i.traces)
        .filter(|t| !t.calls.is_empty())
        .collect();
    if traces.is_empty() {
        return Err(format!(
            "no trace with a call could be read{}",
            if errors.is_empty() {
                String::new()
            } else {
                format!(": {}", errors.join("; "))
            }
        ));
    }
    Ok((prices, traces, errors))
}

/// The fit's options: the defaults, with what the command line asked.
fn fit_options(args: &FitArgs, base: &PolicyConfig) -> FitOptions {
    FitOptions {
        base: base.clone(),
        budget: args.budget,
        max_miss_rate: args.max_miss_rate,
        no_more_misses_than_base: !args.allow_more_misses,
        confidence: args.confidence,
        field_drop_shares: if args.keep_all_fields {
            Vec::new()
        } else {
            FitOptions::default().field_drop_shares
        },
        ..FitOptions::default()
    }
}

/// Each fold's figures and the settings its fit chose.
fn fold_rows(folds: &[Fold]) -> Vec<FoldRow> {
    folds
        .iter()
        .map(|f| FoldRow {
            fold: f.index + 1,
            train: f.fitted.train,
            validation: f.validation,
            base_validation: f.base_validation,
            weights: f.fitted.weights_from,
            threshold: f.fitted.policy.value_threshold,
            size_exponent: f.fitted.policy.size_exponent,
            cleanup: f.fitted.policy.cleanup,
            minify_json: f.fitted.policy.compress.minify_json,
            toon_json: f.fitted.policy.compress.toon_json,
            echoed_replies: f.fitted.policy.evict_echoed_replies.is_some(),
            fields_dropped: fields_dropped(&f.fitted.policy),
            edge: f.fitted.edge,
        })
        .collect()
}

/// The `--json` document: what was asked, the folds and the fit on every trace.
fn print_json(
    args: &FitArgs,
    base: &PolicyConfig,
    traces: usize,
    rows: Vec<FoldRow>,
    fitted: &Fitted,
) -> Result<(), String> {
    let validation = total(rows.iter().map(|r| r.validation));
    let base_validation = total(rows.iter().map(|r| r.base_validation));
    out::json(&Report {
        base: &base.name,
        budget: args.budget,
        max_miss_rate: args.max_miss_rate,
        confidence: args.confidence,
        ceiling: fitted.ceiling,
        traces,
        folds: rows,
        validation,
        base_validation,
        policy: &fitted.policy,
        weights_from: fitted.weights_from,
        train: fitted.train,
        base_train: fitted.base_train,
        within_ceiling: fitted.within_ceiling,
        auc: fitted.regression.auc,
        samples: fitted.samples,
        field_drops: &fitted.field_drops,
        edge: fitted.edge,
    })
}

/// What was fitted, at which budget and ceiling, on how many traces and folds.
fn print_heading(args: &FitArgs, base: &PolicyConfig, traces: usize, folds: usize) {
    outln!(
        "fit {} at {} tokens, misses in at most {:.1}% of calls{} (in {:.0}% of resamplings): \
         {} trace(s){}",
        base.name,
        args.budget,
        args.max_miss_rate * 100.0,
        if args.allow_more_misses {
            String::new()
        } else {
            format!(" and no more than {}", base.name)
        },
        args.confidence * 100.0,
        traces,
        if folds == 0 {
            String::new()
        } else {
            format!(", {folds}-fold by trace")
        }
    );
}

/// The folds table: each fold's train and validation figures beside the base's, and what its
/// fit chose; then the held-out figures over all folds and each fold's threshold margin.
fn print_folds(base: &PolicyConfig, rows: &[FoldRow]) {
    if rows.is_empty() {
        return;
    }
    let validation = total(rows.iter().map(|r| r.validation));
    let base_validation = total(rows.iter().map(|r| r.base_validation));
    outln!();
    outln!(
        "  {:<5} {:>14} {:>18} {:>18} {:>8} {:>9} {:>8} {:>9} {:>8} {:>6} {:>6}",
        "fold",
        "train",
        "validation",
        format!("{} (valid.)", truncate(&base.name, 8)),
        "weights",
        "threshold",
        "size exp",
        "cleanup",
        "JSON",
        "fields",
        "echoes"
    );
    for r in rows {
        outln!(
            "  {:<5} {:>14} {:>18} {:>18} {:>8} {:>9} {:>8} {:>9} {:>8} {:>6} {:>6}",
            r.fold,
            figures(&r.train),
            figures(&r.validation),
            figures(&r.base_validation),
            weights_name(r.weights),
            threshold(r.threshold),
            exponent(r.size_exponent),
            cleanup(r.cleanup),
            json_form(r.minify_json, r.toon_json),
            r.fields_dropped,
            if r.echoed_replies { "evict" } else { "keep" }
        );
    }
    outln!(
        "  {:<5} {:>14} {:>18} {:>18}",
        "all",
        "",
        figures(&validation),
        figures(&base_validation)
    );
    outln!("  (saved input tokens / calls with a miss)");
    for r in rows {
        if let Some(e) = &r.edge {
            outln!("  fold {}: {}", r.fold, edge_note(e));
        }
    }
}

/// The fit on every trace: its figures beside the base's, the settings chosen, the fields
/// dropped and the weights learned against the base's.
fn print_fitted(base: &PolicyConfig, fitted: &Fitted) {
    outln!(
        "on every trace: {} {} vs {} {}; {} weights, threshold {}, size exponent {}, cleanup {}, \
         JSON results {}{}{}",
        fitted.policy.name,
        figures(&fitted.train),
        base.name,
        figures(&fitted.base_train),
        weights_name(fitted.weights_from),
        match (
            fitted.policy.value_threshold,
            fitted.policy.value_threshold_runs
        ) {
            (Some(_), RunKind::Agent) =>
                format!("{} in agent runs", threshold(fitted.policy.value_threshold)),
            (Some(_), RunKind::Conversation) => {
                format!(
                    "{} in conversations",
                    threshold(fitted.policy.value_threshold)
                )
            }
            _ => threshold(fitted.policy.value_threshold),
        },
        exponent(fitted.policy.size_exponent),
        cleanup(fitted.policy.cleanup),
        match (
            fitted.policy.compress.minify_json,
            fitted.policy.compress.toon_json
        ) {
            (true, true) => "minified or as TOON, the fewer tokens",
            (false, true) => "as TOON where fewer tokens",
            (true, false) => "minified",
            (false, false) => "as sent",
        },
        if fitted.policy.evict_echoed_replies.is_some() {
            ", echoed replies evicted"
        } else {
            ""
        },
        if fitted.within_ceiling {
            String::new()
        } else {
            format!(
                " (no candidate within the ceiling, {:.1}%: the fewest misses)",
                fitted.ceiling * 100.0
            )
        }
    );
    if let Some(e) = &fitted.edge {
        outln!("{}", edge_note(e));
    }
    print_field_drops(&fitted.field_drops);
    outln!(
        "learned from {} chunk-call samples (AUC {:.2} separating used from unused):",
        fitted.samples,
        fitted.regression.auc
    );
    let (learned, base) = (
        fitted.regression.weights.to_array(),
        fitted.base_weights.to_array(),
    );
    for ((name, l), b) in Factors::NAMES.iter().zip(learned).zip(base) {
        outln!("  {:<16} {:>5.2} -> {:>5.2}", name, b, l);
    }
}

/// The fields dropped, and the base's replays with each candidate set.
fn print_field_drops(drops: &FieldDrops) {
    if drops.trials.is_empty() {
        return;
    }
    let trials: Vec<String> = drops
        .trials
        .iter()
        .map(|t| match t.share {
            None => format!("none {}", figures(&t.outcome)),
            Some(share) => format!(
                "{} fields used in <= {:.0}% of results {}{}",
                t.fields,
                share * 100.0,
                figures(&t.outcome),
                t.held_out.map_or_else(String::new, |h| format!(
                    " ({} chosen without each fold)",
                    figures(&h)
                ))
            ),
        })
        .collect();
    outln!(
        "JSON fields dropped, tried on the base: {}",
        trials.join("; ")
    );
    for (tool, fields) in &drops.chosen {
        outln!("  {tool}: {}", fields.join(", "));
    }
}

/// Where the threshold was kept below its edge on the training traces, and why.
fn edge_note(e: &EdgeMargin) -> String {
    let folds = FitOptions::default().edge_folds;
    format!(
        "threshold {} tried, {:.2} below the training traces' edge {:.2} ({} times the most the \
         edge moved up, to a threshold missing in the fold left out, when one of {folds} folds \
         of them was left out: a jackknife estimate)",
        threshold(e.threshold),
        e.margin,
        e.edge,
        folds.saturating_sub(1)
    )
}

/// JSON fields the policy drops from tool results, over all tools.
fn fields_dropped(policy: &PolicyConfig) -> usize {
    policy.tools.values().map(|r| r.drop_fields.len()).sum()
}

fn figures(o: &Outcome) -> String {
    format!("{:.1}% / {:.1}%", o.saved() * 100.0, o.miss_rate() * 100.0)
}

fn threshold(t: Option<f32>) -> String {
    t.map_or_else(|| "none".to_string(), |t| format!("{t:.2}"))
}

fn exponent(e: Option<f32>) -> String {
    e.map_or_else(|| "1".to_string(), |e| format!("{e:.1}"))
}

fn cleanup(c: Option<memlens_core::policy::Cleanup>) -> String {
    c.map_or_else(
        || "none".to_string(),
        |c| format!("{:.0}%>{:.0}%", c.trigger * 100.0, c.target * 100.0),
    )
}

fn weights_name(w: WeightsFrom) -> &'static str {
    match w {
        WeightsFrom::Fitted => "fitted",
        WeightsFrom::Base => "base",
    }
}

/// Writes the policy as TOML (a `.toml` name) or JSON, atomically, after checking the text reads
/// back as the same policy: what is written is what was measured.
fn write_policy(path: &Path, policy: &PolicyConfig) -> Result<(), String> {
    let toml = path.extension().is_some_and(|e| e == "toml");
    let text = if toml {
        toml::to_string(policy).map_err(|e| format!("{}: {e}", path.display()))?
    } else {
        serde_json::to_string_pretty(policy).map_err(|e| format!("{}: {e}", path.display()))? + "\n"
    };
    let back = if toml {
        PolicyConfig::from_toml(&text)
    } else {
        PolicyConfig::from_json(&text)
    }
    .map_err(|e| {
        format!(
            "{}: the fitted policy does not read back: {e}",
            path.display()
        )
    })?;
    if &back != policy {
        return Err(format!(
            "{}: the fitted policy does not read back as itself",
            path.display()
        ));
    }
    write_atomically(path, text.as_bytes())
}

/// How JSON tool results are sent, in a word (the folds table's column).
fn json_form(minify: bool, toon: bool) -> &'static str {
    match (minify, toon) {
        (true, true) => "min|toon",
        (false, true) => "toon",
        (true, false) => "minify",
        (false, false) => "-",
    }
}
