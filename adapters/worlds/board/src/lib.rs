//! Two-player turn-based board games won by a line of marks: Connect Four and tic-tac-toe.
//!
//! One generic implementation, [`BoardGame`], is parameterised by [`BoardRules`]; the two
//! games differ only in their rules value ([`CONNECT_FOUR`], [`TIC_TAC_TOE`]). Both follow
//! PettingZoo's semantics (`connect_four_v3`, `tictactoe_v3`): the first agent always moves
//! first, the winner gets +1 and the loser -1 on the final step, a full board without a line
//! is a draw (0 each), the mask of an agent whose turn it is not is all false, and the
//! symbolic view is PettingZoo's two planes (own marks, opponent's marks) in PettingZoo's
//! cell layout. The games have no randomness: every seed gives the same empty board.
//!
//! ```
//! use mosaic_board::{BoardGame, CONNECT_FOUR};
//! use mosaic_core::{Action, Environment, ObsRequest, Outcome, Transition};
//!
//! let mut game = BoardGame::new(&CONNECT_FOUR);
//! game.reset(0).unwrap();
//! let mut out = Transition::default();
//! // player_0 stacks column 1, player_1 stacks column 2: player_0 wins on its fourth piece.
//! for column in [0, 1, 0, 1, 0, 1, 0] {
//!     let mover = game.acting()[0];
//!     let mut actions = [None, None];
//!     actions[mover] = Some(Action(column));
//!     game.step(&actions, &mut out).unwrap();
//! }
//! assert_eq!(out.rewards, vec![1.0, -1.0]);
//! assert_eq!(game.outcome(), Some(vec![Outcome::Win, Outcome::Loss]));
//! assert!(game.acting().is_empty());
//! ```

mod heuristic;

pub use heuristic::BoardHeuristic;

use mosaic_core::canvas::Canvas;
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::registry::EnvKind;
use mosaic_core::{
    Action, AgentSpec, EnvError, EnvSpec, Environment, Event, Frame, ObsRequest, Observation,
    Outcome, Policy, Settings, Snapshot, Stepping, Tensor, Transition,
};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::sync::Arc;

/// How a move chooses its cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// The action names a column; the mark falls to the lowest empty cell (Connect Four).
    Drop,
    /// The action names any empty cell (tic-tac-toe).
    Cell,
}

/// How cells are numbered by cell actions and laid out in the symbolic tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellOrder {
    /// Row by row: tensor shape `[rows, cols, 2]`.
    RowMajor,
    /// Column by column: tensor shape `[cols, rows, 2]` (PettingZoo's tic-tac-toe).
    ColumnMajor,
}

/// How marks are drawn in frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkStyle {
    /// Coloured discs in a blue frame.
    Discs,
    /// Crosses and noughts on paper.
    CrossesAndNoughts,
}

/// Everything that distinguishes one line-forming board game from another.
#[derive(Debug, PartialEq, Eq)]
pub struct BoardRules {
    /// Registered name, e.g. `connect-four`.
    pub name: &'static str,
    /// Name shown to people and language models, e.g. `Connect Four`.
    pub title: &'static str,
    /// Rows (row 0 is drawn at the top).
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Marks in an unbroken line (horizontal, vertical or diagonal) needed to win.
    pub line: usize,
    /// What an action chooses.
    pub placement: Placement,
    /// Cell numbering and tensor layout.
    pub order: CellOrder,
    /// Agent slot names in turn order.
    pub agents: [&'static str; 2],
    /// The mark of each agent in text views.
    pub marks: [char; 2],
    /// How frames draw marks.
    pub style: MarkStyle,
}

/// Connect Four: 7 columns, 6 rows, four in a row; PettingZoo `connect_four_v3`.
pub const CONNECT_FOUR: BoardRules = BoardRules {
    name: "connect-four",
    title: "Connect Four",
    rows: 6,
    cols: 7,
    line: 4,
    placement: Placement::Drop,
    order: CellOrder::RowMajor,
    agents: ["player_0", "player_1"],
    marks: ['X', 'O'],
    style: MarkStyle::Discs,
};

/// Tic-tac-toe: 3x3, three in a row; PettingZoo `tictactoe_v3` (agents `player_1` and
/// `player_2`, cells numbered column by column).
pub const TIC_TAC_TOE: BoardRules = BoardRules {
    name: "tic-tac-toe",
    title: "Tic-tac-toe",
    rows: 3,
    cols: 3,
    line: 3,
    placement: Placement::Cell,
    order: CellOrder::ColumnMajor,
    agents: ["player_1", "player_2"],
    marks: ['X', 'O'],
    style: MarkStyle::CrossesAndNoughts,
};

/// The four line directions as (row step, column step).
const LINE_DIRECTIONS: [(isize, isize); 4] = [(0, 1), (1, 0), (1, 1), (1, -1)];

impl BoardRules {
    /// Number of discrete actions: one per column or one per cell.
    pub fn num_actions(&self) -> usize {
        match self.placement {
            Placement::Drop => self.cols,
            Placement::Cell => self.rows * self.cols,
        }
    }

    /// The (row, column) named by cell action `action` (cell games only).
    fn cell_of_action(&self, action: usize) -> (usize, usize) {
        match self.order {
            CellOrder::RowMajor => (action / self.cols, action % self.cols),
            CellOrder::ColumnMajor => (action % self.rows, action / self.rows),
        }
    }

    /// The label of `action`: `column 3` (counted from 1) or `cell b2` (column letter, row
    /// number counted from 1 at the top).
    ///
    /// ```
    /// use mosaic_board::{CONNECT_FOUR, TIC_TAC_TOE};
    /// assert_eq!(CONNECT_FOUR.action_label(2), "column 3");
    /// // tic-tac-toe numbers cells column by column, as PettingZoo does
    /// assert_eq!(TIC_TAC_TOE.action_label(1), "cell a2");
    /// assert_eq!(TIC_TAC_TOE.action_label(3), "cell b1");
    /// ```
    pub fn action_label(&self, action: usize) -> String {
        match self.placement {
            Placement::Drop => format!("column {}", action + 1),
            Placement::Cell => {
                let (row, col) = self.cell_of_action(action);
                format!("cell {}{}", column_letter(col), row + 1)
            }
        }
    }

    /// Shape of the symbolic tensor.
    pub fn symbolic_shape(&self) -> Vec<usize> {
        match self.order {
            CellOrder::RowMajor => vec![self.rows, self.cols, 2],
            CellOrder::ColumnMajor => vec![self.cols, self.rows, 2],
        }
    }

    /// Index of the (row, column) cell's first plane value in the symbolic tensor.
    fn symbolic_offset(&self, row: usize, col: usize) -> usize {
        match self.order {
            CellOrder::RowMajor => (row * self.cols + col) * 2,
            CellOrder::ColumnMajor => (col * self.rows + row) * 2,
        }
    }

    /// How far a move on (row, column) is from the centre (0 = central), in half cells:
    /// only the column counts where gravity chooses the row.
    fn distance_from_centre(&self, row: usize, col: usize) -> usize {
        let col_distance = (2 * col).abs_diff(self.cols - 1);
        match self.placement {
            Placement::Drop => col_distance,
            Placement::Cell => col_distance.max((2 * row).abs_diff(self.rows - 1)),
        }
    }

    /// The spec of a game with these rules.
    fn spec(&self) -> EnvSpec {
        EnvSpec {
            name: self.name.to_owned(),
            agents: self
                .agents
                .iter()
                .map(|id| AgentSpec {
                    id: (*id).to_owned(),
                    team: None,
                    role: None,
                })
                .collect(),
            action_labels: (0..self.num_actions())
                .map(|a| self.action_label(a))
                .collect(),
            default_action: Action(0),
            stepping: Stepping::Sequential,
            max_steps: Some((self.rows * self.cols) as u32),
            symbolic_shape: Some(self.symbolic_shape()),
            offers: ObsRequest::ALL,
            descriptions: Default::default(),
        }
    }
}

fn column_letter(col: usize) -> char {
    char::from(b'a' + col as u8)
}

/// A board position: which agent's mark, if any, is on each cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Board {
    rules: &'static BoardRules,
    /// Row-major, row 0 at the top; 0 is empty, `1 + agent index` is that agent's mark.
    cells: Vec<u8>,
}

impl Board {
    /// An empty board.
    pub fn new(rules: &'static BoardRules) -> Self {
        Self {
            rules,
            cells: vec![0; rules.rows * rules.cols],
        }
    }

    /// The rules this board is played by.
    pub fn rules(&self) -> &'static BoardRules {
        self.rules
    }

    /// The agent whose mark is on (row, column), if any.
    pub fn mark(&self, row: usize, col: usize) -> Option<usize> {
        match self.cells[row * self.rules.cols + col] {
            0 => None,
            mark => Some(usize::from(mark - 1)),
        }
    }

    /// The cell `action` would mark, or `None` when the action is out of range or its
    /// column or cell is full.
    pub fn target(&self, action: usize) -> Option<(usize, usize)> {
        if action >= self.rules.num_actions() {
            return None;
        }
        match self.rules.placement {
            Placement::Drop => (0..self.rules.rows)
                .rev()
                .find(|&row| self.mark(row, action).is_none())
                .map(|row| (row, action)),
            Placement::Cell => {
                let (row, col) = self.rules.cell_of_action(action);
                self.mark(row, col).is_none().then_some((row, col))
            }
        }
    }

    /// Puts `agent`'s mark on (row, column).
    fn put(&mut self, row: usize, col: usize, agent: usize) {
        self.cells[row * self.rules.cols + col] = agent as u8 + 1;
    }

    /// Whether a mark of `agent` on (row, column) is part of a winning line, counting that
    /// cell as `agent`'s whatever it holds now (so it also answers "would this move win?").
    pub fn completes_line(&self, row: usize, col: usize, agent: usize) -> bool {
        let run = |dr: isize, dc: isize| {
            let mut count = 0;
            let (mut r, mut c) = (row as isize + dr, col as isize + dc);
            while r >= 0
                && c >= 0
                && (r as usize) < self.rules.rows
                && (c as usize) < self.rules.cols
                && self.mark(r as usize, c as usize) == Some(agent)
            {
                count += 1;
                r += dr;
                c += dc;
            }
            count
        };
        LINE_DIRECTIONS
            .iter()
            .any(|&(dr, dc)| 1 + run(dr, dc) + run(-dr, -dc) >= self.rules.line)
    }

    /// Whether every cell is marked.
    pub fn is_full(&self) -> bool {
        self.cells.iter().all(|&c| c != 0)
    }

    /// Legal actions, in index order.
    pub fn legal_actions(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.rules.num_actions()).filter(|&a| self.target(a).is_some())
    }

    /// The board as `viewer` sees it in the symbolic tensor: plane 0 its own marks, plane 1
    /// the opponent's.
    pub fn to_planes(&self, viewer: usize) -> Tensor {
        let mut data = vec![0.0; self.cells.len() * 2];
        for row in 0..self.rules.rows {
            for col in 0..self.rules.cols {
                if let Some(agent) = self.mark(row, col) {
                    let plane = usize::from(agent != viewer);
                    data[self.rules.symbolic_offset(row, col) + plane] = 1.0;
                }
            }
        }
        Tensor {
            shape: self.rules.symbolic_shape(),
            data,
        }
    }

    /// Reads a symbolic tensor back: the viewer becomes agent 0, its opponent agent 1.
    /// `None` when the tensor does not have the rules' shape.
    pub fn from_planes(rules: &'static BoardRules, planes: &Tensor) -> Option<Self> {
        if planes.shape != rules.symbolic_shape()
            || planes.data.len() != rules.rows * rules.cols * 2
        {
            return None;
        }
        let mut board = Self::new(rules);
        for row in 0..rules.rows {
            for col in 0..rules.cols {
                let offset = rules.symbolic_offset(row, col);
                board.cells[row * rules.cols + col] = if planes.data[offset] > 0.5 {
                    1
                } else if planes.data[offset + 1] > 0.5 {
                    2
                } else {
                    0
                };
            }
        }
        Some(board)
    }
}

/// How a finished game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum GameResult {
    /// The agent with this index completed a line.
    Won(usize),
    /// The board filled up without a line.
    Draw,
}

/// What a snapshot holds.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SavedGame {
    game: String,
    cells: Vec<u8>,
    to_move: usize,
    steps: u32,
    result: Option<GameResult>,
    last_move: Option<(usize, usize)>,
}

/// Settings of the board games: none (the games have no variants); listed so a misspelt
/// setting is reported instead of ignored.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoardSettings {}

/// A two-player, alternating-turn board game played by [`BoardRules`].
#[derive(Clone, Debug)]
pub struct BoardGame {
    spec: EnvSpec,
    board: Board,
    to_move: usize,
    steps: u32,
    result: Option<GameResult>,
    last_move: Option<(usize, usize)>,
    started: bool,
}

/// Pixels per board cell in frames.
const CELL_PIXELS: u32 = 64;

impl BoardGame {
    /// A game by `rules`; call [`Environment::reset`] before playing.
    pub fn new(rules: &'static BoardRules) -> Self {
        Self {
            spec: rules.spec(),
            board: Board::new(rules),
            to_move: 0,
            steps: 0,
            result: None,
            last_move: None,
            started: false,
        }
    }

    /// A game by `rules` from experiment settings (which must be empty).
    pub fn from_settings(
        rules: &'static BoardRules,
        settings: &Settings,
    ) -> Result<Self, SpecError> {
        parse_settings::<BoardSettings>(settings)?;
        Ok(Self::new(rules))
    }

    /// The current position.
    pub fn board(&self) -> &Board {
        &self.board
    }

    fn rules(&self) -> &'static BoardRules {
        self.board.rules
    }

    fn running(&self) -> bool {
        self.started && self.result.is_none()
    }

    /// The action of the agent to move and the cell it marks, checking that nobody else
    /// acted and that the move is legal.
    fn checked_move(
        &self,
        actions: &[Option<Action>],
    ) -> Result<(usize, (usize, usize)), EnvError> {
        let agents = self.rules().agents.len();
        if actions.len() != agents {
            return Err(EnvError::InvalidAction {
                agent: self.to_move,
                reason: format!("{} actions given for {agents} agents", actions.len()),
            });
        }
        let other = 1 - self.to_move;
        if let Some(action) = actions[other] {
            return Err(EnvError::InvalidAction {
                agent: other,
                reason: format!(
                    "it is {}'s turn, not {}'s (action {})",
                    self.rules().agents[self.to_move],
                    self.rules().agents[other],
                    action.0
                ),
            });
        }
        let action = actions[self.to_move].ok_or_else(|| EnvError::InvalidAction {
            agent: self.to_move,
            reason: "no action given for the agent to move".to_owned(),
        })?;
        match self.board.target(action.index()) {
            Some(cell) => Ok((action.index(), cell)),
            None => {
                let reason = if action.index() >= self.rules().num_actions() {
                    format!(
                        "action {} is out of range (0..{})",
                        action.0,
                        self.rules().num_actions()
                    )
                } else {
                    format!("{} is not free", self.rules().action_label(action.index()))
                };
                Err(EnvError::InvalidAction {
                    agent: self.to_move,
                    reason,
                })
            }
        }
    }

    fn legal_mask(&self, agent: usize) -> Vec<bool> {
        let mut mask = vec![false; self.rules().num_actions()];
        if self.running() && agent == self.to_move {
            for action in self.board.legal_actions() {
                mask[action] = true;
            }
        }
        mask
    }

    /// The text view of `agent`: the board in ASCII, whose turn, own mark, legal moves.
    fn text(&self, agent: usize, legal: &[bool]) -> String {
        let rules = self.rules();
        let me = rules.agents[agent];
        let opponent = rules.agents[1 - agent];
        let mut text = String::with_capacity(512);
        let _ = writeln!(
            text,
            "{}: you are {me} and play {}; {opponent} plays {}.",
            rules.title,
            rules.marks[agent],
            rules.marks[1 - agent]
        );
        let how = match rules.placement {
            Placement::Drop => "Drop a mark into a column; it falls to the lowest free cell.",
            Placement::Cell => "Put a mark on any free cell.",
        };
        let _ = writeln!(
            text,
            "{how} {} in a row (horizontal, vertical or diagonal) wins.",
            rules.line
        );
        text.push('\n');
        self.draw_ascii(&mut text);
        text.push('\n');
        match self.result {
            Some(GameResult::Won(winner)) if winner == agent => {
                text.push_str("Game over: you won.\n");
            }
            Some(GameResult::Won(_)) => {
                let _ = writeln!(text, "Game over: {opponent} won.");
            }
            Some(GameResult::Draw) => text.push_str("Game over: draw.\n"),
            None if !self.started => text.push_str("The game has not started.\n"),
            None if self.to_move == agent => {
                let _ = writeln!(text, "It is your turn (move {}).", self.steps + 1);
            }
            None => {
                let _ = writeln!(text, "It is {opponent}'s turn (move {}).", self.steps + 1);
            }
        }
        let moves: Vec<String> = legal
            .iter()
            .enumerate()
            .filter(|(_, ok)| **ok)
            .map(|(a, _)| rules.action_label(a))
            .collect();
        if moves.is_empty() {
            text.push_str("Legal moves: none.\n");
        } else {
            let _ = writeln!(text, "Legal moves: {}.", moves.join(", "));
        }
        text
    }

    /// Column headers, then one line per row (`.` empty), row numbers for cell games.
    fn draw_ascii(&self, text: &mut String) {
        let rules = self.rules();
        let gutter = match rules.placement {
            Placement::Drop => "",
            Placement::Cell => "  ",
        };
        text.push_str(gutter);
        for col in 0..rules.cols {
            match rules.placement {
                Placement::Drop => text.push_str(&(col + 1).to_string()),
                Placement::Cell => text.push(column_letter(col)),
            }
            text.push(if col + 1 < rules.cols { ' ' } else { '\n' });
        }
        for row in 0..rules.rows {
            if rules.placement == Placement::Cell {
                let _ = write!(text, "{} ", row + 1);
            }
            for col in 0..rules.cols {
                text.push(self.board.mark(row, col).map_or('.', |a| rules.marks[a]));
                text.push(if col + 1 < rules.cols { ' ' } else { '\n' });
            }
        }
    }

    fn draw(&self) -> Frame {
        let rules = self.rules();
        let cell = CELL_PIXELS;
        let (width, height) = (cell * rules.cols as u32, cell * rules.rows as u32);
        let background = match rules.style {
            MarkStyle::Discs => [20, 70, 170],
            MarkStyle::CrossesAndNoughts => [250, 250, 245],
        };
        let mut canvas = Canvas::new(width, height, background);
        for row in 0..rules.rows {
            for col in 0..rules.cols {
                let (x, y) = (i64::from(cell) * col as i64, i64::from(cell) * row as i64);
                let mark = self.board.mark(row, col);
                match rules.style {
                    MarkStyle::Discs => draw_disc(&mut canvas, x, y, mark),
                    MarkStyle::CrossesAndNoughts => {
                        canvas.outline_rect(x, y, cell, cell, [40, 40, 40]);
                        draw_cross_or_nought(&mut canvas, x, y, mark, background);
                    }
                }
                if self.last_move == Some((row, col)) {
                    canvas.outline_rect(x + 2, y + 2, cell - 4, cell - 4, [40, 200, 90]);
                    canvas.outline_rect(x + 3, y + 3, cell - 6, cell - 6, [40, 200, 90]);
                }
            }
        }
        canvas.into_frame()
    }
}

fn draw_disc(canvas: &mut Canvas, x: i64, y: i64, mark: Option<usize>) {
    let colour = match mark {
        None => [235, 235, 235],
        Some(0) => [220, 40, 40],
        Some(_) => [245, 200, 30],
    };
    let half = CELL_PIXELS as f32 / 2.0;
    canvas.fill_circle(x as f32 + half, y as f32 + half, half * 0.8, colour);
}

fn draw_cross_or_nought(
    canvas: &mut Canvas,
    x: i64,
    y: i64,
    mark: Option<usize>,
    background: [u8; 3],
) {
    let cell = i64::from(CELL_PIXELS);
    let half = CELL_PIXELS as f32 / 2.0;
    match mark {
        None => {}
        Some(0) => {
            let ink = [30, 30, 30];
            let (start, end) = (cell / 5, cell - cell / 5);
            for t in start..end {
                canvas.fill_rect(x + t - 3, y + t - 3, 6, 6, ink);
                canvas.fill_rect(x + cell - 1 - t - 3, y + t - 3, 6, 6, ink);
            }
        }
        Some(_) => {
            let (cx, cy) = (x as f32 + half, y as f32 + half);
            canvas.fill_circle(cx, cy, half * 0.62, [200, 40, 40]);
            canvas.fill_circle(cx, cy, half * 0.45, background);
        }
    }
}

impl Environment for BoardGame {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// Starts from the empty board; the games have no randomness, so the seed is unused.
    fn reset(&mut self, _seed: u64) -> Result<(), EnvError> {
        self.board = Board::new(self.rules());
        self.to_move = 0;
        self.steps = 0;
        self.result = None;
        self.last_move = None;
        self.started = true;
        Ok(())
    }

    fn acting(&self) -> Vec<usize> {
        if self.running() {
            vec![self.to_move]
        } else {
            Vec::new()
        }
    }

    fn observe(&self, agent: usize, want: ObsRequest) -> Observation {
        let agents = self.rules().agents.len();
        let legal = if agent < agents {
            self.legal_mask(agent)
        } else {
            vec![false; self.rules().num_actions()]
        };
        let mut obs = Observation::with_mask(agent, legal);
        obs.step = self.steps;
        if agent >= agents {
            return obs;
        }
        if want.symbolic {
            obs.symbolic = Some(self.board.to_planes(agent));
        }
        if want.text {
            obs.text = Some(self.text(agent, &obs.legal));
        }
        if want.frame {
            obs.frame = Some(Arc::new(self.draw()));
        }
        obs
    }

    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError> {
        if !self.running() {
            return Err(EnvError::NotRunning);
        }
        let (action, (row, col)) = self.checked_move(actions)?;
        out.clear(self.rules().agents.len());
        let mover = self.to_move;
        self.board.put(row, col, mover);
        self.steps += 1;
        self.last_move = Some((row, col));
        let label = self.rules().action_label(action);
        if self.board.completes_line(row, col, mover) {
            self.result = Some(GameResult::Won(mover));
            out.rewards[mover] = 1.0;
            out.rewards[1 - mover] = -1.0;
            out.events.push(Event {
                kind: "win".to_owned(),
                agent: Some(mover),
                detail: Some(serde_json::json!({ "move": label })),
            });
        } else if self.board.is_full() {
            self.result = Some(GameResult::Draw);
            out.events.push(Event {
                kind: "draw".to_owned(),
                agent: None,
                detail: None,
            });
        }
        if self.result.is_some() {
            out.terminated.fill(true);
        } else {
            self.to_move = 1 - mover;
        }
        Ok(())
    }

    fn steps(&self) -> u32 {
        self.steps
    }

    fn render(&self) -> Option<Frame> {
        Some(self.draw())
    }

    fn outcome(&self) -> Option<Vec<Outcome>> {
        match self.result? {
            GameResult::Won(0) => Some(vec![Outcome::Win, Outcome::Loss]),
            GameResult::Won(_) => Some(vec![Outcome::Loss, Outcome::Win]),
            GameResult::Draw => Some(vec![Outcome::Draw, Outcome::Draw]),
        }
    }

    fn metrics(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut metrics = serde_json::Map::new();
        metrics.insert("moves".to_owned(), self.steps.into());
        let winner = match self.result {
            Some(GameResult::Won(agent)) => self.rules().agents[agent].into(),
            Some(GameResult::Draw) => "draw".into(),
            None => serde_json::Value::Null,
        };
        metrics.insert("winner".to_owned(), winner);
        metrics
    }

    fn snapshot(&self) -> Option<Snapshot> {
        let saved = SavedGame {
            game: self.rules().name.to_owned(),
            cells: self.board.cells.clone(),
            to_move: self.to_move,
            steps: self.steps,
            result: self.result,
            last_move: self.last_move,
        };
        serde_json::to_vec(&saved).ok().map(Snapshot)
    }

    fn restore(&mut self, snapshot: &Snapshot) -> Result<(), EnvError> {
        let saved: SavedGame = serde_json::from_slice(&snapshot.0)
            .map_err(|e| EnvError::Restore(format!("{} snapshot: {e}", self.rules().name)))?;
        let rules = self.rules();
        let bad = |what: String| {
            Err(EnvError::Restore(format!(
                "{} snapshot: {what}",
                rules.name
            )))
        };
        if saved.game != rules.name {
            return bad(format!("it is a `{}` snapshot", saved.game));
        }
        if saved.cells.len() != rules.rows * rules.cols {
            return bad(format!(
                "{} cells, the board has {}",
                saved.cells.len(),
                rules.rows * rules.cols
            ));
        }
        if let Some(mark) = saved.cells.iter().find(|&&c| c > 2) {
            return bad(format!("cell value {mark} (0, 1 or 2 expected)"));
        }
        if saved.to_move > 1 || matches!(saved.result, Some(GameResult::Won(w)) if w > 1) {
            return bad("agent index out of range".to_owned());
        }
        if saved
            .last_move
            .is_some_and(|(row, col)| row >= rules.rows || col >= rules.cols)
        {
            return bad("last move outside the board".to_owned());
        }
        self.board.cells = saved.cells;
        self.to_move = saved.to_move;
        self.steps = saved.steps;
        self.result = saved.result;
        self.last_move = saved.last_move;
        self.started = true;
        Ok(())
    }
}

/// The board games' kinds of the environment registry.
pub const KINDS: [EnvKind; 2] = [
    EnvKind {
        name: "connect-four",
        summary: "Connect Four, 7x6, two players taking turns (PettingZoo connect_four_v3)",
        settings: &[],
        make: make_connect_four,
        scripted: Some(scripted_connect_four),
    },
    EnvKind {
        name: "tic-tac-toe",
        summary: "tic-tac-toe, 3x3, two players taking turns (PettingZoo tictactoe_v3)",
        settings: &[],
        make: make_tic_tac_toe,
        scripted: Some(scripted_tic_tac_toe),
    },
];

/// Registry constructor of `connect-four`.
pub fn make_connect_four(settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    Ok(Box::new(BoardGame::from_settings(&CONNECT_FOUR, settings)?))
}

/// Registry constructor of `tic-tac-toe`.
pub fn make_tic_tac_toe(settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    Ok(Box::new(BoardGame::from_settings(&TIC_TAC_TOE, settings)?))
}

/// Registry constructor of the Connect Four heuristic.
pub fn scripted_connect_four(
    env_settings: &Settings,
    slot_settings: &Settings,
) -> Result<Box<dyn Policy>, SpecError> {
    parse_settings::<BoardSettings>(env_settings)?;
    Ok(Box::new(BoardHeuristic::from_settings(
        &CONNECT_FOUR,
        slot_settings,
    )?))
}

/// Registry constructor of the tic-tac-toe heuristic.
pub fn scripted_tic_tac_toe(
    env_settings: &Settings,
    slot_settings: &Settings,
) -> Result<Box<dyn Policy>, SpecError> {
    parse_settings::<BoardSettings>(env_settings)?;
    Ok(Box::new(BoardHeuristic::from_settings(
        &TIC_TAC_TOE,
        slot_settings,
    )?))
}

#[cfg(test)]
mod tests;
