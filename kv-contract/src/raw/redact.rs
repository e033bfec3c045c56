//! [`redact_url`]: the one redaction of store URLs, for every message, log line and page that
//! shows one; and [`redact_secret`], the same marker for a secret shown on its own (a
//! configuration's password in its `Debug`).

use std::ops::Range;

/// What replaces a hidden secret.
const HIDDEN: &str = "***";

/// Query parameters whose value is a secret: any name containing one of these (ASCII case
/// ignored). Redis takes `?pass=` on `redis+unix://` URLs; the others cover what other
/// clients and proxies accept.
const SECRET_PARAMETERS: [&str; 6] = ["pass", "pwd", "secret", "token", "auth", "credential"];

/// What a `Debug` impl shows for a secret field: `***` when it is set, `None` when not,
/// the marker [`redact_url`] puts in place of a URL's password.
///
/// ```
/// use keyplane_contract::raw::redact_secret;
/// assert_eq!(redact_secret(Some("hunter2")), Some("***"));
/// assert_eq!(redact_secret(None::<&str>), None);
/// ```
pub fn redact_secret<T>(secret: Option<T>) -> Option<&'static str> {
    secret.map(|_| HIDDEN)
}

/// A store URL fit for messages and logs: every secret replaced by `***`.
///
/// A secret may hold any character, `@`, `/`, `?`, `#`, `:`, `,` or `&` unescaped among
/// them, so that where it ends cannot be known; the redactor hides all that may be part of
/// one, rather than show a byte of it:
/// - the user info's password: from the first `:` after `scheme://` (when what precedes
///   it is a user name: no `/`, `?`, `#` or `@`) to the *last* `@` of the URL. Of a
///   multi-host list that repeats the credentials (`redis+cluster://u:p@h1:7000,u:p@h2:7000`)
///   only the last host is shown: the others may be part of the password. A user info
///   without `:` may itself be a token, and is hidden whole up to the authority's last `@`;
/// - the value of a query parameter that names a secret (`password=`, `pass=`, `token=`,
///   `secret=`...) and everything after it, which the value may hold (`&`, `#`);
/// - in a malformed URL (no `scheme://`), everything before its last `@` after the first
///   `:`, or all of it when the scheme's own colon is the only one (`redis:pw@h`).
///
/// Paths keep their `@` (`sled:///tmp/a@b` is shown as it is), and nothing else changes.
///
/// ```
/// use keyplane_contract::raw::redact_url;
/// assert_eq!(redact_url("redis://app:s3cret@10.0.0.5:6379/0"), "redis://app:***@10.0.0.5:6379/0");
/// assert_eq!(redact_url("redis://:s3cret@h:6379"), "redis://:***@h:6379");
/// assert_eq!(redact_url("redis://u:p@ss/word@h:6379"), "redis://u:***@h:6379");
/// assert_eq!(redact_url("etcd://u:s3cret@h1:2379,h2:2379"), "etcd://u:***@h1:2379,h2:2379");
/// assert_eq!(redact_url("redis:/:s3cret@h:6379"), "redis:/:***@h:6379");
/// assert_eq!(redact_url("redis+unix:///run/redis.sock?pass=s3cret"), "redis+unix:///run/redis.sock?pass=***");
/// assert_eq!(redact_url("sled:///var/lib/app@2"), "sled:///var/lib/app@2");
/// ```
pub fn redact_url(url: &str) -> String {
    let (prefix, rest) = split_scheme(url);
    let mut hidden: Vec<Range<usize>> = Vec::new();
    hidden.extend(credentials(prefix, rest));
    hidden.extend(secret_query_values(rest));
    hidden.sort_by_key(|range| range.start);
    let mut out = prefix.to_owned();
    // The end of the last hidden range; ranges that overlap or touch it are one.
    let mut hidden_to: Option<usize> = None;
    for range in hidden {
        match hidden_to {
            Some(end) if range.start <= end => hidden_to = Some(end.max(range.end)),
            _ => {
                out.push_str(&rest[hidden_to.unwrap_or(0)..range.start]);
                out.push_str(HIDDEN);
                hidden_to = Some(range.end);
            }
        }
    }
    out.push_str(&rest[hidden_to.unwrap_or(0)..]);
    out
}

/// Splits `scheme://` (or, malformed, `scheme:` and the slashes after it, as in `redis:/`)
/// from the rest; an empty prefix when the URL does not start with a scheme and a colon.
fn split_scheme(url: &str) -> (&str, &str) {
    let scheme_len = url
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .unwrap_or(url.len());
    if scheme_len == 0 || !url[scheme_len..].starts_with(':') {
        return ("", url);
    }
    let after_colon = scheme_len + 1;
    if url[after_colon..].starts_with("//") {
        // The authority follows; `sled:///tmp` has an empty one, then the path `/tmp`.
        return url.split_at(after_colon + 2);
    }
    let slashes = url[after_colon..].len() - url[after_colon..].trim_start_matches('/').len();
    url.split_at(after_colon + slashes)
}

/// Where in `rest` (the URL after `prefix`) the secret of the user info may be, as the
/// documentation of [`redact_url`] says.
fn credentials(prefix: &str, rest: &str) -> Option<Range<usize>> {
    let last_at = rest.rfind('@')?;
    let user_end = rest[..last_at].find(':');
    let is_user = |end: usize| !rest[..end].contains(['/', '?', '#', '@']);
    if prefix.ends_with("://") {
        if let Some(colon) = user_end.filter(|&colon| is_user(colon)) {
            return Some(colon + 1..last_at);
        }
        // A token as the user info; past the authority, an `@` is a path's.
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        return authority.rfind('@').map(|at| 0..at);
    }
    match user_end {
        Some(colon) if is_user(colon) => Some(colon + 1..last_at),
        // `scheme:secret@host`: the scheme's colon separates the secret.
        _ if prefix.ends_with(':') => Some(0..last_at),
        // No user name before the colon: all of it may be the secret.
        Some(_) => Some(0..last_at),
        // No colon at all (`sled:/tmp/a@b`): a path.
        None => None,
    }
}

/// Where in `rest` the value of the first secret query parameter begins, to the end: the
/// value may hold `&` and `#`, and so what follows. Every `=` after the first `?` is
/// looked at, so that a parameter is found whatever an earlier value holds.
fn secret_query_values(rest: &str) -> Option<Range<usize>> {
    let query = rest.find('?')?;
    rest[query..]
        .match_indices('=')
        .map(|(i, _)| query + i)
        .find(|&eq| {
            let name_start = rest[..eq].rfind(['?', '&', ';']).map_or(0, |i| i + 1);
            is_secret_parameter(&rest[name_start..eq])
        })
        .map(|eq| eq + 1..rest.len())
}

fn is_secret_parameter(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAMETERS.iter().any(|secret| name.contains(secret))
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    const PW: &str = "Sup3rS3cretPw";

    #[test]
    fn hides_the_authority_password() {
        for (url, shown) in [
            ("redis://:PW@h:6379/0", "redis://:***@h:6379/0"),
            ("redis://app:PW@h:6379/0", "redis://app:***@h:6379/0"),
            ("rediss://app:PW@h:6379", "rediss://app:***@h:6379"),
            (
                "etcd://root:PW@h:2379?namespace=a/",
                "etcd://root:***@h:2379?namespace=a/",
            ),
            ("redis://PW@h:6379", "redis://***@h:6379"),
            // An unescaped `@` in the password, with a `/`, `?` or `#` after it.
            ("redis://u:P@W@h:6379", "redis://u:***@h:6379"),
            ("redis://u:P@ss/W@h:6379", "redis://u:***@h:6379"),
            ("redis://u:P@s?s#W@h:6379/0", "redis://u:***@h:6379/0"),
            ("etcd://u:PW@[::1]:2379", "etcd://u:***@[::1]:2379"),
        ] {
            let url = url.replace("PW", PW);
            assert_eq!(redact_url(&url), shown, "{url}");
        }
    }

    #[test]
    fn hides_passwords_of_multi_host_authorities() {
        for (url, shown) in [
            (
                "etcd://u:PW@h1:2379,h2:2379",
                "etcd://u:***@h1:2379,h2:2379",
            ),
            // What lies between the first `:` and the last `@` may all be the password.
            (
                "redis+cluster://u:PW@h1:7000,u:PW@h2:7000",
                "redis+cluster://u:***@h2:7000",
            ),
            (
                "redis+cluster://u:PW@h1:7000,h2:7000",
                "redis+cluster://u:***@h1:7000,h2:7000",
            ),
            // A comma and an `@` in the password.
            ("etcd://u:P,W@x@h1:2379", "etcd://u:***@h1:2379"),
        ] {
            let url = url.replace("PW", PW);
            assert_eq!(redact_url(&url), shown, "{url}");
            assert!(!redact_url(&url).contains(PW));
        }
    }

    #[test]
    fn hides_secret_query_parameters() {
        for (url, shown) in [
            (
                "redis+unix:///run/r.sock?db=1&pass=PW",
                "redis+unix:///run/r.sock?db=1&pass=***",
            ),
            // The value may hold `#` and `&`: what follows it is hidden too.
            ("etcd://h:2379?password=PW#x", "etcd://h:2379?password=***"),
            (
                "redis://h:1?protocol=resp3&Token=PW&db=1",
                "redis://h:1?protocol=resp3&Token=***",
            ),
            ("etcd://h:2379?namespace=PW", "etcd://h:2379?namespace=PW"),
        ] {
            let url = url.replace("PW", PW);
            assert_eq!(redact_url(&url), shown.replace("PW", PW), "{url}");
        }
    }

    #[test]
    fn keeps_paths_and_plain_urls() {
        for url in [
            "sled:///tmp/a@b",
            "sled:///tmp/a:b@c",
            "sled://data/a@b",
            "mem://",
            "redis://h:6379/0",
            "etcd://h1:2379,h2:2379",
            "",
            "not a url",
        ] {
            assert_eq!(redact_url(url), url);
        }
    }

    #[test]
    fn hides_passwords_of_malformed_urls() {
        for url in [
            "redis:/:PW@h:6379",
            "redis//:PW@h",
            "redis:PW@h",
            "redis://:P/W@h:6379/0",
            "redis://u:P?W@h:6379",
            "redis://u:P#W@h",
            "redis://u:12/PW@h",
            ":PW@h",
            "u:PW@h",
        ] {
            let url = url.replace("PW", PW);
            let shown = redact_url(&url);
            assert!(
                !shown.contains(PW) && !shown.contains("Sup3r") && !shown.contains("S3cretPw"),
                "{url} -> {shown}"
            );
            assert!(shown.contains("***@h"), "{url} -> {shown}");
        }
    }

    mod never_shows_a_secret {
        use super::redact_url;
        use proptest::prelude::*;

        /// A secret of any characters, the URL's delimiters most of all.
        fn secret() -> impl Strategy<Value = String> {
            let special = prop::sample::select(vec![
                '@', '/', '?', '#', ':', ',', '%', '&', '=', '[', ']', '*', ';', '+', ' ',
            ]);
            let char = prop_oneof![
                3 => special,
                2 => prop::char::range('a', 'z'),
                1 => prop::char::range('0', '9'),
                1 => any::<char>(),
            ];
            prop::collection::vec(char, 1..24).prop_map(|chars| chars.into_iter().collect())
        }

        /// One to three hosts, as `host:port` or `[v6]:port`.
        fn hosts() -> impl Strategy<Value = Vec<String>> {
            let host = prop_oneof![
                (1..4u8, 1..9999u16).prop_map(|(n, port)| format!("h{n}:{port}")),
                (1..9999u16).prop_map(|port| format!("[::1]:{port}")),
            ];
            prop::collection::vec(host, 1..4)
        }

        /// A URL that holds `SECRET` where a secret goes, and its text with every `SECRET`
        /// taken out.
        fn url() -> impl Strategy<Value = (String, String)> {
            let scheme = prop::sample::select(vec![
                "redis",
                "rediss",
                "etcd",
                "redis+cluster",
                "redis+sentinel",
                "redis+unix",
            ]);
            let path = prop::sample::select(vec!["", "/", "/0", "/keyplane/2", "/run/r.sock"]);
            let query = prop::sample::select(vec!["", "?db=1", "?protocol=resp3&db=2", "#x"]);
            let secret_name = prop::sample::select(vec![
                "password",
                "pass",
                "sentinel_password",
                "Token",
                "client_secret",
            ]);
            let user = "[a-z0-9_]{0,6}";
            (scheme, user, hosts(), path, query, secret_name, 0..4u8).prop_map(
                |(scheme, user, hosts, path, query, name, form)| {
                    let template = match form {
                        // One user info for every host.
                        0 => format!("{scheme}://{user}:SECRET@{}{path}{query}", hosts.join(",")),
                        // A user info before each host.
                        1 => {
                            let hosts: Vec<String> =
                                hosts.iter().map(|h| format!("{user}:SECRET@{h}")).collect();
                            format!("{scheme}://{}{path}{query}", hosts.join(","))
                        }
                        // A secret query parameter, first or after another.
                        2 => format!("{scheme}://{}{path}?{name}=SECRET&db=1", hosts.join(",")),
                        _ => format!("{scheme}://{}{path}?db=1&{name}=SECRET", hosts.join(",")),
                    };
                    let rest = template.replace("SECRET", "");
                    (template, rest)
                },
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// Whatever the secret holds, no part of it is shown that the URL does not also
            /// hold outside it.
            #[test]
            fn whatever_it_holds((template, rest) in url(), secret in secret()) {
                let url = template.replace("SECRET", &secret);
                let shown = redact_url(&url);
                let chars: Vec<char> = secret.chars().collect();
                for piece in shown.split("***") {
                    for start in 0..chars.len() {
                        for end in start + 1..=chars.len() {
                            let part: String = chars[start..end].iter().collect();
                            prop_assert!(
                                !piece.contains(&part) || rest.contains(&part),
                                "{url:?} is shown as {shown:?}: {part:?} of the secret {secret:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}
