//! The line format of records, for a child process that prints them and the parent that
//! reads them: one record per line, words separated by spaces (keys, values and members never
//! hold spaces, commas or `|`).

use super::history::{Call, Outcome, Record, Ret};
use std::fmt;

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("-")
}

fn parse_opt(s: &str) -> Option<String> {
    (s != "-").then(|| s.to_string())
}

fn flag(b: bool) -> u8 {
    u8::from(b)
}

/// A message on one line.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Call::Get { key } => write!(f, "get {key}"),
            Call::Put { key, value } => write!(f, "put {key} {value}"),
            Call::PutPair { keys, value } => write!(f, "pair {} {} {value}", keys[0], keys[1]),
            Call::Delete { key } => write!(f, "del {key}"),
            Call::Cas {
                key,
                expect,
                revision,
                value,
            } => {
                let rev = revision.map_or("-".to_string(), |r| r.to_string());
                write!(f, "cas {key} {} {rev} {value}", opt(expect))
            }
            Call::SetAdd { key, member } => write!(f, "sadd {key} {member}"),
            Call::SetRemove { key, member } => write!(f, "srem {key} {member}"),
            Call::SetContains { key, member } => write!(f, "shas {key} {member}"),
            Call::SetMembers { key } => write!(f, "smembers {key}"),
            Call::LeasePut { key, value, ttl_ms } => write!(f, "lput {key} {value} {ttl_ms}"),
        }
    }
}

impl Call {
    fn parse(words: &[&str]) -> Option<Call> {
        let s = |i: usize| words.get(i).map(|w| w.to_string());
        Some(match *words.first()? {
            "get" => Call::Get { key: s(1)? },
            "put" => Call::Put {
                key: s(1)?,
                value: s(2)?,
            },
            "pair" => Call::PutPair {
                keys: [s(1)?, s(2)?],
                value: s(3)?,
            },
            "del" => Call::Delete { key: s(1)? },
            "cas" => Call::Cas {
                key: s(1)?,
                expect: parse_opt(words.get(2)?),
                revision: parse_opt(words.get(3)?)
                    .map(|r| r.parse())
                    .transpose()
                    .ok()?,
                value: s(4)?,
            },
            "sadd" => Call::SetAdd {
                key: s(1)?,
                member: s(2)?,
            },
            "srem" => Call::SetRemove {
                key: s(1)?,
                member: s(2)?,
            },
            "shas" => Call::SetContains {
                key: s(1)?,
                member: s(2)?,
            },
            "smembers" => Call::SetMembers { key: s(1)? },
            "lput" => Call::LeasePut {
                key: s(1)?,
                value: s(2)?,
                ttl_ms: words.get(3)?.parse().ok()?,
            },
            _ => return None,
        })
    }
}

impl fmt::Display for Ret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ret::Got(None) => write!(f, "got -"),
            Ret::Got(Some((v, r))) => write!(f, "got {v} {r}"),
            Ret::Written(r) => write!(f, "written {r}"),
            Ret::Deleted(e, r) => write!(f, "deleted {} {r}", flag(*e)),
            Ret::Cas(s, r) => write!(f, "cas {} {r}", flag(*s)),
            Ret::Changed(c, r) => write!(f, "changed {} {r}", flag(*c)),
            Ret::Contains(c) => write!(f, "contains {}", flag(*c)),
            Ret::Members(m) if m.is_empty() => write!(f, "members -"),
            Ret::Members(m) => write!(f, "members {}", m.join(",")),
            Ret::Leased(l, r) => write!(f, "leased {l} {r}"),
        }
    }
}

impl Ret {
    fn parse(words: &[&str]) -> Option<Ret> {
        let n = |i: usize| words.get(i).and_then(|w| w.parse::<i64>().ok());
        let b = |i: usize| words.get(i).map(|w| *w == "1");
        Some(match *words.first()? {
            "got" if words.get(1) == Some(&"-") => Ret::Got(None),
            "got" => Ret::Got(Some((words.get(1)?.to_string(), n(2)?))),
            "written" => Ret::Written(n(1)?),
            "deleted" => Ret::Deleted(b(1)?, n(2)?),
            "cas" => Ret::Cas(b(1)?, n(2)?),
            "changed" => Ret::Changed(b(1)?, n(2)?),
            "contains" => Ret::Contains(b(1)?),
            "members" if words.get(1) == Some(&"-") => Ret::Members(Vec::new()),
            "members" => Ret::Members(words.get(1)?.split(',').map(String::from).collect()),
            "leased" => Ret::Leased(n(1)?, n(2)?),
            _ => return None,
        })
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ok(ret) => write!(f, "ok {ret}"),
            Outcome::Fail(why) => write!(f, "fail {}", one_line(why)),
            Outcome::Unknown(why) => write!(f, "unknown {}", one_line(why)),
        }
    }
}

impl Outcome {
    fn parse(words: &[&str]) -> Option<Outcome> {
        let rest = || words[1..].join(" ");
        Some(match *words.first()? {
            "ok" => Outcome::Ok(Ret::parse(&words[1..])?),
            "fail" => Outcome::Fail(rest()),
            "unknown" => Outcome::Unknown(rest()),
            _ => return None,
        })
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Record::Invoke {
                id,
                client,
                at,
                call,
            } => write!(f, "I {id} {client} {at} {call}"),
            Record::Complete { id, at, outcome } => write!(f, "C {id} {at} {outcome}"),
            Record::Open {
                segment,
                main,
                start,
                at,
            } => write!(f, "S {segment} {} {start} {at}", flag(*main)),
            Record::Batch {
                segment,
                at,
                revision,
                events,
            } => write!(f, "B {segment} {at} {revision} {}", events.join("|")),
            Record::End {
                segment,
                at,
                reason,
            } => write!(f, "E {segment} {at} {}", one_line(reason)),
            Record::Fault { at, what } => write!(f, "F {at} {}", one_line(what)),
        }
    }
}

impl std::str::FromStr for Record {
    type Err = String;

    fn from_str(line: &str) -> Result<Record, String> {
        let words: Vec<&str> = line.split(' ').collect();
        let n = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok());
        let rest = |i: usize| words.get(i..).map(|w| w.join(" ")).unwrap_or_default();
        let record = match words.first().copied() {
            Some("I") => Call::parse(&words[4..]).and_then(|call| {
                Some(Record::Invoke {
                    id: n(1)?,
                    client: u32::try_from(n(2)?).ok()?,
                    at: n(3)?,
                    call,
                })
            }),
            Some("C") => Outcome::parse(&words[3..]).and_then(|outcome| {
                Some(Record::Complete {
                    id: n(1)?,
                    at: n(2)?,
                    outcome,
                })
            }),
            Some("S") => (|| {
                Some(Record::Open {
                    segment: u32::try_from(n(1)?).ok()?,
                    main: n(2)? == 1,
                    start: words.get(3)?.parse().ok()?,
                    at: n(4)?,
                })
            })(),
            Some("B") => (|| {
                let events = rest(4);
                Some(Record::Batch {
                    segment: u32::try_from(n(1)?).ok()?,
                    at: n(2)?,
                    revision: words.get(3)?.parse().ok()?,
                    events: if events.is_empty() {
                        Vec::new()
                    } else {
                        events.split('|').map(String::from).collect()
                    },
                })
            })(),
            Some("E") => (|| {
                Some(Record::End {
                    segment: u32::try_from(n(1)?).ok()?,
                    at: n(2)?,
                    reason: rest(3),
                })
            })(),
            Some("F") => n(1).map(|at| Record::Fault { at, what: rest(2) }),
            _ => None,
        };
        record.ok_or_else(|| format!("not a record: {line}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_lines() {
        let records = [
            Record::Invoke {
                id: 7,
                client: 2,
                at: 10,
                call: Call::Cas {
                    key: "r/1".into(),
                    expect: None,
                    revision: Some(0),
                    value: "2.7".into(),
                },
            },
            Record::Invoke {
                id: 8,
                client: 2,
                at: 11,
                call: Call::PutPair {
                    keys: ["r/1".into(), "r/2".into()],
                    value: "2.8".into(),
                },
            },
            Record::Complete {
                id: 7,
                at: 20,
                outcome: Outcome::Ok(Ret::Got(Some(("1.1".into(), 5)))),
            },
            Record::Complete {
                id: 8,
                at: 21,
                outcome: Outcome::Ok(Ret::Members(vec!["m0".into(), "m2".into()])),
            },
            Record::Complete {
                id: 9,
                at: 22,
                outcome: Outcome::Unknown("timeout: lost answer".into()),
            },
            Record::Open {
                segment: 1,
                main: true,
                start: 4,
                at: 3,
            },
            Record::Batch {
                segment: 1,
                at: 30,
                revision: 5,
                events: vec!["put,r/1,1.1,5".into(), "sadd,s/0,m1".into()],
            },
            Record::End {
                segment: 1,
                at: 31,
                reason: "unavailable: gone".into(),
            },
            Record::Fault {
                at: 40,
                what: "kill -9 redis".into(),
            },
        ];
        for record in records {
            let line = record.to_string();
            assert_eq!(line.parse::<Record>(), Ok(record), "{line}");
        }
    }
}
