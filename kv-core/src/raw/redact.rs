//! [`redact_url`]: the one redaction of store URLs, for every message, log line and page that
//! shows one; and [`redact_secret`], the same marker for a secret shown on its own (a
//! configuration's password in its `Debug`).

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
/// use keyplane_core::raw::redact_secret;
/// assert_eq!(redact_secret(Some("hunter2")), Some("***"));
/// assert_eq!(redact_secret(None::<&str>), None);
/// ```
pub fn redact_secret<T>(secret: Option<T>) -> Option<&'static str> {
    secret.map(|_| HIDDEN)
}

/// A store URL fit for messages and logs: every password replaced by `***`.
///
/// What is hidden:
/// - the password of the authority's `user:password@` (the authority ends at the first `/`,
///   `?` or `#` after `scheme://`), on every host of a comma-separated list
///   (`etcd://u:p@h1:2379,h2:2379`, `redis+cluster://u:p@h1:7000,u:p@h2:7000`); a user
///   info without `:` may itself be a token, and is hidden whole;
/// - the value of a query parameter that names a secret (`password=`, `pass=`, `token=`,
///   `secret=`...);
/// - in a malformed URL (no `scheme://`, or a password holding an unescaped `/`, `?` or
///   `#` so that `x:y@` appears after the authority), everything after the first `:` of
///   what precedes the last `@` (`redis:/:pw@h`, `redis//:pw@h`, `redis:pw@h`).
///
/// Paths keep their `@` (`sled:///tmp/a@b` is shown as it is), and nothing else changes.
///
/// ```
/// use keyplane_core::raw::redact_url;
/// assert_eq!(redact_url("redis://app:s3cret@10.0.0.5:6379/0"), "redis://app:***@10.0.0.5:6379/0");
/// assert_eq!(redact_url("redis://:s3cret@h:6379"), "redis://:***@h:6379");
/// assert_eq!(redact_url("etcd://u:s3cret@h1:2379,h2:2379"), "etcd://u:***@h1:2379,h2:2379");
/// assert_eq!(redact_url("redis:/:s3cret@h:6379"), "redis:/:***@h:6379");
/// assert_eq!(redact_url("redis+unix:///run/redis.sock?pass=s3cret"), "redis+unix:///run/redis.sock?pass=***");
/// assert_eq!(redact_url("sled:///var/lib/app@2"), "sled:///var/lib/app@2");
/// ```
pub fn redact_url(url: &str) -> String {
    let (prefix, rest) = split_scheme(url);
    let well_formed = prefix.ends_with("://");
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    // An `x:y@` after the authority: a password with an unescaped `/`, `?` or `#` cut the
    // authority short.
    let cut_short = !authority.contains('@') && authority.contains(':') && tail.contains('@');
    if well_formed && !cut_short {
        return format!(
            "{prefix}{}{}",
            redact_authority(authority),
            redact_query(tail)
        );
    }
    match rest.rfind('@') {
        Some(at) => {
            // `scheme:secret@host`: the scheme's colon is the only one before the `@`.
            let credentials = if prefix.ends_with(':') {
                HIDDEN.to_owned()
            } else {
                hide_after_colon(&rest[..at])
            };
            format!("{prefix}{credentials}@{}", redact_query(&rest[at + 1..]))
        }
        None => format!("{prefix}{}", redact_query(rest)),
    }
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

/// The authority with the password of each `user:password@` hidden.
///
/// Split at `@`, the first piece is user info; each later piece but the last is a host
/// followed, after a comma, by the next host's user info (`h1:7000,u:p`), unless it is the
/// rest of a password holding an unescaped `@`, which is dropped.
fn redact_authority(authority: &str) -> String {
    let Some((credentials, hosts)) = authority.rsplit_once('@') else {
        return authority.to_owned();
    };
    let mut pieces = credentials.split('@');
    let mut out = hide_user_info(pieces.next().unwrap_or(""));
    for piece in pieces {
        match piece.split_once(',') {
            Some((host, user_info)) if is_host(host) => {
                out.push('@');
                out.push_str(host);
                out.push(',');
                out.push_str(&hide_user_info(user_info));
            }
            // The rest of the password before it.
            _ => {}
        }
    }
    format!("{out}@{hosts}")
}

/// `user:***`, or `***` for user info without a colon (which may be a token).
fn hide_user_info(user_info: &str) -> String {
    match user_info.split_once(':') {
        Some((user, _)) => format!("{user}:{HIDDEN}"),
        None => HIDDEN.to_owned(),
    }
}

/// Everything after the first colon hidden (the whole text if the part before it holds a
/// `/` or `@`, and so is no user name); text without a colon is kept (a path, or a user
/// name alone).
fn hide_after_colon(text: &str) -> String {
    match text.split_once(':') {
        Some((user, _)) if !user.contains(['/', '@']) => format!("{user}:{HIDDEN}"),
        Some(_) => HIDDEN.to_owned(),
        None => text.to_owned(),
    }
}

/// Whether `host` is `name:port` or `[v6]:port`, as a host of a multi-host authority is.
fn is_host(host: &str) -> bool {
    host.rsplit_once(':').is_some_and(|(name, port)| {
        !name.is_empty() && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
    })
}

/// The path, query and fragment with the value of every secret query parameter hidden.
fn redact_query(tail: &str) -> String {
    let Some(start) = tail.find('?') else {
        return tail.to_owned();
    };
    let (path, rest) = tail.split_at(start + 1);
    let (query, fragment) = match rest.find('#') {
        Some(hash) => rest.split_at(hash),
        None => (rest, ""),
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if is_secret_parameter(name) => format!("{name}={HIDDEN}"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{path}{}{fragment}", pairs.join("&"))
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
            // An unescaped `@` in the password.
            ("redis://u:P@W@h:6379", "redis://u:***@h:6379"),
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
            (
                "redis+cluster://u:PW@h1:7000,u:PW@h2:7000",
                "redis+cluster://u:***@h1:7000,u:***@h2:7000",
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
            (
                "etcd://h:2379?password=PW#x",
                "etcd://h:2379?password=***#x",
            ),
            (
                "redis://h:1?Token=PW&protocol=resp3",
                "redis://h:1?Token=***&protocol=resp3",
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
}
