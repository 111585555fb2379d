//! Multi-hop entity memory: what a team knows about the entities (units, items, threats)
//! beyond each member's own sight, after relaying sightings through its members.
//!
//! The model is COMPASS's structured communication protocol (§4.3, App. B): agents are the
//! nodes of a graph whose edges the world draws each step (in a combat world: two agents
//! within sight range of each other). Every agent reports the entities it observes; each
//! report travels through the graph up to `max_hops` edges, and every agent it reaches
//! files it in its view of the team's memory with the reporting agent (the *source*), the
//! number of edges it travelled (*hops*, 0 for the agent's own sightings) and the step it
//! was made. Entries that are not refreshed grow older and are dropped past `max_age`
//! steps. `max_hops = 0` leaves every agent with its own sightings only (COMPASS's
//! "local information only" ablation).
//!
//! Any world that can say "agent `a` sees entity `e`, which looks like `payload`" can use
//! it: per step, [`EntityMemory::begin_step`], then [`EntityMemory::connect`] and
//! [`EntityMemory::sight`] as often as needed, then [`EntityMemory::propagate`]; agents
//! read their view with [`EntityMemory::recall`] and [`EntityMemory::recollections`].
//! Only the sightings of the current step travel: what an agent merely remembers is not
//! relayed again.
//!
//! ```
//! use mosaic_core::entity_memory::{EntityMemory, MemoryConfig};
//!
//! // Four agents in a line 0 - 1 - 2 - 3; agent 0 sees entity 7.
//! let config = MemoryConfig { max_hops: 2, max_age: 5 };
//! let mut memory = EntityMemory::new(4, 8, config).unwrap();
//! memory.begin_step();
//! memory.connect(0, 1);
//! memory.connect(1, 2);
//! memory.connect(2, 3);
//! memory.sight(0, 7, "at (3, 4)");
//! memory.propagate();
//! let relayed = memory.recall(2, 7).unwrap();
//! assert_eq!((relayed.source, relayed.hops, relayed.age), (0, 2, 0));
//! assert_eq!(*relayed.payload, "at (3, 4)");
//! assert!(memory.recall(3, 7).is_none(), "three hops away: beyond max_hops");
//!
//! // Next step nobody sees it: the entries age, and expire after max_age steps.
//! memory.begin_step();
//! memory.propagate();
//! assert_eq!(memory.recall(2, 7).unwrap().age, 1);
//! ```

use serde::{Deserialize, Serialize};

/// The most agents one memory holds (the graph is kept as one 64-bit row per agent).
pub const MAX_AGENTS: usize = 64;

/// How far sightings travel and how long they are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Edges a sighting may travel; 0 keeps every agent to its own sightings.
    pub max_hops: u32,
    /// Steps an entry is kept without being refreshed (0: only this step's sightings).
    pub max_age: u32,
}

impl Default for MemoryConfig {
    /// COMPASS's default of 3 hops; entries kept for 10 steps.
    fn default() -> Self {
        Self {
            max_hops: 3,
            max_age: 10,
        }
    }
}

/// An entity memory could not be built or restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// More agents than [`MAX_AGENTS`].
    #[error("{agents} agents exceed the entity memory's limit of {MAX_AGENTS}")]
    TooManyAgents {
        /// Agents asked for.
        agents: usize,
    },
    /// A restored memory whose tables do not match its sizes.
    #[error("entity memory tables do not match {agents} agents and {entities} entities")]
    Inconsistent {
        /// Agents stated.
        agents: usize,
        /// Entities stated.
        entities: usize,
    },
}

/// One agent's knowledge of one entity, as stored.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Entry<T> {
    payload: T,
    seen_at: u32,
    source: u8,
    hops: u8,
}

/// One agent's knowledge of one entity, as read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recollection<'a, T> {
    /// The entity's index.
    pub entity: usize,
    /// What the source reported.
    pub payload: &'a T,
    /// Steps since the sighting (0: seen this step).
    pub age: u32,
    /// The agent that made the sighting.
    pub source: usize,
    /// Edges the report travelled to reach this agent (0: its own sighting).
    pub hops: u32,
}

/// A team's entity memory: per agent, the freshest report of every entity that reached it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EntityMemory<T> {
    config: MemoryConfig,
    agents: usize,
    entities: usize,
    /// 64-bit words per entity bitset.
    words: usize,
    /// Steps begun since the memory was made or cleared.
    step: u32,
    /// This step's graph: bit `b` of `links[a]` is an edge between `a` and `b`.
    links: Vec<u64>,
    /// This step's sightings as bitsets, `words` per agent.
    sighted: Vec<u64>,
    /// This step's payloads, `entities` per agent (read only where `sighted` is set).
    reports: Vec<Option<T>>,
    /// Every agent's view, `entities` per agent; entries older than `max_age` are dead
    /// and never read.
    views: Vec<Option<Entry<T>>>,
    /// This step's entities each agent filed from another agent's sighting, as bitsets.
    relayed: Vec<u64>,
}

/// Indices of the set bits of `word`, lowest first, offset by `base`.
fn bits(mut word: u64, base: usize) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (word != 0).then(|| {
            let bit = word.trailing_zeros() as usize;
            word &= word - 1;
            base + bit
        })
    })
}

impl<T: Copy> EntityMemory<T> {
    /// An empty memory for `agents` agents (at most [`MAX_AGENTS`]) and `entities`
    /// entities.
    pub fn new(agents: usize, entities: usize, config: MemoryConfig) -> Result<Self, MemoryError> {
        if agents > MAX_AGENTS {
            return Err(MemoryError::TooManyAgents { agents });
        }
        let words = entities.div_ceil(64);
        Ok(Self {
            config,
            agents,
            entities,
            words,
            step: 0,
            links: vec![0; agents],
            sighted: vec![0; agents * words],
            reports: vec![None; agents * entities],
            views: vec![None; agents * entities],
            relayed: vec![0; agents * words],
        })
    }

    /// How far sightings travel and how long they are kept.
    pub fn config(&self) -> MemoryConfig {
        self.config
    }

    /// Number of agents.
    pub fn agents(&self) -> usize {
        self.agents
    }

    /// Number of entities.
    pub fn entities(&self) -> usize {
        self.entities
    }

    /// Forgets everything (a new episode).
    pub fn clear(&mut self) {
        self.step = 0;
        self.links.fill(0);
        self.sighted.fill(0);
        self.reports.fill(None);
        self.views.fill(None);
        self.relayed.fill(0);
    }

    /// Starts a step: the graph and the sightings of the previous step are cleared, what
    /// agents remember grows one step older.
    pub fn begin_step(&mut self) {
        self.step = self.step.wrapping_add(1);
        self.links.fill(0);
        self.sighted.fill(0);
        self.relayed.fill(0);
    }

    /// Connects agents `a` and `b` for this step (in both directions). Indices out of
    /// range are ignored.
    pub fn connect(&mut self, a: usize, b: usize) {
        if a < self.agents && b < self.agents && a != b {
            self.links[a] |= 1 << b;
            self.links[b] |= 1 << a;
        }
    }

    /// Agent `agent` sees entity `entity` this step, looking like `payload` (a later call
    /// for the same pair replaces it). Indices out of range are ignored.
    pub fn sight(&mut self, agent: usize, entity: usize, payload: T) {
        if agent < self.agents && entity < self.entities {
            self.sighted[agent * self.words + entity / 64] |= 1 << (entity % 64);
            self.reports[agent * self.entities + entity] = Some(payload);
        }
    }

    /// Relays this step's sightings: every agent files, for every entity reported within
    /// `max_hops` edges of it, the report of the nearest source (fewest hops, then lowest
    /// agent index). Entries older than `max_age` steps are no longer recalled.
    pub fn propagate(&mut self) {
        // Entity bitsets fit on the stack for up to 512 entities.
        let mut inline = [0u64; 8];
        let mut heap = Vec::new();
        let covered: &mut [u64] = if self.words <= inline.len() {
            &mut inline[..self.words]
        } else {
            heap.resize(self.words, 0);
            &mut heap
        };
        for receiver in 0..self.agents {
            covered.fill(0);
            let mut reached: u64 = 1 << receiver;
            let mut frontier = reached;
            let mut hops = 0u32;
            loop {
                for source in bits(frontier, 0) {
                    self.file(receiver, source, hops, covered);
                }
                if hops >= self.config.max_hops {
                    break;
                }
                let next = bits(frontier, 0).fold(0, |acc, a| acc | self.links[a]) & !reached;
                if next == 0 {
                    break;
                }
                reached |= next;
                frontier = next;
                hops += 1;
            }
        }
    }

    /// Files the sightings of `source`, `hops` edges from `receiver`, for the entities not
    /// yet covered this step.
    fn file(&mut self, receiver: usize, source: usize, hops: u32, covered: &mut [u64]) {
        let words = self.words;
        for (word, done) in covered.iter_mut().enumerate() {
            let new = self.sighted[source * words + word] & !*done;
            *done |= new;
            if hops > 0 {
                self.relayed[receiver * words + word] |= new;
            }
            for entity in bits(new, word * 64) {
                if let Some(payload) = self.reports[source * self.entities + entity] {
                    self.views[receiver * self.entities + entity] = Some(Entry {
                        payload,
                        seen_at: self.step,
                        // Both fit: agents are at most 64 and hops are bounded by them.
                        source: source as u8,
                        hops: hops.min(u32::from(u8::MAX)) as u8,
                    });
                }
            }
        }
    }

    /// The entities agent `agent` learnt of this step from other agents' sightings only
    /// (fresh entries with at least one hop), by index.
    pub fn relayed_now(&self, agent: usize) -> impl Iterator<Item = usize> + '_ {
        let row = if agent < self.agents {
            &self.relayed[agent * self.words..(agent + 1) * self.words]
        } else {
            &[]
        };
        row.iter()
            .enumerate()
            .flat_map(|(word, bitset)| bits(*bitset, word * 64))
    }

    /// Forgets entity `entity` in every agent's view (it no longer exists).
    pub fn forget(&mut self, entity: usize) {
        if entity < self.entities {
            for agent in 0..self.agents {
                self.views[agent * self.entities + entity] = None;
            }
        }
    }

    /// What agent `agent` knows about entity `entity`, if anything.
    pub fn recall(&self, agent: usize, entity: usize) -> Option<Recollection<'_, T>> {
        if agent >= self.agents || entity >= self.entities {
            return None;
        }
        self.views[agent * self.entities + entity]
            .as_ref()
            .and_then(|entry| self.recollection(entity, entry))
    }

    /// Everything agent `agent` knows, by entity index.
    pub fn recollections(&self, agent: usize) -> impl Iterator<Item = Recollection<'_, T>> {
        let row = if agent < self.agents {
            &self.views[agent * self.entities..(agent + 1) * self.entities]
        } else {
            &[]
        };
        row.iter()
            .enumerate()
            .filter_map(|(entity, slot)| slot.as_ref().and_then(|e| self.recollection(entity, e)))
    }

    /// The entry as read, unless it has expired.
    fn recollection<'a>(&self, entity: usize, entry: &'a Entry<T>) -> Option<Recollection<'a, T>> {
        let age = self.step.wrapping_sub(entry.seen_at);
        (age <= self.config.max_age).then(|| Recollection {
            entity,
            payload: &entry.payload,
            age,
            source: usize::from(entry.source),
            hops: u32::from(entry.hops),
        })
    }

    /// Checks a memory read from outside (a snapshot): its tables must match its sizes.
    pub fn validate(&self) -> Result<(), MemoryError> {
        let consistent = self.agents <= MAX_AGENTS
            && self.words == self.entities.div_ceil(64)
            && self.links.len() == self.agents
            && self.sighted.len() == self.agents * self.words
            && self.reports.len() == self.agents * self.entities
            && self.views.len() == self.agents * self.entities
            && self.relayed.len() == self.agents * self.words
            && self
                .views
                .iter()
                .flatten()
                .all(|e| usize::from(e.source) < self.agents);
        if consistent {
            Ok(())
        } else {
            Err(MemoryError::Inconsistent {
                agents: self.agents,
                entities: self.entities,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(agents: usize, entities: usize, max_hops: u32, max_age: u32) -> EntityMemory<u32> {
        EntityMemory::new(agents, entities, MemoryConfig { max_hops, max_age }).unwrap()
    }

    /// A chain 0 - 1 - ... - (n-1) where agent 0 sees entity 0.
    fn chain(memory: &mut EntityMemory<u32>) {
        memory.begin_step();
        for a in 1..memory.agents() {
            memory.connect(a - 1, a);
        }
        memory.sight(0, 0, 42);
    }

    #[test]
    fn sightings_travel_exactly_max_hops() {
        for max_hops in 0..6 {
            let mut m = memory(6, 1, max_hops, 3);
            chain(&mut m);
            m.propagate();
            for agent in 0..6 {
                let got = m.recall(agent, 0);
                if agent as u32 <= max_hops {
                    let r = got.unwrap_or_else(|| panic!("agent {agent}, {max_hops} hops"));
                    assert_eq!(
                        (r.source, r.hops, r.age, *r.payload),
                        (0, agent as u32, 0, 42)
                    );
                } else {
                    assert!(got.is_none(), "agent {agent} is beyond {max_hops} hops");
                }
            }
        }
    }

    #[test]
    fn zero_hops_keeps_agents_to_their_own_sightings() {
        let mut m = memory(3, 2, 0, 3);
        m.begin_step();
        m.connect(0, 1);
        m.connect(1, 2);
        m.sight(1, 1, 7);
        m.propagate();
        assert_eq!(m.recall(1, 1).map(|r| r.hops), Some(0));
        assert!(m.recall(0, 1).is_none() && m.recall(2, 1).is_none());
        assert_eq!(m.recollections(1).count(), 1);
    }

    #[test]
    fn the_nearest_source_wins_then_the_lowest_index() {
        // 0 - 1 - 2 and 0 - 3 - 4 - 2: both 1 and 4 see entity 0; agent 1 is one hop from
        // 0 and agent 4 two; agents 3 and 4 are nearer 4.
        let mut m = memory(5, 1, 5, 3);
        m.begin_step();
        for (a, b) in [(0, 1), (1, 2), (0, 3), (3, 4), (4, 2)] {
            m.connect(a, b);
        }
        m.sight(1, 0, 100);
        m.sight(4, 0, 400);
        m.propagate();
        let seen = |a| m.recall(a, 0).map(|r| (r.source, r.hops, *r.payload));
        assert_eq!(m.relayed_now(0).collect::<Vec<_>>(), vec![0]);
        assert_eq!(m.relayed_now(4).count(), 0, "its own sighting");
        assert_eq!(seen(0), Some((1, 1, 100)));
        assert_eq!(seen(2), Some((1, 1, 100)), "tie at one hop: lowest source");
        assert_eq!(seen(3), Some((4, 1, 400)));
        assert_eq!(seen(4), Some((4, 0, 400)));
    }

    #[test]
    fn entries_age_expire_and_refresh() {
        let mut m = memory(2, 1, 1, 2);
        chain(&mut m);
        m.propagate();
        for age in 1..=2 {
            m.begin_step();
            m.propagate();
            assert_eq!(m.recall(1, 0).map(|r| r.age), Some(age));
        }
        m.begin_step();
        m.propagate();
        assert!(m.recall(1, 0).is_none(), "older than max_age");
        chain(&mut m);
        m.propagate();
        assert_eq!(m.recall(1, 0).map(|r| r.age), Some(0));
        m.forget(0);
        assert!(m.recall(0, 0).is_none() && m.recall(1, 0).is_none());
    }

    #[test]
    fn only_fresh_sightings_are_relayed() {
        let mut m = memory(3, 1, 3, 5);
        m.begin_step();
        m.sight(0, 0, 1);
        m.propagate();
        // Next step 0 and 1 meet, but 0 only remembers: 1 learns nothing.
        m.begin_step();
        m.connect(0, 1);
        m.propagate();
        assert!(m.recall(1, 0).is_none());
        assert_eq!(m.recall(0, 0).map(|r| r.age), Some(1));
    }

    #[test]
    fn many_entities_span_several_words_and_limits_hold() {
        let mut m = memory(2, 130, 1, 0);
        m.begin_step();
        m.connect(0, 1);
        for e in [0, 63, 64, 129] {
            m.sight(0, e, e as u32);
        }
        m.sight(0, 500, 0);
        m.connect(0, 99);
        m.propagate();
        let known: Vec<_> = m.recollections(1).map(|r| r.entity).collect();
        assert_eq!(known, vec![0, 63, 64, 129]);
        m.validate().unwrap();
        assert_eq!(
            EntityMemory::<u32>::new(65, 1, MemoryConfig::default()).unwrap_err(),
            MemoryError::TooManyAgents { agents: 65 }
        );
        let mut broken = m.clone();
        broken.views.pop();
        assert!(broken.validate().is_err());
    }

    #[test]
    fn round_trips_through_json() {
        let mut m = memory(3, 4, 2, 4);
        chain(&mut m);
        m.propagate();
        let text = serde_json::to_string(&m).unwrap();
        let back: EntityMemory<u32> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
        back.validate().unwrap();
    }
}
