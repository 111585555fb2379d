//! Episode metrics: rewards normalised per category as in ALEM App. H.2 (each agent's
//! reward divided by the category's achievable maximum, averaged over agents), and the
//! counts of trades, revives, handovers and synchronous successes.

use super::settings::Config;
use super::state::World;
use super::types::Achievement;
use serde_json::{Map, Value, json};

/// The coordination achievements one agent can earn in this configuration: the team-size
/// achievements need a team of 3+ and α > 0 (or, for two-agent targets, α < 1 or a
/// forge), building and diamond crafting need construction sites, and mining
/// achievements need coordinated resource blocks.
pub fn achievable_coordination(config: &Config) -> Vec<Achievement> {
    use Achievement::*;
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

/// Per-agent achievable maxima `(base, coordination)`. Every achievement is worth 1; the
/// base category also holds the health reward (0.1 per point of health gained or lost),
/// whose episode sum is at most 0 because agents start at full health.
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

fn round(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// The episode metrics.
pub fn metrics(world: &World, config: &Config) -> Map<String, Value> {
    let (base_max, coord_max) = achievable(config);
    let n = world.agents.len() as f64;
    let mean =
        |f: &dyn Fn(&super::state::AgentState) -> f64| world.agents.iter().map(f).sum::<f64>() / n;
    let pct = |reward: f64, max: usize| {
        if max == 0 {
            0.0
        } else {
            100.0 * reward / max as f64
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
    put("base_pct", json!(round(base_pct)));
    put("coord_pct", json!(round(coord_pct)));
    put("total_pct", json!(round(total_pct)));
    put("base_reward_mean", json!(round(mean(&|a| a.base_reward))));
    put("coord_reward_mean", json!(round(mean(&|a| a.coord_reward))));
    put("base_max", json!(base_max));
    put("coord_max", json!(coord_max));
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
    m
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
