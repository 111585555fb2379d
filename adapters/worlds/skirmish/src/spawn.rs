//! Procedural episodes: team compositions and start positions, SMACv2's distributions
//! (`weighted_teams`, `surrounded`, `reflect`, `surrounded_and_reflect`) drawn from the
//! episode's seeded stream.

use crate::settings::{Config, StartPositions};
use crate::units::UnitType;
use mosaic_core::rng::Rng;
use rand::Rng as _;

/// Distance of the surrounded groups' inner end from the centre, along each axis.
const SURROUND_OFFSET: f32 = 2.0;
/// Blue's half of a reflected start stops this far short of the middle line.
const REFLECT_GAP: f32 = 1.0;
/// Units spawned on one point are spread by up to this much either way, so that the
/// collision push can separate them (StarCraft II spreads units spawned on one point).
const SPAWN_JITTER: f32 = 0.5;

/// One type drawn from the pool.
fn draw_type(pool: &[(UnitType, f64)], rng: &mut Rng) -> UnitType {
    let mut x: f64 = rng.random();
    for (kind, weight) in pool {
        if x < *weight {
            return *kind;
        }
        x -= weight;
    }
    // Rounding left a sliver above the last weight: it belongs to the last positive one.
    pool.iter()
        .rev()
        .find(|(_, w)| *w > 0.0)
        .map_or(pool[0].0, |(kind, _)| *kind)
}

/// `n` types, drawn again while they are all exception types.
fn draw_group(pool: &[(UnitType, f64)], n: usize, rng: &mut Rng) -> Vec<UnitType> {
    loop {
        let team: Vec<UnitType> = (0..n).map(|_| draw_type(pool, rng)).collect();
        if !team.iter().all(|t| t.is_exception()) {
            return team;
        }
    }
}

/// Unit types in agent order (blue, then red): red mirrors blue's composition, plus its
/// own draw for its extra units or minus blue's last ones (SMACv2's `weighted_teams`).
pub(crate) fn draw_teams(config: &Config, rng: &mut Rng) -> Vec<UnitType> {
    let [blue, red] = config.teams;
    let mut types = draw_group(&config.pool, blue, rng);
    let mut red_types: Vec<UnitType> = types.iter().copied().take(red).collect();
    if red > blue {
        red_types.extend(draw_group(&config.pool, red - blue, rng));
    }
    types.extend(red_types);
    types
}

/// Start positions in agent order.
pub(crate) fn draw_positions(config: &Config, rng: &mut Rng) -> Vec<[f32; 2]> {
    let surrounded = match config.start_positions {
        StartPositions::Surrounded => true,
        StartPositions::Reflect => false,
        StartPositions::SurroundedAndReflect => rng.random::<f64>() < config.surrounded_probability,
    };
    if surrounded {
        surrounded_positions(config, rng)
    } else {
        reflected_positions(config, rng)
    }
}

fn uniform(rng: &mut Rng, low: f32, high: f32) -> f32 {
    low + (high - low) * rng.random::<f32>()
}

fn jittered(point: [f32; 2], rng: &mut Rng) -> [f32; 2] {
    [
        point[0] + uniform(rng, -SPAWN_JITTER, SPAWN_JITTER),
        point[1] + uniform(rng, -SPAWN_JITTER, SPAWN_JITTER),
    ]
}

/// Blue uniformly on the west half (short of the middle), red mirrored across the middle
/// line; red's extra units uniformly on the east half.
fn reflected_positions(config: &Config, rng: &mut Rng) -> Vec<[f32; 2]> {
    let [blue, red] = config.teams;
    let size = config.map_size;
    let mut positions: Vec<[f32; 2]> = (0..blue)
        .map(|_| {
            [
                uniform(rng, 0.0, size / 2.0 - REFLECT_GAP),
                uniform(rng, 0.0, size),
            ]
        })
        .collect();
    let mirrored: Vec<[f32; 2]> = positions
        .iter()
        .take(red)
        .map(|[x, y]| [size - x, *y])
        .collect();
    positions.extend(mirrored);
    for _ in blue..red {
        positions.push([uniform(rng, size / 2.0, size), uniform(rng, 0.0, size)]);
    }
    positions
}

/// Blue at the centre; red split evenly at random into one to four groups, each on its
/// own diagonal at a uniform point between the corner and the centre's neighbourhood.
fn surrounded_positions(config: &Config, rng: &mut Rng) -> Vec<[f32; 2]> {
    let [blue, red] = config.teams;
    let size = config.map_size;
    let centre = [size / 2.0, size / 2.0];
    let mut positions: Vec<[f32; 2]> = (0..blue).map(|_| jittered(centre, rng)).collect();
    let groups = rng.random_range(1..=4usize);
    // Diagonals without replacement: a partial Fisher-Yates shuffle of the four.
    let mut diagonals = [0usize, 1, 2, 3];
    for i in 0..groups {
        let j = rng.random_range(i..4);
        diagonals.swap(i, j);
    }
    let (o, near) = (SURROUND_OFFSET, |dx: f32, dy: f32| {
        [centre[0] + dx, centre[1] + dy]
    });
    let inner = [near(-o, -o), near(-o, o), near(o, o), near(o, -o)];
    let corners = [[0.0, 0.0], [0.0, size], [size, size], [size, 0.0]];
    let anchors: Vec<[f32; 2]> = diagonals[..groups]
        .iter()
        .map(|&d| {
            let t: f32 = rng.random();
            [
                inner[d][0] * t + corners[d][0] * (1.0 - t),
                inner[d][1] * t + corners[d][1] * (1.0 - t),
            ]
        })
        .collect();
    for _ in 0..red {
        let group = rng.random_range(0..groups);
        positions.push(jittered(anchors[group], rng));
    }
    positions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Race;
    use mosaic_core::rng::seeded;

    fn config(race: Race, teams: [usize; 2], start: StartPositions) -> Config {
        Config {
            pool: race.pool().to_vec(),
            teams,
            start_positions: start,
            ..Config::default()
        }
    }

    #[test]
    fn teams_mirror_and_follow_the_weights() {
        let c = config(Race::Terran, [5, 6], StartPositions::Reflect);
        let mut rng = seeded(1);
        let mut counts = [0usize; 3];
        for _ in 0..2_000 {
            let types = draw_teams(&c, &mut rng);
            assert_eq!(types.len(), 11);
            assert_eq!(types[..5], types[5..10], "red mirrors blue");
            assert!(!types[..5].iter().all(|t| t.is_exception()));
            for t in &types[..5] {
                counts[c.pool.iter().position(|(p, _)| p == t).unwrap()] += 1;
            }
        }
        let medivac_share = counts[2] as f64 / 10_000.0;
        assert!((0.08..0.12).contains(&medivac_share), "{medivac_share}");
        let smaller = config(Race::Zerg, [6, 5], StartPositions::Reflect);
        let types = draw_teams(&smaller, &mut rng);
        assert_eq!(types[..5], types[6..]);
    }

    #[test]
    fn positions_stay_on_the_map_and_follow_the_layouts() {
        let mut rng = seeded(2);
        let reflect = config(Race::Protoss, [5, 6], StartPositions::Reflect);
        for _ in 0..200 {
            let p = draw_positions(&reflect, &mut rng);
            assert_eq!(p.len(), 11);
            for i in 0..5 {
                assert!(p[i][0] < 15.0 + 1e-4);
                assert_eq!(p[5 + i], [32.0 - p[i][0], p[i][1]]);
            }
            assert!(p[10][0] >= 16.0);
        }
        let surround = config(Race::Protoss, [5, 5], StartPositions::Surrounded);
        for _ in 0..200 {
            let p = draw_positions(&surround, &mut rng);
            for q in &p[..5] {
                assert!((q[0] - 16.0).abs() <= 0.5 && (q[1] - 16.0).abs() <= 0.5);
            }
            for q in &p[5..] {
                // On a diagonal, at least the offset away from the centre along each axis.
                assert!(
                    (q[0] - 16.0).abs() >= 1.5 && (q[1] - 16.0).abs() >= 1.5,
                    "{q:?}"
                );
                assert!(q.iter().all(|c| (-0.5..=32.5).contains(c)));
            }
        }
    }
}
