//! A small raster canvas shared by the native environments' renderers.

use crate::Frame;

/// The colour that marks a person's agents ([`crate::Environment::render_marked`]):
/// magenta, which no native world draws with.
pub const MARK: [u8; 3] = [255, 0, 255];

/// What people call [`MARK`].
pub const MARK_NAME: &str = "magenta";

/// The on-screen name of a direction counted like [`Canvas::agent_triangle`]'s (0 = east,
/// 1 = south, 2 = west, 3 = north): `right`, `down`, `left`, `up`, what worlds whose agents
/// turn and move forward put under [`crate::FACING_INFO`].
pub fn screen_direction(direction: u8) -> &'static str {
    match direction % 4 {
        0 => "right",
        1 => "down",
        2 => "left",
        _ => "up",
    }
}

/// An RGB drawing surface.
#[derive(Clone, Debug)]
pub struct Canvas {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Canvas {
    /// A canvas filled with `background`.
    pub fn new(width: u32, height: u32, background: [u8; 3]) -> Self {
        let Frame { rgb, .. } = Frame::filled(width, height, background);
        Self { width, height, rgb }
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Sets one pixel; outside the canvas is ignored.
    pub fn put(&mut self, x: i64, y: i64, colour: [u8; 3]) {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return;
        }
        let i = (y as usize * self.width as usize + x as usize) * 3;
        self.rgb[i..i + 3].copy_from_slice(&colour);
    }

    /// Fills the rectangle with top-left corner (x, y), clipped to the canvas.
    pub fn fill_rect(&mut self, x: i64, y: i64, w: u32, h: u32, colour: [u8; 3]) {
        let x0 = x.clamp(0, i64::from(self.width)) as usize;
        let x1 = (x + i64::from(w)).clamp(0, i64::from(self.width)) as usize;
        let y0 = y.clamp(0, i64::from(self.height)) as usize;
        let y1 = (y + i64::from(h)).clamp(0, i64::from(self.height)) as usize;
        if x0 == x1 || y0 == y1 {
            return;
        }
        // Paint the first row pixel by pixel, then copy it down (memcpy per row).
        let start = (y0 * self.width as usize + x0) * 3;
        let end = (y0 * self.width as usize + x1) * 3;
        for px in self.rgb[start..end].chunks_exact_mut(3) {
            px.copy_from_slice(&colour);
        }
        for row in y0 + 1..y1 {
            self.rgb
                .copy_within(start..end, (row * self.width as usize + x0) * 3);
        }
    }

    /// Draws a one-pixel outline of the rectangle.
    pub fn outline_rect(&mut self, x: i64, y: i64, w: u32, h: u32, colour: [u8; 3]) {
        self.fill_rect(x, y, w, 1, colour);
        self.fill_rect(x, y + i64::from(h) - 1, w, 1, colour);
        self.fill_rect(x, y, 1, h, colour);
        self.fill_rect(x + i64::from(w) - 1, y, 1, h, colour);
    }

    /// Fills a disc centred at (cx, cy).
    pub fn fill_circle(&mut self, cx: f32, cy: f32, radius: f32, colour: [u8; 3]) {
        let r2 = radius * radius;
        let (x0, x1) = ((cx - radius).floor() as i64, (cx + radius).ceil() as i64);
        let (y0, y1) = ((cy - radius).floor() as i64, (cy + radius).ceil() as i64);
        for y in y0..=y1 {
            for x in x0..=x1 {
                let (dx, dy) = (x as f32 + 0.5 - cx, y as f32 + 0.5 - cy);
                if dx * dx + dy * dy <= r2 {
                    self.put(x, y, colour);
                }
            }
        }
    }

    /// Fills the triangle with the given corners (pixel coordinates).
    pub fn fill_triangle(&mut self, corners: [(f32, f32); 3], colour: [u8; 3]) {
        let [a, b, c] = corners;
        let edge = |p: (f32, f32), q: (f32, f32), x: f32, y: f32| {
            (q.0 - p.0) * (y - p.1) - (q.1 - p.1) * (x - p.0)
        };
        let min_x = a.0.min(b.0).min(c.0).floor() as i64;
        let max_x = a.0.max(b.0).max(c.0).ceil() as i64;
        let min_y = a.1.min(b.1).min(c.1).floor() as i64;
        let max_y = a.1.max(b.1).max(c.1).ceil() as i64;
        for y in min_y..=max_y {
            for x in min_x..=max_x {
                let (px, py) = (x as f32 + 0.5, y as f32 + 0.5);
                let (e0, e1, e2) = (edge(a, b, px, py), edge(b, c, px, py), edge(c, a, px, py));
                let inside =
                    (e0 >= 0.0 && e1 >= 0.0 && e2 >= 0.0) || (e0 <= 0.0 && e1 <= 0.0 && e2 <= 0.0);
                if inside {
                    self.put(x, y, colour);
                }
            }
        }
    }

    /// Fills a triangle inscribed in the tile at (x, y) of size `tile`, pointing in
    /// `direction` (0 = east, 1 = south, 2 = west, 3 = north): how grid agents are drawn.
    pub fn agent_triangle(&mut self, x: i64, y: i64, tile: u32, direction: u8, colour: [u8; 3]) {
        let t = tile as f32;
        let (ox, oy) = (x as f32, y as f32);
        let local = match direction % 4 {
            0 => [(0.15, 0.15), (0.85, 0.5), (0.15, 0.85)],
            1 => [(0.15, 0.15), (0.85, 0.15), (0.5, 0.85)],
            2 => [(0.85, 0.15), (0.15, 0.5), (0.85, 0.85)],
            _ => [(0.15, 0.85), (0.5, 0.15), (0.85, 0.85)],
        };
        let corners = local.map(|(u, v)| (ox + u * t, oy + v * t));
        self.fill_triangle(corners, colour);
    }

    /// Marks the tile at (x, y) of size `tile` as a person's: an outline in [`MARK`] along
    /// its edge, `tile / 8` pixels thick (at least one), outside the inscribed sprite of
    /// [`Canvas::agent_triangle`].
    pub fn mark_tile(&mut self, x: i64, y: i64, tile: u32) {
        for k in 0..(tile / 8).max(1) {
            let inset = i64::from(k);
            self.outline_rect(
                x + inset,
                y + inset,
                tile.saturating_sub(2 * k),
                tile.saturating_sub(2 * k),
                MARK,
            );
        }
    }

    /// The finished frame.
    pub fn into_frame(self) -> Frame {
        Frame {
            width: self.width,
            height: self.height,
            rgb: self.rgb,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_stay_inside_and_colour_pixels() {
        let mut c = Canvas::new(16, 16, [0, 0, 0]);
        c.fill_rect(-4, -4, 8, 8, [255, 0, 0]);
        c.fill_circle(12.0, 12.0, 3.0, [0, 255, 0]);
        c.agent_triangle(8, 0, 8, 0, [0, 0, 255]);
        let f = c.into_frame();
        f.validate().unwrap();
        let px = |x: usize, y: usize| &f.rgb[(y * 16 + x) * 3..(y * 16 + x) * 3 + 3];
        assert_eq!(px(0, 0), [255, 0, 0]);
        assert_eq!(px(5, 5), [0, 0, 0]);
        assert_eq!(px(12, 12), [0, 255, 0]);
        assert_eq!(px(11, 4), [0, 0, 255]);
    }

    #[test]
    fn a_marked_tile_is_framed_in_the_mark_colour_around_its_sprite() {
        let mut c = Canvas::new(32, 32, [0, 0, 0]);
        c.agent_triangle(0, 0, 16, 0, [255, 0, 0]);
        c.mark_tile(0, 0, 16);
        let f = c.into_frame();
        let px = |x: usize, y: usize| &f.rgb[(y * 32 + x) * 3..(y * 32 + x) * 3 + 3];
        for (x, y) in [(0, 0), (1, 1), (15, 8), (14, 8), (8, 15), (0, 15)] {
            assert_eq!(px(x, y), MARK, "({x}, {y}) on the outline");
        }
        assert_eq!(px(5, 8), [255, 0, 0], "the sprite stays visible");
        assert_eq!(px(16, 16), [0, 0, 0], "nothing outside the tile");
        assert_eq!(px(13, 2), [0, 0, 0], "two pixels thick for 16-pixel tiles");
    }

    #[test]
    fn screen_directions_follow_the_agent_triangle() {
        let names: Vec<_> = (0..5).map(screen_direction).collect();
        assert_eq!(names, ["right", "down", "left", "up", "right"]);
    }
}
