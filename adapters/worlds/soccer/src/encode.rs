//! The symbolic observations: MOSAIC's layout (global features, then MultiGrid's
//! egocentric view encoding) and the reference's observation dict, flattened.

use super::game::{Ball, Cell, GOAL_MIDDLE, GOAL_X, Game, HEIGHT, Pos, WIDTH, rival};
use super::lineup::Lineup;
use super::settings::MAX_VIEW_SIZE;

/// Fixed offsets of the symbolic observation in the `mosaic` observation mode (a flat
/// `f32` vector of raw integers, no normalisation); [`SymbolicLayout`] places the blocks
/// whose number depends on the team sizes.
///
/// | offset | length | content |
/// |---|---|---|
/// | [`SELF`](layout::SELF) = 0 | 5 | own player block (see below) |
/// | [`BALL`](layout::BALL) = 5 | 3 | ball x, ball y (its carrier's cell when carried), holder: 0 loose, 1 self, 2 teammate, 3 opponent |
/// | [`GOALS`](layout::GOALS) = 8 | 4 | middle cell (x, y) of the goal to score on, then of the own goal; each goal spans rows 4–6 |
/// | [`TEAMMATES`](layout::TEAMMATES) = 12 | 5 × teammates | the teammates' player blocks, in agent index order: none in 1v0 and 1v1, one in 2v2, two in 3v3 |
/// | [`SymbolicLayout::opponents`] | 5 × opponents | the opponents' player blocks, in agent index order: none in 1v0, one in 1v1, two in 2v2, three in 3v3 |
/// | [`SymbolicLayout::score`] | 3 | own team's goals, opponents' goals, steps left before truncation |
/// | [`SymbolicLayout::view`] | `v·v·3` | MultiGrid's `image`: `image[i][j][c]` at `view + (i·v + j)·3 + c` |
///
/// In 2v2 the opponents start at 17, the score at 27 and the view at 30.
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
/// use mosaic_soccer::{Lineup, SymbolicLayout, layout};
/// let two = SymbolicLayout::new(Lineup::TwoOnTwo, 3);
/// assert_eq!((two.opponents(), two.score(), two.view(), two.total_len()), (17, 27, 30, 57));
/// assert_eq!(two.view_index(1, 2, 0), 30 + 5 * 3);
/// let solo = SymbolicLayout::new(Lineup::Solo, 3);
/// assert_eq!((solo.teammates, solo.opponents, solo.total_len()), (0, 0, 15 + 27));
/// assert_eq!(layout::TEAMMATES, 12);
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
    /// Ball holder value: a teammate.
    pub const HOLDER_TEAMMATE: f32 = 2.0;
    /// Ball holder value: an opponent.
    pub const HOLDER_OPPONENT: f32 = 3.0;
    /// Goals block: target x, target y, own x, own y.
    pub const GOALS: usize = BALL + 3;
    /// First teammate's player block (the others follow, then the opponents').
    pub const TEAMMATES: usize = GOALS + 4;
}

/// Where the blocks of the `mosaic` symbolic observation lie for one lineup and view size
/// (see [`layout`] for the table). Every agent of a lineup has the same layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymbolicLayout {
    /// Teammate blocks.
    pub teammates: usize,
    /// Opponent blocks.
    pub opponents: usize,
    /// Side of the view.
    pub view_size: usize,
}

impl SymbolicLayout {
    /// The layout of `lineup`'s observations with a view of side `view_size`.
    pub const fn new(lineup: Lineup, view_size: usize) -> Self {
        // Both teams are the same size, except in the solo lineups, whose one player (green
        // or blue) has no teammate and no opponent.
        let [green, blue] = lineup.team_sizes();
        let (own, other) = if green > 0 {
            (green, blue)
        } else {
            (blue, green)
        };
        Self {
            teammates: own.saturating_sub(1),
            opponents: other,
            view_size,
        }
    }

    /// Offset of teammate `k`'s block.
    pub const fn teammate(&self, k: usize) -> usize {
        layout::TEAMMATES + k * layout::PLAYER_FIELDS
    }

    /// Offset of the first opponent's block.
    pub const fn opponents(&self) -> usize {
        self.teammate(self.teammates)
    }

    /// Offset of opponent `k`'s block.
    pub const fn opponent(&self, k: usize) -> usize {
        self.opponents() + k * layout::PLAYER_FIELDS
    }

    /// Offset of the score block: own goals, opponents' goals, steps left.
    pub const fn score(&self) -> usize {
        self.opponent(self.opponents)
    }

    /// Offset of the view (= number of global features).
    pub const fn view(&self) -> usize {
        self.score() + 3
    }

    /// Total length.
    pub const fn total_len(&self) -> usize {
        self.view() + self.view_size * self.view_size * 3
    }

    /// Index of channel `channel` of view cell (`i`, `j`).
    pub const fn view_index(&self, i: usize, j: usize, channel: usize) -> usize {
        self.view() + (i * self.view_size + j) * 3 + channel
    }
}

/// The `reference` observation mode: the reference's per-agent observation dict as one
/// flat `f32` vector of raw integers, the same for every lineup.
///
/// | offset | length | content |
/// |---|---|---|
/// | 0 | `v·v·3` | `obs["image"]` flattened in row-major (C) order: `image[i][j][c]` at `(i·v + j)·3 + c` |
/// | [`direction`](reference::direction)`(v)` = `v·v·3` | 1 | `obs["direction"]`: 0 east (right), 1 south (down), 2 west (left), 3 north (up) |
///
/// `obs["mission"]` is the constant "maximize reward" and is left out. With numpy the same
/// vector is `np.append(obs["image"].reshape(-1), obs["direction"])`. The image encoding
/// is the one [`layout`] describes for the view.
///
/// ```
/// use mosaic_soccer::reference;
/// assert_eq!((reference::len(3), reference::direction(3)), (28, 27));
/// assert_eq!(reference::image_index(3, 1, 2, 0), 15);
/// ```
pub mod reference {
    /// Total length for a view of side `view_size`.
    pub const fn len(view_size: usize) -> usize {
        direction(view_size) + 1
    }

    /// Index of the direction.
    pub const fn direction(view_size: usize) -> usize {
        view_size * view_size * 3
    }

    /// Index of channel `channel` of image cell (`i`, `j`).
    pub const fn image_index(view_size: usize, i: usize, j: usize, channel: usize) -> usize {
        (i * view_size + j) * 3 + channel
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
        for (agent, player) in game.players.iter().enumerate().rev() {
            if player.pos == pos {
                let carrying = if carrier == Some(agent) {
                    CARRYING_OFFSET
                } else {
                    0
                };
                return [
                    kind::AGENT,
                    team_colour(game.team_of(agent)),
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

/// Writes the global features of `agent`'s `mosaic` observation (everything before the
/// view, see [`layout`]) into `out`, which must hold at least [`SymbolicLayout::view`]
/// values.
pub(crate) fn globals(game: &Game, agent: usize, shape: &SymbolicLayout, out: &mut [f32]) {
    use layout::*;
    let team = game.team_of(agent);
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
        Ball::Carried(who) if game.team_of(who) == team => HOLDER_TEAMMATE,
        Ball::Carried(_) => HOLDER_OPPONENT,
    };

    out[GOALS] = GOAL_X[rival(team)] as f32;
    out[GOALS + 1] = GOAL_MIDDLE as f32;
    out[GOALS + 2] = GOAL_X[team] as f32;
    out[GOALS + 3] = GOAL_MIDDLE as f32;

    let (mut teammates, mut opponents) = (0, 0);
    for other in (0..game.players.len()).filter(|o| *o != agent) {
        let at = if game.team_of(other) == team {
            teammates += 1;
            shape.teammate(teammates - 1)
        } else {
            opponents += 1;
            shape.opponent(opponents - 1)
        };
        player_block(&mut out[at..], other);
    }

    let score = shape.score();
    out[score] = game.teams[team].goals as f32;
    out[score + 1] = game.teams[rival(team)].goals as f32;
    out[score + 2] = game.settings.max_steps.saturating_sub(game.steps) as f32;
}

/// Writes `agent`'s `mosaic` observation (see [`layout`]) into `out`.
pub(crate) fn symbolic(game: &Game, agent: usize, view_size: usize, out: &mut Vec<f32>) {
    let shape = SymbolicLayout::new(game.lineup, view_size);
    out.clear();
    out.resize(shape.total_len(), 0.0);
    globals(game, agent, &shape, out);
    write_view(game, agent, view_size, &mut out[shape.view()..]);
}

/// Writes `agent`'s `reference` observation (see [`reference`]) into `out`.
pub(crate) fn reference(game: &Game, agent: usize, view_size: usize, out: &mut Vec<f32>) {
    out.clear();
    out.resize(reference::len(view_size), 0.0);
    write_view(game, agent, view_size, out);
    out[reference::direction(view_size)] = f32::from(game.players[agent].dir);
}

/// Writes the view's `image[i][j][c]` at `(i·v + j)·3 + c` of `out`.
fn write_view(game: &Game, agent: usize, view_size: usize, out: &mut [f32]) {
    let view = view(game, agent, view_size);
    for (k, cell) in view.cells[..view_size * view_size].iter().enumerate() {
        for (c, value) in cell.iter().enumerate() {
            out[k * 3 + c] = f32::from(*value);
        }
    }
}
