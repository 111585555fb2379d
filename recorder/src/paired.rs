//! Paired statistics on shared seeds: two configurations played on the same worlds.
//!
//! mosaic gives every operator of an experiment the same episode seeds, and two runs of
//! one experiment the same seeds too. An episode of configuration A and the episode of
//! configuration B on the same seed face the same world, so their difference has the luck
//! of the draw taken out. This module pairs them by seed and describes the differences:
//!
//! - **pairing**: each side's values are averaged per seed (a seed can hold several
//!   episodes under a fixed-seed plan), and seeds present on both sides are paired. Seeds
//!   on one side only are listed, never paired ([`Pairing`]);
//! - **difference** (B − A): its mean with the percentile bootstrap interval of
//!   [`stats::bootstrap_mean`](crate::stats::bootstrap_mean) over the per-seed differences;
//! - **test**: a paired sign-flip permutation test of "the mean difference is zero"
//!   ([`SignFlipTest`]). Under that hypothesis each per-seed difference is as likely to
//!   have either sign, so flipping signs gives the statistic's null distribution. It tests
//!   the very statistic the interval is about (unlike Wilcoxon's signed ranks, which tests
//!   a location shift of the ranks), assumes no normality, and stays valid with the many
//!   ties of game returns and win indicators; on win indicators it is an exact McNemar
//!   test. Exact (all 2ⁿ sign patterns) up to [`EXACT_TEST_MAX_PAIRS`] pairs, otherwise
//!   [`TEST_RESAMPLES`] seeded random patterns;
//! - **power** ([`Power`]): with the observed standard deviation of the differences, how
//!   many seeds a paired test needs to detect a difference of a given size (two-sided
//!   α = 0.05, power 0.8, normal approximation), and the smallest difference the present
//!   seeds can detect.
//!
//! Functions take plain `(seed, value)` slices and return serialisable results, so the
//! reports, the CLI and the web draw from the same code.

use crate::stats::{BOOTSTRAP_SEED, LANES, MeanCi, bootstrap_mean, empty_sum};
use mosaic_core::Outcome;
use mosaic_core::record::EpisodeRecord;
use mosaic_core::rng;
use rand::Rng as _;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Up to this many pairs the sign-flip test enumerates every sign pattern.
pub const EXACT_TEST_MAX_PAIRS: usize = 16;
/// Random sign patterns of the test beyond [`EXACT_TEST_MAX_PAIRS`] pairs.
pub const TEST_RESAMPLES: usize = 20_000;
/// Significance level of the power calculation (two-sided).
pub const POWER_ALPHA: f64 = 0.05;
/// Power aimed at.
pub const POWER_TARGET: f64 = 0.8;
/// Standard normal quantile at 1 − α/2 for α = 0.05.
const Z_HALF_ALPHA: f64 = 1.959_963_984_540_054;
/// Standard normal quantile at 0.8 (the power).
const Z_POWER: f64 = 0.841_621_233_572_914_3;

/// Seeds of two samples, paired.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Pairing {
    /// (seed, mean value in A, mean value in B) for every seed on both sides, by seed.
    pub pairs: Vec<(u64, f64, f64)>,
    /// Seeds with values in A only.
    pub only_in_a: Vec<u64>,
    /// Seeds with values in B only.
    pub only_in_b: Vec<u64>,
}

/// Pairs `a` and `b` (values tagged with their episode's seed) by seed; several values
/// of one seed on a side count as their mean.
///
/// ```
/// use mosaic_recorder::paired::pair;
/// let pairing = pair(&[(1, 2.0), (2, 4.0), (2, 6.0)], &[(2, 1.0), (3, 0.0)]);
/// assert_eq!(pairing.pairs, vec![(2, 5.0, 1.0)]);
/// assert_eq!((pairing.only_in_a, pairing.only_in_b), (vec![1], vec![3]));
/// ```
pub fn pair(a: &[(u64, f64)], b: &[(u64, f64)]) -> Pairing {
    let (a, b) = (seed_means(a), seed_means(b));
    let mut pairing = Pairing::default();
    for (seed, x) in &a {
        match b.get(seed) {
            Some(y) => pairing.pairs.push((*seed, *x, *y)),
            None => pairing.only_in_a.push(*seed),
        }
    }
    pairing.only_in_b = b.keys().filter(|s| !a.contains_key(s)).copied().collect();
    pairing
}

/// The mean value of each seed.
pub(crate) fn seed_means(values: &[(u64, f64)]) -> BTreeMap<u64, f64> {
    let mut sums: BTreeMap<u64, (f64, u32)> = BTreeMap::new();
    for (seed, value) in values {
        let entry = sums.entry(*seed).or_default();
        entry.0 += value;
        entry.1 += 1;
    }
    sums.into_iter()
        .map(|(seed, (sum, n))| (seed, sum / f64::from(n)))
        .collect()
}

/// The paired sign-flip permutation test of a zero mean difference.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SignFlipTest {
    /// Two-sided p-value: the share of sign patterns whose mean difference is at least as
    /// far from zero as the observed one (with the observed pattern counted, when sampled).
    pub p_value: f64,
    /// Whether every sign pattern was enumerated (else [`TEST_RESAMPLES`] were drawn).
    pub exact: bool,
}

/// The two-sided sign-flip test of `differences`.
///
/// ```
/// use mosaic_recorder::paired::sign_flip_test;
/// // Five positive differences: only the all-positive and all-negative patterns are as
/// // extreme, 2 of 32.
/// let test = sign_flip_test(&[1.0, 2.0, 1.5, 0.5, 1.0]);
/// assert!(test.exact);
/// assert!((test.p_value - 2.0 / 32.0).abs() < 1e-12);
/// ```
pub fn sign_flip_test(differences: &[f64]) -> SignFlipTest {
    let n = differences.len();
    let observed: f64 = differences.iter().sum::<f64>().abs();
    // Sums equal up to rounding count as equally extreme.
    let threshold = observed - 1e-9 * (1.0 + observed);
    if n <= EXACT_TEST_MAX_PAIRS {
        let patterns = 1u64 << n;
        let extreme = (0..patterns)
            .filter(|pattern| {
                let sum: f64 = differences
                    .iter()
                    .enumerate()
                    .map(|(i, d)| if pattern >> i & 1 == 1 { -d } else { *d })
                    .sum();
                sum.abs() >= threshold
            })
            .count();
        return SignFlipTest {
            p_value: extreme as f64 / patterns as f64,
            exact: true,
        };
    }
    let extreme = sampled_sums(differences)
        .iter()
        .filter(|sum| sum.abs() >= threshold)
        .count();
    SignFlipTest {
        p_value: (extreme + 1) as f64 / (TEST_RESAMPLES + 1) as f64,
        exact: false,
    }
}

/// The sums of `differences` under [`TEST_RESAMPLES`] random sign patterns, drawn in order
/// from one RNG seeded with [`BOOTSTRAP_SEED`] (a fair coin per difference, in order). Each
/// sum adds the signed differences in order, as `Iterator::sum` would; [`LANES`] patterns
/// are summed side by side, and a sign is flipped as negation does, on its bit.
fn sampled_sums(differences: &[f64]) -> Vec<f64> {
    let n = differences.len();
    let mut random = rng::seeded(BOOTSTRAP_SEED);
    let mut sums = Vec::with_capacity(TEST_RESAMPLES);
    let mut signs = vec![0u64; LANES * n];
    for first in (0..TEST_RESAMPLES).step_by(LANES) {
        let lanes = LANES.min(TEST_RESAMPLES - first);
        for sign in &mut signs[..lanes * n] {
            *sign = u64::from(random.random_bool(0.5)) << 63;
        }
        let mut lane_sums = [empty_sum(); LANES];
        for (i, d) in differences.iter().enumerate() {
            for (lane, sum) in lane_sums.iter_mut().enumerate() {
                *sum += f64::from_bits(d.to_bits() ^ signs[lane * n + i]);
            }
        }
        sums.extend_from_slice(&lane_sums[..lanes]);
    }
    sums
}

/// How many seeds a paired comparison needs, at the observed spread of the differences.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Power {
    /// Standard deviation of the per-seed differences.
    pub sd: f64,
    /// Smallest difference the present seeds detect with power [`POWER_TARGET`].
    pub detectable: f64,
    /// Seeds needed to detect a difference of the observed size (`None` when it is zero).
    pub seeds_for_observed: Option<u64>,
    /// The difference asked about and the seeds it needs, when one was asked about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seeds_for_effect: Option<(f64, u64)>,
}

/// Seeds a two-sided paired test at [`POWER_ALPHA`] needs to detect a mean difference
/// `effect` with power [`POWER_TARGET`] when the differences have standard deviation `sd`
/// (normal approximation: n = ((z₁₋α/₂ + z_power) · sd / effect)², at least 2). `None` for
/// a zero effect.
///
/// ```
/// use mosaic_recorder::paired::seeds_needed;
/// // A difference of half a standard deviation needs 32 seeds.
/// assert_eq!(seeds_needed(0.5, 1.0), Some(32));
/// assert_eq!(seeds_needed(0.0, 1.0), None);
/// ```
pub fn seeds_needed(effect: f64, sd: f64) -> Option<u64> {
    if effect == 0.0 || !effect.is_finite() {
        return None;
    }
    let n = ((Z_HALF_ALPHA + Z_POWER) * sd / effect).powi(2).ceil();
    Some((n as u64).max(2))
}

/// The smallest mean difference `n` pairs with differences of standard deviation `sd`
/// detect (two-sided α = 0.05, power 0.8, normal approximation).
pub fn detectable_difference(n: usize, sd: f64) -> f64 {
    (Z_HALF_ALPHA + Z_POWER) * sd / (n as f64).sqrt()
}

/// The per-seed differences B − A of paired values.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairedDifference {
    /// Mean of A over the paired seeds.
    pub mean_a: f64,
    /// Mean of B over the paired seeds.
    pub mean_b: f64,
    /// Mean difference B − A with its 95% bootstrap interval over seeds.
    pub difference: MeanCi,
    /// Seeds where B is higher, equal, lower.
    pub b_higher: usize,
    /// Seeds where both are equal.
    pub ties: usize,
    /// Seeds where A is higher.
    pub a_higher: usize,
    /// The test of a zero mean difference.
    pub test: SignFlipTest,
    /// Seeds needed for differences of various sizes.
    pub power: Power,
}

/// A paired comparison: how the seeds paired, and the differences when any did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairedComparison {
    /// Seeds paired.
    pub paired_seeds: usize,
    /// Seeds with values in A only (not in the comparison).
    pub only_in_a: Vec<u64>,
    /// Seeds with values in B only (not in the comparison).
    pub only_in_b: Vec<u64>,
    /// The differences, `None` when no seed paired.
    pub difference: Option<PairedDifference>,
}

/// Compares `a` and `b` seed by seed; `effect`: a difference to compute the seeds for.
///
/// ```
/// use mosaic_recorder::paired::compare_paired;
/// let a: Vec<(u64, f64)> = (0..10).map(|s| (s, s as f64)).collect();
/// let b: Vec<(u64, f64)> = (0..10).map(|s| (s, s as f64 + 1.0 + (s % 2) as f64)).collect();
/// let c = compare_paired(&a, &b, None);
/// let d = c.difference.unwrap();
/// assert_eq!((c.paired_seeds, d.difference.mean, d.b_higher), (10, 1.5, 10));
/// assert!(d.test.p_value < 0.01);
/// ```
pub fn compare_paired(a: &[(u64, f64)], b: &[(u64, f64)], effect: Option<f64>) -> PairedComparison {
    let pairing = pair(a, b);
    let differences: Vec<(u64, f64)> = pairing.pairs.iter().map(|(s, x, y)| (*s, y - x)).collect();
    let difference = bootstrap_mean(&differences).map(|ci| {
        let n = differences.len();
        let values: Vec<f64> = differences.iter().map(|(_, d)| *d).collect();
        let sd = if n > 1 {
            (values.iter().map(|d| (d - ci.mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let mean_of = |pick: fn(&(u64, f64, f64)) -> f64| {
            pairing.pairs.iter().map(pick).sum::<f64>() / n as f64
        };
        PairedDifference {
            mean_a: mean_of(|p| p.1),
            mean_b: mean_of(|p| p.2),
            difference: ci,
            b_higher: values.iter().filter(|d| **d > 0.0).count(),
            ties: values.iter().filter(|d| **d == 0.0).count(),
            a_higher: values.iter().filter(|d| **d < 0.0).count(),
            test: sign_flip_test(&values),
            power: Power {
                sd,
                detectable: detectable_difference(n, sd),
                seeds_for_observed: seeds_needed(ci.mean, sd),
                seeds_for_effect: effect.and_then(|e| seeds_needed(e, sd).map(|n| (e, n))),
            },
        }
    });
    PairedComparison {
        paired_seeds: pairing.pairs.len(),
        only_in_a: pairing.only_in_a,
        only_in_b: pairing.only_in_b,
        difference,
    }
}

/// What a configuration's episodes give a paired comparison: per-episode values tagged
/// with their seeds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ConfigSamples {
    /// The operator's return (summed over its agents) per episode.
    pub returns: Vec<(u64, f64)>,
    /// Per team: 1 for a won episode, 0 for a drawn or lost one.
    pub wins: BTreeMap<String, Vec<(u64, f64)>>,
}

impl ConfigSamples {
    /// The samples of `episodes` (of one operator); failed episodes are left out, as in
    /// the reports.
    pub fn of<'a>(episodes: impl IntoIterator<Item = &'a EpisodeRecord>) -> ConfigSamples {
        let mut samples = ConfigSamples::default();
        for episode in episodes.into_iter().filter(|e| e.error.is_none()) {
            let total = episode.agents.iter().map(|a| a.total_reward).sum();
            samples.returns.push((episode.seed, total));
            let mut outcomes: BTreeMap<&str, Outcome> = BTreeMap::new();
            for agent in &episode.agents {
                if let (Some(team), Some(outcome)) = (&agent.team, agent.outcome) {
                    outcomes.entry(team).or_insert(outcome);
                }
            }
            for (team, outcome) in outcomes {
                let won = f64::from(u8::from(outcome == Outcome::Win));
                samples
                    .wins
                    .entry(team.to_owned())
                    .or_default()
                    .push((episode.seed, won));
            }
        }
        samples
    }
}

/// The samples of every operator in `episodes`, by operator id.
pub fn samples_by_operator(episodes: &[EpisodeRecord]) -> BTreeMap<String, ConfigSamples> {
    let mut by_operator: BTreeMap<&str, Vec<&EpisodeRecord>> = BTreeMap::new();
    for episode in episodes {
        by_operator
            .entry(episode.operator_id.as_str())
            .or_default()
            .push(episode);
    }
    by_operator
        .into_iter()
        .map(|(id, mine)| (id.to_owned(), ConfigSamples::of(mine)))
        .collect()
}

/// Two configurations compared seed by seed: returns, and win rates of the teams both have.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfigComparison {
    /// What A is (an operator, or `run:operator`).
    pub a: String,
    /// What B is.
    pub b: String,
    /// The operator's return.
    pub returns: PairedComparison,
    /// Per team present on both sides: its win rate.
    pub win_rates: Vec<(String, PairedComparison)>,
}

/// Compares configuration `b` with `a`; `effect`: a return difference to compute the
/// seeds for.
pub fn compare_configs(
    a: (&str, &ConfigSamples),
    b: (&str, &ConfigSamples),
    effect: Option<f64>,
) -> ConfigComparison {
    ConfigComparison {
        a: a.0.to_owned(),
        b: b.0.to_owned(),
        returns: compare_paired(&a.1.returns, &b.1.returns, effect),
        win_rates: a
            .1
            .wins
            .iter()
            .filter_map(|(team, wins_a)| {
                let wins_b = b.1.wins.get(team)?;
                Some((team.clone(), compare_paired(wins_a, wins_b, None)))
            })
            .collect(),
    }
}

impl ConfigComparison {
    /// A Markdown table, one row for the return and one per team's win rate, then notes
    /// on seeds that did not pair.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "### `{}` − `{}`, paired by seed\n\n| | A | B | B − A [95% CI] | B > A / = / < | p (sign-flip) | sd of diff. | detectable | seeds for observed |\n|---|---|---|---|---|---|---|---|---|\n",
            self.b, self.a
        );
        let mut notes = String::new();
        let mut row = |label: &str, c: &PairedComparison, percent: bool| {
            let scale = if percent { 100.0 } else { 1.0 };
            let unit = if percent { " pp" } else { "" };
            match &c.difference {
                Some(d) => {
                    let _ = writeln!(
                        out,
                        "| {label} | {:.3} | {:.3} | {:+.3} [{:+.3}, {:+.3}]{unit} | {} / {} / {} | {} | {:.3} | {:.3}{unit} | {} |",
                        d.mean_a * scale,
                        d.mean_b * scale,
                        d.difference.mean * scale,
                        d.difference.low * scale,
                        d.difference.high * scale,
                        d.b_higher,
                        d.ties,
                        d.a_higher,
                        fmt_p(d.test),
                        d.power.sd * scale,
                        d.power.detectable * scale,
                        d.power
                            .seeds_for_observed
                            .map_or("–".to_owned(), |n| n.to_string()),
                    );
                    if let Some((effect, n)) = d.power.seeds_for_effect {
                        let _ = writeln!(
                            notes,
                            "- {label}: a difference of {effect} needs {n} seeds ({} paired now).",
                            c.paired_seeds
                        );
                    }
                }
                None => {
                    let _ = writeln!(out, "| {label} | – | – | no seeds in common | | | | | |");
                }
            }
            if !c.only_in_a.is_empty() || !c.only_in_b.is_empty() {
                let _ = writeln!(
                    notes,
                    "- {label}: not paired (seed in one side only): {} in A only{}, {} in B only{}; {} paired.",
                    c.only_in_a.len(),
                    seed_list(&c.only_in_a),
                    c.only_in_b.len(),
                    seed_list(&c.only_in_b),
                    c.paired_seeds
                );
            }
        };
        row("return", &self.returns, false);
        for (team, c) in &self.win_rates {
            row(&format!("team {team} win rate (%)"), c, true);
        }
        out.push_str(&format!(
            "\n{} seeds paired. Intervals: 95% bootstrap over seeds; p: two-sided paired sign-flip permutation test; detectable: the difference these seeds detect with power {POWER_TARGET} at α = {POWER_ALPHA}.\n",
            self.returns.paired_seeds
        ));
        if !notes.is_empty() {
            out.push('\n');
            out.push_str(&notes);
        }
        out.push('\n');
        out
    }
}

fn fmt_p(test: SignFlipTest) -> String {
    let p = if test.p_value < 0.001 {
        "<0.001".to_owned()
    } else {
        format!("{:.3}", test.p_value)
    };
    if test.exact {
        format!("{p} (exact)")
    } else {
        p
    }
}

fn seed_list(seeds: &[u64]) -> String {
    const SHOWN: usize = 8;
    if seeds.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = seeds.iter().take(SHOWN).map(u64::to_string).collect();
    let more = if seeds.len() > SHOWN { ", …" } else { "" };
    format!(" ({}{more})", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairing_takes_only_common_seeds_and_names_the_rest() {
        let a = [(1, 1.0), (2, 2.0), (3, 3.0)];
        let b = [(2, 5.0), (3, 3.0), (4, 9.0), (5, 9.0)];
        let c = compare_paired(&a, &b, None);
        assert_eq!(c.paired_seeds, 2);
        assert_eq!((c.only_in_a, c.only_in_b), (vec![1], vec![4, 5]));
        let d = c.difference.unwrap();
        assert_eq!((d.mean_a, d.mean_b, d.difference.mean), (2.5, 4.0, 1.5));
        assert_eq!((d.b_higher, d.ties, d.a_higher), (1, 1, 0));

        let none = compare_paired(&[(1, 1.0)], &[(2, 1.0)], None);
        assert_eq!((none.paired_seeds, none.difference), (0, None));
    }

    #[test]
    fn pairing_removes_the_seed_effect() {
        // Seeds differ wildly (0..1000), B is A plus 1 ± 0.1: unpaired, the difference
        // would drown in the seeds' spread; paired, it is clear.
        let a: Vec<(u64, f64)> = (0..30).map(|s| (s, (s * 37 % 1000) as f64)).collect();
        let b: Vec<(u64, f64)> = a
            .iter()
            .map(|(s, v)| (*s, v + 1.0 + if s % 2 == 0 { 0.1 } else { -0.1 }))
            .collect();
        let d = compare_paired(&a, &b, Some(0.5)).difference.unwrap();
        assert!((d.difference.mean - 1.0).abs() < 1e-9, "{d:?}");
        assert!(d.difference.low > 0.9 && d.difference.high < 1.1, "{d:?}");
        assert!(!d.test.exact && d.test.p_value < 0.001, "{d:?}");
        assert!(d.power.detectable < 0.1, "{d:?}");
        assert_eq!(d.power.seeds_for_effect.map(|(_, n)| n), Some(2));
    }

    #[test]
    fn no_difference_is_not_significant() {
        let a: Vec<(u64, f64)> = (0..12).map(|s| (s, 1.0)).collect();
        let b: Vec<(u64, f64)> = (0..12)
            .map(|s| (s, if s % 2 == 0 { 2.0 } else { 0.0 }))
            .collect();
        let d = compare_paired(&a, &b, None).difference.unwrap();
        assert_eq!(d.difference.mean, 0.0);
        assert!(d.test.exact);
        assert_eq!(d.test.p_value, 1.0);
        assert_eq!(d.power.seeds_for_observed, None);
    }

    #[test]
    fn sampled_test_agrees_with_the_exact_one() {
        // 20 differences: exact p by enumeration (2^20 patterns) against the sampled one.
        let differences: Vec<f64> = (0..20).map(|i| (i % 7) as f64 - 2.0).collect();
        let exact = {
            let observed: f64 = differences.iter().sum::<f64>().abs();
            let extreme = (0..1u64 << 20)
                .filter(|p| {
                    let sum: f64 = differences
                        .iter()
                        .enumerate()
                        .map(|(i, d)| if p >> i & 1 == 1 { -d } else { *d })
                        .sum();
                    sum.abs() >= observed - 1e-9
                })
                .count();
            extreme as f64 / (1u64 << 20) as f64
        };
        let sampled = sign_flip_test(&differences);
        assert!(!sampled.exact);
        // Binomial standard error of the sampled p is at most 0.0036.
        assert!(
            (sampled.p_value - exact).abs() < 0.015,
            "{sampled:?} vs {exact}"
        );
    }

    #[test]
    fn side_by_side_sign_patterns_are_the_one_by_one_patterns() {
        let mut random = rng::seeded(5);
        for n in [17, 18, 100, 1001] {
            let differences: Vec<f64> = (0..n)
                .map(|i| match i % 5 {
                    0 => -0.0,
                    1 => 0.0,
                    2 => f64::from(i as u32) * -1e-3,
                    _ => random.random_range(-1e3..1e3),
                })
                .collect();
            // As the test first drew and summed them: one pattern after the other.
            let mut patterns = rng::seeded(BOOTSTRAP_SEED);
            let one_by_one: Vec<f64> = (0..TEST_RESAMPLES)
                .map(|_| {
                    differences
                        .iter()
                        .map(|d| if patterns.random_bool(0.5) { -d } else { *d })
                        .sum()
                })
                .collect();
            let side_by_side = sampled_sums(&differences);
            assert_eq!(side_by_side.len(), one_by_one.len());
            assert!(
                side_by_side
                    .iter()
                    .zip(&one_by_one)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{n}"
            );
        }
    }

    #[test]
    fn power_follows_the_normal_approximation() {
        assert_eq!(seeds_needed(1.0, 1.0), Some(8));
        assert_eq!(seeds_needed(-0.2, 1.0), Some(197));
        assert!((detectable_difference(8, 1.0) - 0.9906).abs() < 1e-3);
    }

    #[test]
    fn win_rates_pair_per_team() {
        use crate::synthetic;
        let manifest = synthetic::manifest("r", &["a", "b"], 6, 1);
        let episodes = synthetic::run_episodes(&manifest, 10, 4);
        let of = |op: &str| {
            ConfigSamples::of(
                episodes
                    .iter()
                    .map(|e| &e.record)
                    .filter(|r| r.operator_id == op),
            )
        };
        let (a, b) = (of("a"), of("b"));
        assert_eq!(a.returns.len(), 6);
        let c = compare_configs(("a", &a), ("b", &b), None);
        // Same seeds, same synthetic episodes: every difference is zero.
        let d = c.returns.difference.as_ref().unwrap();
        assert_eq!((d.difference.mean, d.ties), (0.0, 6));
        let teams: Vec<&str> = c.win_rates.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(teams, ["blue", "green"]);
        let md = c.markdown();
        assert!(md.contains("| team green win rate (%) |"), "{md}");
    }
}
