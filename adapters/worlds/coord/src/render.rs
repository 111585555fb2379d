//! RGB frames: the whole world for people (with a team status bar), and each agent's
//! local view with a teammate status bar on top and its inventory below (ALEM Fig. 7).
//! Night darkens the map.

use super::observation::{VIEW_H, VIEW_W};
use super::state::{CoordKind, Life, World};
use super::types::{Block, Item, MobKind, Role};
use mosaic_core::Frame;
use mosaic_core::canvas::Canvas;

/// Pixels per tile in an agent's frame.
const AGENT_TILE: u32 = 16;
/// Height of the status bar and of the inventory strip.
const BAR: u32 = 16;

fn block_colour(block: Block) -> [u8; 3] {
    match block {
        Block::Grass => [86, 160, 64],
        Block::Sand => [222, 204, 140],
        Block::Water => [52, 104, 196],
        Block::Tree => [32, 96, 40],
        Block::Stone | Block::Coal | Block::Iron | Block::Diamond => [122, 122, 122],
        Block::Lava => [230, 96, 24],
        Block::Path => [170, 150, 120],
        Block::Table => [140, 94, 50],
        Block::Furnace => [70, 70, 76],
        Block::Plant | Block::RipePlant => [86, 160, 64],
        Block::Site => [200, 180, 90],
        Block::Shelter => [120, 80, 50],
        Block::Forge => [110, 60, 150],
        Block::OutOfBounds => [20, 20, 20],
    }
}

/// The colour of an agent of `role`.
pub(crate) fn role_colour(role: Role) -> [u8; 3] {
    match role {
        Role::Forager => [60, 200, 120],
        Role::Miner => [240, 170, 40],
        Role::Warrior => [220, 60, 60],
    }
}

fn shade(c: [u8; 3], factor: f32) -> [u8; 3] {
    c.map(|v| (f32::from(v) * factor).round().clamp(0.0, 255.0) as u8)
}

/// Tile size and night dimming of one frame.
#[derive(Clone, Copy)]
struct Style {
    tile: u32,
    dim: f32,
}

/// Draws the tile at map (x, y) into the canvas at pixel (px, py).
fn draw_tile(
    canvas: &mut Canvas,
    world: &World,
    (x, y): (i32, i32),
    (px, py): (i64, i64),
    style: Style,
) {
    let (t, dim) = (style.tile, style.dim);
    let block = world.block(x, y);
    let tf = t as f32;
    let (cx, cy) = (px as f32 + tf / 2.0, py as f32 + tf / 2.0);
    canvas.fill_rect(px, py, t, t, shade(block_colour(block), dim));
    let dot = |canvas: &mut Canvas, colour: [u8; 3], r: f32| {
        canvas.fill_circle(cx, cy, tf * r, shade(colour, dim));
    };
    match block {
        Block::Tree => dot(canvas, [20, 70, 26], 0.42),
        Block::Coal => dot(canvas, [30, 30, 30], 0.25),
        Block::Iron => dot(canvas, [210, 160, 120], 0.25),
        Block::Diamond => dot(canvas, [140, 240, 250], 0.28),
        Block::Plant => dot(canvas, [40, 110, 40], 0.2),
        Block::RipePlant => dot(canvas, [200, 40, 60], 0.25),
        Block::Table => canvas.outline_rect(px + 1, py + 1, t - 2, t - 2, shade([90, 60, 30], dim)),
        Block::Furnace => dot(canvas, [240, 120, 40], 0.18),
        Block::Site => canvas.outline_rect(px, py, t, t, shade([120, 100, 30], dim)),
        Block::Shelter => canvas.fill_triangle(
            [(px as f32, cy), (cx, py as f32), (px as f32 + tf, cy)],
            shade([170, 60, 40], dim),
        ),
        Block::Forge => dot(canvas, [250, 200, 250], 0.2),
        _ => {}
    }
    let Some(tile) = world.tile(x, y) else { return };
    // Coordination markers (ALEM Fig. 3): disc for 2-agent sync, square for whole-team
    // sync, diamond for handover; yellow for soft, red for hard, blue for handover.
    let tag = world.tags[tile];
    let m = (t / 4).max(2);
    let (mx, my) = (px + i64::from(t - m), py);
    match tag.kind {
        CoordKind::Sync => {
            let colour = if tag.soft {
                [250, 220, 40]
            } else {
                [230, 40, 40]
            };
            if usize::from(tag.required) >= world.agents.len() && world.agents.len() > 2 {
                canvas.fill_rect(mx, my, m, m, colour);
            } else {
                let r = m as f32 / 2.0;
                canvas.fill_circle(mx as f32 + r, my as f32 + r, r, colour);
            }
        }
        CoordKind::Handover => {
            let (fx, fy, fm) = (mx as f32, my as f32, m as f32);
            let colour = if world.pending_at(tile).is_some() {
                [250, 250, 250]
            } else {
                [60, 120, 250]
            };
            canvas.fill_triangle(
                [
                    (fx, fy + fm / 2.0),
                    (fx + fm / 2.0, fy),
                    (fx + fm, fy + fm / 2.0),
                ],
                colour,
            );
            canvas.fill_triangle(
                [
                    (fx, fy + fm / 2.0),
                    (fx + fm / 2.0, fy + fm),
                    (fx + fm, fy + fm / 2.0),
                ],
                colour,
            );
        }
        CoordKind::None => {}
    }
    if let Some(i) = world.mob_at(x, y) {
        let mob = world.mobs[i];
        let colour = match mob.kind {
            MobKind::Zombie => [40, 120, 60],
            MobKind::Cow => [150, 100, 70],
            MobKind::Skeleton => [225, 225, 215],
        };
        let r = if mob.tag.coordinated { 0.45 } else { 0.35 };
        if mob.tag.coordinated {
            canvas.fill_circle(cx, cy, tf * (r + 0.05), [250, 220, 40]);
        }
        canvas.fill_circle(cx, cy, tf * r, shade(colour, dim.max(0.6)));
    }
}

/// Where to draw agents: the map window shown and its tile size, below a bar of `top`
/// pixels.
#[derive(Clone, Copy)]
struct Window {
    origin: (i32, i32),
    span: (i32, i32),
    tile: u32,
    top: i64,
}

/// The agents inside `window`, those in `marked` last (above any other on their tile) and
/// framed in [`mosaic_core::canvas::MARK`]; then the arrows in flight.
fn draw_agents(canvas: &mut Canvas, world: &World, window: Window, marked: &[usize]) {
    let Window {
        origin,
        span,
        tile: t,
        top,
    } = window;
    let present = |i: &usize| world.agents[*i].is_present();
    let unmarked = (0..world.agents.len()).filter(|i| !marked.contains(i));
    let on_top = (0..world.agents.len()).filter(|i| marked.contains(i));
    for i in unmarked.chain(on_top).filter(present) {
        let a = &world.agents[i];
        let (vx, vy) = (a.x - origin.0, a.y - origin.1);
        if !(0..span.0).contains(&vx) || !(0..span.1).contains(&vy) {
            continue;
        }
        let (px, py) = (
            i64::from(vx) * i64::from(t),
            top + i64::from(vy) * i64::from(t),
        );
        let colour = match a.life {
            Life::Downed { .. } => [90, 90, 90],
            _ if a.sleeping => shade(role_colour(a.role), 0.5),
            _ => role_colour(a.role),
        };
        canvas.agent_triangle(px, py, t, facing_index(a.facing), colour);
        if marked.contains(&i) {
            canvas.mark_tile(px, py, t);
        }
    }
    for arrow in &world.arrows {
        let (vx, vy) = (arrow.x - origin.0, arrow.y - origin.1);
        if (0..span.0).contains(&vx) && (0..span.1).contains(&vy) {
            let c = (t / 2) as i64;
            let (px, py) = (
                i64::from(vx) * i64::from(t) + c,
                top + i64::from(vy) * i64::from(t) + c,
            );
            canvas.fill_rect(px - 1, py - 1, 3, 3, [250, 250, 250]);
        }
    }
}

/// `Canvas::agent_triangle` counts 0 = east, 1 = south, 2 = west, 3 = north.
fn facing_index(d: super::types::Dir) -> u8 {
    match d {
        super::types::Dir::East => 0,
        super::types::Dir::South => 1,
        super::types::Dir::West => 2,
        super::types::Dir::North => 3,
    }
}

/// One status cell per agent: role colour, health bar, a cross when down or dead.
fn status_bar(canvas: &mut Canvas, world: &World, highlight: Option<usize>) {
    let n = world.agents.len() as u32;
    let cell = canvas.width() / n;
    for (i, a) in world.agents.iter().enumerate() {
        let x = i64::from(i as u32 * cell);
        let background = if highlight == Some(i) {
            [70, 70, 70]
        } else {
            [35, 35, 35]
        };
        canvas.fill_rect(x, 0, cell, BAR, background);
        canvas.fill_rect(x + 2, 2, BAR - 4, BAR - 4, role_colour(a.role));
        let bar_w = cell.saturating_sub(BAR + 4);
        let filled = bar_w * a.health.clamp(0, 9) as u32 / 9;
        canvas.fill_rect(x + i64::from(BAR), 5, bar_w, BAR - 10, [80, 20, 20]);
        canvas.fill_rect(x + i64::from(BAR), 5, filled, BAR - 10, [230, 50, 50]);
        if !a.is_alive() {
            let side = i64::from(BAR - 4);
            for k in 0..side {
                canvas.put(x + 2 + k, 2 + k, [0, 0, 0]);
                canvas.put(x + 2 + k, 2 + side - 1 - k, [0, 0, 0]);
            }
        }
    }
}

fn brightness(world: &World) -> f32 {
    0.3 + 0.7 * world.light
}

/// The whole map with a team status bar on top; the agents in `marked` framed (see
/// [`draw_agents`]).
pub(crate) fn world_frame(world: &World, marked: &[usize]) -> Frame {
    let t = (512 / world.width.max(world.height)).max(2) as u32;
    let (w, h) = (world.width as u32 * t, world.height as u32 * t);
    let mut canvas = Canvas::new(w, h + BAR, [0, 0, 0]);
    status_bar(&mut canvas, world, None);
    let style = Style {
        tile: t,
        dim: brightness(world),
    };
    for y in 0..world.height {
        for x in 0..world.width {
            let (px, py) = (
                i64::from(x) * i64::from(t),
                i64::from(BAR) + i64::from(y) * i64::from(t),
            );
            draw_tile(&mut canvas, world, (x, y), (px, py), style);
        }
    }
    let window = Window {
        origin: (0, 0),
        span: (world.width, world.height),
        tile: t,
        top: i64::from(BAR),
    };
    draw_agents(&mut canvas, world, window, marked);
    canvas.into_frame()
}

/// What `agent` sees: teammate status bar, the 9 × 7 local view, its inventory.
pub(crate) fn agent_frame(world: &World, agent: usize) -> Frame {
    let t = AGENT_TILE;
    let (w, h) = (VIEW_W as u32 * t, VIEW_H as u32 * t);
    let mut canvas = Canvas::new(w, h + 2 * BAR, [0, 0, 0]);
    status_bar(&mut canvas, world, Some(agent));
    let a = &world.agents[agent];
    let origin = (a.x - VIEW_W / 2, a.y - VIEW_H / 2);
    let style = Style {
        tile: t,
        dim: brightness(world),
    };
    for vy in 0..VIEW_H {
        for vx in 0..VIEW_W {
            let (px, py) = (
                i64::from(vx) * i64::from(t),
                i64::from(BAR) + i64::from(vy) * i64::from(t),
            );
            draw_tile(
                &mut canvas,
                world,
                (origin.0 + vx, origin.1 + vy),
                (px, py),
                style,
            );
        }
    }
    let window = Window {
        origin,
        span: (VIEW_W, VIEW_H),
        tile: t,
        top: i64::from(BAR),
    };
    draw_agents(&mut canvas, world, window, &[]);
    // Inventory: one slot per held item, its colour and a count bar.
    let strip = i64::from(BAR + h);
    let slot = BAR;
    let held = Item::ALL.iter().filter(|i| a.count(**i) > 0);
    for (k, item) in held.enumerate() {
        let x = k as i64 * i64::from(slot);
        canvas.fill_rect(x + 1, strip + 1, slot - 2, slot - 6, item_colour(*item));
        let count = u32::from(a.count(*item));
        canvas.fill_rect(
            x + 1,
            strip + i64::from(slot) - 4,
            (slot - 2) * count / 9,
            3,
            [250, 250, 250],
        );
    }
    canvas.into_frame()
}

fn item_colour(item: Item) -> [u8; 3] {
    match item {
        Item::Wood => [140, 94, 50],
        Item::Stone => [122, 122, 122],
        Item::Coal => [30, 30, 30],
        Item::Iron => [210, 160, 120],
        Item::Diamond => [140, 240, 250],
        Item::Sapling => [40, 140, 40],
        Item::WoodPickaxe | Item::WoodSword => [180, 130, 80],
        Item::StonePickaxe | Item::StoneSword => [170, 170, 170],
        Item::IronPickaxe | Item::IronSword => [230, 200, 170],
        Item::DiamondPickaxe | Item::DiamondSword => [180, 250, 255],
    }
}
