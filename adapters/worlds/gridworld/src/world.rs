//! The MiniGrid world model: tiles and their encoding, the grid, directions and the
//! agent's egocentric view with MiniGrid's occlusion rule.

use serde::{Deserialize, Serialize};

/// Colours, in MiniGrid's encoding order (red = 0 ... grey = 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Colour {
    /// Red.
    Red,
    /// Green.
    Green,
    /// Blue.
    Blue,
    /// Purple.
    Purple,
    /// Yellow.
    Yellow,
    /// Grey.
    Grey,
}

impl Colour {
    /// Every colour in encoding order.
    pub const ALL: [Colour; 6] = [
        Colour::Red,
        Colour::Green,
        Colour::Blue,
        Colour::Purple,
        Colour::Yellow,
        Colour::Grey,
    ];

    /// Lower-case name, as in missions.
    pub fn name(self) -> &'static str {
        match self {
            Colour::Red => "red",
            Colour::Green => "green",
            Colour::Blue => "blue",
            Colour::Purple => "purple",
            Colour::Yellow => "yellow",
            Colour::Grey => "grey",
        }
    }

    /// The colour called `name`.
    pub fn from_name(name: &str) -> Option<Colour> {
        Colour::ALL.into_iter().find(|c| c.name() == name)
    }

    /// MiniGrid's colour index.
    pub fn index(self) -> u8 {
        self as u8
    }

    /// RGB used in frames (MiniGrid's palette).
    pub fn rgb(self) -> [u8; 3] {
        match self {
            Colour::Red => [255, 0, 0],
            Colour::Green => [0, 255, 0],
            Colour::Blue => [0, 0, 255],
            Colour::Purple => [112, 39, 195],
            Colour::Yellow => [255, 255, 0],
            Colour::Grey => [100, 100, 100],
        }
    }
}

/// Objects the agent can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// Opens the locked door of its colour.
    Key,
    /// A ball.
    Ball,
    /// A box (toggling it opens it and it vanishes: boxes here are empty).
    Box,
}

impl ItemKind {
    /// Every kind, in the order MiniGrid's GoToObject draws from.
    pub const ALL: [ItemKind; 3] = [ItemKind::Key, ItemKind::Ball, ItemKind::Box];

    /// Lower-case name, as in missions.
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::Key => "key",
            ItemKind::Ball => "ball",
            ItemKind::Box => "box",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<ItemKind> {
        ItemKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// A carryable object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Item {
    /// What it is.
    pub kind: ItemKind,
    /// Its colour.
    pub colour: Colour,
}

impl Item {
    /// `yellow key`.
    pub fn describe(self) -> String {
        format!("{} {}", self.colour.name(), self.kind.name())
    }
}

/// A door's state, in MiniGrid's encoding order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DoorState {
    /// Passable, see-through.
    Open,
    /// Opens with `toggle`.
    Closed,
    /// Opens with `toggle` while carrying the key of its colour.
    Locked,
}

/// What occupies one grid cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tile {
    /// Free floor.
    Empty,
    /// A (grey) wall.
    Wall,
    /// The green goal square.
    Goal,
    /// A door.
    Door {
        /// Its colour.
        colour: Colour,
        /// Open, closed or locked.
        state: DoorState,
    },
    /// An object lying on the floor.
    Item(Item),
}

/// MiniGrid's object indices.
mod object_index {
    pub(super) const UNSEEN: u8 = 0;
    pub(super) const EMPTY: u8 = 1;
    pub(super) const WALL: u8 = 2;
    pub(super) const DOOR: u8 = 4;
    pub(super) const KEY: u8 = 5;
    pub(super) const BALL: u8 = 6;
    pub(super) const BOX: u8 = 7;
    pub(super) const GOAL: u8 = 8;
}

impl Tile {
    /// Whether the agent can stand here.
    pub fn can_overlap(self) -> bool {
        matches!(
            self,
            Tile::Empty
                | Tile::Goal
                | Tile::Door {
                    state: DoorState::Open,
                    ..
                }
        )
    }

    /// Whether the agent sees past this cell (walls and closed doors block the view).
    pub fn see_behind(self) -> bool {
        match self {
            Tile::Wall => false,
            Tile::Door { state, .. } => state == DoorState::Open,
            _ => true,
        }
    }

    /// MiniGrid's `(object, colour, state)` encoding.
    ///
    /// ```
    /// use mosaic_gridworld::{Colour, DoorState, Tile};
    /// let door = Tile::Door { colour: Colour::Yellow, state: DoorState::Locked };
    /// assert_eq!(door.encode(), [4, 4, 2]);
    /// assert_eq!(Tile::decode(door.encode()), Some(door));
    /// assert_eq!(Tile::decode([0, 0, 0]), None); // unseen
    /// ```
    pub fn encode(self) -> [u8; 3] {
        match self {
            Tile::Empty => [object_index::EMPTY, 0, 0],
            Tile::Wall => [object_index::WALL, Colour::Grey.index(), 0],
            Tile::Goal => [object_index::GOAL, Colour::Green.index(), 0],
            Tile::Door { colour, state } => [object_index::DOOR, colour.index(), state as u8],
            Tile::Item(Item { kind, colour }) => {
                let object = match kind {
                    ItemKind::Key => object_index::KEY,
                    ItemKind::Ball => object_index::BALL,
                    ItemKind::Box => object_index::BOX,
                };
                [object, colour.index(), 0]
            }
        }
    }

    /// The tile of an encoding; `None` for unseen cells and codes this world does not use.
    pub fn decode(code: [u8; 3]) -> Option<Tile> {
        let [object, colour, state] = code;
        let colour = *Colour::ALL.get(usize::from(colour))?;
        let item = |kind| Some(Tile::Item(Item { kind, colour }));
        match object {
            object_index::EMPTY => Some(Tile::Empty),
            object_index::WALL => Some(Tile::Wall),
            object_index::GOAL => Some(Tile::Goal),
            object_index::DOOR => {
                let state = match state {
                    0 => DoorState::Open,
                    1 => DoorState::Closed,
                    2 => DoorState::Locked,
                    _ => return None,
                };
                Some(Tile::Door { colour, state })
            }
            object_index::KEY => item(ItemKind::Key),
            object_index::BALL => item(ItemKind::Ball),
            object_index::BOX => item(ItemKind::Box),
            _ => None,
        }
    }

    /// `a locked yellow door`, `the green goal`, `empty floor`.
    pub fn describe(self) -> String {
        match self {
            Tile::Empty => "empty floor".to_owned(),
            Tile::Wall => "a wall".to_owned(),
            Tile::Goal => "the green goal square".to_owned(),
            Tile::Door { colour, state } => {
                let state = match state {
                    DoorState::Open => "an open",
                    DoorState::Closed => "a closed",
                    DoorState::Locked => "a locked",
                };
                format!("{state} {} door", colour.name())
            }
            Tile::Item(item) => format!("a {}", item.describe()),
        }
    }
}

/// A grid position; `x` grows east, `y` grows south, (0, 0) is the north-west corner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Pos {
    /// Column.
    pub x: i32,
    /// Row.
    pub y: i32,
}

impl Pos {
    /// The position at (x, y).
    pub const fn new(x: i32, y: i32) -> Self {
        Self { x, y }
    }

    /// The neighbour one step in `direction`.
    pub fn step(self, direction: u8) -> Pos {
        let (dx, dy) = direction_vector(direction);
        Pos::new(self.x + dx, self.y + dy)
    }

    /// Manhattan distance.
    pub fn distance(self, other: Pos) -> u32 {
        self.x.abs_diff(other.x) + self.y.abs_diff(other.y)
    }
}

/// MiniGrid's direction vectors: 0 = east, 1 = south, 2 = west, 3 = north.
pub fn direction_vector(direction: u8) -> (i32, i32) {
    match direction % 4 {
        0 => (1, 0),
        1 => (0, 1),
        2 => (-1, 0),
        _ => (0, -1),
    }
}

/// `east`, `south`, `west`, `north`.
pub fn direction_name(direction: u8) -> &'static str {
    match direction % 4 {
        0 => "east",
        1 => "south",
        2 => "west",
        _ => "north",
    }
}

/// A square grid of tiles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grid {
    size: i32,
    tiles: Vec<Tile>,
}

impl Grid {
    /// A `size` x `size` grid of empty floor.
    pub fn new(size: i32) -> Self {
        Self {
            size,
            tiles: vec![Tile::Empty; (size * size).max(0) as usize],
        }
    }

    /// Side length.
    pub fn size(&self) -> i32 {
        self.size
    }

    /// Whether `pos` lies on the grid.
    pub fn contains(&self, pos: Pos) -> bool {
        pos.x >= 0 && pos.y >= 0 && pos.x < self.size && pos.y < self.size
    }

    /// The tile at `pos`; outside the grid is wall (as MiniGrid's view slicing has it).
    pub fn get(&self, pos: Pos) -> Tile {
        if self.contains(pos) {
            self.tiles[(pos.y * self.size + pos.x) as usize]
        } else {
            Tile::Wall
        }
    }

    /// Sets the tile at `pos` (ignored outside the grid).
    pub fn set(&mut self, pos: Pos, tile: Tile) {
        if self.contains(pos) {
            self.tiles[(pos.y * self.size + pos.x) as usize] = tile;
        }
    }

    /// Walls all around the border.
    pub fn wall_border(&mut self) {
        for i in 0..self.size {
            for pos in [
                Pos::new(i, 0),
                Pos::new(i, self.size - 1),
                Pos::new(0, i),
                Pos::new(self.size - 1, i),
            ] {
                self.set(pos, Tile::Wall);
            }
        }
    }

    /// Whether the stored tile count matches the size (checked on restore).
    pub(crate) fn is_consistent(&self) -> bool {
        self.size > 0 && self.tiles.len() == (self.size * self.size) as usize
    }
}

/// Side length of the agent's view (MiniGrid's default `agent_view_size`).
pub const VIEW: usize = 7;
/// The agent's own cell in view coordinates: bottom row, middle column.
pub(crate) const VIEW_AGENT: (usize, usize) = (VIEW / 2, VIEW - 1);

/// The world position of view cell (`vx`, `vy`) for an agent at `pos` facing `direction`:
/// `vy` counts rows towards the agent (row 6 is its own), `vx` columns left to right.
pub fn view_to_world(pos: Pos, direction: u8, vx: usize, vy: usize) -> Pos {
    let (dx, dy) = direction_vector(direction);
    let (rx, ry) = (-dy, dx);
    let forward = (VIEW - 1 - vy) as i32;
    let right = vx as i32 - (VIEW / 2) as i32;
    Pos::new(
        pos.x + dx * forward + rx * right,
        pos.y + dy * forward + ry * right,
    )
}

/// What the agent sees: `cells[vx][vy]`, `None` where the view is occluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// Visible tiles indexed `[vx][vy]`; the agent's own cell shows what it carries.
    pub cells: [[Option<Tile>; VIEW]; VIEW],
}

impl View {
    /// The view of an agent at `pos` facing `direction` carrying `carrying`. Unless
    /// `see_through_walls`, cells hidden behind walls and closed doors are occluded by
    /// MiniGrid's row sweep (`Grid.process_vis`).
    pub fn of(
        grid: &Grid,
        pos: Pos,
        direction: u8,
        carrying: Option<Item>,
        see_through_walls: bool,
    ) -> View {
        let mut tiles = [[Tile::Empty; VIEW]; VIEW];
        for (vx, column) in tiles.iter_mut().enumerate() {
            for (vy, tile) in column.iter_mut().enumerate() {
                *tile = grid.get(view_to_world(pos, direction, vx, vy));
            }
        }
        let visible = if see_through_walls {
            [[true; VIEW]; VIEW]
        } else {
            visibility(&tiles)
        };
        let mut cells = [[None; VIEW]; VIEW];
        for vx in 0..VIEW {
            for vy in 0..VIEW {
                if visible[vx][vy] {
                    cells[vx][vy] = Some(tiles[vx][vy]);
                }
            }
        }
        let (ax, ay) = VIEW_AGENT;
        cells[ax][ay] = Some(carrying.map_or(Tile::Empty, Tile::Item));
        View { cells }
    }

    /// The tile `forward` cells ahead and `right` cells to the right (negative: left).
    pub fn relative(&self, forward: i32, right: i32) -> Option<Tile> {
        let vx = VIEW_AGENT.0 as i32 + right;
        let vy = VIEW_AGENT.1 as i32 - forward;
        if (0..VIEW as i32).contains(&vx) && (0..VIEW as i32).contains(&vy) {
            self.cells[vx as usize][vy as usize]
        } else {
            None
        }
    }

    /// Writes MiniGrid's `image` array (`[vx][vy][channel]`, C order) into `out`.
    pub fn encode_into(&self, out: &mut Vec<f32>) {
        for column in &self.cells {
            for cell in column {
                let code = cell.map_or([object_index::UNSEEN, 0, 0], Tile::encode);
                out.extend(code.map(f32::from));
            }
        }
    }
}

/// MiniGrid's visibility sweep over a view (`[vx][vy]`): from the agent's row upwards,
/// light spreads sideways and one row ahead from every visible cell that can be seen
/// past, first left to right, then right to left.
fn visibility(tiles: &[[Tile; VIEW]; VIEW]) -> [[bool; VIEW]; VIEW] {
    let mut mask = [[false; VIEW]; VIEW];
    let (ax, ay) = VIEW_AGENT;
    mask[ax][ay] = true;
    for j in (0..VIEW).rev() {
        for i in 0..VIEW - 1 {
            if !mask[i][j] || !tiles[i][j].see_behind() {
                continue;
            }
            mask[i + 1][j] = true;
            if j > 0 {
                mask[i + 1][j - 1] = true;
                mask[i][j - 1] = true;
            }
        }
        for i in (1..VIEW).rev() {
            if !mask[i][j] || !tiles[i][j].see_behind() {
                continue;
            }
            mask[i - 1][j] = true;
            if j > 0 {
                mask[i - 1][j - 1] = true;
                mask[i][j - 1] = true;
            }
        }
    }
    mask
}
