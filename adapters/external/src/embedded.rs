//! The `mosaic_worker` Python package, built into the binary.
//!
//! `gymnasium:` and `pettingzoo:` environments and `python -m mosaic_worker ...` policies need
//! the package importable. Rather than asking users to install it or to set `PYTHONPATH`,
//! mosaic writes the copy it was built with into its cache
//! (`$MOSAIC_CACHE/python/mosaic_worker-<version>-<content hash>/`, the cache being
//! `$MOSAIC_CACHE`, else `$XDG_CACHE_HOME/mosaic`, else `~/.cache/mosaic`) and puts that
//! directory on the `PYTHONPATH` of every Python worker it starts, after the entries the
//! worker already has: an explicit `PYTHONPATH` (a development checkout) still wins.
//!
//! ```
//! # let cache = tempfile::tempdir().unwrap();
//! let dir = mosaic_external::embedded::install_into(cache.path()).unwrap();
//! assert!(dir.join("mosaic_worker").join("__init__.py").is_file());
//! ```

use crate::WorkerError;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The package's files (relative to the package directory) and their contents.
const FILES: &[(&str, &str)] = &[
    (
        "__init__.py",
        include_str!("../python/mosaic_worker/__init__.py"),
    ),
    (
        "__main__.py",
        include_str!("../python/mosaic_worker/__main__.py"),
    ),
    ("env.py", include_str!("../python/mosaic_worker/env.py")),
    (
        "policy.py",
        include_str!("../python/mosaic_worker/policy.py"),
    ),
    (
        "protocol.py",
        include_str!("../python/mosaic_worker/protocol.py"),
    ),
];

/// Written last: a directory without it is an interrupted install.
const COMPLETE: &str = ".complete";

/// FNV-1a over every file name and content: names the installed directory, so a binary
/// with different package sources never uses another's copy.
const CONTENT_HASH: u64 = {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    let mut f = 0;
    while f < FILES.len() {
        let parts = [FILES[f].0.as_bytes(), FILES[f].1.as_bytes()];
        let mut p = 0;
        while p < parts.len() {
            let bytes = parts[p];
            let mut i = 0;
            while i < bytes.len() {
                hash ^= bytes[i] as u64;
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
                i += 1;
            }
            // Separates the parts, so moving bytes between them changes the hash.
            hash ^= 0xff;
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            p += 1;
        }
        f += 1;
    }
    hash
};

/// The name of the installed directory.
pub fn dir_name() -> String {
    format!(
        "mosaic_worker-{}-{CONTENT_HASH:016x}",
        env!("CARGO_PKG_VERSION")
    )
}

/// mosaic's cache directory: `$MOSAIC_CACHE`, else `$XDG_CACHE_HOME/mosaic`, else
/// `$HOME/.cache/mosaic` (the convention of the project's set-up scripts).
pub fn cache_root() -> Result<PathBuf, WorkerError> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("MOSAIC_CACHE") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(dir).join("mosaic"));
    }
    if let Some(home) = var("HOME") {
        return Ok(PathBuf::from(home).join(".cache").join("mosaic"));
    }
    Err(WorkerError::Package {
        dir: "(none)".into(),
        error: "no cache directory: set MOSAIC_CACHE (or HOME)".into(),
    })
}

/// Installs the package under [`cache_root`] (once per process) and returns the directory
/// to put on `PYTHONPATH`.
pub fn install() -> Result<PathBuf, WorkerError> {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    if let Some(dir) = INSTALLED.get() {
        return Ok(dir.clone());
    }
    let dir = install_into(&cache_root()?)?;
    Ok(INSTALLED.get_or_init(|| dir).clone())
}

/// Installs the package under `cache` (in `python/<dir_name>/mosaic_worker/`) unless an
/// intact copy is there, and returns the directory to put on `PYTHONPATH`. Concurrent
/// installs (several mosaic processes) are safe: each writes a private directory and
/// renames it into place.
pub fn install_into(cache: &Path) -> Result<PathBuf, WorkerError> {
    let parent = cache.join("python");
    let dir = parent.join(dir_name());
    let failed = |path: &Path, error: std::io::Error| WorkerError::Package {
        dir: path.display().to_string(),
        error: error.to_string(),
    };
    if intact(&dir) {
        return Ok(dir);
    }
    std::fs::create_dir_all(&parent).map_err(|e| failed(&parent, e))?;
    let staging = parent.join(format!(
        ".{}.{}.{}",
        dir_name(),
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let written = write_package(&staging).map_err(|e| failed(&staging, e));
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    if dir.exists() && !intact(&dir) {
        // A damaged copy (edited, or cut short by a crash of an older installer).
        std::fs::remove_dir_all(&dir).map_err(|e| failed(&dir, e))?;
    }
    let renamed = std::fs::rename(&staging, &dir);
    let _ = std::fs::remove_dir_all(&staging);
    match renamed {
        Ok(()) => Ok(dir),
        // Another process installed it first.
        Err(_) if intact(&dir) => Ok(dir),
        Err(e) => Err(failed(&dir, e)),
    }
}

fn write_package(staging: &Path) -> std::io::Result<()> {
    let package = staging.join("mosaic_worker");
    std::fs::create_dir_all(&package)?;
    for (name, content) in FILES {
        std::fs::write(package.join(name), content)?;
    }
    std::fs::write(staging.join(COMPLETE), dir_name())
}

/// Whether `dir` holds exactly the embedded files (checked once per install, a few KB).
fn intact(dir: &Path) -> bool {
    dir.join(COMPLETE).is_file()
        && FILES.iter().all(|(name, content)| {
            std::fs::read(dir.join("mosaic_worker").join(name))
                .is_ok_and(|on_disk| on_disk == content.as_bytes())
        })
}

/// Whether `program args...` runs Python: the program is an interpreter (`python`,
/// `python3.12`, `/venv/bin/python`, `pypy3`), or the arguments run `-m mosaic_worker`.
pub fn runs_python(program: &str, args: &[String]) -> bool {
    let file = Path::new(program)
        .file_name()
        .map(|f| f.to_string_lossy())
        .unwrap_or_default();
    file.starts_with("python")
        || file.starts_with("pypy")
        || args
            .windows(2)
            .any(|w| w[0] == "-m" && w[1] == "mosaic_worker")
}

/// `PYTHONPATH` with `package_dir` appended to `current` (the worker's own value, if any).
pub fn python_path(current: Option<OsString>, package_dir: &Path) -> Result<OsString, WorkerError> {
    let mut entries: Vec<PathBuf> = current
        .as_deref()
        .map(|c| std::env::split_paths(c).collect())
        .unwrap_or_default();
    entries.retain(|e| !e.as_os_str().is_empty());
    entries.push(package_dir.to_path_buf());
    std::env::join_paths(entries).map_err(|e| WorkerError::Package {
        dir: package_dir.display().to_string(),
        error: format!("cannot be put on PYTHONPATH: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_once_and_repairs_damaged_copies() {
        let cache = tempfile::tempdir().unwrap();
        let dir = install_into(cache.path()).unwrap();
        assert_eq!(dir, cache.path().join("python").join(dir_name()));
        let init = dir.join("mosaic_worker").join("__init__.py");
        assert_eq!(
            std::fs::read_to_string(&init).unwrap(),
            FILES[0].1,
            "the embedded file"
        );
        assert_eq!(install_into(cache.path()).unwrap(), dir, "reused");
        std::fs::write(&init, "raise SystemExit('edited')").unwrap();
        install_into(cache.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&init).unwrap(), FILES[0].1);
        let leftovers: Vec<_> = std::fs::read_dir(cache.path().join("python"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, [std::ffi::OsString::from(dir_name())]);
    }

    #[test]
    fn a_bad_cache_directory_is_named() {
        let cache = tempfile::tempdir().unwrap();
        let file = cache.path().join("not-a-directory");
        std::fs::write(&file, "x").unwrap();
        let err = install_into(&file).unwrap_err().to_string();
        assert!(err.contains(&file.display().to_string()), "{err}");
        assert!(err.contains("MOSAIC_CACHE"), "{err}");
    }

    #[test]
    fn every_package_file_is_embedded() {
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("python")
            .join("mosaic_worker");
        let mut on_disk: Vec<String> = std::fs::read_dir(&source)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".py"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = FILES.iter().map(|(name, _)| *name).collect();
        assert_eq!(on_disk, embedded);
    }

    #[test]
    fn python_commands_are_recognised() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(runs_python("python3", &args(&["w.py"])));
        assert!(runs_python("/venv/bin/python", &[]));
        assert!(runs_python("pypy3", &[]));
        assert!(runs_python(
            "uv",
            &args(&["run", "-m", "mosaic_worker", "policy", "random"])
        ));
        assert!(!runs_python("node", &args(&["worker.js"])));
        assert!(!runs_python("sh", &args(&["-c", "python3 w.py"])));
    }

    #[test]
    fn the_package_goes_after_existing_entries() {
        let dir = Path::new("/cache/pkg");
        assert_eq!(python_path(None, dir).unwrap(), "/cache/pkg");
        assert_eq!(
            python_path(Some("/dev/checkout:".into()), dir).unwrap(),
            "/dev/checkout:/cache/pkg"
        );
    }
}
