//! `kvctl ui` in a real browser (headless Chromium): on the demo data, expand
//! `jxt/tenants/1/`, read tenant 1's typed address and decoded meta, see a change made by
//! another kvctl process appear live, edit a value, have an invalid one refused with the
//! text `kvctl put` prints, and delete a key after confirming; and on a team's own schema,
//! loaded from a manifest, see its keys typed beside the bundled schemas'. Screenshots of
//! the page go to `target/ui/`.

mod common;

use common::server::{Server, acme_manifest, local_store};
use common::*;
use keyplane_tests::harness::Browser;
use std::path::PathBuf;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// `target/ui/NAME` in the workspace.
fn shot(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/ui")
        .join(name)
}

/// A JavaScript string literal of `text`.
fn js(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// The script that finds the tree node of `path`.
fn node(path: &str) -> String {
    format!(
        "[...document.querySelectorAll('#tree li.node')].find(n => n.dataset.path === {})",
        js(path)
    )
}

/// Clicks the label of the tree node of `path`, once it is there.
fn click_node(browser: &Browser, path: &str) {
    browser.wait_for(&format!("return !!{}", node(path)), WAIT);
    browser.eval(&format!(
        "{}.querySelector('.label').click(); return true",
        node(path)
    ));
}

/// The text of the element `css`, or null.
fn text_of(css: &str) -> String {
    format!(
        "const e = document.querySelector({}); return e ? e.innerText : null",
        js(css)
    )
}

/// Types `text` into the edit box, as an edit in progress.
fn edit(browser: &Browser, text: &str) {
    browser.wait_for("return !!document.querySelector('#d-edit')", WAIT);
    browser.eval(&format!(
        "const e = document.querySelector('#d-edit'); e.value = {}; e.dispatchEvent(new Event('input')); return true",
        js(text)
    ));
}

/// The page of `kvctl ui` (`--write` when `write`) on a fresh redb store holding the demo
/// data, loaded in a browser: the store's directory and URL, the browser, the server. `None`
/// when no browser can run here and servers are not required.
fn demo_page(write: bool) -> Option<(tempfile::TempDir, String, Browser, Server)> {
    let (dir, url) = local_store();
    ok(&url, &["demo"]);
    let browser = Browser::start()?;
    let server = Server::start(&url, write);
    browser.goto(&server.page_url());
    browser.wait_for("return document.body.dataset.ready === '1'", WAIT);
    Some((dir, url, browser, server))
}

#[test]
fn the_page_browses_edits_and_follows_the_demo_data() {
    let Some((_dir, url, browser, _server)) = demo_page(true) else {
        return;
    };
    browser.wait_for("return document.body.dataset.live === '1'", WAIT);
    assert_eq!(browser.eval(&text_of("#mode")).as_str(), Some("read-write"));

    // Expand jxt/ → jxt/tenants/ → jxt/tenants/1/, then open tenant 1's meta.
    for dir in ["jxt/", "jxt/tenants/", "jxt/tenants/1/"] {
        click_node(&browser, dir);
    }
    click_node(&browser, "jxt/tenants/1/meta");
    browser.wait_for(
        "const e = document.querySelector('#d-address'); return !!e && e.innerText === 'tenant.meta id=1'",
        WAIT,
    );
    let value = browser.wait_for(
        "const e = document.querySelector('#d-value'); return e && e.innerText.includes('默认租户') ? e.innerText : null",
        WAIT,
    );
    assert!(
        value.as_str().unwrap().contains("\"billingPlan\""),
        "{value}"
    );
    assert_eq!(
        browser.eval(&text_of("#d-template")).as_str(),
        Some("jxt/tenants/{id}/meta")
    );
    browser.screenshot(&shot("tree.png"));
    let png = std::fs::read(shot("tree.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));

    // Another process changes the shown key: the page updates it live.
    let renamed = tenant_meta(1).replace("Tenant 1", "Renamed by another process");
    ok(&url, &["put", "tenant.meta", "id=1", &renamed]);
    browser.wait_for(
        "const e = document.querySelector('#d-value'); return !!e && e.innerText.includes('Renamed by another process')",
        WAIT,
    );
    // ... and deletes a key of the open directory: it disappears from the tree.
    ok(&url, &["rm", "jxt/tenants/1/storage"]);
    browser.wait_for(&format!("return !{}", node("jxt/tenants/1/storage")), WAIT);

    // An edit through the page.
    let edited = tenant_meta(1).replace("Tenant 1", "Edited in the page");
    edit(&browser, &edited);
    browser.click("#d-save");
    let saved = browser.wait_for(
        "const e = document.querySelector('#status.ok'); return e && e.innerText.startsWith('saved at revision') ? e.innerText : null",
        WAIT,
    );
    assert!(ok(&url, &["get", "tenant.meta", "id=1"]).contains("Edited in the page"));
    // Settled: the page has had the save's own change event, and nothing is loading.
    let revision = saved
        .as_str()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_owned();
    browser.wait_for(
        &format!(
            "return document.querySelector('#events').innerText.includes({}) && document.body.dataset.pending === '0'",
            js(&format!("{revision} PUT jxt/tenants/1/meta"))
        ),
        WAIT,
    );
    // The page's own change, back as a live event, is not taken for another writer's.
    assert_eq!(browser.eval(&text_of("#status")), saved);

    // An invalid value is refused with kvctl put's own text, and nothing is written.
    let bad = "{\"id\":1,\"code\":";
    edit(&browser, bad);
    browser.click("#d-save");
    let shown = browser.wait_for(
        "const e = document.querySelector('#status.error'); return e && e.innerText ? e.innerText : null",
        WAIT,
    );
    let cli = run(&url, &["put", "tenant.meta", "id=1", bad]);
    assert_eq!(
        format!("kvctl: {}", shown.as_str().unwrap()),
        cli.stderr.trim_end()
    );
    assert!(ok(&url, &["get", "tenant.meta", "id=1"]).contains("Edited in the page"));

    // Another writer's change while an edit is open is said, and the edit is kept.
    let mine = tenant_meta(1).replace("Tenant 1", "Edited in the page, not saved");
    edit(&browser, &mine);
    let theirs = tenant_meta(1).replace("Tenant 1", "Edited in the page, then elsewhere");
    ok(&url, &["put", "tenant.meta", "id=1", &theirs]);
    browser.wait_for(
        "const e = document.querySelector('#status.error'); return !!e && e.innerText.includes('changed by another writer')",
        WAIT,
    );
    assert_eq!(
        browser.eval("return document.querySelector('#d-edit').value"),
        serde_json::json!(mine)
    );

    // Delete asks first: dismissed, nothing happens; accepted, the key goes.
    browser.click("#d-delete");
    assert!(browser.alert_text().unwrap().contains("jxt/tenants/1/meta"));
    browser.dismiss_alert();
    assert!(ok(&url, &["get", "tenant.meta", "id=1"]).contains("Edited in the page"));
    browser.click("#d-delete");
    browser.accept_alert_or_confirm();
    browser.wait_for(&format!("return !{}", node("jxt/tenants/1/meta")), WAIT);
    fails(&url, &["get", "tenant.meta", "id=1"], 1);
    browser.screenshot(&shot("after-delete.png"));

    // Create from a template's form: a bad field is refused as kvctl put refuses it, then
    // the key is created.
    browser.click("#tab-create");
    browser.eval(
        "const s = document.querySelector('#c-template'); s.value = 'tenant.meta'; \
         s.dispatchEvent(new Event('change')); return true",
    );
    browser.wait_for(
        "return !!document.querySelector('#c-fields input[data-field=\"id\"]')",
        WAIT,
    );
    let fill = |id: &str| {
        browser.eval(&format!(
            "document.querySelector('#c-fields input[data-field=\"id\"]').value = {}; \
             document.querySelector('#c-value').value = {}; return true",
            js(id),
            js(&tenant_meta(8))
        ));
    };
    fill("x");
    browser.click("#c-submit");
    let refused = browser.wait_for(
        "const e = document.querySelector('#c-error.error'); return e && e.innerText ? e.innerText : null",
        WAIT,
    );
    let cli = run(&url, &["put", "tenant.meta", "id=x", &tenant_meta(8)]);
    assert_eq!(
        format!("kvctl: {}", refused.as_str().unwrap()),
        cli.stderr.trim_end()
    );
    fill("8");
    browser.click("#c-submit");
    browser.wait_for(
        "const e = document.querySelector('#c-error.ok'); return !!e && e.innerText.startsWith('created jxt/tenants/8/meta')",
        WAIT,
    );
    assert!(ok(&url, &["get", "tenant.meta", "id=8"]).contains("Tenant 8"));
}

#[test]
fn search_and_the_schema_view() {
    let Some((_dir, _url, browser, _server)) = demo_page(false) else {
        return;
    };
    assert_eq!(browser.eval(&text_of("#mode")).as_str(), Some("read-only"));
    // Read-only: no create tab, no edit box.
    assert_eq!(
        browser.eval("return document.querySelector('#tab-create').classList.contains('hidden')"),
        serde_json::json!(true)
    );

    browser.type_into(
        "#search",
        "nxc.profile-map realm=test_realm provider=Alipay",
    );
    browser.click("#search-go");
    browser.wait_for(
        "const e = document.querySelector('#d-kind'); return !!e && e.innerText === 'SET'",
        WAIT,
    );
    let members = browser.eval(&text_of("#d-value"));
    assert!(members.as_str().unwrap().contains("app_001"), "{members}");
    assert_eq!(
        browser.eval("return !!document.querySelector('#d-edit')"),
        serde_json::json!(false)
    );
    // An encrypted value without a keyring shows as encrypted.
    browser.type_into("#search", "nxc:pool:Alipay:app_001");
    browser.click("#search-go");
    browser.wait_for(
        "const e = document.querySelector('#d-value.encrypted'); return !!e && e.innerText.includes('demo-1')",
        WAIT,
    );
    // A search that names no template says so.
    browser.type_into("#search", "tenant.nope id=1");
    browser.click("#search-go");
    browser.wait_for(
        "return document.querySelector('#search-error').innerText.includes('unknown template')",
        WAIT,
    );

    browser.click("#tab-schema");
    browser.wait_for(
        "return [...document.querySelectorAll('#schemas .schema')].map(s => s.dataset.name).join(',').startsWith('tenant,registry,cronix,nxc,balancer')",
        WAIT,
    );
    let templates = browser.eval("return document.querySelectorAll('#schemas li.template').length");
    assert!(templates.as_u64().unwrap() > 20, "{templates}");
    browser.screenshot(&shot("schemas.png"));
}

/// The manifest of a team's schema (the tenant schema renamed `acme`, its keys under `acme/`)
/// given with `--schema`: the page lists it beside the bundled schemas, types its keys in the
/// tree, the detail and search, and shows a key none of its templates holds untyped.
#[test]
fn a_team_schema_from_a_manifest() {
    let (dir, url) = local_store();
    let manifest = acme_manifest(dir.path());
    let schema = manifest.to_str().unwrap();
    ok(&url, &["demo"]);
    ok(
        &url,
        &[
            "--schema",
            schema,
            "put",
            "acme.meta",
            "id=7",
            &tenant_meta(7),
        ],
    );
    ok(
        &url,
        &[
            "--schema",
            schema,
            "put",
            "--raw",
            "acme/tenants/7/oops",
            "x",
        ],
    );
    let Some(browser) = Browser::start() else {
        return;
    };
    let server = Server::start_with(&url, &["--schema", schema]);
    browser.goto(&server.page_url());
    browser.wait_for("return document.body.dataset.ready === '1'", WAIT);

    // The tree: the template's key typed by the loaded schema, the other one untyped.
    for dir in ["acme/", "acme/tenants/", "acme/tenants/7/"] {
        click_node(&browser, dir);
    }
    let type_of = |path: &str| {
        browser.wait_for(&format!("return !!{}", node(path)), WAIT);
        browser.eval(&format!(
            "const t = {}.querySelector('.type'); return t ? t.innerText : null",
            node(path)
        ))
    };
    assert_eq!(type_of("acme/tenants/7/meta").as_str(), Some("acme.meta"));
    assert_eq!(type_of("acme/tenants/7/oops"), serde_json::Value::Null);

    // The detail: typed address, template and decoded value.
    click_node(&browser, "acme/tenants/7/meta");
    browser.wait_for(
        "const e = document.querySelector('#d-address'); return !!e && e.innerText === 'acme.meta id=7'",
        WAIT,
    );
    assert_eq!(
        browser.eval(&text_of("#d-template")).as_str(),
        Some("acme/tenants/{id}/meta")
    );
    let value = browser.eval(&text_of("#d-value"));
    assert!(
        value.as_str().unwrap().contains("\"name\": \"Tenant 7\""),
        "{value}"
    );
    browser.screenshot(&shot("own-schema.png"));

    // The unknown key: no address, no template, its bytes as text.
    click_node(&browser, "acme/tenants/7/oops");
    browser.wait_for(
        "const e = document.querySelector('#d-key'); return !!e && e.innerText === 'acme/tenants/7/oops'",
        WAIT,
    );
    assert_eq!(browser.eval(&text_of("#d-address")).as_str(), Some("—"));
    assert_eq!(browser.eval(&text_of("#d-template")).as_str(), Some("—"));
    assert_eq!(browser.eval(&text_of("#d-value")).as_str(), Some("x"));

    // A search by the loaded schema's typed address opens the key.
    browser.type_into("#search", "acme.meta id=7");
    browser.click("#search-go");
    browser.wait_for(
        "const e = document.querySelector('#d-key'); return !!e && e.innerText === 'acme/tenants/7/meta' \
         && document.querySelector('#d-address').innerText === 'acme.meta id=7'",
        WAIT,
    );
    browser.wait_for(
        &format!(
            "const n = {}; return !!n && n.classList.contains('selected')",
            node("acme/tenants/7/meta")
        ),
        WAIT,
    );
    assert_eq!(browser.eval(&text_of("#search-error")).as_str(), Some(""));

    // The schemas: acme first (a team's own schemas parse first), then the bundled ones; its
    // templates are the tenant schema's, under acme/.
    browser.click("#tab-schema");
    browser.wait_for(
        "return [...document.querySelectorAll('#schemas .schema')].map(s => s.dataset.name).join(',').startsWith('acme,tenant,registry,cronix,nxc,balancer')",
        WAIT,
    );
    let count = |name: &str| {
        browser
            .eval(&format!(
                "return document.querySelectorAll('#schemas .schema[data-name={}] li.template').length",
                js(name)
            ))
            .as_u64()
            .unwrap()
    };
    assert!(count("acme") > 5, "{}", count("acme"));
    assert_eq!(count("acme"), count("tenant"));
    let meta = browser.eval(
        "const t = [...document.querySelectorAll('#schemas .schema[data-name=\"acme\"] li.template')]\
         .find(t => t.querySelector('code').innerText === 'acme/tenants/{id}/meta'); \
         return t ? t.innerText : null",
    );
    assert!(meta.as_str().unwrap().contains("acme.meta"), "{meta}");
    browser.screenshot(&shot("own-schema-schemas.png"));
}
