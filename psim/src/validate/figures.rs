//! One figure per target that has the paper's points: those points as
//! markers, and psim's values at the same x (the checks each points table
//! names in `ours`) at quick and at full scale as lines over them, written
//! as `plots/ID.svg` by [`plot`](super::plot).

use std::path::{Path, PathBuf};

use super::plot::{Marker, Plot, Series};
use super::targets::Target;
use super::Results;

/// The folder of the figures, under `--out` (or the `--write-doc` folder).
pub const PLOTS_DIR: &str = "plots";

/// The figure of `t` from the results at hand; None without paper points.
pub fn figure(t: &Target, quick: Option<&Results>, full: Option<&Results>) -> Option<Plot> {
    let first = t.points.first()?;
    let mut series = Vec::new();
    let mut caption = Vec::new();
    for (i, p) in t.points.iter().enumerate() {
        // Colour-blind-safe hues: black and grey for the paper, orange
        // shades for quick scale, blues for full, one shade per curve.
        let shade = |c: [&str; 2]| c[i % 2].to_string();
        series.push(Series {
            label: format!("paper: {}", p.curve),
            points: p.points.iter().map(|&[x, y]| (x, y)).collect(),
            line: false,
            colour: shade(["#000000", "#777777"]),
            marker: Marker::Circle,
        });
        caption.push(format!("Paper ({}): {}", p.curve, p.source));
        for (res, colour, marker) in [
            (quick, shade(["#e69f00", "#d55e00"]), Marker::Square),
            (full, shade(["#0072b2", "#56b4e9"]), Marker::Diamond),
        ] {
            let Some(r) = res.and_then(|r| r.targets.get(&t.id).map(|x| (r.scale, x))) else {
                continue;
            };
            let points: Vec<(f64, f64)> = p
                .ours
                .iter()
                .filter_map(|o| {
                    let n: usize = o.check.rsplit('.').next()?.parse().ok()?;
                    let unit = t.checks.get(n.checked_sub(1)?)?.unit;
                    let v = r.1.checks.iter().find(|c| c.key == o.check)?.value?;
                    Some((o.x, unit.plot_value(v)))
                })
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    label: format!("psim, {} scale: {}", r.0.name(), p.curve),
                    points,
                    line: true,
                    colour,
                    marker,
                });
            }
        }
        if !p.ours.is_empty() {
            let keys: Vec<&str> = p.ours.iter().map(|o| o.check.as_str()).collect();
            caption.push(format!(
                "psim ({}): checks {} of validation/targets.toml",
                p.curve,
                keys.join(", ")
            ));
        }
    }
    Some(Plot {
        title: format!("{} {} ({})", t.id, t.title, t.figure),
        x_label: first.x.clone(),
        y_label: first.y.clone(),
        caption,
        series,
    })
}

/// Writes `dir/plots/ID.svg` for every target with paper points; returns
/// the files written.
pub fn write_all(
    targets: &[Target],
    quick: Option<&Results>,
    full: Option<&Results>,
    dir: &Path,
) -> Result<Vec<PathBuf>, String> {
    let plots = dir.join(PLOTS_DIR);
    let mut written = Vec::new();
    for t in targets {
        let Some(f) = figure(t, quick, full) else {
            continue;
        };
        std::fs::create_dir_all(&plots)
            .map_err(|e| format!("cannot create {}: {e}", plots.display()))?;
        let p = plots.join(format!("{}.svg", t.id));
        std::fs::write(&p, f.svg()).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        written.push(p);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::targets::{Scale, TargetsFile};
    use super::super::{CheckResult, TargetResult, Verdict};
    use super::*;

    fn target() -> Target {
        let text = r#"
[[target]]
id = "V20"
figure = "§6.2"
source = "[P] §6.2"
title = "scaling"
claim = "c"
status = "reproduced"
[[target.check]]
name = "128 hosts"
value = { fn = "fct_spread", run = "r" }
paper = "98%"
unit = "percent"
why = "w"
[[target.check]]
name = "8192 hosts"
value = { fn = "fct_spread", run = "r" }
paper = "90%"
unit = "percent"
why = "w"
[[target.points]]
curve = "NDP"
source = "[P] §6.2 text"
x = "hosts"
y = "utilisation, %"
points = [[128.0, 98.0], [8192.0, 90.0]]
ours = [{ x = 128.0, check = "V20.1" }, { x = 8192.0, check = "V20.2" }]
"#;
        toml::from_str::<TargetsFile>(text)
            .unwrap()
            .targets
            .remove(0)
    }

    fn results(values: &[(&str, Option<f64>)]) -> Results {
        let checks = values
            .iter()
            .map(|&(k, v)| CheckResult {
                key: k.into(),
                value: v,
                shown: String::new(),
                verdict: if v.is_some() {
                    Verdict::Pass
                } else {
                    Verdict::NotRun
                },
            })
            .collect();
        Results {
            scale: Scale::Full,
            psim_version: "0".into(),
            targets: BTreeMap::from([(
                "V20".into(),
                TargetResult {
                    runs: vec![],
                    checks,
                },
            )]),
        }
    }

    #[test]
    fn ours_are_the_named_checks_in_the_axis_unit() {
        let t = target();
        let full = results(&[("V20.1", Some(0.97)), ("V20.2", Some(0.9))]);
        let f = figure(&t, None, Some(&full)).unwrap();
        assert_eq!(f.series.len(), 2);
        assert_eq!(f.series[0].points, [(128.0, 98.0), (8192.0, 90.0)]);
        assert_eq!(f.series[1].label, "psim, full scale: NDP");
        // Percent checks are fractions: plotted in percent, as the paper's axis.
        assert_eq!(f.series[1].points, [(128.0, 97.0), (8192.0, 90.0)]);
        assert!(f.caption[0].contains("[P] §6.2 text"));
        assert!(f.caption[1].contains("V20.1, V20.2"));
        // A check not measured leaves its point out; no results, no psim curve.
        let part = results(&[("V20.1", Some(0.97)), ("V20.2", None)]);
        let f = figure(&t, Some(&part), None).unwrap();
        assert_eq!(f.series[1].points, [(128.0, 97.0)]);
        assert_eq!(figure(&t, None, None).unwrap().series.len(), 1);
    }

    #[test]
    fn every_target_with_points_gets_a_file_and_the_others_none() {
        let d = tempfile::tempdir().unwrap();
        let mut other = target();
        other.id = "V1".into();
        other.points.clear();
        let full = results(&[("V20.1", Some(0.97))]);
        let written = write_all(&[target(), other], None, Some(&full), d.path()).unwrap();
        assert_eq!(written, [d.path().join("plots/V20.svg")]);
        let svg = std::fs::read_to_string(&written[0]).unwrap();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("hosts (log scale)"));
    }
}
