//! The `lomi-desktop` binary: Lomi's window over the embedded broker.

fn main() -> std::process::ExitCode {
    lomi_desktop::run()
}
