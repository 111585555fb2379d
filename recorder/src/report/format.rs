//! How the report writes numbers and text: rates to three significant digits, control
//! characters escaped, CSV fields quoted, percentages and confidence intervals.

use crate::stats::MeanCi;
use mosaic_core::record::EpisodeRecord;

/// Steps per second of episode time over `episodes`. Each episode's time is its steps over
/// its own `steps_per_s`, which the session measured at full clock resolution
/// (`duration_ms` is rounded to whole milliseconds, too coarse for short episodes).
pub(super) fn steps_per_second<'a>(
    episodes: impl IntoIterator<Item = &'a EpisodeRecord>,
) -> Option<f64> {
    let (steps, seconds) = episodes
        .into_iter()
        .filter(|e| e.steps > 0 && e.steps_per_s > 0.0)
        .fold((0.0, 0.0), |(steps, seconds), e| {
            let n = f64::from(e.steps);
            (steps + n, seconds + n / e.steps_per_s)
        });
    (seconds > 0.0).then(|| steps / seconds)
}

/// A rate with three significant digits (`24333` → `24300`, `0.6234` → `0.623`), so that
/// slow operators (LLM agents) do not show `0`.
///
/// ```
/// use mosaic_recorder::report::fmt_rate;
/// assert_eq!(fmt_rate(Some(24_333.0)), "24300");
/// assert_eq!(fmt_rate(Some(0.6234)), "0.623");
/// assert_eq!(fmt_rate(Some(12.06)), "12.1");
/// assert_eq!(fmt_rate(None), "–");
/// ```
pub fn fmt_rate(rate: Option<f64>) -> String {
    match rate {
        Some(r) if r.is_finite() && r > 0.0 => {
            let magnitude = r.log10().floor() as i32;
            let decimals = (2 - magnitude).max(0) as usize;
            let scale = 10f64.powi(magnitude - 2);
            let rounded = if magnitude > 2 {
                (r / scale).round() * scale
            } else {
                r
            };
            format!("{rounded:.decimals$}")
        }
        _ => "–".into(),
    }
}

/// `text` with every control character but line feed and tab written as a Rust escape
/// (`ESC` becomes `\u{1b}`), so that printing it cannot clear a screen, retitle a
/// terminal or hide lines.
///
/// ```
/// use mosaic_recorder::report::escape_controls;
/// assert_eq!(escape_controls("a\u{1b}[2J\tb\n"), "a\\u{1b}[2J\tb\n");
/// ```
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if needs_escape(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// Quotes a CSV field when it needs it.
pub fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_owned()
    }
}

pub(super) fn pct(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

pub(super) fn fmt_opt(value: Option<f64>, decimals: usize) -> String {
    value.map_or("–".into(), |v| format!("{v:.decimals$}"))
}

pub(super) fn fmt_ci(ci: Option<MeanCi>) -> String {
    ci.map_or("–".into(), |ci| {
        format!("{:.3} [{:.3}, {:.3}]", ci.mean, ci.low, ci.high)
    })
}
