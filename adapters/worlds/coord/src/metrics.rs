//! Episode metrics: rewards normalised per category as in ALEM App. H.2 (each agent's
//! reward divided by the category's maximum, averaged over agents) on the configured
//! scale ([`Scoring`]), the counts of trades, revives, handovers and synchronous
//! successes, and ALEM's diagnostics: coverage by coordination type (Fig. 5A), tier
//! coverage (Fig. 10), causes of death (Fig. 11) and specialisation (Fig. 14).

use super::scoring::{ALEM_ACHIEVEMENTS, CoordType, Scoring, Tier, weights};
use super::settings::Config;
use super::state::{AgentState, DeathCause, World};
use super::types::Achievement;
use serde_json::{Map, Value, json};

/// The coordination achievements one agent can earn in this configuration: none without
/// coordination tasks (and so for one agent); otherwise the team-size
/// achievements need a team of 3+ and α > 0 (or, for two-agent targets, α < 1 or a
/// forge), building and diamond crafting need construction sites, and mining
/// achievements need coordinated resource blocks.
pub fn achievable_coordination(config: &Config) -> Vec<Achievement> {
    use Achievement::*;
    if !config.coordination_tasks {
        return Vec::new();
    }
    let alpha = config.difficulty.alpha;
    let sites = config.construction_sites > 0;
    let blocks = config.coordination_probability > 0.0;
    let team = config.agents >= 3;
    Achievement::ALL
        .iter()
        .copied()
        .filter(|a| a.is_coordination())
        .filter(|a| match a {
            CoordTeamSoft | CoordTeamHard => team && alpha > 0.0,
            Coord2AgentsSoft => !team || alpha < 1.0,
            Coord2AgentsHard => !team || alpha < 1.0 || sites,
            CoordBuildShelter | CoordBuildForge | CoordDiamondPickaxe | CoordDiamondSword => sites,
            HandoverComplete => sites || blocks,
            CoordMineWoodSoft | CoordMineWoodHard | CoordMineStoneSoft | CoordMineStoneHard
            | CoordMineCoalSoft | CoordMineCoalHard | CoordMineIronSoft | CoordMineIronHard
            | CoordMineDiamondSoft | CoordMineDiamondHard | CoordMineHandover => blocks,
            _ => true,
        })
        .collect()
}

/// Per-agent achievable counts `(base, coordination)` of the compact scale, where every
/// achievement is worth 1; the base category also holds the health reward (0.1 per
/// point of health gained or lost), whose episode sum is at most 0 because agents start
/// at full health.
///
/// ```
/// let config = mosaic_coord::Config::from_settings(&Default::default()).unwrap();
/// assert_eq!(mosaic_coord::achievable(&config), (22, 23));
/// ```
pub fn achievable(config: &Config) -> (usize, usize) {
    (
        Achievement::BASE_COUNT,
        achievable_coordination(config).len(),
    )
}

/// Whether one agent can earn `achievement` in this configuration.
pub(crate) fn reachable(config: &Config, achievement: Achievement) -> bool {
    !achievement.is_coordination() || achievable_coordination(config).contains(&achievement)
}

/// Per-agent reward maxima `(base, coordination)` on the configured scale: the compact
/// counts of [`achievable`], ALEM's 217 and 159 or ALEM-Lite's 38 and 159 (which include
/// what this world cannot reach, see [`reachable_maxima`]).
///
/// ```
/// let mut s = mosaic_core::Settings::new();
/// s.insert("scoring".into(), "alem".into());
/// let config = mosaic_coord::Config::from_settings(&s).unwrap();
/// assert_eq!(mosaic_coord::maxima(&config), (217.0, 159.0));
/// ```
pub fn maxima(config: &Config) -> (f64, f64) {
    match config.scoring {
        Scoring::Compact => {
            let (base, coord) = achievable(config);
            (base as f64, coord as f64)
        }
        Scoring::Alem | Scoring::AlemLite => {
            let (base, coord) = weights(config.scoring.alem_list());
            (f64::from(base), f64::from(coord))
        }
    }
}

/// The part of [`maxima`] this world can earn in this configuration: equal to the
/// maxima on the compact scale; on ALEM's, the weights of the ALEM achievements whose
/// parts the world has.
pub fn reachable_maxima(config: &Config) -> (f64, f64) {
    match config.scoring {
        Scoring::Compact => maxima(config),
        Scoring::Alem | Scoring::AlemLite => {
            let (base, coord) = weights(
                config
                    .scoring
                    .alem_list()
                    .filter(|e| e.world.is_some_and(|a| reachable(config, a))),
            );
            (f64::from(base), f64::from(coord))
        }
    }
}

/// How many achievements of the configured scale `agent` holds, and how many the scale
/// lists (the `Achievements:` line of the text observation).
pub fn achievement_tally(config: &Config, agent: &AgentState) -> (usize, usize) {
    match config.scoring {
        Scoring::Compact => {
            let (base, coord) = achievable(config);
            let held = Achievement::ALL.iter().filter(|a| agent.has(**a)).count();
            (held, base + coord)
        }
        Scoring::Alem | Scoring::AlemLite => {
            let held = config
                .scoring
                .alem_list()
                .filter(|e| e.world.is_some_and(|a| agent.has(a)))
                .count();
            (held, config.scoring.alem_list().count())
        }
    }
}

/// The coordination achievements of the configured scale: their type, their weight and
/// the world achievement that earns them (`None`: not reachable here).
fn coordination_scale(config: &Config) -> Vec<(CoordType, f64, Option<Achievement>)> {
    match config.scoring {
        Scoring::Compact => achievable_coordination(config)
            .into_iter()
            .filter_map(|a| CoordType::of(a).map(|t| (t, 1.0, Some(a))))
            .collect(),
        Scoring::Alem | Scoring::AlemLite => config
            .scoring
            .alem_list()
            .filter_map(|e| {
                e.coordination
                    .map(|t| (t, f64::from(e.tier.reward()), e.world))
            })
            .collect(),
    }
}

fn round(x: f64) -> f64 {
    // `+ 0.0` turns a negative zero (an empty float sum is -0.0) into 0.
    (x * 1e4).round() / 1e4 + 0.0
}

/// The episode metrics.
pub(crate) fn metrics(world: &World, config: &Config) -> Map<String, Value> {
    let (base_max, coord_max) = maxima(config);
    let (base_reachable, coord_reachable) = reachable_maxima(config);
    let n = world.agents.len() as f64;
    let mean = |f: &dyn Fn(&AgentState) -> f64| world.agents.iter().map(f).sum::<f64>() / n;
    let pct = |part: f64, whole: f64| {
        if whole > 0.0 {
            100.0 * part / whole
        } else {
            0.0
        }
    };
    let base_pct = mean(&|a| pct(a.base_reward, base_max));
    let coord_pct = mean(&|a| pct(a.coord_reward, coord_max));
    let total_pct = mean(&|a| pct(a.base_reward + a.coord_reward, base_max + coord_max));
    let mut achievements = Map::new();
    for a in Achievement::ALL {
        let holders = world.agents.iter().filter(|x| x.has(*a)).count();
        if holders > 0 {
            achievements.insert(a.name().into(), json!(holders));
        }
    }
    let c = &world.counters;
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_owned(), v);
    };
    put("alpha", json!(config.difficulty.alpha));
    put("scoring", json!(config.scoring));
    put("base_pct", json!(round(base_pct)));
    put("coord_pct", json!(round(coord_pct)));
    put("total_pct", json!(round(total_pct)));
    put("base_reward_mean", json!(round(mean(&|a| a.base_reward))));
    put("coord_reward_mean", json!(round(mean(&|a| a.coord_reward))));
    put("base_max", json!(base_max));
    put("coord_max", json!(coord_max));
    put("base_reachable_max", json!(base_reachable));
    put("coord_reachable_max", json!(coord_reachable));
    put("trades", json!(c.trades));
    put("revives", json!(c.revives));
    put("handovers", json!(c.handovers_completed));
    put("handovers_started", json!(c.handovers_started));
    put("handovers_expired", json!(c.handovers_expired));
    put("sync_successes", json!(c.sync_successes));
    put("sync_failures", json!(c.sync_failures));
    put("soft_solo_successes", json!(c.soft_solo_successes));
    put("structures_built", json!(c.structures_built));
    put("friendly_fire", json!(c.friendly_fire));
    put("role_attempts", json!(c.role_attempts));
    put("role_failures", json!(c.role_failures));
    put("downed", json!(c.downed));
    put("deaths", json!(c.deaths));
    put(
        "survivors",
        json!(world.agents.iter().filter(|a| a.is_alive()).count()),
    );
    put("coordination_sites", json!(world.census.total()));
    put("achievements_unlocked", json!(achievements.len()));
    put("achievements", Value::Object(achievements));
    // Diagnostics are flat numbers, so that `mosaic report` averages them too.
    for (kind, share) in coverage_by_type(world, config) {
        put(
            &format!("coverage_{}_pct", kind.name()),
            json!(round(share)),
        );
    }
    for (tier, share) in tier_coverage(world) {
        put(&format!("tier_{}_pct", tier.name()), json!(round(share)));
    }
    for cause in DeathCause::ALL {
        put(
            &format!("deaths_{}", cause.name()),
            json!(c.deaths_by[cause as usize]),
        );
    }
    let (aligned, cross) = specialisation(world);
    put("aligned_achievements", json!(aligned));
    put("cross_role_achievements", json!(cross));
    put(
        "specialisation_ratio_pct",
        json!(round(pct(f64::from(aligned), f64::from(aligned + cross)))),
    );
    m
}

/// Per coordination type, the share (in %) of the type's maximum reward that the team
/// earned, an achievement counting once when any agent holds it (ALEM Fig. 5A and its
/// `Team/*_coord_reward_pct_of_max`); types with nothing to earn are left out.
fn coverage_by_type(world: &World, config: &Config) -> Vec<(CoordType, f64)> {
    let scale = coordination_scale(config);
    let team_has = |a: Achievement| world.agents.iter().any(|x| x.has(a));
    let mut out = Vec::new();
    for kind in CoordType::ALL {
        let items: Vec<_> = scale.iter().filter(|(t, _, _)| *t == kind).collect();
        let most: f64 = items.iter().map(|(_, w, _)| w).sum();
        if most <= 0.0 {
            continue;
        }
        let earned: f64 = items
            .iter()
            .filter(|(_, _, x)| x.is_some_and(team_has))
            .map(|(_, w, _)| w)
            .sum();
        out.push((kind, 100.0 * earned / most));
    }
    out
}

/// Per tier, the mean over agents of the share (in %) of ALEM's achievements of that
/// tier (base and coordination) earned (ALEM Fig. 10), whatever the scoring.
fn tier_coverage(world: &World) -> Vec<(Tier, f64)> {
    let mut out = Vec::new();
    for tier in Tier::ALL {
        let listed: Vec<_> = ALEM_ACHIEVEMENTS
            .iter()
            .filter(|e| e.tier == tier)
            .collect();
        let share = world
            .agents
            .iter()
            .map(|a| {
                let held = listed
                    .iter()
                    .filter(|e| e.world.is_some_and(|x| a.has(x)))
                    .count();
                held as f64 / listed.len() as f64
            })
            .sum::<f64>()
            / world.agents.len() as f64;
        out.push((tier, 100.0 * share));
    }
    out
}

/// ALEM's achievements the agents earned in their own role's specialty, and in another
/// role's (shared achievements count in neither), summed over agents (ALEM Fig. 14).
fn specialisation(world: &World) -> (u32, u32) {
    let (mut aligned, mut cross) = (0, 0);
    for agent in &world.agents {
        for e in ALEM_ACHIEVEMENTS
            .iter()
            .filter(|e| e.world.is_some_and(|a| agent.has(a)))
        {
            match e.specialty() {
                Some(role) if role == agent.role => aligned += 1,
                Some(_) => cross += 1,
                None => {}
            }
        }
    }
    (aligned, cross)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_core::Settings;

    fn config(pairs: &[(&str, Value)]) -> Config {
        let s: Settings = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        Config::from_settings(&s).unwrap()
    }

    #[test]
    fn rounded_metrics_have_no_negative_zero() {
        // What a coverage share of nothing earned computes: an empty sum is -0.0.
        let earned: f64 = std::iter::empty::<f64>().sum();
        let share = round(100.0 * earned / 3.0);
        assert!(share == 0.0 && share.is_sign_positive(), "{share:?}");
        assert_eq!(json!(share).to_string(), "0.0");
    }

    #[test]
    fn maxima_follow_the_configuration() {
        assert_eq!(achievable(&config(&[])), (22, 23));
        // Two agents: "the whole team" is two agents, so no team achievements.
        assert_eq!(achievable(&config(&[("agents", json!(2))])).1, 21);
        // α = 0: targets never need the whole team.
        assert_eq!(achievable(&config(&[("alpha", json!(0.0))])).1, 21);
        // α = 1: only the forge still needs exactly two agents.
        assert_eq!(achievable(&config(&[("alpha", json!(1.0))])).1, 22);
        let bare = config(&[
            ("construction_sites", json!(0)),
            ("coordination_probability", json!(0.0)),
        ]);
        let left: Vec<_> = achievable_coordination(&bare)
            .iter()
            .map(|a| a.name())
            .collect();
        assert_eq!(
            left,
            [
                "coord_2_agents_soft",
                "coord_2_agents_hard",
                "coord_team_soft",
                "coord_team_hard",
                "coord_elite_melee_kill",
                "coord_elite_ranged_kill",
                "coord_large_passive_kill"
            ]
        );
    }
}
