//! AFL++ entry for the `tool_input` target (see `lomi_fuzz::tool_input`).

fn main() {
    afl::fuzz!(|data: &[u8]| lomi_fuzz::tool_input(data));
}
