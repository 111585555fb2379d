//! Path helpers of the files a run directory is made of.

use crate::error::{RecorderError, Result};
use std::fs::File;
use std::path::Path;

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Makes the directory entry of `path` durable (after a create or a rename).
pub(crate) fn sync_parent(path: &Path) -> Result<()> {
    let parent = parent_dir(path);
    File::open(parent)
        .and_then(|dir| dir.sync_all())
        .map_err(|e| RecorderError::io(parent, e))
}
