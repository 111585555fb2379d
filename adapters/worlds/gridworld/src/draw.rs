//! Frames of the whole grid in MiniGrid's look: black floor, grey walls, green goal,
//! coloured doors and objects, the agent as a red triangle, its view highlighted.

use super::State;
use super::world::{DoorState, ItemKind, Pos, Tile, view_to_world};
use mosaic_core::Frame;
use mosaic_core::canvas::Canvas;

/// Pixels per grid cell (MiniGrid's `TILE_PIXELS`).
pub(super) const TILE: u32 = 32;

const FLOOR: [u8; 3] = [0, 0, 0];
/// Floor inside the agent's view: MiniGrid lightens it by 30 % towards white.
const FLOOR_SEEN: [u8; 3] = [76, 76, 76];
const GRID_LINE: [u8; 3] = [100, 100, 100];
const AGENT: [u8; 3] = [255, 0, 0];

/// A rectangle given in tile fractions `[u0, u1) x [v0, v1)`.
fn part(
    canvas: &mut Canvas,
    origin: (i64, i64),
    (u0, u1, v0, v1): (f32, f32, f32, f32),
    colour: [u8; 3],
) {
    let t = TILE as f32;
    let (x0, y0) = (origin.0 + (u0 * t) as i64, origin.1 + (v0 * t) as i64);
    let (w, h) = (
        ((u1 - u0) * t).round() as u32,
        ((v1 - v0) * t).round() as u32,
    );
    canvas.fill_rect(x0, y0, w, h, colour);
}

fn disc(canvas: &mut Canvas, origin: (i64, i64), (u, v, r): (f32, f32, f32), colour: [u8; 3]) {
    let t = TILE as f32;
    canvas.fill_circle(
        origin.0 as f32 + u * t,
        origin.1 as f32 + v * t,
        r * t,
        colour,
    );
}

fn scaled(colour: [u8; 3], factor: f32) -> [u8; 3] {
    colour.map(|c| (f32::from(c) * factor) as u8)
}

fn draw_tile(canvas: &mut Canvas, origin: (i64, i64), tile: Tile) {
    match tile {
        Tile::Empty => {}
        Tile::Wall => part(canvas, origin, (0.0, 1.0, 0.0, 1.0), GRID_LINE),
        Tile::Goal => part(canvas, origin, (0.0, 1.0, 0.0, 1.0), [0, 255, 0]),
        Tile::Door { colour, state } => {
            let c = colour.rgb();
            match state {
                DoorState::Open => {
                    part(canvas, origin, (0.88, 1.0, 0.0, 1.0), c);
                    part(canvas, origin, (0.92, 0.96, 0.04, 0.96), FLOOR);
                }
                DoorState::Locked => {
                    part(canvas, origin, (0.0, 1.0, 0.0, 1.0), c);
                    part(canvas, origin, (0.06, 0.94, 0.06, 0.94), scaled(c, 0.45));
                    part(canvas, origin, (0.52, 0.75, 0.50, 0.56), c);
                }
                DoorState::Closed => {
                    part(canvas, origin, (0.0, 1.0, 0.0, 1.0), c);
                    part(canvas, origin, (0.04, 0.96, 0.04, 0.96), FLOOR);
                    part(canvas, origin, (0.08, 0.92, 0.08, 0.92), c);
                    part(canvas, origin, (0.12, 0.88, 0.12, 0.88), FLOOR);
                    disc(canvas, origin, (0.75, 0.5, 0.08), c);
                }
            }
        }
        Tile::Item(item) => {
            let c = item.colour.rgb();
            match item.kind {
                ItemKind::Ball => disc(canvas, origin, (0.5, 0.5, 0.31), c),
                ItemKind::Key => {
                    part(canvas, origin, (0.50, 0.63, 0.31, 0.88), c);
                    part(canvas, origin, (0.38, 0.50, 0.59, 0.66), c);
                    part(canvas, origin, (0.38, 0.50, 0.81, 0.88), c);
                    disc(canvas, origin, (0.56, 0.28, 0.19), c);
                    disc(canvas, origin, (0.56, 0.28, 0.064), FLOOR);
                }
                ItemKind::Box => {
                    part(canvas, origin, (0.12, 0.88, 0.12, 0.88), c);
                    part(canvas, origin, (0.18, 0.82, 0.18, 0.82), FLOOR);
                    part(canvas, origin, (0.16, 0.84, 0.47, 0.53), c);
                }
            }
        }
    }
}

/// The whole grid as a frame; `marked`: the agent framed in
/// [`mosaic_core::canvas::MARK`] (a person plays it).
pub(super) fn frame(state: &State, see_through_walls: bool, marked: bool) -> Frame {
    let size = state.grid.size();
    let side = TILE * size as u32;
    let mut canvas = Canvas::new(side, side, FLOOR);
    let view = state.view(see_through_walls);
    for (vx, column) in view.cells.iter().enumerate() {
        for (vy, cell) in column.iter().enumerate() {
            let pos = view_to_world(state.agent, state.direction, vx, vy);
            if cell.is_some() && state.grid.contains(pos) {
                let origin = (
                    i64::from(TILE) * i64::from(pos.x),
                    i64::from(TILE) * i64::from(pos.y),
                );
                canvas.fill_rect(origin.0, origin.1, TILE, TILE, FLOOR_SEEN);
            }
        }
    }
    for y in 0..size {
        for x in 0..size {
            let origin = (
                i64::from(TILE) * i64::from(x),
                i64::from(TILE) * i64::from(y),
            );
            canvas.fill_rect(origin.0, origin.1, TILE, 1, GRID_LINE);
            canvas.fill_rect(origin.0, origin.1, 1, TILE, GRID_LINE);
            draw_tile(&mut canvas, origin, state.grid.get(Pos::new(x, y)));
        }
    }
    let agent = state.agent;
    let at = (
        i64::from(TILE) * i64::from(agent.x),
        i64::from(TILE) * i64::from(agent.y),
    );
    canvas.agent_triangle(at.0, at.1, TILE, state.direction, AGENT);
    if marked {
        canvas.mark_tile(at.0, at.1, TILE);
    }
    canvas.into_frame()
}
