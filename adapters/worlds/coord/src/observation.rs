//! The symbolic observation (a flat f32 vector: local map channels, the agent's own
//! state, a dashboard per teammate) and the legal-action mask.
//!
//! Layout, for a team of `n` agents with `s` message channels:
//!
//! * `VIEW_W × VIEW_H` cells (row-major, north row first, the agent in the centre), each
//!   with [`TILE_CHANNELS`] values: the block one-hot ([`Block::ALL`] order), zombie,
//!   cow, skeleton, arrow, coordinated mob, teammate, downed teammate, hard sync, soft
//!   sync, handover, agents required / team size, handover steps left / longest window;
//! * [`SELF_LEN`] values about the agent: inventory / 9 ([`Item::ALL`] order), health,
//!   food, drink, energy / 9 (a forager's food and drink reach 11/9), daylight, asleep, facing one-hot ([`Dir::ALL`]), role
//!   one-hot ([`Role::ALL`]), x / width, y / height, own request one-hot
//!   ([`Resource::ALL`]);
//! * per teammate (other agents in index order), `17 + s` values: present, downed,
//!   health / 9, role one-hot, dx / width, dy / height, request one-hot, freshness of its
//!   last signal (1 when sent in the last step, 1 / (1 + age) after), the signal one-hot.

use super::actions::{Act, ActionSet};
use super::coordination::faces_site;
use super::crafting::can_craft;
use super::rules::{can_give, can_place};
use super::settings::Config;
use super::state::{CoordKind, World};
use super::types::{Block, Dir, Item, MobKind, Resource, Role};
use mosaic_core::Tensor;

/// View width in tiles (Craftax-Classic's 9 × 7).
pub const VIEW_W: i32 = 9;
/// View height in tiles.
pub const VIEW_H: i32 = 7;

/// Per-cell channel offsets.
pub mod ch {
    /// First block channel (one-hot over `Block::ALL`).
    pub const BLOCK: usize = 0;
    /// A zombie.
    pub const ZOMBIE: usize = 18;
    /// A cow.
    pub const COW: usize = 19;
    /// A skeleton.
    pub const SKELETON: usize = 20;
    /// An arrow.
    pub const ARROW: usize = 21;
    /// The mob is coordinated (elite or large).
    pub const COORD_MOB: usize = 22;
    /// A living teammate.
    pub const TEAMMATE: usize = 23;
    /// A downed teammate (Do revives).
    pub const DOWNED: usize = 24;
    /// Hard synchronous target.
    pub const SYNC_HARD: usize = 25;
    /// Soft synchronous target.
    pub const SYNC_SOFT: usize = 26;
    /// Handover target.
    pub const HANDOVER: usize = 27;
    /// Agents required / team size.
    pub const REQUIRED: usize = 28;
    /// Handover in progress: steps left / longest window.
    pub const PENDING: usize = 29;
}

/// Values per view cell.
pub const TILE_CHANNELS: usize = 30;

/// Offsets in the agent's own block.
pub mod me {
    /// Inventory counts / 9.
    pub const INVENTORY: usize = 0;
    /// Health, food, drink, energy / 9.
    pub const VITALS: usize = 14;
    /// Daylight.
    pub const LIGHT: usize = 18;
    /// Asleep.
    pub const SLEEPING: usize = 19;
    /// Facing one-hot.
    pub const FACING: usize = 20;
    /// Role one-hot.
    pub const ROLE: usize = 24;
    /// x / width, y / height.
    pub const POSITION: usize = 27;
    /// Own request one-hot.
    pub const REQUEST: usize = 29;
}

/// Values in the agent's own block.
pub const SELF_LEN: usize = 37;

/// Offsets in a teammate's block.
pub mod mate {
    /// In the game (alive or downed).
    pub const PRESENT: usize = 0;
    /// Downed.
    pub const DOWNED: usize = 1;
    /// Health / 9.
    pub const HEALTH: usize = 2;
    /// Role one-hot.
    pub const ROLE: usize = 3;
    /// dx / width, dy / height.
    pub const OFFSET: usize = 6;
    /// Request one-hot.
    pub const REQUEST: usize = 8;
    /// Freshness of the last signal.
    pub const SIGNAL_FRESHNESS: usize = 16;
    /// Signal one-hot.
    pub const SIGNAL: usize = 17;
}

/// Where everything sits in the symbolic vector of one configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Team size.
    pub agents: usize,
    /// Message channels.
    pub signals: usize,
}

impl Layout {
    /// The layout for `agents` agents and `signals` channels.
    pub fn new(agents: usize, signals: usize) -> Self {
        Self { agents, signals }
    }

    /// Offset of view cell (vx, vy).
    pub fn cell(&self, vx: i32, vy: i32) -> usize {
        (vy * VIEW_W + vx) as usize * TILE_CHANNELS
    }

    /// Offset of the agent's own block.
    pub fn own(&self) -> usize {
        (VIEW_W * VIEW_H) as usize * TILE_CHANNELS
    }

    /// Values per teammate block.
    pub fn mate_len(&self) -> usize {
        mate::SIGNAL + self.signals
    }

    /// Offset of the `k`-th teammate's block (teammates in index order, self skipped).
    pub fn mate(&self, k: usize) -> usize {
        self.own() + SELF_LEN + k * self.mate_len()
    }

    /// Total length.
    pub fn len(&self) -> usize {
        self.mate(self.agents - 1)
    }

    /// Never empty.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// The symbolic observation of `agent`.
pub fn symbolic(world: &World, config: &Config, layout: &Layout, agent: usize) -> Tensor {
    let mut data = vec![0.0f32; layout.len()];
    let me_ = &world.agents[agent];
    let (ox, oy) = (me_.x - VIEW_W / 2, me_.y - VIEW_H / 2);
    let window_max = config.difficulty.handover_window_max as f32;
    let team = config.agents as f32;
    for vy in 0..VIEW_H {
        for vx in 0..VIEW_W {
            let (x, y) = (ox + vx, oy + vy);
            let cell = &mut data[layout.cell(vx, vy)..layout.cell(vx, vy) + TILE_CHANNELS];
            let block = world.block(x, y);
            cell[ch::BLOCK + block as usize] = 1.0;
            let Some(tile) = world.tile(x, y) else {
                continue;
            };
            let tag = world.tags[tile];
            match tag.kind {
                CoordKind::Sync if tag.soft => cell[ch::SYNC_SOFT] = 1.0,
                CoordKind::Sync => cell[ch::SYNC_HARD] = 1.0,
                CoordKind::Handover => cell[ch::HANDOVER] = 1.0,
                CoordKind::None => {}
            }
            if tag.kind == CoordKind::Sync {
                cell[ch::REQUIRED] = f32::from(tag.required) / team;
            }
            if block == Block::Forge {
                cell[ch::SYNC_HARD] = 1.0;
                cell[ch::REQUIRED] = config.diamond_crafters() as f32 / team;
            }
            if let Some(p) = world.pending_at(tile) {
                cell[ch::PENDING] = p.remaining(world.step) as f32 / window_max;
            }
            if let Some(m) = world.mob_at(x, y) {
                let mob = &world.mobs[m];
                cell[match mob.kind {
                    MobKind::Zombie => ch::ZOMBIE,
                    MobKind::Cow => ch::COW,
                    MobKind::Skeleton => ch::SKELETON,
                }] = 1.0;
                if mob.tag.coordinated {
                    cell[ch::COORD_MOB] = 1.0;
                    cell[if mob.tag.soft {
                        ch::SYNC_SOFT
                    } else {
                        ch::SYNC_HARD
                    }] = 1.0;
                    cell[ch::REQUIRED] = f32::from(mob.tag.required) / team;
                }
            }
            if let Some(other) = world.agent_at(x, y).filter(|o| *o != agent) {
                cell[if world.agents[other].is_alive() {
                    ch::TEAMMATE
                } else {
                    ch::DOWNED
                }] = 1.0;
            }
        }
    }
    for arrow in &world.arrows {
        let (vx, vy) = (arrow.x - ox, arrow.y - oy);
        if (0..VIEW_W).contains(&vx) && (0..VIEW_H).contains(&vy) {
            data[layout.cell(vx, vy) + ch::ARROW] = 1.0;
        }
    }

    let own = &mut data[layout.own()..layout.own() + SELF_LEN];
    for (slot, count) in own[me::INVENTORY..].iter_mut().zip(me_.inventory) {
        *slot = f32::from(count) / 9.0;
    }
    for (k, v) in [me_.health, me_.food, me_.drink, me_.energy]
        .into_iter()
        .enumerate()
    {
        own[me::VITALS + k] = v as f32 / 9.0;
    }
    own[me::LIGHT] = world.light;
    own[me::SLEEPING] = f32::from(u8::from(me_.sleeping));
    own[me::FACING + me_.facing as usize] = 1.0;
    own[me::ROLE + me_.role as usize] = 1.0;
    own[me::POSITION] = me_.x as f32 / world.width as f32;
    own[me::POSITION + 1] = me_.y as f32 / world.height as f32;
    if let Some(r) = me_.request.filter(|r| r.until >= world.step) {
        own[me::REQUEST + r.resource as usize] = 1.0;
    }

    for (k, other) in (0..world.agents.len()).filter(|o| *o != agent).enumerate() {
        let o = &world.agents[other];
        let start = layout.mate(k);
        let block = &mut data[start..start + layout.mate_len()];
        block[mate::PRESENT] = f32::from(u8::from(o.is_present()));
        block[mate::DOWNED] = f32::from(u8::from(o.is_present() && !o.is_alive()));
        block[mate::HEALTH] = o.health as f32 / 9.0;
        block[mate::ROLE + o.role as usize] = 1.0;
        block[mate::OFFSET] = (o.x - me_.x) as f32 / world.width as f32;
        block[mate::OFFSET + 1] = (o.y - me_.y) as f32 / world.height as f32;
        if let Some(r) = o.request.filter(|r| r.until >= world.step) {
            block[mate::REQUEST + r.resource as usize] = 1.0;
        }
        if let Some(s) = o.signal
            && usize::from(s.value) < layout.signals
        {
            let age = world.step.saturating_sub(s.step + 1);
            block[mate::SIGNAL_FRESHNESS] = 1.0 / (1.0 + age as f32);
            block[mate::SIGNAL + usize::from(s.value)] = 1.0;
        }
    }
    Tensor {
        shape: vec![layout.len()],
        data,
    }
}

/// The legal-action mask of `agent`: conservative, it only rules out what cannot have
/// any effect (no materials, no station, nothing to give). Asleep, downed or dead agents
/// can only `noop`.
pub fn legal(world: &World, set: &ActionSet, agent: usize) -> Vec<bool> {
    let mut mask = vec![false; set.len()];
    mask[0] = true;
    let a = &world.agents[agent];
    if !a.is_alive() || a.sleeping {
        return mask;
    }
    for (i, ok) in mask.iter_mut().enumerate() {
        *ok = match set.decode(i) {
            None => false,
            Some(Act::Noop | Act::Move(_) | Act::Do | Act::Request(_) | Act::Signal(_)) => true,
            Some(Act::Sleep) => a.energy < super::state::VITAL_MAX,
            Some(Act::Place(p)) => can_place(world, agent, p),
            Some(Act::Make(item)) => can_craft(world, agent, item),
            Some(Act::Build(_)) => faces_site(world, agent),
            Some(Act::Give(to)) => can_give(world, agent, usize::from(to)),
        };
    }
    mask
}

/// Read access to a symbolic observation (what the scripted decider sees).
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    data: &'a [f32],
    layout: Layout,
}

impl<'a> View<'a> {
    /// Wraps `data`; `None` when its length does not fit `layout`.
    pub fn new(data: &'a [f32], layout: Layout) -> Option<Self> {
        (data.len() == layout.len()).then_some(Self { data, layout })
    }

    /// A per-cell value.
    pub fn cell(&self, vx: i32, vy: i32, channel: usize) -> f32 {
        if !(0..VIEW_W).contains(&vx) || !(0..VIEW_H).contains(&vy) {
            return 0.0;
        }
        self.data[self.layout.cell(vx, vy) + channel]
    }

    /// Whether a per-cell flag is set.
    pub fn flag(&self, vx: i32, vy: i32, channel: usize) -> bool {
        self.cell(vx, vy, channel) > 0.5
    }

    /// The block of a cell ([`Block::OutOfBounds`] outside the view).
    pub fn block(&self, vx: i32, vy: i32) -> Block {
        Block::ALL
            .iter()
            .copied()
            .find(|b| self.flag(vx, vy, ch::BLOCK + *b as usize))
            .unwrap_or(Block::OutOfBounds)
    }

    /// A value of the agent's own block.
    pub fn own(&self, offset: usize) -> f32 {
        self.data[self.layout.own() + offset]
    }

    /// Inventory count of `item`.
    pub fn count(&self, item: Item) -> u8 {
        (self.own(me::INVENTORY + item as usize) * 9.0).round() as u8
    }

    /// Health, food, drink and energy.
    pub fn vitals(&self) -> [i32; 4] {
        [0, 1, 2, 3].map(|k| (self.own(me::VITALS + k) * 9.0).round() as i32)
    }

    /// Facing direction.
    pub fn facing(&self) -> Dir {
        Dir::ALL
            .iter()
            .copied()
            .find(|d| self.own(me::FACING + *d as usize) > 0.5)
            .unwrap_or(Dir::North)
    }

    /// Own role.
    pub fn role(&self) -> Role {
        Role::ALL
            .iter()
            .copied()
            .find(|r| self.own(me::ROLE + *r as usize) > 0.5)
            .unwrap_or(Role::Forager)
    }

    /// A value of the `k`-th teammate's block.
    pub fn mate(&self, k: usize, offset: usize) -> f32 {
        self.data[self.layout.mate(k) + offset]
    }

    /// The `k`-th teammate's agent index, given the observer's index.
    pub fn mate_index(observer: usize, k: usize) -> usize {
        if k < observer { k } else { k + 1 }
    }

    /// The resource the `k`-th teammate requests.
    pub fn mate_request(&self, k: usize) -> Option<Resource> {
        Resource::ALL
            .iter()
            .copied()
            .find(|r| self.mate(k, mate::REQUEST + *r as usize) > 0.5)
    }

    /// Number of teammates.
    pub fn mates(&self) -> usize {
        self.layout.agents - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_length() {
        // 63 cells × 30 channels, 37 own values, two teammates × (17 + 4).
        assert_eq!(Layout::new(3, 4).len(), 1969);
        assert_eq!(Layout::new(2, 0).len(), 1890 + 37 + 17);
    }
}
