//! The overview's projection: the cost of the next N calls if the run goes on at its recent
//! growth, for the recorded run and for the simulator's last replay of the same trace.

use super::fmt::{int, usd};
use super::state::{ctx, Data};
use leptos::prelude::*;
use memlens_core::analysis::{project, project_within, Projection, TREND_WINDOW};
use std::sync::Arc;

fn line(p: &Projection) -> String {
    format!(
        "{} input tokens ({:+.0} per call, fitted on the last {} calls), {}",
        int(p.input_tokens.round() as u64),
        p.tokens_per_call,
        p.fitted_calls,
        usd(p.cost_usd)
    )
}

/// The projection section.
#[component]
pub fn Projection(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let next = ctx.projection_next;
    let run = move || {
        let calls = &data.analysis.calls;
        let inputs: Vec<u64> = calls.iter().map(|c| c.input_tokens).collect();
        let costs: Vec<Option<f64>> = calls.iter().map(|c| c.cost_usd).collect();
        project(&inputs, &costs, next.get())
    };
    let recorded = {
        let run = run.clone();
        move || run().map_or_else(|| "too few calls to fit a trend".to_string(), |p| line(&p))
    };
    let tokens_attr = {
        let run = run.clone();
        move || {
            run()
                .map(|p| p.input_tokens.to_string())
                .unwrap_or_default()
        }
    };
    let usd_attr = move || {
        run()
            .and_then(|p| p.cost_usd)
            .map(|c| c.to_string())
            .unwrap_or_default()
    };
    let simulated = move || {
        let sim = ctx.sim.get()?;
        let inputs: Vec<u64> = sim.calls.iter().map(|c| c.input_tokens).collect();
        let costs: Vec<Option<f64>> = sim.calls.iter().map(|c| c.cost_usd).collect();
        let p = project_within(&inputs, &costs, next.get(), Some(u64::from(sim.budget)))?;
        Some(view! {
            <li id="projection-sim" data-tokens=p.input_tokens.to_string()
                data-usd=p.cost_usd.map(|c| c.to_string()).unwrap_or_default()>
                {format!("with {} at {} tokens (the simulator's last replay; each call stops at the budget): {}", sim.policy, int(sim.budget), line(&p))}
            </li>
        })
    };
    view! {
        <h3>"Where it is heading"</h3>
        <p class="muted">{format!(
            "A straight line through the last {TREND_WINDOW} calls' input tokens and costs, continued. "
        )}
            <label>"Next "<input type="number" id="projection-next" min="1" max="100000"
                prop:value=move || next.get().to_string()
                on:input=move |ev| { if let Ok(n) = event_target_value(&ev).parse::<u32>() { next.set(n.clamp(1, 100_000)); } }/>" calls"</label>
        </p>
        <ul class="projection">
            <li id="projection-run" data-tokens=tokens_attr data-usd=usd_attr>{move || format!("as recorded: {}", recorded())}</li>
            {simulated}
        </ul>
    }
}
