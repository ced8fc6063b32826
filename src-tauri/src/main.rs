//! The Headroom menu-bar app's entry point.

#![cfg_attr(
    test,
    allow(clippy::too_many_lines, reason = "a test reads as one scenario")
)]
// The OS is called through headroom-os only (ARCHITECTURE.md).
#![forbid(unsafe_code)]

fn main() {
    // Linux: the popover is a small static page and needs no GPU. Without this GTK sets up
    // OpenGL at start-up, which on machines without a GPU driver (VMs, Xvfb) maps Mesa's
    // llvmpipe, ~50 MB of resident libraries, for an app that sits closed in the tray. WebKit
    // then draws without hardware acceleration. Set GDK_GL yourself to override.
    #[cfg(target_os = "linux")]
    if std::env::var_os("GDK_GL").is_none() {
        // Single-threaded here: nothing else reads the environment yet.
        std::env::set_var("GDK_GL", "disable");
    }
    headroom_app::run();
}
