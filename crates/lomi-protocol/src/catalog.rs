//! The tool catalog: every tool's name, description, annotations and complete input and output
//! schemas. `lomi catalog` prints it and the MCP server's `tools/list` is built from it (with
//! slimmer output schemas).

use serde::Serialize;
use serde_json::{Map, Value};

use crate::definition::ToolDef;
use crate::schema::{
    input_schema, listed_operation_schema, listed_output_schema, operation_schema, output_schema,
};

/// Declares the tool table from every family's rows ([`crate::for_each_tool`]): each tool's
/// enum variant and its definition, written once.
macro_rules! tool_table {
    ($($variant:ident = $def:path => $runtime:ident as $shape:ident,)*) => {
        /// Every tool Lomi serves. The catalog, the MCP dispatch, receipts, the person's
        /// confirmation policy and key lookups all take a `Tool`; what a tool is comes from its
        /// [`ToolDef`], so a tool cannot be listed without being dispatched, or dispatched without
        /// being listed.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Tool {
            $($variant,)*
        }

        // Each row's definition is the definition of its own variant.
        $(const _: () = assert!(matches!(<$def as ToolDef>::TOOL, Tool::$variant));)*

        impl Tool {
            /// Every tool, in the catalog's order.
            pub const ALL: &'static [Tool] = &[$(Tool::$variant,)*];

            /// The tool's wire name, e.g. `lomi_workspace_update`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Tool::$variant => <$def as ToolDef>::NAME,)*
                }
            }

            /// The family the tool belongs to, or `None` for a session tool every pairing sees.
            pub const fn family(self) -> Option<Family> {
                match self {
                    $(Tool::$variant => <$def as ToolDef>::FAMILY,)*
                }
            }

            /// What the tool does in a person's words, as the "ask me before" list shows it
            /// ("Delete files"); the wire name is the detail beside it.
            pub const fn label(self) -> &'static str {
                match self {
                    $(Tool::$variant => <$def as ToolDef>::LABEL,)*
                }
            }

            /// Whether the tool waits for the person unless they say otherwise.
            pub const fn asks_by_default(self) -> bool {
                match self {
                    $(Tool::$variant => <$def as ToolDef>::ASKS_BY_DEFAULT,)*
                }
            }

            /// Whether the tool answers before the person approved the pairing.
            pub const fn before_approval(self) -> bool {
                match self {
                    $(Tool::$variant => <$def as ToolDef>::BEFORE_APPROVAL,)*
                }
            }

            /// How the tool reaches the broker.
            pub const fn kind(self) -> ToolKind {
                match self {
                    $(Tool::$variant => <$def as ToolDef>::KIND,)*
                }
            }

            /// The tool's catalog entry: title, kind, annotations, description and schemas.
            pub fn spec(self) -> ToolSpec {
                match self {
                    $(Tool::$variant => ToolSpec::of::<$def>(),)*
                }
            }
        }
    };
}

crate::for_each_tool!(tool_table);

impl Tool {
    /// The tool with this wire name, if Lomi has one.
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.iter().copied().find(|tool| tool.name() == name)
    }
}

/// A family of tools the person lets a pairing see. `tools/list` shows a pairing its families'
/// tools and the session tools (those of no family: pairing status, workspace and panel lists,
/// connect, operations, events, store status); a tool of a family it was not given answers as
/// unknown.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Workspace,
    Terminal,
    Files,
    Editor,
    Git,
    Browser,
    Android,
    Chat,
}

impl Family {
    pub const ALL: &'static [Family] = &[
        Family::Workspace,
        Family::Terminal,
        Family::Files,
        Family::Editor,
        Family::Git,
        Family::Browser,
        Family::Android,
        Family::Chat,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Family::Workspace => "workspace",
            Family::Terminal => "terminal",
            Family::Files => "files",
            Family::Editor => "editor",
            Family::Git => "git",
            Family::Browser => "browser",
            Family::Android => "android",
            Family::Chat => "chat",
        }
    }

    /// The family in a person's words, as Settings and the pairing dialog show it.
    pub const fn label(self) -> &'static str {
        match self {
            Family::Workspace => "Workspace and settings",
            Family::Terminal => "Terminals",
            Family::Files => "Project files",
            Family::Editor => "Editor documents",
            Family::Git => "Git",
            Family::Browser => "Browsers",
            Family::Android => "Android phones",
            Family::Chat => "Chat",
        }
    }

    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// The OAuth scope that asks for the family: `lomi:browser`.
    pub fn scope(self) -> String {
        format!("lomi:{}", self.name())
    }

    /// The family an OAuth scope asks for, if it is one of Lomi's.
    pub fn from_scope(scope: &str) -> Option<Family> {
        scope.strip_prefix("lomi:").and_then(Family::from_name)
    }

    /// What to look at when an operation of this family is `outcome_unknown` (Lomi cannot
    /// tell whether its effect happened), before doing anything again; docs/recovery.md says
    /// more. The window and `lomi operation show` give it with such a receipt.
    pub const fn recovery_steps(self) -> &'static str {
        match self {
            Family::Workspace => {
                "List the workspace again (lomi_workspace_list): its name, layout and revision say whether the change happened."
            }
            Family::Terminal => {
                "Read the terminal's screen: the command or interrupt may have reached the shell. Do not send it again before you know."
            }
            Family::Files | Family::Editor => {
                "Read the file from disk and compare it with what was to be written: its disk revision says whether it changed."
            }
            Family::Git => {
                "Run `git status` and `git log -1` in the project: the staging, commit or branch may have happened."
            }
            Family::Browser => {
                "Look at the browser panel (a snapshot or capture): the page may have navigated, or the action may have landed."
            }
            Family::Android => {
                "Capture the device's screen: the input, launch, install or file transfer may have reached it."
            }
            Family::Chat => {
                "Open the conversation: the message may have reached the provider even without a reply."
            }
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The families a pairing sees: every family (`None`, including families a later Lomi adds), or
/// the ones the person chose.
pub fn sees(families: Option<&std::collections::BTreeSet<Family>>, tool: Tool) -> bool {
    match (tool.family(), families) {
        (None, _) | (_, None) => true,
        (Some(family), Some(chosen)) => chosen.contains(&family),
    }
}

/// MCP tool annotations (hints for clients; Lomi enforces the real rules itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

impl Annotations {
    /// The hints as listed: `destructiveHint` and `idempotentHint` mean something only for a
    /// tool that is not read-only (MCP's tool annotations), so a read tool lists neither.
    pub fn to_json(self) -> Value {
        if self.read_only_hint {
            serde_json::json!({"readOnlyHint": true, "openWorldHint": self.open_world_hint})
        } else {
            serde_json::json!(self)
        }
    }
}

pub(crate) const READ: Annotations = Annotations {
    read_only_hint: true,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

/// A mutation that is safe to retry with the same request key.
pub(crate) const MUTATION: Annotations = Annotations {
    read_only_hint: false,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

/// How a tool reaches the broker: a read answers at once, a mutation becomes an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// Answers from current state; no receipt.
    Read,
    /// Goes through the operation engine and records exactly one receipt.
    Mutation,
    /// Changes session bookkeeping (connections, cancellation) without an operation of its own.
    Control,
}

/// One tool of the catalog.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    pub tool: Tool,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub kind: ToolKind,
    pub annotations: Annotations,
    pub input_schema: Map<String, Value>,
    /// The complete output schema: the whole envelope, ok or error, around the typed data
    /// (the seed: the catalog JSON holds each tool's complete output schema).
    pub output_schema: Map<String, Value>,
    /// The output schema `tools/list` gives: the data in a slim envelope, and of a mutation's
    /// operation only its result's fields (`schema::listed_operation_schema`).
    pub listed_output_schema: Map<String, Value>,
    /// Decodes arguments strictly into the tool's input type (the type `input_schema` is made
    /// from) and drops the result: the fuzzer's way in to every tool's decoding.
    pub check_arguments: fn(&str, Option<Value>) -> Result<(), crate::ToolError>,
}

impl ToolSpec {
    /// The entry of the tool `D` defines. A mutation's output is the operation, whose
    /// `result` is `D::Output` once it succeeded (or `{details}` of a failure, or null while
    /// it runs).
    pub fn of<D: ToolDef>() -> Self {
        ToolSpec {
            tool: D::TOOL,
            name: D::NAME,
            title: D::TITLE,
            description: D::DESCRIPTION,
            kind: D::KIND,
            annotations: D::ANNOTATIONS,
            input_schema: input_schema::<D::Input>(),
            output_schema: match D::KIND {
                ToolKind::Mutation => operation_schema::<D::Output>(),
                ToolKind::Read | ToolKind::Control => output_schema::<D::Output>(),
            },
            listed_output_schema: match D::KIND {
                ToolKind::Mutation => listed_operation_schema::<D::Output>(),
                ToolKind::Read | ToolKind::Control => listed_output_schema::<D::Output>(),
            },
            check_arguments: |tool, arguments| {
                crate::strict::decode::<D::Input>(tool, arguments).map(drop)
            },
        }
    }

    /// The tool as `tools/list` shows it (and the catalog JSON's `tools`).
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.listed_output_schema,
            "annotations": self.annotations.to_json(),
        })
    }
}

/// Every tool Lomi serves, in the table's order.
pub fn catalog() -> Vec<ToolSpec> {
    Tool::ALL.iter().map(|tool| tool.spec()).collect()
}

pub fn tool(name: &str) -> Option<ToolSpec> {
    Tool::from_name(name).map(Tool::spec)
}

/// The whole catalog as one JSON document: `tools` as `tools/list` gives them, and
/// `outputSchemas`, each tool's complete output schema by its name (the seed's contract; the
/// listing's are slimmer, to fit an agent's budget).
pub fn catalog_json() -> Value {
    let catalog = catalog();
    let complete: Map<String, Value> = catalog
        .iter()
        .map(|tool| {
            (
                tool.name.to_owned(),
                Value::Object(tool.output_schema.clone()),
            )
        })
        .collect();
    serde_json::json!({
        "controlApiVersion": crate::CONTROL_API_VERSION,
        "tools": catalog.iter().map(ToolSpec::to_json).collect::<Vec<_>>(),
        "outputSchemas": complete,
    })
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Tool {
    /// The name as the store keys receipts by it.
    pub fn tool_name(self) -> crate::ToolName {
        crate::ToolName(self.name().to_owned())
    }
}

impl Serialize for Tool {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Tool {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Tool::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("there is no tool {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The "ask me before" list reads as a list of different actions: no two tools share
    /// their words, and each starts with a capital, as a person's list item does.
    #[test]
    fn every_tool_has_its_own_plain_words() {
        let mut seen = std::collections::BTreeMap::new();
        for tool in Tool::ALL {
            let label = tool.label();
            assert!(
                label.starts_with(|c: char| c.is_uppercase()) && !label.contains("lomi_"),
                "{tool:?}: {label:?}"
            );
            if let Some(other) = seen.insert(label, tool) {
                panic!("{tool:?} and {other:?} both read {label:?}");
            }
        }
        for family in Family::ALL {
            assert!(!family.label().is_empty(), "{family:?}");
        }
    }

    #[test]
    fn every_tool_has_one_name_that_leads_back_to_it() {
        let mut names = std::collections::BTreeSet::new();
        for &tool in Tool::ALL {
            assert_eq!(Tool::from_name(tool.name()), Some(tool), "{tool:?}");
            assert!(names.insert(tool.name()), "{} is named twice", tool.name());
            assert_eq!(tool.spec().tool, tool);
            assert_eq!(tool.spec().name, tool.name());
        }
        assert_eq!(Tool::from_name("lomi_no_such_tool"), None);
        assert_eq!(catalog().len(), Tool::ALL.len());
    }

    #[test]
    fn a_tool_is_written_and_read_by_its_name() {
        let json = serde_json::to_value(Tool::BrowserNavigate).expect("serialize");
        assert_eq!(json, Value::from("lomi_browser_navigate"));
        let back: Tool = serde_json::from_value(json).expect("deserialize");
        assert_eq!(back, Tool::BrowserNavigate);
        let unknown = serde_json::from_value::<Tool>(Value::from("lomi_nothing"));
        assert!(unknown.is_err());
    }
}
