//! Text measured the same way on every host, so the report is the same bytes wherever it is drawn.
//!
//! Plotters measures text with a backend chosen at compile time: a fixed estimate natively (no
//! font files), the browser's DOM on `wasm32` (a `<span>` added to the page and measured), which
//! does not exist in a Web Worker and gives other numbers in every browser. The report measures
//! with plotters' native estimate everywhere instead: [`Estimated`] answers the chart layout's
//! questions (tick label widths) and [`legend`] lays out a legend box as plotters'
//! `configure_series_labels` does, with the same estimate (that path asks the font directly,
//! past the backend). The web app's worker draws the report this way, and its file is the CLI's.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// Plotters' native text estimate (`style/font/naive.rs`): a box `0.7 em` wide per byte, from
/// `em` above the baseline to `0.24 em` below, `em` being the size over 1.24².
fn estimate(size: f64, text: &str) -> (u32, u32) {
    let em = size / 1.24 / 1.24;
    let width = (em * 0.7 * text.len() as f64).round();
    let height = (em * 0.24).round() + em.round();
    (width as u32, height as u32)
}

/// A backend whose text sizes are [`estimate`]'s, everything else drawn by the backend inside.
pub(crate) struct Estimated<B>(pub(crate) B);

impl<B: DrawingBackend> DrawingBackend for Estimated<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.present()
    }
    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_text(text, style, pos)
    }
    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<B::ErrorType>> {
        Ok(estimate(style.size(), text))
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }
}

/// Where a [`legend`] goes in the plotting area.
#[derive(Clone, Copy)]
pub(crate) enum Corner {
    UpperLeft,
    UpperRight,
}

/// A legend box (a colour swatch and a label per entry) in a corner of `area` (a chart's plotting
/// area), laid out as plotters' series labels are: 10 px margin, 30 px for the swatches, lines
/// 1.25 font sizes apart, 5 px from the area's edge; background and border as given.
pub(crate) fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, RGBColor)],
    corner: Corner,
    font: TextStyle<'_>,
    background: ShapeStyle,
    border: ShapeStyle,
) -> Result<(), String> {
    const MARGIN: i32 = 10;
    const SWATCHES: i32 = 30;
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let size = font.font.get_size();
    let line_y = |i: usize| (i as f64 * size * 1.25).round() as i32;
    let text_h = estimate(size, "").1 as i32;
    let mut w = 0;
    let mut h = 0;
    for (i, (label, _)) in entries.iter().enumerate() {
        w = w.max(estimate(size, label).0 as i32);
        h = h.max(line_y(i) + text_h);
    }
    w += SWATCHES + MARGIN * 2;
    h += MARGIN * 2;
    let (area_w, _) = area.dim_in_pixel();
    let x = match corner {
        Corner::UpperLeft => 5,
        Corner::UpperRight => area_w as i32 - w - 5,
    };
    let y = 5;
    area.draw(&Rectangle::new(
        [(x, y), (x + w, y + h)],
        background.filled(),
    ))
    .map_err(err)?;
    area.draw(&Rectangle::new([(x, y), (x + w, y + h)], border))
        .map_err(err)?;
    let text_x = x + SWATCHES + MARGIN;
    for (i, (label, _)) in entries.iter().enumerate() {
        area.draw(&Text::new(
            label.as_str(),
            (text_x, y + MARGIN + line_y(i)),
            font.clone(),
        ))
        .map_err(err)?;
    }
    for (i, (_, color)) in entries.iter().enumerate() {
        let mid = y + MARGIN + line_y(i) + text_h / 2;
        let (sx, sy) = (x + MARGIN, mid);
        area.draw(&Rectangle::new(
            [(sx, sy - 5), (sx + 10, sy + 5)],
            color.filled(),
        ))
        .map_err(err)?;
    }
    Ok(())
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    /// Natively, plotters' own font estimate is the one [`estimate`] copies: the CLI's report
    /// is unchanged by measuring through [`Estimated`].
    #[test]
    fn estimate_is_plotters_native_one() {
        for size in [10.0, 12.0, 14.5] {
            let font = ("sans-serif", size).into_font();
            for text in ["", "call", "input tokens saved (%)", "budget 8000", "écart"] {
                let got = estimate(size, text);
                assert_eq!(
                    got,
                    font.box_size(text)
                        .expect("the native estimate cannot fail")
                );
            }
        }
    }

    /// Draws two bar series with a legend in `corner`, by plotters' series labels or by
    /// [`legend`].
    fn chart(corner: Corner, by_plotters: bool) -> String {
        let mut svg = String::new();
        {
            let root = Estimated(SVGBackend::with_string(&mut svg, (400, 240))).into_drawing_area();
            let mut chart = ChartBuilder::on(&root)
                .margin(12)
                .build_cartesian_2d(0f64..4.0, 0f64..10.0)
                .expect("a fixed chart");
            let series = [
                ("budget 2000", RGBColor(9, 132, 227)),
                ("framing", RGBColor(1, 2, 3)),
            ];
            for (i, (label, color)) in series.iter().enumerate() {
                let color = *color;
                let x = i as f64;
                chart
                    .draw_series([Rectangle::new([(x, 0.0), (x + 0.5, 5.0)], color.filled())])
                    .expect("a fixed chart")
                    .label(*label)
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                    });
            }
            let axis = RGBColor(90, 90, 90);
            if by_plotters {
                chart
                    .configure_series_labels()
                    .position(match corner {
                        Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
                        Corner::UpperRight => SeriesLabelPosition::UpperRight,
                    })
                    .background_style(WHITE.mix(0.85))
                    .border_style(axis)
                    .label_font(("sans-serif", 12))
                    .draw()
                    .expect("a fixed chart");
            } else {
                let entries: Vec<_> = series.iter().map(|(l, c)| (l.to_string(), *c)).collect();
                legend(
                    &chart.plotting_area().strip_coord_spec(),
                    &entries,
                    corner,
                    TextStyle::from(("sans-serif", 12).into_font()),
                    WHITE.mix(0.85).into(),
                    axis.into(),
                )
                .expect("a fixed chart");
            }
            root.present().expect("a fixed chart");
        }
        svg
    }

    /// The hand-drawn legend is plotters' own, element for element.
    #[test]
    fn legend_is_plotters_series_labels() {
        for corner in [Corner::UpperLeft, Corner::UpperRight] {
            assert_eq!(chart(corner, false), chart(corner, true));
        }
    }
}
