//! The report as the README shows it: a summary line and the table, rendered from the report's
//! JSON alone, and written between the README's `<!-- report:start -->` and
//! `<!-- report:end -->` markers by a full run.
//!
//! `tests/tests/readme_report.rs` includes this file too and checks that the README's block is
//! exactly what the committed `latest.json` renders to, so the figures cannot be edited by hand
//! or drift from the run they come from.

use serde_json::Value;

/// The line before the README's block.
pub const START: &str = "<!-- report:start -->";
/// The line after the README's block.
pub const END: &str = "<!-- report:end -->";

/// The README's block for a report: a summary of the run, then the table.
pub fn block(report: &Value) -> String {
    let measures = report["measures"].as_array().map_or(&[][..], Vec::as_slice);
    let missed = measures.iter().filter(|m| m["met"] == false).count();
    let undecided = measures
        .iter()
        .filter(|m| m["undecided"].is_string())
        .count();
    let mut out = format!(
        "The latest full run (`cargo xtask bench`, {} cores, {} s): {} measures, {} targets \
         missed, {} undecided (the middle half of their rounds on both sides of the target). \
         A ratio is the median of the rounds' ratios (ours and raw alternating), shown with \
         the number of rounds and their lowest and highest; a ratio without them is a figure \
         taken once. Written by the run itself from `target/bench/report.json`.\n\n",
        report["cpus"].as_u64().unwrap_or(0),
        report["elapsed_seconds"].as_u64().unwrap_or(0),
        measures.len(),
        missed,
        undecided,
    );
    out.push_str(&table(measures));
    out
}

/// The measures as a Markdown table.
pub fn table(measures: &[Value]) -> String {
    let mut out = String::from(
        "| measure | ours | raw | unit | ratio | rounds: min–max | target | met |\n\
         |---|---:|---:|---|---:|---:|---:|:-:|\n",
    );
    for m in measures {
        let target = match (m["goal"].as_str(), m["target"].as_f64()) {
            (Some("at_most"), Some(t)) => format!("≤ {t}×"),
            (Some("at_least"), Some(t)) => format!("≥ {t}×"),
            (Some("within"), Some(t)) => format!("≤ {t} {}", m["unit"].as_str().unwrap_or("")),
            _ => "—".to_owned(),
        };
        let ratio = match m["ratio"].as_f64() {
            Some(r) => format!("{r:.2}×"),
            None => "—".to_owned(),
        };
        let spread = match (m["spread"][0].as_f64(), m["spread"][1].as_f64()) {
            (Some(min), Some(max)) => {
                format!("{}: {min:.2}–{max:.2}×", m["rounds"].as_u64().unwrap_or(0))
            }
            _ => "—".to_owned(),
        };
        let met = match (m["met"] == false, m["undecided"].is_string()) {
            (true, false) => "**no**",
            (false, false) => "yes",
            (true, true) => "**no** (undecided)",
            (false, true) => "yes (undecided)",
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            m["name"].as_str().unwrap_or(""),
            fmt(m["ours"].as_f64()),
            fmt(m["raw"].as_f64()),
            m["unit"].as_str().unwrap_or(""),
            ratio,
            spread,
            target,
            met,
        ));
    }
    out
}

/// A figure with about four significant digits; `—` for none.
pub fn fmt(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_finite() => {
            if x >= 100_000.0 {
                format!("{x:.0}")
            } else if x >= 100.0 {
                format!("{x:.1}")
            } else if x >= 1.0 {
                format!("{x:.2}")
            } else {
                format!("{x:.4}")
            }
        }
        _ => "—".to_owned(),
    }
}

/// The README's block: what stands between the markers.
///
/// # Errors
/// When the markers are missing, repeated or out of order.
pub fn current(readme: &str) -> Result<&str, String> {
    let (start, end) = bounds(readme)?;
    Ok(&readme[start..end])
}

/// `readme` with the block between the markers replaced by `block`.
///
/// # Errors
/// As [`current`].
pub fn replace(readme: &str, block: &str) -> Result<String, String> {
    let (start, end) = bounds(readme)?;
    Ok(format!("{}{block}{}", &readme[..start], &readme[end..]))
}

/// The byte range of the block: after the start marker's line, up to the end marker.
fn bounds(readme: &str) -> Result<(usize, usize), String> {
    let find = |marker: &str| {
        let found: Vec<usize> = readme.match_indices(marker).map(|(i, _)| i).collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(format!("the README has no {marker} marker")),
            _ => Err(format!("the README has {marker} more than once")),
        }
    };
    let (start, end) = (find(START)?, find(END)?);
    let start = start + START.len() + 1;
    if start > end {
        return Err(format!("{END} comes before {START} in the README"));
    }
    Ok((start, end))
}
