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
