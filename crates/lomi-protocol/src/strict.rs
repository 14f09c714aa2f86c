//! Strict decoding of tool arguments: bounded nesting, unknown fields rejected, and errors
//! phrased for the person or agent who sent them.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;

/// Deepest nesting of arrays and objects a tool argument may have. Lomi's inputs are
/// shallow; anything deeper is refused before it reaches a decoder.
pub const MAX_NESTING: usize = 32;

/// Depth of the deepest array/object in `value` (a scalar has depth 0). Iterative, so
/// hostile input cannot exhaust the stack.
pub fn nesting_depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(value, 0usize)];
    while let Some((node, depth)) = pending.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match node {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        let here = depth + 1;
        deepest = deepest.max(here);
        if deepest > MAX_NESTING {
            return deepest;
        }
        pending.extend(children.map(|child| (child, here)));
    }
    deepest
}

/// Decodes a tool's arguments into its input type. Absent arguments read as `{}`.
pub fn decode<T: DeserializeOwned>(tool: &str, arguments: Option<Value>) -> Result<T, ToolError> {
    let value = arguments.unwrap_or_else(|| Value::Object(Default::default()));
    if !value.is_object() {
        return Err(ToolError::invalid(format!(
            "{tool}: arguments must be a JSON object"
        )));
    }
    if nesting_depth(&value) > MAX_NESTING {
        return Err(ToolError::invalid(format!(
            "{tool}: arguments are nested deeper than {MAX_NESTING} levels"
        )));
    }
    serde_json::from_value(value)
        .map_err(|e| ToolError::invalid(format!("{tool}: invalid arguments: {e}")))
}

/// The `requestKey` a mutation's arguments carry, if they carry a valid one (nothing else is
/// checked): how a front door matches a call to its operation's progress.
pub fn request_key(arguments: &Value) -> Option<crate::ids::RequestKey> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Keyed {
        request_key: crate::ids::RequestKey,
    }
    serde_json::from_value::<Keyed>(arguments.clone())
        .ok()
        .map(|keyed| keyed.request_key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Sample {
        #[allow(dead_code)]
        workspace_id: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct OnPanel {
        #[allow(dead_code)]
        panel_id: crate::PanelId,
    }

    /// An id's schema says only "a string" (agents copy ids from answers), so decoding is
    /// what refuses a malformed one, with a message that names the id and what it may hold.
    #[test]
    fn refuses_a_malformed_id_saying_what_an_id_is() {
        assert!(decode::<OnPanel>("t", Some(json!({"panelId": "pn_1a2b"}))).is_ok());
        for (bad, says) in [
            ("pn 1", "only letters, digits and . _ : - are allowed"),
            ("", "must not be empty"),
            (&"p".repeat(129) as &str, "longer than 128 characters"),
        ] {
            let err = decode::<OnPanel>("t", Some(json!({"panelId": bad}))).expect_err(bad);
            assert_eq!(err.code, crate::ErrorCode::InvalidArgument);
            assert!(
                err.message.contains("PanelId") && err.message.contains(says),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn refuses_unknown_fields_and_deep_nesting() {
        assert!(decode::<Sample>("t", Some(json!({"workspaceId": "w"}))).is_ok());
        let err = decode::<Sample>("t", Some(json!({"workspaceId": "w", "extra": 1})))
            .expect_err("unknown field");
        assert!(
            err.message.contains("unknown field `extra`"),
            "{}",
            err.message
        );
        let mut deep = json!(1);
        for _ in 0..1_000 {
            deep = json!([deep]);
        }
        let err = decode::<Sample>("t", Some(json!({"workspaceId": deep}))).expect_err("deep");
        assert!(err.message.contains("nested deeper"), "{}", err.message);
        assert!(decode::<Sample>("t", Some(json!([1]))).is_err());
    }
}
