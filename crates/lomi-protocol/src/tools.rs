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
