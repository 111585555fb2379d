//! Team sizes: the reference's solo (1v0 and 0v1), 1v1, 2v2 and 3v3 variants.

use serde::{Deserialize, Serialize};
use std::ops::Range;

/// The most players a lineup fields (3v3).
pub const MAX_AGENTS: usize = 6;

/// Who plays: how many green and blue players take the pitch. Agents are numbered green
/// first, then blue, as the reference's `agents_index` lists them, and named
/// `<team>_<k>` with `k` counting within the team.
///
/// ```
/// use mosaic_soccer::Lineup;
/// let solo = Lineup::from_name("soccer-1v0").unwrap();
/// assert_eq!(solo.agent_ids(), ["green_0"]);
/// assert_eq!(solo.reference_id(), "MosaicMultiGrid-S-G-1v0-v1");
/// assert_eq!(Lineup::ThreeOnThree.team_of(3), 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Lineup {
    /// One green player and no opponent (`soccer-1v0`): curriculum pre-training.
    Solo,
    /// One player a side (`soccer-1v1`).
    OneOnOne,
    /// Two players a side (`soccer-2v2`).
    #[default]
    TwoOnTwo,
    /// Three players a side (`soccer-3v3`).
    ThreeOnThree,
    /// One blue player and no opponent (`soccer-0v1`): curriculum pre-training on the
    /// blue side, scoring on green's goal.
    SoloBlue,
}

impl Lineup {
    /// Every lineup, in registry order.
    pub const ALL: [Lineup; 5] = [
        Lineup::Solo,
        Lineup::OneOnOne,
        Lineup::TwoOnTwo,
        Lineup::ThreeOnThree,
        Lineup::SoloBlue,
    ];

    /// The registered environment name, e.g. `soccer-2v2`.
    pub const fn name(self) -> &'static str {
        match self {
            Lineup::Solo => "soccer-1v0",
            Lineup::OneOnOne => "soccer-1v1",
            Lineup::TwoOnTwo => "soccer-2v2",
            Lineup::ThreeOnThree => "soccer-3v3",
            Lineup::SoloBlue => "soccer-0v1",
        }
    }

    /// The Gymnasium id of the `mosaic-multigrid` 7.0.0 environment it re-implements.
    pub const fn reference_id(self) -> &'static str {
        match self {
            Lineup::Solo => "MosaicMultiGrid-S-G-1v0-v1",
            Lineup::OneOnOne => "MosaicMultiGrid-S-1v1-IndAgObs-v1",
            Lineup::TwoOnTwo => "MosaicMultiGrid-S-2v2-IndAgObs-v1",
            Lineup::ThreeOnThree => "MosaicMultiGrid-S-3v3-IndAgObs-v1",
            Lineup::SoloBlue => "MosaicMultiGrid-S-B-0v1-v1",
        }
    }

    /// The lineup registered as `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|lineup| lineup.name() == name)
    }

    /// Players per team, green then blue.
    pub const fn team_sizes(self) -> [usize; 2] {
        match self {
            Lineup::Solo => [1, 0],
            Lineup::OneOnOne => [1, 1],
            Lineup::TwoOnTwo => [2, 2],
            Lineup::ThreeOnThree => [3, 3],
            Lineup::SoloBlue => [0, 1],
        }
    }

    /// Number of players.
    pub const fn agents(self) -> usize {
        let [green, blue] = self.team_sizes();
        green + blue
    }

    /// Agent slot names, in index order.
    pub const fn agent_ids(self) -> &'static [&'static str] {
        match self {
            Lineup::Solo => &["green_0"],
            Lineup::OneOnOne => &["green_0", "blue_0"],
            Lineup::TwoOnTwo => &["green_0", "green_1", "blue_0", "blue_1"],
            Lineup::ThreeOnThree => &[
                "green_0", "green_1", "green_2", "blue_0", "blue_1", "blue_2",
            ],
            Lineup::SoloBlue => &["blue_0"],
        }
    }

    /// The team (0 green, 1 blue) of `agent`.
    pub const fn team_of(self, agent: usize) -> usize {
        if agent < self.team_sizes()[0] { 0 } else { 1 }
    }

    /// The agents of `team`.
    pub const fn members(self, team: usize) -> Range<usize> {
        let [green, blue] = self.team_sizes();
        if team == 0 {
            0..green
        } else {
            green..green + blue
        }
    }

    /// Whether both teams take the pitch (every lineup but the solo ones).
    pub const fn has_opponents(self) -> bool {
        let [green, blue] = self.team_sizes();
        green > 0 && blue > 0
    }

    /// "2v2", "1v0": how the rules text names the lineup.
    pub const fn short_name(self) -> &'static str {
        match self {
            Lineup::Solo => "1v0",
            Lineup::OneOnOne => "1v1",
            Lineup::TwoOnTwo => "2v2",
            Lineup::ThreeOnThree => "3v3",
            Lineup::SoloBlue => "0v1",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lineups_match_the_reference_variants() {
        for lineup in Lineup::ALL {
            assert_eq!(Lineup::from_name(lineup.name()), Some(lineup));
            assert_eq!(lineup.agent_ids().len(), lineup.agents());
            assert!(lineup.agents() <= MAX_AGENTS);
            assert!(lineup.name().ends_with(lineup.short_name()));
            for (agent, id) in lineup.agent_ids().iter().enumerate() {
                let team = lineup.team_of(agent);
                assert!(id.starts_with(["green", "blue"][team]), "{id}");
                assert!(lineup.members(team).contains(&agent));
            }
        }
        assert_eq!(Lineup::from_name("soccer-4v4"), None);
        assert_eq!(Lineup::TwoOnTwo.members(1), 2..4);
        assert_eq!(Lineup::Solo.members(1), 1..1);
        assert!(!Lineup::Solo.has_opponents() && Lineup::OneOnOne.has_opponents());
        assert!(!Lineup::SoloBlue.has_opponents());
        assert_eq!(Lineup::SoloBlue.team_of(0), 1);
        assert_eq!(Lineup::SoloBlue.members(0), 0..0);
    }
}
