//! Tool calls by name: decode strictly, forward to the broker, wrap the answer in the
//! envelope. Tools hold no logic of their own.

use crate::Lomi;
use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use lomi_protocol::definition::{Serve, ToolDef};
use lomi_protocol::tools::browser::SnapshotView;
use lomi_protocol::{MAX_ANSWER_BYTES, PairingId, Reply, Tool as LomiTool, ToolError, strict};
use serde::Serialize;
use serde_json::Value;

/// The answer to one tool call: the envelope as JSON, and whether it is an error.
pub struct Answer {
    pub envelope: Value,
    pub is_error: bool,
    pub summary: String,
    /// What the text block says instead of `summary` when that is too large to send beside
    /// structuredContent (a snapshot's header); by default, the fields it has.
    pub brief: Option<String>,
    /// PNG images sent as MCP image blocks after the text block (captures).
    pub images: Vec<Vec<u8>>,
}

fn answer<T: Serialize>(result: Result<T, ToolError>) -> Answer {
    let reply = Reply::from_result(result);
    Answer {
        envelope: reply.to_value(),
        is_error: reply.is_error(),
        summary: reply.summary(),
        brief: None,
        images: Vec::new(),
    }
}

/// The answer of a snapshot: its text block is the tree itself under a header (JSON escaping
/// would make it longer and harder to read), or the header alone when the tree is too large
/// to send twice; structuredContent has every field.
fn answer_snapshot(result: Result<SnapshotView, ToolError>) -> Answer {
    // Kept within the room the snapshot leaves for it (SNAPSHOT_HEADER_BYTES).
    fn cut(text: &str, max: usize) -> String {
        match text.char_indices().nth(max) {
            Some((end, _)) => format!("{}…", &text[..end]),
            None => text.to_owned(),
        }
    }
    let text = result.as_ref().ok().map(|view| {
        let mut header = format!(
            "snapshotId={} navigationId={} browserGeneration={} tabId={} refs={} lines={} truncated={}\nurl: {}\ntitle: {}\n",
            cut(&view.snapshot_id, 40),
            cut(&view.navigation_id, 40),
            cut(&view.browser_generation, 40),
            cut(&view.tab_id, 40),
            view.refs,
            view.lines,
            view.truncated,
            cut(&view.url, 200),
            cut(&view.title, 120),
        );
        if let Some(dialog) = &view.dialog {
            header.push_str(&format!("dialog: {} {:?}\n", dialog.kind, cut(&dialog.message, 100)));
        }
        if view.loading {
            header.push_str(
                "loading: the page is still loading, so this tree may be empty or partial; wait with lomi_browser_wait (networkIdle, or the text you expect), or snapshot again\n",
            );
        }
        (header.clone() + &view.text, header)
    });
    let mut answered = answer(result);
    if let Some((text, header)) = text {
        answered.summary = text;
        answered.brief = Some(header);
    }
    answered
}

/// The answer of a capture: the envelope holds the metadata, the PNG goes in an image block.
fn answer_with_png<T: Serialize>(result: Result<(T, Vec<u8>), ToolError>) -> Answer {
    match result {
        // A capture too large for the answer was saved and is not sent (the view says so).
        Ok((value, png)) => Answer {
            images: if png.is_empty() {
                Vec::new()
            } else {
                vec![png]
            },
            ..answer(Ok(value))
        },
        Err(error) => answer::<()>(Err(error)),
    }
}

/// How large a text block may be and still repeat structuredContent in full. Clients such as
/// Claude Code and VS Code give their model structuredContent; others read the text block: a
/// small answer is in both, a large one is sent once, in structuredContent, with a short text.
const TEXT_REPEAT_LIMIT: usize = 8 * 1024;

impl Answer {
    /// The MCP tool result: a text block, the images, structuredContent and isError, within
    /// [`MAX_ANSWER_BYTES`] on the wire. An answer that would be larger (a read asked for more
    /// than a client accepts) is refused with what to ask for instead.
    pub fn into_result(self) -> Value {
        let Answer {
            envelope,
            is_error,
            summary,
            brief,
            images,
        } = self;
        let text = if summary.len() <= TEXT_REPEAT_LIMIT || is_error {
            summary
        } else {
            let fields = envelope["data"]
                .as_object()
                .map(|data| data.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            format!(
                "{}(The whole answer, {} bytes, is this result's structuredContent; data has: {fields}.)",
                brief.unwrap_or_default(),
                summary.len()
            )
        };
        let mut content = vec![serde_json::json!({"type": "text", "text": text})];
        content.extend(images.iter().map(|png| {
            serde_json::json!({"type": "image", "mimeType": "image/png", "data": BASE64_STANDARD.encode(png)})
        }));
        let result = serde_json::json!({
            "content": content,
            "structuredContent": envelope,
            "isError": is_error,
        });
        let size = serde_json::to_vec(&result).map_or(0, |bytes| bytes.len());
        if size <= MAX_ANSWER_BYTES {
            return result;
        }
        let refusal = answer::<()>(Err(ToolError::invalid(format!(
            "this answer would be {size} bytes, over the {MAX_ANSWER_BYTES} a standard MCP client accepts in one message; \
             ask for less (a smaller maxBytes or limit, a narrower range or find), or save it into the project where the tool can"
        ))));
        refusal.into_result()
    }
}

/// The answer to a call whose caller could not be established.
pub fn refused(error: ToolError) -> Answer {
    answer::<()>(Err(error))
}

/// Calls the tool named `name` for `caller` with the raw MCP arguments.
pub async fn call(lomi: &Lomi, caller: &PairingId, name: &str, arguments: Option<Value>) -> Answer {
    let Some(tool) = LomiTool::from_name(name) else {
        return answer::<()>(Err(ToolError::invalid(format!(
            "there is no tool {name:?}; see tools/list or `lomi catalog`"
        ))));
    };
    // Until the person approves the pairing, every tool but the status one answers
    // PAIRING_REQUIRED, whatever its arguments.
    if !tool.before_approval()
        && let Err(error) = lomi.broker.authorize(caller)
    {
        return answer::<()>(Err(error));
    }
    let started = std::time::Instant::now();
    let answer = dispatch(lomi, caller, tool, name, arguments).await;
    // The person's activity view counts every answered call of an approved pairing.
    let error = answer
        .is_error
        .then(|| answer.envelope["code"].as_str())
        .flatten()
        .and_then(lomi_protocol::ErrorCode::from_name)
        .or(answer
            .is_error
            .then_some(lomi_protocol::ErrorCode::Internal));
    lomi.broker
        .note_call(caller, tool, started.elapsed(), error);
    answer
}

/// The answer shapes the rows name ([`lomi_protocol::definition::Shape`]).
use answer as plain;
use answer_snapshot as snapshot;
use answer_with_png as png;

/// Every tool's call: its input decoded strictly, then its runtime's [`Serve`]
/// implementation, answered in the shape its row names.
macro_rules! dispatch {
    ($($variant:ident = $def:path => $runtime:ident as $shape:ident,)*) => {
        async fn dispatch(
            lomi: &Lomi,
            caller: &PairingId,
            tool: LomiTool,
            name: &str,
            arguments: Option<Value>,
        ) -> Answer {
            match tool {
                $(LomiTool::$variant => {
                    match strict::decode::<<$def as ToolDef>::Input>(name, arguments) {
                        Ok(input) => $shape(Serve::<$def>::serve(&lomi.$runtime, caller, input).await),
                        Err(error) => answer::<()>(Err(error)),
                    }
                })*
            }
        }
    };
}

lomi_protocol::for_each_tool!(dispatch);
