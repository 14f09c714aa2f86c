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
/// still refuses an unknown field in every nested object, and a request key of the wrong shape,
/// which the schema no longer spells out. One case per nested input object.
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
        (
            "lomi_file_delete",
            r#"{"workspaceId":"w","path":"a","retryEpoch":"re_1","requestKey":"a key"}"#,
            "only letters, digits and . _ : - are allowed",
        ),
        (
            "lomi_file_delete",
            &format!(
                r#"{{"workspaceId":"w","path":"a","retryEpoch":"re_1","requestKey":"{}"}}"#,
                "k".repeat(129)
            ),
            "longer than 128 characters",
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

/// What a model is shown of a tool: its name, description and input schema, as compact JSON.
/// (Titles, annotations and output schemas go to the client, which need not show them to the
/// model.)
fn shown(tool: &Value) -> usize {
    ["name", "description", "inputSchema"]
        .iter()
        .map(|field| serde_json::to_vec(&tool[*field]).expect("json").len())
        .sum()
}

/// What a model is shown of the catalog stays within two named budgets: every tool, and the
/// browser family with the session tools (what an agent that only needs the browser carries in
/// its context). It prints the figures of every family and the catalog's listing; the whole
/// `tools/list`'s budget is held where the listing is built (lomi-mcp's server.rs), whose tools
/// are the catalog's.
#[test]
fn the_catalog_stays_within_its_budgets() {
    const SHOWN_ALL: usize = 40_000;
    const SHOWN_BROWSER_AND_SESSION: usize = 16_000;
    let listing = lomi_protocol::catalog::catalog_json()["tools"].clone();
    let listing = listing.as_array().expect("the catalog's tools");
    let family_of = |tool: &Value| {
        lomi_protocol::Tool::from_name(tool["name"].as_str().expect("a name"))
            .expect("a tool of the table")
            .family()
    };
    let sum = |of: &dyn Fn(Option<lomi_protocol::Family>) -> bool| -> (usize, usize) {
        let chosen: Vec<&Value> = listing.iter().filter(|tool| of(family_of(tool))).collect();
        (chosen.iter().map(|tool| shown(tool)).sum(), chosen.len())
    };
    let (session, count) = sum(&|family| family.is_none());
    println!("session tools: {count} tools, {session} bytes shown");
    for family in lomi_protocol::Family::ALL {
        let (bytes, count) = sum(&|of| of == Some(*family));
        println!("{family}: {count} tools, {bytes} bytes shown");
    }
    let (all, count) = sum(&|_| true);
    let (browser, browser_count) =
        sum(&|family| matches!(family, None | Some(lomi_protocol::Family::Browser)));
    let tools_list = serde_json::to_vec(&serde_json::json!({ "tools": listing }))
        .expect("json")
        .len();
    println!("every family: {count} tools, {all} bytes shown");
    println!("browser and session: {browser_count} tools, {browser} bytes shown");
    println!("the catalog's tools as listed: {tools_list} bytes");
    assert!(
        all <= SHOWN_ALL,
        "a model is shown {all} bytes of {count} tools, over its {SHOWN_ALL}-byte budget"
    );
    assert!(
        browser <= SHOWN_BROWSER_AND_SESSION,
        "a model given the browser family is shown {browser} bytes of {browser_count} tools, over its {SHOWN_BROWSER_AND_SESSION}-byte budget"
    );
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
