//! The rules: units on a continuous square map, one environment step of eight physics
//! ticks, rewards, and what every unit perceives afterwards.
//!
//! A step follows SMAX's `step_env`: the joint action is decoded into orders, then eight
//! ticks of 1/16 s each move units, resolve attacks from the positions at the start of
//! the tick (cooldown redrawn as the base cooldown plus a uniform deviation in
//! [−1/16, 2/16) s, as SMAX does after pysc2), apply damage, heal, regenerate, and push
//! overlapping units apart. Shields, armour, the colossus lance, the baneling blast and
//! medivac healing are StarCraft II mechanics SMAX lacks (see [`crate::units`]).

use crate::settings::{Config, RewardKind};
use crate::spawn;
use crate::units::{SHIELD_REGEN_DELAY, SHIELD_REGEN_RATE, UnitType, Weapon};
use mosaic_core::entity_memory::{EntityMemory, MemoryError};
use mosaic_core::rng::{Rng, seeded};
use mosaic_core::{Action, Event, Transition};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

mod perception;

/// Physics ticks per environment step (SMAX's `world_steps_per_env_step`).
pub const TICKS_PER_STEP: u32 = 8;
/// Seconds per tick (SMAX's `time_per_step`).
pub const TICK: f32 = 1.0 / 16.0;
/// Team names, blue (SMAC's allies) then red (SMAC's enemies).
pub const TEAMS: [&str; 2] = ["blue", "red"];

/// SMAC's reward for killing a unit, before scaling.
const KILL_REWARD: f32 = 10.0;
/// SMAC's reward for winning, before scaling.
const WIN_REWARD: f32 = 200.0;
/// What the scaled shaped reward of an episode sums to at most.
pub const MAX_SHAPED_RETURN: f32 = 20.0;
/// Smallest damage a hit on health does, whatever the armour (StarCraft II).
const MIN_DAMAGE: f32 = 0.5;

/// Action indices (SMAC's layout): no-op, stop, four moves, then one target per slot.
pub mod actions {
    /// Only for dead units.
    pub const NOOP: u32 = 0;
    /// Stand still.
    pub const STOP: u32 = 1;
    /// Move towards +y.
    pub const NORTH: u32 = 2;
    /// Move towards −y.
    pub const SOUTH: u32 = 3;
    /// Move towards +x.
    pub const EAST: u32 = 4;
    /// Move towards −x.
    pub const WEST: u32 = 5;
    /// Attack enemy `k` (a medivac: heal ally `k`) is `TARGET + k`.
    pub const TARGET: u32 = 6;
}

/// A compass direction of movement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    /// +y.
    North,
    /// −y.
    South,
    /// +x.
    East,
    /// −x.
    West,
}

impl Dir {
    /// The four directions in action order.
    pub const ALL: [Dir; 4] = [Dir::North, Dir::South, Dir::East, Dir::West];

    /// The unit vector.
    pub const fn vector(self) -> [f32; 2] {
        match self {
            Dir::North => [0.0, 1.0],
            Dir::South => [0.0, -1.0],
            Dir::East => [1.0, 0.0],
            Dir::West => [-1.0, 0.0],
        }
    }

    /// The capitalised name, as COMPASS writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Dir::North => "North",
            Dir::South => "South",
            Dir::East => "East",
            Dir::West => "West",
        }
    }
}

/// What a unit was told to do this step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Nothing (dead units, and before the first step).
    Idle,
    /// Stand still.
    Stop,
    /// Move.
    Move(Dir),
    /// Attack (or heal) target slot `slot`: an enemy, or for a medivac an ally.
    Target(usize),
}

impl Order {
    /// The movement vector of this order.
    pub fn movement(self) -> [f32; 2] {
        match self {
            Order::Move(dir) => dir.vector(),
            _ => [0.0, 0.0],
        }
    }
}

/// One unit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    /// Its type.
    pub kind: UnitType,
    /// 0 blue, 1 red.
    pub team: usize,
    /// Position, x east, y north.
    pub pos: [f32; 2],
    /// Health; dead at 0.
    pub health: f32,
    /// Shield.
    pub shield: f32,
    /// Energy (medivacs).
    pub energy: f32,
    /// Seconds until the weapon is ready.
    pub cooldown: f32,
    /// Seconds since the unit last took damage (shield regeneration).
    pub since_hit: f32,
    /// This step's order.
    pub order: Order,
}

impl Unit {
    /// A unit of `kind` on `team` at `pos`, as it spawns: full health, shield and starting
    /// energy, weapon ready, no order.
    pub fn fresh(kind: UnitType, team: usize, pos: [f32; 2]) -> Self {
        let stats = kind.stats();
        let energy = match stats.weapon {
            Weapon::Heal { start_energy, .. } => start_energy,
            _ => 0.0,
        };
        Self {
            kind,
            team,
            pos,
            health: stats.health,
            shield: stats.shield,
            energy,
            cooldown: 0.0,
            since_hit: 0.0,
            order: Order::Idle,
        }
    }

    /// Still in the fight.
    pub fn alive(&self) -> bool {
        self.health > 0.0
    }

    /// Health plus shield.
    pub fn hit_points(&self) -> f32 {
        self.health + self.shield
    }
}

/// What an agent reports about a unit it sees, filed in its team's entity memory.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sighting {
    /// Position when seen.
    pub pos: [f32; 2],
    /// Health when seen.
    pub health: f32,
    /// Shield when seen.
    pub shield: f32,
}

/// Per-team counters for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TeamStats {
    /// Health and shield taken from enemies.
    pub damage_dealt: f64,
    /// Health restored to friends.
    pub healing: f64,
    /// Enemy units that died.
    pub kills: u32,
    /// Over all steps: (agent, enemy) pairs known this step only through a relay.
    pub relayed_sightings: u64,
}

/// How the episode ended, once it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// Team `0` (blue) or `1` (red) destroyed the other.
    Won(usize),
    /// Both teams died in the same step.
    Draw,
    /// The step limit came first.
    TimeOut,
}

/// A hit to apply at the end of a tick.
#[derive(Clone, Copy, Debug)]
struct Hit {
    attacker: usize,
    target: usize,
}

/// Buffers reused every tick (not part of the state).
#[derive(Clone, Debug, Default)]
struct Scratch {
    hits: Vec<Hit>,
    heals: Vec<(usize, usize)>,
    exploded: Vec<usize>,
}

/// The whole state of an episode (everything a snapshot needs, plus derived views).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Battle {
    /// The rules in force.
    pub config: Config,
    /// Units in agent order: blue, then red.
    pub units: Vec<Unit>,
    /// Steps taken since reset.
    pub steps: u32,
    /// The episode's random stream (spawn, cooldown deviations).
    pub rng: Rng,
    /// Per unit: the enemy that first spotted it (extended partial observability).
    pub spotters: Vec<Option<usize>>,
    /// Per team: its entity memory over every unit.
    pub memory: [EntityMemory<Sighting>; 2],
    /// Per unit: the lowest hit points it has had (damage is rewarded down to it once).
    pub credited: Vec<f32>,
    /// Per-team counters.
    pub stats: [TeamStats; 2],
    /// How the episode ended.
    pub ending: Option<Ending>,
    /// Per unit: the units it sees now (bit `j`), after extended partial observability.
    #[serde(skip)]
    visible: Vec<u64>,
    #[serde(skip)]
    scratch: Scratch,
}

impl PartialEq for Battle {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config
            && self.units == other.units
            && self.steps == other.steps
            && self.rng == other.rng
            && self.spotters == other.spotters
            && self.memory == other.memory
            && self.credited == other.credited
            && self.stats == other.stats
            && self.ending == other.ending
    }
}

/// Squared distance.
fn distance2(a: [f32; 2], b: [f32; 2]) -> f32 {
    let (dx, dy) = (a[0] - b[0], a[1] - b[1]);
    dx * dx + dy * dy
}

/// Whether `target` is within `range` of `from` (centre to centre, SMACv2's `<=`).
pub(crate) fn in_range(from: [f32; 2], target: [f32; 2], range: f32) -> bool {
    distance2(from, target) <= range * range
}

/// Indices of the set bits of `word`, lowest first.
pub(crate) fn bits(mut word: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (word != 0).then(|| {
            let bit = word.trailing_zeros() as usize;
            word &= word - 1;
            bit
        })
    })
}

impl Battle {
    /// A new episode drawn from `seed`.
    pub fn new(config: Config, seed: u64) -> Result<Self, MemoryError> {
        let mut rng = seeded(seed);
        let types = spawn::draw_teams(&config, &mut rng);
        let positions = spawn::draw_positions(&config, &mut rng);
        let units: Vec<Unit> = types
            .iter()
            .zip(positions)
            .enumerate()
            .map(|(i, (kind, pos))| Unit::fresh(*kind, usize::from(i >= config.teams[0]), pos))
            .collect();
        let n = units.len();
        let memory = [
            EntityMemory::new(config.teams[0], n, config.memory)?,
            EntityMemory::new(config.teams[1], n, config.memory)?,
        ];
        let mut battle = Self {
            credited: units.iter().map(Unit::hit_points).collect(),
            config,
            units,
            steps: 0,
            rng,
            spotters: vec![None; n],
            memory,
            stats: [TeamStats::default(); 2],
            ending: None,
            visible: vec![0; n],
            scratch: Scratch::default(),
        };
        battle.push_apart();
        battle.perceive();
        Ok(battle)
    }

    /// Replaces the units (same teams, agent order) and starts perceiving afresh, as if
    /// the episode had begun with them: for tests that stage a situation.
    #[cfg(test)]
    pub(crate) fn arrange(&mut self, units: Vec<Unit>) {
        assert_eq!(
            units.len(),
            self.units.len(),
            "arranged units must fill the teams"
        );
        self.credited = units.iter().map(Unit::hit_points).collect();
        self.units = units;
        self.spotters.fill(None);
        for memory in &mut self.memory {
            memory.clear();
        }
        self.stats = [TeamStats::default(); 2];
        self.ending = None;
        self.perceive();
    }

    /// The episode has ended.
    pub fn is_over(&self) -> bool {
        self.ending.is_some()
    }

    /// Index of team `team`'s first unit.
    pub fn offset(&self, team: usize) -> usize {
        if team == 0 { 0 } else { self.config.teams[0] }
    }

    /// The units of team `team`, as global indices.
    pub fn members(&self, team: usize) -> std::ops::Range<usize> {
        let start = self.offset(team);
        start..start + self.config.teams[team]
    }

    /// Bit mask of the living units.
    fn living(&self) -> u64 {
        self.units
            .iter()
            .enumerate()
            .fold(0, |acc, (i, u)| if u.alive() { acc | 1 << i } else { acc })
    }

    /// Bit mask of the units of team `team`.
    fn team_mask(&self, team: usize) -> u64 {
        let r = self.members(team);
        (u64::MAX >> (64 - r.len())) << r.start
    }

    /// The unit a target slot of unit `unit` names: an enemy, or for a medivac an ally.
    pub fn target_of(&self, unit: usize, slot: usize) -> Option<usize> {
        let u = &self.units[unit];
        let team = if u.kind.heals() { u.team } else { 1 - u.team };
        (slot < self.config.teams[team]).then(|| self.offset(team) + slot)
    }

    /// The units `unit` sees now (after extended partial observability).
    pub fn visible(&self, unit: usize) -> u64 {
        self.visible.get(unit).copied().unwrap_or(0)
    }

    /// Whether `unit` knows where `other` is this step: sees it, or was told this step.
    pub fn knows_now(&self, unit: usize, other: usize) -> bool {
        if self.visible(unit) & (1 << other) != 0 {
            return true;
        }
        let team = self.units[unit].team;
        self.memory[team]
            .recall(unit - self.offset(team), other)
            .is_some_and(|r| r.age == 0)
    }

    /// Whether unit `unit` may use target slot `slot` now: a living target it can hit (or
    /// heal) in range, whose position it knows this step.
    pub fn can_use_target(&self, unit: usize, slot: usize) -> bool {
        slot < 64 && self.usable_targets(unit) & (1 << slot) != 0
    }

    /// The target slots unit `unit` may use now, as bits (see
    /// [`Battle::can_use_target`]).
    pub fn usable_targets(&self, unit: usize) -> u64 {
        let u = &self.units[unit];
        if !u.alive() {
            return 0;
        }
        let team = if u.kind.heals() { u.team } else { 1 - u.team };
        let range = u.kind.stats().attack_range;
        let offset = self.offset(team);
        let mut usable = 0;
        for slot in 0..self.config.teams[team] {
            let target = offset + slot;
            let t = &self.units[target];
            if target != unit
                && t.alive()
                && in_range(u.pos, t.pos, range)
                && u.kind.can_target(t.kind)
                && self.knows_now(unit, target)
            {
                usable |= 1 << slot;
            }
        }
        usable
    }

    /// Whether unit `unit` may move in `dir`: a step of one map unit stays inside the map
    /// (SMACv2's boundaries). Where edges kill, every move is open, as in SMAX: walking into
    /// the edge is the unit's own (fatal) choice.
    pub fn can_move(&self, unit: usize, dir: Dir) -> bool {
        let u = &self.units[unit];
        let [dx, dy] = dir.vector();
        let (x, y) = (u.pos[0] + dx, u.pos[1] + dy);
        let size = self.config.map_size;
        u.alive() && (self.config.walls_kill || (x > 0.0 && y > 0.0 && x < size && y < size))
    }

    /// The legal-action mask of unit `unit` (SMAC's: a dead unit may only no-op).
    pub fn legal(&self, unit: usize, mask: &mut Vec<bool>) {
        mask.clear();
        mask.resize(actions::TARGET as usize + self.config.targets(), false);
        if !self.units[unit].alive() {
            mask[actions::NOOP as usize] = true;
            return;
        }
        mask[actions::STOP as usize] = true;
        for (k, dir) in Dir::ALL.into_iter().enumerate() {
            mask[actions::NORTH as usize + k] = self.can_move(unit, dir);
        }
        let usable = self.usable_targets(unit);
        for (slot, legal) in mask[actions::TARGET as usize..].iter_mut().enumerate() {
            *legal = usable & (1 << slot) != 0;
        }
    }

    /// The order an action gives.
    fn decode(action: Action) -> Order {
        match action.0 {
            actions::NOOP => Order::Idle,
            actions::STOP => Order::Stop,
            a @ actions::NORTH..=actions::WEST => {
                Order::Move(Dir::ALL[(a - actions::NORTH) as usize])
            }
            a => Order::Target((a - actions::TARGET) as usize),
        }
    }

    /// One environment step. `actions[i]` is unit `i`'s action (`None`: it stops).
    pub fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) {
        let n = self.units.len();
        out.clear(n);
        self.steps += 1;
        for (i, unit) in self.units.iter_mut().enumerate() {
            unit.order = match (unit.alive(), actions.get(i).copied().flatten()) {
                (false, _) => Order::Idle,
                (true, None) => Order::Stop,
                (true, Some(action)) => Self::decode(action),
            };
        }
        let alive_before = self.living();
        for _ in 0..TICKS_PER_STEP {
            self.tick();
        }
        let mut gains = [0.0f32; 2];
        let mut kills = [0u32; 2];
        for (j, unit) in self.units.iter().enumerate() {
            let now = unit.hit_points().max(0.0);
            let scorer = 1 - unit.team;
            if now < self.credited[j] {
                gains[scorer] += self.credited[j] - now;
                self.credited[j] = now;
            }
            if alive_before & (1 << j) != 0 && !unit.alive() {
                kills[scorer] += 1;
                out.events.push(Event {
                    kind: "death".into(),
                    agent: Some(j),
                    detail: Some(serde_json::json!({ "unit": unit.kind.name() })),
                });
            }
        }
        for j in bits(alive_before & !self.living()) {
            for memory in &mut self.memory {
                memory.forget(j);
            }
        }
        for (team, k) in kills.iter().enumerate() {
            self.stats[team].kills += k;
        }
        self.ending = self.judge();
        self.reward(gains, kills, out);
        if let Some(ending) = self.ending {
            let detail = match ending {
                Ending::Won(team) => serde_json::json!({ "winner": TEAMS[team] }),
                Ending::Draw => serde_json::json!({ "winner": null }),
                Ending::TimeOut => serde_json::json!({ "winner": null, "time_out": true }),
            };
            out.events.push(Event {
                kind: "battle_end".into(),
                agent: None,
                detail: Some(detail),
            });
            let timed_out = ending == Ending::TimeOut;
            out.terminated.fill(!timed_out);
            out.truncated.fill(timed_out);
        }
        self.perceive();
    }

    /// How the episode stands after a step.
    fn judge(&self) -> Option<Ending> {
        let standing = [0, 1].map(|t| self.members(t).any(|i| self.units[i].alive()));
        match standing {
            [true, false] => Some(Ending::Won(0)),
            [false, true] => Some(Ending::Won(1)),
            [false, false] => Some(Ending::Draw),
            [true, true] => (self.steps >= self.config.max_steps).then_some(Ending::TimeOut),
        }
    }

    /// The step's reward, the same for every unit of a team, dead or alive (SMAC's team
    /// reward): shaped, the damage newly taken from enemies (healing and regeneration
    /// earn nothing back), 10 per kill and 200 for the win, scaled so that the most an
    /// episode can give is 20; sparse, +1 for a win and −1 for a loss.
    fn reward(&self, gains: [f32; 2], kills: [u32; 2], out: &mut Transition) {
        for team in 0..2 {
            let won = self.ending == Some(Ending::Won(team));
            let lost = self.ending == Some(Ending::Won(1 - team));
            let reward = match self.config.reward {
                RewardKind::Sparse => f32::from(i8::from(won) - i8::from(lost)),
                RewardKind::Shaped => {
                    let raw = gains[team]
                        + KILL_REWARD * kills[team] as f32
                        + if won { WIN_REWARD } else { 0.0 };
                    raw * MAX_SHAPED_RETURN / self.max_raw_reward(team)
                }
            };
            for i in self.members(team) {
                out.rewards[i] = reward;
            }
        }
    }

    /// The most unscaled shaped reward team `team` can earn in an episode.
    pub fn max_raw_reward(&self, team: usize) -> f32 {
        let enemies = self.members(1 - team);
        let hit_points: f32 = enemies
            .clone()
            .map(|j| {
                let s = self.units[j].kind.stats();
                s.health + s.shield
            })
            .sum();
        hit_points + KILL_REWARD * enemies.len() as f32 + WIN_REWARD
    }

    /// One physics tick. Attacks and heals are decided on the positions at the start of
    /// the tick, before anyone moves.
    fn tick(&mut self) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.hits.clear();
        scratch.exploded.clear();
        scratch.heals.clear();
        for i in 0..self.units.len() {
            if !self.units[i].alive() {
                continue;
            }
            let fired = self.fire(i, &mut scratch);
            let unit = &mut self.units[i];
            if fired {
                let deviation = TICK * (3.0 * self.rng.random::<f32>() - 1.0);
                unit.cooldown = unit.kind.stats().cooldown + deviation;
            } else {
                unit.cooldown = (unit.cooldown - TICK).max(0.0);
            }
        }
        let size = self.config.map_size;
        for unit in self.units.iter_mut().filter(|u| u.alive()) {
            let [dx, dy] = unit.order.movement();
            if dx != 0.0 || dy != 0.0 {
                let step = unit.kind.stats().speed * TICK;
                unit.pos[0] = (unit.pos[0] + dx * step).clamp(0.0, size);
                unit.pos[1] = (unit.pos[1] + dy * step).clamp(0.0, size);
            }
        }
        for hit in &scratch.hits {
            self.land(*hit);
        }
        for &b in &scratch.exploded {
            self.units[b].health = 0.0;
        }
        for &(medic, patient) in &scratch.heals {
            self.heal(medic, patient);
        }
        self.upkeep();
        self.scratch = scratch;
        self.push_apart();
    }

    /// Unit `i` attacks if its order, weapon and target allow: the hits are queued and it
    /// answers true. A medivac's heal is queued (it has no cooldown).
    fn fire(&self, i: usize, scratch: &mut Scratch) -> bool {
        let unit = &self.units[i];
        let Order::Target(slot) = unit.order else {
            return false;
        };
        let stats = unit.kind.stats();
        let Some(target) = self.target_of(i, slot) else {
            return false;
        };
        let t = &self.units[target];
        let reachable = t.alive()
            && unit.kind.can_target(t.kind)
            && in_range(unit.pos, t.pos, stats.attack_range);
        match stats.weapon {
            Weapon::Heal { .. } => {
                if reachable {
                    scratch.heals.push((i, target));
                }
                false
            }
            _ if !reachable || unit.cooldown > 0.0 => false,
            Weapon::Direct => {
                scratch.hits.push(Hit {
                    attacker: i,
                    target,
                });
                true
            }
            Weapon::Lance { half_length } => {
                let [sx, sy] = unit.pos;
                let [tx, ty] = t.pos;
                let len = ((tx - sx).powi(2) + (ty - sy).powi(2)).sqrt().max(1e-6);
                // The lance lies across the line of fire, centred on the target.
                let across = [-(ty - sy) / len, (tx - sx) / len];
                for j in self.members(1 - unit.team) {
                    let other = &self.units[j];
                    if !other.alive() || !unit.kind.can_target(other.kind) {
                        continue;
                    }
                    let (wx, wy) = (other.pos[0] - tx, other.pos[1] - ty);
                    let along = (wx * across[0] + wy * across[1]).clamp(-half_length, half_length);
                    let nearest = [tx + across[0] * along, ty + across[1] * along];
                    let reach = other.kind.stats().radius;
                    if j == target || in_range(other.pos, nearest, reach) {
                        scratch.hits.push(Hit {
                            attacker: i,
                            target: j,
                        });
                    }
                }
                true
            }
            Weapon::Explode { radius } => {
                for j in self.members(1 - unit.team) {
                    let other = &self.units[j];
                    let reach = radius + other.kind.stats().radius;
                    if other.alive()
                        && unit.kind.can_target(other.kind)
                        && in_range(unit.pos, other.pos, reach)
                    {
                        scratch.hits.push(Hit {
                            attacker: i,
                            target: j,
                        });
                    }
                }
                scratch.exploded.push(i);
                true
            }
        }
    }

    /// Applies one attack: per hit, shield first, then health less armour.
    fn land(&mut self, hit: Hit) {
        let attacker = self.units[hit.attacker];
        let stats = attacker.kind.stats();
        let target = &mut self.units[hit.target];
        if !target.alive() {
            return;
        }
        let defence = target.kind.stats();
        let per_hit = stats.damage
            + if defence.light {
                stats.bonus_vs_light
            } else {
                0.0
            };
        let before = target.hit_points();
        for _ in 0..stats.hits {
            let absorbed = target.shield.min(per_hit);
            target.shield -= absorbed;
            let rest = per_hit - absorbed;
            if rest > 0.0 {
                target.health -= (rest - defence.armour).max(MIN_DAMAGE);
            }
        }
        target.health = target.health.max(0.0);
        target.since_hit = 0.0;
        let dealt = before - target.hit_points();
        self.stats[attacker.team].damage_dealt += f64::from(dealt);
    }

    /// Medic `medic` heals `patient` for a tick, spending energy, if both still live.
    fn heal(&mut self, medic: usize, patient: usize) {
        let (m, p) = (self.units[medic], self.units[patient]);
        let Weapon::Heal {
            rate,
            health_per_energy,
            ..
        } = m.kind.stats().weapon
        else {
            return;
        };
        if !m.alive() || !p.alive() {
            return;
        }
        let amount = (rate * TICK)
            .min(p.kind.stats().health - p.health)
            .min(m.energy * health_per_energy)
            .max(0.0);
        self.units[patient].health += amount;
        self.units[medic].energy -= amount / health_per_energy;
        self.stats[m.team].healing += f64::from(amount);
    }

    /// After a tick's blows: units on the edge die when edges kill, the dead lose what
    /// is left of their shield, shields regenerate after a quiet spell and medivacs regain
    /// energy.
    fn upkeep(&mut self) {
        let (size, walls_kill) = (self.config.map_size, self.config.walls_kill);
        for unit in &mut self.units {
            if walls_kill && unit.pos.iter().any(|c| *c <= 0.0 || *c >= size) {
                unit.health = 0.0;
            }
            if !unit.alive() {
                unit.health = 0.0;
                unit.shield = 0.0;
                continue;
            }
            let stats = unit.kind.stats();
            unit.since_hit += TICK;
            if stats.shield > 0.0 && unit.since_hit >= SHIELD_REGEN_DELAY {
                unit.shield = (unit.shield + SHIELD_REGEN_RATE * TICK).min(stats.shield);
            }
            if let Weapon::Heal {
                max_energy,
                energy_regen,
                ..
            } = stats.weapon
            {
                unit.energy = (unit.energy + energy_regen * TICK).min(max_energy);
            }
        }
    }

    /// SMAX's collision response: every overlapping pair of living units (ground with
    /// ground, air with air) is pushed apart along the line between them.
    fn push_apart(&mut self) {
        // Units are at most 64 (the memory's limit): the pushes fit on the stack.
        let mut push = [[0.0f32; 2]; 64];
        let n = self.units.len().min(push.len());
        for i in 0..n {
            let a = &self.units[i];
            if !a.alive() {
                continue;
            }
            let sa = a.kind.stats();
            for j in i + 1..n {
                let b = &self.units[j];
                if !b.alive() {
                    continue;
                }
                let sb = b.kind.stats();
                let (dx, dy) = (a.pos[0] - b.pos[0], a.pos[1] - b.pos[1]);
                let reach = sa.radius + sb.radius;
                let d2 = dx * dx + dy * dy;
                if d2 >= reach * reach || sa.flying != sb.flying {
                    continue;
                }
                let overlap = reach / (d2.sqrt() + 1e-6) - 1.0;
                let (px, py) = (dx * overlap / 2.0, dy * overlap / 2.0);
                push[i][0] += px;
                push[i][1] += py;
                push[j][0] -= px;
                push[j][1] -= py;
            }
        }
        let size = self.config.map_size;
        for (unit, [px, py]) in self.units.iter_mut().zip(&push) {
            if *px != 0.0 || *py != 0.0 {
                unit.pos[0] = (unit.pos[0] + px).clamp(0.0, size);
                unit.pos[1] = (unit.pos[1] + py).clamp(0.0, size);
            }
        }
    }

    /// Checks a state read from outside (a snapshot) so that play cannot index out of
    /// range or divide by nothing.
    pub fn validate(&self) -> Result<(), String> {
        self.config
            .validate()
            .map_err(|e| format!("{}: {}", e.path, e.message))?;
        let n = self.config.units();
        if self.units.len() != n || self.spotters.len() != n || self.credited.len() != n {
            return Err(format!("expected {n} units in every table"));
        }
        for (i, unit) in self.units.iter().enumerate() {
            let expected_team = usize::from(i >= self.config.teams[0]);
            let finite = unit
                .pos
                .iter()
                .chain([&unit.health, &unit.shield, &unit.cooldown])
                .all(|v| v.is_finite());
            if unit.team != expected_team || !finite {
                return Err(format!("unit {i} is malformed"));
            }
        }
        if self.spotters.iter().flatten().any(|s| *s >= n) {
            return Err("a spotter is not a unit".into());
        }
        for (team, memory) in self.memory.iter().enumerate() {
            memory.validate().map_err(|e| e.to_string())?;
            if memory.agents() != self.config.teams[team] || memory.entities() != n {
                return Err(format!("the {} memory does not fit the teams", TEAMS[team]));
            }
        }
        Ok(())
    }
}
