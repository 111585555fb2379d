//! The vocabulary of the coordination world: blocks, items, roles, directions, mobs,
//! structures and achievements.

use serde::{Deserialize, Serialize};

/// One map tile's block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Block {
    /// Walkable; Do may yield a sapling.
    Grass,
    /// Walkable beach around water.
    Sand,
    /// Drinkable, not walkable.
    Water,
    /// Gives wood.
    Tree,
    /// Gives stone (needs a wood pickaxe).
    Stone,
    /// Gives coal (needs a wood pickaxe).
    Coal,
    /// Gives iron (needs a stone pickaxe).
    Iron,
    /// Gives a diamond (needs an iron pickaxe).
    Diamond,
    /// Walkable and deadly.
    Lava,
    /// Walkable floor left by mining.
    Path,
    /// Crafting table (placed).
    Table,
    /// Furnace (placed).
    Furnace,
    /// A growing sapling.
    Plant,
    /// A ripe plant: food.
    RipePlant,
    /// A construction site where a shelter or a forge can be built.
    Site,
    /// A built shelter.
    Shelter,
    /// An epic forge: diamond tools are crafted here, jointly.
    Forge,
    /// Outside the map (observations only).
    OutOfBounds,
}

impl Block {
    /// Every block, in channel order.
    pub const ALL: [Block; 18] = [
        Block::Grass,
        Block::Sand,
        Block::Water,
        Block::Tree,
        Block::Stone,
        Block::Coal,
        Block::Iron,
        Block::Diamond,
        Block::Lava,
        Block::Path,
        Block::Table,
        Block::Furnace,
        Block::Plant,
        Block::RipePlant,
        Block::Site,
        Block::Shelter,
        Block::Forge,
        Block::OutOfBounds,
    ];

    /// Name used in text observations.
    pub fn name(self) -> &'static str {
        match self {
            Block::Grass => "grass",
            Block::Sand => "sand",
            Block::Water => "water",
            Block::Tree => "tree",
            Block::Stone => "stone",
            Block::Coal => "coal",
            Block::Iron => "iron",
            Block::Diamond => "diamond",
            Block::Lava => "lava",
            Block::Path => "path",
            Block::Table => "table",
            Block::Furnace => "furnace",
            Block::Plant => "sapling",
            Block::RipePlant => "ripe plant",
            Block::Site => "construction site",
            Block::Shelter => "shelter",
            Block::Forge => "epic forge",
            Block::OutOfBounds => "edge of the world",
        }
    }

    /// Agents and mobs cannot enter solid blocks.
    pub fn is_solid(self) -> bool {
        !matches!(self, Block::Grass | Block::Sand | Block::Path | Block::Lava)
    }

    /// The item mining this block yields, if it is a resource block.
    pub fn resource(self) -> Option<Item> {
        match self {
            Block::Tree => Some(Item::Wood),
            Block::Stone => Some(Item::Stone),
            Block::Coal => Some(Item::Coal),
            Block::Iron => Some(Item::Iron),
            Block::Diamond => Some(Item::Diamond),
            _ => None,
        }
    }
}

/// An inventory slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Item {
    /// Wood.
    Wood,
    /// Stone.
    Stone,
    /// Coal.
    Coal,
    /// Iron.
    Iron,
    /// Diamond.
    Diamond,
    /// Sapling.
    Sapling,
    /// Wood pickaxe.
    WoodPickaxe,
    /// Stone pickaxe.
    StonePickaxe,
    /// Iron pickaxe.
    IronPickaxe,
    /// Diamond pickaxe (crafted jointly at a forge).
    DiamondPickaxe,
    /// Wood sword.
    WoodSword,
    /// Stone sword.
    StoneSword,
    /// Iron sword.
    IronSword,
    /// Diamond sword (crafted jointly at a forge).
    DiamondSword,
}

impl Item {
    /// Number of inventory slots.
    pub const COUNT: usize = 14;
    /// Every item in slot order.
    pub const ALL: [Item; Item::COUNT] = [
        Item::Wood,
        Item::Stone,
        Item::Coal,
        Item::Iron,
        Item::Diamond,
        Item::Sapling,
        Item::WoodPickaxe,
        Item::StonePickaxe,
        Item::IronPickaxe,
        Item::DiamondPickaxe,
        Item::WoodSword,
        Item::StoneSword,
        Item::IronSword,
        Item::DiamondSword,
    ];
    /// Inventory counts are capped here (as in Craftax-Classic).
    pub const CAP: u8 = 9;

    /// Name used in text and action labels.
    pub fn name(self) -> &'static str {
        match self {
            Item::Wood => "wood",
            Item::Stone => "stone",
            Item::Coal => "coal",
            Item::Iron => "iron",
            Item::Diamond => "diamond",
            Item::Sapling => "sapling",
            Item::WoodPickaxe => "wood_pickaxe",
            Item::StonePickaxe => "stone_pickaxe",
            Item::IronPickaxe => "iron_pickaxe",
            Item::DiamondPickaxe => "diamond_pickaxe",
            Item::WoodSword => "wood_sword",
            Item::StoneSword => "stone_sword",
            Item::IronSword => "iron_sword",
            Item::DiamondSword => "diamond_sword",
        }
    }

    /// Whether the item is a pickaxe.
    pub fn is_pickaxe(self) -> bool {
        matches!(
            self,
            Item::WoodPickaxe | Item::StonePickaxe | Item::IronPickaxe | Item::DiamondPickaxe
        )
    }

    /// Whether the item is a sword.
    pub fn is_sword(self) -> bool {
        matches!(
            self,
            Item::WoodSword | Item::StoneSword | Item::IronSword | Item::DiamondSword
        )
    }
}

/// What can be requested from, and given to, a teammate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Resource {
    /// Wood.
    Wood,
    /// Stone.
    Stone,
    /// Coal.
    Coal,
    /// Iron.
    Iron,
    /// Diamond.
    Diamond,
    /// Sapling.
    Sapling,
    /// One point of food (a vital).
    Food,
    /// One point of drink (a vital).
    Drink,
}

impl Resource {
    /// Number of requestable resources.
    pub const COUNT: usize = 8;
    /// Every resource in action order.
    pub const ALL: [Resource; Resource::COUNT] = [
        Resource::Wood,
        Resource::Stone,
        Resource::Coal,
        Resource::Iron,
        Resource::Diamond,
        Resource::Sapling,
        Resource::Food,
        Resource::Drink,
    ];

    /// Name used in text and action labels.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Wood => "wood",
            Resource::Stone => "stone",
            Resource::Coal => "coal",
            Resource::Iron => "iron",
            Resource::Diamond => "diamond",
            Resource::Sapling => "sapling",
            Resource::Food => "food",
            Resource::Drink => "drink",
        }
    }

    /// The inventory item behind the resource; `None` for the vitals food and drink.
    pub fn item(self) -> Option<Item> {
        match self {
            Resource::Wood => Some(Item::Wood),
            Resource::Stone => Some(Item::Stone),
            Resource::Coal => Some(Item::Coal),
            Resource::Iron => Some(Item::Iron),
            Resource::Diamond => Some(Item::Diamond),
            Resource::Sapling => Some(Item::Sapling),
            Resource::Food | Resource::Drink => None,
        }
    }
}

/// An agent's specialisation: specialists always succeed at their role's actions,
/// everyone else succeeds with probability 1 − α.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Drinking water, collecting saplings, eating cows.
    Forager,
    /// Crafting pickaxes, placing stone.
    Miner,
    /// Crafting swords; double melee damage.
    Warrior,
}

impl Role {
    /// Every role in channel order.
    pub const ALL: [Role; 3] = [Role::Forager, Role::Miner, Role::Warrior];

    /// Name used in text.
    pub fn name(self) -> &'static str {
        match self {
            Role::Forager => "forager",
            Role::Miner => "miner",
            Role::Warrior => "warrior",
        }
    }

    /// The default role of agent `index` (warrior, forager, miner, warrior, ...).
    pub fn default_for(index: usize) -> Role {
        [Role::Warrior, Role::Forager, Role::Miner][index % 3]
    }
}

/// A compass direction; north is towards y = 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Dir {
    /// x − 1.
    West,
    /// x + 1.
    East,
    /// y − 1.
    North,
    /// y + 1.
    South,
}

impl Dir {
    /// Every direction in action order.
    pub const ALL: [Dir; 4] = [Dir::West, Dir::East, Dir::North, Dir::South];

    /// The (dx, dy) step.
    pub fn delta(self) -> (i32, i32) {
        match self {
            Dir::West => (-1, 0),
            Dir::East => (1, 0),
            Dir::North => (0, -1),
            Dir::South => (0, 1),
        }
    }

    /// Name used in text.
    pub fn name(self) -> &'static str {
        match self {
            Dir::West => "west",
            Dir::East => "east",
            Dir::North => "north",
            Dir::South => "south",
        }
    }
}

/// The kinds of mob.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum MobKind {
    /// Melee enemy; spawns more at night.
    Zombie,
    /// Passive; food.
    Cow,
    /// Ranged enemy in tunnels; shoots arrows.
    Skeleton,
}

impl MobKind {
    /// Every kind in label-table order.
    pub const ALL: [MobKind; 3] = [MobKind::Zombie, MobKind::Cow, MobKind::Skeleton];

    /// Name used in text; coordinated mobs get a prefix.
    pub fn name(self, coordinated: bool) -> &'static str {
        match (self, coordinated) {
            (MobKind::Zombie, false) => "zombie",
            (MobKind::Zombie, true) => "elite zombie",
            (MobKind::Cow, false) => "cow",
            (MobKind::Cow, true) => "large cow",
            (MobKind::Skeleton, false) => "skeleton",
            (MobKind::Skeleton, true) => "elite skeleton",
        }
    }
}

/// What can be built on a construction site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Structure {
    /// Sleeping agents of the team recover energy 50% faster.
    Shelter,
    /// An epic forge, where diamond tools are crafted jointly.
    Forge,
}

impl Structure {
    /// Both structures in action order.
    pub const ALL: [Structure; 2] = [Structure::Shelter, Structure::Forge];

    /// Name used in text and labels.
    pub fn name(self) -> &'static str {
        match self {
            Structure::Shelter => "shelter",
            Structure::Forge => "forge",
        }
    }

    /// The block the site becomes.
    pub fn block(self) -> Block {
        match self {
            Structure::Shelter => Block::Shelter,
            Structure::Forge => Block::Forge,
        }
    }

    /// Materials, paid by the builders.
    pub fn cost(self) -> &'static [(Item, u8)] {
        match self {
            Structure::Shelter => &[(Item::Wood, 10), (Item::Stone, 5)],
            Structure::Forge => &[(Item::Stone, 10), (Item::Iron, 3), (Item::Coal, 2)],
        }
    }
}

macro_rules! achievements {
    ($($variant:ident => $name:literal,)*) => {
        /// Everything that earns a first-time reward. The first
        /// [`Achievement::BASE_COUNT`] are Craftax-Classic's; the rest are coordination
        /// achievements.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Achievement {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant,
            )*
        }

        impl Achievement {
            /// Every achievement in bit order.
            pub const ALL: &'static [Achievement] = &[$(Achievement::$variant,)*];

            /// Snake-case name, as in records.
            pub fn name(self) -> &'static str {
                match self {
                    $(Achievement::$variant => $name,)*
                }
            }
        }
    };
}

achievements! {
    CollectWood => "collect_wood",
    PlaceTable => "place_table",
    EatCow => "eat_cow",
    CollectSapling => "collect_sapling",
    CollectDrink => "collect_drink",
    MakeWoodPickaxe => "make_wood_pickaxe",
    MakeWoodSword => "make_wood_sword",
    PlacePlant => "place_plant",
    DefeatZombie => "defeat_zombie",
    CollectStone => "collect_stone",
    PlaceStone => "place_stone",
    EatPlant => "eat_plant",
    DefeatSkeleton => "defeat_skeleton",
    MakeStonePickaxe => "make_stone_pickaxe",
    MakeStoneSword => "make_stone_sword",
    WakeUp => "wake_up",
    PlaceFurnace => "place_furnace",
    CollectCoal => "collect_coal",
    CollectIron => "collect_iron",
    CollectDiamond => "collect_diamond",
    MakeIronPickaxe => "make_iron_pickaxe",
    MakeIronSword => "make_iron_sword",
    CoordMineWoodSoft => "coord_mine_wood_soft",
    CoordMineWoodHard => "coord_mine_wood_hard",
    CoordMineStoneSoft => "coord_mine_stone_soft",
    CoordMineStoneHard => "coord_mine_stone_hard",
    CoordMineCoalSoft => "coord_mine_coal_soft",
    CoordMineCoalHard => "coord_mine_coal_hard",
    CoordMineIronSoft => "coord_mine_iron_soft",
    CoordMineIronHard => "coord_mine_iron_hard",
    CoordMineDiamondSoft => "coord_mine_diamond_soft",
    CoordMineDiamondHard => "coord_mine_diamond_hard",
    Coord2AgentsSoft => "coord_2_agents_soft",
    Coord2AgentsHard => "coord_2_agents_hard",
    CoordTeamSoft => "coord_team_soft",
    CoordTeamHard => "coord_team_hard",
    CoordMineHandover => "coord_mine_handover",
    HandoverComplete => "handover_complete",
    CoordBuildShelter => "coord_build_shelter",
    CoordBuildForge => "coord_build_forge",
    CoordDiamondPickaxe => "coord_diamond_pickaxe",
    CoordDiamondSword => "coord_diamond_sword",
    CoordEliteMeleeKill => "coord_elite_melee_kill",
    CoordEliteRangedKill => "coord_elite_ranged_kill",
    CoordLargePassiveKill => "coord_large_passive_kill",
}

impl Achievement {
    /// Number of Craftax-Classic (base) achievements.
    pub const BASE_COUNT: usize = 22;

    /// Whether this is a coordination achievement (rewarded in the coordination
    /// category).
    pub fn is_coordination(self) -> bool {
        self as usize >= Self::BASE_COUNT
    }

    /// The bit of this achievement in an agent's achievement set.
    pub fn bit(self) -> u64 {
        1 << (self as u8)
    }

    /// Achievement for collecting the resource of a mined block.
    pub fn collect(item: Item) -> Option<Achievement> {
        match item {
            Item::Wood => Some(Achievement::CollectWood),
            Item::Stone => Some(Achievement::CollectStone),
            Item::Coal => Some(Achievement::CollectCoal),
            Item::Iron => Some(Achievement::CollectIron),
            Item::Diamond => Some(Achievement::CollectDiamond),
            Item::Sapling => Some(Achievement::CollectSapling),
            _ => None,
        }
    }

    /// Achievement for crafting a tool.
    pub fn make(item: Item) -> Option<Achievement> {
        match item {
            Item::WoodPickaxe => Some(Achievement::MakeWoodPickaxe),
            Item::StonePickaxe => Some(Achievement::MakeStonePickaxe),
            Item::IronPickaxe => Some(Achievement::MakeIronPickaxe),
            Item::WoodSword => Some(Achievement::MakeWoodSword),
            Item::StoneSword => Some(Achievement::MakeStoneSword),
            Item::IronSword => Some(Achievement::MakeIronSword),
            Item::DiamondPickaxe => Some(Achievement::CoordDiamondPickaxe),
            Item::DiamondSword => Some(Achievement::CoordDiamondSword),
            _ => None,
        }
    }

    /// The synchronous-mining achievement for a resource block.
    pub fn coord_mine(block: Block, soft: bool) -> Option<Achievement> {
        use Achievement::*;
        Some(match (block, soft) {
            (Block::Tree, true) => CoordMineWoodSoft,
            (Block::Tree, false) => CoordMineWoodHard,
            (Block::Stone, true) => CoordMineStoneSoft,
            (Block::Stone, false) => CoordMineStoneHard,
            (Block::Coal, true) => CoordMineCoalSoft,
            (Block::Coal, false) => CoordMineCoalHard,
            (Block::Iron, true) => CoordMineIronSoft,
            (Block::Iron, false) => CoordMineIronHard,
            (Block::Diamond, true) => CoordMineDiamondSoft,
            (Block::Diamond, false) => CoordMineDiamondHard,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn achievement_bits_fit_and_base_comes_first() {
        assert!(Achievement::ALL.len() <= 64);
        assert_eq!(
            Achievement::ALL
                .iter()
                .filter(|a| !a.is_coordination())
                .count(),
            Achievement::BASE_COUNT
        );
        for (i, a) in Achievement::ALL.iter().enumerate() {
            assert_eq!(*a as usize, i);
        }
    }

    #[test]
    fn walkable_blocks() {
        let walkable: Vec<_> = Block::ALL.iter().filter(|b| !b.is_solid()).collect();
        assert_eq!(
            walkable,
            [&Block::Grass, &Block::Sand, &Block::Lava, &Block::Path]
        );
    }
}
