//! The policy simulator: choose or edit a policy, replay, sweep budgets, compare, diff a call.
//! The policy form is in `policy_form`, the results' charts and tables in `sim_results`.

use super::download::download;
use super::policy_form::PolicyForm;
use super::sim_results::{compare_view, diff_table, frontier_view, replay_view, sweep_view};
use super::state::{ctx, Ctx, Data};
use crate::protocol::Request;
use leptos::prelude::*;
use memlens_core::policy::{PolicyConfig, BUILTIN};
use std::sync::Arc;
use wasm_bindgen::JsValue;

/// Budgets of the sweep, besides the chosen one.
const SWEEP: [u32; 6] = [500, 1000, 2000, 4000, 8000, 16000];

/// Budgets of the frontier, besides the chosen one: `memlens compare --frontier`'s.
const FRONTIER: [u32; 3] = [2000, 4000, 8000];

/// Every built-in policy with the user's labels (they are about the trace, not one policy:
/// every policy replays with them), and the user's own policy first when it is not one of them.
fn every_policy(custom: PolicyConfig) -> Vec<PolicyConfig> {
    let ctx = ctx();
    let mut policies: Vec<PolicyConfig> = BUILTIN
        .iter()
        .filter_map(|n| PolicyConfig::builtin(n).ok())
        .map(|mut p| {
            ctx.labels
                .with_untracked(|l| p.labels.extend(l.iter().map(|(k, v)| (k.clone(), *v))));
            p
        })
        .collect();
    if !policies.contains(&custom) {
        let mut c = custom;
        c.name = format!("{} (edited)", c.name);
        policies.insert(0, c);
    }
    policies
}

/// What the simulator's buttons ask for (one waits while the worker reads a TOML policy).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Action {
    Run,
    Sweep,
    Compare,
    Frontier,
    Diff,
    Export,
}

/// The simulator's buttons: each reads the policy, then asks the worker (or downloads).
#[derive(Clone, Copy)]
struct Actions {
    ctx: Ctx,
    trace: usize,
    /// The call the diff shows the context of.
    at_call: RwSignal<u32>,
    /// Why the policy text does not read, shown under the form.
    parse_error: RwSignal<Option<String>>,
    /// A button pressed while the worker was still reading a TOML text: pressed again for the
    /// user when the answer comes (`Simulator`).
    waiting: RwSignal<Option<Action>>,
}

impl Actions {
    /// The policy read, with the Labels view's labels; `None` when it does not read, or when
    /// the worker is still reading it (`action` then waits for it).
    fn policy(self, action: Action) -> Option<PolicyConfig> {
        let ctx = self.ctx;
        match ctx.policy.get_untracked() {
            Some(Ok(mut p)) => {
                self.parse_error.set(None);
                // The Labels view's labels go into every replay and export (the text's own
                // labels, if any, give way to them).
                ctx.labels
                    .with_untracked(|l| p.labels.extend(l.iter().map(|(k, v)| (k.clone(), *v))));
                Some(p)
            }
            Some(Err(e)) => {
                self.parse_error.set(Some(e));
                None
            }
            None => {
                self.waiting.set(Some(action));
                ctx.busy.set(Some("reading the policy…".into()));
                None
            }
        }
    }

    fn act(self, action: Action) {
        match action {
            Action::Run => self.run(),
            Action::Sweep => self.sweep(),
            Action::Compare => self.compare(),
            Action::Frontier => self.frontier(),
            Action::Diff => self.diff(),
            Action::Export => self.export(),
        }
    }

    /// The chosen budget and `more`, in order, once each.
    fn budgets(self, more: &[u32]) -> Vec<u32> {
        let mut budgets: Vec<u32> = more.to_vec();
        budgets.push(self.ctx.budget.get_untracked());
        budgets.sort_unstable();
        budgets.dedup();
        budgets
    }

    fn run(self) {
        let (ctx, trace) = (self.ctx, self.trace);
        if let Some(p) = self.policy(Action::Run) {
            ctx.busy.set(Some("replaying…".into()));
            ctx.diff.set(None);
            let budget = ctx.budget.get_untracked();
            let request = Request::Simulate {
                trace,
                policy: p,
                budget,
            };
            ctx.send(&request, JsValue::UNDEFINED);
        }
    }

    fn sweep(self) {
        let (ctx, trace) = (self.ctx, self.trace);
        if let Some(p) = self.policy(Action::Sweep) {
            let budgets = self.budgets(&SWEEP);
            ctx.busy.set(Some("sweeping budgets…".into()));
            let request = Request::Sweep {
                trace,
                policy: p,
                budgets,
            };
            ctx.send(&request, JsValue::UNDEFINED);
        }
    }

    fn compare(self) {
        let (ctx, trace) = (self.ctx, self.trace);
        let Some(custom) = self.policy(Action::Compare) else {
            return;
        };
        let policies = every_policy(custom);
        ctx.busy.set(Some("comparing policies…".into()));
        let budget = ctx.budget.get_untracked();
        let request = Request::Compare {
            trace,
            policies,
            budget,
        };
        ctx.send(&request, JsValue::UNDEFINED);
    }

    fn frontier(self) {
        let (ctx, trace) = (self.ctx, self.trace);
        let Some(custom) = self.policy(Action::Frontier) else {
            return;
        };
        let policies = every_policy(custom);
        let budgets = self.budgets(&FRONTIER);
        ctx.busy
            .set(Some("replaying every policy at every budget…".into()));
        let request = Request::Replays {
            trace,
            policies,
            budgets,
        };
        ctx.send(&request, JsValue::UNDEFINED);
    }

    fn diff(self) {
        let (ctx, trace) = (self.ctx, self.trace);
        if let Some(p) = self.policy(Action::Diff) {
            ctx.busy.set(Some("replaying to the call…".into()));
            let request = Request::Diff {
                trace,
                policy: p,
                budget: ctx.budget.get_untracked(),
                call: self.at_call.get_untracked(),
            };
            ctx.send(&request, JsValue::UNDEFINED);
        }
    }

    fn export(self) {
        if let Some(mut p) = self.policy(Action::Export) {
            p.budget = Some(self.ctx.budget.get_untracked());
            download(
                &format!("{}.policy.json", p.name),
                &p.to_json(),
                "application/json",
            );
        }
    }
}

/// The simulator view.
#[component]
pub fn Simulator(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let calls = data.analysis.calls.len() as u32;
    let actions = Actions {
        ctx,
        trace: data.trace,
        at_call: RwSignal::new(calls.saturating_sub(1)),
        parse_error: RwSignal::new(None::<String>),
        waiting: RwSignal::new(None::<Action>),
    };
    let (at_call, waiting) = (actions.at_call, actions.waiting);
    Effect::new(move |_| {
        if ctx.policy.with(Option::is_some) {
            if let Some(action) = waiting.get_untracked() {
                waiting.set(None);
                ctx.busy.set(None);
                actions.act(action);
            }
        }
    });
    let d = data.clone();
    view! {
        <section class="simulator">
            <SimForm actions=actions/>
            {move || ctx.sim.get().map(|v| replay_view(&v))}
            <div class="diff-form">
                <label>"What it drops at call "<input id="diff-call" type="number" min="0" max=calls.saturating_sub(1)
                    prop:value=move || at_call.get().to_string()
                    on:change=move |ev| at_call.set(event_target_value(&ev).parse::<u32>().unwrap_or(0).min(calls.saturating_sub(1)))/></label>
                <button id="run-diff" on:click=move |_| actions.diff()>"Show the context"</button>
            </div>
            {move || ctx.diff.get().map(|diff| diff_table(&d, &diff))}
            {move || { let s = ctx.sweep.get(); (!s.is_empty()).then(|| sweep_view(&s)) }}
            {move || { let c = ctx.compare.get(); (!c.is_empty()).then(|| compare_view(&c)) }}
            {move || { let f = ctx.frontier.get(); (!f.is_empty()).then(|| frontier_view(&f)) }}
        </section>
    }
}

/// The simulator's form: the policy chosen or edited, the budget and the buttons.
#[component]
fn SimForm(actions: Actions) -> impl IntoView {
    let ctx = actions.ctx;
    let parse_error = actions.parse_error;
    let choose = move |ev: leptos::ev::Event| {
        let name = event_target_value(&ev);
        if let Ok(p) = PolicyConfig::builtin(&name) {
            ctx.policy_text.set(p.to_json());
            ctx.policy_name.set(name);
            parse_error.set(None);
        }
    };
    view! {
        <div class="sim-form">
            <label>"Policy "<select id="policy-select" on:change=choose>
                {BUILTIN.iter().map(|n| view! { <option value=*n selected=move || ctx.policy_name.get() == *n>{*n}</option> }).collect_view()}
                <option value="custom" disabled selected=move || !BUILTIN.contains(&ctx.policy_name.get().as_str())>"custom (edited)"</option>
            </select></label>
            <label>"Budget (tokens) "<input id="budget" type="number" min="1" prop:value=move || ctx.budget.get().to_string()
                on:change=move |ev| { if let Ok(b) = event_target_value(&ev).parse::<u32>() { if b > 0 { ctx.budget.set(b) } } }/></label>
            <button id="run-sim" on:click=move |_| actions.run()>"Run"</button>
            <button id="run-sweep" on:click=move |_| actions.sweep()>"Sweep budgets"</button>
            <button id="run-compare" on:click=move |_| actions.compare()>"Compare all policies"</button>
            <button id="run-frontier" on:click=move |_| actions.frontier() title="Every policy at 2,000, 4,000, 8,000 tokens and the chosen budget: tokens saved against calls with a miss">"Frontier"</button>
            <button id="export-policy" on:click=move |_| actions.export()>"Export policy"</button>
            <PolicyForm/>
            <details>
                <summary>"Edit the policy (JSON or TOML)"</summary>
                <textarea id="policy-text" rows=16 prop:value=move || ctx.policy_text.get()
                    on:input=move |ev| { ctx.policy_text.set(event_target_value(&ev)); ctx.policy_name.set("custom".into()); }></textarea>
                <p class="muted">"Same format as "<code>"memlens simulate --policy FILE"</code>" and the npm engine. "<code>"memlens policies NAME"</code>" prints a built-in one."</p>
            </details>
            {move || parse_error.get().map(|e| view! { <p class="error" id="policy-error">{e}</p> })}
        </div>
    }
}
