//! Snapshot of the whole tool catalog, so a change to the contract shows in review, plus the
//! structural rules every tool schema must keep.

use serde_json::Value;

#[test]
fn catalog_snapshot() {
    insta::assert_json_snapshot!("catalog", lomi_protocol::catalog::catalog_json());
}

#[test]
fn every_schema_is_a_closed_object() {
    for tool in lomi_protocol::catalog::catalog() {
        assert!(tool.name.starts_with("lomi_"), "{}", tool.name);
        for (what, schema) in [
            ("input", &tool.input_schema),
            ("output", &tool.output_schema),
        ] {
            assert_eq!(
                schema.get("type"),
                Some(&Value::from("object")),
                "{} {what}",
                tool.name
            );
            let text = serde_json::to_string(schema).expect("schema");
            assert!(
                !text.contains("$ref"),
                "{} {what} schema has a $ref",
                tool.name
            );
        }
        // The MCP TypeScript SDK refuses a listing whose root properties are not objects.
        for (what, schema) in [
            ("input", &tool.input_schema),
            ("output", &tool.output_schema),
            ("listed output", &tool.listed_output_schema),
        ] {
            let properties = schema.get("properties").and_then(Value::as_object);
            for (name, property) in properties.into_iter().flatten() {
                assert!(
                    property.is_object(),
                    "{} {what} property {name} is {property}",
                    tool.name
                );
            }
        }
        assert_eq!(
            tool.input_schema.get("additionalProperties"),
            Some(&Value::Bool(false)),
            "{} input must reject unknown fields",
            tool.name
        );
    }
}

/// Input schemas close only their root (`additionalProperties: false`); the strict decoder
/// still refuses an unknown field in every nested object. One case per nested input object.
#[test]
fn the_decoder_refuses_what_the_schemas_no_longer_say() {
    let refused = [
        (
            "lomi_browser_capture",
            r#"{"panelId":"p","save":{"path":"a.png","retryEpoch":"re_1","requestKey":"k","extra":1}}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_browser_capture",
            r#"{"panelId":"p","clip":{"x":0,"y":0,"width":1,"height":1,"extra":1}}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_browser_network_body",
            r#"{"panelId":"p","cursor":"1","save":{"path":"a","retryEpoch":"re_1","requestKey":"k","extra":1}}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_browser_capture_set",
            r#"{"targets":[{"name":"a","extra":1}]}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_browser_capture_set",
            r#"{"targets":[{"name":"a","viewport":{"width":1,"height":1,"extra":1}}]}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_browser_fill",
            r#"{"fields":[{"elementRef":"e1","value":"v","extra":1}]}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_browser_create",
            r#"{"viewport":{"width":800,"height":600,"extra":1}}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_browser_emulate",
            r#"{"viewport":{"width":800,"height":600,"extra":1}}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_editor_edit",
            r#"{"edits":[{"start":0,"end":0,"text":"","extra":1}]}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_workspace_close",
            r#"{"documents":[{"documentId":"d","action":"save","extra":1}]}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_terminal_read",
            r#"{"waitFor":{"exit":true,"extra":1}}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_android_launch",
            r#"{"intent":{"action":"a","extra":1}}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_android_capture",
            r#"{"panelId":"p","clip":{"x":0,"y":0,"width":1,"height":1,"extra":1}}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_android_capture_set",
            r#"{"screens":[{"name":"a","extra":1}]}"#,
            "unknown field `extra`",
        ),
        (
            "lomi_workspace_update",
            r#"{"change":{"rename":{"name":"n","extra":1}}}"#,
            "unknown field `extra`",
        ),
    ];
    for (name, arguments, says) in refused {
        let tool = lomi_protocol::catalog::tool(name).expect("a tool");
        let arguments: Value = serde_json::from_str(arguments).expect("json");
        let error = (tool.check_arguments)(name, Some(arguments.clone()))
            .expect_err(&format!("{name} accepted {arguments}"));
        assert!(
            error.message.contains(says),
            "{name} {arguments}: {} (expected it to say {says:?})",
            error.message
        );
    }
}

/// What `tools/list` costs a client (and an agent's context) stays within its budget: the
/// listing as the server sends it, compact JSON. A pairing given every tool family sees it all;
/// one given a single family sees that family and the session tools, which has a budget of
/// its own (what an agent that only needs the browser carries in its context).
#[test]
fn the_tool_listing_stays_within_its_budget() {
    const BUDGET: usize = 200_000;
    const ONE_FAMILY_BUDGET: usize = 85_000;
    let listing = |family: Option<lomi_protocol::Family>| {
        let chosen = family.map(|f| std::collections::BTreeSet::from([f]));
        let tools: Vec<Value> = lomi_protocol::catalog::catalog()
            .iter()
            .filter(|tool| lomi_protocol::catalog::sees(chosen.as_ref(), tool.tool))
            .map(|tool| tool.to_json())
            .collect();
        let bytes = serde_json::to_vec(&serde_json::json!({ "tools": tools })).expect("json");
        (bytes.len(), tools.len())
    };
    let (all, count) = listing(None);
    assert!(
        all <= BUDGET,
        "tools/list is {all} bytes for {count} tools, over its {BUDGET}-byte budget"
    );
    for family in lomi_protocol::Family::ALL {
        let (bytes, count) = listing(Some(*family));
        assert!(
            bytes <= ONE_FAMILY_BUDGET,
            "tools/list for a pairing given only {family} is {bytes} bytes for {count} tools, over its {ONE_FAMILY_BUDGET}-byte budget"
        );
    }
}

/// The window's TypeScript reply types are generated from `schema::window_types`
/// (`npm run build` in frontend/ runs json-schema-to-typescript on the checked-in copy). The
/// copy must be the current one: `LOMI_UPDATE_GENERATED=1 cargo test -p lomi-protocol`
/// rewrites it, then `npm run build` regenerates the TypeScript (its own test checks that).
#[test]
fn the_windows_generated_types_are_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../frontend/src/generated/protocol.schema.json");
    let current = serde_json::to_string_pretty(&lomi_protocol::schema::window_types())
        .expect("a JSON document")
        + "\n";
    if std::env::var_os("LOMI_UPDATE_GENERATED").is_some() {
        std::fs::write(&path, &current).expect("write the window's schema");
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == current,
        "{} is stale: run LOMI_UPDATE_GENERATED=1 cargo test -p lomi-protocol, then npm run build in frontend/",
        path.display()
    );
}
