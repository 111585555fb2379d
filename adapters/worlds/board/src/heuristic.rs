//! The scripted player of the board games.

use super::{Board, BoardRules};
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::rng::{self, Rng, seeded};
use mosaic_core::{
    Action, AgentContext, Decision, DecisionSource, ObsRequest, Observation, Paradigm, Policy,
    Settings,
};
use rand::Rng as _;
use serde::Deserialize;

/// Win if a move wins, else block the opponent's winning move, else play as close to the
/// centre as possible; ties are broken with the agent's seeded RNG.
///
/// Reads the symbolic observation (own and opponent planes) and the legal mask.
///
/// ```
/// use mosaic_board::{BoardGame, BoardHeuristic, TIC_TAC_TOE};
/// use mosaic_core::{AgentContext, Environment, Policy};
///
/// let mut game = BoardGame::new(&TIC_TAC_TOE);
/// game.reset(0).unwrap();
/// let mut player = BoardHeuristic::new(&TIC_TAC_TOE);
/// player.reset(&AgentContext::new(0, 0, "player_1".into(), 9));
/// let decision = player.decide(&game.observe(0, player.wants()));
/// assert_eq!(game.spec().action_label(decision.action), "cell b2"); // the centre
/// ```
#[derive(Debug)]
pub struct BoardHeuristic {
    rules: &'static BoardRules,
    rng: Rng,
    candidates: Vec<usize>,
}

/// The heuristic has no settings; listed so a misspelt one is reported.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HeuristicSettings {}

/// Which rule chose a move (recorded with the decision).
#[derive(Clone, Copy)]
enum Rule {
    Win,
    Block,
    Centre,
}

impl Rule {
    fn name(self) -> &'static str {
        match self {
            Rule::Win => "win",
            Rule::Block => "block",
            Rule::Centre => "centre",
        }
    }
}

impl BoardHeuristic {
    /// A player for games by `rules`.
    pub fn new(rules: &'static BoardRules) -> Self {
        Self {
            rules,
            rng: seeded(0),
            candidates: Vec::new(),
        }
    }

    /// A player from the slot's settings (which must be empty).
    pub fn from_settings(
        rules: &'static BoardRules,
        settings: &Settings,
    ) -> Result<Self, SpecError> {
        parse_settings::<HeuristicSettings>(settings)?;
        Ok(Self::new(rules))
    }

    /// A uniformly drawn member of `self.candidates` (which must not be empty).
    fn pick(&mut self) -> usize {
        self.candidates[self.rng.random_range(0..self.candidates.len())]
    }

    /// Fills `self.candidates` with the legal moves that would complete a line for `agent`
    /// (0 = me, 1 = opponent).
    fn completing_moves(&mut self, board: &Board, legal: &[usize], agent: usize) {
        self.candidates.clear();
        self.candidates.extend(legal.iter().copied().filter(|&a| {
            board
                .target(a)
                .is_some_and(|(row, col)| board.completes_line(row, col, agent))
        }));
    }

    fn choose(&mut self, board: &Board, legal: &[usize]) -> (usize, Rule) {
        for (agent, rule) in [(0, Rule::Win), (1, Rule::Block)] {
            self.completing_moves(board, legal, agent);
            if !self.candidates.is_empty() {
                return (self.pick(), rule);
            }
        }
        let distance = |a: usize| {
            board.target(a).map_or(usize::MAX, |(row, col)| {
                self.rules.distance_from_centre(row, col)
            })
        };
        let best = legal
            .iter()
            .map(|&a| distance(a))
            .min()
            .unwrap_or(usize::MAX);
        self.candidates.clear();
        self.candidates
            .extend(legal.iter().copied().filter(|&a| distance(a) == best));
        (self.pick(), Rule::Centre)
    }
}

impl Policy for BoardHeuristic {
    fn paradigm(&self) -> Paradigm {
        Paradigm::Scripted
    }

    fn wants(&self) -> ObsRequest {
        ObsRequest::SYMBOLIC
    }

    fn reset(&mut self, ctx: &AgentContext) {
        self.rng = seeded(ctx.seed);
    }

    fn save_state(&self) -> Option<serde_json::Value> {
        rng::save_state(&self.rng)
    }

    fn load_state(&mut self, state: &serde_json::Value) -> Result<(), String> {
        self.rng = rng::load_state(state)?;
        Ok(())
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        let legal: Vec<usize> = obs.legal_actions().map(Action::index).collect();
        if legal.is_empty() {
            return Decision::act(Action(0));
        }
        let Some(board) = obs
            .symbolic
            .as_ref()
            .and_then(|planes| Board::from_planes(self.rules, planes))
        else {
            self.candidates = legal;
            let action = self.pick();
            return Decision::fallback(
                Action(action as u32),
                DecisionSource::Error,
                format!(
                    "the {} heuristic needs the symbolic observation of shape {:?}",
                    self.rules.name,
                    self.rules.symbolic_shape()
                ),
            );
        };
        let (action, rule) = self.choose(&board, &legal);
        Decision {
            action: Action(action as u32),
            source: DecisionSource::Policy,
            detail: Some(serde_json::json!({ "rule": rule.name() })),
        }
    }
}
