//! Running the real `mosaic` binary from the cross-crate tests.

use std::path::Path;
use std::process::{Command, Output};

/// The `mosaic` binary built for these tests.
pub(crate) fn mosaic() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mosaic"))
}

/// What a command printed, stdout then stderr.
pub(crate) fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs `command`, which must succeed; answers what it printed.
pub(crate) fn succeed(command: &mut Command) -> String {
    let output = command.output().expect("the command runs");
    assert!(output.status.success(), "{command:?}: {}", text(&output));
    text(&output)
}

/// Complete lines of a run's `episodes.jsonl` (a torn last line aside).
pub(crate) fn logged_episodes(run: &Path) -> usize {
    let text = std::fs::read_to_string(run.join("episodes.jsonl")).unwrap_or_default();
    text.rfind('\n')
        .map_or(0, |end| text[..end].lines().count())
}
