//! [`CronSpec`]: the schedules a job's `cron` field may hold, as the document's Go scheduler
//! (robfig/cron) reads them: five fields (minute, hour, day of month, month, day of week),
//! six with seconds first, or a descriptor (`@yearly`, `@annually`, `@monthly`, `@weekly`,
//! `@daily`, `@midnight`, `@hourly`, `@every <duration>`).

use std::fmt;
use std::time::Duration;

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CronSpec {
    /// Fields, seconds first (`0` when the expression had five).
    Fields {
        /// Seconds, minutes, hours, days of month, months, days of week, each as the sorted
        /// values it matches.
        fields: Box<[Vec<u8>; 6]>,
    },
    /// `@every <duration>`: runs at a fixed interval.
    Every(Duration),
}

/// One field's name and bounds.
struct Field {
    name: &'static str,
    min: u8,
    max: u8,
    names: &'static [&'static str],
}

const SECOND: Field = Field {
    name: "second",
    min: 0,
    max: 59,
    names: &[],
};
const MINUTE: Field = Field {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Field = Field {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Field = Field {
    name: "day of month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Field = Field {
    name: "month",
    min: 1,
    max: 12,
    names: &[
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ],
};
const DOW: Field = Field {
    name: "day of week",
    min: 0,
    max: 6,
    names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
};

impl CronSpec {
    /// Parses `spec`.
    ///
    /// ```
    /// use keyplane_schemas::cronix::CronSpec;
    /// use std::time::Duration;
    ///
    /// assert_eq!(CronSpec::parse("@every 1h30m")?, CronSpec::Every(Duration::from_secs(5400)));
    /// assert_eq!(CronSpec::parse("@daily")?, CronSpec::parse("0 0 * * *")?);
    /// assert!(CronSpec::parse("*/15 9-17 * * MON-FRI").is_ok());
    /// assert!(CronSpec::parse("0 25 * * *").unwrap_err().contains("hour"));
    /// assert!(CronSpec::parse("@every 0s").is_err());
    /// # Ok::<(), String>(())
    /// ```
    ///
    /// # Errors
    /// A message naming the field or descriptor at fault.
    pub fn parse(spec: &str) -> Result<CronSpec, String> {
        let spec = spec.trim();
        if let Some(descriptor) = spec.strip_prefix('@') {
            return Self::descriptor(descriptor);
        }
        let parts: Vec<&str> = spec.split_whitespace().collect();
        let (seconds, rest) = match parts.len() {
            5 => ("0", &parts[..]),
            6 => (parts[0], &parts[1..]),
            n => {
                return Err(format!(
                    "cron expression {spec:?} has {n} fields, not 5 or 6"
                ));
            }
        };
        let fields = [
            parse_field(seconds, &SECOND)?,
            parse_field(rest[0], &MINUTE)?,
            parse_field(rest[1], &HOUR)?,
            parse_field(rest[2], &DOM)?,
            parse_field(rest[3], &MONTH)?,
            parse_field(rest[4], &DOW)?,
        ];
        Ok(CronSpec::Fields {
            fields: Box::new(fields),
        })
    }

    fn descriptor(descriptor: &str) -> Result<CronSpec, String> {
        let fields = match descriptor {
            "yearly" | "annually" => "0 0 0 1 1 *",
            "monthly" => "0 0 0 1 * *",
            "weekly" => "0 0 0 * * 0",
            "daily" | "midnight" => "0 0 0 * * *",
            "hourly" => "0 0 * * * *",
            other => {
                let Some(duration) = other.strip_prefix("every ") else {
                    return Err(format!("unknown cron descriptor @{other}"));
                };
                let every = parse_duration(duration.trim())?;
                if every.is_zero() {
                    return Err("@every needs a positive duration".into());
                }
                return Ok(CronSpec::Every(every));
            }
        };
        CronSpec::parse(fields)
    }
}

impl fmt::Display for CronSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CronSpec::Every(d) => write!(f, "@every {d:?}"),
            CronSpec::Fields { fields } => {
                let text: Vec<String> = fields
                    .iter()
                    .map(|values| {
                        values
                            .iter()
                            .map(u8::to_string)
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .collect();
                f.write_str(&text.join(" "))
            }
        }
    }
}

/// One field: `*` or `?`, values, ranges and steps separated by commas.
fn parse_field(text: &str, field: &Field) -> Result<Vec<u8>, String> {
    let bad = |why: String| format!("cron {} field {text:?}: {why}", field.name);
    let mut values = std::collections::BTreeSet::new();
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u8 = step
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| bad(format!("step {step:?} is not a positive number")))?;
                (range, step)
            }
            None => (part, 1),
        };
        let (low, high) = if range == "*" || range == "?" {
            (field.min, field.max)
        } else if let Some((low, high)) = range.split_once('-') {
            (
                value(low, field).map_err(&bad)?,
                value(high, field).map_err(&bad)?,
            )
        } else {
            let v = value(range, field).map_err(&bad)?;
            // `5/10` means from 5 to the end, every 10.
            (v, if part.contains('/') { field.max } else { v })
        };
        if low > high {
            return Err(bad(format!("the range {low}-{high} is empty")));
        }
        values.extend((low..=high).step_by(usize::from(step)));
    }
    Ok(values.into_iter().collect())
}

/// One value of a field: a number within its bounds, or a name (months, days of week).
fn value(text: &str, field: &Field) -> Result<u8, String> {
    let upper = text.to_ascii_uppercase();
    if let Some(i) = field.names.iter().position(|n| *n == upper) {
        return Ok(field.min + i as u8);
    }
    let v: u8 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    // Sunday is 0 or 7, as in robfig/cron.
    let v = if field.name == DOW.name && v == 7 {
        0
    } else {
        v
    };
    if v < field.min || v > field.max {
        return Err(format!("{v} is outside {}-{}", field.min, field.max));
    }
    Ok(v)
}

/// A Go duration: numbers with units (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), such as `5m`,
/// `1h30m` or `1.5s`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("@every {text:?}: not a duration such as 5m, 1h30m or 10s");
    if text.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if number_len == 0 {
            return Err(bad());
        }
        let number: f64 = rest[..number_len].parse().map_err(|_| bad())?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += number * seconds;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_descriptors() {
        let every_15 = CronSpec::parse("*/15 * * * *").unwrap();
        let CronSpec::Fields { fields } = &every_15 else {
            panic!()
        };
        assert_eq!(fields[0], [0]);
        assert_eq!(fields[1], [0, 15, 30, 45]);
        let six = CronSpec::parse("30 0 2 * * 1-5").unwrap();
        let CronSpec::Fields { fields } = &six else {
            panic!()
        };
        assert_eq!(
            (fields[0].as_slice(), fields[5].as_slice()),
            (&[30][..], &[1, 2, 3, 4, 5][..])
        );
        assert_eq!(
            CronSpec::parse("0 0 * * SUN").unwrap(),
            CronSpec::parse("0 0 * * 7").unwrap()
        );
        assert_eq!(
            CronSpec::parse("@weekly").unwrap(),
            CronSpec::parse("0 0 * * 0").unwrap()
        );
        assert_eq!(
            CronSpec::parse("@annually").unwrap(),
            CronSpec::parse("@yearly").unwrap()
        );
        assert_eq!(
            CronSpec::parse("@hourly").unwrap(),
            CronSpec::parse("0 * * * *").unwrap()
        );
        assert_eq!(
            CronSpec::parse("@every 5m").unwrap(),
            CronSpec::Every(Duration::from_secs(300))
        );
        assert_eq!(
            CronSpec::parse("@every 1.5s").unwrap(),
            CronSpec::Every(Duration::from_millis(1500))
        );
        assert_eq!(
            CronSpec::parse("5/20 * * * *").unwrap(),
            CronSpec::parse("5,25,45 * * * *").unwrap()
        );
    }

    #[test]
    fn errors_name_what_is_wrong() {
        for (spec, says) in [
            ("* * * *", "4 fields"),
            ("60 * * * *", "minute"),
            ("* 24 * * *", "hour"),
            ("* * 0 * *", "day of month"),
            ("* * * 13 *", "month"),
            ("* * * * 8", "day of week"),
            ("*/0 * * * *", "step"),
            ("5-1 * * * *", "empty"),
            ("x * * * *", "not a number"),
            ("@sometimes", "unknown cron descriptor"),
            ("@every", "unknown cron descriptor"),
            ("@every 5", "not a duration"),
            ("@every 5d", "not a duration"),
            ("@every 0m", "positive"),
        ] {
            let err = CronSpec::parse(spec).unwrap_err();
            assert!(err.contains(says), "{spec}: {err}");
        }
    }
}
