//! The popover's place on a Mac, from the rectangles and scale factors tao and tray-icon
//! report there (physical pixels, each screen at its own scale; see the module docs).

use super::*;

/// A screen at `origin` (points, CoreGraphics' global space), `size` points, with a menu bar
/// of `menu_bar` points and a Dock of `dock` points at the bottom, at `scale`.
fn screen(origin: (f64, f64), size: (f64, f64), menu_bar: f64, dock: f64, scale: f64) -> Screen {
    let (x, y) = origin;
    let (w, h) = size;
    Screen {
        bounds: Rect(x * scale, y * scale, w * scale, h * scale),
        work_area: Rect(
            x * scale,
            (y + menu_bar) * scale,
            w * scale,
            (h - menu_bar - dock) * scale,
        ),
        scale,
    }
}

/// A 14" MacBook Pro: 1512×982 points at 2×, a 37 pt menu bar (the notch), the Dock below.
fn laptop() -> Screen {
    screen((0.0, 0.0), (1512.0, 982.0), 37.0, 80.0, 2.0)
}

/// A 2560×1440 external screen at 1× with its top left at `origin` (points), a 24 pt menu bar.
fn external(origin: (f64, f64)) -> Screen {
    screen(origin, (2560.0, 1440.0), 24.0, 0.0, 1.0)
}

/// A status item at `x` points on the menu bar at `top` of a screen of `scale`, `height`
/// points high, as tray-icon gives it: physical at that scale.
fn item(x: f64, top: f64, height: f64, scale: f64) -> Rect {
    Rect(x * scale, top * scale, 30.0 * scale, height * scale)
}

fn inside(r: Rect, area: Rect) -> bool {
    let (Rect(x, y, w, h), Rect(ax, ay, aw, ah)) = (r, area);
    x >= ax && y >= ay && x + w <= ax + aw && y + h <= ay + ah
}

#[test]
fn the_popover_opens_under_the_icon_on_the_screen_whose_menu_bar_holds_it() {
    let laptop = laptop();
    let (right, left, above) = (
        external((1512.0, 0.0)),
        external((-2560.0, 0.0)),
        external((0.0, -1440.0)),
    );
    let on_laptop = item(1200.0, 0.0, 37.0, 2.0);
    // (screens, tray item, expected screen, expected popover in points).
    let cases = [
        // The laptop alone: centred under the icon, below the menu bar.
        (
            vec![laptop],
            Some(on_laptop),
            laptop,
            Rect(1025.0, 45.0, 380.0, 560.0),
        ),
        // An external screen to the right: the icon's physical x (2400) is on the external
        // screen in points; the popover stays on the laptop.
        (
            vec![laptop, right],
            Some(on_laptop),
            laptop,
            Rect(1025.0, 45.0, 380.0, 560.0),
        ),
        // ... and on the external screen's own menu bar, it opens there.
        (
            vec![laptop, right],
            Some(item(3800.0, 0.0, 24.0, 1.0)),
            right,
            Rect(3625.0, 32.0, 380.0, 560.0),
        ),
        // An external screen to the left (negative points).
        (
            vec![left, laptop],
            Some(on_laptop),
            laptop,
            Rect(1025.0, 45.0, 380.0, 560.0),
        ),
        (
            vec![left, laptop],
            Some(item(-300.0, 0.0, 24.0, 1.0)),
            left,
            Rect(-475.0, 32.0, 380.0, 560.0),
        ),
        // An external screen above: the laptop's icon is at the top of the laptop, not at
        // the bottom of the screen above.
        (
            vec![above, laptop],
            Some(on_laptop),
            laptop,
            Rect(1025.0, 45.0, 380.0, 560.0),
        ),
        (
            vec![above, laptop],
            Some(item(2000.0, -1440.0, 24.0, 1.0)),
            above,
            Rect(1825.0, -1408.0, 380.0, 560.0),
        ),
        // An icon hidden under the notch still has its frame: under it.
        (
            vec![laptop],
            Some(item(700.0, 0.0, 37.0, 2.0)),
            laptop,
            Rect(525.0, 45.0, 380.0, 560.0),
        ),
        // The rightmost icon: pushed left to stay on the screen.
        (
            vec![laptop],
            Some(item(1470.0, 0.0, 37.0, 2.0)),
            laptop,
            Rect(1124.0, 45.0, 380.0, 560.0),
        ),
        // No icon rectangle yet: under the main screen's menu bar at the right.
        (
            vec![laptop, right],
            None,
            laptop,
            Rect(1124.0, 45.0, 380.0, 560.0),
        ),
    ];
    for (screens, tray, on, expected) in cases {
        let main = screens
            .iter()
            .find(|s| s.bounds.0 == 0.0 && s.bounds.1 == 0.0);
        let got = popover_in_points(tray, &screens, main).unwrap();
        assert_eq!(got, expected, "{tray:?} on {screens:?}");
        assert!(
            inside(got, on.work_area.points(on.scale)),
            "{got:?} on {on:?}"
        );
        if let Some(t) = tray {
            assert_eq!(tray_screen(t, &screens).map(|(s, _)| s), Some(on));
        }
    }
}

#[test]
fn an_auto_hidden_menu_bar_keeps_the_popover_on_its_screen() {
    // The work area reaches the top of the screen; the hidden item is parked one bar height
    // above it (unverified on a Mac: the popover stays inside either way).
    let hidden_bar = screen((0.0, 0.0), (1512.0, 982.0), 0.0, 0.0, 2.0);
    let above = external((0.0, -1440.0));
    let parked = item(1200.0, -37.0, 37.0, 2.0);
    let screens = [above, hidden_bar];
    let got = popover_in_points(Some(parked), &screens, Some(&hidden_bar)).unwrap();
    assert_eq!(got, Rect(1025.0, 8.0, 380.0, 560.0));
    assert_eq!(tray_screen(parked, &screens).unwrap().0, hidden_bar);
}

#[test]
fn a_screen_too_small_shrinks_the_popover_and_no_screen_places_nothing() {
    let small = screen((0.0, 0.0), (1024.0, 600.0), 24.0, 60.0, 1.0);
    let got = popover_in_points(Some(item(900.0, 0.0, 24.0, 1.0)), &[small], None).unwrap();
    assert!(inside(got, small.work_area), "{got:?}");
    assert!(got.3 < 560.0);
    assert_eq!(popover_in_points(None, &[], None), None);
}

#[test]
fn screens_of_different_scales_never_take_each_others_menu_items() {
    // A 2× laptop as the main screen and 1× screens beside it: an item on a 1× menu bar, read
    // at 2×, falls on the laptop's menu bar wherever its x is under twice the laptop's width.
    let laptop = laptop();
    let right = external((1512.0, 0.0));
    let further = external((4072.0, 0.0));
    let left = external((-2560.0, 0.0));
    let above = external((0.0, -1440.0));
    // (screens, items on the menu bar of `on`, at its scale), the laptop first and last.
    let layouts = [
        (
            vec![laptop, right],
            right,
            vec![1600.0, 2000.0, 2900.0, 3020.0, 3800.0],
        ),
        (vec![right, laptop], right, vec![1600.0, 2000.0, 3020.0]),
        (vec![laptop, left], left, vec![-2500.0, -1200.0, -40.0]),
        (vec![laptop, above], above, vec![100.0, 1400.0, 2500.0]),
        (vec![laptop, right, further], right, vec![1600.0, 3020.0]),
        (
            vec![laptop, right, further],
            further,
            vec![4100.0, 5000.0, 6000.0],
        ),
    ];
    for (screens, on, xs) in layouts {
        let top = on.bounds.1 / on.scale;
        for x in xs {
            let tray = item(x, top, 24.0, on.scale);
            let got = tray_screen(tray, &screens).map(|(s, _)| s);
            assert_eq!(
                got,
                Some(on),
                "an item at {x} pt on {on:?}, among {screens:?}"
            );
            let popover = popover_in_points(Some(tray), &screens, Some(&laptop)).unwrap();
            assert!(
                inside(popover, on.work_area.points(on.scale)),
                "{popover:?}"
            );
        }
        // The laptop's own items stay the laptop's.
        for x in [40.0, 700.0, 1470.0] {
            let tray = item(x, 0.0, 37.0, 2.0);
            assert_eq!(
                tray_screen(tray, &screens).map(|(s, _)| s),
                Some(laptop),
                "{x}"
            );
        }
    }
}
