//! A serde adapter for model fields whose serde layout is made for TOML
//! (internally tagged enums, fields left out when None), which a binary
//! format such as a checkpoint's cannot read back: they are stored as JSON
//! text inside the checkpoint (`engine/checkpoint.rs`).

use serde::{de::DeserializeOwned, de::Error as _, ser::Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Writes `v` as JSON text.
pub fn serialize<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&serde_json::to_string(v).map_err(S::Error::custom)?)
}

/// Reads JSON text back.
pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    serde_json::from_str(&String::deserialize(d)?).map_err(D::Error::custom)
}
