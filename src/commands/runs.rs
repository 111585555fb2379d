//! `mosaic runs [DIR]`: the runs in a directory with their status and progress.

use super::{CliError, print};
use mosaic_recorder::list_runs;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Lists runs.
#[derive(Debug, clap::Args)]
pub(crate) struct RunsArgs {
    /// A run directory, or a directory holding run directories.
    #[arg(default_value = "runs")]
    pub dir: PathBuf,
}

/// Prints one line per run: id, experiment, status, episodes done/planned (a shard's: of its
/// share), the part (`K/N` for a shard, `pool:WORKER` for a pool worker's units, `-` for a
/// whole run), start time. A pool worker's part is complete when its pool is.
/// Runs that cannot be read are named on standard error, and make the exit code 2.
pub(crate) fn run(args: &RunsArgs) -> Result<(), CliError> {
    let runs = list_runs(&args.dir)?;
    if runs.is_empty() {
        eprintln!("mosaic: no runs in {}", args.dir.display());
    }
    let mut rows = vec![[
        "id".to_owned(),
        "experiment".to_owned(),
        "status".to_owned(),
        "episodes".to_owned(),
        "shard".to_owned(),
        "started (UTC)".to_owned(),
    ]];
    let mut unreadable = None;
    for run in runs {
        match run {
            Ok(s) => rows.push([
                s.run_id,
                s.experiment,
                s.status.name().to_owned(),
                format!("{}/{}", s.done, s.planned),
                s.part
                    .map_or_else(|| "-".to_owned(), |part| part.to_string()),
                utc_minutes(s.started),
            ]),
            Err(e) => {
                eprintln!("mosaic: {e}");
                unreadable = Some(e);
            }
        }
    }
    // Columns as wide as their widest cell, so long run ids do not shift the others.
    let width = |column: usize| {
        rows.iter()
            .map(|row| row[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2), width(3), width(4)];
    let mut out = String::new();
    for [id, experiment, status, episodes, shard, started] in &rows {
        let _ = writeln!(
            out,
            "{id:<w0$}  {experiment:<w1$}  {status:<w2$}  {episodes:>w3$}  {shard:<w4$}  {started}",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4],
        );
    }
    print(&out)?;
    match unreadable {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// `YYYY-MM-DD HH:MM` of a Unix time in milliseconds.
fn utc_minutes(unix_ms: u64) -> String {
    let minutes = unix_ms / 60_000;
    let (days, minute_of_day) = (minutes / 1440, minutes % 1440);
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        minute_of_day / 60,
        minute_of_day % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc_minutes(0), "1970-01-01 00:00");
        assert_eq!(super::utc_minutes(1_700_000_000_000), "2023-11-14 22:13");
        assert_eq!(super::utc_minutes(951_782_400_000), "2000-02-29 00:00");
    }
}
