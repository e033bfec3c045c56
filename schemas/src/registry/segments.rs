//! The validated variable segments of the registry keyspace: group and service names and the
//! instance's gRPC port.

use keyplane_core::keyspace::{Segment, SegmentError, SegmentSpec, Separator};
use std::fmt;

keyplane_core::text_segment!(
    /// A service group such as `Common` or `Infrastructure`: letters, digits, `.`, `_` and
    /// `-`, at most 64 bytes, stored verbatim in `/registry/{group}/`.
    pub GroupName, charset = "[a-zA-Z0-9._-]", max_len = 64, policy = Reject
);

keyplane_core::text_segment!(
    /// The character rule of a service name, without the reserved word.
    ServiceText, charset = "[a-zA-Z0-9._-]", max_len = 64, policy = Reject
);

/// The file name every group and service directory holds (`/registry/{group}/info`).
pub const INFO: &str = "info";

/// A service name such as `VerifyCodeService`: the characters of a [`GroupName`], and never
/// `info`.
///
/// A service is the directory `/registry/{group}/{service}/`, and every group directory
/// holds the file `/registry/{group}/info`: a service called `info` would make
/// `/registry/{group}/info` a file and a directory at once, which rule 4 of the document
/// forbids.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceName(String);

impl ServiceName {
    /// Validates a service name.
    ///
    /// # Errors
    /// [`SegmentError`] for a value outside the charset, too long, `.`/`..`, or `info`.
    pub fn new(value: impl Into<String>) -> Result<Self, SegmentError> {
        let value = value.into();
        Self::check(&value)?;
        Ok(ServiceName(value))
    }

    fn check(value: &str) -> Result<(), SegmentError> {
        ServiceText::new(value)?;
        if value == INFO {
            return Err(SegmentError::new(
                value,
                "`info` is the group's info file; a service of that name would be a file and a directory at once",
            ));
        }
        Ok(())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServiceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Segment for ServiceName {
    fn encode(&self, _sep: Separator, out: &mut String) {
        out.push_str(&self.0);
    }

    fn decode(raw: &str, _sep: Separator) -> Result<Self, SegmentError> {
        Self::new(raw)
    }

    fn describe() -> String {
        format!("{}, except `{INFO}`", <ServiceText as Segment>::describe())
    }

    fn spec() -> SegmentSpec {
        <ServiceText as Segment>::spec().with_except(&[INFO])
    }
}

keyplane_core::__kv_if_proptest! {
    use keyplane_core::derive_support::proptest::prelude::*;
    use keyplane_core::keyspace::{SegmentStrategy, segment};

    impl SegmentStrategy for ServiceName {
        fn strategy() -> BoxedStrategy<Self> {
            prop_oneof![
                segment::<ServiceText>().prop_filter_map("not `info`", |s| ServiceName::new(s.into_string()).ok()),
                Just(ServiceName(format!("{INFO}x"))),
                Just(ServiceName(format!("x{INFO}"))),
                Just(ServiceName("Info".to_owned())),
            ]
            .boxed()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keyplane_core::keyspace::HostPort;

    #[test]
    fn service_names_exclude_the_info_file() {
        assert!(ServiceName::new("VerifyCodeService").is_ok());
        assert!(ServiceName::new("Info").is_ok());
        for bad in ["info", "", ".", "..", "a/b", "a:b", "服务", "a b"] {
            assert!(ServiceName::new(bad).is_err(), "{bad:?}");
            assert!(
                ServiceName::decode(bad, Separator::Slash).is_err(),
                "{bad:?}"
            );
        }
        assert!(!ServiceName::can_produce("info", Separator::Slash));
        assert!(GroupName::new("info").is_ok());
    }

    /// Every bundled segment's spec accepts exactly what the type decodes, and says it in the
    /// type's words: a tool that has only the manifest checks keys the same way.
    #[test]
    fn bundled_specs_agree_with_decode() {
        use crate::balancer::BalancerRoot;
        use crate::cronix::{JobId, LockName};
        use crate::nxc::{LegacyProvider, ProfileId, ProviderName, RealmId};
        use crate::tenant::{
            FtpUsername, HostName, PlatformConfigName, ServiceCode, TenantCode, TenantName,
        };

        type Decodes = fn(&str, Separator) -> bool;
        macro_rules! table {
            ($($t:ty),*) => {
                vec![$((
                    stringify!($t),
                    <$t as Segment>::spec(),
                    <$t as Segment>::describe(),
                    (|raw, sep| <$t as Segment>::decode(raw, sep).is_ok()) as Decodes,
                )),*]
            };
        }
        let types = table![
            GroupName,
            ServiceName,
            TenantCode,
            FtpUsername,
            TenantName,
            HostName,
            ServiceCode,
            PlatformConfigName,
            JobId,
            LockName,
            BalancerRoot,
            RealmId,
            ProviderName,
            ProfileId,
            LegacyProvider
        ];
        let mut raws: Vec<String> = [
            "",
            ".",
            "..",
            "info",
            "Info",
            "infos",
            "group",
            "index",
            "Group",
            "indexes",
            "a",
            "A-b_c.d",
            "a/b",
            "a:b",
            "a%2Fb",
            "a%3Ab",
            "a%20b",
            "%",
            "%zz",
            "a b",
            "{x}",
            "a\0b",
            "a\nb",
            "默认租户",
            "%E9%BB%98",
            "é",
            "😀",
            "-",
            "0",
            "VerifyCodeService",
        ]
        .map(str::to_owned)
        .to_vec();
        raws.extend([
            "a".repeat(64),
            "a".repeat(65),
            "b".repeat(128),
            "b".repeat(129),
        ]);
        for (name, spec, describe, decodes) in types {
            spec.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(spec.describe(), describe, "{name}");
            for raw in &raws {
                for sep in [Separator::Slash, Separator::Colon] {
                    assert_eq!(
                        spec.check(raw, sep).is_ok(),
                        decodes(raw, sep),
                        "{name} on {raw:?} with {sep:?}"
                    );
                }
            }
        }
        assert!(matches!(
            ServiceName::spec(),
            SegmentSpec::Text { except, .. } if except == [INFO]
        ));
    }

    #[test]
    fn addresses_are_canonical_and_non_zero() {
        let s = Separator::Slash;
        for good in [
            "192.168.0.1:11080",
            "[2001:db8::1]:11080",
            "api.internal:8080",
        ] {
            let addr = HostPort::decode(good, s).unwrap();
            assert_eq!(addr.to_string(), good);
        }
        for bad in [
            "192.168.0.1:0",
            "192.168.0.1:011080",
            "192.168.0.1:65536",
            "[2001:DB8::1]:11080",
            "[2001:db8:0::1]:11080",
            "2001:db8::1:11080",
            "API.internal:8080",
            "192.168.000.1:80",
            "host",
        ] {
            assert!(HostPort::decode(bad, s).is_err(), "{bad:?}");
        }
    }
}
