//! [`HostPort`]: `host:port` segments (IPv4, bracketed IPv6, DNS names), as in
//! `/registry/{group}/{service}/{addr}/status`.

use super::spec::SegmentSpec;
use super::traits::{Segment, SegmentError, Separator};
use std::fmt::{self, Write};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The host of a [`HostPort`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// An IPv4 address, dotted decimal.
    Ipv4(Ipv4Addr),
    /// An IPv6 address, written bracketed in its RFC 5952 form (`[2001:db8::1]`).
    Ipv6(Ipv6Addr),
    /// A DNS name: lowercase labels of `a-z 0-9 -`, 1–63 bytes each, at most 253 bytes, not
    /// starting or ending with `-`, and a last label that is not all digits.
    Dns(String),
}

/// A `host:port` address with a port in 1–65535, in canonical form: `10.0.0.1:8080`,
/// `[::1]:80`, `api.example.com:443`.
///
/// In a `/`-separated key it is written as is. In a `:`-separated key each `:` is
/// percent-escaped as `%3A` (`nxc:node:10.0.0.1%3A8080`), so the segment never holds the
/// separator; decoding accepts only that form there.
///
/// ```
/// use keyplane_core::keyspace::{HostPort, Segment, Separator};
/// let addr = HostPort::parse("[2001:db8::1]:443")?;
/// assert_eq!(addr.port(), 443);
/// assert_eq!(addr.to_segment_string(Separator::Colon), "[2001%3Adb8%3A%3A1]%3A443");
/// assert!(HostPort::parse("[2001:DB8::1]:443").is_err()); // not canonical
/// assert!(HostPort::parse("example.com:0").is_err());
/// # Ok::<(), keyplane_core::keyspace::SegmentError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    host: Host,
    port: u16,
}

impl HostPort {
    /// A host and port.
    ///
    /// # Errors
    /// [`SegmentError`] for port 0 or a DNS name that breaks the rules of [`Host::Dns`].
    pub fn new(host: Host, port: u16) -> Result<Self, SegmentError> {
        if port == 0 {
            return Err(SegmentError::new("0", "port must be in 1-65535"));
        }
        if let Host::Dns(name) = &host {
            check_dns(name)?;
        }
        Ok(HostPort { host, port })
    }

    /// Parses the canonical `host:port` text (as written in a `/`-separated key).
    ///
    /// # Errors
    /// [`SegmentError`] for anything but the canonical form.
    pub fn parse(text: &str) -> Result<Self, SegmentError> {
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| SegmentError::new(text, "expected host:port"))?;
        if port.is_empty() || port.starts_with('0') || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(SegmentError::new(
                text,
                "port must be canonical decimal 1-65535",
            ));
        }
        let port: u16 = port
            .parse()
            .map_err(|_| SegmentError::new(text, "port must be in 1-65535"))?;
        let host = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Host::Ipv6(
                v6.parse()
                    .map_err(|_| SegmentError::new(text, "invalid IPv6 address"))?,
            )
        } else if let Ok(v4) = host.parse::<Ipv4Addr>() {
            Host::Ipv4(v4)
        } else {
            Host::Dns(host.to_owned())
        };
        let parsed = HostPort::new(host, port)
            .map_err(|e| SegmentError::new(text, e.reason().to_owned()))?;
        if parsed.to_string() != text {
            return Err(SegmentError::new(text, "not the canonical host:port form"));
        }
        Ok(parsed)
    }

    /// The host.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl std::str::FromStr for HostPort {
    type Err = SegmentError;

    /// [`HostPort::parse`].
    fn from_str(text: &str) -> Result<Self, SegmentError> {
        HostPort::parse(text)
    }
}

fn check_dns(name: &str) -> Result<(), SegmentError> {
    let err = |reason: &'static str| Err(SegmentError::new(name, reason));
    if name.is_empty() || name.len() > 253 {
        return err("a DNS name has 1-253 bytes");
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return err("a DNS label has 1-63 bytes");
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return err("a DNS name is lowercase a-z, 0-9 and `-`");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return err("a DNS label does not start or end with `-`");
        }
    }
    if name
        .rsplit('.')
        .next()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
    {
        return err("the last DNS label is not all digits (that would read as an IP address)");
    }
    Ok(())
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Ipv4(ip) => write!(f, "{ip}:{}", self.port),
            Host::Ipv6(ip) => write!(f, "[{ip}]:{}", self.port),
            Host::Dns(name) => write!(f, "{name}:{}", self.port),
        }
    }
}

impl Segment for HostPort {
    fn encode(&self, sep: Separator, out: &mut String) {
        match sep {
            // Writing to a String cannot fail.
            Separator::Slash => drop(write!(out, "{self}")),
            Separator::Colon => {
                for c in self.to_string().chars() {
                    match c {
                        ':' => out.push_str("%3A"),
                        c => out.push(c),
                    }
                }
            }
        }
    }

    fn decode(raw: &str, sep: Separator) -> Result<Self, SegmentError> {
        let parsed = match sep {
            Separator::Slash => HostPort::parse(raw),
            Separator::Colon => {
                if raw.contains(':') {
                    return Err(SegmentError::new(raw, "`:` is escaped as %3A in `:` keys"));
                }
                HostPort::parse(&raw.replace("%3A", ":"))
            }
        };
        parsed.map_err(|e| SegmentError::new(raw, e.reason().to_owned()))
    }

    fn describe() -> String {
        "host:port: IPv4, [IPv6] (RFC 5952), or lowercase DNS name; port 1-65535 \
         (`:` written %3A in `:`-separated keys)"
            .into()
    }

    fn spec() -> SegmentSpec {
        SegmentSpec::HostPort
    }
}

impl Segment for Ipv4Addr {
    fn encode(&self, _sep: Separator, out: &mut String) {
        // Writing to a String cannot fail.
        let _ = write!(out, "{self}");
    }

    fn decode(raw: &str, _sep: Separator) -> Result<Self, SegmentError> {
        let ip: Ipv4Addr = raw
            .parse()
            .map_err(|_| SegmentError::new(raw, "not an IPv4 address"))?;
        if ip.to_string() != raw {
            return Err(SegmentError::new(
                raw,
                "not the canonical dotted-decimal form",
            ));
        }
        Ok(ip)
    }

    fn describe() -> String {
        "IPv4 address, canonical dotted decimal".into()
    }

    fn spec() -> SegmentSpec {
        SegmentSpec::Ipv4
    }
}
