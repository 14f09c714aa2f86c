//! JSON Schema generation with one fixed setting (2020-12, subschemas inlined) so that the
//! catalog and the live server's `tools/list` are the same documents.

use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::{Map, Value, json};

use crate::envelope::CONTROL_API_VERSION;

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
///
/// `$schema` is left out (MCP reads a schema without one as 2020-12, the dialect these are),
/// and so is the input type's own documentation (``"`lomi_file_create` input: …"``), which
/// says again what the tool's description says: both were repeated on every tool of
/// `tools/list`.
pub fn input_schema<T: JsonSchema>() -> Map<String, Value> {
    let mut map = schema_of::<T>();
    map.remove("$schema");
    let names_the_type = matches!(
        map.get("description"),
        Some(Value::String(text)) if text.starts_with("`lomi_")
    );
    if names_the_type {
        map.remove("description");
    }
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
    envelope(compacted::<T>())
}

/// The output schema of a mutation: the envelope around its operation, whose `result` is
/// described by `R` (the tool's confirmed result), or is `{details}` (what a failure left to
/// inspect), or null (not settled yet).
pub fn operation_schema<R: JsonSchema>() -> Map<String, Value> {
    let mut operation = compacted::<crate::tools::operations::OperationView>();
    let failure = json!({
        "type": "object",
        "properties": {"details": {}},
        "required": ["details"],
    });
    if let Some(slot) = operation.pointer_mut("/properties/result") {
        *slot = json!({"anyOf": [compacted::<R>(), failure, {"type": "null"}]});
    }
    envelope(operation)
}

/// `T`'s schema with [`compact_output`] applied, as a subschema (no `$schema`).
fn compacted<T: JsonSchema>() -> Value {
    let mut value = Value::Object(schema_of::<T>());
    compact_output(&mut value);
    untype_constants(&mut value);
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
    }
    value
}

/// The [`Reply`](crate::envelope::Reply) around `data`: `{status: "ok", controlApiVersion, data}` or `{status: "error",
/// controlApiVersion, code, message, details?}`, written as one object whose `status` says which
/// fields it has. (Two whole variants, each repeating the status and the version, cost 9 KB of
/// `tools/list`.)
fn envelope(data: Value) -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "status": {"enum": ["ok", "error"]},
            "controlApiVersion": {"const": CONTROL_API_VERSION},
            "data": data,
            "code": {"type": "string"},
            "message": {"type": "string"},
            // `{}` (any value), not `true`: the MCP TypeScript SDK takes each property of an
            // output schema's root to be an object.
            "details": {},
        },
        "required": ["status", "controlApiVersion"],
        "additionalProperties": false,
        "oneOf": [
            {"properties": {"status": {"const": "ok"}}, "required": ["data"]},
            {"properties": {"status": {"const": "error"}}, "required": ["code", "message"]},
        ],
    });
    let Value::Object(map) = schema else {
        unreachable!("an object literal")
    };
    map
}

/// Keywords an output schema leaves out: annotations and input-only limits (and, below, the
/// closing of nested objects).
const OUTPUT_OMITS: &[&str] = &[
    "description",
    "title",
    "examples",
    "default",
    "pattern",
    "minLength",
    "maxLength",
    // Lomi writes its answers: bounds only check what it never sends, and `format` is an
    // annotation (every output time is RFC 3339, docs/protocol.md). 5 KB of every listing.
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "format",
];

/// Strips [`OUTPUT_OMITS`] from every subschema (never from property names) and turns a
/// `oneOf` of bare constants into one `enum`.
fn compact_output(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    for keyword in OUTPUT_OMITS {
        map.remove(*keyword);
    }
    // Lomi writes its own answers: `additionalProperties: false` on each object of an output
    // only forbids what Lomi never sends, and repeated on every object of every tool it was a
    // twentieth of `tools/list`. The envelope's root keeps it.
    if map.get("additionalProperties") == Some(&Value::Bool(false)) {
        map.remove("additionalProperties");
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
    untype_string_enums(map);
}

/// Drops `type: string` beside an `enum` of strings only (the values say it already).
fn untype_string_enums(map: &mut Map<String, Value>) {
    let all_strings = matches!(
        map.get("enum"),
        Some(Value::Array(values)) if !values.is_empty() && values.iter().all(Value::is_string)
    );
    if all_strings && map.get("type") == Some(&Value::String("string".to_owned())) {
        map.remove("type");
    }
}

/// Drops the `type` beside every `const` (a constant has its type already).
fn untype_constants(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("const") {
                map.remove("type");
            }
            map.values_mut().for_each(untype_constants);
        }
        Value::Array(items) => items.iter_mut().for_each(untype_constants),
        _ => {}
    }
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
        let data = &schema["properties"]["data"];
        assert_eq!(
            data["properties"],
            json!({
                "title": {"type": "string"},
                "description": {"type": ["string", "null"]},
                "pattern": {"type": "string"},
                "state": {"enum": ["calm", "stormy"]},
            })
        );
        assert!(data.get("description").is_none());
        let text = serde_json::to_string(&schema).expect("json");
        assert!(
            !text.contains("maxLength") && !text.contains("Fine."),
            "{text}"
        );
    }

    /// Every field a reply is serialized with is a property of the envelope, and the fields
    /// its status requires are present (the MCP SDKs validate answers against this schema).
    #[test]
    fn replies_have_the_envelope_fields_their_status_requires() {
        let schema = output_schema::<Page>();
        let properties = schema["properties"].as_object().expect("properties");
        let requires = |status: &str| -> Vec<String> {
            let branch = schema["oneOf"]
                .as_array()
                .expect("one branch per status")
                .iter()
                .find(|branch| branch["properties"]["status"]["const"] == status)
                .expect("the status's branch");
            let mut fields = vec!["status".to_owned(), "controlApiVersion".to_owned()];
            for field in branch["required"].as_array().expect("required") {
                fields.push(field.as_str().expect("a name").to_owned());
            }
            fields
        };
        let page = json!({"title": "t", "description": null, "pattern": "p", "state": "calm"});
        let error = crate::ToolError::new(crate::ErrorCode::NotFound, "gone")
            .with_details(json!({"why": 1}));
        for (reply, status) in [
            (crate::envelope::Reply::ok(page).to_value(), "ok"),
            (
                crate::envelope::Reply::<Value>::error(error).to_value(),
                "error",
            ),
        ] {
            let reply = reply.as_object().expect("a reply is an object").clone();
            assert_eq!(reply["status"], status);
            assert_eq!(
                schema["properties"]["status"]["enum"],
                json!(["ok", "error"])
            );
            for field in reply.keys() {
                assert!(
                    properties.contains_key(field),
                    "{field} is not in the schema"
                );
            }
            for field in requires(status) {
                assert!(reply.contains_key(&field), "a {status} reply lacks {field}");
            }
        }
    }

    #[test]
    fn input_schemas_keep_their_prose_and_limits() {
        let text = serde_json::to_string(&input_schema::<Page>()).expect("json");
        for kept in ["maxLength", "^[a-z]+$", "The page's title.", "Fine."] {
            assert!(text.contains(kept), "{kept} missing from {text}");
        }
    }
}
