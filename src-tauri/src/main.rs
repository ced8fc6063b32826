//! The Headroom menu-bar app's entry point.

fn main() {
    headroom_app::run();
}
