//! Lomi's wire contract: everything an MCP client can see, and nothing else.
//!
//! Only this crate knows the JSON shapes; inner crates use its plain types.

pub mod catalog;
pub mod control;
pub mod definition;
pub mod effect;
pub mod envelope;
pub mod error;
pub mod ids;
pub mod operation;
pub mod rules;
pub mod schema;
pub mod strict;
pub mod time;
pub mod tools;

pub use catalog::{Family, Tool};
pub use effect::{Effect, EffectDetail, Fact};
pub use envelope::{
    CONTROL_API_VERSION, MAX_ANSWER_BYTES, MAX_INLINE_IMAGE_BYTES, Reply, json_escaped_len,
    json_escaped_prefix,
};
pub use error::{ErrorCode, ToolError};
pub use ids::*;
pub use operation::{EffectState, OperationState};
pub use time::Timestamp;
