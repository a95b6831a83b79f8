//! `memlens simulate`, `sweep` and `compare`: replay traces under policies and budgets.

use crate::input::{read, ImportedFiles, Inputs};
use crate::out::outln;
use memlens_core::analysis::simulated_compactions;
use memlens_core::compaction::{CompactionReport, ItemKind};
use memlens_core::cost::PriceTable;
use memlens_core::policy::PolicyConfig;
use memlens_core::simulate::{simulate, SimReport, Totals};
use memlens_core::Trace;
use memlens_report::fmt::{truncate, usd};
use serde::Serialize;
use std::path::Path;

/// Options shared by the three commands.
pub struct SimArgs {
    /// The traces, read as every command reads them.
    pub inputs: Inputs,
    /// JSON output.
    pub json: bool,
}

/// Policies named on the command line (names or files): `default` when none are given, every
/// built-in policy for `all`.
pub fn resolve_policies(specs: &[String], default: &[&str]) -> Result<Vec<PolicyConfig>, String> {
    match specs {
        [] => default.iter().map(|s| resolve_policy(s)).collect(),
        [all] if all == "all" => memlens_core::policy::BUILTIN
            .iter()
            .map(|s| resolve_policy(s))
            .collect(),
        named => named.iter().map(|s| resolve_policy(s)).collect(),
    }
}

/// A built-in policy name, or a JSON/TOML policy file.
pub fn resolve_policy(spec: &str) -> Result<PolicyConfig, String> {
    let path = Path::new(spec);
    if path.is_file() {
        let text = String::from_utf8(read(path)?).map_err(|e| format!("{spec}: not UTF-8: {e}"))?;
        let mut config = match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => PolicyConfig::from_toml(&text),
            Some("json") => PolicyConfig::from_json(&text),
            _ => PolicyConfig::parse(&text),
        }
        .map_err(|e| format!("{spec}: {e}"))?;
        if config.name.is_empty() || config.name == PolicyConfig::default().name {
            config.name = path
                .file_stem()
                .map_or_else(|| spec.to_string(), |s| s.to_string_lossy().into_owned());
        }
        return Ok(config);
    }
    PolicyConfig::builtin(spec).map_err(|e| e.to_string())
}

/// The traces of every input that could be read (subagents linked), the price table, and the
/// inputs that could not be read, for the caller to report (`crate::input::import_files`).
fn load(args: &SimArgs) -> Result<(Vec<Trace>, PriceTable, Vec<String>), String> {
    let (prices, ImportedFiles { imports, errors }) = args.inputs.read()?;
    let traces = imports.into_iter().flat_map(|(_, i)| i.traces).collect();
    Ok((traces, prices, errors))
}

fn budget_of(policy: &PolicyConfig, budget: Option<u32>) -> Result<u32, String> {
    budget
        .or(policy.budget)
        .ok_or_else(|| format!("policy {:?} sets no budget: pass --budget N", policy.name))
}

fn run_one(
    traces: &[Trace],
    policy: &PolicyConfig,
    budget: u32,
    prices: &PriceTable,
) -> Result<SimReport, String> {
    simulate(traces, policy, budget, prices).map_err(|e| e.to_string())
}

/// `memlens simulate` (`summaries`: also the summaries the policy made, per trace).
pub fn simulate_cmd(
    args: &SimArgs,
    policy: &str,
    budget: Option<u32>,
    summaries: bool,
) -> Result<Vec<String>, String> {
    let (traces, prices, errors) = load(args)?;
    if traces.is_empty() {
        return Ok(errors);
    }
    let policy = resolve_policy(policy)?;
    let budget = budget_of(&policy, budget)?;
    let report = run_one(&traces, &policy, budget, &prices)?;
    let made: Vec<Vec<CompactionReport>> = if summaries {
        traces
            .iter()
            .map(|t| {
                let graph = memlens_core::references::detect(t);
                simulated_compactions(t, &graph, &policy, budget, &prices)
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    if args.json {
        if !summaries {
            print_json(&report)?;
            return Ok(errors);
        }
        let mut value = serde_json::to_value(&report).map_err(|e| e.to_string())?;
        if let Some(list) = value.get_mut("traces").and_then(|t| t.as_array_mut()) {
            for (t, made) in list.iter_mut().zip(&made) {
                t["summaries"] = serde_json::to_value(made).map_err(|e| e.to_string())?;
            }
        }
        print_json(&value)?;
        return Ok(errors);
    }
    outln!(
        "policy {} at budget {budget} on {} trace(s), {} calls",
        report.policy,
        report.traces.len(),
        report.totals.calls
    );
    outln!();
    outln!(
        "  {:<28} {:>6} {:>11} {:>11} {:>7} {:>10} {:>7} {:>5}",
        "trace",
        "calls",
        "sent",
        "full",
        "saved",
        "cost",
        "misses",
        "over"
    );
    for t in report.traces.iter().take(20) {
        let x = &t.totals;
        outln!(
            "  {:<28} {:>6} {:>11} {:>11} {:>6.1}% {:>10} {:>7} {:>5}",
            truncate(&t.id, 28),
            x.calls,
            x.input_tokens,
            x.full_input_tokens,
            pct(x.saved_tokens, x.full_input_tokens),
            usd(x.cost_usd),
            x.misses,
            x.over_budget_calls
        );
    }
    if report.traces.len() > 20 {
        outln!("  ... {} more trace(s)", report.traces.len() - 20);
    }
    outln!();
    print_totals(&report.totals);
    let shown: Vec<_> = report
        .traces
        .iter()
        .flat_map(|t| {
            t.calls
                .iter()
                .flat_map(move |c| c.misses.iter().map(move |m| (t, m)))
        })
        .take(10)
        .collect();
    if summaries {
        print_summaries(&report, &made);
    }
    if !shown.is_empty() {
        outln!();
        outln!("  first misses (a later step used content the policy had dropped):");
        for (t, m) in shown {
            outln!(
                "    {} call {}: {} used {:?} from {}",
                t.id,
                m.call,
                m.by,
                truncate(&m.evidence, 40),
                m.chunks.join(", ")
            );
        }
    }
    Ok(errors)
}

/// The summaries the policy made, trace by trace, with what each kept and lost.
fn print_summaries(report: &SimReport, made: &[Vec<CompactionReport>]) {
    outln!();
    let n: usize = made.iter().map(Vec::len).sum();
    outln!("  summaries the policy made: {n}");
    for (t, made) in report.traces.iter().zip(made) {
        for s in made {
            let tally = |kind: ItemKind, name: &str| {
                let t = s.tally(kind);
                (t.replaced > 0).then(|| format!("{name} {}/{}", t.kept, t.replaced))
            };
            let kept: Vec<String> = [
                tally(ItemKind::Identifier, "identifiers"),
                tally(ItemKind::Path, "paths"),
                tally(ItemKind::Command, "commands"),
                tally(ItemKind::Number, "numbers"),
                tally(ItemKind::Url, "URLs"),
            ]
            .into_iter()
            .flatten()
            .collect();
            outln!(
                "    {} #{} at call {}: {} chunks ({} tokens) in {} tokens; kept {}; {} later use(s) of lost content",
                truncate(&t.id, 28),
                s.index + 1,
                s.first_call,
                s.replaced_chunks,
                s.replaced_tokens,
                s.summary_tokens,
                if kept.is_empty() { "-".to_string() } else { kept.join(", ") },
                s.later_miss_count
            );
        }
    }
}

/// One row of a sweep or comparison.
#[derive(Serialize)]
struct Row {
    policy: String,
    budget: u32,
    totals: Totals,
}

/// `memlens sweep`.
pub fn sweep_cmd(args: &SimArgs, policy: &str, budgets: &[u32]) -> Result<Vec<String>, String> {
    let (traces, prices, errors) = load(args)?;
    if traces.is_empty() {
        return Ok(errors);
    }
    let policy = resolve_policy(policy)?;
    let mut rows = Vec::new();
    for &budget in budgets {
        let report = run_one(&traces, &policy, budget, &prices)?;
        rows.push(Row {
            policy: policy.name.clone(),
            budget,
            totals: report.totals,
        });
    }
    print_rows(
        args.json,
        &format!("policy {} on {} trace(s)", policy.name, traces.len()),
        &rows,
    )?;
    Ok(errors)
}

/// `memlens compare`.
/// `memlens compare`: every policy at `budget` (or its own), or at each of `budgets`; with
/// `frontier`, the rows on the saved-tokens / miss-rate frontier are marked.
pub fn compare_cmd(
    args: &SimArgs,
    policies: &[String],
    budget: Option<u32>,
    budgets: &[u32],
    frontier: bool,
) -> Result<Vec<String>, String> {
    let (traces, prices, errors) = load(args)?;
    if traces.is_empty() {
        return Ok(errors);
    }
    let all: Vec<String> = memlens_core::policy::BUILTIN
        .iter()
        .map(|s| s.to_string())
        .collect();
    let policies = if policies.is_empty() {
        &all[..]
    } else {
        policies
    };
    let default_budgets = [2000, 4000, 8000];
    let budgets: &[u32] = match (budgets, frontier, budget) {
        ([], true, None) => &default_budgets,
        (b, _, _) => b,
    };
    let mut rows = Vec::new();
    for spec in policies {
        let policy = resolve_policy(spec)?;
        let each: Vec<u32> = if budgets.is_empty() {
            vec![budget_of(&policy, budget)?]
        } else {
            budgets.to_vec()
        };
        for budget in each {
            let report = run_one(&traces, &policy, budget, &prices)?;
            rows.push(Row {
                policy: policy.name.clone(),
                budget,
                totals: report.totals,
            });
        }
    }
    let title = format!("{} trace(s)", traces.len());
    if !frontier {
        print_rows(args.json, &title, &rows)?;
        return Ok(errors);
    }
    let on = memlens_core::simulate::on_frontier(rows.iter().map(|r| &r.totals));
    if args.json {
        let rows: Vec<_> = rows
            .iter()
            .zip(&on)
            .map(|(r, &frontier)| FrontierRow { row: r, frontier })
            .collect();
        print_json(&serde_json::json!({ "rows": rows }))?;
        return Ok(errors);
    }
    // Best savings first: the frontier reads top to bottom, from saving most to missing least.
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| saved_share(&rows[b]).total_cmp(&saved_share(&rows[a])));
    outln!("{title}: tokens saved against calls with a miss, every policy at every budget");
    outln!("(* on the frontier: no other row saves as much with as few misses)");
    outln!();
    let w = name_width(&rows);
    outln!(
        "    {:<w$} {:>7} {:>7} {:>9} {:>8}",
        "policy",
        "budget",
        "saved",
        "miss call",
        "frontier"
    );
    for i in order {
        let r = &rows[i];
        outln!(
            "  {} {:<w$} {:>7} {:>6.1}% {:>8.1}% {:>8}",
            if on[i] { "*" } else { " " },
            r.policy,
            r.budget,
            saved_share(r) * 100.0,
            miss_share(r) * 100.0,
            if on[i] { "yes" } else { "" }
        );
    }
    Ok(errors)
}

#[derive(Serialize)]
struct FrontierRow<'a> {
    #[serde(flatten)]
    row: &'a Row,
    frontier: bool,
}

/// The policy column's width: the longest name, whole (names are how rows are told apart), and
/// at least 26 so short tables keep one shape.
fn name_width(rows: &[Row]) -> usize {
    rows.iter()
        .map(|r| r.policy.chars().count())
        .fold(26, usize::max)
}

fn saved_share(r: &Row) -> f64 {
    r.totals.saved_share()
}

fn miss_share(r: &Row) -> f64 {
    r.totals.miss_share()
}

fn print_rows(json: bool, title: &str, rows: &[Row]) -> Result<(), String> {
    if json {
        return print_json(&serde_json::json!({ "rows": rows }));
    }
    outln!("{title}");
    outln!();
    let w = name_width(rows);
    outln!(
        "  {:<w$} {:>7} {:>12} {:>7} {:>10} {:>10} {:>7} {:>9} {:>6} {:>5}",
        "policy",
        "budget",
        "sent",
        "saved",
        "cost",
        "saved $",
        "misses",
        "miss call",
        "viol.",
        "over"
    );
    for r in rows {
        let t = &r.totals;
        outln!(
            "  {:<w$} {:>7} {:>12} {:>6.1}% {:>10} {:>10} {:>7} {:>8.1}% {:>6} {:>5}",
            r.policy,
            r.budget,
            t.input_tokens,
            pct(t.saved_tokens, t.full_input_tokens),
            usd(t.cost_usd),
            usd(t.saved_usd),
            t.misses,
            t.calls_with_misses as f64 * 100.0 / t.calls.max(1) as f64,
            t.violations,
            t.over_budget_calls
        );
    }
    Ok(())
}

fn print_totals(t: &Totals) {
    outln!(
        "  sent {} of {} input tokens (saved {:.1}%); cost {} vs {} keeping everything (saved {})",
        t.input_tokens,
        t.full_input_tokens,
        pct(t.saved_tokens, t.full_input_tokens),
        usd(t.cost_usd),
        usd(t.full_cost_usd),
        usd(t.saved_usd)
    );
    outln!(
        "  misses {} ({} calls), violations {}, over-budget calls {}, compressions {}, retrievals {}",
        t.misses, t.calls_with_misses, t.violations, t.over_budget_calls, t.compressions, t.retrievals
    );
}

fn print_json<T: Serialize>(value: &T) -> Result<(), String> {
    crate::out::json(value)
}

fn pct(part: i64, whole: u64) -> f64 {
    part as f64 * 100.0 / whole.max(1) as f64
}
