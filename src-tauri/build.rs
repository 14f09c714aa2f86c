//! Tauri's build step: reads `tauri.conf.json` at the repository root and the capabilities.
//!
//! The window's page is built by Vite into `frontend/dist` (`build_frontend` in
//! scripts/common.sh). When it is missing (a Rust-only check such as `cargo clippy --workspace`
//! before any npm step), a one-line placeholder page is written there so the crate still
//! compiles; the real build replaces it.

use std::path::Path;

fn main() {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../frontend/dist");
    if !dist.join("index.html").exists() {
        let written = std::fs::create_dir_all(&dist).and_then(|()| {
            std::fs::write(
                dist.join("index.html"),
                "<!doctype html><title>Lomi</title><p>The window's page is not built: run scripts/test or scripts/run.</p>\n",
            )
        });
        if let Err(error) = written {
            panic!(
                "cannot write a placeholder page in {}: {error}",
                dist.display()
            );
        }
    }
    println!("cargo:rerun-if-changed=../frontend/dist");
    if let Err(error) =
        tauri_build::try_build(tauri_build::Attributes::new().config_path("../tauri.conf.json"))
    {
        panic!("tauri build: {error:#}");
    }
}
