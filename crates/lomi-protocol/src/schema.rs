//! JSON Schema generation with one fixed setting (2020-12, subschemas inlined) so that the
//! catalog and the live server's `tools/list` are the same documents.

use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::{Map, Value};

use crate::envelope::Reply;

/// The JSON Schema of `T` as a JSON object, with every subschema inlined (no `$ref`), since
/// some MCP clients do not resolve references in tool schemas.
pub fn schema_of<T: JsonSchema>() -> Map<String, Value> {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut value = schema.to_value();
    drop_nonstandard_formats(&mut value);
    match value {
        Value::Object(mut map) => {
            map.remove("title");
            map
        }
        other => {
            let mut map = Map::new();
            map.insert("allOf".to_owned(), Value::Array(vec![other]));
            map
        }
    }
}

/// A tool's input schema: an object schema (MCP requires `type: object` at the root).
pub fn input_schema<T: JsonSchema>() -> Map<String, Value> {
    let mut map = schema_of::<T>();
    map.insert("type".to_owned(), Value::String("object".to_owned()));
    map
}

/// A tool's output schema: the envelope around `T`, ok or error, as one object schema.
///
/// Output schemas are kept to their shape: every field, type, enum and required set stays, but
/// prose and the length and pattern limits that only matter for input are left out (the tool's
/// description and docs/protocol.md explain the result). They are repeated on every tool of
/// `tools/list`, so this keeps an agent's tool listing small.
pub fn output_schema<T: JsonSchema>() -> Map<String, Value> {
    let mut value = Value::Object(schema_of::<Reply<T>>());
    compact_output(&mut value);
    let Value::Object(mut map) = value else {
        unreachable!("compacting keeps an object an object")
    };
    map.remove("$schema");
    map.insert("type".to_owned(), Value::String("object".to_owned()));
    map
}

/// The output schema of a mutation: the envelope around its operation, whose `result` is
/// described by `R` (the tool's confirmed result), or is `{details}` (what a failure left to
/// inspect), or null (not settled yet).
pub fn operation_schema<R: JsonSchema>() -> Map<String, Value> {
    let mut schema = output_schema::<crate::tools::operations::OperationView>();
    let mut result = Value::Object(schema_of::<R>());
    compact_output(&mut result);
    if let Value::Object(map) = &mut result {
        map.remove("$schema");
    }
    let failure = serde_json::json!({
        "type": "object",
        "properties": {"details": true},
        "required": ["details"],
        "additionalProperties": false,
    });
    let slot = schema
        .get_mut("oneOf")
        .and_then(|branches| branches.get_mut(0))
        .and_then(|ok| ok.pointer_mut("/properties/data/properties/result"));
    if let Some(slot) = slot {
        *slot = serde_json::json!({"anyOf": [result, failure, {"type": "null"}]});
    }
    schema
}

/// Keywords an output schema leaves out: annotations and input-only limits.
const OUTPUT_OMITS: &[&str] = &[
    "description",
    "title",
    "examples",
    "default",
    "pattern",
    "minLength",
    "maxLength",
];

/// Strips [`OUTPUT_OMITS`] from every subschema (never from property names) and turns a
/// `oneOf` of bare constants into one `enum`.
fn compact_output(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    for keyword in OUTPUT_OMITS {
        map.remove(*keyword);
    }
    for (keyword, value) in map.iter_mut() {
        match keyword.as_str() {
            "properties" | "patternProperties" | "$defs" | "dependentSchemas" => {
                if let Value::Object(named) = value {
                    named.values_mut().for_each(compact_output);
                }
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                if let Value::Array(schemas) = value {
                    schemas.iter_mut().for_each(compact_output);
                }
            }
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems" => compact_output(value),
            _ => {}
        }
    }
    collapse_constant_choices(map);
    forget_error_codes(map);
}

/// An error code in an output schema is a string: the full list of codes (docs/errors.md,
/// `ErrorCode::ALL`) repeated in every tool's output schema was a quarter of `tools/list`.
fn forget_error_codes(map: &mut Map<String, Value>) {
    let all: Vec<Value> = crate::ErrorCode::ALL
        .iter()
        .map(|code| Value::from(code.as_str()))
        .collect();
    if map.get("enum") == Some(&Value::Array(all)) {
        map.remove("enum");
    }
}

/// `oneOf: [{const: a, type: string}, {const: b, type: string}]` → `enum: [a, b], type: string`.
fn collapse_constant_choices(map: &mut Map<String, Value>) {
    let Some(Value::Array(choices)) = map.get("oneOf") else {
        return;
    };
    if choices.is_empty() {
        return;
    }
    let mut constants = Vec::with_capacity(choices.len());
    let mut kind: Option<&Value> = None;
    for choice in choices {
        let Value::Object(choice) = choice else {
            return;
        };
        let Some(constant) = choice.get("const") else {
            return;
        };
        if choice.keys().any(|key| key != "const" && key != "type") {
            return;
        }
        match (kind, choice.get("type")) {
            (_, None) => return,
            (None, Some(this)) => kind = Some(this),
            (Some(seen), Some(this)) if seen != this => return,
            _ => {}
        }
        constants.push(constant.clone());
    }
    let kind = kind.cloned();
    map.remove("oneOf");
    map.insert("enum".to_owned(), Value::Array(constants));
    if let Some(kind) = kind {
        map.entry("type").or_insert(kind);
    }
}

/// Adds `oneOf` over required-field sets to an object schema: the shape of a union whose
/// variants are told apart by which fields are present.
pub fn exactly_one_of(mut schema: schemars::Schema, variants: &[&[&str]]) -> schemars::Schema {
    let choices: Vec<Value> = variants
        .iter()
        .map(|required| serde_json::json!({ "required": required }))
        .collect();
    schema.insert("oneOf".to_owned(), Value::Array(choices));
    schema
}

/// JSON Schema's own formats; schemars also emits Rust-specific ones such as `uint64`, which
/// clients' validators warn about and ignore, so those are dropped.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "uuid",
    "regex",
];

fn drop_nonstandard_formats(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let nonstandard = matches!(
                map.get("format"),
                Some(Value::String(format)) if !STANDARD_FORMATS.contains(&format.as_str())
            );
            if nonstandard {
                map.remove("format");
            }
            map.values_mut().for_each(drop_nonstandard_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nonstandard_formats),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A result with fields named like keywords, documented and limited.
    #[derive(JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Page {
        /// The page's title.
        title: String,
        /// What the page says about itself.
        description: Option<String>,
        #[schemars(length(min = 1, max = 8), regex(pattern = "^[a-z]+$"))]
        pattern: String,
        state: Mood,
    }

    /// How it went.
    #[derive(JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Mood {
        /// Fine.
        Calm,
        /// Not fine.
        Stormy,
    }

    #[test]
    fn output_schemas_keep_every_field_but_no_prose_or_input_limits() {
        let schema = Value::Object(output_schema::<Page>());
        assert!(schema.get("$schema").is_none());
        let ok = schema["oneOf"]
            .as_array()
            .expect("an ok and an error variant")
            .iter()
            .find(|variant| variant["properties"]["status"]["const"] == "ok")
            .expect("the ok variant");
        let data = &ok["properties"]["data"];
        assert_eq!(
            data["properties"],
            json!({
                "title": {"type": "string"},
                "description": {"type": ["string", "null"]},
                "pattern": {"type": "string"},
                "state": {"enum": ["calm", "stormy"], "type": "string"},
            })
        );
        assert!(data.get("description").is_none());
        let text = serde_json::to_string(&schema).expect("json");
        assert!(
            !text.contains("maxLength") && !text.contains("Fine."),
            "{text}"
        );
    }

    #[test]
    fn input_schemas_keep_their_prose_and_limits() {
        let text = serde_json::to_string(&input_schema::<Page>()).expect("json");
        for kept in ["maxLength", "^[a-z]+$", "The page's title.", "Fine."] {
            assert!(text.contains(kept), "{kept} missing from {text}");
        }
    }
}
