//! Scripted players reading the symbolic observation: SMAX's built-in heuristic, focus
//! fire and kiting.

use crate::battle::actions;
use crate::observe::{Layout, layout};
use crate::settings::Config;
use crate::units::UnitType;
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::rng::{Rng, seeded};
use mosaic_core::{
    Action, AgentContext, Decision, ObsRequest, Observation, Paradigm, Policy, Settings,
};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

/// Which scripted behaviour a slot plays.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// SMAX's built-in enemy: keep shooting the last target while it is in range, else
    /// shoot the closest enemy in range; otherwise walk towards a random visible enemy, or
    /// across the centre of the map (its start point turned half a circle about the
    /// centre) when none is visible.
    #[default]
    Heuristic,
    /// Every unit shoots the enemy in range with the fewest hit points left, so a team
    /// converges on the weakest; otherwise it walks to the nearest enemy it knows of, in
    /// sight or in the team's memory.
    FocusFire,
    /// Focus fire, but a ranged unit whose weapon is reloading steps away from the
    /// nearest enemy in its attack range.
    Kiting,
}

/// A scripted skirmish player. Medivacs, under every strategy, heal the nearest hurt ally
/// in sight (sticking to it until it is whole) and otherwise follow the nearest ally.
///
/// ```
/// use mosaic_skirmish::{Config, ScriptedSkirmish, Skirmish, Strategy};
/// use mosaic_core::{AgentContext, Environment, Policy};
///
/// let mut env = Skirmish::new(Config::default()).unwrap();
/// env.reset(3).unwrap();
/// let mut player = ScriptedSkirmish::new(Config::default(), Strategy::FocusFire);
/// player.reset(&AgentContext::new(3, 6, "red_1".into(), 11));
/// let obs = env.observe(6, player.wants());
/// let decision = player.decide(&obs);
/// assert!(obs.is_legal(decision.action));
/// ```
#[derive(Clone, Debug)]
pub struct ScriptedSkirmish {
    config: Config,
    strategy: Strategy,
    layout: Layout,
    local: usize,
    memory: Memory,
}

/// What a player carries from step to step.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Memory {
    rng: Rng,
    last_target: Option<usize>,
    heal_target: Option<usize>,
    default_target: Option<[f32; 2]>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SlotSettings {
    #[serde(default)]
    strategy: Strategy,
}

/// A unit as read from its block, or from the team's memory of it.
#[derive(Clone, Copy, Debug)]
struct Seen {
    /// Target slot (enemies) or team-local index (allies).
    slot: usize,
    /// In sight now (not only remembered).
    visible: bool,
    /// The target action on it is legal now.
    targetable: bool,
    rel: [f32; 2],
    distance: f32,
    /// Hit points left, absolute.
    hit_points: f32,
    hurt: bool,
    kind: UnitType,
}

/// What a decision reads from the observation.
struct Situation {
    kind: UnitType,
    pos: [f32; 2],
    reloading: bool,
    moves: [bool; 4],
    /// Enemies in sight or in the team's memory.
    enemies: Vec<Seen>,
    /// Allies in sight.
    allies: Vec<Seen>,
}

fn norm(v: [f32; 2]) -> f32 {
    (v[0] * v[0] + v[1] * v[1]).sqrt()
}

impl ScriptedSkirmish {
    /// A player of `strategy` in skirmishes configured by `config`.
    pub fn new(config: Config, strategy: Strategy) -> Self {
        let layout = Layout::new(&config, 0);
        Self {
            config,
            strategy,
            layout,
            local: 0,
            memory: Memory {
                rng: seeded(0),
                last_target: None,
                heal_target: None,
                default_target: None,
            },
        }
    }

    /// A player from the environment's settings and its slot's (`strategy =
    /// "heuristic" | "focus_fire" | "kiting"`).
    pub fn from_settings(env: &Settings, slot: &Settings) -> Result<Self, SpecError> {
        let config = Config::from_settings(env)?;
        let SlotSettings { strategy } = parse_settings(slot)?;
        Ok(Self::new(config, strategy))
    }

    /// The strategy played.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The unit type whose one-hot starts at `at`.
    fn kind_at(&self, data: &[f32], at: usize) -> UnitType {
        let bit = (0..self.layout.types)
            .find(|b| data[at + b] > 0.5)
            .unwrap_or(0);
        self.config.pool[bit].0
    }

    /// The unit in sight whose block starts at `at`.
    fn in_sight(&self, data: &[f32], at: usize, sight: f32) -> Option<Seen> {
        if data[at + layout::VISIBLE] < 0.5 {
            return None;
        }
        let kind = self.kind_at(data, at + layout::UNIT);
        let s = kind.stats();
        let health = data[at + layout::HEALTH];
        Some(Seen {
            slot: 0,
            visible: true,
            targetable: false,
            rel: [
                data[at + layout::REL_X] * sight,
                data[at + layout::REL_Y] * sight,
            ],
            distance: data[at + layout::DISTANCE] * sight,
            hit_points: health * s.health + data[at + layout::SHIELD] * s.shield,
            hurt: health < 1.0,
            kind,
        })
    }

    /// The unit the memory block starting at `at` remembers.
    fn remembered(&self, data: &[f32], at: usize) -> Option<Seen> {
        if data[at + layout::KNOWN] < 0.5 {
            return None;
        }
        let kind = self.kind_at(data, at + layout::MEMORY);
        let s = kind.stats();
        let size = self.config.map_size;
        let rel = [
            data[at + layout::MEM_REL_X] * size,
            data[at + layout::MEM_REL_Y] * size,
        ];
        let health = data[at + layout::MEM_HEALTH];
        Some(Seen {
            slot: 0,
            visible: false,
            targetable: false,
            rel,
            distance: norm(rel),
            hit_points: health * s.health + data[at + layout::MEM_SHIELD] * s.shield,
            hurt: health < 1.0,
            kind,
        })
    }

    fn read(&self, data: &[f32], legal: &[bool]) -> Option<Situation> {
        if data.len() != self.layout.len() {
            return None;
        }
        let own = self.layout.own();
        if data[own + layout::OWN_HEALTH] <= 0.0 {
            return None;
        }
        let kind = self.kind_at(data, own + layout::OWN);
        let sight = kind.stats().sight_range;
        let size = self.config.map_size;
        let usable = |slot: usize| legal.get(actions::TARGET as usize + slot) == Some(&true);
        let heals = kind.heals();
        let enemies = (0..self.layout.enemies)
            .filter_map(|k| {
                let seen = self
                    .in_sight(data, self.layout.enemy(k), sight)
                    .or_else(|| self.remembered(data, self.layout.enemy_memory(k)))?;
                Some(Seen {
                    slot: k,
                    targetable: !heals && usable(k),
                    ..seen
                })
            })
            .collect();
        let allies = (0..self.layout.allies - 1)
            .filter_map(|s| {
                let index = Layout::ally_index(self.local, s);
                let seen = self.in_sight(data, self.layout.ally(s), sight)?;
                Some(Seen {
                    slot: index,
                    targetable: heals && usable(index),
                    ..seen
                })
            })
            .collect();
        Some(Situation {
            kind,
            pos: [
                data[own + layout::OWN_POS] * size,
                data[own + layout::OWN_POS + 1] * size,
            ],
            reloading: data[own + layout::OWN_COOLDOWN] > 0.0,
            moves: [0, 1, 2, 3].map(|k| data[layout::MOVES + k] > 0.5),
            enemies,
            allies,
        })
    }

    /// The legal move best aligned with `towards` (relative), else stop.
    fn move_along(situation: &Situation, towards: [f32; 2]) -> u32 {
        const VECTORS: [[f32; 2]; 4] = [[0.0, 1.0], [0.0, -1.0], [1.0, 0.0], [-1.0, 0.0]];
        (0..4)
            .filter(|k| situation.moves[*k])
            .map(|k| (k, VECTORS[k][0] * towards[0] + VECTORS[k][1] * towards[1]))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            .map_or(actions::STOP, |(k, _)| actions::NORTH + k as u32)
    }

    /// Where to walk when no enemy is known: the start point turned half a circle about
    /// the centre, fixed at the first decision (SMAX's default target).
    fn default_heading(&mut self, situation: &Situation) -> [f32; 2] {
        let centre = self.config.map_size / 2.0;
        let target = *self.memory.default_target.get_or_insert([
            2.0 * centre - situation.pos[0],
            2.0 * centre - situation.pos[1],
        ]);
        [target[0] - situation.pos[0], target[1] - situation.pos[1]]
    }

    fn decide_medivac(&mut self, s: &Situation) -> u32 {
        let sticky = self
            .memory
            .heal_target
            .and_then(|t| s.allies.iter().find(|a| a.slot == t && a.hurt));
        let patient = sticky.or_else(|| {
            s.allies
                .iter()
                .filter(|a| a.hurt && !a.kind.heals())
                .min_by(|a, b| a.distance.total_cmp(&b.distance))
        });
        if let Some(p) = patient {
            self.memory.heal_target = Some(p.slot);
            return if p.targetable {
                actions::TARGET + p.slot as u32
            } else {
                Self::move_along(s, p.rel)
            };
        }
        self.memory.heal_target = None;
        let escort = s
            .allies
            .iter()
            .filter(|a| !a.kind.heals())
            .min_by(|a, b| a.distance.total_cmp(&b.distance));
        match escort {
            Some(a) if a.distance > 2.0 => Self::move_along(s, a.rel),
            Some(_) => actions::STOP,
            None => {
                let heading = self.default_heading(s);
                Self::move_along(s, heading)
            }
        }
    }

    /// SMAX's heuristic reads only what is in sight, never the memory.
    fn decide_heuristic(&mut self, s: &Situation) -> u32 {
        let visible: Vec<&Seen> = s.enemies.iter().filter(|e| e.visible).collect();
        let in_range = |slot: usize| visible.iter().any(|e| e.slot == slot && e.targetable);
        let target = self
            .memory
            .last_target
            .filter(|t| in_range(*t))
            .or_else(|| {
                visible
                    .iter()
                    .filter(|e| e.targetable)
                    .min_by(|a, b| a.distance.total_cmp(&b.distance))
                    .map(|e| e.slot)
            });
        self.memory.last_target = target;
        if let Some(slot) = target {
            return actions::TARGET + slot as u32;
        }
        let heading = if visible.is_empty() {
            self.default_heading(s)
        } else {
            let pick = self.memory.rng.random_range(0..visible.len());
            visible[pick].rel
        };
        Self::move_along(s, heading)
    }

    fn decide_focus_fire(&mut self, s: &Situation) -> u32 {
        let weakest = s.enemies.iter().filter(|e| e.targetable).min_by(|a, b| {
            a.hit_points
                .total_cmp(&b.hit_points)
                .then(a.distance.total_cmp(&b.distance))
        });
        if let Some(e) = weakest {
            return actions::TARGET + e.slot as u32;
        }
        let nearest = s
            .enemies
            .iter()
            .min_by(|a, b| a.distance.total_cmp(&b.distance));
        let heading = match nearest {
            Some(e) => e.rel,
            None => self.default_heading(s),
        };
        Self::move_along(s, heading)
    }

    fn decide_kiting(&mut self, s: &Situation) -> u32 {
        let range = s.kind.stats().attack_range;
        let threat = s
            .enemies
            .iter()
            .filter(|e| e.distance < range)
            .min_by(|a, b| a.distance.total_cmp(&b.distance));
        match threat {
            Some(e) if s.reloading && !s.kind.is_melee() => {
                Self::move_along(s, [-e.rel[0], -e.rel[1]])
            }
            _ => self.decide_focus_fire(s),
        }
    }
}

impl Policy for ScriptedSkirmish {
    fn paradigm(&self) -> Paradigm {
        Paradigm::Scripted
    }

    fn wants(&self) -> ObsRequest {
        ObsRequest::SYMBOLIC
    }

    fn reset(&mut self, ctx: &AgentContext) {
        let team = usize::from(ctx.agent >= self.config.teams[0]);
        self.layout = Layout::new(&self.config, team);
        self.local = ctx.agent - if team == 0 { 0 } else { self.config.teams[0] };
        self.memory = Memory {
            rng: seeded(ctx.seed),
            last_target: None,
            heal_target: None,
            default_target: None,
        };
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        let situation = obs
            .symbolic
            .as_ref()
            .and_then(|t| self.read(&t.data, &obs.legal));
        let action = match situation {
            None => actions::NOOP,
            Some(s) if s.kind.heals() => self.decide_medivac(&s),
            Some(s) => match self.strategy {
                Strategy::Heuristic => self.decide_heuristic(&s),
                Strategy::FocusFire => self.decide_focus_fire(&s),
                Strategy::Kiting => self.decide_kiting(&s),
            },
        };
        Decision::act(obs.fallback(Action(action)))
    }

    fn save_state(&self) -> Option<serde_json::Value> {
        serde_json::to_value(&self.memory).ok()
    }

    fn load_state(&mut self, state: &serde_json::Value) -> Result<(), String> {
        self.memory = serde_json::from_value(state.clone())
            .map_err(|e| format!("not a scripted skirmish state: {e}"))?;
        Ok(())
    }
}
