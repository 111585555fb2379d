//! Schema tags and versions of records.
//!
//! Every record carries `schema: "<name>/<major>[.<minor>]"`, e.g. `mosaic.step/1` (minor 0)
//! or `mosaic.step/1.2`. A minor version only adds fields (with defaults), so a reader of
//! major version `M` reads every `M.x`: older minors get defaults for the fields they lack,
//! newer minors have their unknown fields ignored. A different major version changes the
//! meaning of existing fields and is refused with an error naming the file and line.

use mosaic_core::record::StepRecord;
use mosaic_core::record::{EPISODE_SCHEMA, EpisodeRecord, RUN_SCHEMA, RunManifest, STEP_SCHEMA};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A parsed schema tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemaTag<'a> {
    /// Record kind, e.g. `mosaic.step`.
    pub name: &'a str,
    /// Incompatible revisions.
    pub major: u32,
    /// Compatible revisions (fields added).
    pub minor: u32,
}

impl<'a> SchemaTag<'a> {
    /// Parses `name/major[.minor]`; `None` when the tag has another shape.
    ///
    /// ```
    /// use mosaic_recorder::schema::SchemaTag;
    /// let tag = SchemaTag::parse("mosaic.step/1.3").unwrap();
    /// assert_eq!((tag.name, tag.major, tag.minor), ("mosaic.step", 1, 3));
    /// assert_eq!(SchemaTag::parse("mosaic.step/1").unwrap().minor, 0);
    /// assert!(SchemaTag::parse("mosaic.step").is_none());
    /// ```
    pub fn parse(tag: &'a str) -> Option<Self> {
        let (name, version) = tag.rsplit_once('/')?;
        let (major, minor) = match version.split_once('.') {
            Some((major, minor)) => (major.parse().ok()?, minor.parse().ok()?),
            None => (version.parse().ok()?, 0),
        };
        if name.is_empty() {
            return None;
        }
        Some(Self { name, major, minor })
    }
}

/// A record type with a schema tag.
pub trait Record: Serialize + DeserializeOwned {
    /// The tag this version of mosaic writes.
    const SCHEMA: &'static str;

    /// The tag the record carries.
    fn schema(&self) -> &str;
}

impl Record for StepRecord {
    const SCHEMA: &'static str = STEP_SCHEMA;
    fn schema(&self) -> &str {
        &self.schema
    }
}

impl Record for EpisodeRecord {
    const SCHEMA: &'static str = EPISODE_SCHEMA;
    fn schema(&self) -> &str {
        &self.schema
    }
}

impl Record for RunManifest {
    const SCHEMA: &'static str = RUN_SCHEMA;
    fn schema(&self) -> &str {
        &self.schema
    }
}

/// Why a schema tag is not readable as `current`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    /// The record kind expected.
    pub expected: String,
    /// Its major version.
    pub major: u32,
}

/// Checks that `found` can be read by a reader of `current` (same name, same major version).
///
/// ```
/// use mosaic_recorder::schema::readable;
/// assert!(readable("mosaic.step/1", "mosaic.step/1").is_ok());
/// assert!(readable("mosaic.step/1.7", "mosaic.step/1").is_ok());
/// assert!(readable("mosaic.step/2", "mosaic.step/1").is_err());
/// assert!(readable("mosaic.episode/1", "mosaic.step/1").is_err());
/// ```
pub fn readable(found: &str, current: &'static str) -> Result<(), Unreadable> {
    if found == current {
        return Ok(());
    }
    let current = SchemaTag::parse(current).unwrap_or(SchemaTag {
        name: current,
        major: 0,
        minor: 0,
    });
    match SchemaTag::parse(found) {
        Some(tag) if tag.name == current.name && tag.major == current.major => Ok(()),
        _ => Err(Unreadable {
            expected: current.name.to_owned(),
            major: current.major,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_tags_parse() {
        for tag in [STEP_SCHEMA, EPISODE_SCHEMA, RUN_SCHEMA] {
            let parsed = SchemaTag::parse(tag).unwrap();
            assert_eq!(parsed.major, 1, "{tag}");
        }
    }

    #[test]
    fn malformed_tags_are_unreadable() {
        for bad in [
            "",
            "/1",
            "mosaic.step/x",
            "mosaic.step/1.y",
            "mosaic.step/-1",
        ] {
            assert!(readable(bad, STEP_SCHEMA).is_err(), "{bad}");
        }
        let err = readable("mosaic.step/9", STEP_SCHEMA).unwrap_err();
        assert_eq!((err.expected.as_str(), err.major), ("mosaic.step", 1));
    }
}
