//! Lomi's fuzz targets as plain functions over bytes: each one feeds its input to the real
//! decoding code and panics only where that code would. The AFL++ binaries in `fuzz/src/bin`
//! call them (scripts/fuzz, fuzzing at length); this crate's own test replays the kept corpus
//! (`fuzz/corpus/<target>/`) through them, and a round of mutations of it, in the ordinary
//! test build.

use std::sync::OnceLock;

use lomi_protocol::catalog::{ToolSpec, catalog};
use lomi_snapshot::SnapshotOptions;
use lomi_snapshot::fuzzing::Frame;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::Value;

/// The catalog, built once: building schemas on every input would drown the fuzzer.
fn specs() -> &'static [ToolSpec] {
    static SPECS: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    SPECS.get_or_init(catalog)
}

/// A tool call's arguments decoded strictly into the tool's input type. The first byte picks
/// the tool from the catalog; the rest is the arguments' JSON (absent arguments when empty).
pub fn tool_input(data: &[u8]) {
    let Some((&pick, json)) = data.split_first() else {
        return;
    };
    let specs = specs();
    let spec = &specs[usize::from(pick) % specs.len()];
    let arguments = if json.is_empty() {
        None
    } else {
        match serde_json::from_slice::<Value>(json) {
            Ok(value) => Some(value),
            Err(_) => return,
        }
    };
    check_tool_call(spec.name, arguments);
}

/// What Lomi does with a `tools/call`: find the tool by name, decode its arguments.
fn check_tool_call(name: &str, arguments: Option<Value>) {
    let Some(tool) = lomi_protocol::Tool::from_name(name) else {
        return;
    };
    let spec = &specs()[tool_index(tool)];
    if let Err(error) = (spec.check_arguments)(spec.name, arguments) {
        assert!(!error.message.is_empty(), "a refusal says why");
    }
}

fn tool_index(tool: lomi_protocol::Tool) -> usize {
    lomi_protocol::Tool::ALL
        .iter()
        .position(|&t| t == tool)
        .expect("every tool is in the table")
}

/// MCP's JSON-RPC framing as Lomi's server receives it: the input as an HTTP POST body (one
/// message), and as the byte stream of a stdio or local-socket session (newline-delimited
/// messages, read by the MCP library's server transport). Every `tools/call` found goes on to
/// Lomi's tool-input decoding.
pub fn jsonrpc(data: &[u8]) {
    if let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(data) {
        call_tools(message);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    runtime.block_on(async {
        let mut transport =
            AsyncRwTransport::<rmcp::RoleServer, _, _>::new_server(data, tokio::io::sink());
        // Each message is at least a line, so this ends; the bound keeps a slow path short.
        for _ in 0..=data.len() {
            match transport.receive().await {
                Some(message) => call_tools(message),
                None => break,
            }
        }
    });
}

fn call_tools(message: ClientJsonRpcMessage) {
    if let JsonRpcMessage::Request(request) = message
        && let ClientRequest::CallToolRequest(call) = request.request
    {
        check_tool_call(&call.params.name, call.params.arguments.map(Value::Object));
    }
}

/// Snapshot text and refs as `lomi_browser_snapshot` and the actions handle them. The input is
/// split at NUL bytes: a ref, a key spec, a `find` needle, then the earlier snapshot's lines,
/// then each frame's text (the first is the main frame; frame `n` sits in an iframe of an
/// earlier frame). The first three bytes choose `fromLine` and `maxBytes`.
pub fn snapshot(data: &[u8]) {
    let (head, rest) = data.split_at(data.len().min(3));
    let [from, room_low, room_high] = [0, 1, 2].map(|i| head.get(i).copied().unwrap_or(0));
    let text = String::from_utf8_lossy(rest);
    let mut parts = text.split('\0');
    let element_ref = parts.next().unwrap_or_default();
    if let Ok((prefix, number)) = lomi_snapshot::split_ref(element_ref) {
        assert!(
            prefix.ends_with('e'),
            "{element_ref:?} split at {prefix:?} and {number}"
        );
    }
    let _known = lomi_snapshot::parse_key(parts.next().unwrap_or_default()).is_ok();
    let find = parts.next().filter(|needle| !needle.is_empty());
    let since: Option<Vec<String>> = parts
        .next()
        .filter(|old| !old.is_empty())
        .map(|old| old.lines().map(str::to_owned).collect());
    let frames: Vec<Frame> = parts
        .enumerate()
        .map(|(index, frame_text)| Frame {
            prefix: if index == 0 {
                "e".to_owned()
            } else {
                format!("f{index}e")
            },
            taken: serde_json::json!({
                "text": frame_text,
                "refs": refs_in(frame_text),
            }),
            owner: (index > 0).then(|| {
                // The owner is an earlier frame, as in Chromium's frame tree.
                let parent = (frame_text.len() + index) % index;
                let prefix = if parent == 0 {
                    "e".to_owned()
                } else {
                    format!("f{parent}e")
                };
                (prefix, index as u64)
            }),
        })
        .collect();
    let max_bytes = usize::from(u16::from_le_bytes([room_low, room_high]));
    let options = SnapshotOptions {
        max_bytes,
        asked_bytes: max_bytes,
        find: find.map(str::to_owned),
        since_snapshot_id: None,
        from_line: usize::from(from),
    };
    let (lines, _refs, rendered) =
        lomi_snapshot::fuzzing::snapshot(frames, since.as_deref(), &options);
    // The rendered tree keeps within its room (less the closing note's), whatever the lines.
    if max_bytes >= 1024 && !lines.is_empty() {
        assert!(
            lomi_protocol::json_escaped_len(&rendered) <= max_bytes,
            "rendered {} bytes for maxBytes {max_bytes}",
            lomi_protocol::json_escaped_len(&rendered)
        );
    }
}

/// The `[e12]`-style refs a frame's text names, as the page helper lists them.
fn refs_in(text: &str) -> Vec<String> {
    text.split('[')
        .skip(1)
        .filter_map(|piece| piece.split_once(']').map(|(inside, _)| inside.to_owned()))
        .collect()
}
