//! `[protocol.mptcp]`: the shape of an MPTCP connection. Its congestion
//! control is LIA (`transport/cc/lia.rs`); its subflows are TCP's.
//!
//! | parameter (`[protocol.mptcp]`) | default | source |
//! |---|---|---|
//! | `subflows` | 8 | [P] §6.2 ("8 subflows", via [31] Fig. 2); A18 |

use crate::config::ConfigError;
use crate::transport::config::in_range;

/// `[protocol.mptcp]`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MptcpParams {
    /// Subflows per connection.
    pub subflows: u32,
}

impl Default for MptcpParams {
    fn default() -> Self {
        MptcpParams { subflows: 8 }
    }
}

impl MptcpParams {
    /// Checks the section; `key` is `protocol.mptcp`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        in_range(&format!("{key}.subflows"), self.subflows, 1, 255)
    }
}
