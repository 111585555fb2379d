//! Unit types, their statistics and the races that field them.
//!
//! Six types carry SMAX's statistics exactly (JaxMARL's re-implementation of SMAC:
//! marine, marauder, stalker, zealot, zergling, hydralisk). SMAX folds a Protoss unit's
//! shield into its health and has no armour; here the stalker's 160 and the zealot's 150
//! are split into StarCraft II's health and shield (80 + 80, 100 + 50), so damage lands
//! exactly as in SMAX while shields can regenerate. The three types SMAX lacks (colossus,
//! medivac, baneling) carry StarCraft II's statistics at "Faster" speed, the unit of
//! SMAX's velocities and cooldowns, with SMACv2's attack and sight ranges.

use serde::{Deserialize, Serialize};

/// A unit type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitType {
    /// Protoss ranged attacker (SMAX statistics).
    Stalker,
    /// Protoss melee attacker (SMAX statistics).
    Zealot,
    /// Protoss heavy ranged attacker whose lance hits every ground unit in a line.
    Colossus,
    /// Terran ranged attacker (SMAX statistics).
    Marine,
    /// Terran ranged attacker, ground targets only (SMAX statistics).
    Marauder,
    /// Terran flying healer without a weapon.
    Medivac,
    /// Zerg fast melee attacker (SMAX statistics).
    Zergling,
    /// Zerg ranged attacker (SMAX statistics).
    Hydralisk,
    /// Zerg suicide attacker: explodes on its target, damaging every ground enemy around.
    Baneling,
}

/// How a unit uses its attack action.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Weapon {
    /// One target per shot.
    Direct,
    /// The target and every other ground enemy touching a segment `half_length` either
    /// side of the target, across the line of fire.
    Lance {
        /// Half the lance's length.
        half_length: f32,
    },
    /// The unit dies and hits every ground enemy whose edge is within `radius` of it.
    Explode {
        /// Blast radius from the unit's centre.
        radius: f32,
    },
    /// Heals one friendly ground unit per action, continuously, spending energy.
    Heal {
        /// Health restored per second.
        rate: f32,
        /// Health restored per point of energy.
        health_per_energy: f32,
        /// Energy at spawn.
        start_energy: f32,
        /// Energy cap.
        max_energy: f32,
        /// Energy regained per second.
        energy_regen: f32,
    },
}

/// The statistics of a unit type. Times are seconds, distances map units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitStats {
    /// Health points.
    pub health: f32,
    /// Shield points (Protoss), absorbed before health and regenerating.
    pub shield: f32,
    /// Subtracted from every hit on health (at least 0.5 damage remains).
    pub armour: f32,
    /// Damage per hit.
    pub damage: f32,
    /// Hits per attack.
    pub hits: u8,
    /// Extra damage per hit against light units.
    pub bonus_vs_light: f32,
    /// Time between attacks.
    pub cooldown: f32,
    /// Attack (or heal) range, centre to centre.
    pub attack_range: f32,
    /// Sight range, centre to centre.
    pub sight_range: f32,
    /// Movement speed per second.
    pub speed: f32,
    /// Collision radius.
    pub radius: f32,
    /// Light armour class (takes light bonuses).
    pub light: bool,
    /// Flies: collides only with flyers and is hit only by anti-air weapons.
    pub flying: bool,
    /// Can attack flying units.
    pub hits_air: bool,
    /// How the attack action is used.
    pub weapon: Weapon,
}

/// Every unit type, in a fixed order (the order of [`UnitType::index`]).
pub const ALL_TYPES: [UnitType; 9] = [
    UnitType::Stalker,
    UnitType::Zealot,
    UnitType::Colossus,
    UnitType::Marine,
    UnitType::Marauder,
    UnitType::Medivac,
    UnitType::Zergling,
    UnitType::Hydralisk,
    UnitType::Baneling,
];

/// Shields start regenerating this long after the unit last took damage (StarCraft II,
/// Faster speed).
pub const SHIELD_REGEN_DELAY: f32 = 7.0;
/// Shield points regained per second once regenerating.
pub const SHIELD_REGEN_RATE: f32 = 2.8;
/// Attack range of melee units and banelings (SMACv2's `min_attack_range`, SMAX's melee
/// range).
pub const MELEE_RANGE: f32 = 2.0;

/// SMAX's profile: one direct hit per attack, no armour, no bonus, ground unit; the
/// types fill in the rest.
const SMAX: UnitStats = UnitStats {
    health: 0.0,
    shield: 0.0,
    armour: 0.0,
    damage: 0.0,
    hits: 1,
    bonus_vs_light: 0.0,
    cooldown: 0.0,
    attack_range: MELEE_RANGE,
    sight_range: 9.0,
    speed: 3.15,
    radius: 0.5,
    light: false,
    flying: false,
    hits_air: false,
    weapon: Weapon::Direct,
};

/// The statistics of every type, in [`ALL_TYPES`] order.
static TABLE: [UnitStats; 9] = {
    let mut table = [SMAX; 9];
    let mut i = 0;
    while i < ALL_TYPES.len() {
        table[i] = stats_of(ALL_TYPES[i]);
        i += 1;
    }
    table
};

/// The statistics of `kind`.
const fn stats_of(kind: UnitType) -> UnitStats {
    match kind {
        UnitType::Stalker => UnitStats {
            health: 80.0,
            shield: 80.0,
            damage: 13.0,
            cooldown: 1.87,
            attack_range: 6.0,
            sight_range: 10.0,
            speed: 4.13,
            radius: 0.625,
            hits_air: true,
            ..SMAX
        },
        UnitType::Zealot => UnitStats {
            health: 100.0,
            shield: 50.0,
            damage: 8.0,
            cooldown: 0.86,
            light: true,
            ..SMAX
        },
        UnitType::Marine => UnitStats {
            health: 45.0,
            damage: 9.0,
            cooldown: 0.61,
            attack_range: 5.0,
            radius: 0.375,
            light: true,
            hits_air: true,
            ..SMAX
        },
        UnitType::Marauder => UnitStats {
            health: 125.0,
            damage: 10.0,
            cooldown: 1.07,
            attack_range: 6.0,
            sight_range: 10.0,
            speed: 2.25,
            radius: 0.5625,
            ..SMAX
        },
        UnitType::Zergling => UnitStats {
            health: 35.0,
            damage: 5.0,
            cooldown: 0.5,
            sight_range: 8.0,
            speed: 4.13,
            radius: 0.375,
            light: true,
            ..SMAX
        },
        UnitType::Hydralisk => UnitStats {
            health: 80.0,
            damage: 12.0,
            cooldown: 0.59,
            attack_range: 5.0,
            radius: 0.625,
            light: true,
            hits_air: true,
            ..SMAX
        },
        UnitType::Colossus => UnitStats {
            health: 200.0,
            shield: 150.0,
            armour: 1.0,
            damage: 10.0,
            hits: 2,
            bonus_vs_light: 5.0,
            cooldown: 1.07,
            attack_range: 7.0,
            sight_range: 10.0,
            speed: 3.15,
            radius: 1.0,
            light: false,
            flying: false,
            hits_air: false,
            weapon: Weapon::Lance { half_length: 1.5 },
        },
        UnitType::Medivac => UnitStats {
            health: 150.0,
            shield: 0.0,
            armour: 1.0,
            damage: 0.0,
            hits: 0,
            bonus_vs_light: 0.0,
            cooldown: 0.0,
            attack_range: 4.0,
            sight_range: 11.0,
            speed: 3.5,
            radius: 0.75,
            light: false,
            flying: true,
            hits_air: false,
            weapon: Weapon::Heal {
                rate: 12.6,
                health_per_energy: 3.0,
                start_energy: 50.0,
                max_energy: 200.0,
                energy_regen: 0.7875,
            },
        },
        UnitType::Baneling => UnitStats {
            health: 30.0,
            shield: 0.0,
            armour: 0.0,
            damage: 16.0,
            hits: 1,
            bonus_vs_light: 19.0,
            cooldown: 0.0,
            attack_range: MELEE_RANGE,
            sight_range: 8.0,
            speed: 3.5,
            radius: 0.375,
            light: false,
            flying: false,
            hits_air: false,
            weapon: Weapon::Explode { radius: 2.2 },
        },
    }
}

impl UnitType {
    /// The statistics of this type.
    pub fn stats(self) -> &'static UnitStats {
        &TABLE[self.index()]
    }

    /// The lower-case name, as in settings and texts.
    pub const fn name(self) -> &'static str {
        match self {
            UnitType::Stalker => "stalker",
            UnitType::Zealot => "zealot",
            UnitType::Colossus => "colossus",
            UnitType::Marine => "marine",
            UnitType::Marauder => "marauder",
            UnitType::Medivac => "medivac",
            UnitType::Zergling => "zergling",
            UnitType::Hydralisk => "hydralisk",
            UnitType::Baneling => "baneling",
        }
    }

    /// Position in [`ALL_TYPES`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Whether a team may not consist of this type alone (SMACv2's exception types: the
    /// medivac cannot fight, the baneling dies attacking).
    pub const fn is_exception(self) -> bool {
        matches!(self, UnitType::Medivac | UnitType::Baneling)
    }

    /// Whether this type heals friends instead of attacking enemies.
    pub fn heals(self) -> bool {
        matches!(self.stats().weapon, Weapon::Heal { .. })
    }

    /// Whether this type fights at melee range.
    pub fn is_melee(self) -> bool {
        self.stats().attack_range <= MELEE_RANGE
    }

    /// Whether a unit of this type can attack (or heal) a unit of type `target`.
    pub fn can_target(self, target: UnitType) -> bool {
        let (me, them) = (self.stats(), target.stats());
        if self.heals() {
            // Medivacs heal ground units, not other flyers (nor themselves).
            !them.flying
        } else {
            me.hits_air || !them.flying
        }
    }
}

/// A race and its SMACv2 unit pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Race {
    /// Stalker 0.45, zealot 0.45, colossus 0.1.
    Protoss,
    /// Marine 0.45, marauder 0.45, medivac 0.1.
    Terran,
    /// Zergling 0.45, hydralisk 0.45, baneling 0.1.
    Zerg,
}

impl Race {
    /// Every race.
    pub const ALL: [Race; 3] = [Race::Protoss, Race::Terran, Race::Zerg];

    /// SMACv2's unit types and sampling weights (`sc2_gen_<race>.yaml`).
    pub const fn pool(self) -> [(UnitType, f64); 3] {
        match self {
            Race::Protoss => [
                (UnitType::Stalker, 0.45),
                (UnitType::Zealot, 0.45),
                (UnitType::Colossus, 0.1),
            ],
            Race::Terran => [
                (UnitType::Marine, 0.45),
                (UnitType::Marauder, 0.45),
                (UnitType::Medivac, 0.1),
            ],
            Race::Zerg => [
                (UnitType::Zergling, 0.45),
                (UnitType::Hydralisk, 0.45),
                (UnitType::Baneling, 0.1),
            ],
        }
    }

    /// The lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Race::Protoss => "protoss",
            Race::Terran => "terran",
            Race::Zerg => "zerg",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smax_types_keep_smax_totals() {
        // SMAX's health column: marine 45, marauder 125, stalker 160, zealot 150,
        // zergling 35, hydralisk 80; its attacks 9, 10, 13, 8, 5, 12.
        let expected = [
            (UnitType::Marine, 45.0, 9.0),
            (UnitType::Marauder, 125.0, 10.0),
            (UnitType::Stalker, 160.0, 13.0),
            (UnitType::Zealot, 150.0, 8.0),
            (UnitType::Zergling, 35.0, 5.0),
            (UnitType::Hydralisk, 80.0, 12.0),
        ];
        for (kind, total, damage) in expected {
            let s = kind.stats();
            assert_eq!(
                (s.health + s.shield, s.damage, s.armour),
                (total, damage, 0.0)
            );
        }
        for (i, kind) in ALL_TYPES.iter().enumerate() {
            assert_eq!(kind.index(), i);
            assert!(kind.stats().sight_range > kind.stats().attack_range);
        }
    }

    #[test]
    fn targeting_rules() {
        use UnitType::*;
        assert!(Marine.can_target(Medivac) && Hydralisk.can_target(Medivac));
        assert!(!Marauder.can_target(Medivac) && !Zealot.can_target(Medivac));
        assert!(Medivac.can_target(Marine) && !Medivac.can_target(Medivac));
        assert!(Zealot.is_melee() && Baneling.is_melee() && !Stalker.is_melee());
        for race in Race::ALL {
            let total: f64 = race.pool().iter().map(|(_, w)| w).sum();
            assert!((total - 1.0).abs() < 1e-12);
        }
    }
}
