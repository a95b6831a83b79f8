//! The simulator's policy form: the main fields of the policy in the text box, edited in place
//! (the text becomes JSON).

use super::state::ctx;
use leptos::prelude::*;
use memlens_core::policy::{Cleanup, PolicyConfig, QuotaOrder, RunKind, StrategyKind};
use memlens_core::value::ValueConfig;

fn opt_u32(text: &str) -> Option<u32> {
    text.trim().parse().ok()
}

/// A share or a value in `(0, 1]` from a form field (empty or out of range: none).
fn opt_f32(text: &str) -> Option<f32> {
    text.trim()
        .parse::<f32>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= 1.0)
}

/// The policy form: the main fields of the policy in the text box, edited in place (the text
/// becomes JSON).
#[component]
pub fn PolicyForm() -> impl IntoView {
    let ctx = ctx();
    let parsed = Memo::new(move |_| ctx.policy.get().and_then(Result::ok));
    let edit = move |f: &dyn Fn(&mut PolicyConfig)| {
        if let Some(mut p) = parsed.get_untracked() {
            f(&mut p);
            ctx.policy_text.set(p.to_json());
            ctx.policy_name.set("custom".into());
        }
    };
    let get = move |f: fn(&PolicyConfig) -> String| {
        move || parsed.get().map(|p| f(&p)).unwrap_or_default()
    };
    let flag = move |f: fn(&PolicyConfig) -> bool| move || parsed.get().is_some_and(|p| f(&p));
    view! {
        <div class="policy-form" id="policy-form">
            <label>"strategy "<select id="form-strategy" on:change=move |ev| {
                let v = event_target_value(&ev);
                edit(&|p| if let Ok(st) = serde_json::from_value(serde_json::Value::String(v.clone())) { p.strategy = st; });
            }>
                {StrategyKind::ALL.iter().map(|&st| view! {
                    <option value=st.name() selected=move || parsed.get().is_some_and(|p| p.strategy == st)>{st.name()}</option>
                }).collect_view()}
            </select></label>
            <label>"keep newest messages "<input id="form-recent" type="number" min="0" size="4" prop:value=get(|p| p.protect.recent_messages.to_string())
                on:change=move |ev| { let v = opt_u32(&event_target_value(&ev)).unwrap_or(0); edit(&|p| p.protect.recent_messages = v); }/></label>
            <label>"max age (calls) "<input id="form-age" type="number" min="1" size="4" placeholder="none" prop:value=get(|p| p.max_age_calls.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_u32(&event_target_value(&ev)); edit(&|p| p.max_age_calls = v); }/></label>
            <label>"window: max messages "<input id="form-max-messages" type="number" min="1" size="4" placeholder="by tokens" prop:value=get(|p| p.max_messages.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_u32(&event_target_value(&ev)); edit(&|p| p.max_messages = v); }/></label>
            <label title="Window/value: JSON tool results sent without the whitespace between their tokens, from their first call (lossless)"><input id="form-minify" type="checkbox" prop:checked=flag(|p| p.compress.minify_json)
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.minify_json = on); }/>" minify JSON results"</label>
            <label title="Window/value: JSON tool results sent as TOON (Token-Oriented Object Notation) where that is fewer tokens, from their first call (lossless: read back and compared)"><input id="form-toon" type="checkbox" prop:checked=flag(|p| p.compress.toon_json)
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.toon_json = on); }/>" TOON for JSON results"</label>
            <label><input id="form-json" type="checkbox" prop:checked=flag(|p| p.compress.json.is_some())
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.json = on.then(Default::default)); }/>" compact JSON results"</label>
            <label><input id="form-strip" type="checkbox" prop:checked=flag(|p| p.compress.strip_markup)
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.strip_markup = on); }/>" strip markup"</label>
            <label><input id="form-dedupe" type="checkbox" prop:checked=flag(|p| p.compress.dedupe)
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.dedupe = on); }/>" dedupe"</label>
            <label>"clear tool results after (calls) "<input id="form-clear" type="number" min="1" size="4" placeholder="never" prop:value=get(|p| p.compress.clear_tool_results_after.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_u32(&event_target_value(&ev)); edit(&|p| p.compress.clear_tool_results_after = v); }/></label>
            <label><input id="form-summary" type="checkbox" prop:checked=flag(|p| p.compress.summary.is_some())
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.summary = on.then(Default::default)); }/>" summarize evicted spans"</label>
            <label title="Window/value: evict what is worth less than this at every call, also under budget">"value threshold "<input id="form-threshold" type="number" min="0" max="1" step="0.01" size="4" placeholder="none" prop:value=get(|p| p.value_threshold.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_f32(&event_target_value(&ev)); edit(&|p| p.value_threshold = v); }/>
                " in "<select id="form-threshold-runs" on:change=move |ev| {
                    let v = event_target_value(&ev);
                    edit(&|p| if let Ok(runs) = serde_json::from_value(serde_json::Value::String(v.clone())) { p.value_threshold_runs = runs; });
                }>
                    {[(RunKind::Any, "any", "every run"), (RunKind::Agent, "agent", "agent runs"), (RunKind::Conversation, "conversation", "conversations")].into_iter().map(|(kind, value, name)| view! {
                        <option value=value selected=move || parsed.get().is_some_and(|p| p.value_threshold_runs == kind)>{name}</option>
                    }).collect_view()}
                </select></label>
            <label title="Window/value: no eviction until the context passes this share of the budget, then down to the target share (the cached prefix survives the calls between)">"cleanup at "<input id="form-cleanup-trigger" type="number" min="0.05" max="1" step="0.05" size="4" placeholder="off" prop:value=get(|p| p.cleanup.map(|c| c.trigger.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_f32(&event_target_value(&ev)); edit(&|p| p.cleanup = v.map(|trigger| Cleanup { trigger, target: p.cleanup.map_or(Cleanup::default().target.min(trigger), |c| c.target.min(trigger)) })); }/>
                " of the budget, down to "<input id="form-cleanup-target" type="number" min="0.05" max="1" step="0.05" size="4" placeholder="–" prop:value=get(|p| p.cleanup.map(|c| c.target.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_f32(&event_target_value(&ev)); edit(&|p| if let (Some(c), Some(target)) = (p.cleanup.as_mut(), v) { c.target = target.min(c.trigger); }); }/></label>
            <label title="Evict units older than this by the trace's own timestamps">"max age (seconds) "<input id="form-age-seconds" type="number" min="1" size="6" placeholder="none" prop:value=get(|p| p.max_age_seconds.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = event_target_value(&ev).trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0); edit(&|p| p.max_age_seconds = v); }/></label>
            <label title="Units worth at least this never age out">"age exempt from value "<input id="form-age-exempt" type="number" min="0" max="1" step="0.05" size="4" placeholder="none" prop:value=get(|p| p.age_exempt_value.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_f32(&event_target_value(&ev)); edit(&|p| p.age_exempt_value = v); }/></label>
            <label title="A category over its quota gives up its least valuable units first, not its oldest"><input id="form-quota-value" type="checkbox" prop:checked=flag(|p| p.quota_order == QuotaOrder::Value)
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.quota_order = if on { QuotaOrder::Value } else { QuotaOrder::Oldest }); }/>" quotas by value"</label>
            <label title="Window/value, agent runs: an assistant reply goes once the model has seen it and every id, number, date or path it holds is also in another chunk still sent"><input id="form-echoed" type="checkbox" prop:checked=flag(|p| p.evict_echoed_replies.is_some())
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.evict_echoed_replies = on.then_some(RunKind::Agent)); }/>" evict echoed replies"</label>
            <label>"value preset "<select id="form-preset" on:change=move |ev| {
                    let name = event_target_value(&ev);
                    edit(&|p| match ValueConfig::preset(&name) {
                        Some(preset) => { p.value_preset = Some(name.clone()); p.value = preset; }
                        None => p.value_preset = None,
                    });
                }>
                <option value="" selected=move || parsed.get().is_some_and(|p| p.value_preset.is_none())>"(own weights)"</option>
                {ValueConfig::PRESETS.iter().map(|&name| view! {
                    <option value=name selected=move || parsed.get().is_some_and(|p| p.value_preset.as_deref() == Some(name))>{name}</option>
                }).collect_view()}
            </select></label>
            <label><input id="form-offload" type="checkbox" prop:checked=flag(|p| p.offload.is_some())
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.offload = on.then(Default::default)); }/>" offload + retrieval"</label>
            {move || parsed.get().is_none().then(|| view! { <span class="muted">"(the text does not parse: fix it below)"</span> })}
        </div>
    }
}
