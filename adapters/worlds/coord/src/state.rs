//! The mutable state of one episode.

use super::types::{Achievement, Block, Dir, Item, MobKind, Resource, Role, Structure};
use mosaic_core::rng::Rng;
use serde::{Deserialize, Serialize};

/// The coordination structure of a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum CoordKind {
    /// No requirement.
    None,
    /// Agents act on the target in the same step.
    Sync,
    /// One agent starts, a different agent finishes within a window.
    Handover,
}

/// The coordination requirement of a tile (resource block or construction site), fixed
/// at world generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Tag {
    /// Synchronous, handover or none.
    pub kind: CoordKind,
    /// Synchronous only: a solo attempt may succeed (with probability 1 − α).
    pub soft: bool,
    /// Synchronous only: agents needed (2 or the whole team).
    pub required: u8,
    /// Handover only: steps the second agent has.
    pub window: u8,
}

impl Tag {
    /// No requirement.
    pub(crate) const NONE: Tag = Tag {
        kind: CoordKind::None,
        soft: false,
        required: 0,
        window: 0,
    };
}

/// The coordination label of a mob (drawn per spawn slot at world generation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct MobTag {
    /// Elite (zombie, skeleton) or large (cow): tougher, and a coordinated kill is an
    /// achievement.
    pub coordinated: bool,
    /// A solo hit lands with probability 1 − α (soft) or never (hard).
    pub soft: bool,
    /// Agents that must hit in the same step for a joint hit.
    pub required: u8,
}

/// A living mob.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Mob {
    /// Kind.
    pub kind: MobKind,
    /// Column.
    pub x: i32,
    /// Row.
    pub y: i32,
    /// Remaining health.
    pub health: i32,
    /// Steps until it may attack again.
    pub cooldown: i32,
    /// Coordination label.
    pub tag: MobTag,
}

/// A skeleton's arrow in flight.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Arrow {
    /// Column.
    pub x: i32,
    /// Row.
    pub y: i32,
    /// Step per tick.
    pub dx: i32,
    /// Step per tick.
    pub dy: i32,
    /// Damage on hit.
    pub damage: i32,
}

/// A planted sapling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Plant {
    /// Tile index.
    pub tile: usize,
    /// Steps since planted or last eaten.
    pub age: u32,
}

/// A handover in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pending {
    /// Tile index of the target.
    pub tile: usize,
    /// The agent that started it.
    pub initiator: usize,
    /// Step at which it started.
    pub started: u32,
    /// Steps the finisher has.
    pub window: u32,
    /// The structure being built (construction sites); its cost is refunded on expiry.
    pub structure: Option<Structure>,
}

impl Pending {
    /// Steps (this one included) in which a different agent can still finish, as seen
    /// at step `now`: the finisher may act from `started + 1` to `started + window`.
    pub(crate) fn remaining(&self, now: u32) -> u32 {
        (self.started + self.window + 1).saturating_sub(now)
    }
}

/// Whether an agent is up, down (revivable) or gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Life {
    /// Acting.
    Alive,
    /// Health reached zero at step `since`; a teammate can revive it with Do until it
    /// bleeds out.
    Downed {
        /// Step at which it went down.
        since: u32,
    },
    /// Bled out or walked into lava.
    Dead,
}

/// Steps a downed agent waits for a revive before it dies.
pub(crate) const BLEED_OUT_STEPS: u32 = 100;
/// Health after a revive.
pub(crate) const REVIVE_HEALTH: i32 = 3;
/// Capacity of health, food, drink and energy (Craftax at dexterity and strength 1).
pub(crate) const VITAL_MAX: i32 = 9;
/// Extra food and drink capacity of foragers (ALEM: max food = 7 + 2 × dexterity, plus
/// 2 for foragers).
pub(crate) const FORAGER_EXTRA_CAPACITY: i32 = 2;

/// Why an agent's last action failed (the `Last step:` line of its text observation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Note {
    /// A non-specialist's role-gated attempt failed.
    RoleFailed,
    /// The block needs a better pickaxe.
    NeedsBetterPickaxe,
    /// A hard synchronous target had too few agents.
    TooFewAgents,
    /// A solo attempt on a soft synchronous target failed.
    SoloFailed,
    /// The initiator of a handover tried to finish it.
    HandoverNeedsAnotherAgent,
    /// A construction handover was not finished by another agent with the same structure.
    HandoverNeedsSameStructure,
    /// The builders together lack the materials.
    BuildersLackMaterials,
    /// Too few agents crafted the same diamond tool at a forge.
    DiamondNeedsMoreAgents,
    /// The crafting agents together lack the materials.
    CraftersLackMaterials,
}

impl Note {
    /// The sentence shown to the agent.
    pub fn text(self) -> &'static str {
        match self {
            Note::RoleFailed => "the action failed: only a specialist always succeeds",
            Note::NeedsBetterPickaxe => "you need a better pickaxe for this block",
            Note::TooFewAgents => "too few agents acted on this target in the same step",
            Note::SoloFailed => {
                "the solo attempt on this soft target failed; acting together always works"
            }
            Note::HandoverNeedsAnotherAgent => "a different agent must finish this handover",
            Note::HandoverNeedsSameStructure => {
                "a different agent must finish this handover with the same structure"
            }
            Note::BuildersLackMaterials => "the building agents lack the materials",
            Note::DiamondNeedsMoreAgents => {
                "diamond tools need more agents crafting the same item at this forge together"
            }
            Note::CraftersLackMaterials => "the crafting agents together lack the materials",
        }
    }
}

/// A resource request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// What is asked for.
    pub resource: Resource,
    /// Last step at which the request is active.
    pub until: u32,
}

/// The last value an agent sent on the message channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signal {
    /// The value.
    pub value: u8,
    /// When it was sent.
    pub step: u32,
}

/// One agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    /// Column.
    pub x: i32,
    /// Row.
    pub y: i32,
    /// Where Do, place and build act.
    pub facing: Dir,
    /// Specialisation.
    pub role: Role,
    /// Health, 0–9.
    pub health: i32,
    /// Food, 0–9 (0–11 for foragers, see [`AgentState::food_capacity`]).
    pub food: i32,
    /// Drink, 0–9 (0–11 for foragers).
    pub drink: i32,
    /// Energy, 0–9.
    pub energy: i32,
    /// Accumulates towards losing food.
    pub hunger: f32,
    /// Accumulates towards losing drink.
    pub thirst: f32,
    /// Accumulates towards losing (or, asleep, gaining) energy.
    pub fatigue: f32,
    /// Accumulates towards gaining or losing health.
    pub recover: f32,
    /// Asleep: actions are ignored until energy is full.
    pub sleeping: bool,
    /// Up, down or gone.
    pub life: Life,
    /// Counts per [`Item`] slot.
    pub inventory: [u8; Item::COUNT],
    /// Unlocked achievements, one bit each.
    pub achievements: u64,
    /// Reward so far in the base category (achievements and health changes).
    pub base_reward: f64,
    /// Reward so far in the coordination category.
    pub coord_reward: f64,
    /// Active resource request.
    pub request: Option<Request>,
    /// Last message-channel value.
    pub signal: Option<Signal>,
    /// Why the agent's last action failed, when it did (shown in its text observation).
    pub note: Option<Note>,
    /// What put the agent down, while it is down (the cause if it bleeds out).
    pub downed_by: Option<DeathCause>,
}

impl AgentState {
    /// A fresh agent at (x, y) with full health and `needs` food, drink and energy.
    pub fn new(x: i32, y: i32, role: Role, needs: i32) -> Self {
        Self {
            x,
            y,
            facing: Dir::North,
            role,
            health: VITAL_MAX,
            food: needs,
            drink: needs,
            energy: needs,
            hunger: 0.0,
            thirst: 0.0,
            fatigue: 0.0,
            recover: 0.0,
            sleeping: false,
            life: Life::Alive,
            inventory: [0; Item::COUNT],
            achievements: 0,
            base_reward: 0.0,
            coord_reward: 0.0,
            request: None,
            signal: None,
            note: None,
            downed_by: None,
        }
    }

    /// The most food and the most drink the agent can hold: 9, or 11 for a forager.
    pub fn food_capacity(&self) -> i32 {
        if self.role == Role::Forager {
            VITAL_MAX + FORAGER_EXTRA_CAPACITY
        } else {
            VITAL_MAX
        }
    }

    /// Adds `n` food, up to the agent's capacity.
    pub fn eat(&mut self, n: i32) {
        self.food = (self.food + n).min(self.food_capacity());
    }

    /// Adds `n` drink, up to the agent's capacity.
    pub fn drink_up(&mut self, n: i32) {
        self.drink = (self.drink + n).min(self.food_capacity());
    }

    /// How many of `item` the agent holds.
    pub fn count(&self, item: Item) -> u8 {
        self.inventory[item as usize]
    }

    /// Adds `n` of `item`, capped at [`Item::CAP`].
    pub fn add(&mut self, item: Item, n: u8) {
        let slot = &mut self.inventory[item as usize];
        *slot = slot.saturating_add(n).min(Item::CAP);
    }

    /// Removes up to `n` of `item`; returns how many were removed.
    pub fn take(&mut self, item: Item, n: u8) -> u8 {
        let slot = &mut self.inventory[item as usize];
        let taken = (*slot).min(n);
        *slot -= taken;
        taken
    }

    /// Whether the agent is up (not downed, not dead).
    pub fn is_alive(&self) -> bool {
        self.life == Life::Alive
    }

    /// Whether the agent is still in the game (alive or downed).
    pub fn is_present(&self) -> bool {
        self.life != Life::Dead
    }

    /// Whether `a` is unlocked.
    pub fn has(&self, a: Achievement) -> bool {
        self.achievements & a.bit() != 0
    }

    /// Unlocks `a`; true when it is new.
    pub fn unlock(&mut self, a: Achievement) -> bool {
        let new = !self.has(a);
        self.achievements |= a.bit();
        new
    }

    /// Melee damage (Craftax-Classic's sword table; warriors hit twice as hard).
    pub fn damage(&self) -> i32 {
        let best = [
            (Item::DiamondSword, 8),
            (Item::IronSword, 5),
            (Item::StoneSword, 3),
            (Item::WoodSword, 2),
        ]
        .iter()
        .find(|(sword, _)| self.count(*sword) > 0)
        .map_or(1, |(_, d)| *d);
        if self.role == Role::Warrior {
            best * 2
        } else {
            best
        }
    }

    /// The tile the agent faces.
    pub fn target(&self) -> (i32, i32) {
        let (dx, dy) = self.facing.delta();
        (self.x + dx, self.y + dy)
    }

    /// Whether the agent's pickaxes allow mining `block`.
    pub fn can_mine(&self, block: Block) -> bool {
        let has = |item| self.count(item) > 0;
        match block {
            Block::Tree => true,
            Block::Stone | Block::Coal => {
                has(Item::WoodPickaxe) || has(Item::StonePickaxe) || has(Item::IronPickaxe)
            }
            Block::Iron => has(Item::StonePickaxe) || has(Item::IronPickaxe),
            Block::Diamond => has(Item::IronPickaxe) || has(Item::DiamondPickaxe),
            _ => false,
        }
    }
}

/// Episode counters behind the coordination metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counters {
    /// Successful gives.
    pub trades: u32,
    /// Downed teammates revived.
    pub revives: u32,
    /// Handovers started.
    pub handovers_started: u32,
    /// Handovers finished in time.
    pub handovers_completed: u32,
    /// Handovers that ran out of time.
    pub handovers_expired: u32,
    /// Joint actions that met a synchronous requirement (mining, building, mobs, forge).
    pub sync_successes: u32,
    /// Attempts on a synchronous target that had too few agents and achieved nothing.
    pub sync_failures: u32,
    /// Solo attempts on soft targets that succeeded anyway.
    pub soft_solo_successes: u32,
    /// Role-gated attempts by non-specialists.
    pub role_attempts: u32,
    /// Of those, the ones that failed.
    pub role_failures: u32,
    /// Hits on living teammates.
    pub friendly_fire: u32,
    /// Times an agent went down.
    pub downed: u32,
    /// Agents that died for good.
    pub deaths: u32,
    /// Shelters and forges built.
    pub structures_built: u32,
    /// Deaths per [`DeathCause`], in [`DeathCause::ALL`] order.
    pub deaths_by: [u32; DeathCause::COUNT],
}

/// Why an agent died (ALEM Fig. 11): what put it down (it then bled out) or lava.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeathCause {
    /// Health lost while food was zero.
    Starvation,
    /// Health lost while drink was zero (and food was not).
    Dehydration,
    /// Health lost while energy was zero (and food and drink were not).
    Exhaustion,
    /// A zombie's blow or a skeleton's arrow.
    Mob,
    /// A teammate's Do.
    FriendlyFire,
    /// Walking into lava.
    Lava,
}

impl DeathCause {
    /// Number of causes.
    pub const COUNT: usize = 6;
    /// Every cause, in metric order.
    pub const ALL: [DeathCause; DeathCause::COUNT] = [
        DeathCause::Starvation,
        DeathCause::Dehydration,
        DeathCause::Exhaustion,
        DeathCause::Mob,
        DeathCause::FriendlyFire,
        DeathCause::Lava,
    ];

    /// Name used in metrics.
    pub fn name(self) -> &'static str {
        match self {
            DeathCause::Starvation => "starvation",
            DeathCause::Dehydration => "dehydration",
            DeathCause::Exhaustion => "exhaustion",
            DeathCause::Mob => "mob",
            DeathCause::FriendlyFire => "friendly_fire",
            DeathCause::Lava => "lava",
        }
    }
}

/// What world generation put on the map; used by metrics and by the α-invariance tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Census {
    /// Resource blocks with a hard synchronous requirement.
    pub sync_hard: u32,
    /// Resource blocks with a soft synchronous requirement.
    pub sync_soft: u32,
    /// Resource blocks with a handover requirement.
    pub handover: u32,
    /// Construction sites.
    pub construction_sites: u32,
}

impl Census {
    /// Every coordination site (resource blocks and construction sites).
    pub(crate) fn total(&self) -> u32 {
        self.sync_hard + self.sync_soft + self.handover + self.construction_sites
    }
}

/// Spawn-slot labels per mob kind; spawn `i` of a kind takes label `i % MOB_LABELS`.
pub(crate) const MOB_LABELS: usize = 64;

/// The whole state of an episode.
#[derive(Clone, Debug)]
pub(crate) struct World {
    /// Map width.
    pub width: i32,
    /// Map height.
    pub height: i32,
    /// Row-major blocks.
    pub blocks: Vec<Block>,
    /// Row-major coordination tags.
    pub tags: Vec<Tag>,
    /// Row-major mob occupancy: 0 none, else mob index + 1.
    pub mob_at: Vec<u8>,
    /// The agents, by index.
    pub agents: Vec<AgentState>,
    /// Living mobs.
    pub mobs: Vec<Mob>,
    /// Arrows in flight.
    pub arrows: Vec<Arrow>,
    /// Saplings growing.
    pub plants: Vec<Plant>,
    /// Handovers in progress.
    pub pending: Vec<Pending>,
    /// Spawn-slot labels per [`MobKind`].
    pub mob_labels: [Vec<MobTag>; 3],
    /// Mobs spawned so far per kind.
    pub spawned: [u32; 3],
    /// Shelters built (any shelter speeds up sleeping recovery for the team).
    pub shelters: u32,
    /// Steps taken.
    pub step: u32,
    /// Daylight in [0, 1].
    pub light: f32,
    /// The dynamics RNG.
    pub rng: Rng,
    /// Counters for metrics.
    pub counters: Counters,
    /// What generation placed.
    pub census: Census,
}

impl World {
    /// Tile index of (x, y), `None` outside the map.
    pub(crate) fn tile(&self, x: i32, y: i32) -> Option<usize> {
        (x >= 0 && y >= 0 && x < self.width && y < self.height)
            .then(|| (y * self.width + x) as usize)
    }

    /// (x, y) of a tile index.
    pub(crate) fn coords(&self, tile: usize) -> (i32, i32) {
        let tile = tile as i32;
        (tile % self.width, tile / self.width)
    }

    /// The block at (x, y); [`Block::OutOfBounds`] outside.
    pub(crate) fn block(&self, x: i32, y: i32) -> Block {
        self.tile(x, y)
            .map_or(Block::OutOfBounds, |t| self.blocks[t])
    }

    /// The agent (alive or downed) standing on (x, y).
    pub(crate) fn agent_at(&self, x: i32, y: i32) -> Option<usize> {
        self.agents
            .iter()
            .position(|a| a.is_present() && a.x == x && a.y == y)
    }

    /// The mob on (x, y).
    pub(crate) fn mob_at(&self, x: i32, y: i32) -> Option<usize> {
        self.tile(x, y)
            .and_then(|t| self.mob_at[t].checked_sub(1))
            .map(usize::from)
    }

    /// Whether an agent or mob may step onto (x, y) (lava counts as enterable).
    pub(crate) fn is_free(&self, x: i32, y: i32) -> bool {
        match self.tile(x, y) {
            None => false,
            Some(t) => {
                !self.blocks[t].is_solid() && self.mob_at[t] == 0 && self.agent_at(x, y).is_none()
            }
        }
    }

    /// The nearest living (not downed) agent to (x, y) by Manhattan distance, lowest
    /// index on ties.
    pub(crate) fn nearest_alive_agent(&self, x: i32, y: i32) -> Option<(usize, i32)> {
        self.agents
            .iter()
            .enumerate()
            .filter(|(_, a)| a.is_alive())
            .map(|(i, a)| (i, (a.x - x).abs() + (a.y - y).abs()))
            .min_by_key(|(i, d)| (*d, *i))
    }

    /// Puts a mob on the map.
    pub(crate) fn add_mob(&mut self, mob: Mob) {
        if let Some(t) = self.tile(mob.x, mob.y) {
            self.mobs.push(mob);
            self.mob_at[t] = self.mobs.len() as u8;
        }
    }

    /// Removes mob `index` (the last mob takes its index).
    pub(crate) fn remove_mob(&mut self, index: usize) {
        let mob = self.mobs.swap_remove(index);
        if let Some(t) = self.tile(mob.x, mob.y) {
            self.mob_at[t] = 0;
        }
        if let Some(moved) = self.mobs.get(index)
            && let Some(t) = self.tile(moved.x, moved.y)
        {
            self.mob_at[t] = index as u8 + 1;
        }
    }

    /// Moves mob `index` to (x, y) (which must be free).
    pub(crate) fn move_mob(&mut self, index: usize, x: i32, y: i32) {
        let mob = self.mobs[index];
        if let (Some(from), Some(to)) = (self.tile(mob.x, mob.y), self.tile(x, y)) {
            self.mob_at[from] = 0;
            self.mob_at[to] = index as u8 + 1;
            self.mobs[index].x = x;
            self.mobs[index].y = y;
        }
    }

    /// The handover in progress at `tile`.
    pub(crate) fn pending_at(&self, tile: usize) -> Option<&Pending> {
        self.pending.iter().find(|p| p.tile == tile)
    }

    /// Whether a block of `kind` lies in the 8-neighbourhood of (x, y) (Craftax-Classic's
    /// "nearby" for crafting stations).
    pub(crate) fn near(&self, x: i32, y: i32, kind: Block) -> Option<(i32, i32)> {
        NEIGHBOURS
            .iter()
            .map(|(dx, dy)| (x + dx, y + dy))
            .find(|(nx, ny)| self.block(*nx, *ny) == kind)
    }
}

/// The 8-neighbourhood, in a fixed order.
pub(crate) const NEIGHBOURS: [(i32, i32); 8] = [
    (0, -1),
    (0, 1),
    (-1, 0),
    (1, 0),
    (-1, -1),
    (1, -1),
    (-1, 1),
    (1, 1),
];

/// Daylight at `step`: 1 − |cos(π·((t / day) mod 1 + 0.3))|³ (Craftax-Classic).
pub(crate) fn light_level(step: u32, day_length: u32) -> f32 {
    let progress = (f64::from(step) / f64::from(day_length)).fract() + 0.3;
    let c = cos_pi(progress).abs();
    (1.0 - c * c * c) as f32
}

/// cos(πx) from a Taylor series after exact range reduction: platform libm cosines may
/// differ in the last bit, and daylight feeds the spawn draws, so it must not.
fn cos_pi(x: f64) -> f64 {
    let x = x.rem_euclid(2.0);
    let x = if x > 1.0 { 2.0 - x } else { x };
    let (x, sign) = if x > 0.5 { (1.0 - x, -1.0) } else { (x, 1.0) };
    let t2 = (std::f64::consts::PI * x) * (std::f64::consts::PI * x);
    let (mut term, mut sum) = (1.0, 1.0);
    for k in 1..=10 {
        term *= -t2 / f64::from((2 * k - 1) * (2 * k));
        sum += term;
    }
    sign * sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cos_pi_matches_the_library() {
        for i in 0..=400 {
            let x = f64::from(i) / 100.0 - 1.0;
            assert!(
                (cos_pi(x) - (std::f64::consts::PI * x).cos()).abs() < 1e-12,
                "{x}"
            );
        }
    }

    #[test]
    fn light_starts_bright_and_has_a_night() {
        assert!(light_level(0, 300) > 0.75);
        let darkest = (0..300).map(|t| light_level(t, 300)).fold(1.0, f32::min);
        assert!(darkest < 0.05, "{darkest}");
    }

    #[test]
    fn inventory_is_capped_and_damage_follows_swords() {
        let mut a = AgentState::new(0, 0, Role::Miner, VITAL_MAX);
        a.add(Item::Wood, 20);
        assert_eq!(a.count(Item::Wood), 9);
        assert_eq!(a.take(Item::Wood, 12), 9);
        assert_eq!(a.damage(), 1);
        a.add(Item::StoneSword, 1);
        assert_eq!(a.damage(), 3);
        a.role = Role::Warrior;
        assert_eq!(a.damage(), 6);
    }

    #[test]
    fn foragers_hold_more_food_and_drink() {
        let mut miner = AgentState::new(0, 0, Role::Miner, VITAL_MAX);
        let mut forager = AgentState::new(0, 0, Role::Forager, VITAL_MAX);
        for a in [&mut miner, &mut forager] {
            a.eat(6);
            a.drink_up(6);
        }
        assert_eq!((miner.food, miner.drink), (9, 9));
        assert_eq!((forager.food, forager.drink), (11, 11));
        assert_eq!(forager.energy, 9);
    }
}
