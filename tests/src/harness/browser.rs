//! A headless Chromium driven through `chromedriver`'s W3C WebDriver endpoint, for tests of
//! web pages served on loopback.
//!
//! The WebDriver commands are plain HTTP/1.1 requests with JSON bodies, one connection each,
//! to the `chromedriver` this harness starts on a free loopback port.

use super::http::http_request;
use super::process::{ServerProcess, free_port, require_binary, wait_ready};
use base64::Engine as _;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The key under which WebDriver returns an element's reference.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How long a find waits for its element to appear in the page.
const IMPLICIT_WAIT: Duration = Duration::from_secs(5);

/// How long a navigation may take to load its page, and a script to return.
const PAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`Browser::accept_alert_or_confirm`] and [`Browser::dismiss_alert`] wait for a
/// dialog to open.
const DIALOG_WAIT: Duration = Duration::from_secs(5);

/// How much of the page's text a failure message quotes.
const PAGE_TEXT_LIMIT: usize = 2000;

/// A headless Chromium session, driven through a `chromedriver` on a free loopback port with
/// its own temporary directory (the driver's log and the browser's profile).
///
/// The methods block the calling thread until chromedriver answers, and panic when a command
/// fails, with chromedriver's error and the end of its log. An async test calls them from
/// `tokio::task::spawn_blocking` or `tokio::task::block_in_place` (on a multi-threaded
/// runtime), so that a page server running on the same runtime keeps answering meanwhile.
///
/// A dialog (`alert`, `confirm`, `prompt`) stays open until [`Browser::accept_alert_or_confirm`]
/// or [`Browser::dismiss_alert`] closes it; other commands fail while it is open.
///
/// Dropping the browser ends the session, which closes Chromium, and kills `chromedriver`
/// with its process group, Chromium included. When the test process dies first, the
/// harness's watchdog kills the group and removes the temporary directory.
pub struct Browser {
    process: ServerProcess,
    port: u16,
    session: String,
    dir: tempfile::TempDir,
}

impl Browser {
    /// Starts `chromedriver` and opens a session with a headless Chromium. `None` (after a
    /// SKIP line) when `chromium` or `chromedriver` is missing and servers are not required.
    ///
    /// # Panics
    /// When chromedriver does not become ready or the session cannot be opened.
    pub fn start() -> Option<Self> {
        let chromium = require_binary("chromium", "chromium")?;
        let driver = require_binary("chromedriver", "chromium-driver")?;
        let dir = tempfile::Builder::new()
            .prefix("kv-browser-")
            .tempdir()
            .expect("temp dir");
        let mut last_error = String::new();
        for _ in 0..3 {
            match launch(&driver, dir.path()) {
                Ok((process, port)) => {
                    let mut browser = Browser {
                        process,
                        port,
                        session: String::new(),
                        dir,
                    };
                    browser.open_session(&chromium);
                    return Some(browser);
                }
                Err(e) => last_error = e,
            }
        }
        panic!("chromedriver did not start: {last_error}");
    }

    /// Opens the WebDriver session with headless Chromium.
    fn open_session(&mut self, chromium: &Path) {
        let profile = self.dir.path().join("profile");
        let capabilities = json!({
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "unhandledPromptBehavior": "ignore",
                    "timeouts": {
                        "implicit": IMPLICIT_WAIT.as_millis() as u64,
                        "pageLoad": PAGE_TIMEOUT.as_millis() as u64,
                        "script": PAGE_TIMEOUT.as_millis() as u64,
                    },
                    "goog:chromeOptions": {
                        "binary": chromium,
                        "args": [
                            "--headless=new",
                            "--no-sandbox",
                            "--disable-gpu",
                            "--disable-dev-shm-usage",
                            "--window-size=1280,900",
                            format!("--user-data-dir={}", profile.display()),
                        ],
                    },
                },
            },
        });
        let value = self.command("open a session", "POST", "/session", Some(&capabilities));
        self.session = value
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("a new session without its id: {value}"))
            .to_owned();
    }

    /// Opens `url` in the window and waits until the page has loaded.
    ///
    /// # Panics
    /// When the page does not load within 30 s.
    pub fn goto(&self, url: &str) {
        self.session_command(
            &format!("open {url}"),
            "POST",
            "/url",
            json!({ "url": url }),
        );
    }

    /// The URL of the page the window shows.
    pub fn current_url(&self) -> String {
        let value = self.session_get("read the current URL", "/url");
        value.as_str().unwrap_or_default().to_owned()
    }

    /// Runs `script` as the body of a function in the page and returns what it returns
    /// (`null` without a `return`); elements come back as WebDriver element references.
    ///
    /// # Panics
    /// When the script throws, or takes more than 30 s.
    pub fn eval(&self, script: &str) -> Value {
        self.try_eval(script)
            .unwrap_or_else(|e| panic!("script failed: {e}\nscript: {script}"))
    }

    fn try_eval(&self, script: &str) -> Result<Value, String> {
        let body = json!({ "script": script, "args": [] });
        let path = format!("/session/{}/execute/sync", self.session);
        self.request("POST", &path, Some(&body))
    }

    /// Runs `script` (as [`Browser::eval`] does) every 50 ms until it returns something
    /// truthy (anything but `null`, `false`, `0` and `""`), and returns that. A script that
    /// throws counts as not yet.
    ///
    /// # Panics
    /// When `timeout` passes first, with the last value or error and the start of the
    /// page's text.
    pub fn wait_for(&self, script: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let last = match self.try_eval(script) {
                Ok(value) if truthy(&value) => return value,
                last => last,
            };
            if Instant::now() > deadline {
                let last = match last {
                    Ok(value) => format!("it returned {value}"),
                    Err(e) => format!("it failed: {e}"),
                };
                let text = self
                    .try_eval("return document.body ? document.body.innerText : null")
                    .map(|v| match v {
                        Value::String(s) => truncate(&s, PAGE_TEXT_LIMIT),
                        other => other.to_string(),
                    })
                    .unwrap_or_else(|e| format!("(unreadable: {e})"));
                panic!(
                    "script not truthy after {timeout:?}; {last}\nscript: {script}\n\
                     page text:\n{text}"
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Clicks the first element that matches the CSS selector `css`, waiting up to 5 s for
    /// one to appear.
    ///
    /// # Panics
    /// When no element matches, or it cannot be clicked (hidden, disabled, or covered).
    pub fn click(&self, css: &str) {
        let element = self.element(css);
        self.session_command(
            &format!("click {css}"),
            "POST",
            &format!("/element/{element}/click"),
            json!({}),
        );
    }

    /// Clears the first element that matches the CSS selector `css` (an input or a text
    /// area), waiting up to 5 s for one to appear, then types `text` into it.
    ///
    /// # Panics
    /// When no element matches, or it does not take text.
    pub fn type_into(&self, css: &str, text: &str) {
        let element = self.element(css);
        self.session_command(
            &format!("clear {css}"),
            "POST",
            &format!("/element/{element}/clear"),
            json!({}),
        );
        self.session_command(
            &format!("type into {css}"),
            "POST",
            &format!("/element/{element}/value"),
            json!({ "text": text }),
        );
    }

    /// The reference of the first element that matches `css`.
    fn element(&self, css: &str) -> String {
        let value = self.session_command(
            &format!("find {css}"),
            "POST",
            "/element",
            json!({ "using": "css selector", "value": css }),
        );
        value
            .get(ELEMENT_KEY)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("find {css}: no element reference in {value}"))
            .to_owned()
    }

    /// The text of the open dialog (`alert`, `confirm` or `prompt`), or `None` when no
    /// dialog is open.
    pub fn alert_text(&self) -> Option<String> {
        let path = format!("/session/{}/alert/text", self.session);
        match self.request("GET", &path, None) {
            Ok(value) => Some(value.as_str().unwrap_or_default().to_owned()),
            Err(e) if e.starts_with("no such alert") => None,
            Err(e) => panic!("read the dialog's text: {e}{}", self.log_note()),
        }
    }

    /// Accepts the open dialog: OK on an `alert`, a `confirm` or a `prompt`. Waits up to 5 s
    /// for one to open.
    ///
    /// # Panics
    /// When no dialog opens.
    pub fn accept_alert_or_confirm(&self) {
        self.close_dialog("accept");
    }

    /// Dismisses the open dialog: Cancel on a `confirm` or a `prompt`, and OK on an `alert`.
    /// Waits up to 5 s for one to open.
    ///
    /// # Panics
    /// When no dialog opens.
    pub fn dismiss_alert(&self) {
        self.close_dialog("dismiss");
    }

    fn close_dialog(&self, how: &str) {
        let deadline = Instant::now() + DIALOG_WAIT;
        while self.alert_text().is_none() {
            if Instant::now() > deadline {
                panic!("{how} a dialog: none opened within {DIALOG_WAIT:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.session_command(
            &format!("{how} the dialog"),
            "POST",
            &format!("/alert/{how}"),
            json!({}),
        );
    }

    /// Writes a PNG of the window's viewport to `path`, creating its parent directories.
    ///
    /// # Panics
    /// When the screenshot cannot be taken or written.
    pub fn screenshot(&self, path: &Path) {
        let value = self.session_get("take a screenshot", "/screenshot");
        let png = base64::engine::general_purpose::STANDARD
            .decode(value.as_str().unwrap_or_default())
            .expect("a screenshot in base64");
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("create {}: {e}", parent.display()));
        }
        std::fs::write(path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// A command of the session with a JSON body; its value, or a panic that names `what`.
    fn session_command(&self, what: &str, method: &str, path: &str, body: Value) -> Value {
        let path = format!("/session/{}{path}", self.session);
        self.command(what, method, &path, Some(&body))
    }

    /// A GET command of the session; its value, or a panic that names `what`.
    fn session_get(&self, what: &str, path: &str) -> Value {
        let path = format!("/session/{}{path}", self.session);
        self.command(what, "GET", &path, None)
    }

    /// A WebDriver request; its value, or a panic that names `what`.
    fn command(&self, what: &str, method: &str, path: &str, body: Option<&Value>) -> Value {
        self.request(method, path, body)
            .unwrap_or_else(|e| panic!("{what}: {e}{}", self.log_note()))
    }

    /// A WebDriver request: the response's `value`, or WebDriver's error and its message.
    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        let (status, body) = http_request(self.port, method, path, &[], body)?;
        let mut response: Value = serde_json::from_slice(&body).map_err(|e| {
            format!(
                "HTTP {status}, not JSON ({e}): {}",
                truncate(&String::from_utf8_lossy(&body), PAGE_TEXT_LIMIT)
            )
        })?;
        let value = response
            .get_mut("value")
            .map(Value::take)
            .unwrap_or_default();
        if status == 200 {
            return Ok(value);
        }
        match value.get("error").and_then(Value::as_str) {
            Some(error) => {
                let message = value.get("message").and_then(Value::as_str).unwrap_or("");
                // Chromedriver's messages mostly repeat the error's name.
                let message = message
                    .strip_prefix(error)
                    .and_then(|m| m.strip_prefix(": "))
                    .unwrap_or(message);
                Err(format!("{error}: {}", truncate(message, PAGE_TEXT_LIMIT)))
            }
            None => Err(format!("HTTP {status}: {value}")),
        }
    }

    /// The end of chromedriver's log, for failure messages.
    fn log_note(&self) -> String {
        format!("\nchromedriver log:\n{}", self.process.log_tail())
    }

    /// The directory of the driver's log and the browser's profile.
    pub fn dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

impl Drop for Browser {
    /// Ends the session, which closes Chromium; `chromedriver` and what is left of its
    /// process group are killed when its process is dropped next, and the temporary directory
    /// is removed last.
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let path = format!("/session/{}", self.session);
            let _ = http_request(self.port, "DELETE", &path, &[], None);
        }
    }
}

/// Starts `chromedriver` on a free port, logging into `dir`, and waits until its status
/// says ready.
fn launch(driver: &Path, dir: &Path) -> Result<(ServerProcess, u16), String> {
    let port = free_port();
    let mut cmd = Command::new(driver);
    cmd.arg(format!("--port={port}"));
    let log = dir.join("chromedriver.log");
    let mut process = ServerProcess::spawn_group(cmd, &log, dir).map_err(|e| e.to_string())?;
    wait_ready(&mut process, Duration::from_secs(20), || {
        http_request(port, "GET", "/status", &[], None)
            .ok()
            .and_then(|(_, body)| serde_json::from_slice::<Value>(&body).ok())
            .is_some_and(|status| status["value"]["ready"] == true)
    })?;
    Ok((process, port))
}

/// Whether JavaScript would take `value` for true.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// At most `limit` characters of `text`, with a mark where it was cut.
fn truncate(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}… ({} more bytes)", &text[..cut], text.len() - cut),
        None => text.to_owned(),
    }
}
