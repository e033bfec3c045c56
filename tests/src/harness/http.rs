//! Plain HTTP/1.1 requests to servers on loopback, for tests of web servers and for the
//! WebDriver commands of [`Browser`](super::Browser).

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How long one request may take before it fails: above the browser's page and script
/// timeouts, so that those are what chromedriver reports.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// One HTTP/1.1 request to 127.0.0.1:`port` on a connection of its own, with the `headers`
/// given and a JSON `body`: the status code and the body, read up to its `Content-Length`
/// or, without one, until the server closes.
///
/// # Errors
/// A message naming the request when the connection fails, or the response is malformed or
/// cut short.
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Result<(u16, Vec<u8>), String> {
    let fail = |e: std::io::Error| format!("{method} {path}: {e}");
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(fail)?;
    stream
        .set_read_timeout(Some(REQUEST_TIMEOUT))
        .map_err(fail)?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        request.push_str("Content-Type: application/json; charset=utf-8\r\n");
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes()).map_err(fail)?;

    let mut received = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let (head_end, status, length) = loop {
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).into_owned();
            let (status, length) = parse_head(&head)
                .ok_or_else(|| format!("{method} {path}: a malformed response: {head}"))?;
            break (end + 4, status, length);
        }
        let n = stream.read(&mut buf).map_err(fail)?;
        if n == 0 {
            return Err(format!(
                "{method} {path}: the connection closed before a response"
            ));
        }
        received.extend_from_slice(&buf[..n]);
    };
    loop {
        if length.is_some_and(|len| received.len() - head_end >= len) {
            break;
        }
        let n = stream.read(&mut buf).map_err(fail)?;
        if n == 0 {
            if length.is_some() {
                return Err(format!("{method} {path}: the response was cut short"));
            }
            break;
        }
        received.extend_from_slice(&buf[..n]);
    }
    let end = length.map_or(received.len(), |len| head_end + len);
    Ok((status, received[head_end..end].to_vec()))
}

/// The status code and the `Content-Length` of a response's head.
fn parse_head(head: &str) -> Option<(u16, Option<usize>)> {
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let length = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok());
    Some((status, length))
}
