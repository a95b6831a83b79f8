//! Compaction reports: the overview's section on the trace's recorded compactions, and the
//! details of each report (what its summary kept and lost), which the simulator shares for the
//! summaries a policy made.

use super::fmt::int;
use super::state::{ctx, Data, View};
use leptos::prelude::*;

fn tally_cell(t: memlens_core::compaction::ItemTally) -> String {
    match t.share() {
        Some(share) => format!("{}/{} ({:.0}%)", t.kept, t.replaced, share * 100.0),
        None => "–".into(),
    }
}

fn item_list(items: &[memlens_core::compaction::Item], id: String) -> impl IntoView {
    view! {
        <ul class="items" id=id>
            {items.iter().map(|i| view! {
                <li><span class="muted">{format!("{:?}", i.kind).to_lowercase()}" "</span><code>{i.text.clone()}</code></li>
            }).collect_view()}
        </ul>
    }
}

/// Each compaction: what it replaced, what its summary kept and lost, and later calls that
/// needed lost content (`memlens inspect`'s figures).
pub fn compactions(data: &Data) -> Option<impl IntoView> {
    let a = &data.analysis;
    if a.compactions.is_empty() {
        return None;
    }
    let summary_chunk = |key: &str| a.chunks.iter().position(|r| r.key == key);
    Some(view! {
        <section id="compactions">
            <h3>{format!("Compactions ({}) — what each summary kept of what it replaced", a.compactions.len())}</h3>
            {compaction_details(&a.compactions, "compaction", &summary_chunk)}
        </section>
    })
}

/// One `<details>` per compaction report (recorded, or a replay's summaries): ids
/// `{prefix}-{n}`, `{prefix}-{n}-kept`, `{prefix}-{n}-lost`. `summary_chunk` finds a recorded
/// summary's row in the chunk table.
pub fn compaction_details(
    reports: &[memlens_core::compaction::CompactionReport],
    prefix: &str,
    summary_chunk: &dyn Fn(&str) -> Option<usize>,
) -> impl IntoView {
    reports
        .iter()
        .map(|c| {
            let reported = match (c.reported_tokens_before, c.reported_tokens_after) {
                (Some(b), Some(after)) => format!(" · reported {} → {} tokens", int(b), int(after)),
                (Some(b), None) => format!(" · reported {} tokens before", int(b)),
                _ => String::new(),
            };
            let summary = match &c.summary_key {
                Some(k) => format!("summary {k} ({} tokens)", int(u64::from(c.summary_tokens))),
                None if c.summary_tokens > 0 => {
                    format!("a summary of {} tokens", int(u64::from(c.summary_tokens)))
                }
                None => "no summary recorded".to_string(),
            };
            let head = format!(
                "#{} before call {}{}{reported}: replaced {} chunks ({} tokens) with {summary}",
                c.index + 1,
                c.first_call,
                c.trigger.as_ref().map(|t| format!(" ({t})")).unwrap_or_default(),
                c.replaced_chunks,
                int(c.replaced_tokens),
            );
            let misses = if c.later_miss_count == 0 {
                "No later call used content it lost.".to_string()
            } else {
                format!(
                    "{} later use(s) of lost content in {} call(s):",
                    c.later_miss_count, c.calls_with_misses
                )
            };
            let chunk = c.summary_key.as_deref().and_then(summary_chunk);
            let id = format!("{prefix}-{}", c.index + 1);
            view! {
                <details class="compaction" id=id.clone() open=c.index == 0
                    data-replaced=c.replaced_chunks data-kept=c.kept.len() data-lost=c.lost.len() data-misses=c.later_miss_count>
                    <summary>{head}</summary>
                    <table class="tally">
                        <tr><th>"identifiers"</th><th>"file paths"</th><th>"commands"</th><th>"numbers"</th><th>"URLs"</th></tr>
                        <tr>
                            <td>{tally_cell(c.identifiers)}</td><td>{tally_cell(c.paths)}</td><td>{tally_cell(c.commands)}</td>
                            <td>{tally_cell(c.numbers)}</td><td>{tally_cell(c.urls)}</td>
                        </tr>
                    </table>
                    <div class="kept-lost">
                        <div><h4>{format!("kept ({} listed)", c.kept.len())}</h4>{item_list(&c.kept, format!("{id}-kept"))}</div>
                        <div><h4>{format!("lost ({} listed)", c.lost.len())}</h4>{item_list(&c.lost, format!("{id}-lost"))}</div>
                    </div>
                    <p class="misses">{misses}</p>
                    <ul class="items">
                        {c.later_misses.iter().map(|m| view! {
                            <li>{format!("call {} used ", m.call)}<code>{m.evidence.text.clone()}</code>{format!(" (from {})", m.chunks.join(", "))}</li>
                        }).collect_view()}
                    </ul>
                    {chunk.map(|i| {
                        let ctx = ctx();
                        view! {
                            <button class="link" on:click=move |_| { ctx.chunk.set(Some(i as u32)); ctx.view.set(View::Chunks); }>"Open the summary chunk"</button>
                        }
                    })}
                </details>
            }
        })
        .collect_view()
}
