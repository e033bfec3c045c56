//! A store URL's query parameters as kvctl adds them: the connection flags (`--cacert`,
//! `--user`, `--connect-timeout`...) become `ca=`, `user=`, `connect_timeout=`..., so that
//! every option reaches the store through the one URL grammar the library parses.

use crate::error::{CliError, CliResult};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use std::time::Duration;

/// What is escaped in a parameter's value: all but the unreserved characters, and `/` (left
/// as it is, so that file paths stay readable in messages).
const VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// The query of `url`: what follows its first `?`, without a fragment.
fn query(url: &str) -> Option<&str> {
    let (_, query) = url.split_once('?')?;
    Some(query.split('#').next().unwrap_or(query))
}

/// The raw (still escaped) value of the parameter `name` in `url`, if it has one.
pub(crate) fn value<'a>(url: &'a str, name: &str) -> Option<&'a str> {
    query(url)?
        .split('&')
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

/// Adds `name=value` (the value escaped) to `url`'s query.
///
/// # Errors
/// Exit code 2 when the URL has the parameter already: two values, one from the URL and one
/// from a flag, are refused rather than one of them silently chosen. `flag` names the flag
/// or config key that gave this one.
pub(crate) fn append(url: &mut String, name: &str, value: &str, flag: &str) -> CliResult<()> {
    if self::value(url, name).is_some() {
        return Err(CliError::invalid(format!(
            "{flag}: the store URL has `{name}=` already; give it once, in the URL or as {flag}"
        )));
    }
    if url.contains('#') {
        return Err(CliError::invalid(format!(
            "{flag}: the store URL has a fragment (`#`), where no option can follow"
        )));
    }
    let separator = match query(url) {
        None => '?',
        Some("") => '\0',
        Some(_) if url.ends_with('&') => '\0',
        Some(_) => '&',
    };
    if separator != '\0' {
        url.push(separator);
    }
    url.push_str(name);
    url.push('=');
    url.push_str(&escape(value));
    Ok(())
}

/// `value` escaped as [`append`] puts it in a URL.
pub(crate) fn escape(value: &str) -> String {
    utf8_percent_encode(value, VALUE).to_string()
}

/// Parses a duration with its unit: `500ms`, `3s`, `1.5s`, `2m`, `1h`.
///
/// # Errors
/// A message saying what is expected, for a missing or unknown unit, a number that is not
/// positive, or a duration below a millisecond.
pub(crate) fn parse_duration(arg: &str) -> Result<Duration, String> {
    let expected = || {
        format!(
            "{arg:?} is not a duration: expected a number and its unit, such as 3s, 500ms or 1m"
        )
    };
    let split = arg
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(expected)?;
    let (number, unit) = arg.split_at(split);
    let number: f64 = number.parse().map_err(|_| expected())?;
    let seconds = match unit {
        "ms" => number / 1000.0,
        "s" => number,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => return Err(expected()),
    };
    if !(seconds.is_finite() && (0.001..1e9).contains(&seconds)) {
        return Err(format!(
            "{arg:?}: a duration is at least 1ms (and below 30 years)"
        ));
    }
    Ok(Duration::from_millis((seconds * 1000.0).round() as u64))
}

/// A duration as the URL grammar takes it: whole seconds as `3s`, anything else in
/// milliseconds (`1500ms`).
pub(crate) fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{millis}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_escaped_values() {
        let mut url = "etcd://h:2379".to_owned();
        append(&mut url, "ca", "/etc/my certs/ca&1.pem", "--cacert").unwrap();
        append(&mut url, "password", "p@ss:w/rd&x=1%+ é", "KVCTL_PASSWORD").unwrap();
        assert_eq!(
            url,
            "etcd://h:2379?ca=/etc/my%20certs/ca%261.pem\
             &password=p%40ss%3Aw/rd%26x%3D1%25%2B%20%C3%A9"
        );
        let mut url = "etcd://h:2379/?namespace=a/".to_owned();
        append(&mut url, "user", "root", "--user").unwrap();
        assert_eq!(url, "etcd://h:2379/?namespace=a/&user=root");
        let mut url = "redis://h:6379/0?".to_owned();
        append(&mut url, "connect_timeout", "2s", "--connect-timeout").unwrap();
        assert_eq!(url, "redis://h:6379/0?connect_timeout=2s");
    }

    #[test]
    fn refuses_a_parameter_given_twice() {
        let mut url = "rediss://h:6379/0?ca=/a.pem&x=1".to_owned();
        let err = append(&mut url, "ca", "/b.pem", "--cacert").unwrap_err();
        assert!(err.message.contains("`ca=` already"), "{}", err.message);
        assert_eq!(url, "rediss://h:6379/0?ca=/a.pem&x=1");
        // A name that merely ends like another is another parameter.
        let mut url = "etcd://h:2379?cacert=1".to_owned();
        append(&mut url, "ca", "/b.pem", "--cacert").unwrap();
        assert_eq!(value(&url, "ca"), Some("/b.pem"));
    }

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        for bad in [
            "3", "s", "", "-1s", "0s", "3 s", "3sec", "1e3s", "0.1ms", "1.2.3s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(format_duration(Duration::from_secs(3)), "3s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    }
}
