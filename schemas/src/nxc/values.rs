//! The values of the nxc keyspace: a profile's instance parameters and what resolution
//! returns.

use super::segments::{ProfileId, ProviderName, RealmId};
use std::collections::BTreeMap;

/// A profile's instance parameters, the fields of its `nxc:inst:…` HASH
/// (`sub_mchid`, `access_token`, `gateway_url`...), ordered by field name.
pub type InstanceParams = BTreeMap<String, String>;

/// The longest field name of an instance HASH.
pub const MAX_FIELD_LEN: usize = 128;

/// Checks the field names of `params`: 1 to [`MAX_FIELD_LEN`] bytes of letters, digits,
/// `_`, `.` and `-` (the document's fields are `snake_case` identifiers).
///
/// # Errors
/// `InvalidArgument` naming the first bad field.
pub fn validate_params(params: &InstanceParams) -> keyplane_core::Result<()> {
    for field in params.keys() {
        let ok = !field.is_empty()
            && field.len() <= MAX_FIELD_LEN
            && field
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !ok {
            return Err(keyplane_core::Error::invalid_argument(
                "an instance field name must be 1-128 bytes of [a-zA-Z0-9_.-]",
            )
            .with_context("field", format!("{field:?}")));
        }
    }
    Ok(())
}

/// A profile to create: its place, its instance parameters, and whether it becomes the
/// realm's default for the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewProfile {
    /// The realm that owns the profile.
    pub realm: RealmId,
    /// The provider.
    pub provider: ProviderName,
    /// The profile id.
    pub profile: ProfileId,
    /// The instance parameters (at least one field: an empty HASH does not exist in Redis).
    pub params: InstanceParams,
    /// Whether the profile becomes the default.
    pub default: bool,
}

/// What a realm asks for: a provider, and a profile or the default one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The realm asking.
    pub realm: RealmId,
    /// The provider.
    pub provider: ProviderName,
    /// The profile asked for; `None` for the realm's default.
    pub profile: Option<ProfileId>,
}

/// A resolved profile: which one, and its instance parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedProfile {
    /// The realm.
    pub realm: RealmId,
    /// The provider.
    pub provider: ProviderName,
    /// The profile resolved.
    pub profile: ProfileId,
    /// Its instance parameters (empty when the profile has none stored).
    pub params: InstanceParams,
}
