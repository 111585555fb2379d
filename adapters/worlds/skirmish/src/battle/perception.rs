//! What units perceive after a step: sight lines, spotters under extended partial
//! observability, and each team's entity memory.

use super::{Battle, Sighting, bits, distance2};
use crate::settings::ExtendedPo;

impl Battle {
    /// Sets `visible` to the living units within each unit's sight range (bit `j`).
    fn sightlines(&mut self) {
        let n = self.units.len();
        self.visible.clear();
        self.visible.resize(n, 0);
        for i in 0..n {
            let a = &self.units[i];
            if !a.alive() {
                continue;
            }
            let sight_a = a.kind.stats().sight_range;
            for j in i + 1..n {
                let b = &self.units[j];
                if !b.alive() {
                    continue;
                }
                // Strictly within sight, as SMAC and SMAX.
                let d2 = distance2(a.pos, b.pos);
                if d2 < sight_a * sight_a {
                    self.visible[i] |= 1 << j;
                }
                let sight_b = b.kind.stats().sight_range;
                if d2 < sight_b * sight_b {
                    self.visible[j] |= 1 << i;
                }
            }
        }
    }

    /// Updates what every unit perceives: spotters, visibility and the teams' memories.
    pub(super) fn perceive(&mut self) {
        self.sightlines();
        let sees = &self.visible;
        for j in 0..self.units.len() {
            let spotter = self.spotters[j].filter(|s| self.units[*s].alive());
            self.spotters[j] = match spotter {
                _ if !self.units[j].alive() => None,
                Some(s) => Some(s),
                None => self
                    .members(1 - self.units[j].team)
                    .find(|i| sees[*i] & (1 << j) != 0),
            };
        }
        self.apply_extended_po();
        for team in 0..2 {
            self.remember(team);
        }
    }

    /// Restricts what units of teams under extended partial observability see of their
    /// enemies to those they spotted first.
    fn apply_extended_po(&mut self) {
        if self.config.extended_po == ExtendedPo::None {
            return;
        }
        let mut spotted = vec![0u64; self.units.len()];
        for (j, spotter) in self.spotters.iter().enumerate() {
            if let Some(s) = spotter {
                spotted[*s] |= 1 << j;
            }
        }
        for team in (0..2).filter(|t| self.config.extended_po.applies_to(*t)) {
            let friends = self.team_mask(team);
            for i in self.members(team) {
                self.visible[i] &= friends | spotted[i];
            }
        }
    }

    /// Files this step's sightings of team `team` in its memory and relays them.
    fn remember(&mut self, team: usize) {
        let offset = self.offset(team);
        let members = self.members(team);
        let friends = self.team_mask(team);
        let memory = &mut self.memory[team];
        memory.begin_step();
        for i in members.clone() {
            let a = &self.units[i];
            if !a.alive() {
                continue;
            }
            // Within each other's sight: each sees the other (friends are never hidden).
            let mutual = self.visible[i] & friends;
            for k in bits(mutual).filter(|k| *k > i && self.visible[*k] & (1 << i) != 0) {
                memory.connect(i - offset, k - offset);
            }
            for j in std::iter::once(i).chain(bits(self.visible[i])) {
                let u = &self.units[j];
                let sighting = Sighting {
                    pos: u.pos,
                    health: u.health,
                    shield: u.shield,
                };
                memory.sight(i - offset, j, sighting);
            }
        }
        memory.propagate();
        let enemies = self.team_mask(1 - team);
        let relayed: usize = members
            .filter(|i| self.units[*i].alive())
            .map(|i| {
                self.memory[team]
                    .relayed_now(i - offset)
                    .filter(|e| enemies & (1 << e) != 0)
                    .count()
            })
            .sum();
        self.stats[team].relayed_sightings += relayed as u64;
    }

    /// Rebuilds what is derived from the state (after a restore).
    pub fn refresh(&mut self) {
        self.sightlines();
        self.apply_extended_po();
    }
}
