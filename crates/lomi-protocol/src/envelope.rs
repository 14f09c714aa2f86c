//! The result envelope every tool answers with, ok or error.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorCode, ToolError};

/// The value of `controlApiVersion` in every reply.
pub const CONTROL_API_VERSION: &str = "1.0";

/// `{controlApiVersion:"1.0", status:"ok", data}` or
/// `{controlApiVersion:"1.0", status:"error", code, message, details?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "status", rename_all = "lowercase", deny_unknown_fields)]
pub enum Reply<T> {
    Ok {
        #[serde(rename = "controlApiVersion")]
        #[schemars(with = "ApiVersion")]
        control_api_version: String,
        data: T,
    },
    Error {
        #[serde(rename = "controlApiVersion")]
        #[schemars(with = "ApiVersion")]
        control_api_version: String,
        code: ErrorCode,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
}

// Schema-only stand-in: the version is always the constant "1.0".
#[derive(schemars::JsonSchema)]
#[schemars(extend("const" = "1.0"))]
struct ApiVersion(#[allow(dead_code)] String);

impl<T> Reply<T> {
    pub fn ok(data: T) -> Self {
        Reply::Ok {
            control_api_version: CONTROL_API_VERSION.to_owned(),
            data,
        }
    }

    pub fn error(error: ToolError) -> Self {
        Reply::Error {
            control_api_version: CONTROL_API_VERSION.to_owned(),
            code: error.code,
            message: error.message,
            details: error.details,
        }
    }

    pub fn from_result(result: Result<T, ToolError>) -> Self {
        match result {
            Ok(data) => Reply::ok(data),
            Err(error) => Reply::error(error),
        }
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error { .. })
    }

    pub fn error_code(&self) -> Option<ErrorCode> {
        match self {
            Reply::Ok { .. } => None,
            Reply::Error { code, .. } => Some(*code),
        }
    }
}

impl<T: Serialize> Reply<T> {
    /// The envelope as JSON; serializing Lomi's own types cannot fail, but if it ever did the
    /// caller still gets a well-formed INTERNAL envelope instead of a panic.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|e| {
            serde_json::json!({
                "controlApiVersion": CONTROL_API_VERSION,
                "status": "error",
                "code": ErrorCode::Internal,
                "message": format!("could not encode the reply: {e}"),
            })
        })
    }

    /// A short line for MCP text content: what a person skimming a transcript needs.
    pub fn summary(&self) -> String {
        match self {
            Reply::Ok { data, .. } => serde_json::to_string(data).unwrap_or_default(),
            Reply::Error { code, message, .. } => format!("{code}: {message}"),
        }
    }
}

/// The most bytes one tool answer may take on the wire (its JSON-RPC message). Standard MCP
/// clients refuse larger ones: the MCP Python SDK's default HTTP client drops a server-sent
/// event over 1 MiB. The rest of 1 MiB is left to the framing.
pub const MAX_ANSWER_BYTES: usize = 1_000_000;

/// The largest image an answer carries inline (base64 makes it 4/3 as large on the wire, and
/// the answer's JSON needs room too). A larger capture is saved into the project instead.
pub const MAX_INLINE_IMAGE_BYTES: u32 = 700_000;

/// How many bytes `text` takes inside a JSON string (what an answer really sends).
pub fn json_escaped_len(text: &str) -> usize {
    text.chars().map(escaped_char_len).sum()
}

fn escaped_char_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        '\0'..='\u{1f}' => 6,
        c => c.len_utf8(),
    }
}

/// The longest start of `text` that takes at most `max` bytes inside a JSON string, and whether
/// anything was cut.
pub fn json_escaped_prefix(text: &str, max: usize) -> (&str, bool) {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += escaped_char_len(c);
        if used > max {
            return (&text[..at], true);
        }
    }
    (text, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escaped_lengths_are_what_serde_json_sends() {
        for text in [
            "plain",
            "q\"uo\\te\nnl\ttab",
            "\u{1}\u{1f}ctl",
            "ünï 🦀",
            "",
        ] {
            let sent = serde_json::to_string(text).expect("json").len() - 2;
            assert_eq!(json_escaped_len(text), sent, "{text:?}");
        }
        assert_eq!(json_escaped_prefix("ab\"cd", 3), ("ab", true));
        assert_eq!(json_escaped_prefix("ab\"cd", 4), ("ab\"", true));
        assert_eq!(json_escaped_prefix("ab", 9), ("ab", false));
        assert_eq!(json_escaped_prefix("🦀x", 3), ("", true));
    }

    #[test]
    fn shapes_match_the_seed() {
        let ok = Reply::ok(json!({"n": 1})).to_value();
        assert_eq!(
            ok,
            json!({"controlApiVersion": "1.0", "status": "ok", "data": {"n": 1}})
        );
        let err = Reply::<()>::error(ToolError::new(
            ErrorCode::PairingRequired,
            "Approve the pending session in Lomi Settings.",
        ))
        .to_value();
        assert_eq!(
            err,
            json!({
                "controlApiVersion": "1.0",
                "status": "error",
                "code": "PAIRING_REQUIRED",
                "message": "Approve the pending session in Lomi Settings."
            })
        );
        let back: Reply<Value> = serde_json::from_value(err).expect("decode");
        assert_eq!(back.error_code(), Some(ErrorCode::PairingRequired));
    }
}
