//! Settings of the soccer environment, read from experiment files.

use mosaic_core::Settings;
use mosaic_core::experiment::{SpecError, parse_settings};
use serde::{Deserialize, Serialize};

/// The largest accepted view: from any cell it already covers the whole pitch.
pub const MAX_VIEW_SIZE: u32 = 31;

/// What the symbolic observation holds (the `observation` setting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObservationMode {
    /// Global features (positions, ball, goals, score) then the egocentric view: the layout
    /// of [`crate::SymbolicLayout`]. Its length depends on the team sizes.
    #[default]
    Mosaic,
    /// Exactly the reference's per-agent observation dict (`image` and `direction`),
    /// flattened as [`crate::reference`] documents. Its length depends on the view only,
    /// so one policy plays every team size.
    Reference,
}

impl ObservationMode {
    fn is_mosaic(&self) -> bool {
        *self == ObservationMode::Mosaic
    }
}

/// Settings of the soccer environments. Defaults are those of the reference's variants
/// (`MosaicMultiGrid-S-2v2-IndAgObs-v1` and its 1v0, 1v1 and 3v3 siblings).
///
/// ```
/// use mosaic_soccer::SoccerSettings;
/// let mut raw = mosaic_core::Settings::new();
/// raw.insert("view_size".into(), 7.into());
/// let settings = SoccerSettings::parse(&raw).unwrap();
/// assert_eq!((settings.view_size, settings.max_steps), (7, 256));
/// raw.insert("view_size".into(), 4.into());
/// assert!(SoccerSettings::parse(&raw).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SoccerSettings {
    /// Side of the square egocentric view, odd, 3 to 31.
    pub view_size: u32,
    /// Goals a team needs to win (the episode terminates then).
    pub goals_to_win: u32,
    /// Steps after which the episode is truncated.
    pub max_steps: u32,
    /// Steps during which both the stealer and its victim cannot steal after a steal.
    pub steal_cooldown: u32,
    /// Dense shaping rewards of the reference: +0.3 per steal and ±0.01 per cell moved
    /// towards/away from the ball (not carrying) or the opponent goal (carrying).
    pub reward_shaping: bool,
    /// What the symbolic observation holds.
    // Left out of snapshots while at its default, so they stay as they were before it.
    #[serde(skip_serializing_if = "ObservationMode::is_mosaic")]
    pub observation: ObservationMode,
}

impl Default for SoccerSettings {
    fn default() -> Self {
        Self {
            view_size: 3,
            goals_to_win: 2,
            max_steps: 256,
            steal_cooldown: 10,
            reward_shaping: true,
            observation: ObservationMode::Mosaic,
        }
    }
}

impl SoccerSettings {
    /// Reads and validates settings; an unknown or out-of-range setting is an error naming it.
    pub fn parse(settings: &Settings) -> Result<Self, SpecError> {
        let parsed: Self = parse_settings(settings)?;
        parsed.validate()?;
        Ok(parsed)
    }

    /// Checks every value is in range.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.view_size < 3 || self.view_size % 2 == 0 || self.view_size > MAX_VIEW_SIZE {
            return Err(SpecError::new(
                "view_size",
                format!(
                    "must be odd and between 3 and {MAX_VIEW_SIZE}, got {}",
                    self.view_size
                ),
            ));
        }
        if self.goals_to_win == 0 {
            return Err(SpecError::new("goals_to_win", "must be at least 1"));
        }
        if self.max_steps == 0 {
            return Err(SpecError::new("max_steps", "must be at least 1"));
        }
        Ok(())
    }
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
    fn defaults_match_the_reference_env() {
        let s = SoccerSettings::parse(&Settings::new()).unwrap();
        assert_eq!(s, SoccerSettings::default());
        assert_eq!(
            (s.view_size, s.goals_to_win, s.max_steps, s.steal_cooldown),
            (3, 2, 256, 10)
        );
        assert!(s.reward_shaping);
    }

    #[test]
    fn bad_values_name_the_setting() {
        for (key, value) in [
            ("view_size", serde_json::json!(2)),
            ("view_size", serde_json::json!(5 + MAX_VIEW_SIZE)),
            ("goals_to_win", serde_json::json!(0)),
            ("max_steps", serde_json::json!(0)),
        ] {
            let err = SoccerSettings::parse(&raw(&[(key, value)])).unwrap_err();
            assert_eq!(err.path, key);
        }
        let err = SoccerSettings::parse(&raw(&[("max_step", serde_json::json!(5))])).unwrap_err();
        assert!(err.message.contains("max_step"), "{err:?}");
        let err =
            SoccerSettings::parse(&raw(&[("view_size", serde_json::json!("big"))])).unwrap_err();
        assert!(err.message.contains("big"), "{err:?}");
        let err = SoccerSettings::parse(&raw(&[("observation", serde_json::json!("pixels"))]))
            .unwrap_err();
        assert!(err.message.contains("pixels"), "{err:?}");
    }

    #[test]
    fn observation_mode_is_read_and_left_out_of_snapshots_at_its_default() {
        let reference =
            SoccerSettings::parse(&raw(&[("observation", serde_json::json!("reference"))]))
                .unwrap();
        assert_eq!(reference.observation, ObservationMode::Reference);
        let json = serde_json::to_string(&SoccerSettings::default()).unwrap();
        assert!(!json.contains("observation"), "{json}");
        let json = serde_json::to_string(&reference).unwrap();
        assert!(json.contains(r#""observation":"reference""#), "{json}");
    }
}
