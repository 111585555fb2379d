//! Snapshots: the whole state of an episode (map, agents, mobs, handovers, counters and
//! the dynamics RNG's position) as JSON, so that a restored world continues exactly as
//! the original would have.
//!
//! The bulky parts travel as base64 of a few bytes per entry: the map (one byte per
//! tile), the coordination requirements (six bytes per tile that has one) and the mob
//! labels (three bytes per spawn slot). Everything else is plain JSON. Restoring checks every value the
//! rules rely on, so a damaged or foreign snapshot is refused with a message naming the
//! problem and never leaves a world that could fail later.

use super::NAME;
use super::actions::REQUEST_STEPS;
use super::mobs::spawn_health;
use super::settings::Config;
use super::state::{
    AgentState, Arrow, Census, CoordKind, Counters, Life, MOB_LABELS, Mob, MobTag, Pending, Plant,
    Tag, VITAL_MAX, World, light_level,
};
use super::types::{Block, Item, MobKind};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use mosaic_core::rng::Rng;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Version of the snapshot layout; bumped whenever it changes.
const FORMAT: u32 = 2;

/// More than any counter can grow in one step (every agent's action counts at most once
/// per counter, and a team has at most four agents).
const COUNT_PER_STEP: u64 = 8;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Saved<'a> {
    env: Cow<'a, str>,
    format: u32,
    config: Cow<'a, Config>,
    step: u32,
    /// One byte per tile: the index in [`Block::ALL`].
    #[serde(borrow)]
    blocks: Cow<'a, str>,
    /// Six bytes per tile with a coordination requirement, in tile order: the tile index
    /// (u16, little-endian), kind, soft, agents required, handover window.
    #[serde(borrow)]
    tags: Cow<'a, str>,
    agents: Cow<'a, [AgentState]>,
    mobs: Cow<'a, [Mob]>,
    arrows: Cow<'a, [Arrow]>,
    plants: Cow<'a, [Plant]>,
    pending: Cow<'a, [Pending]>,
    /// Three bytes per spawn slot (coordinated, soft, agents required), kinds in
    /// [`MobKind::ALL`] order.
    #[serde(borrow)]
    mob_labels: Cow<'a, str>,
    spawned: [u32; 3],
    shelters: u32,
    rng: Cow<'a, Rng>,
    counters: Counters,
    census: Census,
}

/// What every snapshot of this world starts with.
#[derive(Deserialize)]
struct Header {
    env: String,
    #[serde(default)]
    format: Option<u32>,
}

impl Header {
    /// Why a snapshot with this header is not one this build can read.
    fn mismatch(&self) -> Option<String> {
        if self.env != NAME {
            return Some(format!("snapshot of `{}` given to {NAME}", self.env));
        }
        (self.format != Some(FORMAT)).then(|| {
            format!(
                "{NAME} snapshot has format {}, this build reads format {FORMAT}",
                self.format.map_or("none".to_owned(), |f| f.to_string())
            )
        })
    }
}

/// The snapshot bytes of `world`.
pub(crate) fn save(world: &World, config: &Config) -> Result<Vec<u8>, serde_json::Error> {
    let labels: Vec<MobTag> = world.mob_labels.iter().flatten().copied().collect();
    let saved = Saved {
        env: Cow::Borrowed(NAME),
        format: FORMAT,
        config: Cow::Borrowed(config),
        step: world.step,
        blocks: Cow::Owned(pack(&world.blocks, |b| [*b as u8])),
        tags: Cow::Owned(pack(&tagged(&world.tags), |(tile, t)| {
            let [low, high] = tile.to_le_bytes();
            [
                low,
                high,
                t.kind as u8,
                u8::from(t.soft),
                t.required,
                t.window,
            ]
        })),
        agents: Cow::Borrowed(&world.agents),
        mobs: Cow::Borrowed(&world.mobs),
        arrows: Cow::Borrowed(&world.arrows),
        plants: Cow::Borrowed(&world.plants),
        pending: Cow::Borrowed(&world.pending),
        mob_labels: Cow::Owned(pack(&labels, |l| {
            [u8::from(l.coordinated), u8::from(l.soft), l.required]
        })),
        spawned: world.spawned,
        shelters: world.shelters,
        rng: Cow::Borrowed(&world.rng),
        counters: world.counters,
        census: world.census,
    };
    serde_json::to_vec(&saved)
}

/// The world in `bytes`, checked against `config` (the restoring environment's).
pub(crate) fn load(bytes: &[u8], config: &Config) -> Result<World, String> {
    let saved: Saved<'_> = serde_json::from_slice(bytes).map_err(|e| {
        // Another environment's or another version's snapshot deserves a plainer word.
        serde_json::from_slice::<Header>(bytes)
            .ok()
            .and_then(|h| h.mismatch())
            .unwrap_or_else(|| format!("{NAME} snapshot is malformed: {e}"))
    })?;
    let header = Header {
        env: saved.env.to_string(),
        format: Some(saved.format),
    };
    if let Some(mismatch) = header.mismatch() {
        return Err(mismatch);
    }
    if *saved.config != *config {
        return Err(format!(
            "{NAME} snapshot was taken with other settings ({}) than this environment's",
            settings_difference(&saved.config, config)
        ));
    }
    let tiles = config.width * config.height;
    let blocks = unpack(&saved.blocks, "blocks", |[b]| {
        // Outside the map is never a tile of it.
        Block::ALL[..Block::ALL.len() - 1]
            .get(usize::from(b))
            .copied()
    })?;
    if blocks.len() != tiles {
        return Err(format!(
            "{NAME} snapshot: {} blocks for a map of {tiles} tiles",
            blocks.len()
        ));
    }
    let tagged = unpack(
        &saved.tags,
        "tags",
        |[low, high, kind, soft, required, window]| {
            let kind = [CoordKind::Sync, CoordKind::Handover]
                .get(usize::from(kind).checked_sub(1)?)
                .copied()?;
            let tag = Tag {
                kind,
                soft: flag(soft)?,
                required,
                window,
            };
            Some((u16::from_le_bytes([low, high]), tag))
        },
    )?;
    let mut tags = vec![Tag::NONE; tiles];
    let mut last = None;
    for (tile, tag) in tagged {
        if usize::from(tile) >= tiles || last.is_some_and(|l| l >= tile) {
            return Err(format!(
                "{NAME} snapshot: `tags` lists tile {tile} out of order or off the map"
            ));
        }
        tags[usize::from(tile)] = tag;
        last = Some(tile);
    }
    let labels = unpack(
        &saved.mob_labels,
        "mob_labels",
        |[coordinated, soft, required]| {
            Some(MobTag {
                coordinated: flag(coordinated)?,
                soft: flag(soft)?,
                required,
            })
        },
    )?;
    if labels.len() != MOB_LABELS * MobKind::ALL.len() {
        return Err(format!(
            "{NAME} snapshot: {} mob labels, {MOB_LABELS} per kind expected",
            labels.len()
        ));
    }
    let mut labels = labels.chunks(MOB_LABELS).map(<[MobTag]>::to_vec);
    let mob_labels = MobKind::ALL.map(|_| labels.next().unwrap_or_default());
    let mut world = World {
        width: config.width as i32,
        height: config.height as i32,
        blocks,
        tags,
        mob_at: vec![0; tiles],
        agents: saved.agents.into_owned(),
        mobs: saved.mobs.into_owned(),
        arrows: saved.arrows.into_owned(),
        plants: saved.plants.into_owned(),
        pending: saved.pending.into_owned(),
        mob_labels,
        spawned: saved.spawned,
        shelters: saved.shelters,
        step: saved.step,
        light: light_level(saved.step, config.day_length),
        rng: saved.rng.into_owned(),
        counters: saved.counters,
        census: saved.census,
    };
    check(&mut world, config).map_err(|e| format!("{NAME} snapshot: {e}"))?;
    Ok(world)
}

/// The settings that differ, e.g. `agents: 2 in the snapshot, 3 here`.
fn settings_difference(saved: &Config, here: &Config) -> String {
    let fields = |c: &Config| match serde_json::to_value(c) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (saved, here) = (fields(saved), fields(here));
    let differing: Vec<String> = here
        .iter()
        .filter(|(key, value)| saved.get(*key) != Some(value))
        .map(|(key, value)| {
            let old = saved
                .get(key)
                .map_or("nothing".to_owned(), |v| v.to_string());
            format!("{key}: {old} in the snapshot, {value} here")
        })
        .collect();
    differing.join("; ")
}

/// The tiles with a coordination requirement and their tags. Maps have at most 256 × 256
/// tiles, so a tile index fits 16 bits.
fn tagged(tags: &[Tag]) -> Vec<(u16, Tag)> {
    tags.iter()
        .enumerate()
        .filter(|(_, t)| t.kind != CoordKind::None)
        .map(|(tile, t)| (tile as u16, *t))
        .collect()
}

fn flag(byte: u8) -> Option<bool> {
    match byte {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
}

/// `items` as base64 of `N` bytes each.
fn pack<T, const N: usize>(items: &[T], bytes_of: impl Fn(&T) -> [u8; N]) -> String {
    let mut bytes = Vec::with_capacity(items.len() * N);
    for item in items {
        bytes.extend_from_slice(&bytes_of(item));
    }
    BASE64.encode(bytes)
}

/// Items of `N` bytes each from base64 `text`; errors name `what`.
fn unpack<T, const N: usize>(
    text: &str,
    what: &str,
    item_of: impl Fn([u8; N]) -> Option<T>,
) -> Result<Vec<T>, String> {
    let bytes = BASE64
        .decode(text)
        .map_err(|e| format!("{NAME} snapshot: `{what}` is not base64: {e}"))?;
    if bytes.len() % N != 0 {
        return Err(format!(
            "{NAME} snapshot: `{what}` holds {} bytes, not entries of {N}",
            bytes.len()
        ));
    }
    let mut items = Vec::with_capacity(bytes.len() / N);
    let mut entry = [0u8; N];
    for (i, chunk) in bytes.chunks_exact(N).enumerate() {
        entry.copy_from_slice(chunk);
        let Some(item) = item_of(entry) else {
            return Err(format!(
                "{NAME} snapshot: `{what}` entry {i} is invalid: {entry:?}"
            ));
        };
        items.push(item);
    }
    Ok(items)
}

/// Checks every value the rules index or subtract with, and rebuilds the mob occupancy.
fn check(world: &mut World, config: &Config) -> Result<(), String> {
    if world.step > config.max_steps {
        return Err(format!(
            "step {} is past max_steps {}",
            world.step, config.max_steps
        ));
    }
    check_tables(world, config)?;
    check_counts(world)?;
    check_agents(world, config)?;
    index_mobs(world, config)?;
    check_things(world)
}

/// Coordination tags and mob labels ask for no more agents than the team has.
fn check_tables(world: &World, config: &Config) -> Result<(), String> {
    let team = config.agents as u8;
    if let Some(i) = world
        .tags
        .iter()
        .position(|t| t.kind != CoordKind::None && t.required > team)
    {
        return Err(format!("tile {i} requires more agents than the team has"));
    }
    let labels = world.mob_labels.iter().flatten();
    if let Some(l) = labels
        .chain(world.mobs.iter().map(|m| &m.tag))
        .find(|l| l.required > team)
    {
        return Err(format!(
            "a mob label requires {} agents, the team has {team}",
            l.required
        ));
    }
    Ok(())
}

/// Counts no larger than play can make them (larger ones would overflow as play goes on).
fn check_counts(world: &World) -> Result<(), String> {
    let step = world.step;
    let most = u64::from(step) * COUNT_PER_STEP;
    let counters = serde_json::to_value(world.counters).unwrap_or_default();
    let mut counters = counters.as_object().into_iter().flatten();
    if let Some((name, n)) = counters.find(|(_, n)| n.as_u64() > Some(most)) {
        return Err(format!("counter {name} = {n} after {step} steps"));
    }
    if let Some(n) = world
        .counters
        .deaths_by
        .iter()
        .find(|n| u64::from(**n) > most)
    {
        return Err(format!("{n} deaths of one cause after {step} steps"));
    }
    let mut built = world.spawned.iter().chain([&world.shelters]);
    if let Some(n) = built.find(|n| u64::from(**n) > most) {
        return Err(format!(
            "{n} mobs spawned or shelters built after {step} steps"
        ));
    }
    let c = world.census;
    let sites = [c.sync_hard, c.sync_soft, c.handover, c.construction_sites];
    if sites.iter().map(|n| u64::from(*n)).sum::<u64>() > world.blocks.len() as u64 {
        return Err(format!(
            "census {c:?} counts more sites than the map has tiles"
        ));
    }
    Ok(())
}

/// The team as configured, on the map, on distinct tiles, with values in range.
fn check_agents(world: &World, config: &Config) -> Result<(), String> {
    if world.agents.len() != config.agents {
        return Err(format!(
            "{} agents, this environment has {}",
            world.agents.len(),
            config.agents
        ));
    }
    let step = world.step;
    for (i, a) in world.agents.iter().enumerate() {
        let bad = |what: String| Err(format!("agent {i}: {what}"));
        if world.tile(a.x, a.y).is_none() {
            return bad(format!("position ({}, {}) is off the map", a.x, a.y));
        }
        if a.role != config.roles[i] {
            return bad(format!(
                "role {} differs from the configured {}",
                a.role.name(),
                config.roles[i].name()
            ));
        }
        let vitals = [
            ("health", a.health, VITAL_MAX),
            ("food", a.food, a.food_capacity()),
            ("drink", a.drink, a.food_capacity()),
            ("energy", a.energy, VITAL_MAX),
        ];
        if let Some((name, value, most)) =
            vitals.iter().find(|(_, v, most)| !(0..=*most).contains(v))
        {
            return bad(format!("{name} {value} outside 0..={most}"));
        }
        if let Some(k) = a.inventory.iter().position(|n| *n > Item::CAP) {
            return bad(format!(
                "{} {} above the cap of {}",
                Item::ALL[k].name(),
                a.inventory[k],
                Item::CAP
            ));
        }
        if let Life::Downed { since } = a.life
            && since > step
        {
            return bad(format!("downed at step {since}, after step {step}"));
        }
        if let Some(r) = a.request
            && r.until >= step.saturating_add(REQUEST_STEPS)
        {
            return bad(format!("request active until step {}", r.until));
        }
        if let Some(s) = a.signal
            && (s.step > step || usize::from(s.value) >= config.signals)
        {
            return bad(format!(
                "signal {} at step {} (channels: {}, now: step {step})",
                s.value, s.step, config.signals
            ));
        }
        let clash = world.agents[..i]
            .iter()
            .position(|o| o.is_present() && a.is_present() && (o.x, o.y) == (a.x, a.y));
        if let Some(other) = clash {
            return bad(format!("shares its tile with agent {other}"));
        }
    }
    Ok(())
}

/// Mobs on free tiles of the map, with health and cooldown play can give them; fills
/// the occupancy grid.
fn index_mobs(world: &mut World, config: &Config) -> Result<(), String> {
    // The occupancy grid stores mob index + 1 in a byte.
    if world.mobs.len() > usize::from(u8::MAX) {
        return Err(format!("{} mobs, at most 255", world.mobs.len()));
    }
    for index in 0..world.mobs.len() {
        let mob = world.mobs[index];
        let Some(tile) = world.tile(mob.x, mob.y) else {
            return Err(format!(
                "mob {index} at ({}, {}) is off the map",
                mob.x, mob.y
            ));
        };
        if world.mob_at[tile] != 0 || world.agent_at(mob.x, mob.y).is_some() {
            return Err(format!(
                "mob {index} at ({}, {}) shares its tile",
                mob.x, mob.y
            ));
        }
        // Cooldowns count down by one per step from at most 5.
        let lowest_cooldown = -i64::from(world.step);
        let full = spawn_health(mob.kind, mob.tag.coordinated, config);
        if !(1..=full).contains(&mob.health)
            || !(lowest_cooldown..=5).contains(&i64::from(mob.cooldown))
        {
            return Err(format!(
                "mob {index} has health {} (1..={full}) and cooldown {}",
                mob.health, mob.cooldown
            ));
        }
        world.mob_at[tile] = index as u8 + 1;
    }
    Ok(())
}

/// Arrows, plants and handovers that fit the map, the team and the step.
fn check_things(world: &World) -> Result<(), String> {
    let step = world.step;
    let flies = |a: &Arrow| {
        world.tile(a.x, a.y).is_some()
            && (-1..=1).contains(&a.dx)
            && (-1..=1).contains(&a.dy)
            && (0..=9).contains(&a.damage)
    };
    if let Some(a) = world.arrows.iter().find(|a| !flies(a)) {
        return Err(format!("arrow {a:?} cannot fly here"));
    }
    let tiles = world.blocks.len();
    if let Some(p) = world
        .plants
        .iter()
        .find(|p| p.tile >= tiles || p.age > step)
    {
        return Err(format!(
            "plant {p:?} does not fit this world at step {step}"
        ));
    }
    for p in &world.pending {
        let fits = p.tile < tiles
            && p.initiator < world.agents.len()
            && p.started <= step
            && p.window <= u32::from(u8::MAX);
        if !fits {
            return Err(format!(
                "handover {p:?} does not fit this world at step {step}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{CoordWorld, Scripted};
    use mosaic_core::rng::seeded;
    use mosaic_core::{
        Action, AgentContext, EnvError, Environment, ObsRequest, Observation, Policy, Settings,
        Snapshot, Transition,
    };
    use rand::Rng as _;
    use serde_json::{Value, json};

    fn make(agents: usize, preset: &str) -> CoordWorld {
        let mut settings = Settings::new();
        settings.insert("agents".into(), json!(agents));
        settings.insert("preset".into(), json!(preset));
        CoordWorld::from_settings(&settings).unwrap()
    }

    /// Every observation of every agent, all modalities.
    fn observe_all(env: &CoordWorld) -> Vec<Observation> {
        (0..env.config().agents)
            .map(|i| env.observe(i, ObsRequest::ALL))
            .collect()
    }

    /// The joint action of `raw` (one index per agent, legal or not) for those acting.
    fn joint(env: &CoordWorld, raw: &[u32]) -> Vec<Option<Action>> {
        let acting = env.acting();
        (0..raw.len())
            .map(|i| acting.contains(&i).then_some(Action(raw[i])))
            .collect()
    }

    /// Steps `original` and each of `copies` with the same actions, comparing after every
    /// step everything the world shows; returns the steps played.
    fn play_in_lockstep(
        original: &mut CoordWorld,
        copies: &mut [&mut CoordWorld],
        actions: &[Vec<u32>],
    ) -> usize {
        let mut played = 0;
        let (mut expected, mut out) = (Transition::default(), Transition::default());
        for raw in actions {
            if original.acting().is_empty() {
                break;
            }
            let joint = joint(original, raw);
            for copy in copies.iter() {
                assert_eq!(copy.acting(), original.acting());
            }
            original.step(&joint, &mut expected).unwrap();
            let seen = observe_all(original);
            for copy in copies.iter_mut() {
                copy.step(&joint, &mut out).unwrap();
                assert_eq!(out, expected, "transition of step {}", original.steps());
                assert_eq!(
                    observe_all(copy),
                    seen,
                    "observations at {}",
                    original.steps()
                );
            }
            played += 1;
        }
        for copy in copies.iter() {
            assert_eq!(copy.metrics(), original.metrics());
            assert_eq!(copy.render(), original.render());
            assert_eq!(copy.snapshot(), original.snapshot());
        }
        played
    }

    /// Plays `actions` and looks at everything, for worlds that only must not fail.
    fn play(env: &mut CoordWorld, actions: &[Vec<u32>]) {
        let mut out = Transition::default();
        for raw in actions {
            if env.acting().is_empty() {
                break;
            }
            let joint = joint(env, raw);
            env.step(&joint, &mut out).unwrap();
            observe_all(env);
        }
        env.metrics();
        env.render();
    }

    /// A scripted team plays `steps` steps (building up mobs, handovers, requests and
    /// structures), so that snapshots are taken of lively worlds.
    fn scripted_prefix(env: &mut CoordWorld, seed: u64, steps: u32) {
        let agents = env.config().agents;
        let labels = env.spec().action_labels.len();
        let mut team: Vec<Scripted> = (0..agents)
            .map(|_| Scripted::from_settings(env.config(), &Settings::new()).unwrap())
            .collect();
        for (i, p) in team.iter_mut().enumerate() {
            p.reset(&AgentContext::new(seed, i, format!("agent_{i}"), labels));
        }
        let mut out = Transition::default();
        for _ in 0..steps {
            let acting = env.acting();
            if acting.is_empty() {
                return;
            }
            let mut actions = vec![None; agents];
            for i in acting {
                let obs = env.observe(i, team[i].wants());
                actions[i] = Some(team[i].decide(&obs).action);
            }
            env.step(&actions, &mut out).unwrap();
        }
    }

    #[test]
    fn restored_worlds_continue_exactly_like_the_original() {
        let cases = [
            (2, "easy", 3),
            (3, "medium", 8),
            (4, "hard", 21),
            (3, "easy", 34),
            (2, "hard", 55),
            (4, "medium", 89),
        ];
        let mut lively = 0;
        for (agents, preset, seed) in cases {
            let mut original = make(agents, preset);
            original.reset(seed).unwrap();
            let mut rng = seeded(seed ^ 0x5a5a);
            let at = rng.random_range(0..400);
            scripted_prefix(&mut original, seed, at);
            let snapshot = original.snapshot().unwrap();
            let w = original.world.as_ref().unwrap();
            if !w.mobs.is_empty() && (!w.pending.is_empty() || w.counters.handovers_started > 0) {
                lively += 1;
            }
            let labels = original.spec().action_labels.len() as u32;
            let tail: Vec<Vec<u32>> = (0..300)
                .map(|_| (0..agents).map(|_| rng.random_range(0..labels)).collect())
                .collect();
            // A fresh environment, and one in the middle of another episode.
            let mut fresh = make(agents, preset);
            fresh.restore(&snapshot).unwrap();
            let mut busy = make(agents, preset);
            busy.reset(seed + 1000).unwrap();
            scripted_prefix(&mut busy, seed + 1000, 50);
            busy.restore(&snapshot).unwrap();
            for restored in [&fresh, &busy] {
                assert_eq!(restored.steps(), original.steps());
                assert_eq!(restored.snapshot().unwrap(), snapshot, "seed {seed}");
                assert_eq!(observe_all(restored), observe_all(&original));
            }
            let played = play_in_lockstep(&mut original, &mut [&mut fresh, &mut busy], &tail);
            assert!(
                played > 0,
                "seed {seed}: nothing was played after step {at}"
            );
        }
        assert!(
            lively >= 2,
            "too few snapshots held mobs and handovers: the test saw little state"
        );
    }

    #[test]
    fn a_fresh_environment_has_nothing_to_snapshot() {
        assert!(make(3, "medium").snapshot().is_none());
    }

    fn restore_error(env: &mut CoordWorld, bytes: Vec<u8>) -> String {
        match env.restore(&Snapshot(bytes)) {
            Err(EnvError::Restore(message)) => message,
            other => panic!("expected a restore error, got {other:?}"),
        }
    }

    /// `good` with `change` applied to its JSON.
    fn edited(good: &Snapshot, change: impl FnOnce(&mut Value)) -> Vec<u8> {
        let mut value: Value = serde_json::from_slice(&good.0).unwrap();
        change(&mut value);
        serde_json::to_vec(&value).unwrap()
    }

    #[test]
    fn bad_snapshots_are_refused_with_the_reason() {
        let mut env = make(3, "medium");
        env.reset(4).unwrap();
        scripted_prefix(&mut env, 4, 120);
        let good = env.snapshot().unwrap();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"not json".to_vec(), "malformed"),
            (good.0[..good.0.len() / 2].to_vec(), "malformed"),
            (
                br#"{"env": "soccer-2v2", "started": true}"#.to_vec(),
                "snapshot of `soccer-2v2` given to coord-world",
            ),
            (
                edited(&good, |v| v["format"] = json!(1)),
                "has format 1, this build reads format 2",
            ),
            (
                edited(&good, |v| v["blocks"] = json!("!!!")),
                "`blocks` is not base64",
            ),
            (
                edited(&good, |v| v["tags"] = json!("AAAA")),
                "`tags` holds 3 bytes, not entries of 6",
            ),
            (
                // Tile 1 listed after tile 2.
                edited(&good, |v| v["tags"] = json!("AgABAAIAAQABAAIA")),
                "`tags` lists tile 1 out of order",
            ),
            (
                edited(&good, |v| v["mob_labels"] = json!("AAAA")),
                "1 mob labels, 64 per kind expected",
            ),
            (
                // Byte 17 is the edge of the world, never a tile.
                edited(&good, |v| {
                    use base64::Engine as _;
                    let engine = &base64::engine::general_purpose::STANDARD;
                    let mut blocks = engine.decode(v["blocks"].as_str().unwrap()).unwrap();
                    blocks[5] = 17;
                    v["blocks"] = json!(engine.encode(blocks));
                }),
                "`blocks` entry 5 is invalid",
            ),
            (
                edited(&good, |v| v["agents"][1]["x"] = json!(-3)),
                "agent 1: position (-3,",
            ),
            (
                edited(&good, |v| v["agents"][2]["health"] = json!(12)),
                "agent 2: health 12 outside 0..=9",
            ),
            (
                edited(&good, |v| v["agents"][0]["role"] = json!("miner")),
                "agent 0: role miner differs from the configured warrior",
            ),
            (
                edited(&good, |v| {
                    let first = v["agents"][0].clone();
                    v["agents"][1]["x"] = first["x"].clone();
                    v["agents"][1]["y"] = first["y"].clone();
                }),
                "agent 1: shares its tile with agent 0",
            ),
            (
                edited(&good, |v| {
                    v["agents"].as_array_mut().unwrap().pop();
                }),
                "2 agents, this environment has 3",
            ),
            (
                edited(&good, |v| v["step"] = json!(20_000)),
                "step 20000 is past max_steps 10000",
            ),
            (edited(&good, |v| v["rng"] = json!("seven")), "malformed"),
        ];
        for (bytes, expected) in cases {
            let message = restore_error(&mut env, bytes);
            assert!(
                message.contains(expected),
                "{expected:?} not in {message:?}"
            );
        }
        let mut other = make(3, "hard");
        let message = restore_error(&mut other, good.0.clone());
        assert!(message.contains("other settings (difficulty:"), "{message}");
        // Nothing was changed by the failed attempts.
        assert_eq!(env.snapshot().unwrap(), good);
    }

    /// Every number of a JSON value, as paths of keys and indices.
    fn number_paths(value: &Value, path: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
        match value {
            Value::Number(_) => out.push(path.clone()),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(json!(i));
                    number_paths(item, path, out);
                    path.pop();
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    path.push(json!(key));
                    number_paths(item, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    fn at_path<'v>(value: &'v mut Value, path: &[Value]) -> &'v mut Value {
        path.iter().fold(value, |v, key| match key {
            Value::String(k) => &mut v[k.as_str()],
            _ => &mut v[key.as_u64().unwrap() as usize],
        })
    }

    /// Damaged snapshots, numbers set to edge values and bytes overwritten at random,
    /// are refused or, when they still describe a valid world, play on without a panic.
    #[test]
    fn damaged_snapshots_never_panic() {
        let mut env = make(4, "easy");
        env.reset(12).unwrap();
        scripted_prefix(&mut env, 12, 200);
        let good = env.snapshot().unwrap();
        let value: Value = serde_json::from_slice(&good.0).unwrap();
        let mut paths = Vec::new();
        number_paths(&value, &mut Vec::new(), &mut paths);
        let edges = [
            json!(-1),
            json!(0),
            json!(1),
            json!(3),
            json!(9),
            json!(10),
            json!(63),
            json!(64),
            json!(255),
            json!(256),
            json!(4_294_967_295u64),
            json!(-2_147_483_648i64),
        ];
        let mut rng = seeded(99);
        let (mut refused, mut accepted) = (0, 0);
        for trial in 0..1500 {
            let bytes = if trial % 3 == 0 {
                let mut bytes = good.0.clone();
                let at = rng.random_range(0..bytes.len());
                bytes[at] = b"0123456789-,:{}[]\"aeAZ+/="[rng.random_range(0..25)];
                bytes
            } else {
                let mut v = value.clone();
                let path = &paths[rng.random_range(0..paths.len())];
                *at_path(&mut v, path) = edges[rng.random_range(0..edges.len())].clone();
                serde_json::to_vec(&v).unwrap()
            };
            let mut target = make(4, "easy");
            match target.restore(&Snapshot(bytes)) {
                Err(EnvError::Restore(_)) => refused += 1,
                Err(other) => panic!("trial {trial}: not a restore error: {other}"),
                Ok(()) => {
                    accepted += 1;
                    let tail: Vec<Vec<u32>> = (0..40)
                        .map(|_| (0..4).map(|_| rng.random_range(0..37)).collect())
                        .collect();
                    play(&mut target, &tail);
                }
            }
        }
        assert!(
            refused > 100 && accepted > 100,
            "{refused} refused, {accepted} accepted"
        );
    }
}
