//! The symbolic observation: global features, then MultiGrid's egocentric view encoding.

use super::game::{
    AGENTS, Ball, Cell, GOAL_MIDDLE, GOAL_X, Game, HEIGHT, Pos, WIDTH, rival, team_of,
};
use super::settings::MAX_VIEW_SIZE;

/// Layout of the symbolic observation of `soccer-2v2` (a flat `f32` vector of length
/// [`layout::len`]`(view_size)`, raw integers, no normalisation).
///
/// | offset | length | content |
/// |---|---|---|
/// | [`SELF`](layout::SELF) = 0 | 5 | own player block (see below) |
/// | [`BALL`](layout::BALL) = 5 | 3 | ball x, ball y (its carrier's cell when carried), holder: 0 loose, 1 self, 2 teammate, 3 opponent |
/// | [`GOALS`](layout::GOALS) = 8 | 4 | middle cell (x, y) of the goal to score on, then of the own goal; each goal spans rows 4–6 |
/// | [`TEAMMATE`](layout::TEAMMATE) = 12 | 5 | teammate's player block |
/// | [`OPPONENTS`](layout::OPPONENTS) = 17 | 10 | the two opponents' player blocks, in agent index order |
/// | [`SCORE`](layout::SCORE) = 27 | 3 | own team's goals, opponents' goals, steps left before truncation |
/// | [`VIEW`](layout::VIEW) = 30 | `v·v·3` | MultiGrid's `image`: `image[i][j][c]` at `VIEW + (i·v + j)·3 + c` |
///
/// A player block is x, y, direction (0 east, 1 south, 2 west, 3 north), carrying (0/1),
/// steal cooldown. Positions are absolute cells, (0, 0) the top-left wall, pitch 16×11.
///
/// The view is exactly the reference's encoding: `i` runs left to right across the
/// agent's facing direction, `j` from far to near, the agent sits at `(v/2, v-1)` facing
/// "up"; channels are (type, colour, state) with MultiGrid's indices — type 0 unseen,
/// 1 empty, 2 wall, 6 ball, 10 agent, 11 goal; colour 0 red (ball), 1 green, 2 blue,
/// 5 grey (wall); an agent's state is its direction, plus 100 when it carries the ball.
/// The agent's own cell shows what it carries (ball or empty); cells hidden behind walls
/// are unseen.
///
/// ```
/// use mosaic_soccer::layout;
/// assert_eq!(layout::len(3), 57);
/// assert_eq!(layout::view_index(3, 1, 2, 0), 30 + 5 * 3);
/// ```
pub mod layout {
    /// Fields of a player block.
    pub const PLAYER_FIELDS: usize = 5;
    /// Player block: x.
    pub const X: usize = 0;
    /// Player block: y.
    pub const Y: usize = 1;
    /// Player block: direction.
    pub const DIR: usize = 2;
    /// Player block: carrying the ball (0/1).
    pub const CARRYING: usize = 3;
    /// Player block: steal cooldown.
    pub const COOLDOWN: usize = 4;

    /// Own player block.
    pub const SELF: usize = 0;
    /// Ball block: x, y, holder.
    pub const BALL: usize = SELF + PLAYER_FIELDS;
    /// Ball holder value: on the ground.
    pub const HOLDER_LOOSE: f32 = 0.0;
    /// Ball holder value: this agent.
    pub const HOLDER_SELF: f32 = 1.0;
    /// Ball holder value: the teammate.
    pub const HOLDER_TEAMMATE: f32 = 2.0;
    /// Ball holder value: an opponent.
    pub const HOLDER_OPPONENT: f32 = 3.0;
    /// Goals block: target x, target y, own x, own y.
    pub const GOALS: usize = BALL + 3;
    /// Teammate's player block.
    pub const TEAMMATE: usize = GOALS + 4;
    /// First opponent's player block; the second follows.
    pub const OPPONENTS: usize = TEAMMATE + PLAYER_FIELDS;
    /// Score block: own goals, opponents' goals, steps left.
    pub const SCORE: usize = OPPONENTS + 2 * PLAYER_FIELDS;
    /// Start of the view encoding (= number of global features).
    pub const VIEW: usize = SCORE + 3;

    /// Total length for a view of side `view_size`.
    pub const fn len(view_size: usize) -> usize {
        VIEW + view_size * view_size * 3
    }

    /// Index of channel `channel` of view cell (`i`, `j`).
    pub const fn view_index(view_size: usize, i: usize, j: usize, channel: usize) -> usize {
        VIEW + (i * view_size + j) * 3 + channel
    }
}

/// MultiGrid object type indices.
pub(crate) mod kind {
    pub(crate) const UNSEEN: u8 = 0;
    pub(crate) const EMPTY: u8 = 1;
    pub(crate) const WALL: u8 = 2;
    pub(crate) const BALL: u8 = 6;
    pub(crate) const AGENT: u8 = 10;
    pub(crate) const GOAL: u8 = 11;
}

/// MultiGrid colour index of the ball (red) and walls (grey); team `t` is `t + 1`.
const RED: u8 = 0;
const GREY: u8 = 5;
/// Added to an agent's state when it carries the ball.
const CARRYING_OFFSET: u8 = 100;

/// One encoded cell: (type, colour, state).
pub(crate) type Encoded = [u8; 3];

const UNSEEN: Encoded = [kind::UNSEEN, RED, 0];
const EMPTY: Encoded = [kind::EMPTY, RED, 0];
const WALL: Encoded = [kind::WALL, GREY, 0];
const BALL: Encoded = [kind::BALL, RED, 0];

/// The MultiGrid colour index of a team.
pub(crate) const fn team_colour(team: usize) -> u8 {
    team as u8 + 1
}

/// An agent's egocentric view, `cells[i * size + j]`, as MultiGrid encodes it.
pub(crate) struct View {
    pub size: usize,
    pub cells: [Encoded; (MAX_VIEW_SIZE * MAX_VIEW_SIZE) as usize],
}

impl View {
    /// The cell at (`i`, `j`).
    pub(crate) fn at(&self, i: usize, j: usize) -> Encoded {
        self.cells[i * self.size + j]
    }
}

/// What the world shows at `pos`: the highest-index playing agent there, else the cell.
fn world_encoding(game: &Game, pos: Pos) -> Encoded {
    if !game.terminated {
        let carrier = game.carrier();
        for agent in (0..AGENTS).rev() {
            let player = &game.players[agent];
            if player.pos == pos {
                let carrying = if carrier == Some(agent) {
                    CARRYING_OFFSET
                } else {
                    0
                };
                return [
                    kind::AGENT,
                    team_colour(team_of(agent)),
                    player.dir + carrying,
                ];
            }
        }
    }
    match game.cell(pos) {
        Cell::Empty => EMPTY,
        Cell::Wall => WALL,
        Cell::Goal { team } => [kind::GOAL, team_colour(team), 0],
        Cell::Ball => BALL,
    }
}

/// The view of `agent` (`size` odd, at most [`MAX_VIEW_SIZE`]): the reference's
/// `gen_obs_grid` rotation and its two-pass visibility sweep.
pub(crate) fn view(game: &Game, agent: usize, size: usize) -> View {
    let mut view = View {
        size,
        cells: [UNSEEN; (MAX_VIEW_SIZE * MAX_VIEW_SIZE) as usize],
    };
    let player = &game.players[agent];
    let (px, py, half, s) = (player.pos.x, player.pos.y, size as i32 / 2, size as i32);
    let (top_x, top_y) = match player.dir {
        0 => (px, py - half),
        1 => (px - half, py),
        2 => (px - s + 1, py - half),
        _ => (px - half, py - s + 1),
    };
    let grid = &mut view.cells;
    for i in 0..size {
        for j in 0..size {
            let (ri, rj) = match (player.dir + 1) % 4 {
                0 => (i, j),
                1 => (j, size - i - 1),
                2 => (size - i - 1, size - j - 1),
                _ => (size - j - 1, i),
            };
            let pos = Pos::new(top_x + i as i32, top_y + j as i32);
            let in_grid = pos.x >= 0 && pos.y >= 0 && pos.x < WIDTH && pos.y < HEIGHT;
            grid[ri * size + rj] = if in_grid {
                world_encoding(game, pos)
            } else {
                WALL
            };
        }
    }
    grid[(size / 2) * size + size - 1] = if game.carrier() == Some(agent) {
        BALL
    } else {
        EMPTY
    };

    let mut visible = [false; (MAX_VIEW_SIZE * MAX_VIEW_SIZE) as usize];
    let see_behind = |i: usize, j: usize| grid[i * size + j][0] != kind::WALL;
    visible[(size / 2) * size + size - 1] = true;
    for j in (0..size).rev() {
        for i in 0..size - 1 {
            if visible[i * size + j] && see_behind(i, j) {
                visible[(i + 1) * size + j] = true;
                if j > 0 {
                    visible[(i + 1) * size + j - 1] = true;
                    visible[i * size + j - 1] = true;
                }
            }
        }
        for i in (1..size).rev() {
            if visible[i * size + j] && see_behind(i, j) {
                visible[(i - 1) * size + j] = true;
                if j > 0 {
                    visible[(i - 1) * size + j - 1] = true;
                    visible[i * size + j - 1] = true;
                }
            }
        }
    }
    for (cell, seen) in grid.iter_mut().zip(visible).take(size * size) {
        if !seen {
            *cell = UNSEEN;
        }
    }
    view
}

/// Writes the full symbolic observation of `agent` (see [`layout`]) into `out`.
pub(crate) fn symbolic(game: &Game, agent: usize, view_size: usize, out: &mut Vec<f32>) {
    use layout::*;
    out.clear();
    out.resize(len(view_size), 0.0);
    let team = team_of(agent);
    let carrier = game.carrier();
    let player_block = |out: &mut [f32], who: usize| {
        let p = &game.players[who];
        out[X] = p.pos.x as f32;
        out[Y] = p.pos.y as f32;
        out[DIR] = f32::from(p.dir);
        out[CARRYING] = if carrier == Some(who) { 1.0 } else { 0.0 };
        out[COOLDOWN] = p.cooldown as f32;
    };
    player_block(&mut out[SELF..], agent);

    let ball = game.ball_pos();
    out[BALL] = ball.x as f32;
    out[BALL + 1] = ball.y as f32;
    out[BALL + 2] = match game.ball {
        Ball::Loose(_) => HOLDER_LOOSE,
        Ball::Carried(who) if who == agent => HOLDER_SELF,
        Ball::Carried(who) if team_of(who) == team => HOLDER_TEAMMATE,
        Ball::Carried(_) => HOLDER_OPPONENT,
    };

    out[GOALS] = GOAL_X[rival(team)] as f32;
    out[GOALS + 1] = GOAL_MIDDLE as f32;
    out[GOALS + 2] = GOAL_X[team] as f32;
    out[GOALS + 3] = GOAL_MIDDLE as f32;

    let mut opponents = 0;
    for other in (0..AGENTS).filter(|o| *o != agent) {
        let at = if team_of(other) == team {
            TEAMMATE
        } else {
            opponents += 1;
            OPPONENTS + (opponents - 1) * PLAYER_FIELDS
        };
        player_block(&mut out[at..], other);
    }

    out[SCORE] = game.teams[team].goals as f32;
    out[SCORE + 1] = game.teams[rival(team)].goals as f32;
    out[SCORE + 2] = game.settings.max_steps.saturating_sub(game.steps) as f32;

    let view = view(game, agent, view_size);
    for (k, cell) in view.cells[..view_size * view_size].iter().enumerate() {
        for (c, value) in cell.iter().enumerate() {
            out[VIEW + k * 3 + c] = f32::from(*value);
        }
    }
}
