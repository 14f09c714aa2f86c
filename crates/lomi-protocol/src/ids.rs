//! Newtype ids and revisions. Ids are opaque strings checked on decode; revisions are decimal
//! counters or SHA-256 hex, as the seed says.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Longest id Lomi accepts, generated or chosen by a client.
pub const MAX_ID_LEN: usize = 128;

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')
}

/// Checks the shape shared by every id: 1..=128 characters of `[A-Za-z0-9._:-]`.
pub fn check_id(kind: &str, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("{kind} must not be empty"));
    }
    if value.len() > MAX_ID_LEN {
        return Err(format!("{kind} is longer than {MAX_ID_LEN} characters"));
    }
    if let Some(bad) = value.chars().find(|c| !is_id_char(*c)) {
        return Err(format!(
            "{kind} contains {bad:?}; only letters, digits and . _ : - are allowed"
        ));
    }
    Ok(())
}

/// The input schema of an id: "a string". An id Lomi hands out (a panel, a lease, a retry epoch)
/// is copied from its answers, never made up, and the server checks the shape of every id (the
/// seed: schemas describe shape, native validators enforce narrower ranges); it is repeated on
/// nearly every tool of `tools/list`. A request key, the one id an agent makes, has its shape
/// (1 to 128 of `A-Z a-z 0-9 . _ : -`) said once, in the server's instructions, and a key of
/// another shape is refused as `INVALID_ARGUMENT` saying what an id is.
fn id_schema() -> Schema {
    json_schema!({"type": "string"})
}

macro_rules! string_id {
    ($(#[doc = $doc:literal])* $name:ident, $prefix:literal) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// The prefix of ids Lomi generates for this kind.
            pub const PREFIX: &'static str = $prefix;

            /// Parses a client-supplied or stored value.
            pub fn parse(value: impl Into<String>) -> Result<Self, String> {
                let value = value.into();
                check_id(stringify!($name), &value)?;
                Ok($name(value))
            }

            /// A new id from 16 random bytes (randomness is injected by the caller).
            pub fn from_random(bytes: [u8; 16]) -> Self {
                $name(format!("{}{}", $prefix, hex::encode(bytes)))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(value: &str) -> Result<Self, String> {
                $name::parse(value)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let value = String::deserialize(d)?;
                $name::parse(value).map_err(serde::de::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                id_schema()
            }
        }
    };
}

string_id!(
    /// One admitted operation and its durable receipt.
    OperationId,
    "op_"
);
string_id!(
    /// A connection's retry epoch: 24 h, bound to one broker instance and one connection.
    RetryEpoch,
    "re_"
);
string_id!(
    /// A client-chosen durable request identity within a retry epoch.
    RequestKey,
    "rk_"
);
string_id!(
    /// A pairing of an MCP client with Lomi, approved by the person.
    PairingId,
    "pr_"
);
string_id!(
    /// A workspace: a layout of panels over projects.
    WorkspaceId,
    "ws_"
);
string_id!(
    /// A project: a directory on disk inside a workspace.
    ProjectId,
    "pj_"
);
string_id!(
    /// A panel in a workspace (terminal, browser, Android runtime, document).
    PanelId,
    "pn_"
);
string_id!(
    /// Temporary input authority over one runtime generation.
    LeaseId,
    "ls_"
);
string_id!(
    /// One start of the broker; retry epochs are bound to it.
    BrokerInstanceId,
    "bi_"
);
string_id!(
    /// A connection of a pairing to a workspace (Lomi's notion, not a transport session).
    ConnectionId,
    "cn_"
);
string_id!(
    /// An editor document open in the broker: the same buffer the person sees.
    DocumentId,
    "doc_"
);

string_id!(
    /// A saved Chat conversation of a workspace.
    ConversationId,
    "cv_"
);

string_id!(
    /// One of the person's rules (which calls run, wait for them, or are refused).
    RuleId,
    "ru_"
);

/// A tool name as it appears in the catalog, e.g. `lomi_workspace_update`.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct ToolName(pub String);

/// Declares a decimal revision counter: a `u64` on the inside, a decimal string on the wire.
macro_rules! decimal_revision {
    ($(#[doc = $doc:literal])* $name:ident) => {
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub u64);

        impl $name {
            pub fn next(self) -> Self {
                $name(self.0 + 1)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                parse_decimal(&text).map($name).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "revision {text:?} is not a decimal string such as \"42\""
                    ))
                })
            }
        }

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                // What a revision is, and where each comes from, is said once in the server's
                // instructions; the pattern says it is a decimal string.
                json_schema!({
                    "type": "string",
                    "pattern": "^(0|[1-9][0-9]{0,18})$"
                })
            }
        }
    };
}

decimal_revision!(
    /// A layout revision: a decimal counter that grows with every change to a workspace's domain.
    DomainRevision
);
decimal_revision!(
    /// A settings section's revision: a decimal counter that grows with every change to that
    /// section, whoever made it (an agent, the window, the command line).
    SettingsRevision
);

decimal_revision!(
    /// A conversation's revision: grows with every message added or settled and every title
    /// change.
    ConversationRevision
);
decimal_revision!(
    /// A conversation draft's revision: grows with every change to the draft, whoever made it.
    DraftRevision
);

/// Parses a canonical decimal u64 (no sign, no leading zeros, at most 19 digits).
pub fn parse_decimal(text: &str) -> Option<u64> {
    let canonical = text == "0" || (!text.starts_with('0') && !text.is_empty() && text.len() <= 19);
    if !canonical || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// SHA-256 of exact bytes as 64 lowercase hex digits (disk revisions).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Sha256Revision(String);

impl Sha256Revision {
    pub fn of(bytes: &[u8]) -> Self {
        use sha2::Digest;
        Sha256Revision(hex::encode(sha2::Sha256::digest(bytes)))
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        if text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(Sha256Revision(text.to_owned()))
        } else {
            Err(format!(
                "revision {text:?} is not 64 lowercase hex digits of SHA-256"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for Sha256Revision {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Sha256Revision {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Sha256Revision::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Sha256Revision {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Sha256Revision")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "pattern": "^[0-9a-f]{64}$"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_reject_bad_shapes() {
        assert!(RequestKey::parse("create-test-terminal-1").is_ok());
        assert!(RequestKey::parse("").is_err());
        assert!(RequestKey::parse("has space").is_err());
        assert!(RequestKey::parse("x".repeat(129)).is_err());
        assert!(serde_json::from_str::<WorkspaceId>("\"ws_1.a:b-c\"").is_ok());
        assert!(serde_json::from_str::<WorkspaceId>("\"a/b\"").is_err());
        let id = OperationId::from_random([0xab; 16]);
        assert_eq!(id.as_str(), format!("op_{}", "ab".repeat(16)));
    }

    #[test]
    fn revisions_are_decimal_strings() {
        let rev: DomainRevision = serde_json::from_str("\"42\"").expect("decimal");
        assert_eq!(rev, DomainRevision(42));
        assert_eq!(serde_json::to_string(&rev).expect("ser"), "\"42\"");
        for bad in [
            "42",
            "\"042\"",
            "\"-1\"",
            "\"\"",
            "\"1e3\"",
            "\"99999999999999999999\"",
        ] {
            assert!(
                serde_json::from_str::<DomainRevision>(bad).is_err(),
                "{bad} accepted"
            );
        }
        let sha = Sha256Revision::of(b"");
        assert_eq!(
            sha.as_str(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(Sha256Revision::parse(&sha.as_str().to_uppercase()).is_err());
    }
}
