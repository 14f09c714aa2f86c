//! AFL++ entry for the `snapshot` target (see `lomi_fuzz::snapshot`).

fn main() {
    afl::fuzz!(|data: &[u8]| lomi_fuzz::snapshot(data));
}
