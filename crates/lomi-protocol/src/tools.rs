//! Tool inputs and outputs, one module per tool family. Inputs reject unknown fields and use
//! camelCase; doc comments on fields are the schema descriptions agents read.

pub mod android;
pub mod browser;
pub mod capture;
pub mod chat;
pub mod editor;
pub mod files;
pub mod git;
pub mod layout;
pub mod operations;
pub mod session;
pub mod settings;
pub mod terminal;

use serde::{Deserialize, Serialize};

/// Arguments of a tool that takes none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// Calls `callback!` with every tool's row, in the catalog's order:
/// `Variant = path::to::VariantTool => runtime as shape,` — the tool's variant of [`crate::Tool`],
/// its [`crate::definition::ToolDef`], the field of the MCP server's runtimes that serves it
/// ([`crate::definition::Serve`]) and how its answer is shown ([`crate::definition::Shape`]).
/// Each family's module keeps its own rows.
#[macro_export]
macro_rules! for_each_tool {
    ($callback:ident) => {
        $crate::__session_tools!($callback __operations_tools __terminal_tools __files_tools __editor_tools __git_tools __android_tools __browser_tools __store_tools __settings_tools __chat_tools __tools_end []);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __tools_end {
    ($callback:ident [$($rows:tt)*]) => {
        $callback! { $($rows)* }
    };
}
