//! `mosaic envs` and `mosaic operators`: what the registries hold, with their settings.

use super::{CliError, print};

/// Prints the registered environments and their settings.
pub fn envs() -> Result<(), CliError> {
    print(&mosaic::listing::envs(&mosaic::experiment::default_envs()))
}

/// Prints the registered operator kinds and their settings.
pub fn operators() -> Result<(), CliError> {
    print(&mosaic::listing::operators(
        &mosaic::experiment::default_operators(&mosaic::families::Families::default()),
    ))
}
