//! The scripted decider: a heuristic that reads the symbolic observation, keeps itself
//! alive, gathers and crafts up the tool chain, answers requests, revives teammates, and
//! joins a coordination task when a teammate is near (waiting at synchronous targets and
//! calling teammates with `signal_0`, finishing handovers started by others).

use super::actions::{Act, ActionSet, Placeable};
use super::observation::{Layout, VIEW_H, VIEW_W, View, ch, mate};
use super::settings::Config;
use super::types::{Block, Dir, Item, Resource, Structure};
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::rng::{Rng, seeded};
use mosaic_core::{Action, AgentContext, Decision, ObsRequest, Observation, Paradigm, Policy};
use rand::Rng as _;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedSettings {
    #[serde(default = "yes")]
    coordinate: bool,
    #[serde(default = "default_patience")]
    patience: u32,
}

fn yes() -> bool {
    true
}

fn default_patience() -> u32 {
    20
}

/// The agent in its own view.
const CENTRE: (i32, i32) = (VIEW_W / 2, VIEW_H / 2);
/// How near (Manhattan) a teammate must be for the agent to start a coordination task.
const TEAMMATE_NEAR: i32 = 6;
/// How near a signalling teammate must be for the agent to walk over.
const CALL_RANGE: i32 = 14;

/// The coordination world's scripted heuristic.
#[derive(Debug)]
pub struct Scripted {
    layout: Layout,
    actions: ActionSet,
    width: f32,
    height: f32,
    coordinate: bool,
    patience: u32,
    rng: Rng,
    agent: usize,
    heading: Dir,
    heading_left: u32,
    /// Absolute target the agent is waiting at, and for how long.
    waiting: Option<((i32, i32), u32)>,
    /// Targets given up on, until the step given.
    abandoned: Vec<((i32, i32), u32)>,
    /// Handovers this agent started (it cannot finish them itself).
    started: Vec<((i32, i32), u32)>,
    /// The last water seen.
    water: Option<(i32, i32)>,
    /// Drinking until full.
    refilling: bool,
    step: u32,
}

impl Scripted {
    /// The heuristic for a world with `config`; slot settings `coordinate` (default true)
    /// and `patience` (steps to wait at a synchronous target, default 20).
    pub fn from_settings(config: &Config, slot: &mosaic_core::Settings) -> Result<Self, SpecError> {
        let s: ScriptedSettings = parse_settings(slot)?;
        Ok(Self {
            layout: Layout::new(config.agents, config.signals),
            actions: ActionSet::new(config.agents, config.signals),
            width: config.width as f32,
            height: config.height as f32,
            coordinate: s.coordinate,
            patience: s.patience,
            rng: seeded(0),
            agent: 0,
            heading: Dir::North,
            heading_left: 0,
            waiting: None,
            abandoned: Vec::new(),
            started: Vec::new(),
            water: None,
            refilling: false,
            step: 0,
        })
    }

    fn act(&self, act: Act) -> Action {
        Action(self.actions.index_of(act) as u32)
    }
}

/// What the heuristic sees this step.
struct Sight<'a> {
    view: View<'a>,
    legal: &'a [bool],
    me: (i32, i32),
    mates: Vec<(usize, (i32, i32))>,
}

impl Sight<'_> {
    fn walkable(&self, vx: i32, vy: i32) -> bool {
        let b = self.view.block(vx, vy);
        !b.is_solid()
            && b != Block::Lava
            && ![ch::ZOMBIE, ch::COW, ch::SKELETON, ch::TEAMMATE, ch::DOWNED]
                .iter()
                .any(|c| self.view.flag(vx, vy, *c))
    }

    fn absolute(&self, (vx, vy): (i32, i32)) -> (i32, i32) {
        (self.me.0 + vx - CENTRE.0, self.me.1 + vy - CENTRE.1)
    }

    fn cells(&self) -> impl Iterator<Item = (i32, i32)> + '_ {
        (0..VIEW_H).flat_map(|vy| (0..VIEW_W).map(move |vx| (vx, vy)))
    }

    /// Cells matching `pred`, nearest first (ties by absolute position).
    fn find(&self, pred: impl Fn(i32, i32) -> bool) -> Vec<(i32, i32)> {
        let mut found: Vec<Ranked> = self
            .cells()
            .filter(|(x, y)| pred(*x, *y))
            .map(|c| {
                let (ax, ay) = self.absolute(c);
                (distance(c, CENTRE), (ay, ax), c)
            })
            .collect();
        found.sort();
        found.into_iter().map(|(_, _, c)| c).collect()
    }
}

/// A view cell ranked by (distance, absolute row and column).
type Ranked = (i32, (i32, i32), (i32, i32));

fn distance(a: (i32, i32), b: (i32, i32)) -> i32 {
    (a.0 - b.0).abs() + (a.1 - b.1).abs()
}

fn dir_towards(from: (i32, i32), to: (i32, i32)) -> Dir {
    let (dx, dy) = (to.0 - from.0, to.1 - from.1);
    if dx.abs() >= dy.abs() && dx != 0 {
        if dx > 0 { Dir::East } else { Dir::West }
    } else if dy > 0 {
        Dir::South
    } else {
        Dir::North
    }
}

/// First step of a shortest walk inside the view from the centre to a cell adjacent to
/// `target`, or `None` when there is none. `Some(None)` means already adjacent.
fn route(sight: &Sight<'_>, target: (i32, i32)) -> Option<Option<Dir>> {
    if distance(target, CENTRE) == 1 {
        return Some(None);
    }
    let n = (VIEW_W * VIEW_H) as usize;
    let index = |(x, y): (i32, i32)| (y * VIEW_W + x) as usize;
    let mut first: Vec<Option<Dir>> = vec![None; n];
    let mut seen = vec![false; n];
    let mut queue = std::collections::VecDeque::new();
    seen[index(CENTRE)] = true;
    queue.push_back(CENTRE);
    while let Some(cell) = queue.pop_front() {
        for d in Dir::ALL {
            let (dx, dy) = d.delta();
            let next = (cell.0 + dx, cell.1 + dy);
            if !(0..VIEW_W).contains(&next.0)
                || !(0..VIEW_H).contains(&next.1)
                || seen[index(next)]
                || !sight.walkable(next.0, next.1)
            {
                continue;
            }
            seen[index(next)] = true;
            first[index(next)] = if cell == CENTRE {
                Some(d)
            } else {
                first[index(cell)]
            };
            if distance(next, target) == 1 {
                return Some(first[index(next)]);
            }
            queue.push_back(next);
        }
    }
    None
}

impl Scripted {
    /// Walks to `target` (a view cell), faces it and acts on it with `act`.
    fn approach(&mut self, sight: &Sight<'_>, target: (i32, i32), act: Act) -> Option<Action> {
        match route(sight, target)? {
            Some(step) => Some(self.act(Act::Move(step))),
            None => {
                let want = dir_towards(CENTRE, target);
                if sight.view.facing() == want {
                    Some(self.act(act))
                } else {
                    // A move towards a blocked tile only turns.
                    Some(self.act(Act::Move(want)))
                }
            }
        }
    }

    fn explore(&mut self, sight: &Sight<'_>) -> Action {
        let (dx, dy) = self.heading.delta();
        let ahead = (CENTRE.0 + dx, CENTRE.1 + dy);
        if self.heading_left == 0 || !sight.walkable(ahead.0, ahead.1) {
            self.heading = Dir::ALL[self.rng.random_range(0..4)];
            self.heading_left = self.rng.random_range(5..15);
        }
        self.heading_left = self.heading_left.saturating_sub(1);
        self.act(Act::Move(self.heading))
    }

    fn walk_to(&mut self, sight: &Sight<'_>, to: (i32, i32)) -> Action {
        let (dx, dy) = (to.0 - sight.me.0, to.1 - sight.me.1);
        let primary = dir_towards((0, 0), (dx, dy));
        let secondary = dir_towards(
            (0, 0),
            if primary.delta().0 != 0 {
                (0, dy)
            } else {
                (dx, 0)
            },
        );
        for d in [primary, secondary] {
            let (sx, sy) = d.delta();
            if (sx, sy) != (0, 0) && sight.walkable(CENTRE.0 + sx, CENTRE.1 + sy) {
                return self.act(Act::Move(d));
            }
        }
        self.explore(sight)
    }

    fn legal(&self, sight: &Sight<'_>, act: Act) -> bool {
        sight
            .legal
            .get(self.actions.index_of(act))
            .copied()
            .unwrap_or(false)
    }

    fn decide_awake(&mut self, sight: &Sight<'_>) -> Action {
        let view = sight.view;
        let [health, food, drink, energy] = view.vitals();

        // A downed teammate in view: revive.
        if let Some(&cell) = sight.find(|x, y| view.flag(x, y, ch::DOWNED)).first()
            && let Some(a) = self.approach(sight, cell, Act::Do)
        {
            return a;
        }
        // An enemy close by: fight, unless it is a hard elite mob and nobody helps.
        let helped = sight.mates.iter().any(|(_, p)| distance(*p, sight.me) <= 2);
        let enemies = sight.find(|x, y| {
            let enemy = view.flag(x, y, ch::ZOMBIE) || view.flag(x, y, ch::SKELETON);
            let hard_elite = view.flag(x, y, ch::COORD_MOB) && view.flag(x, y, ch::SYNC_HARD);
            enemy && (!hard_elite || helped) && distance((x, y), CENTRE) <= 2
        });
        let threats = sight.find(|x, y| {
            (view.flag(x, y, ch::ZOMBIE) || view.flag(x, y, ch::SKELETON))
                && distance((x, y), CENTRE) <= 3
        });
        let nearest_mate = sight
            .mates
            .iter()
            .map(|(_, p)| *p)
            .min_by_key(|p| distance(*p, sight.me));
        // Badly hurt: retreat towards a teammate, who can fight alongside or revive.
        if health <= 3
            && !threats.is_empty()
            && let Some(mate) = nearest_mate.filter(|p| distance(*p, sight.me) > 1)
        {
            return self.walk_to(sight, mate);
        }
        if let Some(&cell) = enemies.first()
            && let Some(a) = self.approach(sight, cell, Act::Do)
        {
            return a;
        }
        // A hard elite mob and nobody to help: step away from it.
        let hard_elite = sight.find(|x, y| {
            view.flag(x, y, ch::COORD_MOB)
                && view.flag(x, y, ch::SYNC_HARD)
                && !view.flag(x, y, ch::COW)
                && distance((x, y), CENTRE) <= 3
        });
        if let Some(&cell) = hard_elite.first()
            && !helped
        {
            let away = (2 * CENTRE.0 - cell.0, 2 * CENTRE.1 - cell.1);
            return self.walk_to(sight, sight.absolute(away));
        }
        // Answer a teammate's request from a surplus.
        for k in 0..view.mates() {
            let Some(resource) = view.mate_request(k) else {
                continue;
            };
            let spare = match resource {
                Resource::Food => food >= 6,
                Resource::Drink => drink >= 6,
                other => other.item().is_some_and(|i| view.count(i) >= 2),
            };
            let give = Act::Give(View::mate_index(self.agent, k) as u8);
            if spare && self.legal(sight, give) {
                return self.act(give);
            }
        }
        // Vitals.
        let water = sight.find(|x, y| view.block(x, y) == Block::Water);
        if let Some(&cell) = water.first() {
            self.water = Some(sight.absolute(cell));
        }
        if drink <= 4 || (self.refilling && drink < 9) {
            self.refilling = true;
            for &cell in water.iter().take(3) {
                if let Some(a) = self.approach(sight, cell, Act::Do) {
                    return a;
                }
            }
            if let Some(to) = self.water.filter(|_| water.is_empty()) {
                return self.walk_to(sight, to);
            }
        }
        self.refilling = false;
        if food <= 5 {
            let meal = sight.find(|x, y| {
                view.block(x, y) == Block::RipePlant
                    || (view.flag(x, y, ch::COW) && !view.flag(x, y, ch::SYNC_HARD))
            });
            if let Some(&cell) = meal.first()
                && let Some(a) = self.approach(sight, cell, Act::Do)
            {
                return a;
            }
        }
        if (energy <= 2 || (health <= 3 && energy < 9)) && self.legal(sight, Act::Sleep) {
            let enemies =
                sight.find(|x, y| view.flag(x, y, ch::ZOMBIE) || view.flag(x, y, ch::SKELETON));
            if enemies.is_empty() {
                return self.act(Act::Sleep);
            }
        }
        if self.step % 25 == 0 {
            let need = if drink <= 3 {
                Some(Resource::Drink)
            } else if food <= 3 {
                Some(Resource::Food)
            } else {
                None
            };
            if let Some(r) = need {
                return self.act(Act::Request(r));
            }
        }
        if self.coordinate
            && let Some(a) = self.coordinate(sight)
        {
            return a;
        }
        if let Some(a) = self.progress(sight) {
            return a;
        }
        self.explore(sight)
    }

    /// Coordination: finish others' handovers, wait at synchronous targets with a
    /// teammate near, answer a teammate's call.
    fn coordinate(&mut self, sight: &Sight<'_>) -> Option<Action> {
        let view = sight.view;
        let step = self.step;
        self.abandoned.retain(|(_, until)| *until > step);
        self.started.retain(|(_, until)| *until > step);
        let pickaxe = |b: Block| match b {
            Block::Tree => true,
            Block::Stone | Block::Coal => {
                [Item::WoodPickaxe, Item::StonePickaxe, Item::IronPickaxe]
                    .iter()
                    .any(|i| view.count(*i) > 0)
            }
            Block::Iron => [Item::StonePickaxe, Item::IronPickaxe]
                .iter()
                .any(|i| view.count(*i) > 0),
            Block::Diamond => [Item::IronPickaxe, Item::DiamondPickaxe]
                .iter()
                .any(|i| view.count(*i) > 0),
            _ => false,
        };
        // A handover someone else started.
        let mine_started =
            |c: (i32, i32)| self.started.iter().any(|(p, _)| *p == sight.absolute(c));
        if let Some(&cell) = sight
            .find(|x, y| view.flag(x, y, ch::PENDING) && !mine_started((x, y)))
            .first()
        {
            let act = if view.block(cell.0, cell.1) == Block::Site {
                Act::Build(Structure::ALL[(step % 2) as usize])
            } else {
                Act::Do
            };
            if view.block(cell.0, cell.1) == Block::Site || pickaxe(view.block(cell.0, cell.1)) {
                return self.approach(sight, cell, act);
            }
        }
        let near = sight
            .mates
            .iter()
            .map(|(_, p)| distance(*p, sight.me))
            .min()
            .unwrap_or(i32::MAX);
        if near <= TEAMMATE_NEAR {
            let given_up: Vec<(i32, i32)> = self.abandoned.iter().map(|(p, _)| *p).collect();
            let abandoned = |c: (i32, i32)| given_up.contains(&sight.absolute(c));
            // Start a handover next to a teammate.
            if let Some(&cell) = sight
                .find(|x, y| {
                    view.flag(x, y, ch::HANDOVER)
                        && !view.flag(x, y, ch::PENDING)
                        && pickaxe(view.block(x, y))
                        && distance((x, y), CENTRE) <= 3
                })
                .first()
                && let Some(action) = self.approach(sight, cell, Act::Do)
            {
                if action == self.act(Act::Do) {
                    self.started.push((sight.absolute(cell), step + 40));
                }
                return Some(action);
            }
            // Wait at the synchronous target nearest to us and the teammate.
            let targets = sight.find(|x, y| {
                let sync = view.flag(x, y, ch::SYNC_HARD) || view.flag(x, y, ch::SYNC_SOFT);
                let block = view.block(x, y);
                let actionable = view.flag(x, y, ch::COORD_MOB) || pickaxe(block);
                sync && actionable && !abandoned((x, y))
            });
            if let Some(&cell) = targets.iter().min_by_key(|c| {
                let abs = sight.absolute(**c);
                let mate = sight
                    .mates
                    .iter()
                    .map(|(_, p)| distance(*p, abs))
                    .min()
                    .unwrap_or(99);
                (distance(**c, CENTRE) + mate, abs.1, abs.0)
            }) {
                let abs = sight.absolute(cell);
                let waited = match self.waiting {
                    Some((p, n)) if p == abs => n + 1,
                    _ => 0,
                };
                if waited > self.patience {
                    self.abandoned.push((abs, step + 60));
                    self.waiting = None;
                } else if let Some(action) = self.approach(sight, cell, Act::Do) {
                    self.waiting = Some((abs, waited));
                    if action == self.act(Act::Do)
                        && waited % 5 == 0
                        && self.legal(sight, Act::Signal(0))
                    {
                        return Some(self.act(Act::Signal(0)));
                    }
                    return Some(action);
                }
            }
        }
        // A teammate calls (fresh signal 0) from not too far: walk over.
        for k in 0..view.mates() {
            let fresh =
                view.mate(k, mate::SIGNAL_FRESHNESS) >= 0.2 && view.mate(k, mate::SIGNAL) > 0.5;
            let Some(&(_, pos)) = sight.mates.get(k) else {
                continue;
            };
            let d = distance(pos, sight.me);
            if fresh && d > 2 && d <= CALL_RANGE {
                return Some(self.walk_to(sight, pos));
            }
        }
        None
    }

    /// Gathering and crafting up the tool chain.
    fn progress(&mut self, sight: &Sight<'_>) -> Option<Action> {
        let view = sight.view;
        let has = |i: Item| view.count(i) > 0;
        for tool in [
            Item::WoodPickaxe,
            Item::WoodSword,
            Item::StonePickaxe,
            Item::StoneSword,
            Item::IronPickaxe,
            Item::IronSword,
        ] {
            if !has(tool) && self.legal(sight, Act::Make(tool)) {
                return Some(self.act(Act::Make(tool)));
            }
        }
        let table_near = !sight
            .find(|x, y| view.block(x, y) == Block::Table)
            .is_empty();
        if !table_near
            && view.count(Item::Wood) >= 4
            && self.legal(sight, Act::Place(Placeable::Table))
        {
            return Some(self.act(Act::Place(Placeable::Table)));
        }
        let furnace_near = !sight
            .find(|x, y| view.block(x, y) == Block::Furnace)
            .is_empty();
        if has(Item::StonePickaxe)
            && !furnace_near
            && table_near
            && view.count(Item::Stone) >= 2
            && self.legal(sight, Act::Place(Placeable::Furnace))
        {
            return Some(self.act(Act::Place(Placeable::Furnace)));
        }
        let wanted: &[Block] = if !has(Item::WoodPickaxe) {
            &[Block::Tree]
        } else if !has(Item::StonePickaxe) {
            if view.count(Item::Wood) < 2 {
                &[Block::Tree]
            } else {
                &[Block::Stone]
            }
        } else if !has(Item::IronPickaxe) {
            if view.count(Item::Coal) == 0 {
                &[Block::Coal, Block::Iron, Block::Stone]
            } else {
                &[Block::Iron, Block::Coal, Block::Stone, Block::Tree]
            }
        } else {
            &[Block::Diamond, Block::Iron, Block::Coal, Block::Tree]
        };
        for block in wanted {
            // Hard synchronous blocks cannot be mined alone; handovers are left to the
            // coordination branch.
            let found = sight.find(|x, y| {
                view.block(x, y) == *block
                    && !view.flag(x, y, ch::SYNC_HARD)
                    && !view.flag(x, y, ch::HANDOVER)
            });
            for cell in found.into_iter().take(3) {
                if let Some(a) = self.approach(sight, cell, Act::Do) {
                    return Some(a);
                }
            }
        }
        None
    }
}

impl Policy for Scripted {
    fn paradigm(&self) -> Paradigm {
        Paradigm::Scripted
    }

    fn wants(&self) -> ObsRequest {
        ObsRequest::SYMBOLIC
    }

    fn reset(&mut self, ctx: &AgentContext) {
        self.rng = seeded(ctx.seed);
        self.agent = ctx.agent;
        self.heading = Dir::North;
        self.heading_left = 0;
        self.waiting = None;
        self.abandoned.clear();
        self.started.clear();
        self.water = None;
        self.refilling = false;
        self.step = 0;
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        self.step = obs.step;
        let noop = Decision::act(Action(0));
        let Some(view) = obs
            .symbolic
            .as_ref()
            .and_then(|t| View::new(&t.data, self.layout))
        else {
            return noop;
        };
        if !obs.is_legal(self.act(Act::Do)) {
            return noop;
        }
        let me = (
            (view.own(super::observation::me::POSITION) * self.width).round() as i32,
            (view.own(super::observation::me::POSITION + 1) * self.height).round() as i32,
        );
        let mates = (0..view.mates())
            .filter(|k| view.mate(*k, mate::PRESENT) > 0.5 && view.mate(*k, mate::DOWNED) < 0.5)
            .map(|k| {
                let dx = (view.mate(k, mate::OFFSET) * self.width).round() as i32;
                let dy = (view.mate(k, mate::OFFSET + 1) * self.height).round() as i32;
                (k, (me.0 + dx, me.1 + dy))
            })
            .collect();
        let sight = Sight {
            view,
            legal: &obs.legal,
            me,
            mates,
        };
        let action = self.decide_awake(&sight);
        if obs.is_legal(action) {
            Decision::act(action)
        } else {
            noop
        }
    }
}
