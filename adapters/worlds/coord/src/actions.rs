//! The discrete action space: Craftax-Classic's 17 actions first (same indices), then
//! diamond crafting, construction, requests, gives and message channels.

use super::types::{Dir, Item, Resource, Structure};

/// What can be placed in front of an agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placeable {
    /// A stone block (also fills water); costs 1 stone.
    Stone,
    /// A crafting table; costs 2 wood.
    Table,
    /// A furnace; costs 1 stone.
    Furnace,
    /// A sapling on grass; costs 1 sapling.
    Plant,
}

/// A decoded action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// Nothing.
    Noop,
    /// Turn to the direction and step if the tile is free.
    Move(Dir),
    /// Interact with the faced tile: mine, attack, drink, eat, revive, hit a teammate.
    Do,
    /// Fall asleep (energy below maximum).
    Sleep,
    /// Place on the faced tile.
    Place(Placeable),
    /// Craft a tool near the right station.
    Make(Item),
    /// Build on the faced construction site.
    Build(Structure),
    /// Ask teammates for one resource (active for [`REQUEST_STEPS`] steps).
    Request(Resource),
    /// Give one unit of what agent `n` requests.
    Give(u8),
    /// Broadcast value `n` on the discrete message channel.
    Signal(u8),
}

/// How long a request stays active.
pub const REQUEST_STEPS: u32 = 10;

const FIXED: [Act; 21] = [
    Act::Noop,
    Act::Move(Dir::West),
    Act::Move(Dir::East),
    Act::Move(Dir::North),
    Act::Move(Dir::South),
    Act::Do,
    Act::Sleep,
    Act::Place(Placeable::Stone),
    Act::Place(Placeable::Table),
    Act::Place(Placeable::Furnace),
    Act::Place(Placeable::Plant),
    Act::Make(Item::WoodPickaxe),
    Act::Make(Item::StonePickaxe),
    Act::Make(Item::IronPickaxe),
    Act::Make(Item::WoodSword),
    Act::Make(Item::StoneSword),
    Act::Make(Item::IronSword),
    Act::Make(Item::DiamondPickaxe),
    Act::Make(Item::DiamondSword),
    Act::Build(Structure::Shelter),
    Act::Build(Structure::Forge),
];

/// The action space of one configuration (its size depends on the team size and the
/// number of message channels).
///
/// ```
/// use mosaic_coord::{Act, ActionSet};
/// let set = ActionSet::new(3, 4);
/// assert_eq!(set.len(), 21 + 8 + 3 + 4);
/// let give = set.index_of(Act::Give(2));
/// assert_eq!(set.label(give), "give_to_agent_2");
/// assert_eq!(set.decode(give), Some(Act::Give(2)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActionSet {
    agents: usize,
    signals: usize,
}

impl ActionSet {
    /// The actions of a team of `agents` with `signals` message channels.
    pub fn new(agents: usize, signals: usize) -> Self {
        Self { agents, signals }
    }

    /// Number of actions.
    pub fn len(&self) -> usize {
        FIXED.len() + Resource::COUNT + self.agents + self.signals
    }

    /// Always false: there is at least `noop`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The action at `index`, `None` when out of range.
    pub fn decode(&self, index: usize) -> Option<Act> {
        let requests = FIXED.len();
        let gives = requests + Resource::COUNT;
        let signals = gives + self.agents;
        if index < requests {
            Some(FIXED[index])
        } else if index < gives {
            Some(Act::Request(Resource::ALL[index - requests]))
        } else if index < signals {
            Some(Act::Give((index - gives) as u8))
        } else if index < self.len() {
            Some(Act::Signal((index - signals) as u8))
        } else {
            None
        }
    }

    /// The index of `act` (which must belong to this set).
    pub fn index_of(&self, act: Act) -> usize {
        match act {
            Act::Request(r) => FIXED.len() + r as usize,
            Act::Give(agent) => FIXED.len() + Resource::COUNT + agent as usize,
            Act::Signal(v) => FIXED.len() + Resource::COUNT + self.agents + v as usize,
            fixed => FIXED.iter().position(|a| *a == fixed).unwrap_or(0),
        }
    }

    /// The label of the action at `index`, e.g. `make_wood_pickaxe`.
    pub fn label(&self, index: usize) -> String {
        match self.decode(index) {
            None => "?".into(),
            Some(Act::Noop) => "noop".into(),
            Some(Act::Move(d)) => format!("move_{}", d.name()),
            Some(Act::Do) => "do".into(),
            Some(Act::Sleep) => "sleep".into(),
            Some(Act::Place(p)) => format!(
                "place_{}",
                match p {
                    Placeable::Stone => "stone",
                    Placeable::Table => "table",
                    Placeable::Furnace => "furnace",
                    Placeable::Plant => "plant",
                }
            ),
            Some(Act::Make(item)) => format!("make_{}", item.name()),
            Some(Act::Build(s)) => format!("build_{}", s.name()),
            Some(Act::Request(r)) => format!("request_{}", r.name()),
            Some(Act::Give(a)) => format!("give_to_agent_{a}"),
            Some(Act::Signal(v)) => format!("signal_{v}"),
        }
    }

    /// Every label in index order.
    pub fn labels(&self) -> Vec<String> {
        (0..self.len()).map(|i| self.label(i)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_classic_indices() {
        let set = ActionSet::new(4, 2);
        for i in 0..set.len() {
            let act = set.decode(i).unwrap();
            assert_eq!(set.index_of(act), i, "{act:?}");
        }
        assert_eq!(set.decode(set.len()), None);
        let labels = set.labels();
        assert_eq!(labels[5], "do");
        assert_eq!(labels[16], "make_iron_sword");
        assert_eq!(labels.last().unwrap(), "signal_1");
        let mut unique = labels.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), labels.len());
    }
}
