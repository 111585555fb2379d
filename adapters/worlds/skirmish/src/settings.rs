//! Settings of `skirmish`, read from experiment files: a scenario preset, optionally
//! refined setting by setting.

use crate::units::{Race, UnitType};
use mosaic_core::Settings;
use mosaic_core::entity_memory::{MAX_AGENTS, MemoryConfig};
use mosaic_core::experiment::{SpecError, parse_settings};
use serde::{Deserialize, Serialize};

/// Largest team: both teams together stay within the entity memory's agent limit.
pub const MAX_TEAM: usize = 32;
const _: () = assert!(2 * MAX_TEAM <= MAX_AGENTS);

/// The `settings` lines shown by `mosaic envs`.
pub const SETTINGS_HELP: &[&str] = &[
    "scenario = \"protoss_5_vs_5\": <race>_<n>_vs_<m> with race protoss, terran or zerg and n_vs_m one of 5_vs_5, 10_vs_10, 5_vs_6, 10_vs_11",
    "race = <scenario>: protoss, terran or zerg (SMACv2's unit pool and weights)",
    "unit_types = [...]: a custom pool instead of the race's, e.g. [\"marine\", \"stalker\"]",
    "weights = [...]: sampling weights of unit_types (uniform when left out)",
    "blue_units = <scenario>: size of team blue (agents blue_0..), 1-32",
    "red_units = <scenario>: size of team red (agents red_0..), 1-32",
    "start_positions = \"surrounded_and_reflect\": or \"surrounded\" or \"reflect\"",
    "surrounded_probability = 0.5: chance of a surrounded start with surrounded_and_reflect",
    "max_steps = 200: steps before truncation (SMACv2's episode limit)",
    "reward = \"shaped\": SMAC's shaped reward (an episode sums to at most 20) or \"sparse\" (+1 win, -1 loss)",
    "extended_po = \"none\": teams under extended partial observability (an enemy stays visible only to its first spotter): none, blue, red or both",
    "max_hops = 3: edges a sighting travels in the team's entity memory (0: local information only)",
    "memory_max_age = 10: steps a remembered entity is kept without a fresh sighting",
    "map_size = 32: side of the square map",
    "walls_kill = false: units touching the map edge die (SMAX's rule)",
];

/// How start positions are drawn (SMACv2's distributions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartPositions {
    /// Blue in the centre, red in up to four groups on the diagonals.
    Surrounded,
    /// Blue uniformly on the west half, red mirrored on the east half.
    Reflect,
    /// Surrounded with `surrounded_probability`, else reflect.
    SurroundedAndReflect,
}

/// The reward signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewardKind {
    /// Damage, kills and the win bonus, scaled so that an episode sums to at most 20.
    Shaped,
    /// +1 for a win, -1 for a loss, 0 otherwise.
    Sparse,
}

/// Which teams play under extended partial observability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtendedPo {
    /// Nobody: every unit sees every enemy within its sight range.
    None,
    /// Team blue only.
    Blue,
    /// Team red only.
    Red,
    /// Both teams.
    Both,
}

impl ExtendedPo {
    /// Whether `team` (0 blue, 1 red) is under extended partial observability.
    pub fn applies_to(self, team: usize) -> bool {
        matches!(
            (self, team),
            (ExtendedPo::Both, _) | (ExtendedPo::Blue, 0) | (ExtendedPo::Red, 1)
        )
    }
}

/// The team sizes of the presets.
const PRESET_SIZES: [(usize, usize); 4] = [(5, 5), (10, 10), (5, 6), (10, 11)];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    #[serde(default)]
    scenario: Option<String>,
    #[serde(default)]
    race: Option<Race>,
    #[serde(default)]
    unit_types: Option<Vec<UnitType>>,
    #[serde(default)]
    weights: Option<Vec<f64>>,
    #[serde(default)]
    blue_units: Option<usize>,
    #[serde(default)]
    red_units: Option<usize>,
    #[serde(default = "default_start_positions")]
    start_positions: StartPositions,
    #[serde(default = "default_surrounded_probability")]
    surrounded_probability: f64,
    #[serde(default = "default_max_steps")]
    max_steps: u32,
    #[serde(default = "default_reward")]
    reward: RewardKind,
    #[serde(default = "default_extended_po")]
    extended_po: ExtendedPo,
    #[serde(default = "default_max_hops")]
    max_hops: u32,
    #[serde(default = "default_memory_max_age")]
    memory_max_age: u32,
    #[serde(default = "default_map_size")]
    map_size: f32,
    #[serde(default)]
    walls_kill: bool,
}

fn default_start_positions() -> StartPositions {
    StartPositions::SurroundedAndReflect
}
fn default_surrounded_probability() -> f64 {
    0.5
}
fn default_max_steps() -> u32 {
    200
}
fn default_reward() -> RewardKind {
    RewardKind::Shaped
}
fn default_extended_po() -> ExtendedPo {
    ExtendedPo::None
}
fn default_max_hops() -> u32 {
    MemoryConfig::default().max_hops
}
fn default_memory_max_age() -> u32 {
    MemoryConfig::default().max_age
}
fn default_map_size() -> f32 {
    32.0
}

/// The validated configuration of one skirmish.
///
/// ```
/// use mosaic_skirmish::{Config, ExtendedPo, UnitType};
/// let mut raw = mosaic_core::Settings::new();
/// raw.insert("scenario".into(), "zerg_10_vs_11".into());
/// raw.insert("extended_po".into(), "blue".into());
/// let config = Config::from_settings(&raw).unwrap();
/// assert_eq!(config.teams, [10, 11]);
/// assert_eq!(config.pool[2].0, UnitType::Baneling);
/// assert_eq!(config.extended_po, ExtendedPo::Blue);
/// raw.insert("scenario".into(), "zerg_7_vs_3".into());
/// assert!(Config::from_settings(&raw).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The scenario's name: the preset's, or one built from race and sizes.
    pub scenario: String,
    /// Unit types and their sampling weights (positive, summing to 1).
    pub pool: Vec<(UnitType, f64)>,
    /// Units of team blue and team red.
    pub teams: [usize; 2],
    /// How start positions are drawn.
    pub start_positions: StartPositions,
    /// Chance of a surrounded start under [`StartPositions::SurroundedAndReflect`].
    pub surrounded_probability: f64,
    /// Steps before truncation.
    pub max_steps: u32,
    /// The reward signal.
    pub reward: RewardKind,
    /// Teams under extended partial observability.
    pub extended_po: ExtendedPo,
    /// The teams' entity memory.
    pub memory: MemoryConfig,
    /// Side of the square map.
    pub map_size: f32,
    /// Units touching the map edge die.
    pub walls_kill: bool,
}

impl Default for Config {
    /// `protoss_5_vs_5` with every default.
    fn default() -> Self {
        Self::from_settings(&Settings::new()).unwrap_or_else(|_| unreachable!())
    }
}

/// Reads `protoss_5_vs_6` as (race, 5, 6) when it names a preset.
fn parse_scenario(name: &str) -> Option<(Race, usize, usize)> {
    let mut parts = name.split('_');
    let head = parts.next()?;
    let race = Race::ALL.into_iter().find(|r| r.name() == head)?;
    let blue = parts.next()?.parse().ok()?;
    let red = (parts.next() == Some("vs"))
        .then(|| parts.next()?.parse().ok())
        .flatten()?;
    (parts.next().is_none() && PRESET_SIZES.contains(&(blue, red))).then_some((race, blue, red))
}

impl Config {
    /// The names of every preset.
    pub fn presets() -> Vec<String> {
        Race::ALL
            .iter()
            .flat_map(|race| {
                PRESET_SIZES
                    .iter()
                    .map(move |(b, r)| format!("{}_{b}_vs_{r}", race.name()))
            })
            .collect()
    }

    /// Reads and checks settings; errors name the offending setting.
    pub fn from_settings(settings: &Settings) -> Result<Self, SpecError> {
        let raw: RawSettings = parse_settings(settings)?;
        let (mut race, mut blue, mut red) = (Race::Protoss, 5, 5);
        if let Some(name) = &raw.scenario {
            (race, blue, red) = parse_scenario(name).ok_or_else(|| {
                SpecError::new(
                    "scenario",
                    format!(
                        "unknown scenario `{name}` (known: {})",
                        Self::presets().join(", ")
                    ),
                )
            })?;
        }
        race = raw.race.unwrap_or(race);
        blue = raw.blue_units.unwrap_or(blue);
        red = raw.red_units.unwrap_or(red);
        let pool = match (raw.unit_types, raw.weights) {
            (None, None) => race.pool().to_vec(),
            (None, Some(_)) => {
                return Err(SpecError::new("weights", "weights need unit_types"));
            }
            (Some(types), weights) => custom_pool(types, weights)?,
        };
        let custom = pool
            .iter()
            .any(|(t, _)| !race.pool().iter().any(|(r, _)| r == t));
        let scenario = match (&raw.scenario, custom) {
            (Some(name), false) if parse_scenario(name) == Some((race, blue, red)) => name.clone(),
            (_, false) => format!("{}_{blue}_vs_{red}", race.name()),
            (_, true) => format!("custom_{blue}_vs_{red}"),
        };
        let config = Self {
            scenario,
            pool,
            teams: [blue, red],
            start_positions: raw.start_positions,
            surrounded_probability: raw.surrounded_probability,
            max_steps: raw.max_steps,
            reward: raw.reward,
            extended_po: raw.extended_po,
            memory: MemoryConfig {
                max_hops: raw.max_hops,
                max_age: raw.memory_max_age,
            },
            map_size: raw.map_size,
            walls_kill: raw.walls_kill,
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks every value is in range.
    pub fn validate(&self) -> Result<(), SpecError> {
        for (team, size) in ["blue_units", "red_units"].iter().zip(self.teams) {
            if size == 0 || size > MAX_TEAM {
                return Err(SpecError::new(
                    *team,
                    format!("must be between 1 and {MAX_TEAM}, got {size}"),
                ));
            }
        }
        if self.pool.is_empty() || self.pool.iter().all(|(t, _)| t.is_exception()) {
            return Err(SpecError::new(
                "unit_types",
                "needs at least one type that can fight alone (not only medivacs and banelings)",
            ));
        }
        let total: f64 = self.pool.iter().map(|(_, w)| w).sum();
        if self.pool.iter().any(|(_, w)| !w.is_finite() || *w < 0.0) || (total - 1.0).abs() > 1e-9 {
            return Err(SpecError::new(
                "weights",
                "must be non-negative and sum to 1",
            ));
        }
        if !(0.0..=1.0).contains(&self.surrounded_probability) {
            return Err(SpecError::new(
                "surrounded_probability",
                "must be in [0, 1]",
            ));
        }
        if self.max_steps == 0 {
            return Err(SpecError::new("max_steps", "must be at least 1"));
        }
        if !(8.0..=256.0).contains(&self.map_size) {
            return Err(SpecError::new("map_size", "must be between 8 and 256"));
        }
        Ok(())
    }

    /// Number of units in play.
    pub fn units(&self) -> usize {
        self.teams[0] + self.teams[1]
    }

    /// Target slots of the action space: enough for every enemy and for every friend a
    /// medivac may heal (SMAC's 6 + number of enemies when the enemy team is the larger).
    pub fn targets(&self) -> usize {
        self.teams[0].max(self.teams[1])
    }

    /// Position of `kind` in the pool (its bit in unit-type one-hots).
    pub fn type_bit(&self, kind: UnitType) -> usize {
        self.pool.iter().position(|(t, _)| *t == kind).unwrap_or(0)
    }
}

/// A pool from explicit types and optional weights (uniform when absent), normalised.
fn custom_pool(
    types: Vec<UnitType>,
    weights: Option<Vec<f64>>,
) -> Result<Vec<(UnitType, f64)>, SpecError> {
    if types.is_empty() {
        return Err(SpecError::new("unit_types", "must name at least one type"));
    }
    if types
        .iter()
        .enumerate()
        .any(|(i, t)| types[..i].contains(t))
    {
        return Err(SpecError::new("unit_types", "lists a type twice"));
    }
    let weights = weights.unwrap_or_else(|| vec![1.0; types.len()]);
    if weights.len() != types.len() {
        return Err(SpecError::new(
            "weights",
            format!("{} weights for {} unit types", weights.len(), types.len()),
        ));
    }
    let total: f64 = weights.iter().sum();
    if weights.iter().any(|w| !w.is_finite() || *w < 0.0) || total <= 0.0 {
        return Err(SpecError::new(
            "weights",
            "must be non-negative with a positive sum",
        ));
    }
    Ok(types
        .into_iter()
        .zip(weights.into_iter().map(|w| w / total))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, serde_json::Value)]) -> Settings {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn defaults_are_smacv2_protoss_5_vs_5() {
        let c = Config::default();
        assert_eq!(c.scenario, "protoss_5_vs_5");
        assert_eq!(c.teams, [5, 5]);
        assert_eq!(c.max_steps, 200);
        assert_eq!(c.reward, RewardKind::Shaped);
        assert_eq!(
            c.memory,
            MemoryConfig {
                max_hops: 3,
                max_age: 10
            }
        );
        assert_eq!(c.start_positions, StartPositions::SurroundedAndReflect);
        assert_eq!(Config::presets().len(), 12);
        for preset in Config::presets() {
            let c = Config::from_settings(&raw(&[("scenario", preset.clone().into())])).unwrap();
            assert_eq!(c.scenario, preset);
        }
    }

    #[test]
    fn settings_refine_presets() {
        let c = Config::from_settings(&raw(&[
            ("scenario", "terran_5_vs_6".into()),
            ("red_units", 7.into()),
        ]))
        .unwrap();
        assert_eq!((c.teams, c.scenario.as_str()), ([5, 7], "terran_5_vs_7"));
        let c = Config::from_settings(&raw(&[
            ("unit_types", serde_json::json!(["marine", "stalker"])),
            ("weights", serde_json::json!([3, 1])),
        ]))
        .unwrap();
        assert_eq!(
            c.pool,
            vec![(UnitType::Marine, 0.75), (UnitType::Stalker, 0.25)]
        );
        assert_eq!(c.scenario, "custom_5_vs_5");
    }

    #[test]
    fn bad_values_name_the_setting() {
        for (key, value, path) in [
            ("scenario", serde_json::json!("protoss_4_vs_4"), "scenario"),
            ("blue_units", serde_json::json!(0), "blue_units"),
            ("red_units", serde_json::json!(33), "red_units"),
            ("unit_types", serde_json::json!(["medivac"]), "unit_types"),
            ("unit_types", serde_json::json!([]), "unit_types"),
            ("weights", serde_json::json!([1.0]), "weights"),
            (
                "surrounded_probability",
                serde_json::json!(1.5),
                "surrounded_probability",
            ),
            ("max_steps", serde_json::json!(0), "max_steps"),
            ("map_size", serde_json::json!(4), "map_size"),
        ] {
            let err = Config::from_settings(&raw(&[(key, value)])).unwrap_err();
            assert_eq!(err.path, path, "{key}: {err}");
        }
        let err = Config::from_settings(&raw(&[("max_hop", 2.into())])).unwrap_err();
        assert!(err.message.contains("max_hop"), "{err}");
        let err = Config::from_settings(&raw(&[(
            "unit_types",
            serde_json::json!(["marine", "marine"]),
        )]))
        .unwrap_err();
        assert_eq!(err.path, "unit_types");
    }
}
