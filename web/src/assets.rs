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

/// The page's scripts, loaded in this order: `common.js` holds what the others share.
const ASSETS: &[Asset] = &[
    Asset {
        name: "common.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../assets/common.js"),
    },
    Asset {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../assets/app.js"),
    },
    // uPlot (MIT, see vendor/uPlot.LICENSE), as published on npm (`uplot@1.6.31`).
    Asset {
        name: "uPlot.iife.min.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../assets/vendor/uPlot.iife.min.js"),
    },
    Asset {
        name: "uPlot.min.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../assets/vendor/uPlot.min.css"),
    },
    Asset {
        name: "uPlot.LICENSE",
        content_type: "text/plain; charset=utf-8",
        body: include_bytes!("../assets/vendor/uPlot.LICENSE"),
    },
    Asset {
        name: "charts.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../assets/charts.js"),
    },
    Asset {
        name: "runs.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../assets/runs.js"),
    },
    Asset {
        name: "viewer.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../assets/viewer.js"),
    },
    Asset {
        name: "app.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../assets/app.css"),
    },
    Asset {
        name: "favicon.svg",
        content_type: "image/svg+xml",
        body: include_bytes!("../assets/favicon.svg"),
    },
];

/// The asset called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}
