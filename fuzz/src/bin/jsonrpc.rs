//! AFL++ entry for the `jsonrpc` target (see `lomi_fuzz::jsonrpc`).

fn main() {
    afl::fuzz!(|data: &[u8]| lomi_fuzz::jsonrpc(data));
}
