//! What mosaic's test suites share, so each crate's tests use one copy:
//!
//! - [`chat_stub`]: a chat-completions server answering as a test says, for language-model
//!   agents recorded without a model;
//! - [`setup`]: the tools the set-up scripts install (Python venvs, the browser, the local
//!   model server), found through their variables or by running the script once;
//! - [`python`]: the Python environment of the external-worker tests;
//! - [`records`]: records compared without their volatile fields;
//! - [`collect`]: a session subscriber that keeps every record;
//! - [`race`] and [`walk`]: two small deterministic test worlds.
//!
//! Test code: a missing tool or a broken fixture panics with a message naming it.

#![warn(missing_docs)]

pub mod chat_stub;
pub mod collect;
pub mod python;
pub mod race;
pub mod records;
pub mod setup;
pub mod walk;

/// The outcomes of a game of `agents` that `winner` won and every other agent lost.
fn won_by(agents: usize, winner: usize) -> Vec<mosaic_core::Outcome> {
    (0..agents)
        .map(|a| match a == winner {
            true => mosaic_core::Outcome::Win,
            false => mosaic_core::Outcome::Loss,
        })
        .collect()
}
