//! Where the popover goes, pure so it is table-tested: its rectangle on a screen (under what
//! it opens under, inside the work area), and on a Mac which screen, in points, from the
//! rectangles and scale factors a Mac reports (`window.rs` asks the OS and moves the window).
//!
//! What tao 0.37 and tray-icon 0.25 give on macOS, and why the popover is placed in points:
//! - the tray icon's rectangle is the status item's frame in CoreGraphics' global space (points,
//!   y down from the top of the main screen), multiplied by the scale factor of the screen its
//!   menu bar is on (`platform_impl/macos/mod.rs`);
//! - a monitor's position and work area are its points multiplied by its *own* scale factor, so
//!   the numbers of two screens of different scales share no coordinate space;
//! - `monitor_from_point` compares with `CGDisplayBounds`, which are points, and a physical
//!   position set on a window is divided by the window's *current* scale factor.
//!
//! So on a Retina laptop (2×) with an external screen (1×) to its right, the tray's physical x
//! falls on the external screen, and a position computed in one screen's pixels lands on
//! another. Everything here is turned into points first, where every screen shares one space,
//! and the window is placed with logical (point) values, which tao passes through unchanged.

// Only the macOS build places the popover in points; the rules are tested everywhere.
#![cfg_attr(not(target_os = "macos"), allow(dead_code))]

/// The popover's size in logical pixels (`tauri.conf.json`), and its distance from the edges
/// of the screen and from what it opens under.
const SIZE: (f64, f64) = (380.0, 560.0);
const MARGIN: f64 = 8.0;

/// A rectangle in physical pixels: x, y, width, height (y down from the top of the main
/// screen, as tao and tray-icon give them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect(pub f64, pub f64, pub f64, pub f64);

/// What the popover opens under: the bottom centre of the tray icon's rectangle (macOS:
/// tray-icon reports the status item's top left and its size, so the bottom is y + height,
/// not y), or, with no rectangle (shown before any tray event, `--show`, a second launch,
/// Linux without a pointer), the top right of the work area: under the menu bar at the right.
pub fn anchor(under: Option<Rect>, area: Rect) -> (f64, f64) {
    match under {
        Some(Rect(x, y, w, h)) => (x + w / 2.0, y + h),
        None => (area.0 + area.2, area.1),
    }
}

/// Where the popover goes on a screen whose work area (without the menu bar, the Dock or
/// panels) is `area`, at `scale` physical pixels per logical one, opening under `at` (see
/// [`anchor`]): just below it and centred on it, moved (and, on a small screen, shrunk) so
/// that all of it stays inside the work area. Returns the window's rectangle in physical
/// pixels.
pub fn placement(area: Rect, scale: f64, at: (f64, f64)) -> Rect {
    let Rect(ax, ay, aw, ah) = area;
    let margin = MARGIN * scale;
    let w = (SIZE.0 * scale).min(aw - 2.0 * margin).max(1.0);
    let h = (SIZE.1 * scale).min(ah - 2.0 * margin).max(1.0);
    let clamp = |v: f64, lo: f64, hi: f64| v.max(lo).min(hi.max(lo));
    let x = clamp(at.0 - w / 2.0, ax + margin, ax + aw - margin - w);
    let y = clamp(at.1 + margin, ay + margin, ay + ah - margin - h);
    Rect(x.round(), y.round(), w.round(), h.round())
}

/// A screen as Tauri reports it on macOS: its bounds and its work area (without the menu bar
/// and the Dock; a notch's band included in the menu bar) in physical pixels at its own
/// `scale`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Screen {
    /// Its bounds, physical.
    pub bounds: Rect,
    /// Its work area, physical.
    pub work_area: Rect,
    /// Its scale factor (`backingScaleFactor`).
    pub scale: f64,
}

impl Rect {
    /// This rectangle divided by `scale`: physical pixels to points.
    pub fn points(self, scale: f64) -> Rect {
        let Rect(x, y, w, h) = self;
        Rect(x / scale, y / scale, w / scale, h / scale)
    }
}

impl Screen {
    fn bounds_points(&self) -> Rect {
        self.bounds.points(self.scale)
    }

    /// True when `item` (points) is a status item of this screen's menu bar: its centre is
    /// over the screen's width and its top is at the top edge of the screen (or one item's
    /// height above it, where an auto-hidden menu bar parks it).
    fn holds_menu_item(&self, item: Rect) -> bool {
        let Rect(x, y, w, _) = self.bounds_points();
        let Rect(ix, iy, iw, ih) = item;
        let centre = ix + iw / 2.0;
        let slack = ih.max(1.0);
        (x..x + w).contains(&centre) && iy >= y - slack && iy <= y + slack
    }

    /// True when this screen shows a menu bar (its work area starts below its top) as high as
    /// `item` (points), within two points: an item read at another screen's scale is half or
    /// twice as high.
    fn menu_bar_as_high_as(&self, item: Rect) -> bool {
        let bar = self.work_area.points(self.scale).1 - self.bounds_points().1;
        bar > 0.0 && (item.3 - bar).abs() <= 2.0
    }

    fn contains_centre(&self, item: Rect) -> bool {
        let Rect(x, y, w, h) = self.bounds_points();
        let Rect(ix, iy, iw, ih) = item;
        let (cx, cy) = (ix + iw / 2.0, iy + ih / 2.0);
        (x..x + w).contains(&cx) && (y..y + h).contains(&cy)
    }
}

/// The screen of the status item whose frame tray-icon gave as `tray` (physical, at that
/// screen's scale), and the frame in points: the screen whose menu bar it sits in, each screen
/// tried at its own scale; where two could hold it (a 2× laptop with a 1× screen to its right:
/// an item on the external menu bar below about twice the laptop's width, read at 2×, lands
/// on the laptop's menu bar), the one whose menu bar is as high as the item at that scale;
/// else the screen holding its centre.
pub fn tray_screen(tray: Rect, screens: &[Screen]) -> Option<(Screen, Rect)> {
    let at_own_scale = |s: &Screen| (*s, tray.points(s.scale));
    let holding: Vec<(Screen, Rect)> = screens
        .iter()
        .map(at_own_scale)
        .filter(|(s, item)| s.holds_menu_item(*item))
        .collect();
    holding
        .iter()
        .find(|(s, item)| s.menu_bar_as_high_as(*item))
        .or(holding.first())
        .copied()
        .or_else(|| {
            screens
                .iter()
                .map(at_own_scale)
                .find(|(s, item)| s.contains_centre(*item))
        })
}

/// Where the popover goes, in points: under the tray icon on the screen whose menu bar holds
/// it, else at the top right of the main screen's work area, wholly inside the work area.
/// `None` without any screen.
pub fn popover_in_points(
    tray: Option<Rect>,
    screens: &[Screen],
    main: Option<&Screen>,
) -> Option<Rect> {
    let found = tray.and_then(|t| tray_screen(t, screens));
    let (screen, under) = match found {
        Some((screen, item)) => (screen, Some(item)),
        None => (*main.or(screens.first())?, None),
    };
    let area = screen.work_area.points(screen.scale);
    Some(placement(area, 1.0, anchor(under, area)))
}

#[cfg(test)]
mod tests;
