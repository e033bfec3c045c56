//! The validated variable segments of the registry keyspace: group and service names and the
//! instance's gRPC port.

use keyplane_core::keyspace::{Segment, SegmentError, Separator};
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
