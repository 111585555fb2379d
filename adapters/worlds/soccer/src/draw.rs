//! Pictures: the whole pitch with a score bar, and one agent's egocentric view.

use super::encode::{self, Encoded, kind};
use super::game::{Ball, GOAL_BOTTOM, GOAL_TOP, GOAL_X, Game, HEIGHT, WIDTH};
use mosaic_core::Frame;
use mosaic_core::canvas::Canvas;

/// Pixels per cell of the pitch picture.
pub const PITCH_TILE: u32 = 16;
/// Pixels per cell of an agent's view picture.
pub const VIEW_TILE: u32 = 32;

const GRASS_LIGHT: [u8; 3] = [76, 153, 60];
const GRASS_DARK: [u8; 3] = [58, 128, 45];
const GRASS_WALL: [u8; 3] = [45, 100, 35];
const GRID_LINE: [u8; 3] = [50, 110, 40];
const FIELD_LINE: [u8; 3] = [255, 255, 255];
const GOAL_NET: [u8; 3] = [220, 220, 220];
const TEAM_COLOURS: [[u8; 3]; 2] = [[30, 200, 60], [60, 80, 220]];
const TEAM_OUTLINES: [[u8; 3]; 2] = [[10, 70, 20], [20, 30, 110]];
const BALL_COLOUR: [u8; 3] = [255, 60, 60];
const BALL_OUTLINE: [u8; 3] = [150, 20, 20];
const BAR: [u8; 3] = [30, 30, 30];
const BAR_TRACK: [u8; 3] = [70, 70, 70];
const BAR_FILL: [u8; 3] = [200, 200, 200];
const UNSEEN: [u8; 3] = [0, 0, 0];

/// Grass colour of pitch column `x` (vertical stripes).
fn stripe(x: i32) -> [u8; 3] {
    if x % 2 == 0 { GRASS_LIGHT } else { GRASS_DARK }
}

/// How to draw one player.
struct Look {
    team: usize,
    dir: u8,
    carrying: bool,
    /// White pips in the corner telling teammates apart (0 when unknown).
    pips: i64,
}

/// The pips of `agent`: its number within its team, plus one.
fn pips(game: &Game, agent: usize) -> i64 {
    let first = game.lineup.members(game.team_of(agent)).start;
    (agent - first) as i64 + 1
}

/// A goal cell: team colour with a net.
fn goal_tile(canvas: &mut Canvas, px: i64, py: i64, tile: u32, team: usize) {
    let inset = i64::from(tile / 8);
    let inner = tile - 2 * tile / 8;
    canvas.fill_rect(px + inset, py + inset, inner, inner, TEAM_COLOURS[team]);
    let step = (tile / 4).max(3) as usize;
    for ny in (inset as u32 + 2..tile - inset as u32 - 1).step_by(step) {
        canvas.fill_rect(px + inset + 1, py + i64::from(ny), inner - 2, 1, GOAL_NET);
    }
    canvas.outline_rect(px + inset, py + inset, inner, inner, TEAM_OUTLINES[team]);
}

/// The loose ball.
fn ball_tile(canvas: &mut Canvas, px: i64, py: i64, tile: u32) {
    let (cx, cy, t) = (
        px as f32 + tile as f32 / 2.0,
        py as f32 + tile as f32 / 2.0,
        tile as f32,
    );
    canvas.fill_circle(cx, cy, t * 0.3, BALL_OUTLINE);
    canvas.fill_circle(cx, cy, t * 0.24, BALL_COLOUR);
}

/// A player: outlined triangle in its team colour pointing in its direction, the ball on
/// it when carried, pips in its corner.
fn player_tile(canvas: &mut Canvas, px: i64, py: i64, tile: u32, look: Look) {
    let Look {
        team,
        dir,
        carrying,
        pips,
    } = look;
    canvas.agent_triangle(px - 1, py - 1, tile + 2, dir, TEAM_OUTLINES[team]);
    canvas.agent_triangle(px + 1, py + 1, tile - 2, dir, TEAM_COLOURS[team]);
    if carrying {
        let (cx, cy, t) = (
            px as f32 + tile as f32 / 2.0,
            py as f32 + tile as f32 / 2.0,
            tile as f32,
        );
        canvas.fill_circle(cx, cy, t * 0.2, BALL_OUTLINE);
        canvas.fill_circle(cx, cy, t * 0.15, BALL_COLOUR);
    }
    let pip = (tile / 8).max(2);
    for k in 0..pips {
        canvas.fill_rect(
            px + 1 + k * i64::from(pip + 1),
            py + 1,
            pip,
            pip,
            FIELD_LINE,
        );
    }
}

/// The whole pitch (16×11 cells of [`PITCH_TILE`] pixels) under a score bar: one disc per
/// goal needed, filled when scored (green left, blue right; none for a team that does not
/// play), and a bar of elapsed steps.
/// The players in `marked` are drawn last, on top of any teammate on their cell, and
/// framed in [`mosaic_core::canvas::MARK`].
pub(crate) fn pitch(game: &Game, marked: &[usize]) -> Frame {
    let tile = PITCH_TILE;
    let t = i64::from(tile);
    let bar = t;
    let (w, h) = (WIDTH as u32 * tile, HEIGHT as u32 * tile + tile);
    let mut canvas = Canvas::new(w, h, GRASS_WALL);
    canvas.fill_rect(0, 0, w, tile, BAR);

    // Grass stripes and a faint cell grid inside the walls.
    for x in 1..WIDTH - 1 {
        canvas.fill_rect(
            i64::from(x) * t,
            bar + t,
            tile,
            (HEIGHT as u32 - 2) * tile,
            stripe(x),
        );
    }
    for x in 2..WIDTH - 1 {
        canvas.fill_rect(
            i64::from(x) * t,
            bar + t,
            1,
            (HEIGHT as u32 - 2) * tile,
            GRID_LINE,
        );
    }
    for y in 2..HEIGHT - 1 {
        canvas.fill_rect(
            t,
            bar + i64::from(y) * t,
            (WIDTH as u32 - 2) * tile,
            1,
            GRID_LINE,
        );
    }

    // Markings: touchlines, halfway line, centre spot, goal areas.
    let (field_w, field_h) = ((WIDTH as u32 - 2) * tile, (HEIGHT as u32 - 2) * tile);
    canvas.outline_rect(t, bar + t, field_w, field_h, FIELD_LINE);
    let centre_x = i64::from(WIDTH / 2) * t;
    canvas.fill_rect(centre_x - 1, bar + t, 2, field_h, FIELD_LINE);
    canvas.fill_circle(
        centre_x as f32,
        (bar + i64::from(HEIGHT) * t / 2) as f32,
        t as f32 / 5.0,
        FIELD_LINE,
    );
    let area_h = (GOAL_BOTTOM - GOAL_TOP + 3) as u32 * tile;
    let area_top = bar + i64::from(GOAL_TOP - 1) * t;
    canvas.outline_rect(t, area_top, 3 * tile, area_h, FIELD_LINE);
    canvas.outline_rect(
        i64::from(WIDTH - 4) * t,
        area_top,
        3 * tile,
        area_h,
        FIELD_LINE,
    );

    for (team, x) in GOAL_X.iter().enumerate() {
        for y in GOAL_TOP..=GOAL_BOTTOM {
            goal_tile(
                &mut canvas,
                i64::from(*x) * t,
                bar + i64::from(y) * t,
                tile,
                team,
            );
        }
    }
    if let Ball::Loose(pos) = game.ball {
        ball_tile(
            &mut canvas,
            i64::from(pos.x) * t,
            bar + i64::from(pos.y) * t,
            tile,
        );
    }
    let carrier = game.carrier();
    let agents = game.players.len();
    let unmarked = (0..agents).filter(|a| !marked.contains(a));
    let on_top = (0..agents).filter(|a| marked.contains(a));
    for agent in unmarked.chain(on_top) {
        let p = &game.players[agent];
        let at = (i64::from(p.pos.x) * t, bar + i64::from(p.pos.y) * t);
        let look = Look {
            team: game.team_of(agent),
            dir: p.dir,
            carrying: carrier == Some(agent),
            pips: pips(game, agent),
        };
        player_tile(&mut canvas, at.0, at.1, tile, look);
        if marked.contains(&agent) {
            canvas.mark_tile(at.0, at.1, tile);
        }
    }

    score_bar(&mut canvas, game, tile);
    canvas.into_frame()
}

fn score_bar(canvas: &mut Canvas, game: &Game, tile: u32) {
    let t = tile as f32;
    let needed = game.settings.goals_to_win.min(8) as i64;
    let radius = t * 0.3;
    let playing = game.lineup.team_sizes().map(|size| size > 0);
    for (team, stats) in game.teams.iter().enumerate().filter(|(t, _)| playing[*t]) {
        for k in 0..needed {
            let offset = (k as f32 + 0.5) * t;
            let cx = if team == 0 {
                offset
            } else {
                canvas.width() as f32 - offset
            };
            canvas.fill_circle(cx, t / 2.0, radius, TEAM_COLOURS[team]);
            if k >= i64::from(stats.goals) {
                canvas.fill_circle(cx, t / 2.0, radius * 0.6, BAR);
            }
        }
    }
    let track_x = (needed as u32 + 1) * tile;
    let track_w = canvas.width().saturating_sub(2 * track_x);
    let track_y = i64::from(tile / 2) - 2;
    canvas.fill_rect(i64::from(track_x), track_y, track_w, 4, BAR_TRACK);
    let elapsed = u64::from(track_w) * u64::from(game.steps.min(game.settings.max_steps))
        / u64::from(game.settings.max_steps);
    canvas.fill_rect(i64::from(track_x), track_y, elapsed as u32, 4, BAR_FILL);
}

/// What `agent` sees, drawn as it sees it: its view cells ([`VIEW_TILE`] pixels each) with
/// its facing direction up and itself at the bottom centre.
pub(crate) fn agent_view(game: &Game, agent: usize, size: usize) -> Frame {
    let view = encode::view(game, agent, size);
    let tile = VIEW_TILE;
    let t = i64::from(tile);
    let side = size as u32 * tile;
    let mut canvas = Canvas::new(side, side, GRASS_LIGHT);
    let viewer = &game.players[agent];
    for i in 0..size {
        for j in 0..size {
            let (px, py) = (i as i64 * t, j as i64 * t);
            let cell: Encoded = view.at(i, j);
            let background = match cell[0] {
                kind::UNSEEN => UNSEEN,
                kind::WALL => GRASS_WALL,
                _ => GRASS_LIGHT,
            };
            canvas.fill_rect(px, py, tile, tile, background);
            canvas.outline_rect(px, py, tile, tile, GRID_LINE);
            match cell[0] {
                kind::GOAL => goal_tile(&mut canvas, px, py, tile, usize::from(cell[1]) - 1),
                kind::BALL if (i, j) != (size / 2, size - 1) => {
                    ball_tile(&mut canvas, px, py, tile)
                }
                kind::AGENT => {
                    // Facing direction relative to the viewer, whose forward is drawn up.
                    let look = Look {
                        team: usize::from(cell[1]) - 1,
                        dir: (cell[2] % 100 + 7 - viewer.dir) % 4,
                        carrying: cell[2] >= 100,
                        pips: 0,
                    };
                    player_tile(&mut canvas, px, py, tile, look);
                }
                _ => {}
            }
        }
    }
    let me = (size as i64 / 2 * t, (size as i64 - 1) * t);
    let look = Look {
        team: game.team_of(agent),
        dir: 3,
        carrying: game.carrier() == Some(agent),
        pips: pips(game, agent),
    };
    player_tile(&mut canvas, me.0, me.1, tile, look);
    canvas.into_frame()
}
