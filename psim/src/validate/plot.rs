//! A small SVG plot writer for the validation figures: series of (x, y)
//! points as markers, optionally joined by a line, over linear axes with
//! round ticks (1, 2 or 5 times a power of ten), or a logarithmic x axis
//! where x spans more than about a decade and a half (host counts 128 to
//! 8192). No dependencies: psim's binary stays
//! free of plotting libraries, and the output is plain text that a browser
//! or a markdown viewer shows.

use std::fmt::Write as _;

/// Picture size, px.
pub const WIDTH: f64 = 640.0;
/// Plot area: left edge (room for the y ticks and label).
pub const LEFT: f64 = 80.0;
/// Plot area: right margin.
pub const RIGHT: f64 = 20.0;
/// Plot area: top edge (room for the title).
pub const TOP: f64 = 40.0;
/// Plot area height.
pub const PLOT_HEIGHT: f64 = 300.0;
/// Plot area width.
pub const PLOT_WIDTH: f64 = WIDTH - LEFT - RIGHT;

/// The span (greatest over least) beyond which a positive x axis is
/// logarithmic: about a decade and a half, so that 128 to 8192 hosts (64x)
/// spread out instead of crowding at one end.
pub const LOG_RATIO: f64 = 30.0;

/// How a series' points are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// An open circle.
    Circle,
    /// A filled square.
    Square,
    /// A filled diamond.
    Diamond,
}

/// One curve.
#[derive(Debug, Clone)]
pub struct Series {
    /// Its legend entry.
    pub label: String,
    /// (x, y); points that are not finite (or not positive on a log axis) are left out.
    pub points: Vec<(f64, f64)>,
    /// Join the points (in x order) with a line.
    pub line: bool,
    /// Stroke and fill colour (`#rrggbb`).
    pub colour: String,
    /// The marker.
    pub marker: Marker,
}

/// A whole figure.
#[derive(Debug, Clone, Default)]
pub struct Plot {
    /// Above the plot.
    pub title: String,
    /// Under the x axis.
    pub x_label: String,
    /// Beside the y axis.
    pub y_label: String,
    /// Lines under the legend (the data's sources).
    pub caption: Vec<String>,
    /// The curves, drawn in order.
    pub series: Vec<Series>,
}

/// One axis: its range, scale and ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The value at the start of the axis.
    pub lo: f64,
    /// The value at its end.
    pub hi: f64,
    /// Logarithmic (base 10).
    pub log: bool,
    /// Tick values, ascending, within [lo, hi].
    pub ticks: Vec<f64>,
}

impl Axis {
    /// An axis covering `values` (the finite ones): logarithmic when `allow_log`,
    /// all are positive and the greatest is more than [`LOG_RATIO`] times
    /// the least; else linear,
    /// from one round tick below the least to one above the greatest. A
    /// single value, or equal ones, get a range around them; none, 0 to 1.
    pub fn fit(values: &[f64], allow_log: bool) -> Axis {
        let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        let (mut lo, mut hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        if v.is_empty() {
            (lo, hi) = (0.0, 1.0);
        }
        if allow_log && lo > 0.0 && hi / lo > LOG_RATIO {
            let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
            return Axis {
                lo: 10f64.powi(a),
                hi: 10f64.powi(b),
                log: true,
                ticks: (a..=b).map(|e| 10f64.powi(e)).collect(),
            };
        }
        if hi - lo <= f64::EPSILON * lo.abs().max(hi.abs()).max(1.0) {
            let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
            lo -= d;
            hi += d;
        }
        let step = nice_step(hi - lo);
        let lo = (lo / step).floor() * step;
        let hi = (hi / step).ceil() * step;
        let n = ((hi - lo) / step).round() as usize;
        Axis {
            lo,
            hi,
            log: false,
            ticks: (0..=n).map(|i| lo + i as f64 * step).collect(),
        }
    }

    /// Where `v` falls along the axis: 0 at `lo`, 1 at `hi`.
    pub fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// Whether `v` can be drawn on this axis.
    fn shows(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }

    /// A tick's label: as many decimals as the tick spacing needs.
    fn label(&self, v: f64) -> String {
        if self.log {
            return format!("{v}");
        }
        let step = self.ticks.get(1).map_or(1.0, |t| t - self.ticks[0]);
        let decimals = (-step.log10().floor()).max(0.0) as usize;
        let s = format!("{v:.decimals$}");
        // Zero reads "0", not "-0.0" or "0.00".
        if s.chars().all(|c| "-0.".contains(c)) {
            "0".into()
        } else {
            s
        }
    }
}

/// A round tick spacing (1, 2 or 5 times a power of ten) giving about five
/// ticks over `span`.
pub fn nice_step(span: f64) -> f64 {
    let raw = span / 5.0;
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * p
}

impl Plot {
    /// The x and y axes that hold every series' points.
    pub fn axes(&self) -> (Axis, Axis) {
        let pts = self.series.iter().flat_map(|s| s.points.iter());
        let xs: Vec<f64> = pts.clone().map(|p| p.0).collect();
        let ys: Vec<f64> = pts.map(|p| p.1).collect();
        (Axis::fit(&xs, true), Axis::fit(&ys, false))
    }

    /// The pixel position of (x, y).
    pub fn pixel(x_axis: &Axis, y_axis: &Axis, x: f64, y: f64) -> (f64, f64) {
        (
            LEFT + x_axis.frac(x) * PLOT_WIDTH,
            TOP + (1.0 - y_axis.frac(y)) * PLOT_HEIGHT,
        )
    }

    /// The figure as an SVG document.
    pub fn svg(&self) -> String {
        let (xa, ya) = self.axes();
        let legend_top = TOP + PLOT_HEIGHT + 52.0;
        let caption_top = legend_top + 18.0 * self.series.len() as f64 + 6.0;
        let height = caption_top + 16.0 * self.caption.len() as f64 + 8.0;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
             viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"12\">"
        );
        let _ = writeln!(
            s,
            "<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"white\"/>"
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
            WIDTH / 2.0,
            esc(&self.title)
        );
        // The frame, the grid and the ticks.
        let (x0, x1, y0, y1) = (LEFT, LEFT + PLOT_WIDTH, TOP, TOP + PLOT_HEIGHT);
        let _ = writeln!(
            s,
            "<rect x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{PLOT_WIDTH:.1}\" height=\"{PLOT_HEIGHT:.1}\" fill=\"none\" stroke=\"#444\"/>"
        );
        for &t in &xa.ticks {
            let (px, _) = Self::pixel(&xa, &ya, t, ya.lo);
            let _ = writeln!(
                s,
                "<line x1=\"{px:.1}\" y1=\"{y0:.1}\" x2=\"{px:.1}\" y2=\"{y1:.1}\" stroke=\"#ddd\"/>\n\
                 <text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                y1 + 16.0,
                esc(&xa.label(t))
            );
        }
        for &t in &ya.ticks {
            let (_, py) = Self::pixel(&xa, &ya, xa.lo, t);
            let _ = writeln!(
                s,
                "<line x1=\"{x0:.1}\" y1=\"{py:.1}\" x2=\"{x1:.1}\" y2=\"{py:.1}\" stroke=\"#ddd\"/>\n\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                x0 - 6.0,
                py + 4.0,
                esc(&ya.label(t))
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}{}</text>",
            LEFT + PLOT_WIDTH / 2.0,
            y1 + 36.0,
            esc(&self.x_label),
            if xa.log { " (log scale)" } else { "" }
        );
        let (cx, cy) = (18.0, TOP + PLOT_HEIGHT / 2.0);
        let _ = writeln!(
            s,
            "<text x=\"{cx:.1}\" y=\"{cy:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {cx:.1} {cy:.1})\">{}</text>",
            esc(&self.y_label)
        );
        // The series.
        for sr in &self.series {
            let mut pts: Vec<(f64, f64)> = sr
                .points
                .iter()
                .copied()
                .filter(|&(x, y)| xa.shows(x) && ya.shows(y))
                .map(|(x, y)| Self::pixel(&xa, &ya, x, y))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            if sr.line && pts.len() > 1 {
                let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                let _ = writeln!(
                    s,
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
                    path.join(" "),
                    esc(&sr.colour)
                );
            }
            for &(x, y) in &pts {
                s.push_str(&marker(sr.marker, x, y, &sr.colour));
            }
        }
        // The legend and the caption.
        for (i, sr) in self.series.iter().enumerate() {
            let y = legend_top + 18.0 * i as f64;
            if sr.line {
                let _ = writeln!(
                    s,
                    "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{}\" stroke-width=\"2\"/>",
                    LEFT,
                    LEFT + 24.0,
                    esc(&sr.colour)
                );
            }
            s.push_str(&marker(sr.marker, LEFT + 12.0, y, &sr.colour));
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                LEFT + 32.0,
                y + 4.0,
                esc(&sr.label)
            );
        }
        for (i, c) in self.caption.iter().enumerate() {
            let _ = writeln!(
                s,
                "<text x=\"10\" y=\"{:.1}\" font-size=\"11\" fill=\"#444\">{}</text>",
                caption_top + 16.0 * i as f64 + 4.0,
                esc(c)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn marker(m: Marker, x: f64, y: f64, colour: &str) -> String {
    let c = esc(colour);
    match m {
        Marker::Circle => format!(
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>\n"
        ),
        Marker::Square => format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"8\" height=\"8\" fill=\"{c}\"/>\n",
            x - 4.0,
            y - 4.0
        ),
        Marker::Diamond => format!(
            "<polygon points=\"{x:.1},{:.1} {:.1},{y:.1} {x:.1},{:.1} {:.1},{y:.1}\" fill=\"{c}\"/>\n",
            y - 5.0,
            x + 5.0,
            y + 5.0,
            x - 5.0
        ),
    }
}

/// Text made safe inside an SVG element or attribute.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal XML structure check: every tag closes in order, every
    /// attribute value is quoted, no bare `<` or `&` in text.
    fn well_formed(doc: &str) -> Result<usize, String> {
        let mut stack: Vec<String> = Vec::new();
        let mut elements = 0;
        let mut rest = doc;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            if text.contains('>') {
                return Err(format!("stray > in {text:?}"));
            }
            for (i, _) in text.match_indices('&') {
                let t = &text[i..];
                if !["&amp;", "&lt;", "&gt;", "&quot;"]
                    .iter()
                    .any(|e| t.starts_with(e))
                {
                    return Err(format!("bare & in {text:?}"));
                }
            }
            let close = rest[open..].find('>').ok_or("unclosed tag")? + open;
            let tag = &rest[open + 1..close];
            if tag.contains('<') {
                return Err(format!("< inside tag {tag:?}"));
            }
            if !tag.matches('"').count().is_multiple_of(2) {
                return Err(format!("unbalanced quotes in {tag:?}"));
            }
            if let Some(name) = tag.strip_prefix('/') {
                match stack.pop() {
                    Some(top) if top == name => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
            } else {
                elements += 1;
                let name = tag
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .trim_end_matches('/');
                if name.is_empty() {
                    return Err("empty tag".into());
                }
                if !tag.ends_with('/') {
                    stack.push(name.to_string());
                }
            }
            rest = &rest[close + 1..];
        }
        if !stack.is_empty() {
            return Err(format!("unclosed: {stack:?}"));
        }
        Ok(elements)
    }

    fn series(points: Vec<(f64, f64)>) -> Series {
        Series {
            label: "paper <P> & co".into(),
            points,
            line: true,
            colour: "#000000".into(),
            marker: Marker::Circle,
        }
    }

    #[test]
    fn points_land_where_the_axes_put_them() {
        let p = Plot {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            caption: vec!["source".into()],
            series: vec![series(vec![(0.0, 0.0), (10.0, 100.0), (5.0, 50.0)])],
        };
        let (xa, ya) = p.axes();
        // Round ticks: 0 to 10 by 2, 0 to 100 by 20.
        assert_eq!(xa.ticks, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ya.ticks, [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let svg = p.svg();
        well_formed(&svg).unwrap();
        // (0, 0) at the plot area's bottom left, (10, 100) at its top right,
        // (5, 50) in its middle.
        for (x, y) in [
            (LEFT, TOP + PLOT_HEIGHT),
            (LEFT + PLOT_WIDTH, TOP),
            (LEFT + PLOT_WIDTH / 2.0, TOP + PLOT_HEIGHT / 2.0),
        ] {
            let c = format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\"");
            assert!(svg.contains(&c), "{c} not in\n{svg}");
        }
        // The line joins them in x order.
        assert!(svg.contains("<polyline points=\"80.0,340.0 350.0,190.0 620.0,40.0\""));
        assert!(svg.contains("paper &lt;P&gt; &amp; co"));
    }

    #[test]
    fn a_wide_positive_x_is_logarithmic() {
        let a = Axis::fit(&[128.0, 1024.0, 8192.0], true);
        assert!(a.log);
        assert_eq!(a.ticks, [100.0, 1000.0, 10000.0]);
        assert!((a.frac(1000.0) - 0.5).abs() < 1e-12);
        assert!(!Axis::fit(&[128.0, 8192.0], false).log);
        assert!(Axis::fit(&[128.0, 8192.0], true).log, "64x: logarithmic");
        assert!(!Axis::fit(&[10.0, 200.0], true).log, "20x: linear");
        assert!(!Axis::fit(&[-1.0, 8192.0], true).log, "not all positive");
    }

    #[test]
    fn degenerate_inputs_draw_without_panicking() {
        let one = Axis::fit(&[92.0], false);
        assert!(one.lo < 92.0 && one.hi > 92.0, "{one:?}");
        let zero = Axis::fit(&[0.0, 0.0], false);
        assert!(zero.lo < 0.0 && zero.hi > 0.0, "{zero:?}");
        let none = Axis::fit(&[], true);
        assert_eq!((none.lo, none.hi), (0.0, 1.0));
        for pts in [
            vec![],
            vec![(1.0, 92.0)],
            vec![(3.0, 40.0), (3.0, 40.0)],
            vec![(f64::NAN, 1.0), (2.0, f64::INFINITY), (1.0, 2.0)],
            vec![(1e-300, 1e300), (1e300, -1e300)],
        ] {
            let p = Plot {
                series: vec![series(pts.clone())],
                ..Plot::default()
            };
            let svg = p.svg();
            well_formed(&svg).unwrap_or_else(|e| panic!("{pts:?}: {e}"));
            assert!(
                !svg.contains("NaN") && !svg.contains("inf"),
                "{pts:?}\n{svg}"
            );
        }
        let empty = Plot::default().svg();
        assert_eq!(well_formed(&empty).map(|n| n > 3), Ok(true));
    }

    #[test]
    fn ticks_are_round_and_labelled_with_the_decimals_they_need() {
        assert_eq!(nice_step(10.0), 2.0);
        assert_eq!(nice_step(1.0), 0.2);
        assert_eq!(nice_step(450.0), 100.0);
        let a = Axis::fit(&[0.0, 1.0], false);
        assert_eq!(a.label(a.ticks[1]), "0.2");
        assert_eq!(a.label(0.0), "0");
        let b = Axis::fit(&[40.0, 92.0], false);
        assert_eq!((b.lo, b.hi), (40.0, 100.0));
        assert_eq!(b.label(60.0), "60");
    }
}
