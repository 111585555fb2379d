//! The operator families the facade assembles beside the baselines and external policy
//! workers, each behind a cargo feature: today the LLM family (feature `llm`, on by
//! default: decider kinds `llm` and `vlm` from `mosaic-llm`, and the LLM response cache
//! of runs, in `llm_cache`).
//!
//! The rest of the facade reaches a family only through [`Families`], so a build without
//! the feature has no trace of it: an experiment naming `llm` or `vlm` is then refused as
//! naming an unknown decider kind.

use crate::run::{RunFailure, RunOptions};
use mosaic_actors::decider::DeciderRegistry;
use mosaic_recorder::RunStore;
#[cfg(feature = "llm")]
use {mosaic_llm::LlmResources, mosaic_llm::layers::SledCache, std::sync::Arc};

/// What the operators of the optional families share across one experiment's sessions
/// (the LLM family: the local model server, backend stacks and run-wide usage).
#[derive(Clone, Default)]
pub struct Families {
    #[cfg(feature = "llm")]
    llm: Arc<LlmResources>,
}

impl std::fmt::Debug for Families {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Families").finish_non_exhaustive()
    }
}

/// What a run opened before its experiment was validated: the recorded LLM response cache
/// named by `--llm-cache-from`, if any.
pub(crate) struct Prepared {
    #[cfg(feature = "llm")]
    recorded_cache: Option<SledCache>,
}

impl Families {
    /// Registers the families' decider kinds.
    #[cfg_attr(not(feature = "llm"), allow(unused_variables))]
    pub fn register(&self, registry: &mut DeciderRegistry) {
        #[cfg(feature = "llm")]
        mosaic_llm::register(registry, self.llm.clone());
    }

    /// What the LLM deciders share (local server, backends, run-wide usage).
    #[cfg(feature = "llm")]
    pub fn llm(&self) -> &Arc<LlmResources> {
        &self.llm
    }

    /// Stops what the families started for a run (the local model server).
    pub async fn shutdown(&self) {
        #[cfg(feature = "llm")]
        self.llm.shutdown().await;
    }
}

#[cfg(feature = "llm")]
impl Families {
    /// Checks the run's family options and opens what they name; call before the
    /// experiment is validated (a replay then starts no model server to validate it).
    pub(crate) fn prepare(&self, options: &RunOptions) -> Result<Prepared, RunFailure> {
        Ok(Prepared {
            recorded_cache: options.llm_cache.prepare(&self.llm)?,
        })
    }

    /// Points the families at the new run's `store`; call before its operators are built.
    pub(crate) fn attach(
        &self,
        options: &RunOptions,
        store: &RunStore,
        prepared: Prepared,
    ) -> Result<(), RunFailure> {
        Ok(options
            .llm_cache
            .attach(&self.llm, store, prepared.recorded_cache)?)
    }

    /// What the finished run's families report as its failure (replay misses).
    pub(crate) fn check(&self, options: &RunOptions) -> Result<(), RunFailure> {
        Ok(options.llm_cache.check(&self.llm)?)
    }
}

#[cfg(not(feature = "llm"))]
impl Families {
    /// Without a family that keeps state in runs, nothing to check or open.
    pub(crate) fn prepare(&self, _: &RunOptions) -> Result<Prepared, RunFailure> {
        Ok(Prepared {})
    }

    /// Nothing to point at the run's store.
    pub(crate) fn attach(
        &self,
        _: &RunOptions,
        _: &RunStore,
        _: Prepared,
    ) -> Result<(), RunFailure> {
        Ok(())
    }

    /// Nothing to report.
    pub(crate) fn check(&self, _: &RunOptions) -> Result<(), RunFailure> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::Experiment;
    use crate::prelude::{Operator, SeedPlan};

    fn naming(kind: &str) -> Experiment {
        Experiment::builder("families")
            .seeds(SeedPlan::Procedural { base: 1 })
            .operator(
                Operator::new("pitch", "soccer-2v2")
                    .everyone("random")
                    .agent("green_0", kind),
            )
            .build()
            .unwrap()
    }

    #[cfg(feature = "llm")]
    #[test]
    fn the_llm_family_registers_its_kinds() {
        let experiment = naming("llm");
        assert!(experiment.kinds().get("llm").is_some());
        assert!(experiment.kinds().get("vlm").is_some());
    }

    #[cfg(not(feature = "llm"))]
    #[test]
    fn without_the_llm_family_its_kinds_are_unknown() {
        for kind in ["llm", "vlm"] {
            let error = naming(kind).validate().unwrap_err();
            assert!(
                error
                    .message
                    .contains(&format!("unknown decider kind `{kind}` (known: ")),
                "{error}"
            );
            assert!(error.message.contains("random"), "{error}");
        }
    }
}
