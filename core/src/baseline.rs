//! Environment-independent baseline policies: random, noop, cycling.

use crate::rng::{self, Rng, seeded};
use crate::{Action, AgentContext, Decision, Observation, Paradigm, Policy};
use rand::Rng as _;

/// Uniform over the legal actions, seeded from (episode seed, agent id).
#[derive(Debug)]
pub struct Random {
    rng: Rng,
    legal: Vec<u32>,
}

impl Default for Random {
    fn default() -> Self {
        Self {
            rng: seeded(0),
            legal: Vec::new(),
        }
    }
}

impl Policy for Random {
    fn paradigm(&self) -> Paradigm {
        Paradigm::Random
    }

    fn reset(&mut self, ctx: &AgentContext) {
        self.rng = seeded(ctx.seed);
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        self.legal.clear();
        self.legal.extend(obs.legal_actions().map(|a| a.0));
        let action = match self.legal.len() {
            0 => 0,
            n => self.legal[self.rng.random_range(0..n)],
        };
        Decision::act(Action(action))
    }

    fn save_state(&self) -> Option<serde_json::Value> {
        rng::save_state(&self.rng)
    }

    fn load_state(&mut self, state: &serde_json::Value) -> Result<(), String> {
        self.rng = rng::load_state(state)?;
        Ok(())
    }
}

/// Always the same action (the environment's default unless configured).
#[derive(Debug, Default)]
pub struct Noop {
    /// The action to repeat; `None` means action 0.
    pub action: Option<Action>,
}

impl Policy for Noop {
    fn paradigm(&self) -> Paradigm {
        Paradigm::Noop
    }

    fn reset(&mut self, _ctx: &AgentContext) {}

    fn decide(&mut self, _obs: &Observation) -> Decision {
        Decision::act(self.action.unwrap_or(Action(0)))
    }

    fn save_state(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::Null)
    }

    fn load_state(&mut self, _state: &serde_json::Value) -> Result<(), String> {
        Ok(())
    }
}

/// Cycles through the legal actions in index order: a deterministic, seed-independent
/// baseline that exercises every action.
#[derive(Debug, Default)]
pub struct Cycling {
    next: u32,
}

impl Policy for Cycling {
    fn paradigm(&self) -> Paradigm {
        Paradigm::Scripted
    }

    fn reset(&mut self, _ctx: &AgentContext) {
        self.next = 0;
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        let n = obs.legal.len() as u32;
        for offset in 0..n {
            let candidate = (self.next + offset) % n;
            if obs.legal[candidate as usize] {
                self.next = candidate + 1;
                return Decision::act(Action(candidate));
            }
        }
        Decision::act(Action(0))
    }

    fn save_state(&self) -> Option<serde_json::Value> {
        Some(self.next.into())
    }

    fn load_state(&mut self, state: &serde_json::Value) -> Result<(), String> {
        self.next = state
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("not a cycling policy state: {state}"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_is_reproducible_and_legal() {
        let obs = Observation::with_mask(0, vec![false, true, true, false, true]);
        let ctx = AgentContext::new(42, 0, "a".into(), 5);
        let mut a = Random::default();
        let mut b = Random::default();
        a.reset(&ctx);
        b.reset(&ctx);
        let xs: Vec<_> = (0..100).map(|_| a.decide(&obs).action).collect();
        let ys: Vec<_> = (0..100).map(|_| b.decide(&obs).action).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|x| obs.is_legal(*x)));
        for legal in [1, 2, 4] {
            assert!(xs.contains(&Action(legal)), "action {legal} never drawn");
        }
    }

    #[test]
    fn saved_states_continue_identically() {
        let obs = Observation::with_mask(0, vec![true, false, true, true, true]);
        let ctx = AgentContext::new(7, 1, "b".into(), 5);
        let policies: [fn() -> Box<dyn Policy>; 3] = [
            || Box::new(Random::default()),
            || Box::new(Cycling::default()),
            || Box::new(Noop::default()),
        ];
        for make in policies {
            let mut original = make();
            original.reset(&ctx);
            for _ in 0..13 {
                original.decide(&obs);
            }
            let state = original.save_state().expect("baselines save their state");
            let mut restored = make();
            restored.reset(&ctx);
            restored.load_state(&state).expect("own state loads");
            let xs: Vec<_> = (0..50).map(|_| original.decide(&obs).action).collect();
            let ys: Vec<_> = (0..50).map(|_| restored.decide(&obs).action).collect();
            assert_eq!(xs, ys);
        }
        let mut random = Random::default();
        assert!(random.load_state(&serde_json::json!("nonsense")).is_err());
        assert!(
            Cycling::default()
                .load_state(&serde_json::json!(-1))
                .is_err()
        );
    }

    #[test]
    fn random_differs_between_agents() {
        let obs = Observation::with_mask(0, vec![true; 8]);
        let draw = |id: &str| {
            let mut p = Random::default();
            p.reset(&AgentContext::new(1, 0, id.into(), 8));
            (0..20).map(|_| p.decide(&obs).action).collect::<Vec<_>>()
        };
        assert_ne!(draw("green_0"), draw("green_1"));
    }
}
