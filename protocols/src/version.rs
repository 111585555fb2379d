//! Protocol versions: `mosaic/<major>` or `mosaic/<major>.<minor>`.
//!
//! Peers with the same major version interoperate (a newer minor only adds optional fields
//! and messages, which older peers ignore or answer with `error{code:"unknown_type"}`); a
//! different major version is rejected during the handshake.

use std::fmt;

/// The protocol family name before the `/`.
pub const FAMILY: &str = "mosaic";

/// The version this crate speaks: 1.1 added the team channel to policy workers (the
/// `messages` capability, `decide.inbox`); 1.2 the token of listening workers (`auth`, a
/// worker's first-line `reject`, the `auth:token` capability); 1.3 the optional
/// `descriptions` of an environment's spec (texts that prompts may show).
pub const CURRENT: Version = Version { major: 1, minor: 3 };

/// The version string this crate sends in `hello` and `welcome`.
pub const PROTOCOL: &str = "mosaic/1.3";

/// A protocol version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Incompatible changes bump this.
    pub major: u32,
    /// Compatible additions bump this.
    pub minor: u32,
}

/// A version string that is not `mosaic/<major>[.<minor>]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a protocol version (expected `mosaic/<major>` or `mosaic/<major>.<minor>`)")]
pub struct VersionError(pub String);

impl Version {
    /// Parses `mosaic/1`, `mosaic/1.2`.
    ///
    /// ```
    /// use mosaic_protocols::version::{Version, CURRENT};
    /// assert_eq!(Version::parse("mosaic/1").unwrap(), Version { major: 1, minor: 0 });
    /// assert!(Version::parse("mosaic/1").unwrap().compatible_with(CURRENT));
    /// assert_eq!(Version::parse("mosaic/2.3").unwrap(), Version { major: 2, minor: 3 });
    /// assert!(Version::parse("MOSAIC/1.0").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, VersionError> {
        let bad = || VersionError(text.chars().take(64).collect());
        let number = text
            .strip_prefix(FAMILY)
            .and_then(|rest| rest.strip_prefix('/'))
            .ok_or_else(bad)?;
        let (major, minor) = match number.split_once('.') {
            Some((major, minor)) => (major, minor),
            None => (number, "0"),
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(major) || !digits(minor) {
            return Err(bad());
        }
        Ok(Self {
            major: major.parse().map_err(|_| bad())?,
            minor: minor.parse().map_err(|_| bad())?,
        })
    }

    /// Whether a peer speaking `self` can talk to one speaking `other`.
    pub fn compatible_with(self, other: Version) -> bool {
        self.major == other.major
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.minor == 0 {
            write!(f, "{FAMILY}/{}", self.major)
        } else {
            write!(f, "{FAMILY}/{}.{}", self.major, self.minor)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_compatibility() {
        assert_eq!(CURRENT.to_string(), PROTOCOL);
        let v = Version::parse("mosaic/1.4").unwrap();
        assert_eq!(v.to_string(), "mosaic/1.4");
        assert!(v.compatible_with(CURRENT));
        assert!(!Version::parse("mosaic/2").unwrap().compatible_with(CURRENT));
    }

    #[test]
    fn malformed_versions_are_errors() {
        for bad in [
            "",
            "mosaic",
            "mosaic/",
            "mosaic/x",
            "mosaic/1.",
            "mosaic/1.2.3",
            "other/1",
        ] {
            let err = Version::parse(bad).unwrap_err();
            assert!(
                err.to_string().contains("not a protocol version"),
                "{bad}: {err}"
            );
        }
    }
}
