//! The rules: pitch, players, ball and one step of play.
//!
//! A faithful port of `SoccerGameIndAgObsEnv` of `mosaic-multigrid` 7.0.0 (16×11, any of
//! its 1v0, 1v1, 2v2 and 3v3 lineups) on flat state: the terrain is implicit (walls on the
//! border, two fixed goals), so the world is the players and one ball.

use super::lineup::{Lineup, MAX_AGENTS};
use super::settings::SoccerSettings;
use mosaic_core::rng::{Rng, seeded};
use mosaic_core::{Action, Event, Transition};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

/// Pitch width in cells, walls included.
pub const WIDTH: i32 = 16;
/// Pitch height in cells, walls included.
pub const HEIGHT: i32 = 11;
/// Team names; team `t` defends the goal in column [`GOAL_X`]`[t]`.
pub const TEAMS: [&str; 2] = ["green", "blue"];
/// Column of the goal each team defends (green on the left, blue on the right).
pub const GOAL_X: [i32; 2] = [1, WIDTH - 2];
/// First row of both goals.
pub const GOAL_TOP: i32 = 4;
/// Middle row of both goals (the reference's shaping target).
pub(crate) const GOAL_MIDDLE: i32 = 5;
/// Last row of both goals.
pub const GOAL_BOTTOM: i32 = 6;
/// Action labels, in index order (MultiGrid's `Action` enum).
pub const ACTION_LABELS: [&str; 8] = [
    "noop", "left", "right", "forward", "pickup", "drop", "toggle", "done",
];
/// Direction names, index 0 = east (+x), 1 = south (+y), 2 = west, 3 = north.
pub(crate) const DIRECTION_NAMES: [&str; 4] = ["east", "south", "west", "north"];

/// Turn left.
pub(crate) const LEFT: u32 = 1;
/// Turn right.
pub(crate) const RIGHT: u32 = 2;
/// Move one cell forward.
pub(crate) const FORWARD: u32 = 3;
/// Pick up the ball in front, or steal it from an opponent in front.
pub(crate) const PICKUP: u32 = 4;
/// Pass the ball to a teammate (or drop it in front when there is none).
pub(crate) const DROP: u32 = 5;

const GOAL_REWARD: f32 = 1.0;
const TIME_BONUS_PER_STEP: f32 = 0.05;
const STEAL_BONUS: f32 = 0.3;
const DISTANCE_SHAPING: f32 = 0.01;

/// The other team.
pub(crate) const fn rival(team: usize) -> usize {
    1 - team
}

/// A cell of the pitch, `x` to the east and `y` to the south, (0, 0) the top-left wall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct Pos {
    /// Column.
    pub x: i32,
    /// Row.
    pub y: i32,
}

impl Pos {
    /// Off the pitch: where players wait before they are placed.
    pub(crate) const NOWHERE: Pos = Pos { x: -1, y: -1 };

    /// The cell at (x, y).
    pub(crate) const fn new(x: i32, y: i32) -> Self {
        Self { x, y }
    }

    /// The neighbouring cell in direction `dir` (0 east, 1 south, 2 west, 3 north).
    pub(crate) const fn step(self, dir: u8) -> Pos {
        match dir & 3 {
            0 => Pos::new(self.x + 1, self.y),
            1 => Pos::new(self.x, self.y + 1),
            2 => Pos::new(self.x - 1, self.y),
            _ => Pos::new(self.x, self.y - 1),
        }
    }

    /// Manhattan distance.
    pub(crate) const fn distance(self, other: Pos) -> i32 {
        (self.x - other.x).abs() + (self.y - other.y).abs()
    }

    /// Inside the walls.
    pub(crate) const fn is_inside(self) -> bool {
        self.x > 0 && self.y > 0 && self.x < WIDTH - 1 && self.y < HEIGHT - 1
    }
}

/// The static content of a cell plus the loose ball (players are not cells: they may share
/// one, as in the reference, which allows agents to overlap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cell {
    /// Walkable grass.
    Empty,
    /// The border.
    Wall,
    /// A goal cell, defended by `team`; walkable.
    Goal {
        /// The defending team.
        team: usize,
    },
    /// The loose ball; blocks movement.
    Ball,
}

/// Where the ball is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Ball {
    /// On the ground.
    Loose(Pos),
    /// Carried by this agent.
    Carried(usize),
}

/// One player.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Player {
    /// Position.
    pub pos: Pos,
    /// Facing direction, 0 east, 1 south, 2 west, 3 north.
    pub dir: u8,
    /// Steps left before this player may steal again.
    pub cooldown: u32,
    /// Position at the end of the previous step (distance shaping).
    pub prev_pos: Pos,
}

/// Per-team counters for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TeamStats {
    /// Goals scored.
    pub goals: u32,
    /// Completed passes.
    pub passes: u32,
    /// Balls stolen from the other team.
    pub steals: u32,
    /// Loose balls picked up.
    pub pickups: u32,
}

/// The whole mutable state of an episode (everything a snapshot needs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Game {
    /// The rules in force.
    pub settings: SoccerSettings,
    /// Who plays. Not in snapshots: the environment's name fixes it, and the restoring
    /// environment puts its own back before checking the players against it.
    #[serde(skip)]
    pub lineup: Lineup,
    /// Players in agent index order.
    pub players: Vec<Player>,
    /// The ball.
    pub ball: Ball,
    /// Per-team counters, green then blue.
    pub teams: [TeamStats; 2],
    /// Steps taken since reset.
    pub steps: u32,
    /// A team reached `goals_to_win`.
    pub terminated: bool,
    /// `steps` reached `max_steps`.
    pub truncated: bool,
    /// The episode's random stream (placement, turn order, pass receiver, respawn).
    pub rng: Rng,
}

impl Game {
    /// A new episode: the ball, then each player (position, then direction) on uniformly
    /// random free cells, as the reference's `place_obj`/`place_agent` do.
    pub(crate) fn new(settings: SoccerSettings, lineup: Lineup, seed: u64) -> Self {
        let idle = Player {
            pos: Pos::NOWHERE,
            dir: 0,
            cooldown: 0,
            prev_pos: Pos::NOWHERE,
        };
        let mut game = Self {
            settings,
            lineup,
            players: vec![idle; lineup.agents()],
            ball: Ball::Loose(Pos::NOWHERE),
            teams: [TeamStats::default(); 2],
            steps: 0,
            terminated: false,
            truncated: false,
            rng: seeded(seed),
        };
        game.ball = Ball::Loose(game.random_free_cell());
        for agent in 0..lineup.agents() {
            let pos = game.random_free_cell();
            let dir = game.rng.random_range(0..4u8);
            game.players[agent] = Player {
                pos,
                dir,
                cooldown: 0,
                prev_pos: pos,
            };
        }
        game
    }

    /// The team (0 green, 1 blue) of `agent`.
    pub(crate) fn team_of(&self, agent: usize) -> usize {
        self.lineup.team_of(agent)
    }

    /// The episode has ended (a team won or time ran out).
    pub(crate) fn is_over(&self) -> bool {
        self.terminated || self.truncated
    }

    /// The cell content at `pos`; outside the pitch counts as wall.
    pub(crate) fn cell(&self, pos: Pos) -> Cell {
        if !pos.is_inside() {
            return Cell::Wall;
        }
        if (GOAL_TOP..=GOAL_BOTTOM).contains(&pos.y) {
            if pos.x == GOAL_X[0] {
                return Cell::Goal { team: 0 };
            }
            if pos.x == GOAL_X[1] {
                return Cell::Goal { team: 1 };
            }
        }
        if self.ball == Ball::Loose(pos) {
            return Cell::Ball;
        }
        Cell::Empty
    }

    /// The agent carrying the ball.
    pub(crate) fn carrier(&self) -> Option<usize> {
        match self.ball {
            Ball::Carried(agent) => Some(agent),
            Ball::Loose(_) => None,
        }
    }

    /// Where the ball is: its cell, or its carrier's.
    pub(crate) fn ball_pos(&self) -> Pos {
        match self.ball {
            Ball::Loose(pos) => pos,
            Ball::Carried(agent) => self.players[agent].pos,
        }
    }

    /// The lowest-index agent on `pos` that is still playing (the reference's `_agent_at`).
    pub(crate) fn agent_at(&self, pos: Pos) -> Option<usize> {
        if self.terminated {
            return None;
        }
        self.players.iter().position(|p| p.pos == pos)
    }

    /// The cell in front of `agent`.
    pub(crate) fn front(&self, agent: usize) -> Pos {
        let player = &self.players[agent];
        player.pos.step(player.dir)
    }

    /// Whether `pos` is a goal cell that `team` scores on.
    pub(crate) fn is_scoring_cell(team: usize, pos: Pos) -> bool {
        pos.x == GOAL_X[rival(team)] && (GOAL_TOP..=GOAL_BOTTOM).contains(&pos.y)
    }

    /// Advances one step. `actions` must hold one (valid) entry per agent; `None` skips the
    /// agent, like a missing key in the reference's action dict.
    pub(crate) fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) {
        out.clear(self.players.len());
        self.steps += 1;
        for player in &mut self.players {
            player.cooldown = player.cooldown.saturating_sub(1);
        }
        let mut stole = [false; MAX_AGENTS];
        let (order, agents) = self.turn_order();
        for &agent in &order[..agents] {
            if let Some(action) = actions.get(agent).copied().flatten() {
                self.act(agent, action, &mut stole, out);
            }
        }
        self.score_walk_in(out);
        if self.settings.reward_shaping {
            self.shape_rewards(&stole, out);
        }
        self.truncated = self.steps >= self.settings.max_steps;
        out.terminated.fill(self.terminated);
        out.truncated.fill(self.truncated);
    }

    /// A uniformly random permutation of the agents (the first `.1` entries): who acts
    /// first when actions conflict. A lone player draws nothing, as in the reference.
    fn turn_order(&mut self) -> ([usize; MAX_AGENTS], usize) {
        let mut order = [0, 1, 2, 3, 4, 5];
        let agents = self.players.len();
        for i in (1..agents).rev() {
            let j = self.rng.random_range(0..=i);
            order.swap(i, j);
        }
        (order, agents)
    }

    fn act(
        &mut self,
        agent: usize,
        action: Action,
        stole: &mut [bool; MAX_AGENTS],
        out: &mut Transition,
    ) {
        match action.0 {
            LEFT => self.players[agent].dir = (self.players[agent].dir + 3) % 4,
            RIGHT => self.players[agent].dir = (self.players[agent].dir + 1) % 4,
            FORWARD => {
                let front = self.front(agent);
                if matches!(self.cell(front), Cell::Empty | Cell::Goal { .. }) {
                    self.players[agent].pos = front;
                }
            }
            PICKUP => stole[agent] = self.pickup(agent, out),
            DROP => self.pass(agent, out),
            // noop, toggle (nothing on a soccer pitch reacts to it) and done.
            _ => {}
        }
    }

    /// Picks the ball up from the cell in front, or steals it from an opponent standing
    /// there (unless this agent is cooling down). Returns whether it was a steal.
    fn pickup(&mut self, agent: usize, out: &mut Transition) -> bool {
        if self.carrier() == Some(agent) {
            return false;
        }
        let front = self.front(agent);
        let team = self.team_of(agent);
        if self.ball == Ball::Loose(front) {
            self.ball = Ball::Carried(agent);
            self.teams[team].pickups += 1;
            out.events.push(event("pickup", agent, None));
            return false;
        }
        let Some(victim) = self.agent_at(front) else {
            return false;
        };
        if self.carrier() != Some(victim)
            || self.players[agent].cooldown > 0
            || self.team_of(victim) == team
        {
            return false;
        }
        self.ball = Ball::Carried(agent);
        self.players[agent].cooldown = self.settings.steal_cooldown;
        self.players[victim].cooldown = self.settings.steal_cooldown;
        self.teams[team].steals += 1;
        out.events.push(event(
            "steal",
            agent,
            Some(serde_json::json!({ "from": self.lineup.agent_ids()[victim] })),
        ));
        true
    }

    /// Passes by teleport to a teammate, wherever it is, drawn uniformly among them (every
    /// teammate is free: there is one ball, and players only leave the game together, at
    /// the end); a lone teammate is taken without a draw. Without teammates (1v0, 1v1)
    /// the ball is dropped on the cell in front when that is grass with nobody on it, as
    /// the reference's fallback does; otherwise nothing happens.
    fn pass(&mut self, agent: usize, out: &mut Transition) {
        if self.carrier() != Some(agent) {
            return;
        }
        let team = self.team_of(agent);
        let mut mates = [0; MAX_AGENTS];
        let mut count = 0;
        for mate in self.lineup.members(team).filter(|mate| *mate != agent) {
            mates[count] = mate;
            count += 1;
        }
        let receiver = match count {
            0 => return self.drop_in_front(agent, out),
            1 => mates[0],
            n => mates[self.rng.random_range(0..n)],
        };
        self.ball = Ball::Carried(receiver);
        self.teams[team].passes += 1;
        out.events.push(event(
            "pass",
            agent,
            Some(serde_json::json!({ "to": self.lineup.agent_ids()[receiver] })),
        ));
    }

    /// Puts the carried ball on the grass in front of `agent`, if nobody stands there.
    fn drop_in_front(&mut self, agent: usize, out: &mut Transition) {
        let front = self.front(agent);
        if self.cell(front) == Cell::Empty && self.agent_at(front).is_none() {
            self.ball = Ball::Loose(front);
            out.events.push(event("drop", agent, None));
        }
    }

    /// A carrier standing on the opponent goal scores: its team gets the goal reward plus a
    /// time bonus, the ball respawns on a random free cell, and reaching `goals_to_win`
    /// ends the episode.
    fn score_walk_in(&mut self, out: &mut Transition) {
        let Some(scorer) = self.carrier() else {
            return;
        };
        let team = self.team_of(scorer);
        if self.terminated || !Self::is_scoring_cell(team, self.players[scorer].pos) {
            return;
        }
        let left = self.settings.max_steps as f32 - self.steps as f32;
        let reward = GOAL_REWARD + left * TIME_BONUS_PER_STEP;
        for agent in self.lineup.members(team) {
            out.rewards[agent] += reward;
        }
        self.ball = Ball::Loose(self.random_free_cell());
        self.teams[team].goals += 1;
        let score = [self.teams[0].goals, self.teams[1].goals];
        out.events.push(event(
            "goal",
            scorer,
            Some(serde_json::json!({
                "team": TEAMS[team],
                "score": { TEAMS[0]: score[0], TEAMS[1]: score[1] },
            })),
        ));
        if self.teams[team].goals >= self.settings.goals_to_win {
            self.terminated = true;
        }
    }

    /// The reference's dense shaping: steal bonus, then ±0.01 per cell of Manhattan distance
    /// gained towards the opponent goal's middle (carrier) or the loose ball (others).
    fn shape_rewards(&mut self, stole: &[bool; MAX_AGENTS], out: &mut Transition) {
        let carrier = self.carrier();
        let loose = match self.ball {
            Ball::Loose(pos) => Some(pos),
            Ball::Carried(_) => None,
        };
        let lineup = self.lineup;
        for (agent, player) in self.players.iter_mut().enumerate() {
            if stole[agent] {
                out.rewards[agent] += STEAL_BONUS;
            }
            let target = if carrier == Some(agent) {
                Some(Pos::new(GOAL_X[rival(lineup.team_of(agent))], GOAL_MIDDLE))
            } else {
                loose
            };
            if let Some(target) = target {
                let gained = player.prev_pos.distance(target) - player.pos.distance(target);
                out.rewards[agent] += DISTANCE_SHAPING * gained as f32;
            }
            player.prev_pos = player.pos;
        }
    }

    /// A uniformly random cell with nothing on it and no player (there are always more than
    /// 100 such cells: 126 inside the walls, minus 6 goal cells, the ball and 6 players).
    fn random_free_cell(&mut self) -> Pos {
        const CELLS: usize = (WIDTH * HEIGHT) as usize;
        let index = |pos: Pos| (pos.y * WIDTH + pos.x) as usize;
        // One pass over the players, then one over the cells (row by row, as the draw's
        // order has always been): placement is hot in training, where goals respawn the ball.
        let mut taken = [false; CELLS];
        for player in self.players.iter().filter(|p| p.pos.is_inside()) {
            taken[index(player.pos)] = true;
        }
        let mut free = [Pos::NOWHERE; CELLS];
        let mut count = 0;
        for y in 1..HEIGHT - 1 {
            for x in 1..WIDTH - 1 {
                let pos = Pos::new(x, y);
                if !taken[index(pos)] && self.cell(pos) == Cell::Empty {
                    free[count] = pos;
                    count += 1;
                }
            }
        }
        if count == 0 {
            return Pos::NOWHERE;
        }
        free[self.rng.random_range(0..count)]
    }

    /// Checks a state read from outside (a snapshot) so that play cannot index out of range.
    pub(crate) fn validate(&self) -> Result<(), String> {
        self.settings
            .validate()
            .map_err(|e| format!("{}: {}", e.path, e.message))?;
        let ids = self.lineup.agent_ids();
        if self.players.len() != ids.len() {
            return Err(format!(
                "{} players for {} slots",
                self.players.len(),
                ids.len()
            ));
        }
        for (id, player) in ids.iter().zip(&self.players) {
            if !player.pos.is_inside() || !player.prev_pos.is_inside() {
                return Err(format!("{id} is off the pitch"));
            }
            if player.dir > 3 {
                return Err(format!("{id} faces direction {}", player.dir));
            }
        }
        match self.ball {
            Ball::Carried(agent) if agent >= ids.len() => {
                Err(format!("ball carried by unknown agent {agent}"))
            }
            Ball::Loose(pos) if self.cell(pos) != Cell::Ball => {
                Err("loose ball must lie on an empty cell inside the walls".into())
            }
            Ball::Loose(pos) if self.players.iter().any(|p| p.pos == pos) => {
                Err("loose ball lies under a player".into())
            }
            _ => Ok(()),
        }
    }
}

fn event(kind: &str, agent: usize, detail: Option<serde_json::Value>) -> Event {
    Event {
        kind: kind.to_owned(),
        agent: Some(agent),
        detail,
    }
}
