//! Aggregate performance across tasks and runs, as rliable defines it (Agarwal et al.,
//! "Deep RL at the Edge of the Statistical Precipice", 2021), with stratified bootstrap
//! intervals.
//!
//! Scores are a [`ScoreMatrix`]: `runs × tasks` (rliable's `num_runs × num_tasks`), e.g.
//! one row per seed and one column per environment, normalised when tasks differ in
//! scale. The aggregates, defined as in rliable's `metrics.py` and `library.py`:
//!
//! - **mean**: the mean over tasks of each task's mean score;
//! - **median**: the median over tasks of each task's mean score;
//! - **IQM**: the interquartile mean, the 25% trimmed mean of all scores pooled (runs and
//!   tasks together): sorted, ⌊n/4⌋ dropped at each end;
//! - **optimality gap** at γ: γ minus the mean of all scores clipped at γ;
//! - **score distribution** (performance profile) at τ: the share of all scores above τ;
//! - **probability of improvement** of X over Y: per task, P(X > Y) over all pairs of
//!   runs (ties count a half; identical columns give 0.5), averaged over tasks.
//!
//! Intervals: the stratified bootstrap of rliable: each resample draws, for every
//! (run, task) cell, a run of that task uniformly with replacement, so every task keeps
//! its runs' count; the 95% interval is the percentile interval of the statistic over
//! resamples. Probability of improvement resamples X and Y independently. The RNG is
//! seeded ([`BOOTSTRAP_SEED`]): same scores, same intervals. [`interval_with`] takes the
//! resampling indices instead, which is how the tests feed rliable's own resamples.

use crate::stats::{BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE, quantile};
use mosaic_core::rng;
use serde::Serialize;

/// Why scores cannot be aggregated.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AggregateError {
    /// A matrix without runs or tasks.
    #[error("no scores: a score matrix needs at least one run and one task")]
    Empty,
    /// Rows of different lengths, or a value count that is not runs × tasks.
    #[error("scores are not a runs × tasks matrix: expected {expected} values, got {got}")]
    Shape {
        /// runs × tasks.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// Two matrices to compare have different tasks.
    #[error("the score matrices have {x} and {y} tasks")]
    TaskMismatch {
        /// Tasks of X.
        x: usize,
        /// Tasks of Y.
        y: usize,
    },
}

/// Scores of `runs` runs on each of `tasks` tasks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScoreMatrix {
    runs: usize,
    tasks: usize,
    /// Run-major: the score of run `n` on task `m` is at `n * tasks + m`.
    scores: Vec<f64>,
}

impl ScoreMatrix {
    /// The matrix with rows `rows` (one per run, one score per task in each).
    ///
    /// ```
    /// use mosaic_recorder::aggregate::ScoreMatrix;
    /// let m = ScoreMatrix::from_rows(&[vec![1.0, 2.0], vec![3.0, 4.0]]).unwrap();
    /// assert_eq!((m.runs(), m.tasks(), m.get(1, 0)), (2, 2, 3.0));
    /// assert!(ScoreMatrix::from_rows(&[vec![1.0], vec![]]).is_err());
    /// ```
    pub fn from_rows(rows: &[Vec<f64>]) -> Result<ScoreMatrix, AggregateError> {
        let tasks = rows.first().map_or(0, Vec::len);
        ScoreMatrix::new(rows.len(), tasks, rows.concat())
    }

    /// The matrix of `runs × tasks` scores, run-major.
    pub fn new(runs: usize, tasks: usize, scores: Vec<f64>) -> Result<ScoreMatrix, AggregateError> {
        if runs == 0 || tasks == 0 {
            return Err(AggregateError::Empty);
        }
        if scores.len() != runs * tasks {
            return Err(AggregateError::Shape {
                expected: runs * tasks,
                got: scores.len(),
            });
        }
        Ok(ScoreMatrix {
            runs,
            tasks,
            scores,
        })
    }

    /// Runs (rows).
    pub fn runs(&self) -> usize {
        self.runs
    }

    /// Tasks (columns).
    pub fn tasks(&self) -> usize {
        self.tasks
    }

    /// The score of `run` on `task`.
    pub fn get(&self, run: usize, task: usize) -> f64 {
        self.scores[run * self.tasks + task]
    }

    /// All scores, run-major.
    pub fn scores(&self) -> &[f64] {
        &self.scores
    }

    fn column(&self, task: usize) -> impl Iterator<Item = f64> + '_ {
        (0..self.runs).map(move |n| self.get(n, task))
    }

    /// The stratified resample whose cell (n, m) is run `indices[n * tasks + m]` of task m.
    fn resample(&self, indices: &[usize]) -> ScoreMatrix {
        let scores = indices
            .iter()
            .enumerate()
            .map(|(cell, run)| self.get(*run, cell % self.tasks))
            .collect();
        ScoreMatrix { scores, ..*self }
    }

    /// Random stratified resampling indices (a run per cell, within its task).
    fn random_indices(&self, random: &mut impl rand::Rng) -> Vec<usize> {
        let mut indices = Vec::with_capacity(self.scores.len());
        self.fill_random_indices(random, &mut indices);
        indices
    }

    /// [`ScoreMatrix::random_indices`] into `indices`.
    fn fill_random_indices(&self, random: &mut impl rand::Rng, indices: &mut Vec<usize>) {
        indices.clear();
        indices.extend((0..self.scores.len()).map(|_| random.random_range(0..self.runs)));
    }
}

/// An aggregate of a score matrix.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "metric")]
pub enum Metric {
    /// Mean over tasks of the task means.
    Mean,
    /// Median over tasks of the task means.
    Median,
    /// Interquartile mean of all scores.
    Iqm,
    /// γ minus the mean of the scores clipped at γ.
    OptimalityGap {
        /// The threshold γ (1 for human-normalised scores).
        gamma: f64,
    },
}

impl Metric {
    /// The metric of `scores`.
    ///
    /// ```
    /// use mosaic_recorder::aggregate::{Metric, ScoreMatrix};
    /// let m = ScoreMatrix::from_rows(&[vec![0.0], vec![1.0], vec![2.0], vec![100.0]]).unwrap();
    /// assert_eq!(Metric::Mean.of(&m), 25.75);
    /// assert_eq!(Metric::Iqm.of(&m), 1.5);
    /// assert_eq!(Metric::OptimalityGap { gamma: 1.0 }.of(&m), 0.25);
    /// ```
    pub fn of(&self, scores: &ScoreMatrix) -> f64 {
        self.of_cells(scores)
    }

    fn of_cells(&self, scores: &dyn Cells) -> f64 {
        match self {
            Metric::Mean => mean(&task_means(scores)),
            Metric::Median => {
                let mut means = task_means(scores);
                means.sort_by(f64::total_cmp);
                let n = means.len();
                if n % 2 == 1 {
                    means[n / 2]
                } else {
                    (means[n / 2 - 1] + means[n / 2]) / 2.0
                }
            }
            Metric::Iqm => {
                let all = scores.sorted();
                let cut = all.len() / 4;
                mean(&all[cut..all.len() - cut])
            }
            Metric::OptimalityGap { gamma } => {
                let clipped: Vec<f64> = scores.values().iter().map(|s| s.min(*gamma)).collect();
                gamma - mean(&clipped)
            }
        }
    }
}

/// A score matrix as the statistics read it: a matrix, or a resample of one.
trait Cells {
    fn runs(&self) -> usize;
    fn tasks(&self) -> usize;
    /// All scores, run-major.
    fn values(&self) -> &[f64];
    /// All scores, sorted by `f64::total_cmp`.
    fn sorted(&self) -> Vec<f64>;
    /// The scores of `task`, sorted by `f64::total_cmp`.
    fn sorted_column(&self, task: usize) -> Vec<f64>;
}

impl Cells for ScoreMatrix {
    fn runs(&self) -> usize {
        self.runs
    }

    fn tasks(&self) -> usize {
        self.tasks
    }

    fn values(&self) -> &[f64] {
        &self.scores
    }

    fn sorted(&self) -> Vec<f64> {
        let mut all = self.scores.clone();
        all.sort_by(f64::total_cmp);
        all
    }

    fn sorted_column(&self, task: usize) -> Vec<f64> {
        let mut column: Vec<f64> = self.column(task).collect();
        column.sort_by(f64::total_cmp);
        column
    }
}

/// A stratified resample of a matrix: cell (n, m) is run `indices[n * tasks + m]` of task
/// m. Its sorted scores come from counting how often each cell of the matrix is drawn and
/// walking the matrix's cells in sorted order, instead of sorting: the same sequence, as
/// values equal under `total_cmp` have the same bits.
struct Resample<'a> {
    scores: &'a ScoreMatrix,
    /// The matrix's cells (run-major indices) sorted by score.
    order: &'a [usize],
    /// The resample's scores, run-major.
    values: Vec<f64>,
    /// Draws of each cell of the matrix.
    counts: Vec<u32>,
}

impl<'a> Resample<'a> {
    fn new(scores: &'a ScoreMatrix, order: &'a [usize], indices: &[usize]) -> Self {
        let tasks = scores.tasks;
        let mut counts = vec![0u32; scores.scores.len()];
        let values = indices
            .iter()
            .enumerate()
            .map(|(cell, run)| {
                let drawn = run * tasks + cell % tasks;
                counts[drawn] += 1;
                scores.scores[drawn]
            })
            .collect();
        Resample {
            scores,
            order,
            values,
            counts,
        }
    }

    /// The scores of the cells `order` lists that pass `keep`, each as often as drawn.
    fn expand(&self, keep: impl Fn(usize) -> bool) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.values.len());
        for &cell in self.order.iter().filter(|cell| keep(**cell)) {
            let score = self.scores.scores[cell];
            out.extend(std::iter::repeat_n(score, self.counts[cell] as usize));
        }
        out
    }
}

impl Cells for Resample<'_> {
    fn runs(&self) -> usize {
        self.scores.runs
    }

    fn tasks(&self) -> usize {
        self.scores.tasks
    }

    fn values(&self) -> &[f64] {
        &self.values
    }

    fn sorted(&self) -> Vec<f64> {
        self.expand(|_| true)
    }

    fn sorted_column(&self, task: usize) -> Vec<f64> {
        let tasks = self.scores.tasks;
        self.expand(|cell| cell % tasks == task)
    }
}

/// The cells of `scores` (run-major indices) sorted by score.
fn sorted_cells(scores: &ScoreMatrix) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.scores.len()).collect();
    order.sort_by(|a, b| scores.scores[*a].total_cmp(&scores.scores[*b]));
    order
}

/// The mean score of each task.
fn task_means(scores: &dyn Cells) -> Vec<f64> {
    let runs = scores.runs();
    (0..scores.tasks())
        .map(|m| column_of(scores, m).sum::<f64>() / runs as f64)
        .collect()
}

/// The scores of `task`, in run order.
fn column_of(scores: &dyn Cells, task: usize) -> impl Iterator<Item = f64> + '_ {
    let tasks = scores.tasks();
    scores.values().iter().skip(task).step_by(tasks).copied()
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The share of all scores above `tau` (a point of the performance profile).
pub fn score_distribution(scores: &ScoreMatrix, tau: f64) -> f64 {
    distribution_of(scores, tau)
}

fn distribution_of(scores: &dyn Cells, tau: f64) -> f64 {
    let values = scores.values();
    values.iter().filter(|s| **s > tau).count() as f64 / values.len() as f64
}

/// The probability that a run of X scores higher than a run of Y on a task, averaged over
/// tasks (ties count a half).
///
/// ```
/// use mosaic_recorder::aggregate::{ScoreMatrix, probability_of_improvement};
/// let x = ScoreMatrix::from_rows(&[vec![2.0], vec![3.0]]).unwrap();
/// let y = ScoreMatrix::from_rows(&[vec![1.0], vec![3.0], vec![0.0]]).unwrap();
/// // Pairs: (2,1) (2,3) (2,0) (3,1) (3,3) (3,0): 4 wins, 1 tie of 6.
/// assert_eq!(probability_of_improvement(&x, &y).unwrap(), 4.5 / 6.0);
/// ```
pub fn probability_of_improvement(x: &ScoreMatrix, y: &ScoreMatrix) -> Result<f64, AggregateError> {
    improvement_of(x, y)
}

fn improvement_of(x: &dyn Cells, y: &dyn Cells) -> Result<f64, AggregateError> {
    if x.tasks() != y.tasks() {
        return Err(AggregateError::TaskMismatch {
            x: x.tasks(),
            y: y.tasks(),
        });
    }
    let per_task: Vec<f64> = (0..x.tasks())
        .map(|m| {
            if column_of(x, m).eq(column_of(y, m)) {
                return 0.5;
            }
            // Pairs won plus half the tied ones, counted against Y sorted: each X run
            // finds its place by binary search, O((n_x + n_y) log n_y) instead of all pairs.
            let ys = y.sorted_column(m);
            let wins: f64 = column_of(x, m)
                .map(|a| {
                    let below = ys.partition_point(|b| *b < a);
                    let up_to = ys.partition_point(|b| *b <= a);
                    below as f64 + 0.5 * (up_to - below) as f64
                })
                .sum();
            wins / (x.runs() * y.runs()) as f64
        })
        .collect();
    Ok(mean(&per_task))
}

/// A point estimate with its 95% stratified bootstrap interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// On the scores as they are.
    pub point: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

/// The statistics `statistic` (a vector of them, e.g. a profile) of `scores`, each with
/// its percentile interval over the resamples that `indices` gives (each a run index per
/// cell, run-major, as rliable's stratified bootstrap draws them).
pub fn interval_with(
    scores: &ScoreMatrix,
    statistic: impl Fn(&ScoreMatrix) -> Vec<f64>,
    indices: impl IntoIterator<Item = Vec<usize>>,
) -> Vec<Estimate> {
    let point = statistic(scores);
    let resampled: Vec<Vec<f64>> = indices
        .into_iter()
        .map(|cells| statistic(&scores.resample(&cells)))
        .collect();
    percentile_intervals(point, &resampled)
}

/// [`interval_with`] over [`BOOTSTRAP_RESAMPLES`] seeded random resamples.
pub fn interval(
    scores: &ScoreMatrix,
    statistic: impl Fn(&ScoreMatrix) -> Vec<f64>,
) -> Vec<Estimate> {
    let mut random = rng::seeded(BOOTSTRAP_SEED);
    let indices: Vec<Vec<usize>> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| scores.random_indices(&mut random))
        .collect();
    interval_with(scores, statistic, indices)
}

/// [`interval`] of a statistic of the report's (any of [`Cells`]): the same estimates,
/// from resamples that are not copied and sort by counting.
fn counted_interval(
    scores: &ScoreMatrix,
    statistic: impl Fn(&dyn Cells) -> Vec<f64>,
) -> Vec<Estimate> {
    let order = sorted_cells(scores);
    let mut random = rng::seeded(BOOTSTRAP_SEED);
    let mut indices = Vec::with_capacity(scores.scores.len());
    let resampled: Vec<Vec<f64>> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            scores.fill_random_indices(&mut random, &mut indices);
            statistic(&Resample::new(scores, &order, &indices))
        })
        .collect();
    percentile_intervals(statistic(scores), &resampled)
}

/// Each statistic of `point` with the percentile interval of its resampled values.
fn percentile_intervals(point: Vec<f64>, resampled: &[Vec<f64>]) -> Vec<Estimate> {
    let tail = (1.0 - CONFIDENCE) / 2.0;
    point
        .into_iter()
        .enumerate()
        .map(|(i, point)| {
            let mut values: Vec<f64> = resampled.iter().map(|r| r[i]).collect();
            values.sort_by(f64::total_cmp);
            match values.is_empty() {
                true => Estimate {
                    point,
                    low: point,
                    high: point,
                },
                false => Estimate {
                    point,
                    low: quantile(&values, tail),
                    high: quantile(&values, 1.0 - tail),
                },
            }
        })
        .collect()
}

/// The probability of improvement of X over Y with its interval, X and Y resampled
/// independently (stratified within tasks), over the resamples `indices` gives: pairs of
/// (X indices, Y indices).
pub fn improvement_interval_with(
    x: &ScoreMatrix,
    y: &ScoreMatrix,
    indices: impl IntoIterator<Item = (Vec<usize>, Vec<usize>)>,
) -> Result<Estimate, AggregateError> {
    let point = probability_of_improvement(x, y)?;
    let resampled = indices
        .into_iter()
        .map(|(ix, iy)| {
            probability_of_improvement(&x.resample(&ix), &y.resample(&iy)).map(|p| vec![p])
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(percentile_intervals(vec![point], &resampled)[0])
}

/// [`improvement_interval_with`] over [`BOOTSTRAP_RESAMPLES`] seeded random resamples.
pub fn improvement_interval(x: &ScoreMatrix, y: &ScoreMatrix) -> Result<Estimate, AggregateError> {
    let point = probability_of_improvement(x, y)?;
    let (x_order, y_order) = (sorted_cells(x), sorted_cells(y));
    let mut random = rng::seeded(BOOTSTRAP_SEED);
    let (mut ix, mut iy) = (Vec::new(), Vec::new());
    let resampled = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            x.fill_random_indices(&mut random, &mut ix);
            y.fill_random_indices(&mut random, &mut iy);
            improvement_of(
                &Resample::new(x, &x_order, &ix),
                &Resample::new(y, &y_order, &iy),
            )
            .map(|p| vec![p])
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(percentile_intervals(vec![point], &resampled)[0])
}

/// The aggregates of one algorithm's scores.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Aggregates {
    /// Runs per task.
    pub runs: usize,
    /// Tasks.
    pub tasks: usize,
    /// Interquartile mean.
    pub iqm: Estimate,
    /// Mean of task means.
    pub mean: Estimate,
    /// Median of task means.
    pub median: Estimate,
    /// Optimality gap at γ, when a γ was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optimality_gap: Option<(f64, Estimate)>,
}

/// IQM, mean, median (and the optimality gap at `gamma`) of `scores`, with intervals from
/// one set of resamples.
pub fn aggregates(scores: &ScoreMatrix, gamma: Option<f64>) -> Aggregates {
    let mut metrics = vec![Metric::Iqm, Metric::Mean, Metric::Median];
    metrics.extend(gamma.map(|gamma| Metric::OptimalityGap { gamma }));
    let estimates = counted_interval(scores, |s| metrics.iter().map(|m| m.of_cells(s)).collect());
    Aggregates {
        runs: scores.runs,
        tasks: scores.tasks,
        iqm: estimates[0],
        mean: estimates[1],
        median: estimates[2],
        optimality_gap: gamma.map(|gamma| (gamma, estimates[3])),
    }
}

/// A performance profile: the score distribution at each threshold, with intervals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Profile {
    /// Thresholds τ.
    pub taus: Vec<f64>,
    /// Share of scores above each τ.
    pub fractions: Vec<Estimate>,
}

/// The performance profile (score distribution) of `scores` at `taus`.
pub fn performance_profile(scores: &ScoreMatrix, taus: &[f64]) -> Profile {
    Profile {
        taus: taus.to_vec(),
        fractions: counted_interval(scores, |s| {
            taus.iter().map(|tau| distribution_of(s, *tau)).collect()
        }),
    }
}

/// `count` evenly spaced thresholds from `low` to `high` (`low` alone when they meet).
pub fn thresholds(low: f64, high: f64, count: usize) -> Vec<f64> {
    if count < 2 || high <= low {
        return vec![low];
    }
    (0..count)
        .map(|i| low + (high - low) * i as f64 / (count - 1) as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng as _;

    fn matrix(runs: usize, tasks: usize, seed: u64) -> ScoreMatrix {
        let mut random = rng::seeded(seed);
        let scores = (0..runs * tasks)
            .map(|i| (i % tasks) as f64 + random.random_range(0.0..1.0))
            .collect();
        ScoreMatrix::new(runs, tasks, scores).unwrap()
    }

    /// Estimates as bits: equal, signs of zero and NaNs included.
    fn bits(estimates: &[Estimate]) -> Vec<[u64; 3]> {
        estimates
            .iter()
            .map(|e| [e.point.to_bits(), e.low.to_bits(), e.high.to_bits()])
            .collect()
    }

    #[test]
    fn counted_resamples_give_the_copied_resamples_estimates() {
        let mut random = rng::seeded(7);
        // Ties, signed zeros, a NaN, several tasks.
        let mut matrices = vec![matrix(50, 1, 1), matrix(9, 3, 2), matrix(1, 2, 3)];
        let ties: Vec<f64> = (0..40)
            .map(|i| match i % 4 {
                0 => -0.0,
                1 => 0.0,
                2 => f64::from(random.random_range(0..3u8)),
                _ => random.random_range(-1.0..1.0),
            })
            .collect();
        matrices.push(ScoreMatrix::new(20, 2, ties.clone()).unwrap());
        let mut with_nan = ties;
        with_nan[5] = f64::NAN;
        matrices.push(ScoreMatrix::new(40, 1, with_nan).unwrap());
        let metrics = [
            Metric::Iqm,
            Metric::Mean,
            Metric::Median,
            Metric::OptimalityGap { gamma: 0.5 },
        ];
        for m in &matrices {
            let copied = interval(m, |s| metrics.iter().map(|metric| metric.of(s)).collect());
            let counted = counted_interval(m, |s| {
                metrics.iter().map(|metric| metric.of_cells(s)).collect()
            });
            assert_eq!(bits(&copied), bits(&counted), "{m:?}");
            let taus = thresholds(-1.0, 2.0, 7);
            let copied = interval(m, |s| {
                taus.iter().map(|tau| score_distribution(s, *tau)).collect()
            });
            assert_eq!(
                bits(&copied),
                bits(&performance_profile(m, &taus).fractions)
            );
            for other in matrices.iter().filter(|o| o.tasks == m.tasks) {
                let mut random = rng::seeded(BOOTSTRAP_SEED);
                let pairs: Vec<(Vec<usize>, Vec<usize>)> = (0..BOOTSTRAP_RESAMPLES)
                    .map(|_| {
                        (
                            m.random_indices(&mut random),
                            other.random_indices(&mut random),
                        )
                    })
                    .collect();
                assert_eq!(
                    bits(&[improvement_interval_with(m, other, pairs).unwrap()]),
                    bits(&[improvement_interval(m, other).unwrap()]),
                    "{m:?} {other:?}"
                );
            }
        }
    }

    #[test]
    fn iqm_trims_a_quarter_at_each_end_of_the_pooled_scores() {
        // 10 scores: ⌊10/4⌋ = 2 trimmed at each end, as scipy's trim_mean.
        let m = ScoreMatrix::new(5, 2, (0..10).map(f64::from).collect()).unwrap();
        assert_eq!(
            Metric::Iqm.of(&m),
            (2.0 + 3.0 + 4.0 + 5.0 + 6.0 + 7.0) / 6.0
        );
        assert_eq!(Metric::Median.of(&m), 4.5);
    }

    #[test]
    fn stratified_resamples_keep_each_task_apart() {
        // Task m's scores are all in [m, m + 1): a resample must keep that.
        let m = matrix(6, 3, 1);
        let mut random = rng::seeded(2);
        for _ in 0..50 {
            let r = m.resample(&m.random_indices(&mut random));
            for n in 0..6 {
                for t in 0..3 {
                    assert_eq!(r.get(n, t).floor(), t as f64);
                }
            }
        }
        // The mean's interval: every resample has one score per cell of each task, so
        // the interval of the mean is narrow next to the spread between tasks (0..3).
        let a = aggregates(&m, Some(1.0));
        assert!(
            a.mean.low <= a.mean.point && a.mean.point <= a.mean.high,
            "{a:?}"
        );
        assert!(a.mean.high - a.mean.low < 0.6, "{a:?}");
        let (gamma, gap) = a.optimality_gap.unwrap();
        assert_eq!(gamma, 1.0);
        assert!(gap.point > 0.0 && gap.point < 0.5, "{a:?}");
    }

    #[test]
    fn profiles_fall_and_improvement_is_symmetric() {
        let (x, y) = (matrix(8, 2, 3), matrix(8, 2, 4));
        let profile = performance_profile(&x, &thresholds(0.0, 2.0, 5));
        let points: Vec<f64> = profile.fractions.iter().map(|e| e.point).collect();
        assert_eq!(points.first(), Some(&1.0));
        assert_eq!(points.last(), Some(&0.0));
        assert!(points.windows(2).all(|w| w[0] >= w[1]), "{points:?}");
        let (xy, yx) = (
            probability_of_improvement(&x, &y).unwrap(),
            probability_of_improvement(&y, &x).unwrap(),
        );
        assert!((xy + yx - 1.0).abs() < 1e-12);
        assert_eq!(probability_of_improvement(&x, &x).unwrap(), 0.5);
        let ci = improvement_interval(&x, &y).unwrap();
        assert!(ci.low <= ci.point && ci.point <= ci.high, "{ci:?}");
        assert_eq!(
            probability_of_improvement(&x, &matrix(8, 3, 1)),
            Err(AggregateError::TaskMismatch { x: 2, y: 3 })
        );
    }
}
