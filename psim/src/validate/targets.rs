//! The reproduction targets as data: the schema of `validation/targets.toml`.
//!
//! One `[[target]]` per paper claim: its ID (docs/references.md §4), figure,
//! source, the paper's claim in its own words, a status, the runs (a scenario
//! file plus `--set` overrides at quick and full scale) and the checks (a
//! metric, the paper's value, and the bounds that the paper's wording allows,
//! with the reason for those bounds). Unknown keys are rejected, so a typo in
//! the table is an error naming the key.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::metrics::Metric;

/// The ID lists every target table must cover: the NDP paper's V1–V27, the
/// thesis's T1–T44 and the trimming/pFabric P1–P23 (docs/references.md §4).
pub const ID_RANGES: [(&str, u32); 3] = [("V", 27), ("T", 44), ("P", 23)];

/// The whole table.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct TargetsFile {
    /// Every target, in the order the report lists them.
    #[serde(rename = "target")]
    pub targets: Vec<Target>,
}

/// How far psim is from the paper on this target, as declared in the table.
/// The measured verdict of each check is separate ([`super::Verdict`]).
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The checks hold at the paper's numbers.
    Reproduced,
    /// The paper gives a shape, not numbers; the checks test the shape.
    Trend,
    /// psim misses at least one of the paper's numbers, for the written reason.
    KnownDifference,
    /// The models it needs do not exist yet.
    NotModelled,
}

impl Status {
    /// The words the report uses.
    pub fn words(self) -> &'static str {
        match self {
            Status::Reproduced => "reproduced",
            Status::Trend => "trend only",
            Status::KnownDifference => "known difference",
            Status::NotModelled => "not yet modelled",
        }
    }
}

/// The scale a run or a whole validation pass uses.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Seconds per target: what CI runs.
    Quick,
    /// The paper's sizes where psim can run them.
    Full,
}

impl Scale {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    }
}

/// One reproduction target.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// V*, T* or P*.
    pub id: String,
    /// The figure or table ("Fig. 16"), or the section for claims in the text.
    pub figure: String,
    /// Citation key and section ("[P] §6.1"), keys from docs/references.md.
    pub source: String,
    /// A few words naming the experiment.
    pub title: String,
    /// The paper's claim, in its wording.
    pub claim: String,
    /// Declared status.
    pub status: Status,
    /// Why: required for known differences, models not yet there, and trends.
    #[serde(default)]
    pub reason: Option<String>,
    /// The runs the checks read.
    #[serde(default, rename = "run")]
    pub runs: Vec<RunSpec>,
    /// The checks.
    #[serde(default, rename = "check")]
    pub checks: Vec<Check>,
    /// The paper's plotted points, where a figure has them (for plots).
    #[serde(default, rename = "points")]
    pub points: Vec<PaperPoints>,
}

/// A named simulation: a scenario file and overrides.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Name the checks use.
    pub name: String,
    /// Scenario file, relative to the repository root.
    pub scenario: String,
    /// `--set` overrides at every scale.
    #[serde(default)]
    pub sets: Vec<String>,
    /// More overrides at quick scale.
    #[serde(default)]
    pub quick: Vec<String>,
    /// Overrides at full scale instead of `quick`; absent: the full run is the quick run.
    #[serde(default)]
    pub full: Option<Vec<String>>,
    /// Run only at this scale (checks that read it are skipped at the other).
    #[serde(default)]
    pub only: Option<Scale>,
    /// Repeat the run over seeds 1..=n (`repeat = { quick = 5, full = 100 }`),
    /// as papers that average repetitions do; checks read it through
    /// `seed_mean`.
    #[serde(default)]
    pub repeat: Option<Repeat>,
}

/// How many seeds a repeated run takes at each scale.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Repeat {
    /// Seeds at quick scale.
    pub quick: u32,
    /// Seeds at full scale.
    pub full: u32,
}

impl RunSpec {
    /// The overrides at `scale`, or None if the run is skipped there.
    pub fn sets_at(&self, scale: Scale) -> Option<Vec<String>> {
        if self.only.is_some_and(|o| o != scale) {
            return None;
        }
        let mut v = self.sets.clone();
        match (scale, &self.full) {
            (Scale::Full, Some(f)) => v.extend(f.iter().cloned()),
            _ => v.extend(self.quick.iter().cloned()),
        }
        Some(v)
    }

    /// The seeds a repeated run takes at `scale` (1..=n), or None.
    pub fn seeds_at(&self, scale: Scale) -> Option<u32> {
        self.repeat.map(|r| match scale {
            Scale::Quick => r.quick,
            Scale::Full => r.full,
        })
    }

    /// The `psim run` command line that reproduces this run (a repeated
    /// run: each seed's, with `seed=K`).
    pub fn command(&self, scale: Scale) -> Option<String> {
        let sets = self.sets_at(scale)?;
        let mut c = format!("psim run {}", self.scenario);
        for s in sets {
            if s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._=-".contains(c))
            {
                c.push_str(&format!(" --set {s}"));
            } else {
                c.push_str(&format!(" --set '{s}'"));
            }
        }
        match self.seeds_at(scale) {
            Some(n) => c.push_str(&format!(" --set seed=K --out DIR  # K = 1..{n}")),
            None => c.push_str(" --out DIR"),
        }
        Some(c)
    }
}

/// Display unit of a check's value.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A plain number, 3 significant digits.
    #[default]
    Number,
    /// A fraction shown in percent.
    Percent,
    /// A ratio shown as "2.31x".
    Times,
    /// Gb/s.
    Gbps,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// An integer count.
    Count,
}

impl Unit {
    /// The value as the report shows it.
    pub fn show(self, v: f64) -> String {
        match self {
            Unit::Number => sig3(v),
            Unit::Percent => format!("{}%", sig3(v * 100.0)),
            Unit::Times => format!("{}x", sig3(v)),
            Unit::Gbps => format!("{v:.2} Gb/s"),
            Unit::Us => format!("{v:.1} µs"),
            Unit::Ms => format!("{v:.3} ms"),
            Unit::Count => format!("{v:.0}"),
        }
    }
}

impl Unit {
    /// A value as the paper's axes give it: a fraction in percent, anything
    /// else as measured (µs, Gb/s, a ratio).
    pub fn plot_value(self, v: f64) -> f64 {
        match self {
            Unit::Percent => v * 100.0,
            _ => v,
        }
    }
}

/// Three significant digits, without exponent notation for everyday sizes.
fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// One comparison with the paper.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// What is measured, in a few words.
    pub name: String,
    /// The metric.
    pub value: Metric,
    /// The paper's value, as the paper states it ("about 1%", "≥ 9 Gb/s").
    pub paper: String,
    /// Lowest value that agrees with the paper's claim.
    #[serde(default)]
    pub min: Option<f64>,
    /// Highest value that agrees with the paper's claim.
    #[serde(default)]
    pub max: Option<f64>,
    /// Why these bounds: the claim's wording.
    pub why: String,
    /// Display unit.
    #[serde(default)]
    pub unit: Unit,
    /// A miss that is understood: the reason, and the check reports "known
    /// difference" instead of failing.
    #[serde(default)]
    pub known_difference: Option<String>,
}

impl Check {
    /// The bounds as the report shows them.
    pub fn tolerance(&self) -> String {
        match (self.min, self.max) {
            (Some(a), Some(b)) => format!("{} to {}", self.unit.show(a), self.unit.show(b)),
            (Some(a), None) => format!("≥ {}", self.unit.show(a)),
            (None, Some(b)) => format!("≤ {}", self.unit.show(b)),
            (None, None) => "shown only".into(),
        }
    }

    /// Whether `v` is within the bounds.
    pub fn holds(&self, v: f64) -> bool {
        self.min.is_none_or(|a| v >= a) && self.max.is_none_or(|b| v <= b)
    }
}

/// Points read off one of the paper's curves.
#[derive(Deserialize, Serialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct PaperPoints {
    /// The curve ("NDP", "DCTCP").
    pub curve: String,
    /// Where the numbers come from (figure, text, or read off the plot).
    pub source: String,
    /// x axis label.
    pub x: String,
    /// y axis label.
    pub y: String,
    /// (x, y) pairs.
    pub points: Vec<[f64; 2]>,
    /// psim's points on the same axes, where a check measures one: the plot
    /// draws them over the paper's (`psim validate` writes OUT/plots/ID.svg).
    #[serde(default)]
    pub ours: Vec<OurPoint>,
}

/// One of psim's points: at `x`, the value of a check of the same target.
#[derive(Deserialize, Serialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct OurPoint {
    /// On the paper's x axis.
    pub x: f64,
    /// The check's key (`V20.1`): its value, in the y axis's unit
    /// ([`Unit::plot_value`]), is the y.
    pub check: String,
}

/// Reads and checks a targets file: the schema, unique IDs, every ID of
/// [`ID_RANGES`] present, reasons where the status needs one, every run a
/// check reads declared, every scenario file present.
pub fn load(path: &Path, root: &Path) -> Result<TargetsFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let file: TargetsFile =
        toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), one_line(&e)))?;
    let err = |m: String| format!("{}: {m}", path.display());
    let mut seen = std::collections::BTreeSet::new();
    for t in &file.targets {
        if !seen.insert(t.id.clone()) {
            return Err(err(format!("target {} is listed twice", t.id)));
        }
        let needs_reason = t.status != Status::Reproduced;
        if needs_reason && t.reason.as_deref().is_none_or(str::is_empty) {
            return Err(err(format!(
                "target {}: status `{}` needs a `reason`",
                t.id,
                t.status.words()
            )));
        }
        if t.status == Status::NotModelled && !t.checks.is_empty() {
            return Err(err(format!("target {}: not modelled but has checks", t.id)));
        }
        let texts =
            std::iter::once(&t.title).chain(t.checks.iter().flat_map(|c| [&c.name, &c.paper]));
        if let Some(bad) = texts.into_iter().find(|s| s.contains('|')) {
            return Err(err(format!("target {}: `|` in table text {bad:?}", t.id)));
        }
        let mut names = std::collections::BTreeSet::new();
        for r in &t.runs {
            if !names.insert(r.name.clone()) {
                return Err(err(format!("target {}: run `{}` twice", t.id, r.name)));
            }
            if !root.join(&r.scenario).is_file() {
                return Err(err(format!(
                    "target {} run {}: scenario {} not found",
                    t.id, r.name, r.scenario
                )));
            }
            if r.name.contains('#') {
                return Err(err(format!(
                    "target {} run {}: `#` is kept for the seeds of repeated runs",
                    t.id, r.name
                )));
            }
            if r.repeat.is_some_and(|n| n.quick == 0 || n.full == 0) {
                return Err(err(format!(
                    "target {} run {}: repeat needs at least one seed at each scale",
                    t.id, r.name
                )));
            }
        }
        let repeated = |u: &String| t.runs.iter().any(|r| &r.name == u && r.repeat.is_some());
        for c in &t.checks {
            let mut used = Vec::new();
            c.value.runs(&mut used);
            if let Some(u) = used.iter().find(|u| !names.contains(*u)) {
                return Err(err(format!(
                    "target {} check {:?}: run `{u}` is not declared",
                    t.id, c.name
                )));
            }
            let mut bare = Vec::new();
            c.value.bare_runs(&mut bare);
            if let Some(u) = bare.iter().find(|u| repeated(u)) {
                return Err(err(format!(
                    "target {} check {:?}: run `{u}` repeats over seeds: read it inside seed_mean",
                    t.id, c.name
                )));
            }
        }
        for p in &t.points {
            for o in &p.ours {
                let n = o
                    .check
                    .strip_prefix(&format!("{}.", t.id))
                    .and_then(|n| n.parse::<usize>().ok());
                if !n.is_some_and(|n| (1..=t.checks.len()).contains(&n)) {
                    return Err(err(format!(
                        "target {} points {:?}: ours names `{}`, not a check of {} ({}.1 to {}.{})",
                        t.id,
                        p.curve,
                        o.check,
                        t.id,
                        t.id,
                        t.id,
                        t.checks.len()
                    )));
                }
            }
        }
    }
    for (prefix, n) in ID_RANGES {
        for i in 1..=n {
            let id = format!("{prefix}{i}");
            // A target may be split into lettered parts (V3a, V3b, ...).
            let covered = seen.iter().any(|s| {
                s == &id
                    || s.strip_prefix(id.as_str()).is_some_and(|rest| {
                        rest.len() == 1 && rest.chars().all(|c| c.is_ascii_lowercase())
                    })
            });
            if !covered {
                return Err(err(format!(
                    "target {id} is missing (register it, if only as not_modelled)"
                )));
            }
        }
    }
    Ok(file)
}

fn one_line(e: &toml::de::Error) -> String {
    e.to_string().replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf()
    }

    #[test]
    fn the_shipped_table_registers_every_target_and_checks_its_runs() {
        let r = root();
        let t = load(&r.join("validation/targets.toml"), &r).unwrap_or_else(|e| panic!("{e}"));
        // 27 + 44 + 23 IDs, V3 split into a-d.
        assert_eq!(t.targets.len(), 27 + 44 + 23 + 3);
        // Every run of every check loads as a scenario at both scales.
        for tg in &t.targets {
            for run in &tg.runs {
                for scale in [Scale::Quick, Scale::Full] {
                    if let Some(sets) = run.sets_at(scale) {
                        crate::config::Scenario::load(&r.join(&run.scenario), &sets)
                            .unwrap_or_else(|e| panic!("{} {}: {e}", tg.id, run.name));
                    }
                }
            }
        }
    }

    #[test]
    fn a_missing_id_an_unknown_key_and_a_missing_reason_are_errors() {
        let r = root();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.toml");
        let write = |s: &str| std::fs::write(&p, s).unwrap();
        write("[[target]]\nid = \"V1\"\nfigure = \"f\"\nsource = \"s\"\ntitle = \"t\"\nclaim = \"c\"\nstatus = \"reproduced\"\n");
        assert!(load(&p, &r).unwrap_err().contains("target V2 is missing"));
        write("[[target]]\nid = \"V1\"\nfigure = \"f\"\nsource = \"s\"\ntitle = \"t\"\nclaim = \"c\"\nstatus = \"trend\"\n");
        assert!(load(&p, &r).unwrap_err().contains("needs a `reason`"));
        write("[[target]]\nid = \"V1\"\nfigur = \"f\"\n");
        assert!(load(&p, &r).unwrap_err().contains("figur"));
        write("[[target]]\nid = \"V1\"\nfigure = \"f\"\nsource = \"s\"\ntitle = \"t\"\nclaim = \"c\"\nstatus = \"reproduced\"\n\
               [[target.points]]\ncurve = \"a\"\nsource = \"s\"\nx = \"x\"\ny = \"y\"\npoints = [[1.0, 2.0]]\n\
               ours = [{ x = 1.0, check = \"V1.1\" }]\n");
        let e = load(&p, &r).unwrap_err();
        assert!(e.contains("ours names `V1.1`, not a check of V1"), "{e}");
    }

    #[test]
    fn commands_quote_what_the_shell_would_split() {
        let run = RunSpec {
            name: "r".into(),
            scenario: "validation/scenarios/x.toml".into(),
            sets: vec!["a.b=1".into()],
            quick: vec!["c=\"d\"".into()],
            full: Some(vec!["topology.k=12".into()]),
            only: None,
            repeat: None,
        };
        assert_eq!(
            run.command(Scale::Quick).unwrap(),
            "psim run validation/scenarios/x.toml --set a.b=1 --set 'c=\"d\"' --out DIR"
        );
        assert!(run.command(Scale::Full).unwrap().contains("topology.k=12"));
        assert!(!run.command(Scale::Full).unwrap().contains("c="));
        let repeated = RunSpec {
            repeat: Some(Repeat { quick: 2, full: 5 }),
            ..run
        };
        assert_eq!(
            repeated.command(Scale::Full).unwrap(),
            "psim run validation/scenarios/x.toml --set a.b=1 --set topology.k=12 \
             --set seed=K --out DIR  # K = 1..5"
        );
    }

    /// A repeated run must be read through `seed_mean`, and takes a seed
    /// at each scale.
    #[test]
    fn a_repeated_run_read_bare_or_without_seeds_is_an_error() {
        let r = root();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.toml");
        let target = |repeat: &str, value: &str| {
            format!(
                "[[target]]\nid = \"V1\"\nfigure = \"f\"\nsource = \"s\"\ntitle = \"t\"\n\
                 claim = \"c\"\nstatus = \"reproduced\"\n[[target.run]]\nname = \"r\"\n\
                 scenario = \"scenarios/rdma/irn.toml\"\nrepeat = {repeat}\n[[target.check]]\n\
                 name = \"n\"\nvalue = {value}\npaper = \"p\"\nwhy = \"w\"\n"
            )
        };
        let last = "{ fn = \"last_fct\", run = \"r\" }";
        std::fs::write(&p, target("{ quick = 2, full = 3 }", last)).unwrap();
        let e = load(&p, &r).unwrap_err();
        assert!(
            e.contains("run `r` repeats over seeds: read it inside seed_mean"),
            "{e}"
        );
        let mean = format!("{{ fn = \"seed_mean\", of = {last} }}");
        std::fs::write(&p, target("{ quick = 0, full = 3 }", &mean)).unwrap();
        let e = load(&p, &r).unwrap_err();
        assert!(e.contains("at least one seed"), "{e}");
        // Well formed, it gets as far as the table's completeness.
        std::fs::write(&p, target("{ quick = 2, full = 3 }", &mean)).unwrap();
        let e = load(&p, &r).unwrap_err();
        assert!(e.contains("target V2 is missing"), "{e}");
    }
}
