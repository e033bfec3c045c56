//! The browser harness drives a page served on loopback: it loads, clicks, types, answers a
//! `confirm`, and takes a screenshot.

use keyplane_tests::harness::Browser;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

/// The page: a text a button changes, an input, and a button that asks a `confirm`.
const PAGE: &str = r#"<!doctype html>
<html>
<head><meta charset="utf-8"><title>browser harness</title></head>
<body>
  <p id="status">waiting</p>
  <button id="go">Go</button>
  <input id="name" value="before">
  <button id="ask">Ask</button>
  <p id="answer"></p>
  <script>
    setTimeout(() => { document.getElementById('status').textContent = 'ready'; }, 100);
    document.getElementById('go').addEventListener('click', () => {
      document.getElementById('status').textContent = 'clicked';
    });
    document.getElementById('ask').addEventListener('click', () => {
      document.getElementById('answer').textContent = confirm('Sure?') ? 'yes' : 'no';
    });
  </script>
</body>
</html>
"#;

/// Serves `PAGE` at `/` (and 404 elsewhere) on a free loopback port, from a thread that
/// lives as long as the test process; the page's URL.
fn serve_page() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let url = format!("http://{}/", listener.local_addr().expect("local address"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let (status, body) = if head.starts_with(b"GET / ") {
                ("200 OK", PAGE)
            } else {
                ("404 Not Found", "not found")
            };
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    url
}

#[test]
fn browser_loads_clicks_types_answers_a_confirm_and_takes_a_screenshot() {
    let Some(browser) = Browser::start() else {
        return;
    };
    let url = serve_page();
    let timeout = Duration::from_secs(10);

    browser.goto(&url);
    assert_eq!(browser.current_url(), url);
    let status = "document.getElementById('status').textContent";
    browser.wait_for(&format!("return {status} === 'ready'"), timeout);
    assert_eq!(browser.eval("return document.title"), "browser harness");

    browser.click("#go");
    let changed = browser.wait_for(
        &format!("const s = {status}; return s === 'clicked' ? s : null"),
        timeout,
    );
    assert_eq!(changed, "clicked");

    browser.type_into("#name", "Ada Lovelace");
    assert_eq!(
        browser.eval("return document.getElementById('name').value"),
        "Ada Lovelace"
    );

    let answer = "document.getElementById('answer').textContent";
    assert_eq!(browser.alert_text(), None);
    browser.click("#ask");
    assert_eq!(browser.alert_text().as_deref(), Some("Sure?"));
    browser.accept_alert_or_confirm();
    browser.wait_for(&format!("return {answer} === 'yes'"), timeout);
    browser.click("#ask");
    browser.dismiss_alert();
    browser.wait_for(&format!("return {answer} === 'no'"), timeout);

    let shot = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../target/ui/browser-harness.png"
    ));
    let _ = std::fs::remove_file(&shot);
    browser.screenshot(&shot);
    let png = std::fs::read(&shot).expect("read the screenshot");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "not a PNG: {:?}",
        &png[..png.len().min(16)]
    );
}

#[test]
fn wait_for_names_the_script_and_the_page_text_on_timeout() {
    let Some(browser) = Browser::start() else {
        return;
    };
    browser.goto(&serve_page());
    browser.wait_for(
        "return document.getElementById('status').textContent === 'ready'",
        Duration::from_secs(10),
    );
    let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        browser.wait_for(
            "return document.getElementById('missing')",
            Duration::from_millis(300),
        );
    }))
    .expect_err("a script that never returns a truthy value times out");
    let message = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("getElementById('missing')"), "{message}");
    assert!(message.contains("it returned null"), "{message}");
    assert!(message.contains("ready"), "page text missing: {message}");
}
