//! The page, embedded in the binary: no files to install, no build step.

/// One embedded file.
pub(crate) struct Asset {
    /// Name under `/assets/`.
    pub(crate) name: &'static str,
    /// Its media type.
    pub(crate) content_type: &'static str,
    /// Its bytes.
    pub(crate) body: &'static [u8],
}

/// The page itself.
pub(crate) const INDEX: &str = include_str!("../assets/index.html");

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// An [`Asset`] named `name`, read from `assets/` at `path` (by default `name`).
macro_rules! asset {
    ($name:literal, $content_type:expr) => {
        asset!($name, $name, $content_type)
    };
    ($name:literal, $path:literal, $content_type:expr) => {
        Asset {
            name: $name,
            content_type: $content_type,
            body: include_bytes!(concat!("../assets/", $path)),
        }
    };
}

/// The page's scripts, loaded in this order: `common.js` holds what the others share.
const ASSETS: &[Asset] = &[
    asset!("common.js", JS),
    asset!("app.js", JS),
    // uPlot (MIT, see vendor/uPlot.LICENSE), as published on npm (`uplot@1.6.31`).
    asset!("uPlot.iife.min.js", "vendor/uPlot.iife.min.js", JS),
    asset!("uPlot.min.css", "vendor/uPlot.min.css", CSS),
    asset!(
        "uPlot.LICENSE",
        "vendor/uPlot.LICENSE",
        "text/plain; charset=utf-8"
    ),
    asset!("charts.js", JS),
    asset!("runs.js", JS),
    asset!("viewer.js", JS),
    asset!("app.css", CSS),
    asset!("favicon.svg", "image/svg+xml"),
];

/// The asset called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}
