//! Durations as text with their unit (`250ms`, `5s`), the one form a duration takes in a
//! store URL and in a config file: a bare number is refused everywhere, since nobody can
//! tell whether `5` means seconds or milliseconds.
//!
//! A config's `Duration` field uses it with `#[serde(with = "keyplane_contract::raw::duration_text")]`:
//!
//! ```
//! use std::time::Duration;
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Config {
//!     #[serde(with = "keyplane_contract::raw::duration_text")]
//!     connect_timeout: Duration,
//! }
//! let config: Config = serde_json::from_str(r#"{"connect_timeout": "1.5s"}"#).unwrap();
//! assert_eq!(config.connect_timeout, Duration::from_millis(1500));
//! assert_eq!(serde_json::to_string(&config).unwrap(), r#"{"connect_timeout":"1500ms"}"#);
//! assert!(serde_json::from_str::<Config>(r#"{"connect_timeout": 1500}"#).is_err());
//! ```

use serde::{Deserialize, Deserializer, Serializer};
use std::time::Duration;

/// `duration` as text: whole seconds as `5s`, anything else as milliseconds (`250ms`),
/// which [`parse()`] reads back to the same value (at millisecond precision).
pub fn format(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis.is_multiple_of(1000) && millis > 0 {
        format!("{}s", millis / 1000)
    } else {
        format!("{millis}ms")
    }
}

/// Parses a duration with its unit: `500ms`, `2s`, `1.5s`, `1m`, `1h`.
///
/// # Errors
/// The message for a missing or unknown unit (a bare number is refused: is `2` seconds or
/// milliseconds?) or a negative or enormous duration.
pub fn parse(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| "expects a duration with its unit, such as 2s, 500ms or 1m".to_owned())?;
    let seconds = match unit {
        "ms" => number / 1000.0,
        "s" => number,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        "" => {
            return Err(
                "expects a duration with its unit (2s, 500ms, 1m, 1h), not a bare number"
                    .to_owned(),
            );
        }
        _ => return Err("expects a duration whose unit is ms, s, m or h".to_owned()),
    };
    if !(seconds.is_finite() && seconds < 1e9) {
        return Err("expects a duration below 30 years".to_owned());
    }
    Ok(Duration::from_millis((seconds * 1000.0).round() as u64))
}

/// Serializes `duration` as [`format()`] gives it.
///
/// # Errors
/// The serializer's.
pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format(*duration))
}

/// Deserializes a duration from text with its unit, as [`parse()`] reads it.
///
/// # Errors
/// A number without a unit, an unknown unit, or text that is no duration.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer).map_err(|_| {
        serde::de::Error::custom("expected a duration with its unit, such as \"2s\" or \"500ms\"")
    })?;
    parse(&text).map_err(|why| serde::de::Error::custom(format!("a duration {why}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        for millis in [0, 1, 999, 1000, 1500, 60_000, 3_600_001] {
            let d = Duration::from_millis(millis);
            assert_eq!(parse(&format(d)), Ok(d), "{}", format(d));
        }
        assert_eq!(format(Duration::from_secs(5)), "5s");
        assert_eq!(format(Duration::ZERO), "0ms");
        assert!(parse("5").is_err());
    }
}
