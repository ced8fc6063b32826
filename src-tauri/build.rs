//! Tauri's build step: embeds the config, capabilities and icons.

fn main() {
    tauri_build::build()
}
