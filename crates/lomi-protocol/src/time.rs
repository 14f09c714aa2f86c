//! Timestamps: milliseconds since the Unix epoch inside Lomi, RFC 3339 (UTC) on the wire.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time, in milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    pub fn plus_millis(self, ms: i64) -> Self {
        Timestamp(self.0.saturating_add(ms))
    }

    pub fn to_rfc3339(self) -> String {
        match chrono::DateTime::from_timestamp_millis(self.0) {
            Some(t) => t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            None => format!("{}ms", self.0),
        }
    }

    pub fn parse_rfc3339(text: &str) -> Result<Self, String> {
        chrono::DateTime::parse_from_rfc3339(text)
            .map(|t| Timestamp(t.timestamp_millis()))
            .map_err(|e| format!("{text:?} is not an RFC 3339 time: {e}"))
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Timestamp::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Timestamp {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Timestamp")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "date-time"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_rfc3339() {
        let t = Timestamp(1_796_227_200_123);
        let text = t.to_rfc3339();
        assert_eq!(text, "2026-12-02T16:00:00.123Z");
        assert_eq!(Timestamp::parse_rfc3339(&text), Ok(t));
    }
}
