//! The report's charts, drawn by plotters' SVG backend into strings that are inlined in the page.
//!
//! Text is measured by plotters' estimate (no font files): labels are kept short so the estimate
//! cannot push them over the plot.

use crate::fmt::{compact, truncate};
use crate::text::{legend, Corner, Estimated};
use crate::PolicyResult;
use memlens_core::analysis::Analysis;
use memlens_core::Category;
use plotters::coord::Shift;
use plotters::prelude::*;

/// A chart's SVG, or why plotters could not draw it.
pub(crate) type Svg = Result<String, String>;

const WIDTH: u32 = 880;
const FONT: &str = "sans-serif";
const AXIS: RGBColor = RGBColor(90, 90, 90);

/// Heatmap rows drawn; the rest are counted in the caption.
pub(crate) const HEAT_ROWS: usize = 240;
/// Heatmap columns drawn; longer runs are binned (each column the highest value of its calls).
pub(crate) const HEAT_COLUMNS: usize = 300;
/// Tools in the cost chart (costliest first).
pub(crate) const TOOL_BARS: usize = 12;

/// The web app's category colours (`web/style.css`).
pub(crate) fn category_color(c: Category) -> RGBColor {
    match c {
        Category::System => RGBColor(0x6c, 0x5c, 0xe7),
        Category::User => RGBColor(0x09, 0x84, 0xe3),
        Category::Assistant => RGBColor(0x00, 0xb8, 0x94),
        Category::ToolCall => RGBColor(0xe1, 0x70, 0x55),
        Category::ToolResult => RGBColor(0xfd, 0xcb, 0x6e),
        Category::Reasoning => RGBColor(0xa2, 0x9b, 0xfe),
        Category::Summary => RGBColor(0x55, 0xef, 0xc4),
        Category::Preference => RGBColor(0xfd, 0x79, 0xa8),
        Category::Other => RGBColor(0xb2, 0xbe, 0xc3),
        Category::Unrecorded => RGBColor(0x63, 0x6e, 0x72),
    }
}

/// The framing tokens' colour (the rest of a call's counted input).
/// The growth chart's compaction markers (a colour no category uses, so a reader of the SVG
/// can find them).
pub(crate) const COMPACTION_MARK: RGBColor = RGBColor(0xd6, 0x30, 0x31);
const FRAMING: RGBColor = RGBColor(0xdf, 0xe6, 0xe9);

/// Value to colour, the web heatmap's blue → yellow ramp.
fn ramp(v: f64) -> RGBColor {
    let v = v.clamp(0.0, 1.0);
    let mix = |a: f64, b: f64| (a + v * (b - a)) as u8;
    RGBColor(mix(40.0, 250.0), mix(60.0, 220.0), mix(160.0, 40.0))
}

/// Budgets' colours in the policy chart.
pub(crate) const SERIES: [RGBColor; 6] = [
    RGBColor(0x09, 0x84, 0xe3),
    RGBColor(0xe1, 0x70, 0x55),
    RGBColor(0x00, 0xb8, 0x94),
    RGBColor(0x6c, 0x5c, 0xe7),
    RGBColor(0xfd, 0xcb, 0x6e),
    RGBColor(0xb2, 0xbe, 0xc3),
];

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Draws into a `width × height` SVG string.
fn draw(
    width: u32,
    height: u32,
    paint: impl FnOnce(&DrawingArea<Estimated<SVGBackend<'_>>, Shift>) -> Result<(), String>,
) -> Svg {
    let mut svg = String::new();
    {
        let root =
            Estimated(SVGBackend::with_string(&mut svg, (width, height))).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        paint(&root)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The legend of a chart's series, in a corner of its plotting area.
fn legend_box<DB: DrawingBackend, CT: plotters::coord::CoordTranslate>(
    chart: &ChartContext<'_, DB, CT>,
    entries: &[(String, RGBColor)],
    corner: Corner,
) -> Result<(), String> {
    legend(
        &chart.plotting_area().strip_coord_spec(),
        entries,
        corner,
        TextStyle::from((FONT, 12).into_font()),
        WHITE.mix(0.85).into(),
        AXIS.into(),
    )
}

/// Per call, the counted input stacked by category (framing on top), with a marker before each
/// compaction's first call.
pub(crate) fn growth(a: &Analysis) -> Svg {
    let n = a.calls.len();
    let top = a
        .calls
        .iter()
        .map(|c| c.input_tokens)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    draw(WIDTH, 320, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.5f64..(n.max(1) as f64 - 0.5), 0f64..top * 1.08)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_desc("call")
            .y_desc("input tokens")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| compact(*v))
            .label_style((FONT, 12).into_font().color(&AXIS))
            .draw()
            .map_err(err)?;
        let half = if n > 150 { 0.5 } else { 0.4 };
        let mut entries = Vec::new();
        for (col, &category) in a.categories.iter().enumerate() {
            let color = category_color(category);
            let bars = a.calls.iter().enumerate().filter_map(|(i, call)| {
                let below: u64 = call.by_category.iter().take(col).sum();
                let own = *call.by_category.get(col)?;
                (own > 0).then(|| {
                    let x = i as f64;
                    Rectangle::new(
                        [(x - half, below as f64), (x + half, (below + own) as f64)],
                        color.filled(),
                    )
                })
            });
            chart.draw_series(bars).map_err(err)?;
            entries.push((category.as_str().to_string(), color));
        }
        let framing = a
            .calls
            .iter()
            .enumerate()
            .filter(|(_, c)| c.framing > 0)
            .map(|(i, c)| {
                let below = c.input_tokens - c.framing;
                let x = i as f64;
                Rectangle::new(
                    [(x - half, below as f64), (x + half, c.input_tokens as f64)],
                    FRAMING.filled(),
                )
            });
        chart.draw_series(framing).map_err(err)?;
        entries.push(("framing".to_string(), FRAMING));
        for c in &a.compactions {
            let x = f64::from(c.first_call) - 0.5;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, 0.0), (x, top * 1.08)],
                    COMPACTION_MARK.stroke_width(2),
                )))
                .map_err(err)?;
        }
        legend_box(&chart, &entries, Corner::UpperLeft)
    })
}

/// The costliest tools (by attributed cost, or token-calls when unpriced), as horizontal bars.
pub(crate) fn tools(a: &Analysis) -> Option<Svg> {
    if a.by_tool.is_empty() {
        return None;
    }
    let priced = a.by_tool.iter().all(|g| g.cost_usd.is_some());
    let measure = |g: &memlens_core::analysis::Group| {
        if priced {
            g.cost_usd.unwrap_or(0.0)
        } else {
            g.token_calls as f64
        }
    };
    let mut groups: Vec<_> = a.by_tool.iter().collect();
    groups.sort_by(|x, y| measure(y).total_cmp(&measure(x)));
    groups.truncate(TOOL_BARS);
    let k = groups.len();
    let top = groups
        .first()
        .map_or(0.0, |g| measure(g))
        .max(f64::MIN_POSITIVE);
    let names: Vec<String> = groups.iter().map(|g| truncate(&g.name, 24)).collect();
    Some(draw(WIDTH, 40 + 26 * k as u32 + 40, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(170)
            .build_cartesian_2d(0f64..top * 1.1, (0..k).into_segmented())
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(TRANSPARENT)
            .x_desc(if priced {
                "attributed input cost (USD)"
            } else {
                "tokens × calls carried"
            })
            .x_label_formatter(&|v| {
                if priced {
                    format!("${v:.2}")
                } else {
                    compact(*v)
                }
            })
            .y_labels(k)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                    // Costliest at the top.
                    k.checked_sub(1 + i)
                        .and_then(|j| names.get(j))
                        .cloned()
                        .unwrap_or_default()
                }
                SegmentValue::Last => String::new(),
            })
            .label_style((FONT, 12).into_font().color(&AXIS))
            .draw()
            .map_err(err)?;
        let color = category_color(Category::ToolResult);
        chart
            .draw_series(groups.iter().enumerate().map(|(rank, g)| {
                let row = k - 1 - rank;
                let mut bar = Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(row)),
                        (measure(g), SegmentValue::Exact(row + 1)),
                    ],
                    color.filled(),
                );
                bar.set_margin(4, 4, 0, 0);
                bar
            }))
            .map_err(err)?;
        Ok(())
    }))
}

/// Each chunk's value at each call that carried it (rows in trace order, a category stripe on
/// the left); `(svg, rows drawn, calls per column)`.
pub(crate) fn heatmap(a: &Analysis) -> (Svg, usize, usize) {
    let calls = a.calls.len().max(1);
    let per_column = calls.div_ceil(HEAT_COLUMNS);
    let columns = calls.div_ceil(per_column);
    let rows = a.heatmap.len().min(HEAT_ROWS);
    let cell_h = if rows > 120 { 2 } else { 4 };
    let height = 60 + (rows as u32).max(1) * cell_h + 40;
    let svg = draw(WIDTH, height, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(40)
            .build_cartesian_2d(-1.5f64..columns as f64, rows.max(1) as f64..0f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(if per_column > 1 {
                format!("call (each column {per_column} calls)")
            } else {
                "call".to_string()
            })
            .y_desc("chunk")
            .x_label_formatter(&|v| {
                if *v < 0.0 {
                    String::new()
                } else {
                    format!("{:.0}", v * per_column as f64)
                }
            })
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style((FONT, 12).into_font().color(&AXIS))
            .draw()
            .map_err(err)?;
        let category = |chunk: u32| a.chunks.get(chunk as usize).map(|c| c.category);
        let stripes = a
            .heatmap
            .iter()
            .take(rows)
            .enumerate()
            .filter_map(|(y, row)| {
                let c = category(row.chunk)?;
                let y = y as f64;
                Some(Rectangle::new(
                    [(-1.2, y), (-0.3, y + 1.0)],
                    category_color(c).filled(),
                ))
            });
        chart.draw_series(stripes).map_err(err)?;
        let mut cells = Vec::new();
        for (y, row) in a.heatmap.iter().take(rows).enumerate() {
            let mut best: Option<(usize, u8)> = None;
            for (k, &q) in row.cells.iter().enumerate() {
                if q == 0 {
                    continue;
                }
                let column = (row.first_call as usize + k) / per_column;
                match best {
                    Some((c, v)) if c == column => best = Some((c, v.max(q))),
                    Some(done) => {
                        cells.push((y, done));
                        best = Some((column, q));
                    }
                    None => best = Some((column, q)),
                }
            }
            cells.extend(best.map(|b| (y, b)));
        }
        chart
            .draw_series(cells.into_iter().map(|(y, (x, q))| {
                let v = f64::from(q - 1) / 254.0;
                let (x, y) = (x as f64, y as f64);
                Rectangle::new([(x, y), (x + 1.0, y + 1.0)], ramp(v).filled())
            }))
            .map_err(err)?;
        Ok(())
    });
    (svg, rows, per_column)
}

/// Input tokens saved (percent of keeping everything) per policy, one bar per budget.
pub(crate) fn policies(results: &[PolicyResult]) -> Option<Svg> {
    let mut policies: Vec<&str> = Vec::new();
    let mut budgets: Vec<u32> = Vec::new();
    for r in results {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
        if !budgets.contains(&r.budget) {
            budgets.push(r.budget);
        }
    }
    if policies.is_empty() {
        return None;
    }
    budgets.sort_unstable();
    let saved = |r: &PolicyResult| {
        let full = r.totals.full_input_tokens as f64;
        if full > 0.0 {
            r.totals.saved_tokens as f64 * 100.0 / full
        } else {
            0.0
        }
    };
    let lo = results.iter().map(saved).fold(0.0f64, f64::min);
    let hi = results.iter().map(saved).fold(1.0f64, f64::max);
    let np = policies.len();
    Some(draw(WIDTH, 340, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..np as f64, lo * 1.1..hi * 1.15)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .light_line_style(TRANSPARENT)
            .y_desc("input tokens saved (%)")
            .y_label_formatter(&|v| format!("{v:.0}%"))
            .label_style((FONT, 12).into_font().color(&AXIS))
            .draw()
            .map_err(err)?;
        let width = 0.8 / budgets.len() as f64;
        let mut entries = Vec::new();
        for (b, &budget) in budgets.iter().enumerate() {
            let color = SERIES[b % SERIES.len()];
            let bars = results
                .iter()
                .filter(|r| r.budget == budget)
                .filter_map(|r| {
                    let p = policies.iter().position(|&p| p == r.policy)? as f64;
                    let x = p + 0.1 + b as f64 * width;
                    Some(Rectangle::new(
                        [(x, 0.0), (x + width * 0.9, saved(r))],
                        color.filled(),
                    ))
                });
            chart.draw_series(bars).map_err(err)?;
            entries.push((format!("budget {budget}"), color));
        }
        // Policy names under their groups (the x axis is continuous, so they are placed by hand).
        let style = TextStyle::from((FONT, 12).into_font()).color(&AXIS).pos(
            plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Top,
            ),
        );
        for (p, name) in policies.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(p as f64 + 0.5, lo * 1.1));
            root.draw(&Text::new(truncate(name, 16), (x, y + 8), style.clone()))
                .map_err(err)?;
        }
        legend_box(&chart, &entries, Corner::UpperRight)
    }))
}
