//! How achievements are scored: the compact scale (every achievement the world has is
//! worth 1), ALEM's (its 93 achievements, 27 of them coordination, worth 1, 3, 5 or 8
//! by tier; per-agent maxima base 217, coordination 159, total 376; ALEM App. H.2 and
//! Table 8) or ALEM-Lite's (the 57 of them ALEM counts on its overworld; maxima 38 and
//! 159).
//!
//! ALEM counts achievements of parts this world lacks (further floors, armour, bows,
//! torches, magic, beacons); they stay in the list and in the maxima, unreachable, so
//! that percentages are on ALEM's scale ([`AlemAchievement::world`] is `None` for them).

use super::types::{Achievement, Role};
use serde::{Deserialize, Serialize};

/// Which scale rewards and the `*_pct` metrics use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scoring {
    /// Every achievement of this world is worth 1 (Craftax-Classic's convention).
    #[default]
    Compact,
    /// ALEM's achievement list, tier weights and maxima (217 and 159, as in its paper).
    Alem,
    /// ALEM-Lite's (ALEM's one-level variant): the same weights over the achievements
    /// ALEM counts as reachable on its overworld (maxima 38 and 159).
    AlemLite,
}

impl Scoring {
    /// The ALEM achievements this scale lists (none on the compact scale).
    pub fn alem_list(self) -> impl Iterator<Item = &'static AlemAchievement> {
        ALEM_ACHIEVEMENTS.iter().filter(move |e| match self {
            Scoring::Compact => false,
            Scoring::Alem => true,
            Scoring::AlemLite => e.on_overworld(),
        })
    }
}

/// Craftax's achievement tiers, which ALEM keeps for its coordination achievements too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Worth 1.
    Basic,
    /// Worth 3.
    Intermediate,
    /// Worth 5.
    Advanced,
    /// Worth 8.
    VeryAdvanced,
}

impl Tier {
    /// Every tier, easiest first.
    pub const ALL: [Tier; 4] = [
        Tier::Basic,
        Tier::Intermediate,
        Tier::Advanced,
        Tier::VeryAdvanced,
    ];

    /// The reward of an achievement of this tier.
    pub fn reward(self) -> u32 {
        match self {
            Tier::Basic => 1,
            Tier::Intermediate => 3,
            Tier::Advanced => 5,
            Tier::VeryAdvanced => 8,
        }
    }

    /// Name used in metrics.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Basic => "basic",
            Tier::Intermediate => "intermediate",
            Tier::Advanced => "advanced",
            Tier::VeryAdvanced => "very_advanced",
        }
    }
}

/// ALEM's categories of coordination achievements (the rows of its coverage diagnostic,
/// Fig. 5A, and of its `*_coord_reward_pct_of_max` metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoordType {
    /// Soft synchronous: a solo attempt may work, a joint one earns the bonus
    /// (`coord_2_agents_soft`, `coord_3_agents_soft`, `coord_mine_<resource>_soft`).
    Soft,
    /// Hard synchronous: nothing happens without enough agents (`*_hard`, the elite and
    /// large kills, joint diamond crafting).
    SyncHard,
    /// Handovers (`handover_complete`, `coord_mine_handover`).
    Handover,
    /// Building at construction sites, jointly or by handover (`coord_build_*`).
    Construction,
}

impl CoordType {
    /// Every type, in metric order.
    pub const ALL: [CoordType; 4] = [
        CoordType::Soft,
        CoordType::SyncHard,
        CoordType::Handover,
        CoordType::Construction,
    ];

    /// Name used in metrics.
    pub fn name(self) -> &'static str {
        match self {
            CoordType::Soft => "soft",
            CoordType::SyncHard => "sync_hard",
            CoordType::Handover => "handover",
            CoordType::Construction => "construction",
        }
    }

    /// The type of one of this world's coordination achievements (`None` for base
    /// achievements).
    pub fn of(achievement: Achievement) -> Option<CoordType> {
        use Achievement::*;
        Some(match achievement {
            Coord2AgentsSoft | CoordTeamSoft | CoordMineWoodSoft | CoordMineStoneSoft
            | CoordMineCoalSoft | CoordMineIronSoft | CoordMineDiamondSoft => CoordType::Soft,
            Coord2AgentsHard
            | CoordTeamHard
            | CoordMineWoodHard
            | CoordMineStoneHard
            | CoordMineCoalHard
            | CoordMineIronHard
            | CoordMineDiamondHard
            | CoordEliteMeleeKill
            | CoordEliteRangedKill
            | CoordLargePassiveKill
            | CoordDiamondPickaxe
            | CoordDiamondSword => CoordType::SyncHard,
            CoordMineHandover | HandoverComplete => CoordType::Handover,
            CoordBuildShelter | CoordBuildForge => CoordType::Construction,
            _ => return None,
        })
    }
}

/// One of ALEM's 93 achievements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlemAchievement {
    /// ALEM's name (its spelling, e.g. `defeat_orc_solider`).
    pub name: &'static str,
    /// Its tier, hence its reward.
    pub tier: Tier,
    /// The coordination type of a coordination achievement; `None` for base ones.
    pub coordination: Option<CoordType>,
    /// This world's achievement that earns it; `None` when the world lacks the part it
    /// needs.
    pub world: Option<Achievement>,
}

impl AlemAchievement {
    /// Whether ALEM-Lite counts it: every coordination achievement, every basic one, and
    /// the iron and diamond gear crafted on the overworld.
    pub fn on_overworld(&self) -> bool {
        self.coordination.is_some()
            || self.tier == Tier::Basic
            || matches!(
                self.name,
                "make_diamond_pickaxe"
                    | "make_diamond_sword"
                    | "make_iron_armour"
                    | "make_diamond_armour"
            )
    }

    /// The role whose soft-gated actions earn this achievement (ALEM's role map behind
    /// its aligned and cross-role achievements, Fig. 14); `None` for shared ones.
    pub fn specialty(&self) -> Option<Role> {
        match self.name {
            "collect_sapling" | "collect_drink" | "collect_food" | "eat_cow" | "eat_bat"
            | "eat_snail" => Some(Role::Forager),
            "make_stone_sword" | "make_iron_sword" | "make_diamond_sword" | "make_arrow"
            | "find_bow" | "enchant_sword" => Some(Role::Warrior),
            "make_wood_pickaxe"
            | "make_stone_pickaxe"
            | "make_iron_pickaxe"
            | "make_diamond_pickaxe"
            | "make_torch"
            | "place_stone" => Some(Role::Miner),
            _ => None,
        }
    }
}

const fn entry(
    name: &'static str,
    tier: Tier,
    coordination: Option<CoordType>,
    world: Option<Achievement>,
) -> AlemAchievement {
    AlemAchievement {
        name,
        tier,
        coordination,
        world,
    }
}

/// ALEM's achievement list (its order: base by tier, then coordination by tier).
pub const ALEM_ACHIEVEMENTS: [AlemAchievement; 93] = {
    use Achievement as A;
    use CoordType as C;
    use Tier::*;
    const NONE: Option<CoordType> = None;
    [
        entry("collect_wood", Basic, NONE, Some(A::CollectWood)),
        entry("place_table", Basic, NONE, Some(A::PlaceTable)),
        entry("eat_cow", Basic, NONE, Some(A::EatCow)),
        entry("collect_sapling", Basic, NONE, Some(A::CollectSapling)),
        entry("collect_drink", Basic, NONE, Some(A::CollectDrink)),
        // ALEM grants it for eating a passive mob, as eat_cow.
        entry("collect_food", Basic, NONE, Some(A::EatCow)),
        entry("make_wood_pickaxe", Basic, NONE, Some(A::MakeWoodPickaxe)),
        entry("make_wood_sword", Basic, NONE, Some(A::MakeWoodSword)),
        entry("place_plant", Basic, NONE, Some(A::PlacePlant)),
        entry("defeat_zombie", Basic, NONE, Some(A::DefeatZombie)),
        entry("collect_stone", Basic, NONE, Some(A::CollectStone)),
        entry("place_stone", Basic, NONE, Some(A::PlaceStone)),
        entry("eat_plant", Basic, NONE, Some(A::EatPlant)),
        entry("defeat_skeleton", Basic, NONE, Some(A::DefeatSkeleton)),
        entry("make_stone_pickaxe", Basic, NONE, Some(A::MakeStonePickaxe)),
        entry("make_stone_sword", Basic, NONE, Some(A::MakeStoneSword)),
        entry("wake_up", Basic, NONE, Some(A::WakeUp)),
        entry("place_furnace", Basic, NONE, Some(A::PlaceFurnace)),
        entry("collect_coal", Basic, NONE, Some(A::CollectCoal)),
        entry("collect_iron", Basic, NONE, Some(A::CollectIron)),
        entry("collect_diamond", Basic, NONE, Some(A::CollectDiamond)),
        entry("make_iron_pickaxe", Basic, NONE, Some(A::MakeIronPickaxe)),
        entry("make_iron_sword", Basic, NONE, Some(A::MakeIronSword)),
        entry("make_arrow", Basic, NONE, None),
        entry("make_torch", Basic, NONE, None),
        entry("place_torch", Basic, NONE, None),
        entry("collect_sapphire", Intermediate, NONE, None),
        entry("collect_ruby", Intermediate, NONE, None),
        // Crafting a diamond tool (jointly, at a forge) earns both ALEM's base and its
        // coordination achievement.
        entry(
            "make_diamond_pickaxe",
            Intermediate,
            NONE,
            Some(A::CoordDiamondPickaxe),
        ),
        entry(
            "make_diamond_sword",
            Intermediate,
            NONE,
            Some(A::CoordDiamondSword),
        ),
        entry("make_iron_armour", Intermediate, NONE, None),
        entry("make_diamond_armour", Intermediate, NONE, None),
        entry("enter_gnomish_mines", Intermediate, NONE, None),
        entry("enter_dungeon", Intermediate, NONE, None),
        entry("defeat_gnome_warrior", Intermediate, NONE, None),
        entry("defeat_gnome_archer", Intermediate, NONE, None),
        entry("defeat_orc_solider", Intermediate, NONE, None),
        entry("defeat_orc_mage", Intermediate, NONE, None),
        entry("eat_bat", Intermediate, NONE, None),
        entry("eat_snail", Intermediate, NONE, None),
        entry("find_bow", Intermediate, NONE, None),
        entry("fire_bow", Intermediate, NONE, None),
        entry("open_chest", Intermediate, NONE, None),
        entry("drink_potion", Intermediate, NONE, None),
        entry("enter_sewers", Advanced, NONE, None),
        entry("enter_vault", Advanced, NONE, None),
        entry("enter_troll_mines", Advanced, NONE, None),
        entry("defeat_lizard", Advanced, NONE, None),
        entry("defeat_kobold", Advanced, NONE, None),
        entry("defeat_knight", Advanced, NONE, None),
        entry("defeat_archer", Advanced, NONE, None),
        entry("defeat_troll", Advanced, NONE, None),
        entry("defeat_deep_thing", Advanced, NONE, None),
        entry("learn_spell", Advanced, NONE, None),
        entry("cast_spell", Advanced, NONE, None),
        entry("enchant_sword", Advanced, NONE, None),
        entry("enchant_armour", Advanced, NONE, None),
        entry("enter_fire_realm", VeryAdvanced, NONE, None),
        entry("enter_ice_realm", VeryAdvanced, NONE, None),
        entry("enter_graveyard", VeryAdvanced, NONE, None),
        entry("defeat_pigman", VeryAdvanced, NONE, None),
        entry("defeat_fire_elemental", VeryAdvanced, NONE, None),
        entry("defeat_frost_troll", VeryAdvanced, NONE, None),
        entry("defeat_ice_elemental", VeryAdvanced, NONE, None),
        entry("damage_necromancer", VeryAdvanced, NONE, None),
        entry("defeat_necromancer", VeryAdvanced, NONE, None),
        entry(
            "coord_2_agents_soft",
            Intermediate,
            Some(C::Soft),
            Some(A::Coord2AgentsSoft),
        ),
        entry(
            "coord_large_passive_kill",
            Intermediate,
            Some(C::SyncHard),
            Some(A::CoordLargePassiveKill),
        ),
        entry(
            "coord_mine_stone_soft",
            Intermediate,
            Some(C::Soft),
            Some(A::CoordMineStoneSoft),
        ),
        entry(
            "coord_mine_stone_hard",
            Intermediate,
            Some(C::SyncHard),
            Some(A::CoordMineStoneHard),
        ),
        entry(
            "coord_mine_coal_soft",
            Intermediate,
            Some(C::Soft),
            Some(A::CoordMineCoalSoft),
        ),
        entry(
            "coord_mine_coal_hard",
            Intermediate,
            Some(C::SyncHard),
            Some(A::CoordMineCoalHard),
        ),
        entry(
            "coord_2_agents_hard",
            Advanced,
            Some(C::SyncHard),
            Some(A::Coord2AgentsHard),
        ),
        // ALEM's "3 agents" achievements mean three or more, as this world's whole-team
        // ones do (they exist from three agents on).
        entry(
            "coord_3_agents_soft",
            Advanced,
            Some(C::Soft),
            Some(A::CoordTeamSoft),
        ),
        entry(
            "handover_complete",
            Advanced,
            Some(C::Handover),
            Some(A::HandoverComplete),
        ),
        entry(
            "coord_mine_handover",
            Advanced,
            Some(C::Handover),
            Some(A::CoordMineHandover),
        ),
        entry(
            "coord_mine_iron_soft",
            Advanced,
            Some(C::Soft),
            Some(A::CoordMineIronSoft),
        ),
        entry(
            "coord_mine_iron_hard",
            Advanced,
            Some(C::SyncHard),
            Some(A::CoordMineIronHard),
        ),
        entry(
            "coord_mine_diamond_soft",
            Advanced,
            Some(C::Soft),
            Some(A::CoordMineDiamondSoft),
        ),
        entry(
            "coord_mine_diamond_hard",
            Advanced,
            Some(C::SyncHard),
            Some(A::CoordMineDiamondHard),
        ),
        entry(
            "coord_build_shelter",
            Advanced,
            Some(C::Construction),
            Some(A::CoordBuildShelter),
        ),
        entry(
            "coord_mine_sapphire_soft",
            VeryAdvanced,
            Some(C::Soft),
            None,
        ),
        entry(
            "coord_mine_sapphire_hard",
            VeryAdvanced,
            Some(C::SyncHard),
            None,
        ),
        entry("coord_mine_ruby_soft", VeryAdvanced, Some(C::Soft), None),
        entry(
            "coord_mine_ruby_hard",
            VeryAdvanced,
            Some(C::SyncHard),
            None,
        ),
        entry(
            "coord_3_agents_hard",
            VeryAdvanced,
            Some(C::SyncHard),
            Some(A::CoordTeamHard),
        ),
        entry(
            "coord_build_forge",
            VeryAdvanced,
            Some(C::Construction),
            Some(A::CoordBuildForge),
        ),
        entry(
            "coord_build_beacon",
            VeryAdvanced,
            Some(C::Construction),
            None,
        ),
        entry(
            "coord_diamond_pickaxe",
            VeryAdvanced,
            Some(C::SyncHard),
            Some(A::CoordDiamondPickaxe),
        ),
        entry(
            "coord_diamond_sword",
            VeryAdvanced,
            Some(C::SyncHard),
            Some(A::CoordDiamondSword),
        ),
        entry(
            "coord_diamond_armour",
            VeryAdvanced,
            Some(C::SyncHard),
            None,
        ),
        entry(
            "coord_elite_melee_kill",
            VeryAdvanced,
            Some(C::SyncHard),
            Some(A::CoordEliteMeleeKill),
        ),
        entry(
            "coord_elite_ranged_kill",
            VeryAdvanced,
            Some(C::SyncHard),
            Some(A::CoordEliteRangedKill),
        ),
    ]
};

/// Rewards `(base, coordination)` that earning `achievement` for the first time gives
/// under `scoring`. On ALEM's scales a world achievement without an ALEM counterpart
/// (synchronous wood mining) is worth nothing, eating a cow also earns `collect_food`
/// and the joint diamond tools count in both categories.
///
/// ```
/// use mosaic_coord::{Achievement, Scoring, credit};
/// assert_eq!(credit(Scoring::Compact, Achievement::CoordTeamHard), (0.0, 1.0));
/// assert_eq!(credit(Scoring::Alem, Achievement::CoordTeamHard), (0.0, 8.0));
/// assert_eq!(credit(Scoring::Alem, Achievement::CoordDiamondSword), (3.0, 8.0));
/// assert_eq!(credit(Scoring::Alem, Achievement::CoordMineWoodHard), (0.0, 0.0));
/// ```
pub fn credit(scoring: Scoring, achievement: Achievement) -> (f64, f64) {
    match scoring {
        Scoring::Compact if achievement.is_coordination() => (0.0, 1.0),
        Scoring::Compact => (1.0, 0.0),
        Scoring::Alem | Scoring::AlemLite => {
            let (base, coord) =
                weights(scoring.alem_list().filter(|e| e.world == Some(achievement)));
            (f64::from(base), f64::from(coord))
        }
    }
}

/// The summed rewards `(base, coordination)` of `entries`.
pub fn weights<'a>(entries: impl Iterator<Item = &'a AlemAchievement>) -> (u32, u32) {
    entries.fold((0, 0), |(base, coord), e| match e.coordination {
        Some(_) => (base, coord + e.tier.reward()),
        None => (base + e.tier.reward(), coord),
    })
}

/// Per-agent maxima `(base, coordination)` of ALEM's scale, reachable or not.
///
/// ```
/// assert_eq!(mosaic_coord::alem_maxima(), (217, 159));
/// ```
pub fn alem_maxima() -> (u32, u32) {
    weights(ALEM_ACHIEVEMENTS.iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_matches_alem_table_8_and_app_h2() {
        assert_eq!(ALEM_ACHIEVEMENTS.len(), 93);
        let coordination = ALEM_ACHIEVEMENTS
            .iter()
            .filter(|e| e.coordination.is_some())
            .count();
        assert_eq!(coordination, 27);
        assert_eq!(alem_maxima(), (217, 159));
        let (base, coord) = alem_maxima();
        assert_eq!(base + coord, 376);
        let mut names: Vec<_> = ALEM_ACHIEVEMENTS.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 93, "names are distinct");
        // ALEM-Lite: 30 base achievements on the overworld, all 27 coordination ones.
        assert_eq!(Scoring::AlemLite.alem_list().count(), 57);
        assert_eq!(weights(Scoring::AlemLite.alem_list()), (38, 159));
        assert_eq!(Scoring::Compact.alem_list().count(), 0);
        // Tier sizes: base 26/18/13/9, coordination 6/9/12 (intermediate up).
        let count = |tier: Tier, coord: bool| {
            ALEM_ACHIEVEMENTS
                .iter()
                .filter(|e| e.tier == tier && e.coordination.is_some() == coord)
                .count()
        };
        let base: Vec<_> = Tier::ALL.iter().map(|t| count(*t, false)).collect();
        let coordination: Vec<_> = Tier::ALL.iter().map(|t| count(*t, true)).collect();
        assert_eq!(base, [26, 18, 13, 9]);
        assert_eq!(coordination, [0, 6, 9, 12]);
    }

    #[test]
    fn world_achievements_map_onto_alem_consistently() {
        for e in &ALEM_ACHIEVEMENTS {
            let Some(a) = e.world else { continue };
            // A coordination entry maps a coordination achievement of the same type.
            if let Some(kind) = e.coordination {
                assert_eq!(CoordType::of(a), Some(kind), "{}", e.name);
            } else if !e.name.starts_with("make_diamond") && e.name != "collect_food" {
                assert_eq!(a.name(), e.name);
            }
        }
        // Eating a cow earns ALEM's eat_cow and collect_food.
        assert_eq!(credit(Scoring::Alem, Achievement::EatCow), (2.0, 0.0));
        // Every world achievement but synchronous wood mining counts on ALEM's scale.
        for a in Achievement::ALL {
            let (base, coord) = credit(Scoring::Alem, *a);
            let unscored = matches!(
                a,
                Achievement::CoordMineWoodSoft | Achievement::CoordMineWoodHard
            );
            assert_eq!(base + coord == 0.0, unscored, "{}", a.name());
            assert_eq!(
                coord > 0.0,
                a.is_coordination() && !unscored,
                "{}",
                a.name()
            );
        }
    }
}
