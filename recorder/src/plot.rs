//! SVG plots of a report: return per episode per operator, and the distribution of
//! returns per operator.

use crate::error::{RecorderError, Result};
use crate::report::Report;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// File name of the return-per-episode plot.
pub const RETURNS_FILE: &str = "returns.svg";
/// File name of the return-distribution plot.
pub const DISTRIBUTION_FILE: &str = "return_distribution.svg";

const BINS: usize = 12;

fn colour(index: usize) -> RGBColor {
    const PALETTE: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    PALETTE[index % PALETTE.len()]
}

fn plot_error(path: &Path, error: impl std::fmt::Display) -> RecorderError {
    RecorderError::io(path, std::io::Error::other(error.to_string()))
}

/// The range of all returns, widened when flat so axes are never empty.
fn return_range(report: &Report) -> (f64, f64) {
    let values = report
        .operators
        .iter()
        .flat_map(|op| op.returns.iter().map(|(_, v)| *v));
    let (low, high) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !low.is_finite() {
        return (0.0, 1.0);
    }
    if high - low < 1e-9 {
        return (low - 0.5, high + 0.5);
    }
    (low, high)
}

/// Writes both plots into `dir` (created if needed); returns their paths.
pub fn write_plots(report: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| RecorderError::io(dir, e))?;
    let returns = dir.join(RETURNS_FILE);
    plot_returns(report, &returns)?;
    let distribution = dir.join(DISTRIBUTION_FILE);
    plot_distribution(report, &distribution)?;
    Ok(vec![returns, distribution])
}

fn plot_returns(report: &Report, path: &Path) -> Result<()> {
    let err = |e| plot_error(path, e);
    let (low, high) = return_range(report);
    let episodes = report
        .operators
        .iter()
        .flat_map(|op| op.returns.iter().map(|(i, _)| *i))
        .max()
        .unwrap_or(0);
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Return per episode — run {}", report.run.run_id),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0u32..episodes.max(1), low..high)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("episode")
        .y_desc("return (sum over agents)")
        .draw()
        .map_err(err)?;
    for (i, op) in report.operators.iter().enumerate() {
        let style = colour(i);
        chart
            .draw_series(LineSeries::new(
                op.returns.iter().copied(),
                style.stroke_width(2),
            ))
            .map_err(err)?
            .label(op.operator_id.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        chart
            .draw_series(
                op.returns
                    .iter()
                    .map(|(x, y)| Circle::new((*x, *y), 3, style.filled())),
            )
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

fn plot_distribution(report: &Report, path: &Path) -> Result<()> {
    let err = |e| plot_error(path, e);
    let (low, high) = return_range(report);
    let width = (high - low) / BINS as f64;
    let panels = report.operators.len().max(1);
    let root = SVGBackend::new(path, (900, 220 * panels as u32 + 40)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root
        .titled(
            &format!("Return distribution — run {}", report.run.run_id),
            ("sans-serif", 20),
        )
        .map_err(err)?;
    for (i, (op, area)) in report
        .operators
        .iter()
        .zip(root.split_evenly((panels, 1)))
        .enumerate()
    {
        let mut counts = [0u32; BINS];
        for (_, value) in &op.returns {
            let bin = (((value - low) / width) as usize).min(BINS - 1);
            counts[bin] += 1;
        }
        let tallest = counts.iter().copied().max().unwrap_or(0).max(1);
        let mut chart = ChartBuilder::on(&area)
            .caption(op.operator_id.clone(), ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(low..high, 0u32..tallest + 1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("return")
            .y_desc("episodes")
            .draw()
            .map_err(err)?;
        let style = colour(i);
        chart
            .draw_series(counts.iter().enumerate().map(|(bin, count)| {
                let x0 = low + bin as f64 * width;
                Rectangle::new([(x0, 0), (x0 + width, *count)], style.mix(0.7).filled())
            }))
            .map_err(err)?;
    }
    root.present().map_err(err)
}
