//! Statistics for reports: means with bootstrap confidence intervals, rates.

use mosaic_core::rng;
use rand::Rng as _;
use serde::Serialize;
use std::collections::BTreeMap;

/// Seed of the bootstrap RNG: fixed, so the same records always give the same interval.
pub const BOOTSTRAP_SEED: u64 = 0x6d6f_7361_6963; // "mosaic"
/// Bootstrap resamples per interval.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;
/// Confidence level of the intervals.
pub const CONFIDENCE: f64 = 0.95;

/// A mean with its 95% bootstrap confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MeanCi {
    /// Sample mean.
    pub mean: f64,
    /// Lower bound of the interval.
    pub low: f64,
    /// Upper bound of the interval.
    pub high: f64,
    /// Number of values.
    pub n: usize,
}

/// The mean of `values` (each tagged with the seed of its episode) with a 95% percentile
/// bootstrap interval, stratified over seeds.
///
/// Each resample draws, within every stratum, as many values as it holds, with
/// replacement, so every seed keeps its weight. A stratum is a seed with two or more
/// values; seeds with a single value are pooled into one stratum (a single value has no
/// spread to resample). With one episode per seed this is the plain bootstrap; with a
/// fixed seed, too. The RNG is seeded with [`BOOTSTRAP_SEED`]: same values, same interval.
/// `None` for no values.
///
/// ```
/// use mosaic_recorder::stats::bootstrap_mean;
/// let values: Vec<(u64, f64)> = (0..50).map(|i| (i, (i % 5) as f64)).collect();
/// let ci = bootstrap_mean(&values).unwrap();
/// assert_eq!(ci.mean, 2.0);
/// assert!(ci.low < 2.0 && 2.0 < ci.high);
/// assert_eq!(bootstrap_mean(&values), Some(ci));
/// ```
pub fn bootstrap_mean(values: &[(u64, f64)]) -> Option<MeanCi> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().map(|(_, v)| v).sum::<f64>() / n as f64;
    let mut by_seed: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for (seed, value) in values {
        by_seed.entry(*seed).or_default().push(*value);
    }
    let mut strata: Vec<Vec<f64>> = Vec::new();
    let mut singles = Vec::new();
    for (_, stratum) in by_seed {
        if stratum.len() > 1 {
            strata.push(stratum);
        } else {
            singles.extend(stratum);
        }
    }
    if !singles.is_empty() {
        strata.push(singles);
    }
    let mut random = rng::seeded(BOOTSTRAP_SEED);
    let mut means: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            let total: f64 = strata
                .iter()
                .map(|stratum| {
                    (0..stratum.len())
                        .map(|_| stratum[random.random_range(0..stratum.len())])
                        .sum::<f64>()
                })
                .sum();
            total / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    Some(MeanCi {
        mean,
        low: quantile(&means, tail),
        high: quantile(&means, 1.0 - tail),
        n,
    })
}

/// The `q` quantile of sorted `values`, interpolating linearly between neighbours.
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let weight = position - below as f64;
    sorted[below] * (1.0 - weight) + sorted[above] * weight
}

/// Win, draw and loss rates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Outcomes {
    /// Episodes won.
    pub wins: u32,
    /// Episodes drawn.
    pub draws: u32,
    /// Episodes lost.
    pub losses: u32,
}

impl Outcomes {
    /// Episodes with an outcome.
    pub fn total(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    /// (win, draw, loss) rates, `None` when no episode had an outcome.
    pub fn rates(&self) -> Option<(f64, f64, f64)> {
        let total = f64::from(self.total());
        (total > 0.0).then(|| {
            (
                f64::from(self.wins) / total,
                f64::from(self.draws) / total,
                f64::from(self.losses) / total,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_narrows_with_more_data_and_covers_the_mean() {
        let values = |n: u64| -> Vec<(u64, f64)> {
            let mut random = rng::seeded(n);
            (0..n)
                .map(|i| (i, random.random_range(0.0..10.0)))
                .collect()
        };
        let small = bootstrap_mean(&values(20)).unwrap();
        let large = bootstrap_mean(&values(2000)).unwrap();
        assert!(small.high - small.low > 2.0 * (large.high - large.low));
        for ci in [small, large] {
            assert!(ci.low <= ci.mean && ci.mean <= ci.high, "{ci:?}");
        }
        assert!((large.mean - 5.0).abs() < 0.3, "{large:?}");
    }

    #[test]
    fn stratification_keeps_each_seed_weight() {
        // Two seeds, one easy (10) and one hard (0), ten episodes each with little spread
        // inside a seed: stratified resamples always hold ten of each, so the interval is
        // tight around 5; an unstratified bootstrap would swing with the seed mix.
        let values: Vec<(u64, f64)> = (0..20)
            .map(|i| {
                let seed = i % 2;
                (
                    seed,
                    if seed == 0 { 10.0 } else { 0.0 } + (i % 3) as f64 * 0.1,
                )
            })
            .collect();
        let ci = bootstrap_mean(&values).unwrap();
        assert!(ci.high - ci.low < 0.2, "{ci:?}");
        assert!((ci.mean - 5.1).abs() < 0.1, "{ci:?}");
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(bootstrap_mean(&[]), None);
        let one = bootstrap_mean(&[(3, 2.5)]).unwrap();
        assert_eq!((one.mean, one.low, one.high, one.n), (2.5, 2.5, 2.5, 1));
        let same = bootstrap_mean(&[(1, 4.0), (1, 4.0), (2, 4.0)]).unwrap();
        assert_eq!((same.low, same.high), (4.0, 4.0));
    }

    #[test]
    fn outcome_rates() {
        let o = Outcomes {
            wins: 2,
            draws: 1,
            losses: 1,
        };
        assert_eq!(o.rates(), Some((0.5, 0.25, 0.25)));
        assert_eq!(Outcomes::default().rates(), None);
    }
}
