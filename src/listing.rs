//! The text of `mosaic envs` and `mosaic operators`.

use mosaic_actors::decider::DeciderRegistry;
use mosaic_core::EnvRegistry;
use std::fmt::Write;

/// Every registered environment with its settings.
pub fn envs(registry: &EnvRegistry) -> String {
    let mut out = String::new();
    for kind in registry.kinds() {
        let scripted = if kind.scripted.is_some() {
            " [scripted heuristic]"
        } else {
            ""
        };
        let _ = writeln!(out, "{}{scripted}\n    {}", kind.name, kind.summary);
        for setting in kind.settings {
            let _ = writeln!(out, "    - {setting}");
        }
    }
    for prefix in registry.prefixes() {
        let _ = writeln!(
            out,
            "{}<name>\n    {} (settings as for `worker`)",
            prefix.prefix, prefix.summary
        );
    }
    out
}

/// Every registered decider kind with its settings.
pub fn operators(registry: &DeciderRegistry) -> String {
    let mut out = String::new();
    for kind in registry.kinds() {
        let _ = writeln!(out, "{}\n    {}", kind.name, kind.summary);
        for setting in kind.settings {
            let _ = writeln!(out, "    - {setting}");
        }
    }
    out
}
