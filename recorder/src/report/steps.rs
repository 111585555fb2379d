//! What the report reads of the step records, in one pass shared by its sections.
//!
//! A step record's line is decoded into [`ReportStep`]: the few fields the report needs
//! (see the `step_fields` module). The units are folded on worker threads into
//! [`StepFigures`], which merge: sums, and first occurrences by (episode, step).

use super::LlmStats;
use super::agents::{ChannelReader, ChannelStats, ErrorReader};
use super::step_fields::ReportStep;
use crate::error::Result;
use crate::run_dir::Records;
use crate::unit_lines::{UnitLines, fold_workers};
use std::collections::BTreeMap;

/// The figures of one agent of one operator from its step records.
#[derive(Clone, Copy, Debug, Default)]
struct AgentFigures {
    llm: Option<LlmStats>,
    channel: Option<ChannelStats>,
}

/// What the report gathers from the step records: LLM and channel figures per operator
/// and agent, errors.
#[derive(Default)]
pub(super) struct StepFigures {
    agents: BTreeMap<String, BTreeMap<String, AgentFigures>>,
    pub(super) errors: ErrorReader,
}

impl StepFigures {
    /// The figures of the complete units of `records`, read on [`fold_workers`] threads.
    pub(super) fn read(records: &Records) -> Result<Self> {
        let (states, _) = records.fold_units(fold_workers(), StepFigures::default, |f, unit| {
            f.add_unit(unit)
        })?;
        Ok(states
            .into_iter()
            .reduce(StepFigures::merge)
            .unwrap_or_default())
    }

    fn add_unit(&mut self, unit: &UnitLines) -> Result<()> {
        // Notes are compared within an episode: one reader per unit.
        let mut notes = ChannelReader::default();
        unit.decode_each_quick(super::scan::report_step, |step: ReportStep| {
            self.add(&step, &mut notes);
            Ok(())
        })
    }

    fn add(&mut self, step: &ReportStep, notes: &mut ChannelReader) {
        let mut llm = LlmStats::default();
        let llm = llm.add_step(step).then_some(llm);
        let mut channel = ChannelStats::default();
        let channel = notes.add(step, &mut channel).then_some(channel);
        if llm.is_some() || channel.is_some() {
            self.add_figures(
                &step.operator_id,
                &step.agent_id,
                AgentFigures { llm, channel },
            );
        }
        self.errors.add_step(step);
    }

    /// Adds `figures` to those of `agent_id` of `operator_id`.
    fn add_figures(&mut self, operator_id: &str, agent_id: &str, figures: AgentFigures) {
        let add = |mine: &mut AgentFigures| {
            if let Some(llm) = &figures.llm {
                mine.llm.get_or_insert_default().merge(llm);
            }
            if let Some(channel) = &figures.channel {
                mine.channel.get_or_insert_default().merge(channel);
            }
        };
        // Looked up by reference first: the ids are copied once per agent, not per record.
        if let Some(mine) = self
            .agents
            .get_mut(operator_id)
            .and_then(|agents| agents.get_mut(agent_id))
        {
            return add(mine);
        }
        add(self
            .agents
            .entry(operator_id.to_owned())
            .or_default()
            .entry(agent_id.to_owned())
            .or_default());
    }

    fn merge(mut self, other: StepFigures) -> StepFigures {
        for (operator_id, agents) in other.agents {
            for (agent_id, figures) in agents {
                self.add_figures(&operator_id, &agent_id, figures);
            }
        }
        self.errors.merge(other.errors);
        self
    }

    /// The LLM figures of `agent_id` of `operator_id`, if its records have any.
    pub(super) fn llm(&self, operator_id: &str, agent_id: &str) -> Option<LlmStats> {
        self.agents.get(operator_id)?.get(agent_id)?.llm
    }

    /// The agents of `operator_id` with channel figures, and those.
    pub(super) fn channels(
        &self,
        operator_id: &str,
    ) -> impl Iterator<Item = (&str, &ChannelStats)> + '_ {
        self.agents
            .get(operator_id)
            .into_iter()
            .flatten()
            .filter_map(|(agent, f)| Some((agent.as_str(), f.channel.as_ref()?)))
    }
}
