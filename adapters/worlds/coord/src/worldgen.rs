//! Procedural generation: Craftax-Classic's noise terrain, construction sites, and the
//! coordination structure (ALEM §2.2).
//!
//! Three independent RNG streams are derived from the seed (terrain, coordination, mob
//! labels). Every draw is made whatever α is, and α only maps some draws to parameters
//! (how many agents a target needs, how long a handover window is), so for a given seed
//! α never changes the layout or the number of coordination sites.

use super::settings::{Config, opportunity};
use super::state::{
    AgentState, Census, CoordKind, Counters, MOB_LABELS, MobTag, Tag, World, light_level,
};
use super::types::{Block, MobKind};
use mosaic_core::rng::{Rng, derive_seed, seeded};
use rand::Rng as _;

/// Min-max normalised 2-D gradient (Perlin) noise with `cells_x` × `cells_y` lattice
/// cells over the map and a quintic fade.
fn perlin(rng: &mut Rng, width: usize, height: usize, cells_x: usize, cells_y: usize) -> Vec<f32> {
    let (cx, cy) = (cells_x.max(1), cells_y.max(1));
    // Uniform unit gradients by rejection from the disc: only +, ×, ÷ and √, which IEEE
    // 754 rounds identically everywhere, so a seed gives the same map on every platform.
    let angles: Vec<(f32, f32)> = (0..(cx + 1) * (cy + 1))
        .map(|_| {
            loop {
                let (x, y) = (
                    rng.random::<f32>() * 2.0 - 1.0,
                    rng.random::<f32>() * 2.0 - 1.0,
                );
                let r2 = x * x + y * y;
                if r2 > 1e-6 && r2 <= 1.0 {
                    let r = r2.sqrt();
                    break (x / r, y / r);
                }
            }
        })
        .collect();
    let fade = |t: f32| t * t * t * (t * (t * 6.0 - 15.0) + 10.0);
    // Column terms are the same on every row: lattice column, offset, faded offset.
    let columns: Vec<(usize, f32, f32)> = (0..width)
        .map(|x| {
            let u = x as f32 * cx as f32 / width as f32;
            (u as usize, u.fract(), fade(u.fract()))
        })
        .collect();
    let mut out = Vec::with_capacity(width * height);
    for y in 0..height {
        let v = y as f32 * cy as f32 / height as f32;
        let (j, fy) = (v as usize, v.fract());
        let ty = fade(fy);
        let lower = &angles[j * (cx + 1)..(j + 1) * (cx + 1)];
        let upper = &angles[(j + 1) * (cx + 1)..(j + 2) * (cx + 1)];
        for &(i, fx, tx) in &columns {
            let dot = |(gx, gy): (f32, f32), dx: f32, dy: f32| gx * dx + gy * dy;
            let n00 = dot(lower[i], fx, fy);
            let n10 = dot(lower[i + 1], fx - 1.0, fy);
            let n01 = dot(upper[i], fx, fy - 1.0);
            let n11 = dot(upper[i + 1], fx - 1.0, fy - 1.0);
            let n0 = n00 + tx * (n10 - n00);
            let n1 = n01 + tx * (n11 - n01);
            out.push(std::f32::consts::SQRT_2 * (n0 + ty * (n1 - n0)));
        }
    }
    let (lo, hi) = out
        .iter()
        .fold((f32::MAX, f32::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    let span = (hi - lo).max(f32::EPSILON);
    for v in &mut out {
        *v = (*v - lo) / span;
    }
    out
}

/// Where agent `i` starts, relative to the map centre.
const START_OFFSETS: [(i32, i32); 4] = [(0, 0), (1, 0), (-1, 0), (0, 1)];

/// Builds the world of `seed`.
pub(crate) fn generate(config: &Config, seed: u64) -> World {
    let (w, h) = (config.width, config.height);
    let mut blocks = terrain(config, seed);
    let (cx, cy) = ((w / 2) as i32, (h / 2) as i32);
    let agents: Vec<AgentState> = config
        .roles
        .iter()
        .zip(START_OFFSETS)
        .map(|(role, (dx, dy))| {
            let (x, y) = (cx + dx, cy + dy);
            blocks[y as usize * w + x as usize] = Block::Grass;
            AgentState::new(x, y, *role, config.starting_needs())
        })
        .collect();

    let mut rng = seeded(derive_seed(seed, "coord-world/coordination"));
    let mut tags = vec![Tag::NONE; w * h];
    let mut census = Census::default();
    for (tile, block) in blocks.iter().enumerate() {
        if block.resource().is_none() {
            continue;
        }
        let draw = draw_tag(&mut rng, config);
        if draw.selected && config.coordination_tasks {
            tags[tile] = draw.tag;
            match (draw.tag.kind, draw.tag.soft) {
                (CoordKind::Handover, _) => census.handover += 1,
                (_, true) => census.sync_soft += 1,
                (_, false) => census.sync_hard += 1,
            }
        }
    }
    let sites = if config.coordination_tasks {
        construction_sites(&mut rng, config, &blocks)
    } else {
        Vec::new()
    };
    for tile in sites {
        blocks[tile] = Block::Site;
        tags[tile] = draw_tag(&mut rng, config).tag;
        census.construction_sites += 1;
    }

    let mut label_rng = seeded(derive_seed(seed, "coord-world/mobs"));
    let mob_labels = MobKind::ALL.map(|kind| {
        (0..MOB_LABELS)
            .map(|_| mob_label(&mut label_rng, config, kind))
            .collect()
    });

    World {
        width: w as i32,
        height: h as i32,
        blocks,
        tags,
        mob_at: vec![0; w * h],
        agents,
        mobs: Vec::new(),
        arrows: Vec::new(),
        plants: Vec::new(),
        pending: Vec::new(),
        mob_labels,
        spawned: [0; 3],
        shelters: 0,
        step: 0,
        light: light_level(0, config.day_length),
        rng: seeded(derive_seed(seed, "coord-world/dynamics")),
        counters: Counters::default(),
        census,
    }
}

/// Craftax-Classic's terrain: water and sand from one noise, mountains (stone, tunnels,
/// caves, ores, lava) from another, trees from a third; the centre is kept clear.
fn terrain(config: &Config, seed: u64) -> Vec<Block> {
    let (w, h) = (config.width, config.height);
    let mut rng = seeded(derive_seed(seed, "coord-world/terrain"));
    let water = perlin(&mut rng, w, h, w / 16, h / 16);
    let mountain = perlin(&mut rng, w, h, w / 16, h / 16);
    let tunnels_x = perlin(&mut rng, w, h, w / 8, h / 2);
    let tunnels_y = perlin(&mut rng, w, h, w / 2, h / 8);
    let trees = perlin(&mut rng, w, h, w / 4, h / 4);
    let (cx, cy) = ((w / 2) as i32, (h / 2) as i32);
    let mut blocks = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            let centre = ((x as i32 - cx).abs() + (y as i32 - cy).abs()) as f32;
            let proximity = (centre / 5.0).min(1.0) - 1.0;
            let water = water[i] + proximity;
            let mountain = mountain[i] + 0.05 + proximity;
            // Every tile draws the same numbers so that the stream stays aligned.
            let (u_coal, u_iron, u_diamond, u_tree) = (
                rng.random::<f32>(),
                rng.random::<f32>(),
                rng.random::<f32>(),
                rng.random::<f32>(),
            );
            let mut block = if water > 0.7 {
                Block::Water
            } else if water > 0.6 && water < 0.75 {
                Block::Sand
            } else {
                Block::Grass
            };
            if mountain > 0.7 {
                block = if tunnels_x[i] > 0.8 || tunnels_y[i] > 0.8 {
                    Block::Path
                } else {
                    Block::Stone
                };
            }
            if mountain > 0.85 && water > 0.4 {
                block = Block::Path;
            }
            if block == Block::Stone {
                if u_coal < 0.04 {
                    block = Block::Coal;
                } else if u_iron < 0.03 {
                    block = Block::Iron;
                } else if mountain > 0.8 && u_diamond < 0.005 {
                    block = Block::Diamond;
                }
            }
            if block == Block::Grass && trees[i] > 0.5 && u_tree > 0.8 {
                block = Block::Tree;
            }
            if mountain > 0.85 && trees[i] > 0.7 {
                block = Block::Lava;
            }
            blocks.push(block);
        }
    }
    // Craftax-Classic's `always_diamond`: one stone block becomes a diamond.
    let stones: Vec<usize> = (0..blocks.len())
        .filter(|i| blocks[*i] == Block::Stone)
        .collect();
    if !stones.is_empty() {
        let pick = stones[rng.random_range(0..stones.len())];
        blocks[pick] = Block::Diamond;
    }
    blocks
}

struct TagDraw {
    selected: bool,
    tag: Tag,
}

/// One coordination tag; always consumes five numbers.
fn draw_tag(rng: &mut Rng, config: &Config) -> TagDraw {
    let (u_select, u_handover, u_soft, u_all, u_window) = (
        rng.random::<f64>(),
        rng.random::<f64>(),
        rng.random::<f64>(),
        rng.random::<f64>(),
        rng.random::<f64>(),
    );
    let d = &config.difficulty;
    let required = if u_all < d.p_all_agents {
        config.agents
    } else {
        2
    };
    let span = f64::from(d.handover_window_max - d.handover_window_min + 1);
    let window = d.handover_window_min + ((u_window * span) as u32).min(span as u32 - 1);
    let kind = if u_handover < opportunity::HANDOVER_RATIO {
        CoordKind::Handover
    } else {
        CoordKind::Sync
    };
    TagDraw {
        selected: u_select < config.coordination_probability,
        tag: Tag {
            kind,
            soft: kind == CoordKind::Sync && u_soft < opportunity::SOFT_RATIO,
            required: required as u8,
            window: window as u8,
        },
    }
}

/// Grass tiles at least 6 apart and 3 from the centre; a fixed number of tries each.
fn construction_sites(rng: &mut Rng, config: &Config, blocks: &[Block]) -> Vec<usize> {
    let (w, h) = (config.width as i32, config.height as i32);
    let mut sites: Vec<(i32, i32)> = Vec::new();
    for _ in 0..config.construction_sites {
        for _ in 0..200 {
            let (x, y) = (rng.random_range(1..w - 1), rng.random_range(1..h - 1));
            let far_from = |(sx, sy): (i32, i32), min: i32| (sx - x).abs() + (sy - y).abs() >= min;
            if blocks[(y * w + x) as usize] == Block::Grass
                && far_from((w / 2, h / 2), 3)
                && sites.iter().all(|s| far_from(*s, 6))
            {
                sites.push((x, y));
                break;
            }
        }
    }
    sites
        .into_iter()
        .map(|(x, y)| (y * w + x) as usize)
        .collect()
}

/// The label of one spawn slot; always consumes three numbers.
fn mob_label(rng: &mut Rng, config: &Config, kind: MobKind) -> MobTag {
    let (u_select, u_hard, u_all) = (
        rng.random::<f64>(),
        rng.random::<f64>(),
        rng.random::<f64>(),
    );
    let share = match kind {
        MobKind::Cow => opportunity::LARGE_PASSIVE_PROBABILITY,
        MobKind::Zombie | MobKind::Skeleton => opportunity::ELITE_MOB_PROBABILITY,
    };
    MobTag {
        coordinated: config.coordination_tasks && u_select < share,
        soft: u_hard >= opportunity::HARD_MOB_PROBABILITY,
        required: if u_all < config.difficulty.p_all_agents {
            config.agents as u8
        } else {
            2
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_core::Settings;

    fn config(alpha: f64, agents: usize) -> Config {
        let mut s = Settings::new();
        s.insert("alpha".into(), alpha.into());
        s.insert("agents".into(), agents.into());
        Config::from_settings(&s).unwrap()
    }

    #[test]
    fn noise_is_normalised() {
        let n = perlin(&mut seeded(3), 64, 48, 4, 3);
        assert_eq!(n.len(), 64 * 48);
        let (lo, hi) = n
            .iter()
            .fold((1.0f32, 0.0f32), |(l, h), v| (l.min(*v), h.max(*v)));
        assert!(lo.abs() < 1e-6 && (hi - 1.0).abs() < 1e-6);
    }

    #[test]
    fn terrain_has_every_classic_block_and_a_clear_start() {
        let world = generate(&config(0.6, 4), 11);
        let count = |b: Block| world.blocks.iter().filter(|x| **x == b).count();
        for block in [
            Block::Grass,
            Block::Water,
            Block::Tree,
            Block::Stone,
            Block::Coal,
            Block::Iron,
            Block::Diamond,
            Block::Site,
        ] {
            assert!(count(block) > 0, "{block:?} missing");
        }
        assert_eq!(count(Block::Site), 8);
        for a in &world.agents {
            assert_eq!(world.block(a.x, a.y), Block::Grass);
        }
        assert!(world.census.total() > 8);
    }

    #[test]
    fn alpha_changes_parameters_not_layout() {
        for seed in [1, 2, 3] {
            let easy = generate(&config(0.3, 3), seed);
            let hard = generate(&config(0.9, 3), seed);
            assert_eq!(easy.blocks, hard.blocks, "seed {seed}");
            assert_eq!(easy.census, hard.census, "seed {seed}");
            let kinds = |w: &World| w.tags.iter().map(|t| (t.kind, t.soft)).collect::<Vec<_>>();
            assert_eq!(kinds(&easy), kinds(&hard));
            let coordinated = |w: &World| {
                w.mob_labels
                    .iter()
                    .map(|l| {
                        l.iter()
                            .map(|t| (t.coordinated, t.soft))
                            .collect::<Vec<_>>()
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(coordinated(&easy), coordinated(&hard));
            // Harder worlds need the whole team more often and give less time.
            let all = |w: &World| w.tags.iter().filter(|t| t.required == 3).count();
            assert!(all(&hard) > all(&easy));
            let window = |w: &World| {
                w.tags
                    .iter()
                    .filter(|t| t.kind == CoordKind::Handover)
                    .map(|t| u32::from(t.window))
                    .max()
            };
            assert!(window(&hard) <= Some(6) && window(&easy) >= Some(9));
        }
    }

    #[test]
    fn without_coordination_tasks_the_terrain_stays_and_no_task_is_placed() {
        let mut s = Settings::new();
        s.insert("coordination_tasks".into(), false.into());
        let plain = Config::from_settings(&s).unwrap();
        s.insert("agents".into(), 1.into());
        let solo = Config::from_settings(&s).unwrap();
        for seed in [1, 2] {
            let full = generate(&config(0.6, 3), seed);
            for world in [generate(&plain, seed), generate(&solo, seed)] {
                assert_eq!(world.census.total(), 0);
                assert!(world.tags.iter().all(|t| *t == Tag::NONE));
                assert!(world.mob_labels.iter().flatten().all(|l| !l.coordinated));
                // The same map, less the construction sites (grass instead) and the
                // start tiles of absent agents (cleared for present ones only).
                let (w, cx, cy) = (
                    plain.width as i32,
                    (plain.width / 2) as i32,
                    (plain.height / 2) as i32,
                );
                let starts: Vec<usize> = START_OFFSETS
                    .iter()
                    .map(|(dx, dy)| ((cy + dy) * w + cx + dx) as usize)
                    .collect();
                for (tile, (a, b)) in full.blocks.iter().zip(&world.blocks).enumerate() {
                    let expected = if *a == Block::Site { Block::Grass } else { *a };
                    assert!(*b == expected || starts.contains(&tile), "tile {tile}");
                }
            }
        }
    }

    #[test]
    fn seeds_differ() {
        let a = generate(&config(0.6, 3), 1);
        let b = generate(&config(0.6, 3), 2);
        assert_ne!(a.blocks, b.blocks);
    }
}
