//! Crafting: Craftax-Classic's table and furnace recipes, and diamond tools crafted
//! jointly at an epic forge (hard synchronous: enough agents crafting the same item at
//! the same forge in the same step, materials pooled).

use super::actions::Act;
use super::effects::{Joint, Members, joint_success, members, pay_pooled, pooled_has, role_check};
use super::settings::Config;
use super::state::{Note, World};
use super::types::{Achievement, Block, Item, Role};
use mosaic_core::Event;

/// A tool recipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Recipe {
    /// Needs a table nearby.
    pub table: bool,
    /// Needs a furnace nearby.
    pub furnace: bool,
    /// Needs an epic forge nearby (and teammates crafting with it).
    pub forge: bool,
    /// Materials consumed.
    pub cost: &'static [(Item, u8)],
    /// Whose specialisation it is; `None` when anyone crafts it reliably.
    pub role: Option<Role>,
}

/// The recipe of a craftable tool. Pickaxes are the miner's specialisation, swords the
/// warrior's, except the wood sword, which ALEM leaves open to every role.
pub(crate) fn recipe(item: Item) -> Option<Recipe> {
    let role = match item {
        Item::WoodSword => None,
        _ if item.is_pickaxe() => Some(Role::Miner),
        _ => Some(Role::Warrior),
    };
    let (table, furnace, forge, cost): (bool, bool, bool, &'static [(Item, u8)]) = match item {
        Item::WoodPickaxe | Item::WoodSword => (true, false, false, &[(Item::Wood, 1)]),
        Item::StonePickaxe | Item::StoneSword => {
            (true, false, false, &[(Item::Wood, 1), (Item::Stone, 1)])
        }
        Item::IronPickaxe | Item::IronSword => (
            true,
            true,
            false,
            &[
                (Item::Wood, 1),
                (Item::Stone, 1),
                (Item::Iron, 1),
                (Item::Coal, 1),
            ],
        ),
        Item::DiamondPickaxe => (false, false, true, &[(Item::Wood, 1), (Item::Diamond, 3)]),
        Item::DiamondSword => (false, false, true, &[(Item::Wood, 1), (Item::Diamond, 2)]),
        _ => return None,
    };
    Some(Recipe {
        table,
        furnace,
        forge,
        cost,
        role,
    })
}

/// Whether `agent` stands near the stations of `recipe`.
pub(crate) fn near_stations(world: &World, agent: usize, recipe: &Recipe) -> bool {
    let a = &world.agents[agent];
    (!recipe.table || world.near(a.x, a.y, Block::Table).is_some())
        && (!recipe.furnace || world.near(a.x, a.y, Block::Furnace).is_some())
        && (!recipe.forge || world.near(a.x, a.y, Block::Forge).is_some())
}

/// Whether `agent` could attempt crafting `item` now: near the stations and, for solo
/// recipes, holding the materials (forge recipes pool materials, so any agent at a forge
/// may join).
pub(crate) fn can_craft(world: &World, agent: usize, item: Item) -> bool {
    let Some(r) = recipe(item) else { return false };
    near_stations(world, agent, &r)
        && (r.forge
            || r.cost
                .iter()
                .all(|(i, n)| world.agents[agent].count(*i) >= *n))
}

/// Resolves every Make action of the step.
pub(crate) fn craft(world: &mut World, config: &Config, acts: &[Act], events: &mut Vec<Event>) {
    // Joint groups: (forge position, item, participants).
    let mut groups: [((i32, i32), Item, Members); 4] = [((0, 0), Item::Wood, 0); 4];
    let mut count = 0;
    for (i, act) in acts.iter().enumerate() {
        let Act::Make(item) = *act else { continue };
        let Some(r) = recipe(item) else { continue };
        if !can_craft(world, i, item)
            || !r.role.is_none_or(|role| role_check(world, config, i, role))
        {
            continue;
        }
        if r.forge {
            let a = &world.agents[i];
            let Some(forge) = world.near(a.x, a.y, Block::Forge) else {
                continue;
            };
            match groups[..count]
                .iter_mut()
                .find(|(f, it, _)| *f == forge && *it == item)
            {
                Some((_, _, m)) => *m |= 1 << i,
                None => {
                    groups[count] = (forge, item, 1 << i);
                    count += 1;
                }
            }
        } else {
            let a = &mut world.agents[i];
            for (material, n) in r.cost {
                a.take(*material, *n);
            }
            a.add(item, 1);
            if let Some(achievement) = Achievement::make(item) {
                a.unlock(achievement);
            }
        }
    }
    let required = config.diamond_crafters();
    for &((fx, fy), item, group) in &groups[..count] {
        let Some(r) = recipe(item) else { continue };
        let k = group.count_ones() as usize;
        if k < required || !pooled_has(world, group, r.cost) {
            world.counters.sync_failures += 1;
            for i in members(group) {
                world.agents[i].note = Some(if k < required {
                    Note::DiamondNeedsMoreAgents
                } else {
                    Note::CraftersLackMaterials
                });
            }
            continue;
        }
        pay_pooled(world, group, r.cost);
        for i in members(group) {
            world.agents[i].add(item, 1);
            if let Some(achievement) = Achievement::make(item) {
                world.agents[i].unlock(achievement);
            }
        }
        let joint = Joint {
            target: item.name(),
            at: (fx, fy),
            required,
            soft: false,
        };
        joint_success(world, config, group, joint, events);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipes_follow_craftax_classic() {
        let iron = recipe(Item::IronPickaxe).unwrap();
        assert!(iron.table && iron.furnace && !iron.forge);
        assert_eq!(iron.cost.len(), 4);
        assert_eq!(iron.role, Some(Role::Miner));
        assert_eq!(recipe(Item::StoneSword).unwrap().role, Some(Role::Warrior));
        assert_eq!(
            recipe(Item::DiamondSword).unwrap().role,
            Some(Role::Warrior)
        );
        assert_eq!(recipe(Item::WoodPickaxe).unwrap().role, Some(Role::Miner));
        // ALEM: "No role restriction: ... Wood Sword".
        assert_eq!(recipe(Item::WoodSword).unwrap().role, None);
        assert!(recipe(Item::DiamondSword).unwrap().forge);
        assert!(recipe(Item::Wood).is_none());
    }
}
