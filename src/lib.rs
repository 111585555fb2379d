//! mosaic: cross-paradigm multi-agent evaluation.
