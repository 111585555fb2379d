//! `mosaic envs` and `mosaic deciders`: what the registries hold, with their settings.

use super::{CliError, print};

/// Prints the registered environments and their settings.
pub(crate) fn envs() -> Result<(), CliError> {
    print(&mosaic::listing::envs(&mosaic::experiment::default_envs()))
}

/// Prints the registered decider kinds and their settings.
pub(crate) fn deciders() -> Result<(), CliError> {
    print(&mosaic::listing::deciders(
        &mosaic::experiment::default_deciders(&mosaic::families::Families::default()),
    ))
}
