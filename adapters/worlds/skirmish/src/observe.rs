//! The symbolic observation: SMAC-style features of the own unit, the enemies and allies
//! in sight, and the team's entity memory.

use crate::battle::{Battle, Dir, Order, actions, bits};
use crate::settings::Config;
use crate::units::{UnitType, Weapon};

/// Offsets of the symbolic observation of `skirmish` (a flat `f32` vector, SMAC's
/// normalisations). For an agent of a team of `a` units facing `e` enemies, with `T` unit
/// types in the pool:
///
/// | block | count | fields |
/// |---|---|---|
/// | moves | 1 × 4 | can move north, south, east, west (0/1) |
/// | enemies | `e` × [`UNIT`](layout::UNIT)` + T` | enemy `k` (target slot `k`) |
/// | allies | `a − 1` × [`UNIT`](layout::UNIT)` + T` | the other allies in index order |
/// | own | 1 × [`OWN`](layout::OWN)` + T` | the agent's own unit |
/// | enemy memory | `e` × [`MEMORY`](layout::MEMORY)` + T` | the team's entity memory of enemy `k` |
/// | ally memory | `a − 1` × [`MEMORY`](layout::MEMORY)` + T` | the team's entity memory of each other ally |
///
/// A unit block (all zeros unless the unit is alive and in sight): visible, targetable
/// (the attack — for a medivac's ally, heal — action on it is legal now), distance,
/// relative x and y (each divided by the agent's sight range), health and shield
/// (fractions of their maxima), weapon cooldown (fraction of the type's), the unit's last
/// move (x, y), its last target slot (`(k + 1) / slots`, 0 when none), then its type as a
/// one-hot over the pool. The own block: health, shield, x and y (divided by the map
/// size), cooldown, energy (fraction of the maximum), last move (x, y), type one-hot. A
/// memory block: known, relative x and y of the remembered position (divided by the map
/// size), remembered health and shield, age (steps, divided by `memory_max_age + 1`),
/// hops (divided by `max_hops`, 0 for the agent's own sighting), then the unit's type
/// one-hot. A dead agent's observation is all zeros (SMAC's).
///
/// Both teams' vectors have the same length (`a − 1 + e` other units either way); only
/// where the enemy blocks end differs.
///
/// ```
/// use mosaic_skirmish::{Config, Layout};
/// let layout = Layout::new(&Config::default(), 0);
/// // 4 moves, 9 other units of 11 + 3 fields, own 8 + 3, 9 memory blocks of 7 + 3.
/// assert_eq!(layout.len(), 4 + 9 * 14 + 11 + 9 * 10);
/// assert_eq!(layout.enemy(1), 4 + 14);
/// ```
pub mod layout {
    /// Fields of a unit block before the type one-hot.
    pub const UNIT: usize = 11;
    /// Unit block: in sight (0/1).
    pub const VISIBLE: usize = 0;
    /// Unit block: the target action on it is legal now (0/1).
    pub const TARGETABLE: usize = 1;
    /// Unit block: distance / sight range.
    pub const DISTANCE: usize = 2;
    /// Unit block: Δx / sight range.
    pub const REL_X: usize = 3;
    /// Unit block: Δy / sight range.
    pub const REL_Y: usize = 4;
    /// Unit block: health fraction.
    pub const HEALTH: usize = 5;
    /// Unit block: shield fraction.
    pub const SHIELD: usize = 6;
    /// Unit block: cooldown fraction.
    pub const COOLDOWN: usize = 7;
    /// Unit block: last move, x then y.
    pub const LAST_MOVE: usize = 8;
    /// Unit block: last target slot, `(k + 1) / slots`.
    pub const LAST_TARGET: usize = 10;

    /// Fields of the own block before the type one-hot.
    pub const OWN: usize = 8;
    /// Own block: health fraction.
    pub const OWN_HEALTH: usize = 0;
    /// Own block: shield fraction.
    pub const OWN_SHIELD: usize = 1;
    /// Own block: x / map size, then y / map size.
    pub const OWN_POS: usize = 2;
    /// Own block: cooldown fraction.
    pub const OWN_COOLDOWN: usize = 4;
    /// Own block: energy fraction (medivacs).
    pub const OWN_ENERGY: usize = 5;
    /// Own block: last move, x then y.
    pub const OWN_LAST_MOVE: usize = 6;

    /// Fields of a memory block before the type one-hot.
    pub const MEMORY: usize = 7;
    /// Memory block: known (0/1).
    pub const KNOWN: usize = 0;
    /// Memory block: Δx / map size.
    pub const MEM_REL_X: usize = 1;
    /// Memory block: Δy / map size.
    pub const MEM_REL_Y: usize = 2;
    /// Memory block: remembered health fraction.
    pub const MEM_HEALTH: usize = 3;
    /// Memory block: remembered shield fraction.
    pub const MEM_SHIELD: usize = 4;
    /// Memory block: age / (memory_max_age + 1).
    pub const MEM_AGE: usize = 5;
    /// Memory block: hops / max_hops.
    pub const MEM_HOPS: usize = 6;

    /// The move block: north, south, east, west.
    pub const MOVES: usize = 0;
}

/// Where each block of one team's symbolic observation starts (see [`layout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Units in the agent's team.
    pub allies: usize,
    /// Units in the other team.
    pub enemies: usize,
    /// Unit types in the pool (length of the one-hots).
    pub types: usize,
}

impl Layout {
    /// The layout for agents of team `team` (0 blue, 1 red).
    pub fn new(config: &Config, team: usize) -> Self {
        Self {
            allies: config.teams[team.min(1)],
            enemies: config.teams[1 - team.min(1)],
            types: config.pool.len(),
        }
    }

    /// Length of a unit block.
    pub fn unit_block(&self) -> usize {
        layout::UNIT + self.types
    }

    /// Start of enemy `k`'s block.
    pub fn enemy(&self, k: usize) -> usize {
        4 + k * self.unit_block()
    }

    /// Start of the block of the `slot`-th other ally.
    pub fn ally(&self, slot: usize) -> usize {
        self.enemy(self.enemies) + slot * self.unit_block()
    }

    /// Start of the own block.
    pub fn own(&self) -> usize {
        self.ally(self.allies - 1)
    }

    /// Length of a memory block.
    pub fn memory_block(&self) -> usize {
        layout::MEMORY + self.types
    }

    /// Start of the memory block of enemy `k`.
    pub fn enemy_memory(&self, k: usize) -> usize {
        self.own() + layout::OWN + self.types + k * self.memory_block()
    }

    /// Start of the memory block of the `slot`-th other ally.
    pub fn ally_memory(&self, slot: usize) -> usize {
        self.enemy_memory(self.enemies) + slot * self.memory_block()
    }

    /// Total length.
    pub fn len(&self) -> usize {
        self.ally_memory(self.allies - 1)
    }

    /// Whether the vector is empty (never: there is always the move block).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The team-local index of the `slot`-th other ally of ally `me`.
    pub fn ally_index(me: usize, slot: usize) -> usize {
        if slot < me { slot } else { slot + 1 }
    }
}

/// Cooldown as a fraction of the type's (0 when the type has none).
fn cooldown_fraction(kind: UnitType, cooldown: f32) -> f32 {
    let base = kind.stats().cooldown;
    if base > 0.0 {
        (cooldown / base).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

fn fraction(value: f32, max: f32) -> f32 {
    if max > 0.0 { value / max } else { 0.0 }
}

/// The last target slot of `order`, as `(k + 1) / slots`.
fn last_target(order: Order, slots: usize) -> f32 {
    match order {
        Order::Target(slot) => (slot + 1) as f32 / slots as f32,
        _ => 0.0,
    }
}

/// Where another unit's blocks sit in an agent's observation.
struct Slots {
    /// Start of its unit block.
    unit: usize,
    /// Start of its memory block.
    memory: usize,
    /// Its target slot for this agent's actions, if the agent may target it.
    target: Option<usize>,
}

/// The blocks of unit `j` in the observation of unit `agent` (not `j`).
#[inline]
fn slots(battle: &Battle, layout: &Layout, agent: usize, j: usize, heals: bool) -> Slots {
    let team = battle.units[agent].team;
    if battle.units[j].team == team {
        let (local, other) = (agent - battle.offset(team), j - battle.offset(team));
        let slot = if other < local { other } else { other - 1 };
        Slots {
            unit: layout.ally(slot),
            memory: layout.ally_memory(slot),
            target: heals.then_some(other),
        }
    } else {
        let k = j - battle.offset(1 - team);
        Slots {
            unit: layout.enemy(k),
            memory: layout.enemy_memory(k),
            target: (!heals).then_some(k),
        }
    }
}

/// Writes the symbolic observation of unit `agent` into `out`, reading which targets are
/// legal from its mask `legal` (see [`Battle::legal`]).
pub(crate) fn symbolic(battle: &Battle, agent: usize, legal: &[bool], out: &mut Vec<f32>) {
    let config = &battle.config;
    let me = &battle.units[agent];
    let team = me.team;
    let layout = Layout::new(config, team);
    out.clear();
    out.resize(layout.len(), 0.0);
    if !me.alive() {
        return;
    }
    let stats = me.kind.stats();
    let heals = me.kind.heals();
    let per_sight = 1.0 / stats.sight_range;
    let flag = |action: usize| f32::from(u8::from(legal.get(action) == Some(&true)));
    for k in 0..Dir::ALL.len() {
        out[layout::MOVES + k] = flag(actions::NORTH as usize + k);
    }
    let slots_of = |j: usize| slots(battle, &layout, agent, j, heals);

    for j in bits(battle.visible(agent)) {
        let u = &battle.units[j];
        let s = u.kind.stats();
        let at = slots_of(j);
        let block = &mut out[at.unit..at.unit + layout.unit_block()];
        let (dx, dy) = (u.pos[0] - me.pos[0], u.pos[1] - me.pos[1]);
        block[layout::VISIBLE] = 1.0;
        block[layout::TARGETABLE] = at
            .target
            .map_or(0.0, |k| flag(actions::TARGET as usize + k));
        block[layout::DISTANCE] = (dx * dx + dy * dy).sqrt() * per_sight;
        block[layout::REL_X] = dx * per_sight;
        block[layout::REL_Y] = dy * per_sight;
        block[layout::HEALTH] = fraction(u.health, s.health);
        block[layout::SHIELD] = fraction(u.shield, s.shield);
        block[layout::COOLDOWN] = cooldown_fraction(u.kind, u.cooldown);
        let [mx, my] = u.order.movement();
        block[layout::LAST_MOVE] = mx;
        block[layout::LAST_MOVE + 1] = my;
        block[layout::LAST_TARGET] = last_target(u.order, config.targets());
        block[layout::UNIT + config.type_bit(u.kind)] = 1.0;
    }

    let own = layout.own();
    out[own + layout::OWN_HEALTH] = fraction(me.health, stats.health);
    out[own + layout::OWN_SHIELD] = fraction(me.shield, stats.shield);
    out[own + layout::OWN_POS] = me.pos[0] / config.map_size;
    out[own + layout::OWN_POS + 1] = me.pos[1] / config.map_size;
    out[own + layout::OWN_COOLDOWN] = cooldown_fraction(me.kind, me.cooldown);
    if let Weapon::Heal { max_energy, .. } = stats.weapon {
        out[own + layout::OWN_ENERGY] = fraction(me.energy, max_energy);
    }
    let [mx, my] = me.order.movement();
    out[own + layout::OWN_LAST_MOVE] = mx;
    out[own + layout::OWN_LAST_MOVE + 1] = my;
    out[own + layout::OWN + config.type_bit(me.kind)] = 1.0;

    let per_size = 1.0 / config.map_size;
    let age_scale = 1.0 / (config.memory.max_age as f32 + 1.0);
    let hop_scale = 1.0 / config.memory.max_hops.max(1) as f32;
    let local = agent - battle.offset(team);
    for r in battle.memory[team].recollections(local) {
        if r.entity == agent {
            continue;
        }
        let s = battle.units[r.entity].kind.stats();
        let at = slots_of(r.entity).memory;
        let block = &mut out[at..at + layout.memory_block()];
        block[layout::KNOWN] = 1.0;
        block[layout::MEM_REL_X] = (r.payload.pos[0] - me.pos[0]) * per_size;
        block[layout::MEM_REL_Y] = (r.payload.pos[1] - me.pos[1]) * per_size;
        block[layout::MEM_HEALTH] = fraction(r.payload.health, s.health);
        block[layout::MEM_SHIELD] = fraction(r.payload.shield, s.shield);
        block[layout::MEM_AGE] = r.age as f32 * age_scale;
        block[layout::MEM_HOPS] = r.hops as f32 * hop_scale;
        block[layout::MEMORY + config.type_bit(battle.units[r.entity].kind)] = 1.0;
    }
}
