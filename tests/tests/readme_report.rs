//! The README's performance block is exactly what the last full `cargo xtask bench` wrote: the
//! table rendered from the committed `tests/benches/report/latest.json`, never edited by hand.

#[path = "../benches/report/readme.rs"]
#[allow(dead_code)]
mod readme;

use std::path::Path;

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

#[test]
fn the_readme_block_is_the_latest_full_report() {
    let latest: serde_json::Value =
        serde_json::from_str(&read("benches/report/latest.json")).expect("latest.json is JSON");
    assert_eq!(latest["quick"], false, "latest.json comes from a full run");
    let readme = read("../README.md");
    let block = readme::current(&readme).expect("the README's report markers");
    assert_eq!(
        block,
        readme::block(&latest),
        "the README's performance block differs from tests/benches/report/latest.json: run \
         `cargo xtask bench` to write both"
    );
}

#[test]
fn the_block_is_replaced_between_the_markers_only() {
    let readme = format!(
        "intro\n{}\nold table\n{}\nafter\n",
        readme::START,
        readme::END
    );
    let replaced = readme::replace(&readme, "new\n").unwrap();
    assert_eq!(
        replaced,
        format!("intro\n{}\nnew\n{}\nafter\n", readme::START, readme::END)
    );
    assert!(readme::replace("no markers", "x").is_err());
    let twice = format!("{0}\n{0}\n{1}\n", readme::START, readme::END);
    assert!(readme::current(&twice).is_err());
    let reversed = format!("{}\n{}\n", readme::END, readme::START);
    assert!(readme::current(&reversed).is_err());
}

#[test]
fn missing_figures_show_as_dashes() {
    let measures = [serde_json::json!({
        "name": "bulk load", "ours": 906863.0, "raw": null, "unit": "keys/s",
        "ratio": null, "target": null, "goal": "none", "met": true, "note": ""
    })];
    let table = readme::table(&measures);
    assert!(
        table.contains("| bulk load | 906863 | — | keys/s | — | — | — | yes |"),
        "{table}"
    );
}

#[test]
fn rounds_show_their_spread_and_an_undecided_row_says_so() {
    let measures = [
        serde_json::json!({
            "name": "put", "ours": 12.0, "raw": 10.0, "unit": "µs", "ratio": 1.2,
            "target": 1.5, "goal": "at_most", "met": true, "rounds": 41,
            "spread": [0.9, 1.8], "undecided": null, "note": ""
        }),
        serde_json::json!({
            "name": "get", "ours": 11.0, "raw": 10.0, "unit": "µs", "ratio": 1.1,
            "target": 1.1, "goal": "at_most", "met": true, "rounds": 5,
            "spread": [0.8, 1.4], "undecided": "the middle half lies on both sides", "note": ""
        }),
    ];
    let table = readme::table(&measures);
    assert!(
        table.contains("| put | 12.00 | 10.00 | µs | 1.20× | 41: 0.90–1.80× | ≤ 1.5× | yes |"),
        "{table}"
    );
    assert!(
        table.contains(
            "| get | 11.00 | 10.00 | µs | 1.10× | 5: 0.80–1.40× | ≤ 1.1× | yes (undecided) |"
        ),
        "{table}"
    );
    let block =
        readme::block(&serde_json::json!({"cpus": 2, "elapsed_seconds": 9, "measures": measures}));
    assert!(
        block.contains("2 measures, 0 targets missed, 1 undecided"),
        "{block}"
    );
}
