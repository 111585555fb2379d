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
    // Values without spread resample to themselves: the interval is the mean, at no cost
    // (reports bootstrap every metric, and many are constant, such as a run's α).
    if values
        .iter()
        .all(|(_, v)| v.to_bits() == values[0].1.to_bits())
    {
        return Some(MeanCi {
            mean,
            low: mean,
            high: mean,
            n,
        });
    }
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
    let mut means = resampled_means(&strata, n);
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    Some(MeanCi {
        mean,
        low: quantile(&means, tail),
        high: quantile(&means, 1.0 - tail),
        n,
    })
}

/// Resamples computed side by side: their sums are independent chains of additions, which
/// the processor overlaps, where one sum waits on each addition before the next.
pub(crate) const LANES: usize = 4;

/// What summing no values gives (the start of `Iterator::sum`): sums computed by hand start
/// there too, so they equal the iterator sums of the same values in the same order.
pub(crate) fn empty_sum() -> f64 {
    std::iter::empty::<f64>().sum()
}

/// The means of [`BOOTSTRAP_RESAMPLES`] stratified resamples of `strata` (`n` values in
/// all), drawn in order from one RNG seeded with [`BOOTSTRAP_SEED`]: per resample, per
/// stratum, as many draws as it holds. Each resample's sum adds its draws in draw order,
/// stratum by stratum, as a sum over them one after the other would; [`LANES`] resamples
/// are summed side by side.
fn resampled_means(strata: &[Vec<f64>], n: usize) -> Vec<f64> {
    let mut random = rng::seeded(BOOTSTRAP_SEED);
    let mut means = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    let mut draws = vec![0.0; LANES * n];
    for first in (0..BOOTSTRAP_RESAMPLES).step_by(LANES) {
        let lanes = LANES.min(BOOTSTRAP_RESAMPLES - first);
        for lane in draws.chunks_exact_mut(n).take(lanes) {
            let mut at = 0;
            for stratum in strata {
                for draw in &mut lane[at..at + stratum.len()] {
                    *draw = stratum[random.random_range(0..stratum.len())];
                }
                at += stratum.len();
            }
        }
        let mut totals = [empty_sum(); LANES];
        let mut at = 0;
        for stratum in strata {
            let mut sums = [empty_sum(); LANES];
            for i in at..at + stratum.len() {
                for (lane, sum) in sums.iter_mut().enumerate() {
                    *sum += draws[lane * n + i];
                }
            }
            for (total, sum) in totals.iter_mut().zip(sums) {
                *total += sum;
            }
            at += stratum.len();
        }
        means.extend(totals[..lanes].iter().map(|total| total / n as f64));
    }
    means
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

    /// The means as the bootstrap first computed them: one resample after the other, each
    /// summed by the iterator.
    fn resampled_means_one_by_one(strata: &[Vec<f64>], n: usize) -> Vec<f64> {
        let mut random = rng::seeded(BOOTSTRAP_SEED);
        (0..BOOTSTRAP_RESAMPLES)
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
            .collect()
    }

    #[test]
    fn side_by_side_resamples_are_the_one_by_one_resamples() {
        let mut random = rng::seeded(9);
        for sizes in [vec![1], vec![3], vec![7, 1, 5], vec![2; 40], vec![250, 13]] {
            let strata: Vec<Vec<f64>> = sizes
                .iter()
                .map(|size| {
                    (0..*size)
                        .map(|i| match i % 4 {
                            0 => -0.0,
                            1 => random.random_range(-1e6..1e6),
                            _ => random.random_range(0.0..1.0),
                        })
                        .collect()
                })
                .collect();
            let n = sizes.iter().sum();
            let fast = resampled_means(&strata, n);
            let slow = resampled_means_one_by_one(&strata, n);
            assert_eq!(fast.len(), slow.len());
            // Bit for bit, signs of zero included.
            assert!(
                fast.iter()
                    .zip(&slow)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{sizes:?}"
            );
        }
        let zeros = vec![vec![-0.0; 3]];
        assert_eq!(
            resampled_means(&zeros, 3)[0].to_bits(),
            resampled_means_one_by_one(&zeros, 3)[0].to_bits()
        );
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
