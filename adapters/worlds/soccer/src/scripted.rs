//! A scripted soccer player that reads the symbolic observation.

use super::encode::{SymbolicLayout, layout};
use super::game::{DROP, FORWARD, GOAL_BOTTOM, GOAL_TOP, LEFT, PICKUP, Pos, RIGHT};
use super::lineup::Lineup;
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::{
    Action, AgentContext, Decision, ObsRequest, Observation, Paradigm, Policy, Settings,
};
use serde::Deserialize;

const NOOP: u32 = 0;
/// An opponent this close (Manhattan) with no cooldown can steal within a step or two.
const MARKING_DISTANCE: i32 = 2;
/// Pass when every teammate is at least this much closer to the goal.
const PASS_GAIN: i32 = 2;
/// Key of the global features in a `reference` observation's `info` (see
/// [`crate::Soccer`]): that observation has only the agent's view, too little to play by.
pub const GLOBALS_INFO: &str = "globals";

/// The scripted heuristic of the soccer lineups: chase a loose ball, steal from an
/// opponent carrier, carry the ball to the nearest cell of the opponent goal, pass (a
/// teleport to a random teammate) when every teammate is clearly closer to the goal or
/// when marked; without the ball and with a teammate carrying, wait on the opponent goal
/// for a pass. Without teammates it never passes. Deterministic, no memory.
///
/// It reads the global features of the `mosaic` observation ([`crate::layout`]): the
/// head of the symbolic vector, or, in the `reference` observation mode, the
/// [`GLOBALS_INFO`] entry of the observation's `info`.
///
/// ```
/// use mosaic_soccer::{Lineup, ScriptedSoccer, Soccer, SoccerSettings};
/// use mosaic_core::{AgentContext, Environment, Policy};
///
/// let mut env = Soccer::with_lineup(Lineup::ThreeOnThree, SoccerSettings::default()).unwrap();
/// env.reset(3).unwrap();
/// let mut player = ScriptedSoccer::new(Lineup::ThreeOnThree);
/// player.reset(&AgentContext::new(3, 0, "green_0".into(), 8));
/// let decision = player.decide(&env.observe(0, player.wants()));
/// assert!(decision.action.0 < 8);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ScriptedSoccer {
    lineup: Lineup,
}

/// The scripted player has no settings; any given is an error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedSettings {}

impl ScriptedSoccer {
    /// A player for `lineup` (which fixes where the observation's blocks lie).
    pub fn new(lineup: Lineup) -> Self {
        Self { lineup }
    }

    /// Builds the player for `lineup` from its slot settings (there are none: unknown keys
    /// are errors).
    pub fn from_settings(lineup: Lineup, settings: &Settings) -> Result<Self, SpecError> {
        let ScriptedSettings {} = parse_settings(settings)?;
        Ok(Self::new(lineup))
    }
}

/// A player as read from its block of the observation.
#[derive(Clone, Copy, Debug)]
struct Seen {
    pos: Pos,
    dir: u8,
    carrying: bool,
    cooldown: f32,
}

/// What the heuristic reads from the observation.
struct Situation {
    me: Seen,
    ball: Pos,
    holder: f32,
    target_x: i32,
    mates: Vec<Seen>,
    opponents: Vec<Seen>,
}

/// The situation from the global features `data` laid out as `shape` says.
fn read(data: &[f32], shape: &SymbolicLayout) -> Option<Situation> {
    if data.len() < shape.view() {
        return None;
    }
    let seen = |at: usize| Seen {
        pos: Pos::new(data[at + layout::X] as i32, data[at + layout::Y] as i32),
        dir: data[at + layout::DIR] as u8 & 3,
        carrying: data[at + layout::CARRYING] > 0.5,
        cooldown: data[at + layout::COOLDOWN],
    };
    Some(Situation {
        me: seen(layout::SELF),
        ball: Pos::new(data[layout::BALL] as i32, data[layout::BALL + 1] as i32),
        holder: data[layout::BALL + 2],
        target_x: data[layout::GOALS] as i32,
        mates: (0..shape.teammates)
            .map(|k| seen(shape.teammate(k)))
            .collect(),
        opponents: (0..shape.opponents)
            .map(|k| seen(shape.opponent(k)))
            .collect(),
    })
}

impl Situation {
    /// The goal cell nearest to `pos` on the goal to score on.
    fn goal_cell(&self, pos: Pos) -> Pos {
        Pos::new(self.target_x, pos.y.clamp(GOAL_TOP, GOAL_BOTTOM))
    }

    fn goal_distance(&self, pos: Pos) -> i32 {
        pos.distance(self.goal_cell(pos))
    }

    fn marked(&self, pos: Pos) -> bool {
        self.opponents
            .iter()
            .any(|o| o.cooldown == 0.0 && o.pos.distance(pos) <= MARKING_DISTANCE)
    }

    fn walkable(&self, pos: Pos) -> bool {
        pos.is_inside() && !(self.holder == layout::HOLDER_LOOSE && pos == self.ball)
    }

    /// Whether to pass: the receiver is drawn at random, so every teammate must be a
    /// good receiver.
    fn should_pass(&self) -> bool {
        if self.mates.is_empty() {
            return false;
        }
        let mine = self.goal_distance(self.me.pos);
        let closer = self
            .mates
            .iter()
            .all(|mate| self.goal_distance(mate.pos) + PASS_GAIN <= mine);
        let freer = self.marked(self.me.pos)
            && self
                .mates
                .iter()
                .all(|mate| !self.marked(mate.pos) && self.goal_distance(mate.pos) <= mine + 2);
        closer || freer
    }

    fn decide(&self) -> u32 {
        let me = self.me;
        let front = me.pos.step(me.dir);
        if me.carrying {
            return if self.should_pass() {
                DROP
            } else {
                self.go_to(self.goal_cell(me.pos))
            };
        }
        if self.holder == layout::HOLDER_LOOSE {
            return if front == self.ball {
                PICKUP
            } else {
                self.approach(self.ball)
            };
        }
        if self.holder == layout::HOLDER_OPPONENT {
            let carrier = self
                .opponents
                .iter()
                .find(|o| o.carrying)
                .map_or(self.ball, |o| o.pos);
            return match (front == carrier, me.cooldown == 0.0) {
                (true, true) => PICKUP,
                (true, false) => NOOP,
                (false, _) => self.approach(carrier),
            };
        }
        // The teammate carries: wait on the opponent goal, where a pass scores at once.
        self.go_to(self.goal_cell(me.pos))
    }

    /// Gets next to `target` and faces it.
    fn approach(&self, target: Pos) -> u32 {
        let me = self.me;
        if me.pos.distance(target) == 1 {
            return turn_towards(me.dir, direction_of(me.pos, target));
        }
        let beside = (0..4u8)
            .map(|dir| target.step(dir))
            .filter(|cell| self.walkable(*cell))
            .min_by_key(|cell| me.pos.distance(*cell));
        beside.map_or(NOOP, |cell| self.go_to(cell))
    }

    /// One action towards `target`: forward when facing a useful free cell, else turn
    /// towards one (sideways when the straight way is blocked by the ball).
    fn go_to(&self, target: Pos) -> u32 {
        let me = self.me;
        let (dx, dy) = (target.x - me.pos.x, target.y - me.pos.y);
        if (dx, dy) == (0, 0) {
            return NOOP;
        }
        let horizontal = if dx > 0 { 0 } else { 2 };
        let vertical = if dy > 0 { 1 } else { 3 };
        let mut useful = Vec::with_capacity(2);
        let wanted: &[u8] = if dx.abs() >= dy.abs() {
            &[horizontal, vertical]
        } else {
            &[vertical, horizontal]
        };
        for &dir in wanted {
            let gains = if dir % 2 == 0 { dx != 0 } else { dy != 0 };
            if gains && self.walkable(me.pos.step(dir)) {
                useful.push(dir);
            }
        }
        if useful.contains(&me.dir) {
            return FORWARD;
        }
        if let Some(dir) = useful.first() {
            return turn_towards(me.dir, *dir);
        }
        let sideways = (0..4u8).find(|dir| {
            let crosses = if dx == 0 { dir % 2 == 0 } else { dir % 2 == 1 };
            crosses && self.walkable(me.pos.step(*dir))
        });
        match sideways {
            Some(dir) if dir == me.dir => FORWARD,
            Some(dir) => turn_towards(me.dir, dir),
            None => NOOP,
        }
    }
}

/// The direction from `from` to the neighbouring cell `to`.
fn direction_of(from: Pos, to: Pos) -> u8 {
    match (to.x - from.x, to.y - from.y) {
        (1, _) => 0,
        (_, 1) => 1,
        (-1, _) => 2,
        _ => 3,
    }
}

/// The turn bringing `facing` closer to `wanted` (either for a U-turn); noop when equal.
fn turn_towards(facing: u8, wanted: u8) -> u32 {
    match (wanted + 4 - facing) % 4 {
        0 => NOOP,
        3 => LEFT,
        _ => RIGHT,
    }
}

impl Policy for ScriptedSoccer {
    fn paradigm(&self) -> Paradigm {
        Paradigm::Scripted
    }

    fn wants(&self) -> ObsRequest {
        ObsRequest::SYMBOLIC
    }

    fn reset(&mut self, _ctx: &AgentContext) {}

    // Stateless: every decision depends on the observation alone.
    fn save_state(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::Null)
    }

    fn load_state(&mut self, _state: &serde_json::Value) -> Result<(), String> {
        Ok(())
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        let view_size = 0; // Only the global features are read.
        let shape = SymbolicLayout::new(self.lineup, view_size);
        let from_info: Option<Vec<f32>> = obs
            .info
            .as_ref()
            .and_then(|info| info.get(GLOBALS_INFO))
            .and_then(|globals| Vec::<f32>::deserialize(globals).ok());
        let globals = match &from_info {
            Some(globals) => Some(globals.as_slice()),
            None => obs.symbolic.as_ref().map(|t| t.data.as_slice()),
        };
        let action = globals
            .and_then(|data| read(data, &shape))
            .map_or(NOOP, |situation| situation.decide());
        Decision::act(Action(action))
    }
}
