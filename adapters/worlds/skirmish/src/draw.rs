//! Pictures: the whole battlefield (for people and replays) and one agent's view of it
//! (for VLM agents): its sight lit, the rest in fog, units it cannot see left out and
//! units its team's memory places drawn as rings where they were last seen.

use crate::battle::{Battle, Order, TICK};
use crate::units::UnitType;
use mosaic_core::Frame;
use mosaic_core::canvas::{Canvas, MARK};

/// Pixels per map unit.
pub const PIXELS_PER_UNIT: u32 = 12;

const GROUND: [u8; 3] = [74, 82, 64];
const GRID: [u8; 3] = [86, 95, 75];
const TEAM_COLOURS: [[u8; 3]; 2] = [[60, 110, 230], [220, 60, 50]];
const HEALTH: [u8; 3] = [70, 220, 90];
const SHIELD: [u8; 3] = [90, 220, 240];
const BAR_BACK: [u8; 3] = [30, 30, 30];
const ATTACK: [u8; 3] = [255, 220, 80];
const HEAL: [u8; 3] = [150, 255, 150];
const VIEWER: [u8; 3] = [255, 255, 255];
/// How far a marked unit's ring reaches beyond its body, in pixels.
const MARK_RING: f32 = 4.5;
/// Brightness kept outside the viewer's sight.
const FOG: f32 = 0.4;

/// The colour of a unit's core, telling its type.
fn type_colour(kind: UnitType) -> [u8; 3] {
    match kind {
        UnitType::Stalker => [250, 200, 60],
        UnitType::Zealot => [250, 140, 30],
        UnitType::Colossus => [200, 120, 250],
        UnitType::Marine => [240, 240, 240],
        UnitType::Marauder => [150, 150, 160],
        UnitType::Medivac => [120, 250, 200],
        UnitType::Zergling => [190, 90, 60],
        UnitType::Hydralisk => [120, 200, 60],
        UnitType::Baneling => [170, 250, 40],
    }
}

fn dim(colour: [u8; 3], factor: f32) -> [u8; 3] {
    colour.map(|c| (f32::from(c) * factor) as u8)
}

/// Map coordinates to pixels (y up on the map, down in the picture).
struct Projection {
    scale: f32,
    side: f32,
}

impl Projection {
    fn point(&self, pos: [f32; 2]) -> (f32, f32) {
        (pos[0] * self.scale, (self.side - pos[1]) * self.scale)
    }
}

/// A one-pixel line from `a` to `b` (pixel coordinates).
fn line(canvas: &mut Canvas, a: (f32, f32), b: (f32, f32), colour: [u8; 3]) {
    let steps = (b.0 - a.0).abs().max((b.1 - a.1).abs()).ceil().max(1.0) as i64;
    for k in 0..=steps {
        let t = k as f32 / steps as f32;
        let (x, y) = (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
        canvas.put(x as i64, y as i64, colour);
    }
}

/// The battlefield, seen by everyone (`viewer` `None`) or by one unit. The units in
/// `marked` are drawn last, above any unit they overlap, in a ring of
/// [`mosaic_core::canvas::MARK`].
pub(crate) fn battlefield(battle: &Battle, viewer: Option<usize>, marked: &[usize]) -> Frame {
    let size = battle.config.map_size;
    let side = (size * PIXELS_PER_UNIT as f32).round() as u32;
    let proj = Projection {
        scale: PIXELS_PER_UNIT as f32,
        side: size,
    };
    let mut canvas = Canvas::new(side, side, GROUND);
    let sight = viewer.map(|v| {
        let u = &battle.units[v];
        (proj.point(u.pos), u.kind.stats().sight_range * proj.scale)
    });
    let grid_every = 4 * PIXELS_PER_UNIT;
    for y in 0..side {
        for x in 0..side {
            let on_grid = x % grid_every == 0 || y % grid_every == 0;
            let base = if on_grid { GRID } else { GROUND };
            let lit = sight.is_none_or(|((cx, cy), r)| {
                let (dx, dy) = (x as f32 + 0.5 - cx, y as f32 + 0.5 - cy);
                dx * dx + dy * dy <= r * r
            });
            if on_grid || !lit {
                canvas.put(
                    i64::from(x),
                    i64::from(y),
                    if lit { base } else { dim(base, FOG) },
                );
            }
        }
    }

    let shown = |j: usize| viewer.is_none_or(|v| v == j || battle.visible(v) & (1 << j) != 0);
    for (i, unit) in battle.units.iter().enumerate() {
        let Order::Target(slot) = unit.order else {
            continue;
        };
        let Some(target) = battle.target_of(i, slot) else {
            continue;
        };
        let t = &battle.units[target];
        let reach = unit.kind.stats().attack_range + unit.kind.stats().speed * TICK;
        if unit.alive()
            && t.alive()
            && shown(i)
            && shown(target)
            && crate::battle::in_range(unit.pos, t.pos, reach)
        {
            let colour = if unit.kind.heals() { HEAL } else { ATTACK };
            line(&mut canvas, proj.point(unit.pos), proj.point(t.pos), colour);
        }
    }

    if let Some(v) = viewer {
        let team = battle.units[v].team;
        let local = v - battle.offset(team);
        for r in battle.memory[team].recollections(local) {
            if shown(r.entity) {
                continue;
            }
            let u = &battle.units[r.entity];
            let (cx, cy) = proj.point(r.payload.pos);
            let radius = u.kind.stats().radius * proj.scale;
            canvas.fill_circle(cx, cy, radius + 1.5, TEAM_COLOURS[u.team]);
            canvas.fill_circle(cx, cy, radius - 0.5, dim(GROUND, FOG));
        }
    }

    let unmarked = (0..battle.units.len()).filter(|j| !marked.contains(j));
    let on_top = (0..battle.units.len()).filter(|j| marked.contains(j));
    for j in unmarked.chain(on_top) {
        let unit = &battle.units[j];
        if !unit.alive() || !shown(j) {
            continue;
        }
        let stats = unit.kind.stats();
        let (cx, cy) = proj.point(unit.pos);
        let radius = stats.radius * proj.scale;
        if marked.contains(&j) {
            canvas.fill_circle(cx, cy, radius + MARK_RING, MARK);
        }
        if viewer == Some(j) {
            canvas.fill_circle(cx, cy, radius + 3.0, VIEWER);
        }
        canvas.fill_circle(cx, cy, radius + 1.5, TEAM_COLOURS[unit.team]);
        canvas.fill_circle(cx, cy, radius * 0.55, type_colour(unit.kind));
        let width = (2.0 * radius + 4.0).round() as u32;
        let left = (cx - width as f32 / 2.0) as i64;
        let mut top = (cy - radius - 6.0) as i64;
        let mut bar = |fraction: f32, colour: [u8; 3], top: i64| {
            canvas.fill_rect(left, top, width, 2, BAR_BACK);
            let filled = (width as f32 * fraction.clamp(0.0, 1.0)).round() as u32;
            canvas.fill_rect(left, top, filled, 2, colour);
        };
        bar(unit.health / stats.health, HEALTH, top);
        if stats.shield > 0.0 {
            top -= 3;
            bar(unit.shield / stats.shield, SHIELD, top);
        }
    }
    canvas.into_frame()
}
