//! Settings of the coordination world and the difficulty parameters derived from α
//! (ALEM, Table 4 and Table 5).

use super::scoring::Scoring;
use super::types::Role;
use mosaic_core::Settings;
use mosaic_core::experiment::{SpecError, parse_settings};
use serde::{Deserialize, Serialize};

/// A named difficulty.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// α = 0.3.
    Easy,
    /// α = 0.6.
    Medium,
    /// α = 0.9.
    Hard,
}

impl Preset {
    /// The α of the preset.
    pub fn alpha(self) -> f64 {
        match self {
            Preset::Easy => 0.3,
            Preset::Medium => 0.6,
            Preset::Hard => 0.9,
        }
    }
}

/// Execution-difficulty parameters, all functions of α alone (ALEM Table 4).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Difficulty {
    /// The difficulty knob in [0, 1].
    pub alpha: f64,
    /// Probability that a coordination target needs every agent rather than two.
    pub p_all_agents: f64,
    /// Shortest handover window, in steps: max(3, ⌈12(1 − α)⌉).
    pub handover_window_min: u32,
    /// Longest handover window, in steps: max(6, ⌈24(1 − α)⌉).
    pub handover_window_max: u32,
    /// Probability that a solo attempt on a soft synchronous target fails: α.
    pub soft_solo_fail_prob: f64,
    /// Success probability of a role-gated action by a non-specialist: 1 − α.
    pub non_specialist_success: f64,
    /// Mob health multiplier 1 + α/3 (only with `scale_base_difficulty`).
    pub mob_health_multiplier: f64,
    /// Starting food, drink and energy multiplier 1 − α/3 (only with
    /// `scale_base_difficulty`; health always starts full).
    pub starting_resource_multiplier: f64,
}

impl Difficulty {
    /// The parameters for `alpha` (clamped to [0, 1]).
    ///
    /// ```
    /// use mosaic_coord::Difficulty;
    /// let hard = Difficulty::from_alpha(0.9);
    /// assert_eq!((hard.handover_window_min, hard.handover_window_max), (3, 6));
    /// let easy = Difficulty::from_alpha(0.3);
    /// assert_eq!((easy.handover_window_min, easy.handover_window_max), (9, 17));
    /// ```
    pub fn from_alpha(alpha: f64) -> Self {
        let alpha = alpha.clamp(0.0, 1.0);
        // The tolerance keeps exact products such as 12 × 0.5 from rounding up.
        let ceil = |x: f64| (x - 1e-9).ceil().max(0.0) as u32;
        Self {
            alpha,
            p_all_agents: alpha,
            handover_window_min: ceil(12.0 * (1.0 - alpha)).max(3),
            handover_window_max: ceil(24.0 * (1.0 - alpha)).max(6),
            soft_solo_fail_prob: alpha,
            non_specialist_success: 1.0 - alpha,
            mob_health_multiplier: 1.0 + alpha / 3.0,
            starting_resource_multiplier: 1.0 - alpha / 3.0,
        }
    }
}

/// Coordination-opportunity parameters held fixed across difficulties (ALEM Table 5).
pub(crate) mod opportunity {
    /// Share of synchronous targets that are soft (assurance games).
    pub(crate) const SOFT_RATIO: f64 = 0.5;
    /// Share of coordination targets that are handovers.
    pub(crate) const HANDOVER_RATIO: f64 = 0.25;
    /// Share of coordinated mobs that are hard.
    pub(crate) const HARD_MOB_PROBABILITY: f64 = 0.5;
    /// Share of zombie and skeleton spawn slots that are elite.
    pub(crate) const ELITE_MOB_PROBABILITY: f64 = 0.15;
    /// Share of cow spawn slots that are large passive mobs.
    pub(crate) const LARGE_PASSIVE_PROBABILITY: f64 = 0.2;
    /// Agents needed to craft a diamond tool at a forge (capped by the team size).
    pub(crate) const DIAMOND_CRAFTING_AGENTS: usize = 2;
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    #[serde(default = "default_agents")]
    agents: usize,
    #[serde(default)]
    alpha: Option<f64>,
    #[serde(default)]
    preset: Option<Preset>,
    #[serde(default)]
    roles: Option<Vec<Role>>,
    #[serde(default = "default_max_steps")]
    max_steps: u32,
    #[serde(default = "default_size")]
    width: usize,
    #[serde(default = "default_size")]
    height: usize,
    #[serde(default = "default_signals")]
    signals: usize,
    #[serde(default = "default_day_length")]
    day_length: u32,
    #[serde(default = "default_coordination_probability")]
    coordination_probability: f64,
    #[serde(default = "default_construction_sites")]
    construction_sites: usize,
    #[serde(default)]
    scale_base_difficulty: bool,
    #[serde(default)]
    scoring: Scoring,
    #[serde(default = "default_true")]
    specialisation: bool,
    #[serde(default)]
    coordination_tasks: Option<bool>,
}

fn default_true() -> bool {
    true
}

fn default_agents() -> usize {
    3
}
fn default_max_steps() -> u32 {
    10_000
}
fn default_size() -> usize {
    64
}
fn default_signals() -> usize {
    4
}
fn default_day_length() -> u32 {
    300
}
fn default_coordination_probability() -> f64 {
    0.25
}
fn default_construction_sites() -> usize {
    8
}

/// The `settings` lines shown by `mosaic envs`.
pub const SETTINGS_HELP: &[&str] = &[
    "agents = 3: team size (1-4; one agent: ALEM's single-agent calibration, without coordination tasks)",
    "preset = \"medium\": easy (alpha 0.3), medium (0.6) or hard (0.9)",
    "alpha = <preset>: the difficulty knob in [0, 1] (instead of preset)",
    "roles = [\"warrior\", \"forager\", \"miner\", ...]: one role per agent",
    "max_steps = 10000: episode length (truncation)",
    "width = 64: map width in tiles (16-256)",
    "height = 64: map height in tiles (16-256)",
    "signals = 4: discrete message channels (actions signal_0..), 0-8",
    "day_length = 300: steps per day-night cycle",
    "coordination_probability = 0.25: share of resource blocks with a coordination requirement",
    "construction_sites = 8: construction sites per map (0-64)",
    "scale_base_difficulty = false: also scale mob health and starting food, drink and energy with alpha",
    "specialisation = true: roles gate their actions (non-specialists succeed with probability 1 - alpha); false: every agent succeeds at everything",
    "coordination_tasks = true: generate coordination tasks (coordinated blocks, construction sites, elite and large mobs); false: none (the base game), the default for one agent",
    "scoring = \"compact\": \"compact\" (every achievement worth 1) or \"alem\" (ALEM's 93 achievements, tier weights, maxima 217/159) or \"alem_lite\" (ALEM-Lite's overworld list, maxima 38/159)",
];

/// The validated configuration of one coordination world.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// Team size, 1–4 (one agent plays without coordination tasks).
    pub agents: usize,
    /// Role of each agent.
    pub roles: Vec<Role>,
    /// Difficulty derived from α.
    pub difficulty: Difficulty,
    /// Episode length.
    pub max_steps: u32,
    /// Map width in tiles.
    pub width: usize,
    /// Map height in tiles.
    pub height: usize,
    /// Number of discrete message channels.
    pub signals: usize,
    /// Steps per day-night cycle.
    pub day_length: u32,
    /// Share of resource blocks that get a coordination requirement.
    pub coordination_probability: f64,
    /// Construction sites per map.
    pub construction_sites: usize,
    /// Whether mob health and starting food, drink and energy scale with α.
    pub scale_base_difficulty: bool,
    /// The scale of rewards and of the `*_pct` metrics.
    pub scoring: Scoring,
    /// Whether roles gate their actions (soft specialisation); without it every agent
    /// succeeds at every action, whatever α.
    #[serde(default = "default_true")]
    pub specialisation: bool,
    /// Whether world generation places coordination tasks (coordinated resource blocks,
    /// construction sites, elite and large mobs); without them the world is the base
    /// game (ALEM's calibration settings).
    #[serde(default = "default_true")]
    pub coordination_tasks: bool,
}

impl Config {
    /// Reads and checks settings; errors name the offending setting.
    ///
    /// ```
    /// let mut s = mosaic_core::Settings::new();
    /// s.insert("preset".into(), "hard".into());
    /// s.insert("agents".into(), 2.into());
    /// let config = mosaic_coord::Config::from_settings(&s).unwrap();
    /// assert_eq!(config.difficulty.alpha, 0.9);
    /// s.insert("agents".into(), 5.into());
    /// assert!(mosaic_coord::Config::from_settings(&s).is_err());
    /// ```
    pub fn from_settings(settings: &Settings) -> Result<Self, SpecError> {
        let raw: RawSettings = parse_settings(settings)?;
        if !(1..=4).contains(&raw.agents) {
            return Err(SpecError::new(
                "agents",
                format!("`agents` must be 1, 2, 3 or 4, not {}", raw.agents),
            ));
        }
        let coordination_tasks = raw.coordination_tasks.unwrap_or(raw.agents > 1);
        if coordination_tasks && raw.agents == 1 {
            return Err(SpecError::new(
                "coordination_tasks",
                "`coordination_tasks` need a team: one agent plays without them",
            ));
        }
        let alpha = match (raw.alpha, raw.preset) {
            (Some(_), Some(_)) => {
                return Err(SpecError::new(
                    "alpha",
                    "give either `alpha` or `preset`, not both",
                ));
            }
            (Some(alpha), None) => {
                if !(0.0..=1.0).contains(&alpha) {
                    return Err(SpecError::new(
                        "alpha",
                        format!("`alpha` must lie in [0, 1], not {alpha}"),
                    ));
                }
                alpha
            }
            (None, Some(preset)) => preset.alpha(),
            (None, None) => Preset::Medium.alpha(),
        };
        let roles = match raw.roles {
            Some(roles) if roles.len() != raw.agents => {
                return Err(SpecError::new(
                    "roles",
                    format!("{} `roles` given for {} agents", roles.len(), raw.agents),
                ));
            }
            Some(roles) => roles,
            None => (0..raw.agents).map(Role::default_for).collect(),
        };
        for (name, size) in [("width", raw.width), ("height", raw.height)] {
            if !(16..=256).contains(&size) {
                return Err(SpecError::new(
                    name,
                    format!("`{name}` must lie in 16..=256, not {size}"),
                ));
            }
        }
        if raw.max_steps == 0 {
            return Err(SpecError::new(
                "max_steps",
                "`max_steps` must be at least 1",
            ));
        }
        if raw.signals > 8 {
            return Err(SpecError::new(
                "signals",
                format!("`signals`: at most 8 channels, not {}", raw.signals),
            ));
        }
        if raw.day_length == 0 {
            return Err(SpecError::new(
                "day_length",
                "`day_length` must be at least 1",
            ));
        }
        if !(0.0..=1.0).contains(&raw.coordination_probability) {
            return Err(SpecError::new(
                "coordination_probability",
                format!(
                    "`coordination_probability` must lie in [0, 1], not {}",
                    raw.coordination_probability
                ),
            ));
        }
        if raw.construction_sites > 64 {
            return Err(SpecError::new(
                "construction_sites",
                format!(
                    "`construction_sites`: at most 64, not {}",
                    raw.construction_sites
                ),
            ));
        }
        Ok(Self {
            agents: raw.agents,
            roles,
            difficulty: Difficulty::from_alpha(alpha),
            max_steps: raw.max_steps,
            width: raw.width,
            height: raw.height,
            signals: raw.signals,
            day_length: raw.day_length,
            coordination_probability: raw.coordination_probability,
            construction_sites: raw.construction_sites,
            scale_base_difficulty: raw.scale_base_difficulty,
            scoring: raw.scoring,
            specialisation: raw.specialisation,
            coordination_tasks,
        })
    }

    /// Food, drink and energy every agent starts with: full (9), or with
    /// `scale_base_difficulty` 9 × (1 − α/3) rounded (ALEM Table 4: 8, 7, 6 for easy,
    /// medium, hard).
    ///
    /// ```
    /// let mut s = mosaic_core::Settings::new();
    /// s.insert("preset".into(), "hard".into());
    /// assert_eq!(mosaic_coord::Config::from_settings(&s).unwrap().starting_needs(), 9);
    /// s.insert("scale_base_difficulty".into(), true.into());
    /// assert_eq!(mosaic_coord::Config::from_settings(&s).unwrap().starting_needs(), 6);
    /// ```
    pub fn starting_needs(&self) -> i32 {
        if self.scale_base_difficulty {
            (f64::from(super::state::VITAL_MAX) * self.difficulty.starting_resource_multiplier)
                .round() as i32
        } else {
            super::state::VITAL_MAX
        }
    }

    /// Success probability of a role-gated action by a non-specialist: 1 − α, or 1
    /// without specialisation.
    pub fn non_specialist_success(&self) -> f64 {
        if self.specialisation {
            self.difficulty.non_specialist_success
        } else {
            1.0
        }
    }

    /// Agents needed to craft a diamond tool.
    pub fn diamond_crafters(&self) -> usize {
        opportunity::DIAMOND_CRAFTING_AGENTS.min(self.agents)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, serde_json::Value)]) -> Settings {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn table_4_presets() {
        let rows = [(0.3, 9, 17, 0.7), (0.6, 5, 10, 0.4), (0.9, 3, 6, 0.1)];
        for (alpha, min, max, eff) in rows {
            let d = Difficulty::from_alpha(alpha);
            assert_eq!(d.handover_window_min, min, "alpha {alpha}");
            assert_eq!(d.handover_window_max, max, "alpha {alpha}");
            assert!((d.non_specialist_success - eff).abs() < 1e-9);
            assert!((d.soft_solo_fail_prob - alpha).abs() < 1e-9);
            assert!((d.p_all_agents - alpha).abs() < 1e-9);
        }
        let d = Difficulty::from_alpha(0.5);
        assert_eq!((d.handover_window_min, d.handover_window_max), (6, 12));
        for (alpha, health, resources) in [(0.3, 1.1, 0.9), (0.6, 1.2, 0.8), (0.9, 1.3, 0.7)] {
            let d = Difficulty::from_alpha(alpha);
            assert!((d.mob_health_multiplier - health).abs() < 1e-9);
            assert!((d.starting_resource_multiplier - resources).abs() < 1e-9);
        }
    }

    #[test]
    fn starting_needs_scale_only_with_base_difficulty() {
        for (preset, scaled) in [("easy", 8), ("medium", 7), ("hard", 6)] {
            let plain = settings(&[("preset", preset.into())]);
            assert_eq!(Config::from_settings(&plain).unwrap().starting_needs(), 9);
            let mut s = plain;
            s.insert("scale_base_difficulty".into(), true.into());
            assert_eq!(Config::from_settings(&s).unwrap().starting_needs(), scaled);
        }
    }

    #[test]
    fn calibration_settings() {
        let full = Config::from_settings(&Settings::new()).unwrap();
        assert!(full.specialisation && full.coordination_tasks);
        assert!((full.non_specialist_success() - 0.4).abs() < 1e-9);
        // One agent plays the base game: no coordination tasks unless asked (refused).
        let solo = Config::from_settings(&settings(&[("agents", 1.into())])).unwrap();
        assert_eq!((solo.agents, solo.roles.len()), (1, 1));
        assert!(!solo.coordination_tasks);
        let plain = Config::from_settings(&settings(&[
            ("preset", "hard".into()),
            ("specialisation", false.into()),
            ("coordination_tasks", false.into()),
        ]))
        .unwrap();
        assert!(!plain.coordination_tasks);
        assert_eq!(plain.non_specialist_success(), 1.0);
        assert_eq!(plain.difficulty.alpha, 0.9);
    }

    #[test]
    fn defaults_and_errors_name_the_setting() {
        let c = Config::from_settings(&Settings::new()).unwrap();
        assert_eq!(c.agents, 3);
        assert_eq!(c.roles, [Role::Warrior, Role::Forager, Role::Miner]);
        assert_eq!(c.difficulty.alpha, 0.6);
        assert_eq!(c.scoring, Scoring::Compact);
        let alem = Config::from_settings(&settings(&[("scoring", "alem".into())])).unwrap();
        assert_eq!(alem.scoring, Scoring::Alem);
        let bad = [
            settings(&[("agents", 5.into())]),
            settings(&[("alpha", 0.5.into()), ("preset", "easy".into())]),
            settings(&[("alpha", 1.5.into())]),
            settings(&[("roles", serde_json::json!(["miner"]))]),
            settings(&[("width", 8.into())]),
            settings(&[("signals", 9.into())]),
            settings(&[("preset", "brutal".into())]),
            settings(&[("colour", "red".into())]),
            settings(&[("scoring", "craftax".into())]),
            settings(&[("agents", 1.into()), ("coordination_tasks", true.into())]),
        ];
        let names = [
            "agents",
            "alpha",
            "alpha",
            "roles",
            "width",
            "signals",
            "brutal",
            "colour",
            "craftax",
            "coordination_tasks",
        ];
        for (s, name) in bad.iter().zip(names) {
            let err = Config::from_settings(s).unwrap_err();
            assert!(
                err.path == name || err.message.contains(name),
                "{name}: {err}"
            );
        }
    }
}
