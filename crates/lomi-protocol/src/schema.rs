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
pub fn output_schema<T: JsonSchema>() -> Map<String, Value> {
    let mut map = schema_of::<Reply<T>>();
    map.insert("type".to_owned(), Value::String("object".to_owned()));
    map
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
