//! Lomi's MCP server: one handler over the broker, served over Streamable HTTP on loopback
//! and over the local socket that `lomi mcp` bridges to stdio. Only this crate knows MCP.

pub mod control;
pub mod http;
pub mod local;
mod server;
mod tools;

pub use server::{Caller, LomiServer};
