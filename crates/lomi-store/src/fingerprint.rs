//! Request fingerprints: SHA-256 over canonical JSON (object keys sorted at every depth) of the
//! payload together with the target generation and the relevant revision.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The fingerprint the broker stores with a receipt: 64 lowercase hex digits.
///
/// The three parts are hashed as one canonical JSON array `[payload, generation, revision]`
/// (absent parts are `null`), so no two different inputs share a byte string.
pub fn fingerprint(
    canonical_payload: &Value,
    generation: Option<&str>,
    revision: Option<&str>,
) -> String {
    let framed = Value::Array(vec![
        canonical_payload.clone(),
        generation.map_or(Value::Null, |g| Value::String(g.to_owned())),
        revision.map_or(Value::Null, |r| Value::String(r.to_owned())),
    ]);
    hex::encode(Sha256::digest(canonical_json(&framed).as_bytes()))
}

/// Compact JSON with object keys sorted by their UTF-8 bytes at every depth. Written by hand so
/// the result does not depend on whether some crate enables serde_json's `preserve_order`.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                // A string always serializes; Value's Display is its compact JSON.
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter_but_values_do() {
        let a = json!({"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": null}});
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}"#).expect("json");
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}"#
        );
        assert_eq!(
            fingerprint(&a, Some("g1"), Some("7")),
            fingerprint(&b, Some("g1"), Some("7"))
        );
        assert_ne!(
            fingerprint(&a, Some("g1"), Some("7")),
            fingerprint(&a, Some("g2"), Some("7"))
        );
        assert_ne!(
            fingerprint(&a, None, Some("7")),
            fingerprint(&a, Some("7"), None)
        );
        assert_ne!(
            fingerprint(&json!({"b": 2}), None, None),
            fingerprint(&json!({"b": 1}), None, None)
        );
        assert_eq!(fingerprint(&a, None, None).len(), 64);
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(canonical_json(&json!({"q\"": "a\nb"})), r#"{"q\"":"a\nb"}"#);
    }
}
