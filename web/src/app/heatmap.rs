//! The value heatmap: one row per chunk, one column per call, the chunk's value at each call that
//! carried it. Rows in trace order, or grouped by category or by tool; a group's first row is the
//! highest value of its members at each call, and a collapsed group shows only that row.

use super::state::{ctx, Data, View, HEAT_MAX_ROWS};
use leptos::prelude::*;
use memlens_core::analysis::Analysis;
use memlens_core::Category;
use std::collections::BTreeSet;
use std::sync::Arc;
use wasm_bindgen::JsCast;

/// How rows are ordered.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Grouping {
    Order,
    Category,
    Tool,
}

impl Grouping {
    fn parse(s: &str) -> Grouping {
        match s {
            "category" => Grouping::Category,
            "tool" => Grouping::Tool,
            _ => Grouping::Order,
        }
    }
}

/// A group of heatmap rows: its name, its members (indices into `Analysis::heatmap`) and, per
/// call, the highest quantized value among them (0: no member carried at that call).
#[derive(Clone, PartialEq, Debug)]
struct Group {
    name: String,
    members: Vec<usize>,
    max_cells: Vec<u8>,
}

/// One drawn line of the heatmap.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Line {
    /// A chunk's row (index into `Analysis::heatmap`).
    Chunk(usize),
    /// A group's summary row (index into the groups).
    Group(usize),
}

/// The tool group of chunks with no tool.
const NO_TOOL: &str = "(no tool)";

fn groups(a: &Analysis, grouping: Grouping) -> Vec<Group> {
    let rows = &a.heatmap[..a.heatmap.len().min(HEAT_MAX_ROWS)];
    let key = |chunk: u32| -> String {
        let c = a.chunks.get(chunk as usize);
        match grouping {
            Grouping::Order => String::new(),
            Grouping::Category => c.map_or("other", |c| c.category.as_str()).to_string(),
            Grouping::Tool => c
                .and_then(|c| c.tool_name.clone())
                .unwrap_or_else(|| NO_TOOL.to_string()),
        }
    };
    // Categories in display order; tools costliest first (the Cost view's order), then no tool.
    let order: Vec<String> = match grouping {
        Grouping::Order => return Vec::new(),
        Grouping::Category => Category::ALL
            .iter()
            .map(|c| c.as_str().to_string())
            .collect(),
        Grouping::Tool => a
            .by_tool
            .iter()
            .map(|g| g.name.clone())
            .chain(std::iter::once(NO_TOOL.to_string()))
            .collect(),
    };
    let calls = a.calls.len();
    let mut out: Vec<Group> = order
        .into_iter()
        .map(|name| Group {
            name,
            members: Vec::new(),
            max_cells: vec![0; calls],
        })
        .collect();
    for (i, row) in rows.iter().enumerate() {
        let name = key(row.chunk);
        let g = match out.iter().position(|g| g.name == name) {
            Some(g) => g,
            None => {
                out.push(Group {
                    name,
                    members: Vec::new(),
                    max_cells: vec![0; calls],
                });
                out.len() - 1
            }
        };
        let group = &mut out[g];
        group.members.push(i);
        for (k, &q) in row.cells.iter().enumerate() {
            if let Some(cell) = group.max_cells.get_mut(row.first_call as usize + k) {
                *cell = (*cell).max(q);
            }
        }
    }
    out.retain(|g| !g.members.is_empty());
    out
}

fn lines(a: &Analysis, groups: &[Group], collapsed: &BTreeSet<String>) -> Vec<Line> {
    if groups.is_empty() {
        return (0..a.heatmap.len().min(HEAT_MAX_ROWS))
            .map(Line::Chunk)
            .collect();
    }
    let mut out = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        out.push(Line::Group(g));
        if !collapsed.contains(&group.name) {
            out.extend(group.members.iter().map(|&m| Line::Chunk(m)));
        }
    }
    out
}

/// Value to colour: a blue → yellow ramp.
pub fn ramp(v: f64) -> String {
    let v = v.clamp(0.0, 1.0);
    let (r, g, b) = (
        40.0 + v * (250.0 - 40.0),
        60.0 + v * (220.0 - 60.0),
        160.0 + v * (40.0 - 160.0),
    );
    format!("rgb({},{},{})", r as u8, g as u8, b as u8)
}

fn value(q: u8) -> Option<f64> {
    (q > 0).then(|| f64::from(q - 1) / 254.0)
}

/// What the pointer is over.
struct Hit {
    line: Line,
    call: u32,
    value: Option<f64>,
}

/// The cells' size and the canvas' width.
#[derive(Clone, Copy)]
struct Geometry {
    /// Cell width.
    cw: f64,
    /// Cell height.
    ch: f64,
    /// Canvas width.
    w: f64,
}

/// The heatmap view.
#[component]
pub fn Heatmap(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let canvas: NodeRef<leptos::html::Canvas> = NodeRef::new();
    let tip = RwSignal::new(String::new());
    let grouping = RwSignal::new(Grouping::Order);
    let collapsed = RwSignal::new(BTreeSet::<String>::new());
    let a = &data.analysis;
    let calls = a.calls.len().max(1);
    let cw = (1000.0 / calls as f64).clamp(2.0, 14.0);
    let ch = (700.0 / a.heatmap.len().clamp(1, HEAT_MAX_ROWS) as f64).clamp(2.0, 12.0);
    let w = cw * calls as f64;
    let geo = Geometry { cw, ch, w };
    let group_list = {
        let d = data.clone();
        Memo::new(move |_| Arc::new(groups(&d.analysis, grouping.get())))
    };
    let layout = {
        let d = data.clone();
        Memo::new(move |_| {
            let g = group_list.get();
            Arc::new(collapsed.with(|c| lines(&d.analysis, &g, c)))
        })
    };
    let height = move || ch * layout.with(|l| l.len()).max(1) as f64;

    let d = data.clone();
    Effect::new(move |_| {
        let lines = layout.get();
        let groups = group_list.get();
        let Some(el) = canvas.get() else { return };
        draw(&el, &d.analysis, &lines, &groups, geo);
    });
    let hit = {
        let d = data.clone();
        move |ev: &web_sys::MouseEvent| -> Option<Hit> {
            let el = canvas.get()?;
            let groups = group_list.get_untracked();
            layout.with_untracked(|l| hit_at(ev, &el, &d.analysis, l, &groups, geo))
        }
    };
    let d = data.clone();
    let hover = {
        let hit = hit.clone();
        move |ev: web_sys::MouseEvent| {
            tip.set(match hit(&ev) {
                Some(h) => group_list.with_untracked(|gs| tip_text(&d.analysis, gs, &h)),
                None => String::new(),
            })
        }
    };
    let d = data.clone();
    let click = move |ev: web_sys::MouseEvent| match hit(&ev) {
        Some(Hit {
            line: Line::Chunk(r),
            ..
        }) => {
            if let Some(row) = d.analysis.heatmap.get(r) {
                ctx.chunk.set(Some(row.chunk));
                ctx.view.set(View::Chunks);
            }
        }
        Some(Hit {
            line: Line::Group(g),
            ..
        }) => {
            if let Some(name) = group_list.with_untracked(|gs| gs.get(g).map(|g| g.name.clone())) {
                toggle(collapsed, name);
            }
        }
        None => {}
    };
    let shown = a.heatmap.len().min(HEAT_MAX_ROWS);
    let total = a.heatmap_total_rows;
    view! {
        <section class="heatmap">
            <p class="muted">"Rows: chunks (in order, or grouped); columns: calls. Colour: the chunk's value at that call (as the engine saw it then: uses so far); blank where the chunk was not in the call's input. A group's shaded row is its highest value at each call; click it (or its button) to collapse the group. Hover for details, click a chunk's row to open it."
                {(total > shown).then(|| format!(" Showing the first {shown} of {total} rows."))}</p>
            {controls(grouping, collapsed, tip)}
            <div id="heat-groups" class="heat-groups">
                {move || group_buttons(&group_list.get(), collapsed)}
            </div>
            <div class="tip" id="heat-tip">{move || tip.get()}</div>
            <div class="heat-wrap">
                <canvas id="heatmap-canvas" node_ref=canvas width=w height=height on:mousemove=hover on:click=click></canvas>
            </div>
        </section>
    }
}

/// Collapses group `name`, or opens it if it was collapsed.
fn toggle(collapsed: RwSignal<BTreeSet<String>>, name: String) {
    collapsed.update(|c| {
        if !c.remove(&name) {
            c.insert(name);
        }
    })
}

/// Draws `lines` on the canvas (resized to hold them first).
fn draw(
    el: &web_sys::HtmlCanvasElement,
    a: &Analysis,
    lines: &[Line],
    groups: &[Group],
    geo: Geometry,
) {
    let Geometry { cw, ch, w } = geo;
    let h = ch * lines.len().max(1) as f64;
    // The canvas is resized by its attribute first; draw after it.
    el.set_height(h as u32);
    let Some(g) = el
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<web_sys::CanvasRenderingContext2d>().ok())
    else {
        return;
    };
    g.clear_rect(0.0, 0.0, w, h);
    for (y, line) in lines.iter().enumerate() {
        let y = y as f64 * ch;
        let (first, cells): (usize, &[u8]) = match *line {
            Line::Chunk(r) => match a.heatmap.get(r) {
                Some(row) => (row.first_call as usize, &row.cells),
                None => continue,
            },
            Line::Group(gi) => {
                if let Some(group) = groups.get(gi) {
                    draw_group(&g, group, y, geo);
                }
                continue;
            }
        };
        for (k, &cell) in cells.iter().enumerate() {
            let Some(v) = value(cell) else { continue };
            g.set_fill_style_str(&ramp(v));
            g.fill_rect((first + k) as f64 * cw, y, cw.max(1.0), ch.max(1.0));
        }
    }
}

/// Draws a group's summary row at `y`.
fn draw_group(g: &web_sys::CanvasRenderingContext2d, group: &Group, y: f64, geo: Geometry) {
    let Geometry { cw, ch, w } = geo;
    // A shaded band with an accent on top starts each group; its cells are
    // inset so the summary row reads differently from a chunk's.
    g.set_fill_style_str("rgba(128,128,128,0.3)");
    g.fill_rect(0.0, y, w, ch);
    g.set_fill_style_str("rgb(214,48,49)");
    g.fill_rect(0.0, y, w, (ch / 4.0).max(1.0));
    let inset = (ch / 4.0).max(1.0);
    for (k, &cell) in group.max_cells.iter().enumerate() {
        let Some(v) = value(cell) else { continue };
        g.set_fill_style_str(&ramp(v));
        g.fill_rect(
            k as f64 * cw + 1.0,
            y + inset,
            (cw - 2.0).max(1.0),
            (ch - inset).max(1.0),
        );
    }
}

/// What the pointer of `ev` is over on the canvas `el`.
fn hit_at(
    ev: &web_sys::MouseEvent,
    el: &web_sys::HtmlCanvasElement,
    a: &Analysis,
    lines: &[Line],
    groups: &[Group],
    geo: Geometry,
) -> Option<Hit> {
    let rect = el.get_bounding_client_rect();
    let h = f64::from(el.height());
    let sx = geo.w / rect.width().max(1.0);
    let sy = h / rect.height().max(1.0);
    let x = (f64::from(ev.client_x()) - rect.left()) * sx;
    let y = (f64::from(ev.client_y()) - rect.top()) * sy;
    let (col, at) = ((x / geo.cw) as usize, (y / geo.ch) as usize);
    let line = lines.get(at).copied()?;
    let cell = match line {
        Line::Chunk(r) => {
            let row = a.heatmap.get(r)?;
            col.checked_sub(row.first_call as usize)
                .and_then(|k| row.cells.get(k))
                .copied()
        }
        Line::Group(g) => groups.get(g)?.max_cells.get(col).copied(),
    };
    Some(Hit {
        line,
        call: col as u32,
        value: cell.and_then(value),
    })
}

/// The tooltip of a hit: the chunk or group, the call and the value.
fn tip_text(a: &Analysis, groups: &[Group], hit: &Hit) -> String {
    let Hit { line, call, value } = *hit;
    match line {
        Line::Chunk(r) => {
            let c = a
                .heatmap
                .get(r)
                .and_then(|row| a.chunks.get(row.chunk as usize));
            format!(
                "{} ({}) at call {}: {}",
                c.map(|c| c.key.clone()).unwrap_or_default(),
                c.map(|c| c.category.as_str()).unwrap_or_default(),
                call,
                value.map_or("not in context".into(), |v| format!("value {v:.3}"))
            )
        }
        Line::Group(g) => {
            let group = groups.get(g);
            format!(
                "{} ({} chunks) at call {}: {}",
                group.map(|g| g.name.clone()).unwrap_or_default(),
                group.map_or(0, |g| g.members.len()),
                call,
                value.map_or("none in context".into(), |v| format!(
                    "highest value {v:.3}"
                ))
            )
        }
    }
}

/// The row grouping's choice and the colour legend.
fn controls(
    grouping: RwSignal<Grouping>,
    collapsed: RwSignal<BTreeSet<String>>,
    tip: RwSignal<String>,
) -> impl IntoView {
    view! {
        <div class="heat-controls">
            <label>"Rows "
                <select id="heat-group" on:change=move |ev| {
                    collapsed.set(BTreeSet::new());
                    tip.set(String::new());
                    grouping.set(Grouping::parse(&event_target_value(&ev)));
                }>
                    <option value="order">"in trace order"</option>
                    <option value="category">"grouped by category"</option>
                    <option value="tool">"grouped by tool"</option>
                </select>
            </label>
            <div class="heat-legend"><span>"0"</span><i style:background=format!("linear-gradient(90deg, {}, {})", ramp(0.0), ramp(1.0))></i><span>"1"</span></div>
        </div>
    }
}

/// A button per group: opens or collapses it.
fn group_buttons(groups: &[Group], collapsed: RwSignal<BTreeSet<String>>) -> impl IntoView {
    groups
        .iter()
        .map(|g| {
            let name = g.name.clone();
            let open = {
                let name = name.clone();
                Signal::derive(move || !collapsed.with(|c| c.contains(&name)))
            };
            let label = format!("{} ({})", g.name, g.members.len());
            view! {
                <button class="heat-group" data-group=g.name.clone() data-members=g.members.len()
                    aria-expanded=move || open.get().to_string()
                    on:click=move |_| toggle(collapsed, name.clone())>
                    {move || if open.get() { "▾ " } else { "▸ " }}{label.clone()}
                </button>
            }
        })
        .collect_view()
}
