//! Flow-size distributions: empirical CDFs, the IRN heavy-tailed mix, uniform and fixed sizes.
//!
//! Samples are drawn as a continuous variate `X` and rounded *up* to whole bytes (never below 1).
//! Rounding up keeps the sampled integer's CDF exactly equal to the continuous CDF at every
//! integer: `P(ceil(X) <= k) = P(X <= k) = F(k)`, which lets tests compare against `F` directly.

use std::path::{Path, PathBuf};

use crate::error::WorkloadError;
use crate::rng::Stream;

/// Web-search CDF in the project's CDF format (see `docs/workloads.md`).
pub const WEBSEARCH_CDF: &str = include_str!("../data/websearch.cdf");
/// Facebook Hadoop CDF in the project's CDF format.
pub const FB_HADOOP_CDF: &str = include_str!("../data/fb_hadoop.cdf");
/// Alibaba storage CDF in the project's CDF format.
pub const ALI_STORAGE_CDF: &str = include_str!("../data/ali_storage.cdf");
/// Facebook web CDF as NDP's Fig. 23 draws it: a step CDF (ten point masses).
pub const FB_WEB_CDF: &str = include_str!("../data/fb_web.cdf");
/// Web search as pFabric's simulations draw it (in 1460-byte packets).
pub const WEBSEARCH_PFABRIC_CDF: &str = include_str!("../data/websearch_pfabric.cdf");
/// VL2's data mining as pFabric's simulations draw it (in 1460-byte packets).
pub const DATAMINING_CDF: &str = include_str!("../data/datamining.cdf");
/// Benson et al.'s IMC 2010 data center sizes as ns-2 draws the table (a step CDF).
pub const IMC10_CDF: &str = include_str!("../data/imc10.cdf");

/// A piecewise-linear CDF: points `(size_bytes, cumulative_fraction)`, sampled by linear
/// interpolation between consecutive points.
#[derive(Clone, Debug, PartialEq)]
pub struct EmpiricalCdf {
    points: Vec<(f64, f64)>,
}

impl EmpiricalCdf {
    /// Parses the project's CDF format.
    ///
    /// Blank lines and lines starting with `#` are ignored. The first other line is a header,
    /// `size_bytes cumulative_fraction` or `size_bytes cumulative_percent`, which fixes the unit
    /// of the second column so that a file can never be misread by a factor of 100. Every
    /// following line is `SIZE CUMULATIVE`, separated by whitespace or a comma. Sizes and
    /// cumulative values must not decrease; the last cumulative value must be 1 (or 100).
    /// `file` only names the source in error messages.
    pub fn parse(text: &str, file: &Path) -> Result<EmpiricalCdf, WorkloadError> {
        let err = |line: usize, reason: String| WorkloadError::CdfParse {
            file: file.to_path_buf(),
            line,
            reason,
        };
        let mut scale = None;
        let mut points: Vec<(f64, f64)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let l = raw.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let cols: Vec<&str> = l
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|s| !s.is_empty())
                .collect();
            if scale.is_none() {
                scale = Some(match cols.as_slice() {
                    ["size_bytes", "cumulative_fraction"] => 1.0,
                    ["size_bytes", "cumulative_percent"] => 100.0,
                    _ => {
                        return Err(err(
                            line,
                            format!(
                                "expected the header `size_bytes cumulative_fraction` or \
                                 `size_bytes cumulative_percent`, found `{l}`"
                            ),
                        ))
                    }
                });
                continue;
            }
            let [s, p] = cols.as_slice() else {
                return Err(err(line, format!("expected two columns, found `{l}`")));
            };
            let size: f64 = s
                .parse()
                .map_err(|_| err(line, format!("size `{s}` is not a number")))?;
            let cum: f64 = p
                .parse()
                .map_err(|_| err(line, format!("cumulative value `{p}` is not a number")))?;
            let cum = cum / scale.unwrap_or(1.0);
            if !size.is_finite() || size < 0.0 {
                return Err(err(line, format!("size {size} must be finite and >= 0")));
            }
            if !cum.is_finite() || !(0.0..=1.0 + 1e-9).contains(&cum) {
                return Err(err(line, format!("cumulative value `{p}` is out of range")));
            }
            if let Some(&(ps, pc)) = points.last() {
                if size < ps {
                    return Err(WorkloadError::CdfNotMonotone {
                        file: file.to_path_buf(),
                        line,
                        reason: format!("size {size} is below the previous size {ps}"),
                    });
                }
                if cum < pc {
                    return Err(WorkloadError::CdfNotMonotone {
                        file: file.to_path_buf(),
                        line,
                        reason: format!("cumulative probability {cum} is below the previous {pc}"),
                    });
                }
            }
            points.push((size, cum.min(1.0)));
        }
        if scale.is_none() {
            return Err(err(1, "empty CDF: no header and no points".into()));
        }
        let last = points.last().map_or(0.0, |p| p.1);
        if (last - 1.0).abs() > 1e-9 {
            return Err(WorkloadError::CdfIncomplete {
                file: file.to_path_buf(),
                last,
            });
        }
        if let Some(last) = points.last_mut() {
            last.1 = 1.0;
        }
        let cdf = EmpiricalCdf { points };
        // Open-loop patterns space arrivals by load / mean size: a mean of 0 B
        // asks for infinitely many flows per second (memory runs out, and
        // `psim workload` never ends).
        let mean = cdf.mean();
        if mean.is_nan() || mean < 1.0 {
            return Err(WorkloadError::CdfMean {
                file: file.to_path_buf(),
                mean,
            });
        }
        Ok(cdf)
    }

    /// The `(size_bytes, cumulative_fraction)` points.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// Continuous variate for a uniform `u` in [0, 1): inverse transform with linear
    /// interpolation. A jump in probability at one size (two points with equal size) is a point
    /// mass; a flat stretch (equal probabilities) is never sampled.
    fn quantile(&self, u: f64) -> f64 {
        let pts = &self.points;
        let i = pts.partition_point(|p| p.1 <= u);
        if i == 0 {
            return pts[0].0;
        }
        if i >= pts.len() {
            return pts[pts.len() - 1].0;
        }
        let (s0, p0) = pts[i - 1];
        let (s1, p1) = pts[i];
        s0 + (u - p0) / (p1 - p0) * (s1 - s0)
    }

    /// `P(X <= x)` of the continuous variate.
    pub fn cdf(&self, x: f64) -> f64 {
        let pts = &self.points;
        // Last point whose size is <= x.
        let i = pts.partition_point(|p| p.0 <= x);
        if i == 0 {
            return 0.0;
        }
        if i >= pts.len() {
            return 1.0;
        }
        let (s0, p0) = pts[i - 1];
        let (s1, p1) = pts[i];
        if s1 == s0 {
            return p0;
        }
        p0 + (x - s0) / (s1 - s0) * (p1 - p0)
    }

    /// Mean of the continuous variate: each segment contributes its probability times its
    /// midpoint, and an initial point mass contributes its size.
    pub fn mean(&self) -> f64 {
        let pts = &self.points;
        let mut m = pts[0].0 * pts[0].1;
        for w in pts.windows(2) {
            m += (w[1].1 - w[0].1) * 0.5 * (w[0].0 + w[1].0);
        }
        m
    }
}

/// Where flow sizes come from.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    /// Every flow has this many bytes.
    Fixed(u64),
    /// Uniform integer in `[min, max]` bytes, both inclusive.
    Uniform {
        /// Smallest size in bytes.
        min: u64,
        /// Largest size in bytes.
        max: u64,
    },
    /// Piecewise-linear empirical CDF.
    Cdf(EmpiricalCdf),
    /// The IRN heavy-tailed mix (thesis §6 item 13): 50% uniform in 32 B..1 KB, 35% log-uniform
    /// in 1 KB..200 KB, 15% log-uniform in 200 KB..3 MB (decimal kilo and mega).
    IrnHeavy,
    /// Another distribution's sizes counted in whole quanta (rounded up), each quantum then
    /// `unit` bytes: `size_quantum_bytes` (unit = quantum: a workload given in whole packets)
    /// or `packet_payload_bytes` (a table counted in 1460-byte packets, drawn as that many
    /// packets of another payload).
    RoundedUp {
        /// The distribution drawn from.
        inner: Box<SizeDist>,
        /// The multiple of `inner`'s sizes, bytes (at least 2).
        quantum: u64,
        /// Bytes per quantum in the sizes drawn (at least 1).
        unit: u64,
        /// The mean of the sizes drawn, bytes (computed once from `inner`'s CDF).
        mean: f64,
    },
}

/// Most multiples of the quantum that [`SizeDist::rounded_up`] sums over to find the mean.
const MAX_QUANTA: u64 = 10_000_000;

/// Bounds of the three IRN mixture components in bytes.
const IRN_PARTS: [(f64, f64, f64); 3] = [
    (0.50, 32.0, 1_000.0),
    (0.35, 1_000.0, 200_000.0),
    (0.15, 200_000.0, 3_000_000.0),
];

impl SizeDist {
    /// The built-in web-search CDF.
    pub fn websearch() -> SizeDist {
        Self::builtin(WEBSEARCH_CDF, "data/websearch.cdf")
    }
    /// The built-in Facebook Hadoop CDF.
    pub fn fb_hadoop() -> SizeDist {
        Self::builtin(FB_HADOOP_CDF, "data/fb_hadoop.cdf")
    }
    /// The built-in Alibaba storage CDF.
    pub fn ali_storage() -> SizeDist {
        Self::builtin(ALI_STORAGE_CDF, "data/ali_storage.cdf")
    }
    /// The built-in Facebook web CDF of NDP's Fig. 23 (a step CDF).
    pub fn fb_web() -> SizeDist {
        Self::builtin(FB_WEB_CDF, "data/fb_web.cdf")
    }
    /// The built-in web-search CDF as pFabric's simulations tabulate it ([PFAB] §5.1).
    pub fn websearch_pfabric() -> SizeDist {
        Self::builtin(WEBSEARCH_PFABRIC_CDF, "data/websearch_pfabric.cdf")
    }
    /// The built-in data-mining CDF (VL2) as pFabric's simulations tabulate it ([PFAB] §5.1).
    pub fn datamining() -> SizeDist {
        Self::builtin(DATAMINING_CDF, "data/datamining.cdf")
    }
    /// The built-in IMC 2010 data center CDF (Benson et al.), eleven sizes in whole packets,
    /// as the UPS experiments draw it ([TH] Ch. 5).
    pub fn imc10() -> SizeDist {
        Self::builtin(IMC10_CDF, "data/imc10.cdf")
    }

    fn builtin(text: &str, name: &str) -> SizeDist {
        match EmpiricalCdf::parse(text, Path::new(name)) {
            Ok(c) => SizeDist::Cdf(c),
            // The embedded tables are checked by a unit test; a broken one would be a build bug.
            Err(e) => unreachable!("built-in CDF {name} is invalid: {e}"),
        }
    }

    /// Reads a CDF file in the project's format.
    pub fn from_cdf_file(path: &Path) -> Result<SizeDist, WorkloadError> {
        let text = std::fs::read_to_string(path).map_err(|source| WorkloadError::Io {
            path: PathBuf::from(path),
            source,
        })?;
        Ok(SizeDist::Cdf(EmpiricalCdf::parse(&text, path)?))
    }

    /// `inner`'s sizes rounded up to a multiple of `quantum` (>= 2) bytes. The mean is
    /// `quantum` x the sum over k >= 0 of P(size > k x quantum), from `inner`'s CDF; a
    /// distribution whose largest size is more than [`MAX_QUANTA`] quanta is refused.
    pub fn rounded_up(inner: SizeDist, quantum: u64) -> Result<SizeDist, String> {
        Self::in_units(inner, quantum, quantum)
    }

    /// A table counted in packets of `table_packet` bytes, drawn as the same number of packets
    /// of `payload` bytes each: a size s becomes ceil(s / `table_packet`) x `payload`.
    pub fn repacketed(
        inner: SizeDist,
        table_packet: u64,
        payload: u64,
    ) -> Result<SizeDist, String> {
        Self::in_units(inner, table_packet, payload)
    }

    /// ceil(size / `quantum`) x `unit`; the mean is `unit` x the sum over k >= 0 of
    /// P(size > k x quantum).
    fn in_units(inner: SizeDist, quantum: u64, unit: u64) -> Result<SizeDist, String> {
        let mut sum = 0.0;
        let mut k = 0u64;
        loop {
            let above = 1.0 - inner.cdf_at(k * quantum);
            if above <= 0.0 {
                break;
            }
            if k >= MAX_QUANTA {
                return Err(format!(
                    "{quantum} bytes is too fine for this distribution: its largest size is \
                     above {MAX_QUANTA} multiples of it"
                ));
            }
            sum += above;
            k += 1;
        }
        Ok(SizeDist::RoundedUp {
            inner: Box::new(inner),
            quantum,
            unit,
            mean: sum * unit as f64,
        })
    }

    /// Draws one size in whole bytes (>= 1).
    pub(crate) fn sample(&self, rng: &mut Stream) -> u64 {
        let x = match self {
            SizeDist::Fixed(n) => return *n,
            SizeDist::RoundedUp {
                inner,
                quantum,
                unit,
                ..
            } => return inner.sample(rng).div_ceil(*quantum) * unit,
            SizeDist::Uniform { min, max } => return min + rng.below(max - min + 1),
            SizeDist::Cdf(c) => c.quantile(rng.unit()),
            SizeDist::IrnHeavy => {
                let u = rng.unit();
                let v = rng.unit();
                let mut acc = 0.0;
                let mut out = IRN_PARTS[2].2;
                for (k, &(w, lo, hi)) in IRN_PARTS.iter().enumerate() {
                    acc += w;
                    if u < acc || k == IRN_PARTS.len() - 1 {
                        out = if k == 0 {
                            lo + v * (hi - lo)
                        } else {
                            lo * (hi / lo).powf(v)
                        };
                        break;
                    }
                }
                out
            }
        };
        (x.ceil() as u64).max(1)
    }

    /// Mean size in bytes of the continuous variate (rounding up adds under one byte).
    pub fn mean_bytes(&self) -> f64 {
        match self {
            SizeDist::Fixed(n) => *n as f64,
            SizeDist::RoundedUp { mean, .. } => *mean,
            SizeDist::Uniform { min, max } => (*min as f64 + *max as f64) / 2.0,
            SizeDist::Cdf(c) => c.mean(),
            SizeDist::IrnHeavy => IRN_PARTS
                .iter()
                .enumerate()
                .map(|(k, &(w, lo, hi))| {
                    w * if k == 0 {
                        (lo + hi) / 2.0
                    } else {
                        (hi - lo) / (hi / lo).ln()
                    }
                })
                .sum(),
        }
    }

    /// `P(size <= x)` for a sampled size, evaluated at a whole number of bytes `x`.
    pub fn cdf_at(&self, x: u64) -> f64 {
        let xf = x as f64;
        match self {
            // ceil(s / quantum) x unit <= x  <=>  s <= floor(x / unit) x quantum.
            SizeDist::RoundedUp {
                inner,
                quantum,
                unit,
                ..
            } => inner.cdf_at(x / unit * quantum),
            SizeDist::Fixed(n) => {
                if x >= *n {
                    1.0
                } else {
                    0.0
                }
            }
            SizeDist::Uniform { min, max } => {
                if x < *min {
                    0.0
                } else if x >= *max {
                    1.0
                } else {
                    (x - min + 1) as f64 / (max - min + 1) as f64
                }
            }
            SizeDist::Cdf(c) => {
                if x == 0 {
                    0.0
                } else {
                    c.cdf(xf)
                }
            }
            SizeDist::IrnHeavy => IRN_PARTS
                .iter()
                .enumerate()
                .map(|(k, &(w, lo, hi))| {
                    let f = if xf <= lo {
                        0.0
                    } else if xf >= hi {
                        1.0
                    } else if k == 0 {
                        (xf - lo) / (hi - lo)
                    } else {
                        (xf / lo).ln() / (hi / lo).ln()
                    };
                    w * f
                })
                .sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_have_plausible_means() {
        let ws = SizeDist::websearch().mean_bytes();
        // Closed form by hand from the published table: 1,711,250 bytes.
        assert!((ws - 1_711_250.0).abs() < 1.0, "{ws}");
        assert!(SizeDist::fb_hadoop().mean_bytes() > 0.0);
        assert!(SizeDist::ali_storage().mean_bytes() > 0.0);
        // Ten equally likely sizes (the data file's header): mean 1,122,250 / 10.
        let fb = SizeDist::fb_web().mean_bytes();
        assert!((fb - 112_225.0).abs() < 1e-6, "{fb}");
        // pFabric's tables, by hand in packets (the data files' headers), x 1460 B:
        // web search 1,140.98 packets, data mining 5,116.6.
        let ws = SizeDist::websearch_pfabric().mean_bytes();
        assert!((ws - 1_140.98 * 1460.0).abs() < 1e-3, "{ws}");
        let dm = SizeDist::datamining().mean_bytes();
        assert!((dm - 5_116.6 * 1460.0).abs() < 1e-3, "{dm}");
        // IMC 2010 as steps: sum of size x mass over its eleven sizes (the file's header).
        let imc = SizeDist::imc10().mean_bytes();
        assert!((imc - 184.475 * 1460.0).abs() < 1e-3, "{imc}");
    }

    /// The IMC 2010 table is drawn as ns-2 draws it: only its eleven sizes
    /// (whole 1460-byte packets, the sizes the UPS analysis scripts bucket),
    /// each with its step's probability.
    #[test]
    fn imc10_samples_only_its_eleven_sizes() {
        let SizeDist::Cdf(c) = SizeDist::imc10() else {
            unreachable!("imc10 is a CDF")
        };
        let steps = [
            (1, 0.5),
            (2, 0.6),
            (3, 0.7),
            (5, 0.75),
            (7, 0.8),
            (40, 0.8125),
            (72, 0.825),
            (137, 0.85),
            (267, 0.9),
            (1187, 0.95),
            (2107, 1.0),
        ];
        let mut below: f64 = 0.0;
        for (packets, cum) in steps {
            let size = packets as f64 * 1460.0;
            for frac in [0.0, 0.5, 0.999] {
                let u = below + frac * (cum - below);
                assert_eq!(c.quantile(u), size, "u = {u}");
            }
            assert!((c.cdf(size) - cum).abs() < 1e-12);
            assert!((c.cdf(size - 1.0) - below).abs() < 1e-12);
            below = cum;
        }
    }

    /// pFabric's tables start with point masses: 15% of web search flows are
    /// exactly 6 packets and half the data mining flows exactly one; the
    /// largest flows are 20,000 and 666,667 packets.
    #[test]
    fn the_pfabric_tables_start_with_point_masses() {
        for (d, first, mass, last) in [
            (SizeDist::websearch_pfabric(), 6 * 1460, 0.15, 20_000 * 1460),
            (SizeDist::datamining(), 1460, 0.5, 666_667 * 1460),
        ] {
            assert_eq!(d.cdf_at(first - 1), 0.0);
            assert!((d.cdf_at(first) - mass).abs() < 1e-12);
            assert!(d.cdf_at(last - 1) < 1.0);
            assert_eq!(d.cdf_at(last), 1.0);
        }
    }

    /// Rounding up to a quantum, by hand: a fixed 1000 B becomes one 1396 B
    /// quantum; uniform 1..=10 with a quantum of 4 gives 4 (for 1-4), 8 (5-8)
    /// and 12 (9-10), mean (4 x 4 + 4 x 8 + 2 x 12) / 10 = 7.2, and
    /// P(size <= 7) = P(drawn <= 4) = 0.4.
    #[test]
    fn rounding_up_to_a_quantum_by_hand() {
        let d = SizeDist::rounded_up(SizeDist::Fixed(1000), 1396).unwrap();
        assert_eq!(d.mean_bytes(), 1396.0);
        assert_eq!((d.cdf_at(1395), d.cdf_at(1396)), (0.0, 1.0));
        let mut rng = crate::rng::stream(7, &[1]);
        assert_eq!(d.sample(&mut rng), 1396);
        let d = SizeDist::rounded_up(SizeDist::Uniform { min: 1, max: 10 }, 4).unwrap();
        assert!((d.mean_bytes() - 7.2).abs() < 1e-12, "{}", d.mean_bytes());
        assert!((d.cdf_at(7) - 0.4).abs() < 1e-12);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..1000 {
            seen.insert(d.sample(&mut rng));
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [4, 8, 12]);
    }

    /// The rounded IRN mix: the sample mean of 200,000 draws is within 5
    /// standard errors of the mean computed from the CDF, and that mean
    /// exceeds the unrounded one by less than one quantum.
    #[test]
    fn the_rounded_mean_matches_the_draws() {
        let q = 1396;
        let d = SizeDist::rounded_up(SizeDist::IrnHeavy, q).unwrap();
        let (plain, m) = (SizeDist::IrnHeavy.mean_bytes(), d.mean_bytes());
        assert!(m > plain && m < plain + q as f64, "{plain} {m}");
        let mut rng = crate::rng::stream(3, &[9]);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| d.sample(&mut rng) as f64).collect();
        assert!(xs.iter().all(|x| x % q as f64 == 0.0));
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let se = (var / n as f64).sqrt();
        assert!((mean - m).abs() < 5.0 * se, "{mean} {m} {se}");
    }

    /// `imc10` in packets of 1396 B: the same eleven packet counts, each size
    /// a whole number of 1396 B packets; mean 184.475 packets (the data file's
    /// header, by hand) x 1396 = 257,527.1 B; half the flows are one packet.
    #[test]
    fn imc10_in_packets_of_another_payload_by_hand() {
        let d = SizeDist::repacketed(SizeDist::imc10(), 1460, 1396).unwrap();
        assert!(
            (d.mean_bytes() - 257_527.1).abs() < 1e-6,
            "{}",
            d.mean_bytes()
        );
        assert_eq!(
            (d.cdf_at(1395), d.cdf_at(1396), d.cdf_at(2791)),
            (0.0, 0.5, 0.5)
        );
        assert!((d.cdf_at(2792) - 0.6).abs() < 1e-12);
        let mut rng = crate::rng::stream(5, &[2]);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..20_000 {
            seen.insert(d.sample(&mut rng));
        }
        assert!(seen.iter().all(|b| b % 1396 == 0), "{seen:?}");
        let packets: Vec<u64> = seen.into_iter().map(|b| b / 1396).collect();
        assert_eq!(packets, [1, 2, 3, 5, 7, 40, 72, 137, 267, 1187, 2107]);
    }

    #[test]
    fn a_quantum_too_fine_for_the_distribution_is_refused() {
        let e = SizeDist::rounded_up(SizeDist::Fixed(1 << 40), 2).unwrap_err();
        assert!(e.contains("too fine"), "{e}");
    }

    /// A step CDF (each size twice: a point mass, then a flat stretch)
    /// samples only its sizes, each with its step's probability, and never
    /// a size in between: the inverse transform at every u of each step
    /// lands on the step's size.
    #[test]
    fn a_step_cdf_samples_only_its_steps() {
        let SizeDist::Cdf(c) = SizeDist::fb_web() else {
            unreachable!("fb_web is a CDF")
        };
        let sizes = [250.0, 500.0, 1e3, 1.5e3, 2e3, 3e3, 4e3, 1e4, 1e5, 1e6];
        for (i, &size) in sizes.iter().enumerate() {
            for frac in [0.0, 0.3, 0.999_999] {
                let u = (i as f64 + frac) / 10.0;
                assert_eq!(c.quantile(u), size, "u = {u}");
            }
            // The CDF is flat between steps and jumps by 10% at each.
            assert!((c.cdf(size) - (i + 1) as f64 / 10.0).abs() < 1e-12);
            assert!((c.cdf(size - 1.0) - i as f64 / 10.0).abs() < 1e-12);
        }
    }

    #[test]
    fn percent_header_and_quantile_interpolate() {
        let c = EmpiricalCdf::parse(
            "# c\nsize_bytes cumulative_percent\n0 0\n100 50\n300 100\n",
            Path::new("t"),
        )
        .unwrap();
        assert_eq!(c.quantile(0.25), 50.0);
        assert_eq!(c.quantile(0.75), 200.0);
        assert_eq!(c.cdf(200.0), 0.75);
        assert_eq!(c.mean(), 0.5 * 50.0 + 0.5 * 200.0);
    }

    #[test]
    fn non_monotone_cdf_is_rejected_with_line() {
        let e = EmpiricalCdf::parse(
            "size_bytes cumulative_fraction\n0 0\n100 0.6\n200 0.5\n300 1\n",
            Path::new("bad.cdf"),
        )
        .unwrap_err();
        assert!(
            matches!(e, WorkloadError::CdfNotMonotone { line: 4, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("bad.cdf:4"), "{e}");
        let e = EmpiricalCdf::parse(
            "size_bytes cumulative_fraction\n0 0\n100 0.6\n50 0.7\n300 1\n",
            Path::new("bad.cdf"),
        )
        .unwrap_err();
        assert!(
            matches!(e, WorkloadError::CdfNotMonotone { line: 4, .. }),
            "{e}"
        );
    }

    #[test]
    fn incomplete_or_headerless_cdf_is_rejected() {
        let e = EmpiricalCdf::parse(
            "size_bytes cumulative_fraction\n0 0\n100 0.9\n",
            Path::new("x"),
        )
        .unwrap_err();
        assert!(matches!(e, WorkloadError::CdfIncomplete { .. }), "{e}");
        let e = EmpiricalCdf::parse("0 0\n100 1\n", Path::new("x")).unwrap_err();
        assert!(matches!(e, WorkloadError::CdfParse { line: 1, .. }), "{e}");
    }

    #[test]
    fn a_cdf_with_all_its_mass_at_zero_is_rejected() {
        for text in ["0 0\n0 1\n", "0 0.5\n0 0.999\n1 1\n"] {
            let text = format!("size_bytes cumulative_fraction\n{text}");
            let e = EmpiricalCdf::parse(&text, Path::new("zero.cdf")).unwrap_err();
            assert!(matches!(e, WorkloadError::CdfMean { .. }), "{e}");
            assert!(e.to_string().starts_with("zero.cdf:"), "{e}");
        }
        assert!(
            EmpiricalCdf::parse("size_bytes cumulative_fraction\n0 0\n2 1\n", Path::new("x"))
                .is_ok()
        );
    }
}
